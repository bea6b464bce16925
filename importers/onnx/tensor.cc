#include "importers/onnx/tensor.h"

#include <sys/stat.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace quilt::importers::onnx {
namespace {

namespace fs = std::filesystem;

Expected<std::shared_ptr<std::vector<uint8_t>>> ReadExternal(const ::onnx::TensorProto& t,
                                                             const std::string& model_dir,
                                                             uint64_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    const std::string& v = kv.value();
    auto parse = [&](int64_t* out) -> bool {
      if (v.empty() || v.size() > 18) return false;
      for (char c : v) {
        if (c < '0' || c > '9') return false;
      }
      *out = std::stoll(v);
      return true;
    };
    if (kv.key() == "location") {
      location = v;
    } else if (kv.key() == "offset") {
      if (!parse(&offset)) return Error("external data offset '" + v + "' is not a number");
    } else if (kv.key() == "length") {
      if (!parse(&length)) return Error("external data length '" + v + "' is not a number");
    }
  }
  if (location.empty()) return Error("external data without a location");
  if (model_dir.empty()) {
    return Error("external data '" + location + "' but the model was given from memory");
  }
  fs::path rel(location);
  if (rel.is_absolute()) return Error("external data location '" + location + "' is absolute");
  for (const fs::path& part : rel) {
    if (part == "..") {
      return Error("external data location '" + location + "' leaves the model's folder");
    }
  }
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::path(model_dir), ec);
  fs::path file = dir / rel;
  // Symlinks and hardlinks could point outside the folder: take regular files with one link.
  struct stat st;
  if (lstat(file.c_str(), &st) != 0) {
    return Error("external data file '" + location + "' is missing");
  }
  if (S_ISLNK(st.st_mode)) return Error("external data file '" + location + "' is a symlink");
  if (!S_ISREG(st.st_mode)) return Error("external data '" + location + "' is not a regular file");
  if (st.st_nlink != 1) return Error("external data file '" + location + "' is a hardlink");
  fs::path real = fs::weakly_canonical(file, ec);
  auto [d, r] = std::mismatch(dir.begin(), dir.end(), real.begin(), real.end());
  if (d != dir.end()) {
    return Error("external data location '" + location + "' leaves the model's folder");
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (length < 0) length = static_cast<int64_t>(expected);
  if (static_cast<uint64_t>(offset) > size || static_cast<uint64_t>(length) > size - offset) {
    return Error("external data of '" + t.name() + "' (offset " + std::to_string(offset) +
                 ", length " + std::to_string(length) + ") is outside '" + location + "' (" +
                 std::to_string(size) + " bytes)");
  }
  if (static_cast<uint64_t>(length) != expected) {
    return Error("external data of '" + t.name() + "' has " + std::to_string(length) +
                 " bytes, but its shape and dtype need " + std::to_string(expected));
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>(expected);
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  if (!in.read(reinterpret_cast<char*>(bytes->data()), static_cast<std::streamsize>(expected))) {
    return Error("cannot read external data '" + location + "'");
  }
  return bytes;
}

template <typename Src, typename Dst>
void Store(const Src& field, std::vector<uint8_t>* out) {
  size_t i = 0;
  for (auto v : field) {
    Dst d = static_cast<Dst>(v);
    std::memcpy(out->data() + i * sizeof(Dst), &d, sizeof(Dst));
    ++i;
  }
}

}  // namespace

std::optional<ir::DataType> ElemType(int32_t onnx_type) {
  if (onnx_type < 0 || onnx_type > ir::kLastDataType) return std::nullopt;
  return static_cast<ir::DataType>(onnx_type);
}

Expected<int64_t> CheckedElementCount(const std::vector<int64_t>& shape) {
  for (int64_t d : shape) {
    if (d < 0) return Error("negative dimension " + std::to_string(d));
  }
  // At most the runtime's element count, so that the byte count of any dtype fits.
  std::optional<int64_t> n = ir::ElementCount(shape);
  if (!n) return Error("more than 2^50 elements");
  return *n;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Expected<TensorData> ReadTensor(const ::onnx::TensorProto& t, const std::string& model_dir) {
  TensorData out;
  std::string name = t.name().empty() ? "a tensor" : "tensor '" + t.name() + "'";
  std::optional<ir::DataType> dtype = ElemType(t.data_type());
  if (!dtype || *dtype == ir::DataType::kVoid) {
    return Error(name + " has unknown data type " + std::to_string(t.data_type()));
  }
  if (*dtype == ir::DataType::kString) return Error(name + ": string tensors are not supported");
  out.dtype = *dtype;
  out.shape.assign(t.dims().begin(), t.dims().end());
  Expected<int64_t> count = CheckedElementCount(out.shape);
  if (!count) return Error(name + ": " + count.error().message);
  int bits = ir::DataTypeBits(out.dtype);
  uint64_t bytes = (static_cast<uint64_t>(*count) * bits + 7) / 8;
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    Expected<std::shared_ptr<std::vector<uint8_t>>> data = ReadExternal(t, model_dir, bytes);
    if (!data) return Error(name + ": " + data.error().message);
    out.bytes = *data;
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes) {
      return Error(name + ": raw_data has " + std::to_string(t.raw_data().size()) +
                   " bytes, but shape and dtype need " + std::to_string(bytes));
    }
    out.bytes = std::make_shared<std::vector<uint8_t>>(t.raw_data().begin(), t.raw_data().end());
    return out;
  }
  // Typed fields: check the element count before allocating.
  auto check = [&](int field_size, int per_element) -> Status {
    int64_t want = *count * per_element;
    if (bits < 8) want = (*count * bits + 7) / 8;  // packed sub-byte types: one int32 per byte
    if (field_size != want) {
      return Error(name + ": holds " + std::to_string(field_size) +
                   " values, but its shape needs " + std::to_string(want));
    }
    return {};
  };
  // No element takes more than 8 bytes of a typed field's value: a shape that needs more bytes
  // than that is refused before its memory is allocated (the field's own check names it).
  uint64_t present = static_cast<uint64_t>(t.float_data_size()) + t.double_data_size() +
                     t.int32_data_size() + t.int64_data_size() + t.uint64_data_size();
  if (bytes > 8 * present) {
    return Error(name + ": holds " + std::to_string(present) + " values, but its shape " +
                 ShapeText(out.shape) + " needs " + std::to_string(*count));
  }
  auto data = std::make_shared<std::vector<uint8_t>>(bytes);
  using DT = ir::DataType;
  Status s;
  switch (out.dtype) {
    case DT::kFloat32:
      s = check(t.float_data_size(), 1);
      if (s) Store<decltype(t.float_data()), float>(t.float_data(), data.get());
      break;
    case DT::kComplex64:
      s = check(t.float_data_size(), 2);
      if (s) Store<decltype(t.float_data()), float>(t.float_data(), data.get());
      break;
    case DT::kFloat64:
      s = check(t.double_data_size(), 1);
      if (s) Store<decltype(t.double_data()), double>(t.double_data(), data.get());
      break;
    case DT::kComplex128:
      s = check(t.double_data_size(), 2);
      if (s) Store<decltype(t.double_data()), double>(t.double_data(), data.get());
      break;
    case DT::kInt64:
      s = check(t.int64_data_size(), 1);
      if (s) Store<decltype(t.int64_data()), int64_t>(t.int64_data(), data.get());
      break;
    case DT::kUInt32:
    case DT::kUInt64:
      s = check(t.uint64_data_size(), 1);
      if (s && out.dtype == DT::kUInt32)
        Store<decltype(t.uint64_data()), uint32_t>(t.uint64_data(), data.get());
      if (s && out.dtype == DT::kUInt64)
        Store<decltype(t.uint64_data()), uint64_t>(t.uint64_data(), data.get());
      break;
    case DT::kInt32:
      s = check(t.int32_data_size(), 1);
      if (s) Store<decltype(t.int32_data()), int32_t>(t.int32_data(), data.get());
      break;
    case DT::kInt16:
      s = check(t.int32_data_size(), 1);
      if (s) Store<decltype(t.int32_data()), int16_t>(t.int32_data(), data.get());
      break;
    case DT::kUInt16:
    case DT::kFloat16:
    case DT::kBFloat16:
      // float16 and bfloat16 travel as their bit patterns in int32_data.
      s = check(t.int32_data_size(), 1);
      if (s) Store<decltype(t.int32_data()), uint16_t>(t.int32_data(), data.get());
      break;
    case DT::kInt8:
    case DT::kUInt8:
    case DT::kBool:
    case DT::kFloat8E4M3FN:
    case DT::kFloat8E4M3FNUZ:
    case DT::kFloat8E5M2:
    case DT::kFloat8E5M2FNUZ:
    case DT::kFloat8E8M0:
      s = check(t.int32_data_size(), 1);
      if (s) Store<decltype(t.int32_data()), uint8_t>(t.int32_data(), data.get());
      break;
    case DT::kInt4:
    case DT::kUInt4:
    case DT::kFloat4E2M1:
    case DT::kInt2:
    case DT::kUInt2:
      s = check(t.int32_data_size(), 1);
      if (s) Store<decltype(t.int32_data()), uint8_t>(t.int32_data(), data.get());
      break;
    case DT::kVoid:
    case DT::kString:
      break;
  }
  if (!s) return s.error();
  out.bytes = std::move(data);
  return out;
}

Expected<ir::Expr> TensorToConstant(const TensorData& t) {
  return ir::MakeConstant(t.dtype, t.shape, t.bytes);
}

}  // namespace quilt::importers::onnx
