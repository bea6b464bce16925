// astype (ONNX Cast): every numeric type to every other, bool included, and the narrow formats:
// float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0), float4 e2m1 and the packed 4- and 2-bit
// integers.
//
// Conversions follow numpy / ml_dtypes as ONNX's reference does: float to integer truncates
// toward zero and wraps around modulo the width (NaN gives 0; values beyond int64 saturate);
// integer to integer wraps; to float8 / float4 rounds half to even and saturates to the largest
// finite value (unless saturate is false: float8 then gives Inf or NaN). Packed types hold their
// first element in the low bits of a byte.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// A small float format: exponent and mantissa bits, bias, and which codes are special.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  enum Kind { kFn, kFnuz, kIeee, kNoNan } kind;  // e4m3fn, *fnuz, e5m2, e2m1
  int bits() const { return 1 + exp_bits + man_bits; }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  // The code of NaN (positive), as ml_dtypes produces it.
  uint32_t nan_code() const {
    switch (kind) {
      case kFn:
        return sign_bit() - 1;
      case kFnuz:
        return sign_bit();
      case kIeee:
        return sign_bit() - 2;
      case kNoNan:
        return sign_bit();  // e2m1 has no NaN: ml_dtypes gives -0
    }
    return 0;
  }
  // The value of a code.
  double Decode(uint32_t code) const {
    bool neg = (code & sign_bit()) != 0;
    uint32_t mag = code & (sign_bit() - 1);
    uint32_t e = mag >> man_bits;
    uint32_t m = mag & ((1u << man_bits) - 1);
    uint32_t emax = (1u << exp_bits) - 1;
    if (kind == kFnuz && code == sign_bit()) return std::numeric_limits<double>::quiet_NaN();
    if (kind == kFn && e == emax && m == (1u << man_bits) - 1) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (kind == kIeee && e == emax) {
      if (m != 0) return std::numeric_limits<double>::quiet_NaN();
      return neg ? -std::numeric_limits<double>::infinity()
                 : std::numeric_limits<double>::infinity();
    }
    double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias - man_bits)
                      : std::ldexp(static_cast<double>((1u << man_bits) + m),
                                   static_cast<int>(e) - bias - man_bits);
    return neg ? -v : v;
  }
  // The largest finite magnitude code.
  uint32_t max_code() const {
    switch (kind) {
      case kFn:
        return sign_bit() - 2;
      case kIeee:
        return sign_bit() - 1 - (1u << man_bits);
      case kFnuz:
      case kNoNan:
        return sign_bit() - 1;
    }
    return 0;
  }
  // The nearest code to v, ties to the even code. Beyond the largest finite value: that value
  // with `saturate`, else Inf (e5m2) or NaN (the formats without Inf).
  uint32_t Encode(double v, bool saturate) const {
    if (std::isnan(v)) return nan_code();
    bool neg = std::signbit(v);
    double a = std::fabs(v);
    uint32_t sign = neg ? sign_bit() : 0;
    if (!saturate && kind != kNoNan) {
      // Past the midpoint above the largest value (ties to even: the largest code is even).
      double top = Decode(max_code());
      double limit = top + (top - Decode(max_code() - 1)) / 2;
      if (a > limit || (a == limit && (max_code() & 1) != 0)) {
        if (kind == kIeee) return (sign_bit() - (1u << man_bits)) | sign;  // Inf
        if (kind == kFn) return nan_code() | sign;
        return nan_code();
      }
    }
    if (std::isinf(a)) return max_code() | sign;
    uint32_t best = 0;
    double best_err = std::numeric_limits<double>::infinity();
    for (uint32_t c = 0; c <= max_code(); ++c) {
      double err = std::fabs(Decode(c) - a);
      if (err < best_err || (err == best_err && (c & 1) == 0)) {
        best = c;
        best_err = err;
      }
    }
    // No negative zero in the fnuz formats.
    if (!(best == 0 && kind == kFnuz)) best |= sign;
    return best;
  }
};

constexpr MiniFloat kE4M3FN{4, 3, 7, MiniFloat::kFn};
constexpr MiniFloat kE4M3FNUZ{4, 3, 8, MiniFloat::kFnuz};
constexpr MiniFloat kE5M2{5, 2, 15, MiniFloat::kIeee};
constexpr MiniFloat kE5M2FNUZ{5, 2, 16, MiniFloat::kFnuz};
constexpr MiniFloat kE2M1{2, 1, 1, MiniFloat::kNoNan};

const MiniFloat* MiniFloatOf(DType t) {
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

// float8 e8m0: a power of two 2^(code - 127), 0xFF NaN. Casting to it (as ONNX's reference,
// round_mode "up", saturating) takes the float32 exponent field, plus one when the mantissa is
// not zero and that does not pass the largest code; the sign is dropped; NaN and Inf give 0xFF.
double DecodeE8M0(uint32_t code) {
  if (code == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(code) - 127);
}
uint32_t EncodeE8M0(double v) {
  float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint32_t e = (b >> 23) & 0xFF;
  if (e == 0xFF) return 0xFF;
  if ((b & 0x7FFFFF) != 0 && e != 0xFE) ++e;
  return e;
}

bool IsSubByteInt(DType t) {
  return t == DType::kInt4 || t == DType::kUInt4 || t == DType::kInt2 || t == DType::kUInt2;
}
bool IsSigned(DType t) { return t == DType::kInt4 || t == DType::kInt2; }

// The formats handled through double: float8, float4, packed integers.
bool IsNarrow(DType t) {
  return MiniFloatOf(t) != nullptr || t == DType::kFloat8E8M0 || IsSubByteInt(t);
}

// Code `i` of a tensor of a narrow type, as stored (bits of one element).
uint32_t ReadCode(const Tensor& x, int bits, int64_t i) {
  const uint8_t* p = x.Data<uint8_t>();
  int64_t bit = i * bits;
  return (p[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
}
void WriteCode(Tensor* y, int bits, int64_t i, uint32_t code) {
  uint8_t* p = y->MutableData<uint8_t>();
  int64_t bit = i * bits;
  p[bit / 8] = static_cast<uint8_t>(p[bit / 8] | ((code & ((1u << bits) - 1)) << (bit % 8)));
}

// A double truncated toward zero and wrapped to int64 (NaN 0; beyond int64 saturated).
int64_t WrapToInt64(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (t < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(t);
}

// Element i of a narrow-typed tensor as double.
double ReadNarrow(const Tensor& x, int64_t i) {
  int bits = rt::DTypeBits(x.dtype);
  uint32_t code = ReadCode(x, bits, i);
  if (const MiniFloat* f = MiniFloatOf(x.dtype)) return f->Decode(code);
  if (x.dtype == DType::kFloat8E8M0) return DecodeE8M0(code);
  if (IsSigned(x.dtype) && (code & (1u << (bits - 1)))) {
    return static_cast<double>(static_cast<int32_t>(code) - (1 << bits));
  }
  return static_cast<double>(code);
}

// Stores v as element i of a narrow-typed tensor (zeroed before).
void WriteNarrow(Tensor* y, int64_t i, double v, bool saturate) {
  int bits = rt::DTypeBits(y->dtype);
  uint32_t code;
  if (const MiniFloat* f = MiniFloatOf(y->dtype)) {
    code = f->Encode(v, saturate);
  } else if (y->dtype == DType::kFloat8E8M0) {
    code = EncodeE8M0(v);
  } else {
    code = static_cast<uint32_t>(static_cast<uint64_t>(WrapToInt64(v)));
  }
  WriteCode(y, bits, i, code);
}

template <typename T>
constexpr bool kIsFloatLike =
    std::is_floating_point_v<T> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

// One element of type S as type D.
template <typename D, typename S>
D Convert(S s) {
  if constexpr (std::is_same_v<D, bool>) {
    return Load(s) != 0;
  } else if constexpr (std::is_same_v<S, bool>) {
    return Store<D>(static_cast<Compute<D>>(s ? 1 : 0));
  } else if constexpr (kIsFloatLike<D>) {
    return Store<D>(static_cast<Compute<D>>(Load(s)));
  } else if constexpr (kIsFloatLike<S>) {
    return static_cast<D>(WrapToInt64(static_cast<double>(Load(s))));
  } else {
    return static_cast<D>(s);  // integer to integer: modular
  }
}

// Element of type T as double, and back (for the narrow formats).
template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1.0 : 0.0;
  } else {
    return static_cast<double>(Load(v));
  }
}
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (kIsFloatLike<T>) {
    return Store<T>(static_cast<Compute<T>>(v));
  } else {
    return static_cast<T>(WrapToInt64(v));
  }
}

Status Astype(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  DType to = ctx.attrs().Dtype("dtype");
  if (to == DType::kVoid) return Status::Error("astype needs a dtype");
  bool saturate = ctx.attrs().Bool("saturate", true);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, to, x.shape, &y));
  int64_t n = x.NumElements();
  bool narrow_in = IsNarrow(x.dtype), narrow_out = IsNarrow(to);
  if (narrow_out && y->ByteSize()) std::memset(y->data, 0, y->ByteSize());
  if (narrow_in && narrow_out) {
    for (int64_t i = 0; i < n; ++i) WriteNarrow(y, i, ReadNarrow(x, i), saturate);
    return Status::Ok();
  }
  if (narrow_in) {
    return VisitAll(to, [&](auto tag) {
      using D = typename decltype(tag)::type;
      D* py = y->MutableData<D>();
      for (int64_t i = 0; i < n; ++i) py[i] = FromDouble<D>(ReadNarrow(x, i));
      return Status::Ok();
    });
  }
  if (narrow_out) {
    return VisitAll(x.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* px = x.Data<S>();
      for (int64_t i = 0; i < n; ++i) WriteNarrow(y, i, ToDouble(px[i]), saturate);
      return Status::Ok();
    });
  }
  // Element by element, in chunks across the run's threads.
  return VisitAll(x.dtype, [&](auto stag) {
    using S = typename decltype(stag)::type;
    return VisitAll(to, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      const S* px = x.Data<S>();
      D* py = y->MutableData<D>();
      ctx.ParallelFor(n, int64_t{1} << 15, [&](int64_t i0, int64_t i1) {
        if constexpr (std::is_same_v<S, bool> && std::is_arithmetic_v<D>) {
          // Bools as their bytes (any nonzero byte true), without a branch per element.
          const auto* bytes = static_cast<const uint8_t*>(x.data);
          for (int64_t i = i0; i < i1; ++i) py[i] = static_cast<D>(bytes[i] != 0);
        } else {
          for (int64_t i = i0; i < i1; ++i) py[i] = Convert<D>(px[i]);
        }
      });
      return Status::Ok();
    });
  });
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("astype", Astype),
};

}  // namespace

std::span<const rt::KernelEntry> CastKernels() { return kKernels; }

}  // namespace quilt::cpu
