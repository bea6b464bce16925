// Elementwise and broadcasting ops: arithmetic, comparison, logic, unary math.
//
// Two shapes of kernel cover them: Binary<Op> (numpy broadcasting of two inputs, result of the
// input type or bool) and Unary<Op>. Each op is a small struct with a templated `operator()`,
// so one definition serves every element type it supports.
#include <cmath>
#include <cstring>
#include <limits>

#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

enum class Types { kFloat, kNumeric, kAll };

template <Types kTypes, typename F>
Status Visit(DType t, F&& f) {
  if constexpr (kTypes == Types::kFloat) return VisitFloat(t, f);
  if constexpr (kTypes == Types::kNumeric) return VisitNumeric(t, f);
  if constexpr (kTypes == Types::kAll) return VisitAll(t, f);
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
  const std::vector<int64_t> strides[2] = {BroadcastStrides(a.shape, shape),
                                           BroadcastStrides(b.shape, shape)};
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

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a - b);
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};
// Integer division truncates toward zero (ONNX Div); division by zero gives 0 rather than a
// trap (ONNX leaves it undefined).
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return static_cast<T>(-a);
      }
    }
    return static_cast<T>(a / b);
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
struct EqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct LessOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct GreaterOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};

struct ExpOp {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(std::exp(x));
  }
};
struct SqrtOp {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(std::sqrt(x));
  }
};

constexpr rt::KernelEntry kKernels[] = {
    {"copy", Copy},
    {"add", Binary<AddOp, Types::kNumeric>},
    {"subtract", Binary<SubOp, Types::kNumeric>},
    {"multiply", Binary<MulOp, Types::kNumeric>},
    {"divide", Binary<DivOp, Types::kNumeric>},
    {"maximum", Binary<MaxOp, Types::kNumeric>},
    {"minimum", Binary<MinOp, Types::kNumeric>},
    {"equal", Binary<EqualOp, Types::kAll, true>},
    {"less", Binary<LessOp, Types::kNumeric, true>},
    {"greater", Binary<GreaterOp, Types::kNumeric, true>},
    {"exp", Unary<ExpOp, Types::kFloat>},
    {"sqrt", Unary<SqrtOp, Types::kFloat>},
};

}  // namespace

std::span<const rt::KernelEntry> ElementwiseKernels() { return kKernels; }

}  // namespace quilt::cpu
