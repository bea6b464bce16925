// Elementwise and broadcasting ops: arithmetic, comparison, logic, bitwise, unary math, clip,
// where. (astype is in cast.cc.)
//
// Two shapes of kernel cover most of them: Binary<Op> (numpy broadcasting of two inputs, result
// of the input type or bool) and Unary<Op>. Each op is a small struct with a templated
// `operator()`, so one definition serves every element type it supports. Integer arithmetic
// wraps around (two's complement) instead of overflowing, and division by zero gives 0.
#include "targets/cpu/kernels/elementwise.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

enum class Types { kFloat, kNumeric, kAll, kInteger, kIntegerBool, kBool };

template <typename F>
Status VisitIntegerBool(DType t, F&& f) {
  if (t == DType::kBool) return f(Tag<bool>{});
  return VisitInteger(t, f);
}

template <Types kTypes, typename F>
Status Visit(DType t, F&& f) {
  if constexpr (kTypes == Types::kFloat) return VisitFloat(t, f);
  if constexpr (kTypes == Types::kNumeric) return VisitNumeric(t, f);
  if constexpr (kTypes == Types::kAll) return VisitAll(t, f);
  if constexpr (kTypes == Types::kInteger) return VisitInteger(t, f);
  if constexpr (kTypes == Types::kIntegerBool) return VisitIntegerBool(t, f);
  if constexpr (kTypes == Types::kBool) {
    if (t != DType::kBool) return Unsupported(t);
    return f(Tag<bool>{});
  }
}

// Integers other than bool.
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Two's complement arithmetic on integers without undefined overflow (C++20 conversions from
// unsigned to signed are modular).
template <typename T>
T WrapAdd(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T>
T WrapSub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T>
T WrapMul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <typename T>
T WrapNeg(T a) {
  return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(a));
}

// out = Op(a, b) with broadcasting. `kPredicate` ops produce bool.
template <typename Op, Types kTypes, bool kPredicate = false>
Status Binary(KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype != b.dtype) return Status::Error("the two inputs have different element types");
  Shape shape;
  if (!BroadcastShape(a.shape, b.shape, &shape)) {
    return Status::Error("shapes " + rt::ShapeString(a.shape) + " and " + rt::ShapeString(b.shape) +
                         " do not broadcast");
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, kPredicate ? DType::kBool : a.dtype, shape, &y));
  const Shape strides[2] = {BroadcastStrides(a.shape, shape), BroadcastStrides(b.shape, shape)};
  return Visit<kTypes>(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = std::conditional_t<kPredicate, bool, T>;
    const T* pa = a.Data<T>();
    const T* pb = b.Data<T>();
    R* py = y->MutableData<R>();
    ForEachBroadcast(shape, strides, [&](int64_t i, const int64_t* off) {
      auto r = Op{}(Load(pa[off[0]]), Load(pb[off[1]]));
      py[i] = Store<R>(r);
    });
    return Status::Ok();
  });
}

template <typename Op, Types kTypes>
Status Unary(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  return Visit<kTypes>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    int64_t n = x.NumElements();
    for (int64_t i = 0; i < n; ++i) py[i] = Store<T>(Op{}(Load(px[i])));
    return Status::Ok();
  });
}

// A copy of the input (graph outputs that are inputs or constants).
Status Copy(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  if (x.ByteSize()) std::memcpy(y->data, x.data, x.ByteSize());
  return Status::Ok();
}

// ---- Binary arithmetic.

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) return WrapAdd(a, b);
    return static_cast<T>(a + b);
  }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) return WrapSub(a, b);
    return static_cast<T>(a - b);
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) return WrapMul(a, b);
    return static_cast<T>(a * b);
  }
};
// Integer division truncates toward zero (ONNX Div); division by zero gives 0 rather than a
// trap (ONNX leaves it undefined).
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return WrapNeg(a);
      }
    }
    return static_cast<T>(a / b);
  }
};
// Integer powers by repeated squaring (wrapping); a negative exponent gives the truncated
// reciprocal (1, -1 or 0).
struct PowOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return T(1);
          if (a == -1) return (b % 2 == 0) ? T(1) : T(-1);
          return T(0);
        }
      }
      T result = 1, base = a;
      for (T e = b; e > 0; e = static_cast<T>(e / 2)) {
        if (e % 2 == 1) result = WrapMul(result, base);
        base = WrapMul(base, base);
      }
      return result;
    } else {
      return static_cast<T>(std::pow(a, b));
    }
  }
};
struct MaxOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? b : a;
  }
};
struct MinOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return b < a ? b : a;
  }
};
// ONNX Mod with fmod=1: the remainder of truncated division (the sign of the dividend).
struct ModOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
      }
      return static_cast<T>(a % b);
    } else {
      return static_cast<T>(std::fmod(a, b));
    }
  }
};
// ONNX Mod with fmod=0: the remainder of floor division (the sign of the divisor), as Python's %.
struct FloorModOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        T r = static_cast<T>(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    } else {
      T r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
};

// ---- Comparison and logic (EqualOp, LessOp, GreaterOp: elementwise.h).

struct NotEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};
struct LessEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};
struct NotOp {
  bool operator()(bool a) const { return !a; }
};

// ---- Bitwise (integers; bool as one bit) and shifts. Bits shifted out are dropped (left shifts
// wrap within the width); a right shift of a signed value is arithmetic. A shift by a negative
// amount or by the width or more gives 0, or -1 for a right shift of a negative value (numpy).

struct BitAndOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct BitOrOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct BitXorOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};
struct BitNotOp {
  template <typename T>
  T operator()(T a) const {
    if constexpr (std::is_same_v<T, bool>) {
      return !a;
    } else {
      return static_cast<T>(~static_cast<uint64_t>(a));
    }
  }
};
template <bool kLeft>
struct ShiftOp {
  template <typename T>
  T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    constexpr int kBits = 8 * sizeof(T);
    bool negative = false;
    if constexpr (std::is_signed_v<T>) negative = a < 0;
    bool out_of_range = static_cast<uint64_t>(b) >= static_cast<uint64_t>(kBits);
    if constexpr (std::is_signed_v<T>) out_of_range = out_of_range || b < 0;
    if (out_of_range) return (!kLeft && negative) ? static_cast<T>(-1) : T(0);
    if constexpr (kLeft) {
      return static_cast<T>(static_cast<U>(static_cast<uint64_t>(static_cast<U>(a)) << b));
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(static_cast<int64_t>(a) >> b);  // arithmetic (C++20)
    } else {
      return static_cast<T>(static_cast<uint64_t>(a) >> b);
    }
  }
};

// ---- Unary math. T is float or double here (16-bit floats compute in float).

#define QUILT_UNARY_FLOAT(Name, expr) \
  struct Name {                       \
    template <typename T>             \
    T operator()(T x) const {         \
      return static_cast<T>(expr);    \
    }                                 \
  };
QUILT_UNARY_FLOAT(ExpOp, std::exp(x))
QUILT_UNARY_FLOAT(LogOp, std::log(x))
QUILT_UNARY_FLOAT(SqrtOp, std::sqrt(x))
QUILT_UNARY_FLOAT(RsqrtOp, T(1) / std::sqrt(x))
QUILT_UNARY_FLOAT(TanhOp, std::tanh(x))
QUILT_UNARY_FLOAT(SigmoidOp,
                  x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x)))
QUILT_UNARY_FLOAT(ErfOp, std::erf(x))
QUILT_UNARY_FLOAT(SinOp, std::sin(x))
QUILT_UNARY_FLOAT(CosOp, std::cos(x))
QUILT_UNARY_FLOAT(TanOp, std::tan(x))
QUILT_UNARY_FLOAT(AsinOp, std::asin(x))
QUILT_UNARY_FLOAT(AcosOp, std::acos(x))
QUILT_UNARY_FLOAT(AtanOp, std::atan(x))
QUILT_UNARY_FLOAT(SinhOp, std::sinh(x))
QUILT_UNARY_FLOAT(CoshOp, std::cosh(x))
QUILT_UNARY_FLOAT(AsinhOp, std::asinh(x))
QUILT_UNARY_FLOAT(AcoshOp, std::acosh(x))
QUILT_UNARY_FLOAT(AtanhOp, std::atanh(x))
QUILT_UNARY_FLOAT(FloorOp, std::floor(x))
QUILT_UNARY_FLOAT(CeilOp, std::ceil(x))
QUILT_UNARY_FLOAT(ReciprocalOp, T(1) / x)
#undef QUILT_UNARY_FLOAT

// Round half to even; NaN and infinities unchanged; a result of 0 has x's sign (round(-0.4) is
// -0, as numpy's and ONNX Runtime's).
struct RoundOp {
  template <typename T>
  T operator()(T x) const {
    if (!std::isfinite(x)) return x;
    return std::copysign(Rounded(x), x);
  }
  template <typename T>
  static T Rounded(T x) {
    T f = std::floor(x);
    T diff = x - f;
    if (diff > T(0.5)) return f + 1;
    if (diff < T(0.5)) return f;
    return std::fmod(f, T(2)) == 0 ? f : f + 1;
  }
};

struct AbsOp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsInt<T>) {
      if constexpr (std::is_signed_v<T>) return x < 0 ? WrapNeg(x) : x;
      return x;
    } else {
      return std::fabs(x);
    }
  }
};
struct NegOp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsInt<T>) return WrapNeg(x);
    return -x;
  }
};
// -1, 0 or 1; NaN stays NaN.
struct SignOp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return x;
    }
    return x > T(0) ? T(1) : x < T(0) ? static_cast<T>(-1) : T(0);
  }
};

Status IsNaN(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kBool, x.shape, &y));
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    bool* py = y->MutableData<bool>();
    for (int64_t i = 0, n = x.NumElements(); i < n; ++i) py[i] = std::isnan(Load(px[i]));
    return Status::Ok();
  });
}

Status IsInf(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  bool neg = ctx.attrs().Bool("detect_negative", true);
  bool pos = ctx.attrs().Bool("detect_positive", true);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kBool, x.shape, &y));
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    bool* py = y->MutableData<bool>();
    for (int64_t i = 0, n = x.NumElements(); i < n; ++i) {
      auto v = Load(px[i]);
      py[i] = std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
    }
    return Status::Ok();
  });
}

// A float bound as a value of integer type T, clamped to T's range (lower bounds round up,
// upper bounds down, so that clamping to them is clamping to the real bound).
template <typename T>
T IntBound(double v, bool lower) {
  constexpr double kLo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double kHi = static_cast<double>(std::numeric_limits<T>::max());
  double r = lower ? std::ceil(v) : std::floor(v);
  if (!(r > kLo)) return std::numeric_limits<T>::min();  // NaN included
  if (r >= kHi) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

// y = min(max(x, min), max): where min > max every element becomes max (ONNX). NaN stays NaN.
Status Clip(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const rt::AttrView& attrs = ctx.attrs();
  bool has_lo = attrs.Has("min"), has_hi = attrs.Has("max");
  double lo = attrs.Float("min"), hi = attrs.Float("max");
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  return VisitNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    C l, h;
    if constexpr (kIsInt<T>) {
      l = has_lo ? IntBound<T>(lo, true) : std::numeric_limits<T>::lowest();
      h = has_hi ? IntBound<T>(hi, false) : std::numeric_limits<T>::max();
    } else {
      l = has_lo ? static_cast<C>(lo) : -std::numeric_limits<C>::infinity();
      h = has_hi ? static_cast<C>(hi) : std::numeric_limits<C>::infinity();
    }
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    for (int64_t i = 0, n = x.NumElements(); i < n; ++i) {
      C v = Load(px[i]);
      if (v < l) v = l;
      if (v > h) v = h;
      py[i] = Store<T>(v);
    }
    return Status::Ok();
  });
}

// where(condition, x1, x2) with three-way broadcasting.
Status Where(KernelContext& ctx) {
  const Tensor& c = *ctx.input(0);
  const Tensor& a = *ctx.input(1);
  const Tensor& b = *ctx.input(2);
  if (c.dtype != DType::kBool) return Status::Error("the condition must be bool");
  if (a.dtype != b.dtype) return Status::Error("x1 and x2 have different element types");
  Shape ab, shape;
  if (!BroadcastShape(a.shape, b.shape, &ab) || !BroadcastShape(c.shape, ab, &shape)) {
    return Status::Error("shapes " + rt::ShapeString(c.shape) + ", " + rt::ShapeString(a.shape) +
                         " and " + rt::ShapeString(b.shape) + " do not broadcast");
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, a.dtype, shape, &y));
  const Shape strides[3] = {BroadcastStrides(c.shape, shape), BroadcastStrides(a.shape, shape),
                            BroadcastStrides(b.shape, shape)};
  int bits = rt::DTypeBits(a.dtype);
  if (bits % 8 != 0 || bits == 0) return Unsupported(a.dtype);
  size_t width = static_cast<size_t>(bits / 8);
  const bool* pc = c.Data<bool>();
  const uint8_t* pa = a.Data<uint8_t>();
  const uint8_t* pb = b.Data<uint8_t>();
  uint8_t* py = y->MutableData<uint8_t>();
  ForEachBroadcast(shape, strides, [&](int64_t i, const int64_t* off) {
    const uint8_t* src = pc[off[0]] ? pa + off[1] * width : pb + off[2] * width;
    std::memcpy(py + i * width, src, width);
  });
  return Status::Ok();
}

}  // namespace

Status AddReference(KernelContext& ctx) { return Binary<AddOp, Types::kNumeric>(ctx); }
Status SubtractReference(KernelContext& ctx) { return Binary<SubOp, Types::kNumeric>(ctx); }
Status MultiplyReference(KernelContext& ctx) { return Binary<MulOp, Types::kNumeric>(ctx); }
Status DivideReference(KernelContext& ctx) { return Binary<DivOp, Types::kNumeric>(ctx); }
Status PowerReference(KernelContext& ctx) { return Binary<PowOp, Types::kNumeric>(ctx); }
Status ExpReference(KernelContext& ctx) { return Unary<ExpOp, Types::kFloat>(ctx); }
Status TanhReference(KernelContext& ctx) { return Unary<TanhOp, Types::kFloat>(ctx); }
Status SigmoidReference(KernelContext& ctx) { return Unary<SigmoidOp, Types::kFloat>(ctx); }
Status ErfReference(KernelContext& ctx) { return Unary<ErfOp, Types::kFloat>(ctx); }
Status MaximumReference(KernelContext& ctx) { return Binary<MaxOp, Types::kNumeric>(ctx); }
Status MinimumReference(KernelContext& ctx) { return Binary<MinOp, Types::kNumeric>(ctx); }
Status ClipReference(KernelContext& ctx) { return Clip(ctx); }
Status SqrtReference(KernelContext& ctx) { return Unary<SqrtOp, Types::kFloat>(ctx); }
Status LogReference(KernelContext& ctx) { return Unary<LogOp, Types::kFloat>(ctx); }
Status FloorReference(KernelContext& ctx) { return Unary<FloorOp, Types::kFloat>(ctx); }
Status CeilReference(KernelContext& ctx) { return Unary<CeilOp, Types::kFloat>(ctx); }
Status RoundReference(KernelContext& ctx) { return Unary<RoundOp, Types::kFloat>(ctx); }
Status ReciprocalReference(KernelContext& ctx) { return Unary<ReciprocalOp, Types::kFloat>(ctx); }
Status AbsReference(KernelContext& ctx) { return Unary<AbsOp, Types::kNumeric>(ctx); }
Status NegativeReference(KernelContext& ctx) { return Unary<NegOp, Types::kNumeric>(ctx); }
Status EqualReference(KernelContext& ctx) { return Binary<EqualOp, Types::kAll, true>(ctx); }
Status LessReference(KernelContext& ctx) { return Binary<LessOp, Types::kAll, true>(ctx); }
Status GreaterReference(KernelContext& ctx) { return Binary<GreaterOp, Types::kAll, true>(ctx); }

namespace {

constexpr rt::KernelEntry kKernels[] = {
    Kernel("copy", Copy),
    Kernel("add", AddFast),
    Kernel("subtract", SubtractFast),
    Kernel("multiply", MultiplyFast),
    Kernel("divide", DivideFast),
    Kernel("power", PowerFast),
    Kernel("maximum", MaximumFast),
    Kernel("minimum", MinimumFast),
    Kernel("mod", Binary<ModOp, Types::kNumeric>),
    Kernel("floor_mod", Binary<FloorModOp, Types::kNumeric>),
    Kernel("equal", EqualFast),
    Kernel("not_equal", Binary<NotEqualOp, Types::kAll, true>),
    Kernel("less", LessFast),
    Kernel("less_equal", Binary<LessEqualOp, Types::kAll, true>),
    Kernel("greater", GreaterFast),
    Kernel("greater_equal", Binary<GreaterEqualOp, Types::kAll, true>),
    Kernel("logical_and", Binary<AndOp, Types::kBool>),
    Kernel("logical_or", Binary<OrOp, Types::kBool>),
    Kernel("logical_xor", Binary<XorOp, Types::kBool>),
    Kernel("logical_not", Unary<NotOp, Types::kBool>),
    Kernel("bitwise_and", Binary<BitAndOp, Types::kIntegerBool>),
    Kernel("bitwise_or", Binary<BitOrOp, Types::kIntegerBool>),
    Kernel("bitwise_xor", Binary<BitXorOp, Types::kIntegerBool>),
    Kernel("bitwise_not", Unary<BitNotOp, Types::kIntegerBool>),
    Kernel("left_shift", Binary<ShiftOp<true>, Types::kInteger>),
    Kernel("right_shift", Binary<ShiftOp<false>, Types::kInteger>),
    Kernel("exp", ExpFast),
    Kernel("log", LogFast),
    Kernel("sqrt", SqrtFast),
    Kernel("rsqrt", Unary<RsqrtOp, Types::kFloat>),
    Kernel("tanh", TanhFast),
    Kernel("sigmoid", SigmoidFast),
    Kernel("erf", ErfFast),
    Kernel("sin", Unary<SinOp, Types::kFloat>),
    Kernel("cos", Unary<CosOp, Types::kFloat>),
    Kernel("tan", Unary<TanOp, Types::kFloat>),
    Kernel("asin", Unary<AsinOp, Types::kFloat>),
    Kernel("acos", Unary<AcosOp, Types::kFloat>),
    Kernel("atan", Unary<AtanOp, Types::kFloat>),
    Kernel("sinh", Unary<SinhOp, Types::kFloat>),
    Kernel("cosh", Unary<CoshOp, Types::kFloat>),
    Kernel("asinh", Unary<AsinhOp, Types::kFloat>),
    Kernel("acosh", Unary<AcoshOp, Types::kFloat>),
    Kernel("atanh", Unary<AtanhOp, Types::kFloat>),
    Kernel("floor", FloorFast),
    Kernel("ceil", CeilFast),
    Kernel("round", RoundFast),
    Kernel("reciprocal", ReciprocalFast),
    Kernel("abs", AbsFast),
    Kernel("negative", NegativeFast),
    Kernel("sign", Unary<SignOp, Types::kNumeric>),
    Kernel("isnan", IsNaN),
    Kernel("isinf", IsInf),
    Kernel("clip", ClipFast),
    Kernel("where", Where),
};

}  // namespace

std::span<const rt::KernelEntry> ElementwiseKernels() { return kKernels; }

}  // namespace quilt::cpu
