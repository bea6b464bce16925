// Normalizations of the nn family (inference): batch, instance, layer (and its statistics),
// group, RMS, mean-variance, LRN. Statistics are computed in double with two passes (mean, then
// the biased variance of the deviations); parameters of any float type are read as doubles.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu::nn {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// The elements of a floating-point tensor as doubles.
Status ReadDoubles(const Tensor& t, std::vector<double>* out) {
  return VisitFloat(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.Data<T>();
    int64_t n = t.NumElements();
    out->resize(n);
    for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(Load(p[i]));
    return Status::Ok();
  });
}

// Writes doubles into a floating-point tensor of the same element count.
Status WriteDoubles(const std::vector<double>& v, Tensor* t) {
  return VisitFloat(t->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t->MutableData<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = Store<T>(static_cast<Compute<T>>(v[i]));
    return Status::Ok();
  });
}

// A 1-D per-channel parameter of `len` values.
Status ReadChannelParam(const Tensor& t, int64_t len, const char* what, std::vector<double>* out) {
  if (t.rank() != 1 || t.shape[0] != len) {
    return Status::Error(std::string(what) + " has shape " + rt::ShapeString(t.shape) +
                         ", expected (" + Str(len) + ")");
  }
  return ReadDoubles(t, out);
}

Status ReadAxis(const rt::AttrView& attrs, const char* name, int64_t fallback, int rank,
                int64_t* axis) {
  *axis = attrs.Int(name, fallback);
  if (!NormalizeAxis(axis, rank)) {
    return Status::Error(std::string(name) + " " + Str(*axis) + " is out of range for rank " +
                         Str(rank));
  }
  return Status::Ok();
}

// Marks the dims of `axes` (attribute `name`) in `reduced`; each once.
Status ReadAxes(const rt::AttrView& attrs, const char* name, int rank, std::vector<bool>* reduced) {
  reduced->assign(rank, false);
  for (int64_t a : attrs.Ints(name)) {
    int64_t n = a;
    if (!NormalizeAxis(&n, rank)) {
      return Status::Error("axis " + Str(a) + " is out of range for rank " + Str(rank));
    }
    if ((*reduced)[n]) return Status::Error("axis " + Str(a) + " appears twice");
    (*reduced)[n] = true;
  }
  return Status::Ok();
}

// Statistics groups: for every element of `shape`, the index of its group. Dim d contributes
// nothing when divisor[d] is 0 (reduced), else coordinate / divisor[d] out of
// shape[d] / divisor[d] values. Groups are numbered row-major over the contributing dims.
std::vector<int64_t> GroupKeys(const Shape& shape, const std::vector<int64_t>& divisor,
                               int64_t* num_groups) {
  int rank = static_cast<int>(shape.size());
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  std::vector<int64_t> key_stride(rank, 0);
  int64_t groups = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (divisor[d] == 0) continue;
    key_stride[d] = groups;
    groups *= shape[d] / divisor[d];
  }
  *num_groups = groups;
  std::vector<int64_t> keys(total);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t k = 0;
    for (int d = 0; d < rank; ++d) {
      if (divisor[d] != 0) k += idx[d] / divisor[d] * key_stride[d];
    }
    keys[i] = k;
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return keys;
}

// Mean and biased variance of each group.
void GroupMoments(const std::vector<double>& x, const std::vector<int64_t>& keys, int64_t groups,
                  std::vector<double>* mean, std::vector<double>* var) {
  std::vector<int64_t> count(groups, 0);
  mean->assign(groups, 0.0);
  var->assign(groups, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    (*mean)[keys[i]] += x[i];
    ++count[keys[i]];
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (count[g]) (*mean)[g] /= static_cast<double>(count[g]);
  }
  for (size_t i = 0; i < x.size(); ++i) {
    double d = x[i] - (*mean)[keys[i]];
    (*var)[keys[i]] += d * d;
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (count[g]) (*var)[g] /= static_cast<double>(count[g]);
  }
}

// The coordinate along `axis` of each flat index: (i / inner) % len.
int64_t Inner(const Shape& shape, int64_t axis) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  return inner;
}

// A parameter that broadcasts to x: its values gathered to x's shape.
Status BroadcastParam(const Tensor& p, const Shape& shape, const char* what,
                      std::vector<double>* out) {
  Shape b;
  if (!BroadcastShape(p.shape, shape, &b) || b != shape) {
    return Status::Error(std::string(what) + " of shape " + rt::ShapeString(p.shape) +
                         " does not broadcast to " + rt::ShapeString(shape));
  }
  std::vector<double> v;
  QUILT_RETURN_IF_ERROR(ReadDoubles(p, &v));
  const Shape strides[1] = {BroadcastStrides(p.shape, shape)};
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  out->assign(total, 0.0);
  ForEachBroadcast(shape, strides, [&](int64_t i, const int64_t* off) { (*out)[i] = v[off[0]]; });
  return Status::Ok();
}

Status OutputDoubles(KernelContext& ctx, int i, const Tensor& like, const std::vector<double>& v) {
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(i, like.dtype, like.shape, &y));
  return WriteDoubles(v, y);
}

// The per-group moments over the dims marked in `reduced` (all others kept).
Status MomentsOver(const std::vector<double>& x, const Shape& shape,
                   const std::vector<bool>& reduced, std::vector<int64_t>* keys,
                   std::vector<double>* mean, std::vector<double>* var) {
  std::vector<int64_t> divisor(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) divisor[d] = reduced[d] ? 0 : 1;
  int64_t groups;
  *keys = GroupKeys(shape, divisor, &groups);
  GroupMoments(x, *keys, groups, mean, var);
  return Status::Ok();
}

// Axes for instance and group norm: the attribute, or every dim but 0 and the channel axis.
Status NormAxes(const rt::AttrView& attrs, int rank, int64_t channel, std::vector<bool>* reduced) {
  if (attrs.Has("axes")) return ReadAxes(attrs, "axes", rank, reduced);
  reduced->assign(rank, true);
  (*reduced)[0] = false;
  (*reduced)[channel] = false;
  return Status::Ok();
}

}  // namespace

Status BatchNorm(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int64_t axis;
  QUILT_RETURN_IF_ERROR(ReadAxis(ctx.attrs(), "axis", 1, x.rank(), &axis));
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  int64_t c = x.shape[axis];
  std::vector<double> xv, gamma, beta, mean, var;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(1), c, "gamma", &gamma));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(2), c, "beta", &beta));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(3), c, "moving_mean", &mean));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(4), c, "moving_var", &var));
  int64_t inner = Inner(x.shape, axis);
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / inner) % c;
    xv[i] = (xv[i] - mean[ch]) / std::sqrt(var[ch] + eps) * gamma[ch] + beta[ch];
  }
  return OutputDoubles(ctx, 0, x, xv);
}

Status InstanceNorm(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int64_t axis;
  QUILT_RETURN_IF_ERROR(ReadAxis(ctx.attrs(), "channel_axis", 1, x.rank(), &axis));
  std::vector<bool> reduced;
  QUILT_RETURN_IF_ERROR(NormAxes(ctx.attrs(), x.rank(), axis, &reduced));
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  int64_t c = x.shape[axis];
  std::vector<double> xv, gamma, beta, mean, var;
  std::vector<int64_t> keys;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(1), c, "gamma", &gamma));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(2), c, "beta", &beta));
  QUILT_RETURN_IF_ERROR(MomentsOver(xv, x.shape, reduced, &keys, &mean, &var));
  int64_t inner = Inner(x.shape, axis);
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / inner) % c;
    int64_t k = keys[i];
    xv[i] = (xv[i] - mean[k]) / std::sqrt(var[k] + eps) * gamma[ch] + beta[ch];
  }
  return OutputDoubles(ctx, 0, x, xv);
}

Status GroupNorm(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int64_t axis;
  QUILT_RETURN_IF_ERROR(ReadAxis(ctx.attrs(), "channel_axis", 1, x.rank(), &axis));
  std::vector<bool> reduced;
  QUILT_RETURN_IF_ERROR(NormAxes(ctx.attrs(), x.rank(), axis, &reduced));
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  int64_t groups = ctx.attrs().Int("num_groups", 1);
  int64_t c = x.shape[axis];
  if (groups < 1 || c % groups != 0) {
    return Status::Error("num_groups " + Str(groups) + " does not divide " + Str(c) + " channels");
  }
  std::vector<double> xv, gamma, beta, mean, var;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(1), c, "gamma", &gamma));
  QUILT_RETURN_IF_ERROR(ReadChannelParam(*ctx.input(2), c, "beta", &beta));
  std::vector<int64_t> divisor(x.rank());
  for (int d = 0; d < x.rank(); ++d) divisor[d] = reduced[d] ? 0 : 1;
  divisor[axis] = c / groups;
  int64_t num_keys;
  std::vector<int64_t> keys = GroupKeys(x.shape, divisor, &num_keys);
  GroupMoments(xv, keys, num_keys, &mean, &var);
  int64_t inner = Inner(x.shape, axis);
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / inner) % c;
    int64_t k = keys[i];
    xv[i] = (xv[i] - mean[k]) / std::sqrt(var[k] + eps) * gamma[ch] + beta[ch];
  }
  return OutputDoubles(ctx, 0, x, xv);
}

Status LayerNorm(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  std::vector<bool> reduced;
  QUILT_RETURN_IF_ERROR(ReadAxes(ctx.attrs(), "axes", x.rank(), &reduced));
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  std::vector<double> xv, gamma, beta, mean, var;
  std::vector<int64_t> keys;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  QUILT_RETURN_IF_ERROR(BroadcastParam(*ctx.input(1), x.shape, "gamma", &gamma));
  QUILT_RETURN_IF_ERROR(BroadcastParam(*ctx.input(2), x.shape, "beta", &beta));
  QUILT_RETURN_IF_ERROR(MomentsOver(xv, x.shape, reduced, &keys, &mean, &var));
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t k = keys[i];
    xv[i] = (xv[i] - mean[k]) / std::sqrt(var[k] + eps) * gamma[i] + beta[i];
  }
  return OutputDoubles(ctx, 0, x, xv);
}

Status LayerNormStats(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  std::vector<bool> reduced;
  QUILT_RETURN_IF_ERROR(ReadAxes(ctx.attrs(), "axes", x.rank(), &reduced));
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  DType dtype = ctx.attrs().Dtype("dtype", DType::kFloat32);
  std::vector<double> xv, mean, var;
  std::vector<int64_t> keys;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  QUILT_RETURN_IF_ERROR(MomentsOver(xv, x.shape, reduced, &keys, &mean, &var));
  Shape shape = x.shape;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d]) shape[d] = 1;
  }
  for (double& v : var) v = 1.0 / std::sqrt(v + eps);
  Tensor* m;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, shape, &m));
  QUILT_RETURN_IF_ERROR(WriteDoubles(mean, m));
  Tensor* inv;
  QUILT_RETURN_IF_ERROR(ctx.Output(1, dtype, shape, &inv));
  return WriteDoubles(var, inv);
}

Status RmsNorm(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  std::vector<bool> reduced;
  QUILT_RETURN_IF_ERROR(ReadAxes(ctx.attrs(), "axes", x.rank(), &reduced));
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  std::vector<double> xv, weight;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  QUILT_RETURN_IF_ERROR(BroadcastParam(*ctx.input(1), x.shape, "weight", &weight));
  std::vector<int64_t> divisor(x.rank());
  for (int d = 0; d < x.rank(); ++d) divisor[d] = reduced[d] ? 0 : 1;
  int64_t groups;
  std::vector<int64_t> keys = GroupKeys(x.shape, divisor, &groups);
  std::vector<double> sum(groups, 0.0), count(groups, 0.0);
  for (size_t i = 0; i < xv.size(); ++i) {
    sum[keys[i]] += xv[i] * xv[i];
    count[keys[i]] += 1;
  }
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t k = keys[i];
    xv[i] = xv[i] / std::sqrt(sum[k] / count[k] + eps) * weight[i];
  }
  return OutputDoubles(ctx, 0, x, xv);
}

Status MeanVarianceNorm(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  std::vector<bool> reduced;
  QUILT_RETURN_IF_ERROR(ReadAxes(ctx.attrs(), "axes", x.rank(), &reduced));
  double eps = ctx.attrs().Float("epsilon", 1e-9);
  std::vector<double> xv, mean, var;
  std::vector<int64_t> keys;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  QUILT_RETURN_IF_ERROR(MomentsOver(xv, x.shape, reduced, &keys, &mean, &var));
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t k = keys[i];
    xv[i] = (xv[i] - mean[k]) / (std::sqrt(var[k]) + eps);
  }
  return OutputDoubles(ctx, 0, x, xv);
}

Status Lrn(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int64_t axis;
  QUILT_RETURN_IF_ERROR(ReadAxis(ctx.attrs(), "axis", 1, x.rank(), &axis));
  int64_t size = ctx.attrs().Int("size", 1);
  if (size < 1) return Status::Error("size must be positive, got " + Str(size));
  double alpha = ctx.attrs().Float("alpha", 1e-4);
  double beta = ctx.attrs().Float("beta", 0.75);
  double bias = ctx.attrs().Float("bias", 1.0);
  std::vector<double> xv;
  QUILT_RETURN_IF_ERROR(ReadDoubles(x, &xv));
  int64_t c = x.shape[axis];
  int64_t inner = Inner(x.shape, axis);
  std::vector<double> yv(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / inner) % c;
    int64_t base = static_cast<int64_t>(i) - ch * inner;
    int64_t lo = std::max<int64_t>(0, ch - (size - 1) / 2);
    int64_t hi = std::min<int64_t>(c - 1, ch + size / 2);
    double sum = 0;
    for (int64_t k = lo; k <= hi; ++k) {
      double v = xv[base + k * inner];
      sum += v * v;
    }
    yv[i] = xv[i] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
  }
  return OutputDoubles(ctx, 0, x, yv);
}

}  // namespace quilt::cpu::nn
