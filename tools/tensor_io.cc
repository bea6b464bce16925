#include "tools/tensor_io.h"

#include <zlib.h>

#include <algorithm>
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
  auto u16 = [&](size_t o) -> uint64_t {
    return static_cast<unsigned char>(z[o]) | (static_cast<unsigned char>(z[o + 1]) << 8);
  };
  auto u32 = [&](size_t o) -> uint64_t { return u16(o) | (u16(o + 2) << 16); };
  auto u64 = [&](size_t o) -> uint64_t { return u32(o) | (u32(o + 4) << 32); };
  // Whether bytes [o, o + n) lie in the archive; o and n are read from it (64-bit for ZIP64), so
  // o + n may wrap around.
  auto fits = [&](uint64_t o, uint64_t n) { return o <= z.size() && n <= z.size() - o; };
  // The central directory (found through the end record) has every member's sizes and offset;
  // numpy writes ZIP64 members, whose real sizes are in the ZIP64 extra field.
  if (z.size() < 22) return Error(path + ": not an .npz archive (too short)");
  size_t eocd = std::string::npos;
  for (size_t o = z.size() - 22;; --o) {
    if (u32(o) == 0x06054b50) {
      eocd = o;
      break;
    }
    if (o == 0 || z.size() - o > 22 + 65535) break;
  }
  if (eocd == std::string::npos) return Error(path + ": not an .npz archive (no zip directory)");
  uint64_t entries = u16(eocd + 10);
  uint64_t dir = u32(eocd + 16);
  if (dir == 0xffffffff && eocd >= 20 && u32(eocd - 20) == 0x07064b50) {
    uint64_t rec = u64(eocd - 20 + 8);
    if (!fits(rec, 56) || u32(rec) != 0x06064b50) return Error(path + ": bad ZIP64 record");
    entries = u64(rec + 32);
    dir = u64(rec + 48);
  }
  std::vector<OwnedTensor> out;
  size_t pos = dir;
  for (uint64_t e = 0; e < entries; ++e) {
    if (!fits(pos, 46) || u32(pos) != 0x02014b50) return Error(path + ": bad zip directory");
    uint64_t method = u16(pos + 10), csize = u32(pos + 20), usize = u32(pos + 24);
    uint64_t name_len = u16(pos + 28), extra_len = u16(pos + 30), comment_len = u16(pos + 32);
    uint64_t local = u32(pos + 42);
    if (pos + 46 + name_len + extra_len > z.size()) return Error(path + ": bad zip directory");
    std::string name = z.substr(pos + 46, name_len);
    // ZIP64 extra field: the 64-bit values of the fields that hold 0xffffffff, in order.
    size_t extra_end = pos + 46 + name_len + extra_len;
    for (size_t x = pos + 46 + name_len; x + 4 <= extra_end;) {
      uint64_t id = u16(x), len = u16(x + 2);
      size_t v = x + 4, end = std::min<size_t>(x + 4 + len, extra_end);
      if (id == 1) {
        if (usize == 0xffffffff && v + 8 <= end) usize = u64(v), v += 8;
        if (csize == 0xffffffff && v + 8 <= end) csize = u64(v), v += 8;
        if (local == 0xffffffff && v + 8 <= end) local = u64(v);
      }
      x += 4 + len;
    }
    pos += 46 + name_len + extra_len + comment_len;
    if (!fits(local, 30) || u32(local) != 0x04034b50) {
      return Error(path + ": member '" + name + "' has no local header");
    }
    uint64_t data = local + 30 + u16(local + 26) + u16(local + 28);
    if (!fits(data, csize) || usize > (uint64_t{1} << 40)) {
      return Error(path + ": member '" + name + "' lies outside the archive");
    }
    // Deflate expands at most 1032-fold: a larger size is not the member's, and would be
    // allocated before inflating finds out.
    if (method == 8 && usize / 1032 > csize) {
      return Error(path + ": member '" + name + "' claims " + std::to_string(usize) +
                   " bytes from " + std::to_string(csize) + " deflated bytes");
    }
    std::string member;
    if (method == 0) {
      member = z.substr(data, csize);
    } else if (method == 8) {
      member.resize(usize);
      z_stream st{};
      if (inflateInit2(&st, -MAX_WBITS) != Z_OK) return Error(path + ": zlib init failed");
      st.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data() + data));
      st.avail_in = static_cast<uInt>(csize);
      st.next_out = reinterpret_cast<Bytef*>(member.data());
      st.avail_out = static_cast<uInt>(usize);
      int rc = inflate(&st, Z_FINISH);
      inflateEnd(&st);
      if (rc != Z_STREAM_END || st.total_out != usize) {
        return Error(path + ": member '" + name + "' does not inflate");
      }
    } else {
      return Error(path + ": member '" + name + "' uses zip method " + std::to_string(method));
    }
    Expected<OwnedTensor> t = ParseNpy(member, path + ":" + name);
    if (!t) return t.error();
    t->name = name.size() > 4 && name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name;
    out.push_back(std::move(*t));
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
