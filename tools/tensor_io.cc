#include "tools/tensor_io.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "importers/onnx/tensor.h"

namespace quilt::tools {
namespace {

using rt::DType;

Expected<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot open '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct NpyType {
  const char* descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16},
    {"|i1", DType::kInt8},    {"<i2", DType::kInt16},   {"<i4", DType::kInt32},
    {"<i8", DType::kInt64},   {"|u1", DType::kUInt8},   {"<u2", DType::kUInt16},
    {"<u4", DType::kUInt32},  {"<u8", DType::kUInt64},  {"|b1", DType::kBool},
};

// The value of `'key': VALUE` in a .npy header dict (up to the next ',' outside parentheses).
std::string HeaderField(const std::string& header, const std::string& key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t c = header.find(':', k);
  if (c == std::string::npos) return "";
  size_t i = c + 1;
  while (i < header.size() && header[i] == ' ') ++i;
  size_t end = i;
  int depth = 0;
  while (end < header.size()) {
    char ch = header[end];
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if ((ch == ',' || ch == '}') && depth == 0) break;
    ++end;
  }
  return header.substr(i, end - i);
}

}  // namespace

Expected<OwnedTensor> ParseNpy(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return Error(where + ": not a .npy file (no \\x93NUMPY magic)");
  }
  int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Error(where + ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return Error(where + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_start + header_len > bytes.size()) return Error(where + ": truncated .npy header");
  std::string header = bytes.substr(header_start, header_len);
  std::string descr = HeaderField(header, "descr");
  if (descr.size() >= 2) descr = descr.substr(1, descr.size() - 2);
  OwnedTensor t;
  t.dtype = DType::kVoid;
  for (const NpyType& n : kNpyTypes) {
    if (descr == n.descr || (descr.size() == 3 && descr[0] == '=' &&
                             descr.substr(1) == std::string(n.descr).substr(1))) {
      t.dtype = n.dtype;
    }
  }
  if (t.dtype == DType::kVoid) return Error(where + ": unsupported .npy dtype '" + descr + "'");
  if (HeaderField(header, "fortran_order").rfind("True", 0) == 0) {
    return Error(where + ": Fortran-ordered arrays are not supported (save with C order)");
  }
  std::string shape = HeaderField(header, "shape");
  int64_t n = 1;
  std::string num;
  for (char c : shape + ",") {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      num.push_back(c);
    } else if (!num.empty()) {
      if (num.size() > 15) return Error(where + ": dim too large");
      int64_t d = std::stoll(num);
      if (d != 0 && n > (int64_t{1} << 40) / d) return Error(where + ": array too large");
      t.shape.push_back(d);
      n *= d;
      num.clear();
    }
  }
  size_t data_start = header_start + header_len;
  size_t want = rt::DTypeBytes(t.dtype, n);
  if (bytes.size() - data_start != want) {
    return Error(where + ": holds " + std::to_string(bytes.size() - data_start) +
                 " data bytes, its dtype and shape need " + std::to_string(want));
  }
  t.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end());
  return t;
}

Expected<OwnedTensor> ReadNpy(const std::string& path) {
  Expected<std::string> bytes = ReadFile(path);
  if (!bytes) return bytes.error();
  return ParseNpy(*bytes, path);
}

Expected<std::vector<OwnedTensor>> ReadNpz(const std::string& path) {
  Expected<std::string> file = ReadFile(path);
  if (!file) return file.error();
  const std::string& z = *file;
  auto u16 = [&](size_t o) -> uint32_t {
    return static_cast<unsigned char>(z[o]) | (static_cast<unsigned char>(z[o + 1]) << 8);
  };
  auto u32 = [&](size_t o) -> uint32_t { return u16(o) | (u16(o + 2) << 16); };
  std::vector<OwnedTensor> out;
  size_t pos = 0;
  // Local file headers in order (numpy writes sizes in the local header; ZIP64 not handled).
  while (pos + 30 <= z.size() && u32(pos) == 0x04034b50) {
    uint32_t flags = u16(pos + 6), method = u16(pos + 8);
    uint32_t csize = u32(pos + 18), usize = u32(pos + 22);
    uint32_t name_len = u16(pos + 26), extra_len = u16(pos + 28);
    if ((flags & 8) || csize == 0xffffffff) {
      return Error(path + ": zip members with data descriptors or ZIP64 are not supported");
    }
    size_t data = pos + 30 + name_len + extra_len;
    if (data + csize > z.size()) return Error(path + ": truncated archive");
    std::string name = z.substr(pos + 30, name_len);
    std::string member;
    if (method == 0) {
      member = z.substr(data, csize);
    } else if (method == 8) {
      member.resize(usize);
      z_stream s{};
      if (inflateInit2(&s, -MAX_WBITS) != Z_OK) return Error(path + ": zlib init failed");
      s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data() + data));
      s.avail_in = csize;
      s.next_out = reinterpret_cast<Bytef*>(member.data());
      s.avail_out = usize;
      int rc = inflate(&s, Z_FINISH);
      inflateEnd(&s);
      if (rc != Z_STREAM_END || s.total_out != usize) {
        return Error(path + ": member '" + name + "' does not inflate");
      }
    } else {
      return Error(path + ": member '" + name + "' uses zip method " + std::to_string(method));
    }
    Expected<OwnedTensor> t = ParseNpy(member, path + ":" + name);
    if (!t) return t.error();
    t->name = name.size() > 4 && name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name;
    out.push_back(std::move(*t));
    pos = data + csize;
  }
  if (out.empty()) return Error(path + ": not an .npz archive (no members found)");
  return out;
}

Expected<OwnedTensor> ReadTensorPb(const std::string& path) {
  Expected<std::string> bytes = ReadFile(path);
  if (!bytes) return bytes.error();
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(*bytes)) return Error(path + ": not an ONNX TensorProto");
  Expected<importers::onnx::TensorData> t = importers::onnx::ReadTensor(proto, "");
  if (!t) return Error(path + ": " + t.error().ToString());
  OwnedTensor o;
  o.name = proto.name();
  o.dtype = static_cast<DType>(t->dtype);
  o.shape = t->shape;
  if (t->bytes) o.data = *t->bytes;
  return o;
}

Expected<std::vector<OwnedTensor>> ReadTensors(const std::string& path) {
  if (path.ends_with(".npz")) return ReadNpz(path);
  Expected<OwnedTensor> t = path.ends_with(".pb") ? ReadTensorPb(path) : ReadNpy(path);
  if (!t) return t.error();
  return std::vector<OwnedTensor>{std::move(*t)};
}

std::string NpyBytes(const OwnedTensor& t) {
  const char* descr = nullptr;
  for (const NpyType& n : kNpyTypes) {
    if (n.dtype == t.dtype) descr = n.descr;
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  shape += t.shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + std::string(descr ? descr : "|u1") +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

Status WriteNpy(const std::string& path, const OwnedTensor& t) {
  bool known = false;
  for (const NpyType& n : kNpyTypes) known |= n.dtype == t.dtype;
  if (!known) {
    return Error("cannot write " + std::string(rt::DTypeName(t.dtype)) + " output '" + t.name +
                 "' as .npy");
  }
  std::ofstream out(path, std::ios::binary);
  std::string bytes = NpyBytes(t);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return Error("cannot write '" + path + "'");
  return {};
}

}  // namespace quilt::tools
