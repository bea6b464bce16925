// Activations, softmax family, normalizations (batch, instance, layer, group, RMS, LRN), dropout.
//
// The activations are small structs read from the step's attributes with a templated
// `operator()` over the compute type (float for the 16-bit floats, else the element type). The
// normalizations live in nn_norm.cc and are listed in this family's table.
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>
#include <vector>

#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

using rt::AttrView;

// y = Op(x) elementwise; Op is built from the attributes. kFloatOnly ops accept the floating
// types, the others every number.
template <typename Op, bool kFloatOnly>
Status Activation(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  const Op op(ctx.attrs());
  auto body = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    int64_t n = x.NumElements();
    for (int64_t i = 0; i < n; ++i) py[i] = op.template Apply<T>(px[i]);
    return Status::Ok();
  };
  if constexpr (kFloatOnly) {
    return VisitFloat(x.dtype, body);
  } else {
    return VisitNumeric(x.dtype, body);
  }
}

// A float activation: Apply loads, computes in Compute<T> and stores.
template <typename Derived>
struct FloatAct {
  template <typename T>
  T Apply(T v) const {
    using C = Compute<T>;
    return Store<T>(static_cast<const Derived*>(this)->template F<C>(Load(v)));
  }
};

// An integer result of a double computation, clamped to T's range (NaN gives 0).
template <typename T>
T ClampToInt(double v) {
  if (std::isnan(v)) return T(0);
  // The bounds as doubles are exact for the small types; for 64-bit ones the upper bound rounds
  // up to 2^63 / 2^64, so compare with >= there.
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::lowest();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

struct ReluOp {
  explicit ReluOp(const AttrView&) {}
  template <typename T>
  T Apply(T v) const {
    if constexpr (std::is_unsigned_v<T>) {
      return v;
    } else {
      auto c = Load(v);
      return c < 0 ? Store<T>(decltype(c)(0)) : v;
    }
  }
};

struct EluOp : FloatAct<EluOp> {
  double alpha;
  explicit EluOp(const AttrView& a) : alpha(a.Float("alpha", 1.0)) {}
  template <typename C>
  C F(C x) const {
    return x < 0 ? static_cast<C>(alpha) * (std::exp(x) - C(1)) : x;
  }
};

struct SeluOp : FloatAct<SeluOp> {
  double alpha, gamma;
  explicit SeluOp(const AttrView& a)
      : alpha(a.Float("alpha", 1.6732632)), gamma(a.Float("gamma", 1.050701)) {}
  template <typename C>
  C F(C x) const {
    C g = static_cast<C>(gamma);
    return x <= 0 ? g * static_cast<C>(alpha) * (std::exp(x) - C(1)) : g * x;
  }
};

struct CeluOp : FloatAct<CeluOp> {
  double alpha;
  explicit CeluOp(const AttrView& a) : alpha(a.Float("alpha", 1.0)) {}
  template <typename C>
  C F(C x) const {
    C al = static_cast<C>(alpha);
    C neg = al * (std::exp(x / al) - C(1));
    return std::max(C(0), x) + std::min(C(0), neg);
  }
};

struct LeakyReluOp : FloatAct<LeakyReluOp> {
  double alpha;
  explicit LeakyReluOp(const AttrView& a) : alpha(a.Float("alpha", 0.01)) {}
  template <typename C>
  C F(C x) const {
    return x < 0 ? static_cast<C>(alpha) * x : x;
  }
};

struct ThresholdedReluOp : FloatAct<ThresholdedReluOp> {
  double alpha;
  explicit ThresholdedReluOp(const AttrView& a) : alpha(a.Float("alpha", 1.0)) {}
  template <typename C>
  C F(C x) const {
    return x > static_cast<C>(alpha) ? x : C(0);
  }
};

struct HardSigmoidOp : FloatAct<HardSigmoidOp> {
  double alpha, beta;
  explicit HardSigmoidOp(const AttrView& a)
      : alpha(a.Float("alpha", 0.2)), beta(a.Float("beta", 0.5)) {}
  template <typename C>
  C F(C x) const {
    C v = static_cast<C>(alpha) * x + static_cast<C>(beta);
    return std::max(C(0), std::min(C(1), v));
  }
};

struct HardSwishOp : FloatAct<HardSwishOp> {
  explicit HardSwishOp(const AttrView&) {}
  template <typename C>
  C F(C x) const {
    C v = x / C(6) + C(0.5);
    return x * std::max(C(0), std::min(C(1), v));
  }
};

struct SoftplusOp : FloatAct<SoftplusOp> {
  double beta;
  bool has_threshold;
  double threshold;
  explicit SoftplusOp(const AttrView& a)
      : beta(a.Float("beta", 1.0)),
        has_threshold(a.Has("threshold")),
        threshold(a.Float("threshold", 0.0)) {}
  template <typename C>
  C F(C x) const {
    C b = static_cast<C>(beta);
    if (has_threshold && b * x > static_cast<C>(threshold)) return x;
    return std::log1p(std::exp(b * x)) / b;
  }
};

struct SoftsignOp : FloatAct<SoftsignOp> {
  explicit SoftsignOp(const AttrView&) {}
  template <typename C>
  C F(C x) const {
    return x / (C(1) + std::abs(x));
  }
};

struct GeluOp : FloatAct<GeluOp> {
  explicit GeluOp(const AttrView&) {}
  template <typename C>
  C F(C x) const {
    double d = static_cast<double>(x);
    return static_cast<C>(d / 2 * (1 + std::erf(d / std::sqrt(2.0))));
  }
};

struct GeluTanhOp : FloatAct<GeluTanhOp> {
  explicit GeluTanhOp(const AttrView&) {}
  template <typename C>
  C F(C x) const {
    double d = static_cast<double>(x);
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return static_cast<C>(d / 2 * (1 + std::tanh(k * (d + 0.044715 * d * d * d))));
  }
};

struct MishOp : FloatAct<MishOp> {
  explicit MishOp(const AttrView&) {}
  template <typename C>
  C F(C x) const {
    double d = static_cast<double>(x);
    return static_cast<C>(d * std::tanh(std::log1p(std::exp(d))));
  }
};

struct SiluOp : FloatAct<SiluOp> {
  explicit SiluOp(const AttrView&) {}
  template <typename C>
  C F(C x) const {
    double d = static_cast<double>(x);
    return static_cast<C>(d / (1 + std::exp(-d)));
  }
};

// Numeric: integers compute in double and clamp back.
struct ShrinkOp {
  double bias, lambd;
  explicit ShrinkOp(const AttrView& a) : bias(a.Float("bias", 0.0)), lambd(a.Float("lambd", 0.5)) {}
  template <typename T>
  T Apply(T v) const {
    double x = static_cast<double>(Load(v));
    double r = x < -lambd ? x + bias : x > lambd ? x - bias : 0.0;
    if constexpr (std::is_integral_v<T>) {
      return ClampToInt<T>(r);
    } else {
      return Store<T>(static_cast<Compute<T>>(r));
    }
  }
};

// x * a with wrap-around for integers (no signed overflow).
template <typename T>
T MulWrap(T x, T a) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(a));
  } else {
    return Store<T>(Load(x) * Load(a));
  }
}

Status PRelu(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& alpha = *ctx.input(1);
  if (alpha.dtype != x.dtype) return Status::Error("the slope's element type differs from data's");
  int64_t axis = ctx.attrs().Int("axis", 1);
  if (!NormalizeAxis(&axis, x.rank())) {
    return Status::Error("axis " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(x.rank()));
  }
  int64_t len = x.shape[axis];
  int64_t na = alpha.NumElements();
  if (alpha.rank() > 1 || (na != len && na != 1)) {
    return Status::Error("the slope has shape " + rt::ShapeString(alpha.shape) + ", expected (" +
                         std::to_string(len) + ") or (1)");
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.shape[d];
  return VisitNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    const T* pa = alpha.Data<T>();
    T* py = y->MutableData<T>();
    int64_t n = x.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      int64_t c = na == 1 ? 0 : (i / inner) % len;
      if constexpr (std::is_unsigned_v<T>) {
        py[i] = px[i];
      } else {
        py[i] = Load(px[i]) < 0 ? MulWrap(px[i], pa[c]) : px[i];
      }
    }
    return Status::Ok();
  });
}

// The (outer, len, inner) split of a shape at `axis`, from the "axis" attribute.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

Status SplitAtAxis(const KernelContext& ctx, const Tensor& x, AxisSplit* s) {
  int64_t axis = ctx.attrs().Int("axis", -1);
  if (!NormalizeAxis(&axis, x.rank())) {
    return Status::Error("axis " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(x.rank()));
  }
  for (int d = 0; d < x.rank(); ++d) {
    if (d < axis) s->outer *= x.shape[d];
    if (d == axis) s->len = x.shape[d];
    if (d > axis) s->inner *= x.shape[d];
  }
  return Status::Ok();
}

enum class SoftKind { kSoftmax, kLogSoftmax, kHardmax, kLpNorm };

template <SoftKind kKind>
Status SoftmaxLike(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  AxisSplit s;
  QUILT_RETURN_IF_ERROR(SplitAtAxis(ctx, x, &s));
  int64_t p = ctx.attrs().Int("p", 2);
  if (kKind == SoftKind::kLpNorm && p != 1 && p != 2) {
    return Status::Error("p must be 1 or 2, got " + std::to_string(p));
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    std::vector<double> v(s.len);
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t in = 0; in < s.inner; ++in) {
        int64_t base = o * s.len * s.inner + in;
        for (int64_t k = 0; k < s.len; ++k) {
          v[k] = static_cast<double>(Load(px[base + k * s.inner]));
        }
        if constexpr (kKind == SoftKind::kLpNorm) {
          double norm = 0;
          for (double e : v) norm += p == 1 ? std::abs(e) : e * e;
          if (p == 2) norm = std::sqrt(norm);
          // A zero norm gives zeros (ONNX's reference), not 0 / 0.
          for (double& e : v) e = norm == 0 ? 0.0 : e / norm;
        } else if constexpr (kKind == SoftKind::kHardmax) {
          int64_t best = 0;
          for (int64_t k = 1; k < s.len; ++k) {
            if (v[k] > v[best]) best = k;
          }
          for (int64_t k = 0; k < s.len; ++k) v[k] = k == best ? 1.0 : 0.0;
        } else {
          double mx = -std::numeric_limits<double>::infinity();
          for (double e : v) mx = std::max(mx, e);
          double sum = 0;
          for (double e : v) sum += std::exp(e - mx);
          if constexpr (kKind == SoftKind::kSoftmax && !std::is_same_v<T, Compute<T>>) {
            // 16-bit floats: the steps rounded to T as numpy computes them (the ONNX
            // reference): x - max and exp rounded; the sum kept in float for float16 (numpy's
            // pairwise sum) and rounded at every addition for bfloat16 (ml_dtypes), then rounded.
            auto round = [](double d) {
              return static_cast<double>(static_cast<float>(T(static_cast<float>(d))));
            };
            sum = 0;
            for (double& e : v) {
              e = round(std::exp(round(e - mx)));
              sum = std::is_same_v<T, bf16> ? round(sum + e) : sum + e;
            }
            sum = round(sum);
            for (double& e : v) e = e / sum;
          } else if constexpr (kKind == SoftKind::kSoftmax) {
            for (double& e : v) e = std::exp(e - mx) / sum;
          } else {
            double lse = std::log(sum);
            for (double& e : v) e = e - mx - lse;
          }
        }
        for (int64_t k = 0; k < s.len; ++k) {
          py[base + k * s.inner] = Store<T>(static_cast<Compute<T>>(v[k]));
        }
      }
    }
    return Status::Ok();
  });
}

// Inference: the data unchanged and a mask of ones (of data's dtype).
Status Dropout(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  if (x.ByteSize()) std::memcpy(y->data, x.data, x.ByteSize());
  if (ctx.num_outputs() < 2) return Status::Ok();
  Tensor* mask;
  QUILT_RETURN_IF_ERROR(ctx.Output(1, x.dtype, x.shape, &mask));
  return VisitAll(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* pm = mask->MutableData<T>();
    int64_t n = x.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        pm[i] = true;
      } else {
        pm[i] = Store<T>(Compute<T>(1));
      }
    }
    return Status::Ok();
  });
}

}  // namespace

Status nn::ReluReference(KernelContext& ctx) { return Activation<ReluOp, false>(ctx); }
Status nn::PReluReference(KernelContext& ctx) { return PRelu(ctx); }
Status nn::HardSwishReference(KernelContext& ctx) { return Activation<HardSwishOp, true>(ctx); }
Status nn::HardSigmoidReference(KernelContext& ctx) { return Activation<HardSigmoidOp, true>(ctx); }
Status nn::LeakyReluReference(KernelContext& ctx) { return Activation<LeakyReluOp, true>(ctx); }
Status nn::SiluReference(KernelContext& ctx) { return Activation<SiluOp, true>(ctx); }
Status nn::GeluReference(KernelContext& ctx) { return Activation<GeluOp, true>(ctx); }
Status nn::SoftmaxReference(KernelContext& ctx) { return SoftmaxLike<SoftKind::kSoftmax>(ctx); }

namespace {

constexpr rt::KernelEntry kKernels[] = {
    Kernel("nn.relu", nn::ReluFast),
    Kernel("nn.elu", Activation<EluOp, true>),
    Kernel("nn.selu", Activation<SeluOp, true>),
    Kernel("nn.celu", Activation<CeluOp, true>),
    Kernel("nn.leakyrelu", nn::LeakyReluFast),
    Kernel("nn.thresholded_relu", Activation<ThresholdedReluOp, true>),
    Kernel("nn.hard_sigmoid", nn::HardSigmoidFast),
    Kernel("nn.hard_swish", nn::HardSwishFast),
    Kernel("nn.softplus", Activation<SoftplusOp, true>),
    Kernel("nn.softsign", Activation<SoftsignOp, true>),
    Kernel("nn.gelu", nn::GeluFast),
    Kernel("nn.gelu_tanh", Activation<GeluTanhOp, true>),
    Kernel("nn.mish", Activation<MishOp, true>),
    Kernel("nn.silu", nn::SiluFast),
    Kernel("nn.shrink", Activation<ShrinkOp, false>),
    Kernel("nn.prelu", nn::PReluFast),
    Kernel("nn.softmax", nn::SoftmaxFast),
    Kernel("nn.log_softmax", SoftmaxLike<SoftKind::kLogSoftmax>),
    Kernel("nn.hardmax", SoftmaxLike<SoftKind::kHardmax>),
    Kernel("nn.lp_normalize", SoftmaxLike<SoftKind::kLpNorm>),
    Kernel("nn.dropout", Dropout),
    Kernel("nn.batch_norm", nn::BatchNormFast),
    Kernel("nn.instance_norm", nn::InstanceNorm),
    Kernel("nn.layer_norm", nn::LayerNormFast),
    Kernel("nn.layer_norm_stats", nn::LayerNormStats),
    Kernel("nn.group_norm", nn::GroupNorm),
    Kernel("nn.rms_norm", nn::RmsNorm),
    Kernel("nn.mean_variance_norm", nn::MeanVarianceNorm),
    Kernel("nn.lrn", nn::Lrn),
};

}  // namespace

std::span<const rt::KernelEntry> NnKernels() { return kKernels; }

}  // namespace quilt::cpu
