#include "tools/tensor_io.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "importers/onnx/tensor.h"
#include "tools/files.h"

namespace quilt::tools {
namespace {

using rt::DType;

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

// a * b, false when it does not fit in 64 bits.
bool Mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// [offset, offset + len) lies within `size` bytes (no overflow whatever the values).
bool Within(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

std::string ShapeText(const rt::Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

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

// A .npy shape tuple: "()", "(3,)", "(2, 3)"; false for anything else (a sign, a name, junk).
bool ParseShapeTuple(const std::string& text, rt::Shape* shape) {
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < text.size() && text[i] == ' ') ++i;
  };
  if (text.empty() || text[0] != '(') return false;
  ++i;
  for (;;) {
    skip_spaces();
    if (i < text.size() && text[i] == ')') break;
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start || i - start > 18) return false;  // 18 digits fit in int64
    shape->push_back(std::stoll(text.substr(start, i - start)));
    skip_spaces();
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == ')') break;
    return false;
  }
  ++i;  // ')'
  skip_spaces();
  return i == text.size();
}

// Where the header dict of a .npy starts and where the data starts, from its first bytes (10 for
// version 1, 12 for versions 2 and 3).
struct NpyPreamble {
  size_t header_start = 0, data_offset = 0;
};

Expected<NpyPreamble> ParseNpyPreamble(std::string_view bytes, const std::string& where) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6)) {
    return Error(where + ": not a .npy file (no \\x93NUMPY magic)");
  }
  int major = static_cast<unsigned char>(bytes[6]);
  NpyPreamble p;
  size_t header_len = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    p.header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Error(where + ": truncated .npy header");
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    p.header_start = 12;
  } else {
    return Error(where + ": unsupported .npy version " + std::to_string(major));
  }
  p.data_offset = p.header_start + header_len;
  return p;
}

struct NpyHeader {
  DType dtype = DType::kVoid;
  rt::Shape shape;
  size_t data_offset = 0;
  uint64_t data_bytes = 0;  // what the dtype and shape need
};

// The header of the .npy in `bytes`, which must hold the whole header (the data may follow).
Expected<NpyHeader> ParseNpyHeader(std::string_view bytes, const std::string& where) {
  Expected<NpyPreamble> p = ParseNpyPreamble(bytes, where);
  if (!p) return p.error();
  if (p->data_offset > bytes.size()) return Error(where + ": truncated .npy header");
  std::string header(bytes.substr(p->header_start, p->data_offset - p->header_start));
  NpyHeader h;
  h.data_offset = p->data_offset;
  std::string descr = HeaderField(header, "descr");
  if (descr.size() >= 2) descr = descr.substr(1, descr.size() - 2);
  for (const NpyType& n : kNpyTypes) {
    if (descr == n.descr || (descr.size() == 3 && descr[0] == '=' &&
                             descr.substr(1) == std::string(n.descr).substr(1))) {
      h.dtype = n.dtype;
    }
  }
  if (h.dtype == DType::kVoid) return Error(where + ": unsupported .npy dtype '" + descr + "'");
  if (HeaderField(header, "fortran_order").rfind("True", 0) == 0) {
    return Error(where + ": Fortran-ordered arrays are not supported (save with C order)");
  }
  std::string shape = HeaderField(header, "shape");
  if (!ParseShapeTuple(shape, &h.shape)) {
    return Error(where + ": the .npy header's shape '" + shape +
                 "' is not a tuple of non-negative integers");
  }
  uint64_t count = 1;
  for (int64_t d : h.shape) {
    if (!Mul(count, static_cast<uint64_t>(d), &count)) {
      return Error(where + ": the .npy header's shape " + ShapeText(h.shape) +
                   " has more elements than 64 bits can count");
    }
  }
  if (!Mul(count, static_cast<uint64_t>(rt::DTypeBits(h.dtype) / 8), &h.data_bytes)) {
    return Error(where + ": the .npy header's " + std::string(rt::DTypeName(h.dtype)) + " " +
                 ShapeText(h.shape) + " needs more bytes than 64 bits can count");
  }
  return h;
}

// One member of a zip archive, from its central directory entry and local header.
struct ZipMember {
  std::string name;  // as stored: "x.npy"
  uint64_t method = 0, csize = 0, usize = 0;
  uint64_t data = 0;  // where its (compressed) bytes start in the archive
};

std::string TensorName(const std::string& member) {
  return member.size() > 4 && member.ends_with(".npy") ? member.substr(0, member.size() - 4)
                                                       : member;
}

// The members of the zip archive `z`, each checked to lie within it.
Expected<std::vector<ZipMember>> ListZip(std::string_view z, const std::string& path) {
  // Readers of little-endian fields; every offset is checked with Within() first.
  auto u16 = [&](uint64_t o) -> uint64_t {
    return static_cast<unsigned char>(z[o]) | (static_cast<unsigned char>(z[o + 1]) << 8);
  };
  auto u32 = [&](uint64_t o) -> uint64_t { return u16(o) | (u16(o + 2) << 16); };
  auto u64 = [&](uint64_t o) -> uint64_t { return u32(o) | (u32(o + 4) << 32); };
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
  if (eocd >= 20 && u32(eocd - 20) == 0x07064b50) {
    uint64_t rec = u64(eocd - 20 + 8);
    if (!Within(rec, 56, z.size()) || u32(rec) != 0x06064b50) {
      return Error(path + ": bad ZIP64 record");
    }
    entries = u64(rec + 32);
    dir = u64(rec + 48);
  }
  std::vector<ZipMember> out;
  uint64_t pos = dir;
  // Each entry takes at least 46 bytes: a damaged count runs out of archive, not of memory.
  for (uint64_t e = 0; e < entries; ++e) {
    if (!Within(pos, 46, z.size()) || u32(pos) != 0x02014b50) {
      return Error(path + ": bad zip directory (entry " + std::to_string(e) + ")");
    }
    ZipMember m;
    m.method = u16(pos + 10);
    m.csize = u32(pos + 20);
    m.usize = u32(pos + 24);
    uint64_t name_len = u16(pos + 28), extra_len = u16(pos + 30), comment_len = u16(pos + 32);
    uint64_t local = u32(pos + 42);
    uint64_t name_at = pos + 46;
    if (!Within(name_at, name_len + extra_len + comment_len, z.size())) {
      return Error(path + ": bad zip directory (entry " + std::to_string(e) + ")");
    }
    m.name = std::string(z.substr(name_at, name_len));
    // ZIP64 extra field: the 64-bit values of the fields that hold 0xffffffff, in order.
    uint64_t extra_end = name_at + name_len + extra_len;
    for (uint64_t x = name_at + name_len; x + 4 <= extra_end;) {
      uint64_t id = u16(x), len = u16(x + 2);
      uint64_t v = x + 4, end = v + len;
      if (end > extra_end) return Error(path + ": member '" + m.name + "': bad zip extra field");
      if (id == 1) {
        if (m.usize == 0xffffffff && v + 8 <= end) m.usize = u64(v), v += 8;
        if (m.csize == 0xffffffff && v + 8 <= end) m.csize = u64(v), v += 8;
        if (local == 0xffffffff && v + 8 <= end) local = u64(v);
      }
      x = end;
    }
    pos = extra_end + comment_len;
    if (!Within(local, 30, z.size()) || u32(local) != 0x04034b50) {
      return Error(path + ": member '" + m.name + "' has no local header");
    }
    m.data = local + 30 + u16(local + 26) + u16(local + 28);
    if (!Within(m.data, m.csize, z.size())) {
      return Error(path + ": member '" + m.name + "' (" + std::to_string(m.csize) +
                   " bytes) lies outside the archive");
    }
    out.push_back(std::move(m));
  }
  if (out.empty()) return Error(path + ": not an .npz archive (no members found)");
  return out;
}

// A raw deflate stream, inflated a piece at a time.
class Inflater {
 public:
  explicit Inflater(std::string_view in) : in_(in) { ok_ = inflateInit2(&z_, -MAX_WBITS) == Z_OK; }
  ~Inflater() {
    if (ok_) inflateEnd(&z_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Inflates until `out` holds `size` bytes.
  Status Fill(std::string* out, uint64_t size, const std::string& where) {
    if (!ok_) return Error(where + ": zlib init failed");
    while (out->size() < size) {
      if (ended_) {
        return Error(where + ": the member inflates to " + std::to_string(out->size()) +
                     " bytes, fewer than the zip directory says");
      }
      size_t old = out->size();
      size_t want = static_cast<size_t>(std::min<uint64_t>(size - old, 1 << 20));
      out->resize(old + want);
      QUILT_TRY(Step(out->data() + old, want, where));
      out->resize(old + (want - z_.avail_out));
    }
    return {};
  }

  // The stream ends here: no byte more.
  Status Finish(const std::string& where) {
    char extra;
    while (!ended_) {
      QUILT_TRY(Step(&extra, 1, where));
      if (z_.avail_out == 0) {
        return Error(where + ": the member inflates to more bytes than the zip directory says");
      }
    }
    return {};
  }

 private:
  Status Step(char* out, size_t n, const std::string& where) {
    if (z_.avail_in == 0 && used_ < in_.size()) {
      size_t chunk = std::min<size_t>(in_.size() - used_, 1 << 30);
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data() + used_));
      z_.avail_in = static_cast<uInt>(chunk);
      used_ += chunk;
    }
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      ended_ = true;
      return {};
    }
    if (rc == Z_OK) return {};
    if (rc == Z_BUF_ERROR && z_.avail_in == 0 && used_ == in_.size()) {
      return Error(where + ": the member's deflate stream is cut short");
    }
    return Error(where + ": the member does not inflate (" +
                 std::string(z_.msg ? z_.msg : "zlib error " + std::to_string(rc)) + ")");
  }

  std::string_view in_;
  size_t used_ = 0;
  z_stream z_{};
  bool ok_ = false, ended_ = false;
};

// Deflate makes at most about 1032 bytes of one (a run of 258-byte matches).
constexpr uint64_t kMaxDeflateRatio = 1032;

// The array in member `m` of the archive `z`. The member's sizes in the directory, the .npy
// header's shape and the bytes present must all agree before its data is inflated.
Expected<OwnedTensor> ReadMember(std::string_view z, const std::string& path, const ZipMember& m) {
  std::string where = path + ":" + m.name;
  std::string_view stored = z.substr(m.data, m.csize);
  Expected<OwnedTensor> t = Error("");
  if (m.method == 0) {
    if (m.usize != m.csize) {
      return Error(where + ": a stored member of " + std::to_string(m.csize) +
                   " bytes, but the zip directory says " + std::to_string(m.usize));
    }
    t = ParseNpy(stored, where);
  } else if (m.method == 8) {
    if (m.usize / kMaxDeflateRatio > m.csize + 1) {
      return Error(where + ": the zip directory says " + std::to_string(m.usize) +
                   " bytes inflate from " + std::to_string(m.csize) +
                   ", more than deflate can make");
    }
    Inflater inflater(stored);
    std::string member;
    QUILT_TRY(inflater.Fill(&member, std::min<uint64_t>(m.usize, 12), where));
    Expected<NpyPreamble> p = ParseNpyPreamble(member, where);
    if (!p) return p.error();
    if (p->data_offset > m.usize) return Error(where + ": truncated .npy header");
    QUILT_TRY(inflater.Fill(&member, p->data_offset, where));
    Expected<NpyHeader> h = ParseNpyHeader(member, where);
    if (!h) return h.error();
    if (h->data_bytes != m.usize - h->data_offset) {
      return Error(where + ": the .npy header's " + std::string(rt::DTypeName(h->dtype)) + " " +
                   ShapeText(h->shape) + " needs " + std::to_string(h->data_bytes) +
                   " data bytes, the zip directory gives the member " +
                   std::to_string(m.usize - h->data_offset));
    }
    member.reserve(m.usize);
    QUILT_TRY(inflater.Fill(&member, m.usize, where));
    QUILT_TRY(inflater.Finish(where));
    t = ParseNpy(member, where);
  } else {
    return Error(where + ": uses zip method " + std::to_string(m.method) +
                 " (only stored and deflated members are read)");
  }
  if (!t) return t.error();
  t->name = TensorName(m.name);
  return t;
}

}  // namespace

Expected<OwnedTensor> ParseNpy(std::string_view bytes, const std::string& where) {
  Expected<NpyHeader> h = ParseNpyHeader(bytes, where);
  if (!h) return h.error();
  uint64_t present = bytes.size() - h->data_offset;
  if (present != h->data_bytes) {
    return Error(where + ": holds " + std::to_string(present) + " data bytes, but the header's " +
                 std::string(rt::DTypeName(h->dtype)) + " " + ShapeText(h->shape) + " needs " +
                 std::to_string(h->data_bytes));
  }
  OwnedTensor t;
  t.dtype = h->dtype;
  t.shape = std::move(h->shape);
  t.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(h->data_offset), bytes.end());
  return t;
}

Expected<OwnedTensor> ReadNpy(const std::string& path) {
  Expected<std::string> bytes = ReadRegularFile(path, "");
  if (!bytes) return bytes.error();
  return ParseNpy(*bytes, path);
}

Expected<std::vector<OwnedTensor>> ReadNpz(const std::string& path) {
  Expected<std::string> file = ReadRegularFile(path, "");
  if (!file) return file.error();
  Expected<std::vector<ZipMember>> members = ListZip(*file, path);
  if (!members) return members.error();
  std::vector<OwnedTensor> out;
  for (const ZipMember& m : *members) {
    Expected<OwnedTensor> t = ReadMember(*file, path, m);
    if (!t) return t.error();
    out.push_back(std::move(*t));
  }
  return out;
}

Expected<OwnedTensor> ReadNpzMember(const std::string& path, const std::string& name) {
  Expected<std::string> file = ReadRegularFile(path, "");
  if (!file) return file.error();
  Expected<std::vector<ZipMember>> members = ListZip(*file, path);
  if (!members) return members.error();
  const ZipMember* found = members->size() == 1 ? &members->front() : nullptr;
  std::string names;
  for (const ZipMember& m : *members) {
    if (m.name == name || TensorName(m.name) == name) {
      found = &m;
      break;
    }
    names += (names.empty() ? "" : ", ") + TensorName(m.name);
  }
  if (!found) {
    return Error(path + ": no member named '" + name + "' (the members: " + names + ")");
  }
  return ReadMember(*file, path, *found);
}

Expected<OwnedTensor> ReadTensorPb(const std::string& path) {
  Expected<std::string> bytes = ReadRegularFile(path, "");
  if (!bytes) return bytes.error();
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(*bytes)) return Error(path + ": not an ONNX TensorProto");
  // The declared shape against the data present, before the reader allocates the shape.
  std::optional<ir::DataType> dtype = importers::onnx::ElemType(proto.data_type());
  if (dtype && *dtype != ir::DataType::kVoid && *dtype != ir::DataType::kString &&
      proto.data_location() != ::onnx::TensorProto::EXTERNAL) {
    std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    Expected<int64_t> count = importers::onnx::CheckedElementCount(dims);
    if (!count) return Error(path + ": dims " + ShapeText(dims) + ": " + count.error().message);
    // At most 2^50 elements of at most 64 bits: the bit count fits.
    auto n = static_cast<uint64_t>(*count);
    uint64_t bits = n * static_cast<uint64_t>(ir::DataTypeBits(*dtype));
    uint64_t need = bits / 8 + (bits % 8 != 0);
    if (proto.has_raw_data()) {
      if (proto.raw_data().size() != need) {
        return Error(path + ": raw_data holds " + std::to_string(proto.raw_data().size()) +
                     " bytes, but dims " + ShapeText(dims) + " need " + std::to_string(need));
      }
    } else {
      // Typed fields: one value per element (two for complex, one per byte for packed types).
      uint64_t values = static_cast<uint64_t>(proto.float_data_size()) +
                        static_cast<uint64_t>(proto.int32_data_size()) +
                        static_cast<uint64_t>(proto.int64_data_size()) +
                        static_cast<uint64_t>(proto.double_data_size()) +
                        static_cast<uint64_t>(proto.uint64_data_size());
      bool complex = *dtype == ir::DataType::kComplex64 || *dtype == ir::DataType::kComplex128;
      uint64_t want = ir::DataTypeBits(*dtype) < 8 ? need : complex ? 2 * n : n;
      if (values < want) {
        return Error(path + ": holds " + std::to_string(values) + " values, but dims " +
                     ShapeText(dims) + " need " + std::to_string(want));
      }
    }
  }
  Expected<importers::onnx::TensorData> t = importers::onnx::ReadTensor(proto, "");
  if (!t) return Error(path + ": " + t.error().ToString());
  OwnedTensor o;
  o.name = proto.name();
  o.dtype = static_cast<DType>(t->dtype);
  o.shape = t->shape;
  if (t->bytes) o.data = *t->bytes;
  return o;
}

Expected<OwnedTensor> ReadInputTensor(const std::string& path, const std::string& name) {
  Expected<OwnedTensor> t = path.ends_with(".npz")  ? ReadNpzMember(path, name)
                            : path.ends_with(".pb") ? ReadTensorPb(path)
                                                    : ReadNpy(path);
  if (!t) return t.error();
  t->name = name;
  return t;
}

std::string NpyBytes(const OwnedTensor& t) {
  const char* descr = nullptr;
  for (const NpyType& n : kNpyTypes) {
    if (n.dtype == t.dtype) descr = n.descr;
  }
  std::string header = "{'descr': '" + std::string(descr ? descr : "|u1") +
                       "', 'fortran_order': False, 'shape': " + ShapeText(t.shape) + ", }";
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
  return WriteFileAtomically(path, NpyBytes(t), "");
}

}  // namespace quilt::tools
