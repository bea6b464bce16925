// Quantization: quantize/dequantize, integer matmul and convolution, dynamic quantization.
//
// Quantized elements are read and written through one pair of helpers (QRead / QWrite) that
// know every quantized storage type: 8/16-bit integers, int32, packed int4/uint4/int2/uint2
// (element 0 in the lowest bits of byte 0), float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) and packed
// float4 E2M1.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/int8_gemm.h"
#include "targets/cpu/kernels/linalg.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// ---- Minifloats ------------------------------------------------------------------------------

struct MiniFloat {
  int ebits, mbits, bias;
  bool fnuz;     // NaN is 0x80, no negative zero
  bool has_inf;  // E5M2: exponent all ones is inf/NaN
  bool has_nan;  // false: float4 (no NaN encoding)
  int bits;      // 8 or 4
};

constexpr MiniFloat kE4M3FN = {4, 3, 7, false, false, true, 8};
constexpr MiniFloat kE4M3FNUZ = {4, 3, 8, true, false, true, 8};
constexpr MiniFloat kE5M2 = {5, 2, 15, false, true, true, 8};
constexpr MiniFloat kE5M2FNUZ = {5, 2, 16, true, false, true, 8};
constexpr MiniFloat kE2M1 = {2, 1, 1, false, false, false, 4};

const MiniFloat* FindMiniFloat(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN:
      return &kE4M3FN;
    case DType::kFloat8E4M3FNUZ:
      return &kE4M3FNUZ;
    case DType::kFloat8E5M2:
      return &kE5M2;
    case DType::kFloat8E5M2FNUZ:
      return &kE5M2FNUZ;
    case DType::kFloat4E2M1:
      return &kE2M1;
    default:
      return nullptr;
  }
}

double MiniDecode(const MiniFloat& f, uint32_t code) {
  uint32_t sign = code >> (f.bits - 1) & 1;
  uint32_t e = code >> f.mbits & ((1u << f.ebits) - 1);
  uint32_t m = code & ((1u << f.mbits) - 1);
  if (f.fnuz && code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (f.has_inf && e == (1u << f.ebits) - 1) {
    if (m == 0) return sign ? -INFINITY : INFINITY;
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (!f.fnuz && !f.has_inf && f.has_nan && e == (1u << f.ebits) - 1 && m == (1u << f.mbits) - 1) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits)
                    : std::ldexp(static_cast<double>(m + (1u << f.mbits)),
                                 static_cast<int>(e) - f.bias - f.mbits);
  return sign ? -v : v;
}

// The largest finite value.
double MiniMax(const MiniFloat& f) {
  int emax = (1 << f.ebits) - 1 - f.bias;
  int mmax = (1 << f.mbits) - 1;
  if (f.has_inf) emax -= 1;                           // E5M2: top exponent is inf/NaN
  if (!f.fnuz && !f.has_inf && f.has_nan) mmax -= 1;  // E4M3FN: S.1111.111 is NaN
  return std::ldexp(static_cast<double>(mmax + (1 << f.mbits)), emax - f.mbits);
}

uint32_t MiniNaN(const MiniFloat& f, bool neg) {
  if (f.fnuz) return 0x80;
  uint32_t s = neg ? 1u << (f.bits - 1) : 0;
  if (f.has_inf) return s | 0x7F;
  return s | ((1u << (f.bits - 1)) - 1);
}

// Round to nearest even; out of range saturates (or gives inf/NaN when !saturate).
uint32_t MiniEncode(const MiniFloat& f, double v, bool saturate) {
  if (!f.has_nan) saturate = true;
  bool neg = std::signbit(v);
  uint32_t s = neg ? 1u << (f.bits - 1) : 0;
  if (std::isnan(v)) return f.has_nan ? MiniNaN(f, neg) : s | ((1u << (f.bits - 1)) - 1);
  double a = std::fabs(v);
  double max = MiniMax(f);
  uint32_t max_code = 0;
  {
    int exp;
    double fr = std::frexp(max, &exp);  // max = fr * 2^exp, fr in [0.5, 1)
    uint32_t m = static_cast<uint32_t>(std::ldexp(fr, f.mbits + 1)) - (1u << f.mbits);
    max_code = static_cast<uint32_t>(exp - 1 + f.bias) << f.mbits | m;
  }
  auto overflow = [&]() -> uint32_t {
    if (saturate) return s | max_code;
    if (f.has_inf) return s | (((1u << f.ebits) - 1) << f.mbits);
    return MiniNaN(f, neg);
  };
  if (std::isinf(a)) return overflow();
  // The quantum at a's binade (subnormal quantum below the normal range).
  int min_exp = 1 - f.bias;
  int e = a > 0 ? std::ilogb(a) : min_exp;
  if (e < min_exp) e = min_exp;
  double q = std::ldexp(1.0, e - f.mbits);
  double r = std::nearbyint(a / q);  // default rounding: half to even
  double rv = r * q;
  if (rv > max) return overflow();
  if (rv == 0) return f.fnuz ? 0 : s;
  int exp;
  double fr = std::frexp(rv, &exp);
  int ue = exp - 1;  // rv = 1.m * 2^ue
  uint32_t code;
  if (ue < min_exp) {
    code = static_cast<uint32_t>(std::ldexp(rv, f.bias - 1 + f.mbits));
  } else {
    uint32_t m = static_cast<uint32_t>(std::ldexp(fr, f.mbits + 1)) - (1u << f.mbits);
    code = static_cast<uint32_t>(ue + f.bias) << f.mbits | m;
  }
  return s | code;
}

// ---- Element access --------------------------------------------------------------------------

bool IsQuantStorage(DType t) {
  switch (t) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kInt4:
    case DType::kUInt4:
    case DType::kInt2:
    case DType::kUInt2:
      return true;
    default:
      return FindMiniFloat(t) != nullptr;
  }
}

// Range of an integer quantized type.
bool IntRange(DType t, double* lo, double* hi) {
  switch (t) {
    case DType::kInt8:
      *lo = -128, *hi = 127;
      return true;
    case DType::kUInt8:
      *lo = 0, *hi = 255;
      return true;
    case DType::kInt16:
      *lo = -32768, *hi = 32767;
      return true;
    case DType::kUInt16:
      *lo = 0, *hi = 65535;
      return true;
    case DType::kInt32:
      *lo = -2147483648.0, *hi = 2147483647.0;
      return true;
    case DType::kInt4:
      *lo = -8, *hi = 7;
      return true;
    case DType::kUInt4:
      *lo = 0, *hi = 15;
      return true;
    case DType::kInt2:
      *lo = -2, *hi = 1;
      return true;
    case DType::kUInt2:
      *lo = 0, *hi = 3;
      return true;
    default:
      return false;
  }
}

// The raw bits of packed element i (4 or 2 bits).
uint32_t PackedGet(const Tensor& t, int64_t i) {
  int bits = rt::DTypeBits(t.dtype);
  int per = 8 / bits;
  uint8_t byte = t.Data<uint8_t>()[i / per];
  return byte >> ((i % per) * bits) & ((1u << bits) - 1);
}

void PackedSet(Tensor* t, int64_t i, uint32_t v) {
  int bits = rt::DTypeBits(t->dtype);
  int per = 8 / bits;
  uint8_t& byte = t->MutableData<uint8_t>()[i / per];
  int shift = (i % per) * bits;
  uint32_t mask = ((1u << bits) - 1) << shift;
  byte = static_cast<uint8_t>((byte & ~mask) | ((v << shift) & mask));
}

// Zeroes the unused high bits of the last byte of a packed tensor.
void ClearPadding(Tensor* t) {
  int bits = rt::DTypeBits(t->dtype);
  int64_t used = t->NumElements() * bits % 8;
  if (bits >= 8 || used == 0) return;
  uint8_t& last = t->MutableData<uint8_t>()[t->ByteSize() - 1];
  last = static_cast<uint8_t>(last & ((1u << used) - 1));
}

// Element i of a quantized (or float) tensor as a double.
double QRead(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kInt8:
      return t.Data<int8_t>()[i];
    case DType::kUInt8:
      return t.Data<uint8_t>()[i];
    case DType::kInt16:
      return t.Data<int16_t>()[i];
    case DType::kUInt16:
      return t.Data<uint16_t>()[i];
    case DType::kInt32:
      return t.Data<int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(t.Data<int64_t>()[i]);
    case DType::kFloat32:
      return t.Data<float>()[i];
    case DType::kFloat64:
      return t.Data<double>()[i];
    case DType::kFloat16:
      return rt::HalfToFloat(t.Data<uint16_t>()[i]);
    case DType::kBFloat16:
      return rt::BFloat16ToFloat(t.Data<uint16_t>()[i]);
    case DType::kUInt4:
    case DType::kUInt2:
      return PackedGet(t, i);
    case DType::kInt4:
    case DType::kInt2: {
      int bits = rt::DTypeBits(t.dtype);
      int32_t v = static_cast<int32_t>(PackedGet(t, i));
      if (v >= 1 << (bits - 1)) v -= 1 << bits;
      return v;
    }
    case DType::kFloat4E2M1:
      return MiniDecode(kE2M1, PackedGet(t, i));
    default: {
      const MiniFloat* f = FindMiniFloat(t.dtype);
      return f ? MiniDecode(*f, t.Data<uint8_t>()[i]) : 0.0;
    }
  }
}

// Writes v as element i: integer types take an already rounded value and clamp it; minifloats
// round to nearest even.
void QWrite(Tensor* t, int64_t i, double v, bool saturate) {
  double lo, hi;
  if (IntRange(t->dtype, &lo, &hi)) {
    if (std::isnan(v)) v = 0;
    v = std::min(std::max(v, lo), hi);
    switch (t->dtype) {
      case DType::kInt8:
        t->MutableData<int8_t>()[i] = static_cast<int8_t>(v);
        return;
      case DType::kUInt8:
        t->MutableData<uint8_t>()[i] = static_cast<uint8_t>(v);
        return;
      case DType::kInt16:
        t->MutableData<int16_t>()[i] = static_cast<int16_t>(v);
        return;
      case DType::kUInt16:
        t->MutableData<uint16_t>()[i] = static_cast<uint16_t>(v);
        return;
      case DType::kInt32:
        t->MutableData<int32_t>()[i] = static_cast<int32_t>(v);
        return;
      default:
        PackedSet(t, i, static_cast<uint32_t>(static_cast<int32_t>(v)));
        return;
    }
  }
  const MiniFloat* f = FindMiniFloat(t->dtype);
  if (!f) return;
  uint32_t code = MiniEncode(*f, v, saturate);
  if (f->bits == 4) {
    PackedSet(t, i, code);
  } else {
    t->MutableData<uint8_t>()[i] = static_cast<uint8_t>(code);
  }
}

// v rounded to the float type t (float32 unless t is float64 / float16 / bfloat16).
double RoundTo(DType t, double v) {
  switch (t) {
    case DType::kFloat64:
      return v;
    case DType::kFloat16:
      return rt::HalfToFloat(rt::FloatToHalf(static_cast<float>(v)));
    case DType::kBFloat16:
      return rt::BFloat16ToFloat(rt::FloatToBFloat16(static_cast<float>(v)));
    default:
      return static_cast<float>(v);
  }
}

void QWriteFloat(Tensor* t, int64_t i, double v) {
  switch (t->dtype) {
    case DType::kFloat32:
      t->MutableData<float>()[i] = static_cast<float>(v);
      return;
    case DType::kFloat64:
      t->MutableData<double>()[i] = v;
      return;
    case DType::kFloat16:
      t->MutableData<uint16_t>()[i] = rt::FloatToHalf(static_cast<float>(v));
      return;
    case DType::kBFloat16:
      t->MutableData<uint16_t>()[i] = rt::FloatToBFloat16(static_cast<float>(v));
      return;
    default:
      return;
  }
}

bool IsFloatType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

// ---- Quantization parameters -----------------------------------------------------------------

// Maps an element of the data to its scale / zero point element.
struct QuantParams {
  int64_t inner = 1, len = 1, block = 0, nblocks = 1;
  bool per_tensor = true;
  int64_t Index(int64_t i) const {
    if (per_tensor) return 0;
    int64_t c = (i / inner) % len;
    if (block == 0) return c;
    int64_t outer = i / (inner * len);
    return (outer * nblocks + c / block) * inner + i % inner;
  }
};

Status MakeQuantParams(const Tensor& x, const Tensor& scale, const Tensor& zp, int64_t axis,
                       int64_t block, QuantParams* p) {
  if (block < 0) return Status::Error("block_size must be >= 0");
  bool single = scale.rank() == 0 || (scale.rank() == 1 && scale.shape[0] == 1 && block == 0);
  int64_t zn = zp.NumElements();
  if (single) {
    if (zn != 1) return Status::Error("a per-tensor scale needs a single zero point");
    p->per_tensor = true;
    return Status::Ok();
  }
  if (!NormalizeAxis(&axis, x.rank())) return Status::Error("quantization axis out of range");
  p->per_tensor = false;
  p->len = x.shape[axis];
  p->inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) p->inner *= x.shape[d];
  p->block = block;
  if (block == 0) {
    if (scale.rank() != 1 || scale.shape[0] != p->len) {
      return Status::Error("per-axis scale of shape " + rt::ShapeString(scale.shape) +
                           " does not match axis " + std::to_string(axis) + " of " +
                           rt::ShapeString(x.shape));
    }
  } else {
    p->nblocks = (p->len + block - 1) / block;
    Shape want = x.shape;
    want[axis] = p->nblocks;
    if (scale.shape != want) {
      return Status::Error("blocked scale of shape " + rt::ShapeString(scale.shape) +
                           ", expected " + rt::ShapeString(want));
    }
  }
  if (zn != 1 && zp.shape != scale.shape) {
    return Status::Error("zero point shape " + rt::ShapeString(zp.shape) +
                         " differs from the scale's " + rt::ShapeString(scale.shape));
  }
  return Status::Ok();
}

Status Quantize(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& scale = *ctx.input(1);
  const Tensor& zp = *ctx.input(2);
  const rt::AttrView& at = ctx.attrs();
  DType out = at.Dtype("out_dtype", DType::kInt8);
  bool saturate = at.Bool("saturate", true);
  DType precision = at.Dtype("precision", DType::kVoid);
  if (precision == DType::kVoid) {
    // numpy's promotion of x / scale.
    if (x.dtype == DType::kInt32 || x.dtype == DType::kFloat64 || scale.dtype == DType::kFloat64) {
      precision = DType::kFloat64;
    } else {
      precision = x.dtype == scale.dtype ? x.dtype : DType::kFloat32;
    }
  }
  if (!IsQuantStorage(out) || out == DType::kInt32) {
    return Status::Error("cannot quantize to " + std::string(rt::DTypeName(out)));
  }
  if (!IsFloatType(x.dtype) && x.dtype != DType::kInt32) {
    return Status::Error("quantize expects float or int32 data");
  }
  if (zp.dtype != out) return Status::Error("the zero point's type differs from out_dtype");
  QuantParams p;
  QUILT_RETURN_IF_ERROR(
      MakeQuantParams(x, scale, zp, at.Int("axis", -1), at.Int("block_size", 0), &p));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, out, x.shape, &y));
  // No clearing of y first: it may share memory with the zero point (in-place steps), which is
  // read element by element before each element of y is written.
  bool is_int = FindMiniFloat(out) == nullptr;
  bool single_zp = zp.NumElements() == 1;
  int64_t n = x.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = p.Index(i);
    double s = RoundTo(precision, QRead(scale, k));
    double q = RoundTo(precision, RoundTo(precision, QRead(x, i)) / s);
    double z = QRead(zp, single_zp ? 0 : k);
    if (is_int) {
      QWrite(y, i, std::nearbyint(q) + z, saturate);
    } else {
      // The ONNX reference adds a float4 zero point always (turning -0 into +0), a float8 one
      // only when it is not zero.
      bool add = z != 0 || out == DType::kFloat4E2M1;
      QWrite(y, i, add ? q + z : q, saturate);
    }
  }
  ClearPadding(y);
  return Status::Ok();
}

Status Dequantize(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& scale = *ctx.input(1);
  const Tensor& zp = *ctx.input(2);
  const rt::AttrView& at = ctx.attrs();
  DType out = at.Dtype("out_dtype", DType::kFloat32);
  if (!IsFloatType(out)) return Status::Error("cannot dequantize to this type");
  if (!IsQuantStorage(x.dtype)) return Status::Error("dequantize expects quantized data");
  if (!IsFloatType(scale.dtype)) return Status::Error("the scale must be floating-point");
  QuantParams p;
  QUILT_RETURN_IF_ERROR(
      MakeQuantParams(x, scale, zp, at.Int("axis", -1), at.Int("block_size", 0), &p));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, out, x.shape, &y));
  bool single_zp = zp.NumElements() == 1;
  bool wide = x.dtype == DType::kInt32;
  int64_t n = x.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = p.Index(i);
    double d = QRead(x, i) - QRead(zp, single_zp ? 0 : k);
    if (!wide) d = static_cast<float>(d);
    double v = d * QRead(scale, k);
    QWriteFloat(y, i, wide ? v : static_cast<float>(v));
  }
  return Status::Ok();
}

Status DynamicQuantize(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kFloat32) return Status::Error("dynamic_quantize expects float32 data");
  Tensor *y, *ys, *yz;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kUInt8, x.shape, &y));
  QUILT_RETURN_IF_ERROR(ctx.Output(1, DType::kFloat32, {}, &ys));
  QUILT_RETURN_IF_ERROR(ctx.Output(2, DType::kUInt8, {}, &yz));
  float scale = 0;
  uint8_t zp = 0;
  DynamicQuantizeU8(x.Data<float>(), x.NumElements(), y->MutableData<uint8_t>(), &scale, &zp,
                    ctx.thread_pool());
  ys->MutableData<float>()[0] = scale;
  yz->MutableData<uint8_t>()[0] = zp;
  return Status::Ok();
}

// A scale or zero point that is a scalar / one element, or 1-D with `n` elements (indexed).
Status PerIndex(const Tensor& t, int64_t n, const char* what, bool* single) {
  *single = t.NumElements() == 1;
  if (*single) return Status::Ok();
  if (t.rank() != 1 || t.shape[0] != n) {
    return Status::Error(std::string(what) + " of shape " + rt::ShapeString(t.shape) +
                         " needs 1 or " + std::to_string(n) + " elements");
  }
  return Status::Ok();
}

Status QLinearMatmul(KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& as = *ctx.input(1);
  const Tensor& az = *ctx.input(2);
  const Tensor& b = *ctx.input(3);
  const Tensor& bs = *ctx.input(4);
  const Tensor& bz = *ctx.input(5);
  const Tensor& ys = *ctx.input(6);
  const Tensor& yz = *ctx.input(7);
  for (const Tensor* t : {&a, &az, &b, &bz, &yz}) {
    if (!IsQuantStorage(t->dtype) || FindMiniFloat(t->dtype)) {
      return Status::Error("qlinear_matmul expects integer quantized inputs");
    }
  }
  for (const Tensor* t : {&as, &bs, &ys}) {
    if (!IsFloatType(t->dtype)) return Status::Error("qlinear_matmul scales must be float");
  }
  if (a.rank() == 0 || b.rank() == 0) return Status::Error("operands must have rank >= 1");
  Shape sa = a.shape, sb = b.shape;
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k) return Status::Error("qlinear_matmul reduction dims differ");
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), batch;
  if (!BroadcastShape(ba, bb, &batch)) return Status::Error("batch dims do not broadcast");
  bool as1, az1, bs1, bz1, ys1, yz1;
  QUILT_RETURN_IF_ERROR(PerIndex(as, m, "a_scale", &as1));
  QUILT_RETURN_IF_ERROR(PerIndex(az, m, "a_zero_point", &az1));
  QUILT_RETURN_IF_ERROR(PerIndex(bs, n, "b_scale", &bs1));
  QUILT_RETURN_IF_ERROR(PerIndex(bz, n, "b_zero_point", &bz1));
  QUILT_RETURN_IF_ERROR(PerIndex(ys, 1, "y_scale", &ys1));
  QUILT_RETURN_IF_ERROR(PerIndex(yz, 1, "y_zero_point", &yz1));
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(m);
  if (!b_vec) out_shape.push_back(n);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, yz.dtype, out_shape, &y));
  std::vector<int64_t> offs_a, offs_b;
  const Shape strides[2] = {BroadcastStrides(ba, batch), BroadcastStrides(bb, batch)};
  ForEachBroadcast(batch, strides, [&](int64_t, const int64_t* off) {
    offs_a.push_back(off[0]);
    offs_b.push_back(off[1]);
  });
  if (batch.empty()) offs_a = offs_b = {0};
  DType st = as.dtype;
  double y_zp = QRead(yz, 0), y_scale = QRead(ys, 0);
  for (size_t bi = 0; bi < offs_a.size(); ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t acc = 0;
        double za = QRead(az, az1 ? 0 : i), zb = QRead(bz, bz1 ? 0 : j);
        for (int64_t p = 0; p < k; ++p) {
          int64_t va = static_cast<int64_t>(QRead(a, offs_a[bi] * m * k + i * k + p) - za);
          int64_t vb = static_cast<int64_t>(QRead(b, offs_b[bi] * k * n + p * n + j) - zb);
          acc += va * vb;
        }
        // The multiplier in the scales' type, as the ONNX reference computes it.
        double mult =
            RoundTo(st, RoundTo(st, QRead(as, as1 ? 0 : i) * QRead(bs, bs1 ? 0 : j)) / y_scale);
        double v = std::nearbyint(static_cast<double>(static_cast<int32_t>(acc)) * mult + y_zp);
        QWrite(y, static_cast<int64_t>(bi) * m * n + i * n + j, v, true);
      }
    }
  }
  ClearPadding(y);
  return Status::Ok();
}

// The weights of conv_integer as its fast paths read them, kept in the step's cache when
// constant: for Int8ConvSums (`int8`), or (8-bit values less zero points) as floats.
struct ConvIntegerWeights {
  bool int8 = false;
  Int8ConvWeights q;
  std::vector<float> f;
};

std::shared_ptr<ConvIntegerWeights> MakeConvIntegerWeights(const Tensor& w, const Tensor& wz,
                                                           bool wz1, int64_t oc, bool int8) {
  auto out = std::make_shared<ConvIntegerWeights>();
  out->int8 = int8;
  int64_t per_channel = w.NumElements() / std::max<int64_t>(oc, 1);
  if (int8) {
    Int8ConvWeights& q = out->q;
    bool flip = w.dtype == DType::kUInt8;  // int8 bytes: a uint8 weight less 128
    PackInt8Rows(static_cast<const uint8_t*>(w.data), oc, per_channel, per_channel, flip, &q.rows);
    Int8RowSums(q.rows, false, &q.sums);
    q.zp.resize(static_cast<size_t>(oc));
    for (int64_t m = 0; m < oc; ++m) {
      q.zp[m] = static_cast<int64_t>(QRead(wz, wz1 ? 0 : m)) - (flip ? 128 : 0);
      q.zero_zp &= q.zp[m] == 0;
    }
    return out;
  }
  out->f.resize(static_cast<size_t>(w.NumElements()));
  for (int64_t i = 0; i < w.NumElements(); ++i) {
    double v = w.dtype == DType::kUInt8 ? w.Data<uint8_t>()[i] : w.Data<int8_t>()[i];
    out->f[i] = static_cast<float>(v - QRead(wz, wz1 ? 0 : i / per_channel));
  }
  return out;
}

// Integer convolution of (x - x_zp) by (w - w_zp[oc]): the int32 sums, one per output element.
// `fast`: 8-bit data and weights on Int8ConvSums where the CPU has the 8-bit GEMM (HasInt8Dot:
// VNNI or AVX2), else through nn::ConvIntegerSums (float GEMMs, exact); else the reference loop
// per output element.
// `weights_constant`: w and wz are the same in every run (their packed form is then kept in the
// step's cache). `int32_out`: y is int32, and the 8-bit path may store the sums' low 32 bits
// there itself, leaving `sums` empty.
Status ConvIntegerCore(KernelContext& ctx, const Tensor& x, const Tensor& xz, const Tensor& w,
                       const Tensor& wz, DType out_dtype, Tensor** y, std::vector<int64_t>* sums,
                       bool weights_constant, bool fast = true, bool int32_out = false) {
  const rt::AttrView& at = ctx.attrs();
  Shape strides = at.Ints("strides"), pads = at.Ints("padding"), dil = at.Ints("dilation");
  int64_t groups = at.Int("groups", 1);
  int r = x.rank();
  if (r < 3 || w.rank() != r) return Status::Error("conv needs data and weight of one rank >= 3");
  size_t k = static_cast<size_t>(r - 2);
  if (strides.size() != k || dil.size() != k || pads.size() != 2 * k) {
    return Status::Error("strides, dilation and padding do not match the spatial rank");
  }
  int64_t nb = x.shape[0], c = x.shape[1], oc = w.shape[0], wc = w.shape[1];
  if (groups < 1 || c % groups != 0 || c / groups != wc || oc % groups != 0) {
    return Status::Error("channels do not match the groups");
  }
  if (xz.NumElements() != 1) return Status::Error("the data zero point must be a scalar");
  bool wz1;
  QUILT_RETURN_IF_ERROR(PerIndex(wz, oc, "weight zero point", &wz1));
  Shape out = {nb, oc};
  for (size_t i = 0; i < k; ++i) {
    if (strides[i] < 1 || dil[i] < 1) return Status::Error("strides and dilation must be >= 1");
    int64_t span, padded;
    if (__builtin_mul_overflow(w.shape[2 + i] - 1, dil[i], &span) ||
        __builtin_add_overflow(span, 1, &span) ||
        __builtin_add_overflow(x.shape[2 + i], pads[i], &padded) ||
        __builtin_add_overflow(padded, pads[k + i], &padded)) {
      return Status::Error("the dilated kernel or the padded input overflows");
    }
    if (padded < span) return Status::Error("the kernel is larger than the padded input");
    out.push_back((padded - span) / strides[i] + 1);
  }
  // The output first: its size passes the run's limits before the sums (one per output element)
  // are allocated.
  QUILT_RETURN_IF_ERROR(ctx.Output(0, out_dtype, out, y));
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  Shape xst = Strides(x.shape), wst = Strides(w.shape), ost = Strides(out);
  int64_t ksize = 1;
  for (size_t i = 0; i < k; ++i) ksize *= w.shape[2 + i];
  int64_t opg = oc / groups;
  double xzv = QRead(xz, 0);
  auto eight_bit = [](DType t) { return t == DType::kUInt8 || t == DType::kInt8; };
  // Zero points of their data's type: the differences are then at most 255 in magnitude (a
  // uint8 value less an int8 zero point reaches 383, past what the float slabs assume).
  bool eight_bit_path = fast && eight_bit(x.dtype) && eight_bit(w.dtype) && xz.dtype == x.dtype &&
                        wz.dtype == w.dtype && k <= static_cast<size_t>(nn::kMaxSpatial) &&
                        total > 0;
  bool int8 = eight_bit_path && HasInt8Dot() && wc * ksize <= kInt8MaxTerms;
  if (eight_bit_path && (int8 || ksize <= kEightBitExactTerms)) {
    std::shared_ptr<const ConvIntegerWeights> pw;
    if (weights_constant && ctx.cache()) {
      pw = ctx.cache()->Get<ConvIntegerWeights>(
          [&] { return MakeConvIntegerWeights(w, wz, wz1, oc, int8); });
    }
    // (A cache made for the other path: the weights as this one reads them, for this run.)
    if (!pw || pw->int8 != int8) pw = MakeConvIntegerWeights(w, wz, wz1, oc, int8);
    rt::ThreadPool* pool = ctx.thread_pool();
    nn::Window win;
    win.rank = static_cast<int>(k);
    for (size_t i = 0; i < k; ++i) {
      win.in[i] = x.shape[2 + i];
      win.out[i] = out[2 + i];
      win.kernel[i] = w.shape[2 + i];
      win.stride[i] = strides[i];
      win.dilation[i] = dil[i];
      win.pad_begin[i] = pads[i];
      win.pad_end[i] = pads[k + i];
    }
    if (int8) {
      Int8ConvGeometry g;  // the window's dims right-aligned
      for (int i = 0; i < win.rank; ++i) {
        int d = 3 - win.rank + i;
        g.in[d] = win.in[i];
        g.out[d] = win.out[i];
        g.kernel[d] = win.kernel[i];
        g.stride[d] = win.stride[i];
        g.dilation[d] = win.dilation[i];
        g.pad[d] = win.pad_begin[i];
        g.padded |= win.pad_begin[i] != 0 || win.pad_end[i] != 0;
      }
      bool x_flip = x.dtype == DType::kInt8;  // stored as x + 128, its zero point likewise
      int64_t xz8 = static_cast<int64_t>(xzv) + (x_flip ? 128 : 0);
      int32_t* out32 = int32_out ? (*y)->MutableData<int32_t>() : nullptr;
      if (!out32) sums->assign(total, 0);
      Int8ConvSums(static_cast<const uint8_t*>(x.data), x_flip, xz8, nb, c, groups, g, pw->q, out32,
                   sums->data(), pool);
      return Status::Ok();
    }
    // 8-bit values less their zero points (at most 255 in magnitude) as floats, exactly; the
    // sums as float GEMMs in exact slabs (nn::ConvIntegerSums).
    thread_local std::vector<float> kept_xf;  // this thread's, kept from run to run
    std::vector<float>& xf = kept_xf;
    xf.resize(static_cast<size_t>(x.NumElements()));
    if (x.dtype == DType::kUInt8) {
      const uint8_t* px = x.Data<uint8_t>();
      for (size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>(px[i] - xzv);
    } else {
      const int8_t* px = x.Data<int8_t>();
      for (size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>(px[i] - xzv);
    }
    sums->assign(total, 0);
    nn::ConvIntegerSums(xf.data(), pw->f.data(), nb, c, oc, groups, win, sums->data(), pool);
    return Status::Ok();
  }
  sums->assign(total, 0);
  std::vector<int64_t> opos(k), kpos(k);
  for (int64_t o = 0; o < total; ++o) {
    int64_t rem = o;
    int64_t b = rem / ost[0];
    rem %= ost[0];
    int64_t m = rem / ost[1];
    rem %= ost[1];
    for (size_t i = 0; i < k; ++i) {
      opos[i] = rem / ost[2 + i];
      rem %= ost[2 + i];
    }
    int64_t g = m / opg;
    double wzv = QRead(wz, wz1 ? 0 : m);
    int64_t acc = 0;
    for (int64_t ci = 0; ci < wc; ++ci) {
      int64_t ch = g * wc + ci;
      for (int64_t kk = 0; kk < ksize; ++kk) {
        int64_t kr = kk;
        int64_t xoff = b * xst[0] + ch * xst[1];
        bool inside = true;
        for (size_t i = k; i-- > 0;) {
          kpos[i] = kr % w.shape[2 + i];
          kr /= w.shape[2 + i];
        }
        int64_t woff = m * wst[0] + ci * wst[1];
        for (size_t i = 0; i < k; ++i) {
          int64_t pos = opos[i] * strides[i] - pads[i] + kpos[i] * dil[i];
          if (pos < 0 || pos >= x.shape[2 + i]) inside = false;
          xoff += pos * xst[2 + i];
          woff += kpos[i] * wst[2 + i];
        }
        if (!inside) continue;
        int64_t xv = static_cast<int64_t>(QRead(x, xoff) - xzv);
        int64_t wv = static_cast<int64_t>(QRead(w, woff) - wzv);
        acc += xv * wv;
      }
    }
    (*sums)[o] = acc;
  }
  return Status::Ok();
}

Status CheckIntQuant(const Tensor& t, const char* what) {
  if (!IsQuantStorage(t.dtype) || FindMiniFloat(t.dtype) || t.dtype == DType::kInt32) {
    return Status::Error(std::string(what) + " must be an 8/16/4-bit integer tensor");
  }
  return Status::Ok();
}

// B of matmul_integer as its fast paths read it, kept in the step's cache when B and its zero
// point are constant: for Int8Gemm (`int8`), each of its matrices as int8 panels (a uint8 value
// less 128) with its column sums; else, less its zero point, as floats.
struct MatmulIntegerB {
  bool int8 = false;
  std::vector<Int8Panels> panels;
  std::vector<std::vector<int64_t>> sums;
  std::vector<float> f;
};

std::shared_ptr<MatmulIntegerB> MakeMatmulIntegerB(const Tensor& b, const Tensor& bz, bool bz1,
                                                   int64_t k, int64_t n, bool int8,
                                                   rt::ThreadPool* pool) {
  auto out = std::make_shared<MatmulIntegerB>();
  out->int8 = int8;
  int64_t count = k * n > 0 ? b.NumElements() / (k * n) : 0;
  if (int8) {
    out->panels.resize(static_cast<size_t>(count));
    out->sums.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      PackInt8Panels(static_cast<const uint8_t*>(b.data) + i * k * n, k, n, n,
                     b.dtype == DType::kUInt8, &out->panels[i], pool);
      Int8ColumnSums(out->panels[i], false, &out->sums[i]);
    }
    return out;
  }
  out->f.resize(static_cast<size_t>(b.NumElements()));
  for (int64_t i = 0; i < b.NumElements(); ++i) {
    out->f[i] = static_cast<float>(QRead(b, i) - QRead(bz, bz1 ? 0 : i % n));
  }
  return out;
}

// matmul_integer: the int32 products of (a - a_zero_point) and (b - b_zero_point), each sum's low
// 32 bits. `fast`: 8-bit operands on Int8Gemm where the CPU has the 8-bit dot products (the zero
// points' terms added after, as for conv_integer), else as float GEMMs in exact slabs; else, and
// for other widths, the reference loop.
Status MatmulInteger(KernelContext& ctx, bool fast) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  const Tensor& az = *ctx.input(2);
  const Tensor& bz = *ctx.input(3);
  QUILT_RETURN_IF_ERROR(CheckIntQuant(a, "a"));
  QUILT_RETURN_IF_ERROR(CheckIntQuant(b, "b"));
  if (az.dtype != a.dtype) return Status::Error("a_zero_point must have a's type");
  if (bz.dtype != b.dtype) return Status::Error("b_zero_point must have b's type");
  MatmulGeometry geo;
  QUILT_RETURN_IF_ERROR(PrepareMatmul(ctx, &geo, DType::kInt32));
  int64_t m = geo.m, n = geo.n, k = geo.k;
  bool az1, bz1;
  QUILT_RETURN_IF_ERROR(PerIndex(az, m, "a_zero_point", &az1));
  QUILT_RETURN_IF_ERROR(PerIndex(bz, n, "b_zero_point", &bz1));
  int32_t* y = geo.y->MutableData<int32_t>();
  int64_t batches = static_cast<int64_t>(geo.offs_a.size());
  if (m * n == 0 || batches == 0) return Status::Ok();
  auto eight_bit = [](DType t) { return t == DType::kUInt8 || t == DType::kInt8; };
  rt::ThreadPool* pool = ctx.thread_pool();
  if (fast && k > 0 && eight_bit(a.dtype) && eight_bit(b.dtype)) {
    bool int8 = HasInt8Dot() && k <= kInt8MaxTerms;
    std::shared_ptr<const MatmulIntegerB> pb;
    if (ctx.constant_input(1) && ctx.constant_input(3) && ctx.cache()) {
      pb = ctx.cache()->Get<MatmulIntegerB>(
          [&] { return MakeMatmulIntegerB(b, bz, bz1, k, n, int8, pool); });
    }
    // (A cache made for the other path: B as this one reads it, for this run.)
    if (!pb || pb->int8 != int8) pb = MakeMatmulIntegerB(b, bz, bz1, k, n, int8, pool);
    if (!int8) {
      thread_local std::vector<float> kept_af;  // this thread's, kept from run to run
      std::vector<float>& af = kept_af;
      af.resize(static_cast<size_t>(a.NumElements()));
      for (int64_t i = 0; i < a.NumElements(); ++i) {
        af[i] = static_cast<float>(QRead(a, i) - QRead(az, az1 ? 0 : i / k % m));
      }
      ExactIntMatmul(geo, af.data(), pb->f.data(), kEightBitExactTerms, pool);
      return Status::Ok();
    }
    // a as uint8 (an int8 value + 128) and b as int8 (a uint8 value - 128), their zero points
    // moved likewise: sum (a - az)(b - bz) = sum a b - az sum b - bz sum a + k az bz.
    bool a_flip = a.dtype == DType::kInt8, b_flip = b.dtype == DType::kUInt8;
    std::vector<int64_t> azs(static_cast<size_t>(m)), bzs(static_cast<size_t>(n));
    for (int64_t i = 0; i < m; ++i)
      azs[i] = static_cast<int64_t>(QRead(az, az1 ? 0 : i)) + (a_flip ? 128 : 0);
    for (int64_t j = 0; j < n; ++j)
      bzs[j] = static_cast<int64_t>(QRead(bz, bz1 ? 0 : j)) - (b_flip ? 128 : 0);
    // Every matrix of A by one B (a weight): one product of all A's rows.
    bool one_b = true;
    for (int64_t bi = 0; bi < batches; ++bi) {
      one_b &= geo.offs_b[bi] == geo.offs_b[0] && geo.offs_a[bi] == bi;
    }
    Int8Rows rows;
    std::vector<int64_t> row_sums;
    std::vector<int32_t> prod;
    const uint8_t* pa = static_cast<const uint8_t*>(a.data);
    for (int64_t bi = 0; bi < batches; bi += one_b ? batches : 1) {
      int64_t count = one_b ? batches * m : m;
      PackInt8Rows(pa + geo.offs_a[bi] * m * k, count, k, k, a_flip, &rows);
      Int8RowSums(rows, true, &row_sums);
      prod.resize(static_cast<size_t>(count * n));
      const size_t bm = static_cast<size_t>(geo.offs_b[bi]);
      Int8Gemm(rows, pb->panels[bm], true, prod.data(), n, pool);
      const std::vector<int64_t>& col_sums = pb->sums[bm];
      int32_t* out = y + bi * m * n;
      rt::ParallelFor(pool, count, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t za = azs[r % m];
          for (int64_t j = 0; j < n; ++j) {
            int64_t corr = k * za * bzs[j] - za * col_sums[j] - bzs[j] * row_sums[r];
            out[r * n + j] = static_cast<int32_t>(static_cast<uint32_t>(prod[r * n + j]) +
                                                  static_cast<uint32_t>(corr));
          }
        }
      });
    }
    return Status::Ok();
  }
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      double za = QRead(az, az1 ? 0 : i);
      for (int64_t j = 0; j < n; ++j) {
        double zb = QRead(bz, bz1 ? 0 : j);
        int64_t acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += static_cast<int64_t>(QRead(a, (geo.offs_a[bi] * m + i) * k + p) - za) *
                 static_cast<int64_t>(QRead(b, (geo.offs_b[bi] * k + p) * n + j) - zb);
        }
        y[(bi * m + i) * n + j] = static_cast<int32_t>(static_cast<uint64_t>(acc));
      }
    }
  }
  return Status::Ok();
}

Status ConvInteger(KernelContext& ctx, bool fast) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  QUILT_RETURN_IF_ERROR(CheckIntQuant(x, "data"));
  QUILT_RETURN_IF_ERROR(CheckIntQuant(w, "weight"));
  Tensor* y;
  // Kept by this thread from run to run; empty where the products are written to y directly.
  thread_local std::vector<int64_t> kept_sums;
  std::vector<int64_t>& sums = kept_sums;
  sums.clear();
  QUILT_RETURN_IF_ERROR(ConvIntegerCore(ctx, x, *ctx.input(2), w, *ctx.input(3), DType::kInt32, &y,
                                        &sums, ctx.constant_input(1) && ctx.constant_input(3), fast,
                                        /*int32_out=*/true));
  for (size_t i = 0; i < sums.size(); ++i) {
    y->MutableData<int32_t>()[i] = static_cast<int32_t>(static_cast<uint32_t>(sums[i]));
  }
  return Status::Ok();
}

Status QLinearConv(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& xs = *ctx.input(1);
  const Tensor& w = *ctx.input(3);
  const Tensor& ws = *ctx.input(4);
  const Tensor& ys = *ctx.input(6);
  const Tensor& yz = *ctx.input(7);
  const Tensor& bias = *ctx.input(8);
  QUILT_RETURN_IF_ERROR(CheckIntQuant(x, "data"));
  QUILT_RETURN_IF_ERROR(CheckIntQuant(w, "weight"));
  QUILT_RETURN_IF_ERROR(CheckIntQuant(yz, "y_zero_point"));
  for (const Tensor* t : {&xs, &ws, &ys}) {
    if (!IsFloatType(t->dtype)) return Status::Error("qlinear_conv scales must be float");
  }
  if (bias.dtype != DType::kInt32) return Status::Error("the bias must be int32");
  Tensor* y;
  thread_local std::vector<int64_t> kept_sums;  // this thread's, kept from run to run
  std::vector<int64_t>& sums = kept_sums;
  sums.clear();
  QUILT_RETURN_IF_ERROR(ConvIntegerCore(ctx, x, *ctx.input(2), w, *ctx.input(5), yz.dtype, &y,
                                        &sums, ctx.constant_input(3) && ctx.constant_input(5)));
  const Shape& shape = y->shape;
  int64_t oc = shape[1];
  bool ws1, b1, ys1, yz1;
  QUILT_RETURN_IF_ERROR(PerIndex(ws, oc, "weight scale", &ws1));
  QUILT_RETURN_IF_ERROR(PerIndex(bias, oc, "bias", &b1));
  QUILT_RETURN_IF_ERROR(PerIndex(ys, 1, "y_scale", &ys1));
  QUILT_RETURN_IF_ERROR(PerIndex(yz, 1, "y_zero_point", &yz1));
  if (y->ByteSize()) std::memset(y->data, 0, y->ByteSize());
  int64_t inner = 1;
  for (size_t i = 2; i < shape.size(); ++i) inner *= shape[i];
  DType st = xs.dtype;
  double x_scale = QRead(xs, 0), y_scale = QRead(ys, 0), y_zp = QRead(yz, 0);
  for (size_t i = 0; i < sums.size(); ++i) {
    int64_t m = (static_cast<int64_t>(i) / inner) % oc;
    int64_t acc = sums[i] + static_cast<int64_t>(QRead(bias, b1 ? 0 : m));
    double mult = RoundTo(st, RoundTo(st, x_scale * QRead(ws, ws1 ? 0 : m)) / y_scale);
    double v = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(acc))) * mult + y_zp;
    QWrite(y, static_cast<int64_t>(i), std::nearbyint(v), true);
  }
  return Status::Ok();
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("quantize", Quantize),
    Kernel("dequantize", Dequantize),
    Kernel("dynamic_quantize", DynamicQuantize),
    Kernel("qlinear_matmul", QLinearMatmul),
    Kernel("conv_integer", nn::ConvIntegerFast),
    Kernel("matmul_integer", MatmulIntegerFast),
    Kernel("qlinear_conv", QLinearConv),
};

}  // namespace

std::span<const rt::KernelEntry> QuantizeKernels() { return kKernels; }

Status MatmulIntegerReference(KernelContext& ctx) { return MatmulInteger(ctx, false); }
Status MatmulIntegerFast(KernelContext& ctx) { return MatmulInteger(ctx, true); }
Status nn::ConvIntegerReference(KernelContext& ctx) { return ConvInteger(ctx, false); }
Status nn::ConvIntegerFast(KernelContext& ctx) { return ConvInteger(ctx, true); }

}  // namespace quilt::cpu
