// Convolution (1-3d, grouped, dilated, transposed), pooling (max, average, Lp, adaptive,
// unpooling), col2im, depth/space. The pools are in pool.cc; this file holds the window geometry
// they share with convolution.
//
// Every spatial loop runs over 3 dims: an op of spatial rank 1 or 2 is seen with trailing dims of
// size 1 (kernel 1, stride 1, no padding), which changes no result.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "targets/cpu/kernels/conv_blocked.h"
#include "targets/cpu/kernels/conv_fast.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace nn {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

// The list attribute `name` read in place: `n` values, or none (absent: `fill` stands for each).
// One lookup where the list is there (a conv's window is made at every run); a second only for
// an empty view, to tell an absent list from an empty or mistyped one.
Status IntsAttrView(const rt::AttrView& attrs, const char* name, size_t n,
                    std::span<const int64_t>* out) {
  *out = attrs.IntsView(name);
  if (out->empty() && !attrs.Has(name)) return Status::Ok();
  if (out->size() != n) {
    return Status::Error(std::string(name) + " has " + Str(static_cast<int64_t>(out->size())) +
                         " values, expected " + Str(static_cast<int64_t>(n)));
  }
  return Status::Ok();
}

Status IntsAttr(const rt::AttrView& attrs, const char* name, size_t n, int64_t fill, Shape* out) {
  std::span<const int64_t> view;
  QUILT_RETURN_IF_ERROR(IntsAttrView(attrs, name, n, &view));
  if (view.empty()) {
    out->assign(n, fill);
  } else {
    out->assign(view.begin(), view.end());
  }
  return Status::Ok();
}

Status MakeWindow(const rt::AttrView& attrs, std::span<const int64_t> in,
                  std::span<const int64_t> kernel, Window* w) {
  size_t r = in.size();
  if (r < 1 || r > kMaxSpatial || kernel.size() != r) {
    return Status::Error("unsupported window: " + Str(static_cast<int64_t>(r)) + " spatial dims, " +
                         Str(static_cast<int64_t>(kernel.size())) + " kernel dims");
  }
  // Read in place (a conv's window is made at every run): absent lists read as their defaults.
  std::span<const int64_t> strides_attr, dilation_attr, padding_attr;
  QUILT_RETURN_IF_ERROR(IntsAttrView(attrs, "strides", r, &strides_attr));
  QUILT_RETURN_IF_ERROR(IntsAttrView(attrs, "dilation", r, &dilation_attr));
  QUILT_RETURN_IF_ERROR(IntsAttrView(attrs, "padding", 2 * r, &padding_attr));
  auto at = [](std::span<const int64_t> list, size_t i, int64_t fill) {
    return list.empty() ? fill : list[i];
  };
  bool ceil_mode = attrs.Bool("ceil_mode", false);
  std::string_view auto_pad = attrs.Str("auto_pad", "NOTSET");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "NOTSET" && auto_pad != "VALID") {
    return Status::Error("unknown auto_pad '" + std::string(auto_pad) + "'");
  }
  *w = Window();
  w->rank = static_cast<int>(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t s = at(strides_attr, i, 1), d = at(dilation_attr, i, 1), k = kernel[i];
    if (s < 1) return Status::Error("strides must be positive, got " + Str(s));
    if (d < 1) return Status::Error("dilation must be positive, got " + Str(d));
    if (k < 1) return Status::Error("kernel size must be positive, got " + Str(k));
    if (in[i] < 0) return Status::Error("negative spatial dim " + Str(in[i]));
    // Sizes from attributes are checked against overflow; none wraps around.
    auto overflow = [i] {
      return Status::Error("the window overflows along spatial dim " +
                           Str(static_cast<int64_t>(i)));
    };
    int64_t dk;
    if (__builtin_mul_overflow(k - 1, d, &dk) || __builtin_add_overflow(dk, 1, &dk)) {
      return overflow();
    }
    int64_t pb = 0, pe = 0, out;
    if (same) {
      out = in[i] / s + (in[i] % s != 0);
      int64_t total;
      if (__builtin_add_overflow((out - 1) * s, dk, &total)) return overflow();
      total = std::max<int64_t>(0, total - in[i]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else {
      if (auto_pad == "NOTSET") {
        pb = at(padding_attr, i, 0);
        pe = at(padding_attr, r + i, 0);
        if (pb < 0 || pe < 0) {
          return Status::Error("pads must be non-negative, got " + Str(std::min(pb, pe)));
        }
      }
      int64_t padded;
      if (__builtin_add_overflow(in[i], pb, &padded) ||
          __builtin_add_overflow(padded, pe, &padded)) {
        return overflow();
      }
      int64_t span = padded - dk;
      if (span < 0) {
        return Status::Error("the window (" + Str(dk) + " with dilation) is larger than the " +
                             "padded input (" + Str(span + dk) + ") along spatial dim " +
                             Str(static_cast<int64_t>(i)));
      }
      if (!ceil_mode || auto_pad != "NOTSET") {
        out = span / s + 1;
      } else {
        // Rounded up, but the last window must start inside the input or its begin pad.
        int64_t up = span / s + (span % s != 0) + 1;
        int64_t starts = FloorDiv(in[i] + pb - 1, s) + 1;
        out = std::min(up, starts);
      }
    }
    w->in[i] = in[i];
    w->out[i] = out;
    w->kernel[i] = k;
    w->stride[i] = s;
    w->dilation[i] = d;
    w->pad_begin[i] = pb;
    w->pad_end[i] = pe;
  }
  return Status::Ok();
}

namespace {

// The spatial dims of a (N, C, spatial...) shape.
std::span<const int64_t> Spatial(const Shape& s) { return std::span<const int64_t>(s).subspan(2); }

// (N, C, out...) for a window.
// (This thread's, kept from step to step: no allocation in a run's steady state; valid until
// the thread's next call.)
const Shape& OutShape(int64_t n, int64_t c, const Window& w) {
  thread_local Shape s;
  s.clear();
  s.push_back(n);
  s.push_back(c);
  for (int i = 0; i < w.rank; ++i) s.push_back(w.out[i]);
  return s;
}

Status CheckSpatialRank(const Tensor& t, const char* what) {
  if (t.rank() < 3 || t.rank() > 2 + kMaxSpatial) {
    return Status::Error(std::string(what) + " must have rank 3 to 5, got shape " +
                         rt::ShapeString(t.shape));
  }
  return Status::Ok();
}

}  // namespace

Status PrepareEpilogue(KernelContext& ctx, ConvGeometry* geo) {
  const Tensor& x = *ctx.input(0);
  // Inputs 2...: the bias, or with the attribute affine one input per letter ('b' add, 's'
  // multiply), in the order they apply; after the activation, with the attribute post, one input
  // per letter ('b', 's', 'd' divide).
  const rt::AttrView& attrs = ctx.attrs();
  std::string_view post = attrs.Str("post", "");
  std::string_view act = attrs.Str("activation", "");
  int slope = act == "prelu" ? 1 : 0;  // a prelu's slope, the input after the affine ones
  int residual = attrs.Int("residual", 0) != 0 ? 1 : 0;  // the input after the affine ones
  int before = ctx.num_inputs() - 2 - slope - residual - static_cast<int>(post.size());
  std::string_view ops = attrs.Str("affine", before > 0 ? "b" : "");
  if (ops.size() > 3 || post.size() > 3 || static_cast<int>(ops.size()) != before) {
    return Status::Error(
        "the epilogue '" + std::string(ops) + "', '" + std::string(act) + "', '" +
        std::string(post) + "' needs " +
        Str(static_cast<int64_t>(ops.size() + residual + slope + post.size())) +
        " input(s) after the weight (at most 3 each before and after the activation), the step "
        "gives " +
        Str(ctx.num_inputs() - 2));
  }
  auto read = [&](std::string_view letters, std::string_view allowed, int first,
                  ConvGeometry::Affine* out) -> Status {
    for (size_t i = 0; i < letters.size(); ++i) {
      const Tensor* t = ctx.input(first + static_cast<int>(i));
      char op = letters[i];
      if (allowed.find(op) == std::string_view::npos) {
        return Status::Error("the epilogue '" + std::string(letters) + "' has an op other than " +
                             std::string(allowed));
      }
      if (!t || t->dtype != x.dtype || (t->NumElements() != geo->o && t->NumElements() != 1)) {
        return Status::Error(std::string("the epilogue's input ") + op + " " +
                             (t ? rt::ShapeString(t->shape) : std::string("(absent)")) +
                             " does not hold one value of the data's element type per output "
                             "channel (" +
                             Str(geo->o) + ") or one for all");
      }
      out[i] = {op, t};
    }
    return Status::Ok();
  };
  geo->affines = static_cast<int>(ops.size());
  geo->posts = static_cast<int>(post.size());
  QUILT_RETURN_IF_ERROR(read(ops, "bs", 2, geo->affine));
  if (residual) {
    const Tensor* t = ctx.input(2 + geo->affines);
    if (!t || t->dtype != x.dtype || t->shape != geo->y->shape) {
      return Status::Error("the epilogue's residual input " +
                           (t ? rt::ShapeString(t->shape) : std::string("(absent)")) +
                           " is not of the output's shape " + rt::ShapeString(geo->y->shape) +
                           " and the data's element type");
    }
    geo->residual = t;
  }
  if (slope) {
    ConvGeometry::Affine s;
    QUILT_RETURN_IF_ERROR(read("s", "s", 2 + geo->affines + residual, &s));
    geo->slope = s.t;
  }
  QUILT_RETURN_IF_ERROR(read(post, "bsdxn", 2 + geo->affines + residual + slope, geo->post));
  const rt::AttrView& a = attrs;
  double inf = std::numeric_limits<double>::infinity();
  geo->hardswish = act == "hardswish";
  geo->hard_swish = act == "hard_swish";
  geo->smooth = vmath::SmoothNamed(act);
  geo->negative_slope = act == "prelu" || act == "leaky_relu";
  if (act == "leaky_relu") geo->alpha = a.Float("activation_alpha", 0.01);
  geo->clamp = !act.empty() && !geo->hardswish && !geo->hard_swish &&
               geo->smooth == vmath::Smooth::kNone && !geo->negative_slope;
  if (act == "relu") {
    geo->lo = 0;
    geo->hi = inf;
  } else if (act == "clip") {
    geo->lo = a.Has("activation_min") ? a.Float("activation_min") : -inf;
    geo->hi = a.Has("activation_max") ? a.Float("activation_max") : inf;
  } else if (geo->clamp) {
    return Status::Error("unknown activation '" + std::string(act) + "'");
  }
  return Status::Ok();
}

Status PrepareConv(KernelContext& ctx, ConvGeometry* geo) {
  const Tensor& x = *ctx.input(0);
  const Tensor& wt = *ctx.input(1);
  if (x.dtype != wt.dtype) return Status::Error("data and weight have different element types");
  QUILT_RETURN_IF_ERROR(CheckSpatialRank(x, "data"));
  if (wt.rank() != x.rank()) return Status::Error("data and weight have different ranks");
  int64_t groups = ctx.attrs().Int("groups", 1);
  int64_t n = x.shape[0], c = x.shape[1], o = wt.shape[0], cg = wt.shape[1];
  if (groups < 1 || o % groups != 0 || c % groups != 0 || c / groups != cg) {
    return Status::Error("weight " + rt::ShapeString(wt.shape) + " does not fit data " +
                         rt::ShapeString(x.shape) + " in " + Str(groups) + " group(s)");
  }
  QUILT_RETURN_IF_ERROR(MakeWindow(ctx.attrs(), Spatial(x.shape), Spatial(wt.shape), &geo->w));
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, OutShape(n, o, geo->w), &geo->y));
  geo->n = n;
  geo->c = c;
  geo->o = o;
  geo->cg = cg;
  geo->og = o / groups;
  geo->groups = groups;
  return PrepareEpilogue(ctx, geo);
}

namespace {

// The reference's epilogue of one output value (ConvGeometry's, in T's compute type): a lone bias
// is added to the double sum; a longer epilogue rounds the sum to T and applies each add and
// multiply in T, as the kernels of those ops would.
template <typename T>
struct ReferenceEpilogue {
  const ConvGeometry& geo;
  bool lone_bias = geo.affines == 1 && geo.affine[0].op == 'b';
  Compute<T> lo = static_cast<Compute<T>>(geo.lo), hi = static_cast<Compute<T>>(geo.hi);
  Compute<T> zero = static_cast<Compute<T>>(0), three = static_cast<Compute<T>>(3),
             six = static_cast<Compute<T>>(6), one = static_cast<Compute<T>>(1),
             half = static_cast<Compute<T>>(0.5);

  // The value of `f` for output channel oc, and v with f's add, multiply or divide applied,
  // rounded to T.
  Compute<T> Value(const ConvGeometry::Affine& f, int64_t oc) const {
    return Load(f.t->Data<T>()[f.t->NumElements() == 1 ? 0 : oc]);
  }
  Compute<T> Apply(const ConvGeometry::Affine& f, int64_t oc, Compute<T> v) const {
    Compute<T> k = Value(f, oc);
    if (f.op == 'x' || f.op == 'n') {  // the maximum and minimum kernels'
      if (std::isnan(static_cast<double>(v)) || std::isnan(static_cast<double>(k))) {
        return static_cast<Compute<T>>(std::numeric_limits<double>::quiet_NaN());
      }
      return f.op == 'x' ? (v < k ? k : v) : (k < v ? k : v);
    }
    return static_cast<Compute<T>>(f.op == 'b' ? v + k : f.op == 's' ? v * k : v / k);
  }

  // Output value yi (of channel oc) from its double sum.
  T operator()(double acc, int64_t oc, int64_t yi) const {
    if (lone_bias) acc += static_cast<double>(Value(geo.affine[0], oc));
    auto v = static_cast<Compute<T>>(acc);
    for (int i = 0; i < geo.affines && !lone_bias; ++i) v = Apply(geo.affine[i], oc, v);
    if (geo.residual) v = static_cast<Compute<T>>(v + Load(geo.residual->Data<T>()[yi]));
    if (geo.clamp) {
      if (v < lo) v = lo;
      if (v > hi) v = hi;
    } else if (geo.hardswish) {
      auto t = static_cast<Compute<T>>(v + three);
      if (t < zero) t = zero;
      if (t > six) t = six;
      v = static_cast<Compute<T>>(v * t);
    } else if (geo.hard_swish) {
      auto t = static_cast<Compute<T>>(static_cast<Compute<T>>(v / six) + half);
      t = std::max(zero, std::min(one, t));
      v = static_cast<Compute<T>>(v * t);
    } else if (geo.smooth != vmath::Smooth::kNone) {
      v = static_cast<Compute<T>>(vmath::OfInDouble(geo.smooth, static_cast<double>(v)));
    } else if (geo.negative_slope && v < zero) {
      Compute<T> k = geo.slope ? Value({'s', geo.slope}, oc) : static_cast<Compute<T>>(geo.alpha);
      v = static_cast<Compute<T>>(v * k);
    }
    for (int i = 0; i < geo.posts; ++i) v = Apply(geo.post[i], oc, v);
    return Store<T>(v);
  }
};

}  // namespace

Status ConvReference(KernelContext& ctx) {
  ConvGeometry geo;
  QUILT_RETURN_IF_ERROR(PrepareConv(ctx, &geo));
  const Tensor& x = *ctx.input(0);
  const Tensor& wt = *ctx.input(1);
  const Window& w = geo.w;
  Tensor* y = geo.y;
  int64_t n = geo.n, c = geo.c, o = geo.o, cg = geo.cg;
  int64_t og = geo.og;
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    const T* pw = wt.Data<T>();
    T* py = y->MutableData<T>();
    const ReferenceEpilogue<T> epilogue{geo};
    int64_t yi = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t oc = 0; oc < o; ++oc) {
        int64_t g = oc / og;
        for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
          for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
            for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
              double acc = 0;
              for (int64_t ci = 0; ci < cg; ++ci) {
                int64_t xc = (b * c + g * cg + ci) * w.InSize();
                int64_t wc = (oc * cg + ci) * w.KernelSize();
                for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
                  int64_t i0 = o0 * w.stride[0] - w.pad_begin[0] + k0 * w.dilation[0];
                  if (i0 < 0 || i0 >= w.in[0]) continue;
                  for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
                    int64_t i1 = o1 * w.stride[1] - w.pad_begin[1] + k1 * w.dilation[1];
                    if (i1 < 0 || i1 >= w.in[1]) continue;
                    for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
                      int64_t i2 = o2 * w.stride[2] - w.pad_begin[2] + k2 * w.dilation[2];
                      if (i2 < 0 || i2 >= w.in[2]) continue;
                      double xv =
                          static_cast<double>(Load(px[xc + (i0 * w.in[1] + i1) * w.in[2] + i2]));
                      double wv = static_cast<double>(
                          Load(pw[wc + (k0 * w.kernel[1] + k1) * w.kernel[2] + k2]));
                      acc += xv * wv;
                    }
                  }
                }
              }
              py[yi] = epilogue(acc, oc, yi);
              ++yi;
            }
          }
        }
      }
    }
    return Status::Ok();
  });
}

namespace {

// `fast`: float32 through ConvTransposeFloat (conv_fast.cc), the rest in double here.
Status ConvTransposeImpl(KernelContext& ctx, bool fast) {
  const Tensor& x = *ctx.input(0);
  const Tensor& wt = *ctx.input(1);
  if (x.dtype != wt.dtype) return Status::Error("data and weight have different element types");
  QUILT_RETURN_IF_ERROR(CheckSpatialRank(x, "data"));
  if (wt.rank() != x.rank()) return Status::Error("data and weight have different ranks");
  size_t r = static_cast<size_t>(x.rank() - 2);
  int64_t groups = ctx.attrs().Int("groups", 1);
  int64_t n = x.shape[0], c = x.shape[1], og = wt.shape[1];
  if (groups < 1 || c % groups != 0 || wt.shape[0] != c) {
    return Status::Error("weight " + rt::ShapeString(wt.shape) + " does not fit data " +
                         rt::ShapeString(x.shape) + " in " + Str(groups) + " group(s)");
  }
  int64_t cg = c / groups, o;
  if (__builtin_mul_overflow(og, groups, &o)) {
    return Status::Error(Str(groups) + " groups of " + Str(og) + " output channels overflow");
  }
  Shape strides, dilation, padding, out_pad;
  const rt::AttrView& a = ctx.attrs();
  QUILT_RETURN_IF_ERROR(IntsAttr(a, "strides", r, 1, &strides));
  QUILT_RETURN_IF_ERROR(IntsAttr(a, "dilation", r, 1, &dilation));
  QUILT_RETURN_IF_ERROR(IntsAttr(a, "padding", 2 * r, 0, &padding));
  QUILT_RETURN_IF_ERROR(IntsAttr(a, "output_padding", r, 0, &out_pad));
  Window w;
  w.rank = static_cast<int>(r);
  for (size_t i = 0; i < r; ++i) {
    if (strides[i] < 1 || dilation[i] < 1) {
      return Status::Error("strides and dilation must be positive");
    }
    w.in[i] = x.shape[2 + i];
    w.kernel[i] = wt.shape[2 + i];
    w.stride[i] = strides[i];
    w.dilation[i] = dilation[i];
    w.pad_begin[i] = padding[i];
    w.pad_end[i] = padding[r + i];
    // out = (in - 1) * stride + (kernel - 1) * dilation + 1 + output_padding - pads, each step
    // checked: the attributes come from the package.
    int64_t dk, out;
    bool wraps = __builtin_mul_overflow(w.kernel[i] - 1, w.dilation[i], &dk) ||
                 __builtin_add_overflow(dk, 1, &dk) ||
                 __builtin_mul_overflow(w.in[i] - 1, w.stride[i], &out) ||
                 __builtin_add_overflow(out, dk, &out) ||
                 __builtin_add_overflow(out, out_pad[i], &out) ||
                 __builtin_sub_overflow(out, w.pad_begin[i], &out) ||
                 __builtin_sub_overflow(out, w.pad_end[i], &out);
    if (wraps) {
      return Status::Error("the output size along spatial dim " + Str(static_cast<int64_t>(i)) +
                           " overflows (strides, dilation, padding or output_padding)");
    }
    w.out[i] = out;
    if (w.out[i] < 0) {
      return Status::Error("output size " + Str(w.out[i]) + " along spatial dim " +
                           Str(static_cast<int64_t>(i)) + " is negative");
    }
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, OutShape(n, o, w), &y));
  // A fused epilogue (as a conv's, fuse_epilogue.cc): read before the output is written.
  // PrepareEpilogue needs the output channels and the output alone.
  ConvGeometry geo;
  geo.o = o;
  geo.y = y;
  QUILT_RETURN_IF_ERROR(PrepareEpilogue(ctx, &geo));
  const int64_t out_size = w.OutSize();
  if (fast && x.dtype == DType::kFloat32) {
    // The epilogue in the products as they are stored where the kernel can (none with a
    // residual), else a pass over each output channel's plane after.
    nn::Epilogue epilogue(geo);
    const float* res = geo.residual ? geo.residual->Data<float>() : nullptr;
    const bool finished = nn::ConvTransposeFloat(
        x.Data<float>(), wt.Data<float>(), y->MutableData<float>(), n, groups, cg, og, w,
        ctx.thread_pool(), ctx.constant_input(1) ? ctx.cache() : nullptr,
        epilogue.active && !res ? &epilogue : nullptr);
    if (!epilogue.active || finished || out_size == 0) return Status::Ok();
    float* py = y->MutableData<float>();
    ctx.ParallelFor(n * o, std::max<int64_t>(1, 4096 / out_size), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        if (res) {
          FinishRowWith(epilogue.e, py + r * out_size, out_size, r % o, res + r * out_size);
        } else {
          FinishRow(epilogue.e, py + r * out_size, out_size, r % o);
        }
      }
    });
    return Status::Ok();
  }
  std::vector<double> acc(static_cast<size_t>(n * o * w.OutSize()), 0.0);
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    const T* pw = wt.Data<T>();
    int64_t xi = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ci = 0; ci < c; ++ci) {
        int64_t g = ci / cg;
        for (int64_t i0 = 0; i0 < w.in[0]; ++i0) {
          for (int64_t i1 = 0; i1 < w.in[1]; ++i1) {
            for (int64_t i2 = 0; i2 < w.in[2]; ++i2) {
              double xv = static_cast<double>(Load(px[xi++]));
              for (int64_t oc = 0; oc < og; ++oc) {
                int64_t yc = (b * o + g * og + oc) * w.OutSize();
                int64_t wc = (ci * og + oc) * w.KernelSize();
                for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
                  int64_t o0 = i0 * w.stride[0] - w.pad_begin[0] + k0 * w.dilation[0];
                  if (o0 < 0 || o0 >= w.out[0]) continue;
                  for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
                    int64_t o1 = i1 * w.stride[1] - w.pad_begin[1] + k1 * w.dilation[1];
                    if (o1 < 0 || o1 >= w.out[1]) continue;
                    for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
                      int64_t o2 = i2 * w.stride[2] - w.pad_begin[2] + k2 * w.dilation[2];
                      if (o2 < 0 || o2 >= w.out[2]) continue;
                      double wv = static_cast<double>(
                          Load(pw[wc + (k0 * w.kernel[1] + k1) * w.kernel[2] + k2]));
                      acc[yc + (o0 * w.out[1] + o1) * w.out[2] + o2] += xv * wv;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
    T* py = y->MutableData<T>();
    const ReferenceEpilogue<T> epilogue{geo};
    for (size_t i = 0; i < acc.size(); ++i) {
      int64_t yi = static_cast<int64_t>(i);
      py[i] = epilogue(acc[i], yi / std::max<int64_t>(1, out_size) % o, yi);
    }
    return Status::Ok();
  });
}

// Column blocks (N, C * prod(block), L) summed into images (N, C, image...).
Status Col2Im(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() != 3) return Status::Error("data must have rank 3, got " + Str(x.rank()));
  Shape image = ctx.attrs().Ints("image_shape");
  Shape block = ctx.attrs().Ints("block_shape");
  Window w;
  QUILT_RETURN_IF_ERROR(MakeWindow(ctx.attrs(), image, block, &w));
  int64_t bsize = w.KernelSize();
  int64_t n = x.shape[0];
  if (x.shape[1] % bsize != 0 || x.shape[2] != w.OutSize()) {
    return Status::Error("data " + rt::ShapeString(x.shape) + " does not hold " + Str(w.OutSize()) +
                         " blocks of " + Str(bsize) + " values per channel");
  }
  int64_t c = x.shape[1] / bsize;
  Shape shape = {n, c};
  for (int64_t d : image) shape.push_back(d);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, shape, &y));
  std::vector<double> acc(static_cast<size_t>(n * c * w.InSize()), 0.0);
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    int64_t xi = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t yc = (b * c + ch) * w.InSize();
        for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
          for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
            for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
              for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
                for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
                  for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
                    double v = static_cast<double>(Load(px[xi++]));
                    int64_t i0 = o0 * w.stride[0] - w.pad_begin[0] + k0 * w.dilation[0];
                    int64_t i1 = o1 * w.stride[1] - w.pad_begin[1] + k1 * w.dilation[1];
                    int64_t i2 = o2 * w.stride[2] - w.pad_begin[2] + k2 * w.dilation[2];
                    if (i0 < 0 || i0 >= w.in[0] || i1 < 0 || i1 >= w.in[1] || i2 < 0 ||
                        i2 >= w.in[2]) {
                      continue;
                    }
                    acc[yc + (i0 * w.in[1] + i1) * w.in[2] + i2] += v;
                  }
                }
              }
            }
          }
        }
      }
    }
    T* py = y->MutableData<T>();
    for (size_t i = 0; i < acc.size(); ++i) py[i] = Store<T>(static_cast<Compute<T>>(acc[i]));
    return Status::Ok();
  });
}

// Depth <-> space by copying whole elements (any element type of whole bytes).
template <bool kToSpace>
Status SpaceDepth(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() != 4) return Status::Error("data must have rank 4, got " + Str(x.rank()));
  int bits = rt::DTypeBits(x.dtype);
  if (bits == 0 || bits % 8 != 0) return Unsupported(x.dtype);
  size_t es = static_cast<size_t>(bits / 8);
  int64_t bs = ctx.attrs().Int("block_size", 1);
  std::string_view mode = ctx.attrs().Str("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") {
    return Status::Error("mode must be DCR or CRD, got '" + std::string(mode) + "'");
  }
  bool dcr = mode == "DCR";
  if (bs < 1) return Status::Error("block_size must be positive, got " + Str(bs));
  int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const auto* src = static_cast<const uint8_t*>(x.data);
  Tensor* y;
  if (kToSpace) {
    int64_t bs2, oh_size, ow_size;
    if (__builtin_mul_overflow(bs, bs, &bs2) || __builtin_mul_overflow(h, bs, &oh_size) ||
        __builtin_mul_overflow(wd, bs, &ow_size)) {
      return Status::Error("block_size " + Str(bs) + " is too large for " +
                           rt::ShapeString(x.shape));
    }
    if (c % bs2 != 0) {
      return Status::Error("block_size^2 = " + Str(bs2) + " does not divide " + Str(c) +
                           " channels");
    }
    int64_t co = c / bs2;
    QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, {n, co, oh_size, ow_size}, &y));
    auto* dst = static_cast<uint8_t*>(y->data);
    int64_t yi = 0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t oc = 0; oc < co; ++oc) {
        for (int64_t oh = 0; oh < h * bs; ++oh) {
          for (int64_t ow = 0; ow < wd * bs; ++ow) {
            int64_t bh = oh % bs, bw = ow % bs;
            int64_t ic = dcr ? (bh * bs + bw) * co + oc : (oc * bs + bh) * bs + bw;
            int64_t xi = ((b * c + ic) * h + oh / bs) * wd + ow / bs;
            std::memcpy(dst + es * yi++, src + es * xi, es);
          }
        }
      }
    }
    return Status::Ok();
  }
  if (h % bs != 0 || wd % bs != 0) {
    return Status::Error("block_size " + Str(bs) + " does not divide the spatial dims of " +
                         rt::ShapeString(x.shape));
  }
  int64_t co, ho = h / bs, wo = wd / bs;
  if (__builtin_mul_overflow(c, bs, &co) || __builtin_mul_overflow(co, bs, &co)) {
    return Status::Error("block_size " + Str(bs) + " is too large for " + rt::ShapeString(x.shape));
  }
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, {n, co, ho, wo}, &y));
  auto* dst = static_cast<uint8_t*>(y->data);
  int64_t yi = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oc = 0; oc < co; ++oc) {
      int64_t ic = dcr ? oc % c : oc / (bs * bs);
      int64_t blk = dcr ? oc / c : oc % (bs * bs);
      int64_t bh = blk / bs, bw = blk % bs;
      for (int64_t oh = 0; oh < ho; ++oh) {
        for (int64_t ow = 0; ow < wo; ++ow) {
          int64_t xi = ((b * c + ic) * h + oh * bs + bh) * wd + ow * bs + bw;
          std::memcpy(dst + es * yi++, src + es * xi, es);
        }
      }
    }
  }
  return Status::Ok();
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("nn.conv1d", ConvFast),
    Kernel("nn.conv2d", ConvFast),
    Kernel("nn.conv3d", ConvFast),
    Kernel(nn::kConvNchw16c, nn::ConvBlocked),
    Kernel(nn::kToNchw16c, nn::ToBlocked),
    Kernel(nn::kFromNchw16c, nn::FromBlocked),
    Kernel(nn::kMaxPoolNchw16c, nn::MaxPoolBlocked),
    Kernel(nn::kGlobalAvgPoolNchw16c, nn::GlobalAvgPoolBlocked),
    Kernel(nn::kGateNchw16c, nn::GateBlocked),
    Kernel("nn.conv1d_transpose", nn::ConvTransposeFast),
    Kernel("nn.conv2d_transpose", nn::ConvTransposeFast),
    Kernel("nn.conv3d_transpose", nn::ConvTransposeFast),
    Kernel("nn.col2im", Col2Im),
    Kernel("nn.depth_to_space", SpaceDepth<true>),
    Kernel("nn.space_to_depth", SpaceDepth<false>),
    Kernel("nn.max_pool1d", MaxPoolFast),
    Kernel("nn.max_pool2d", MaxPoolFast),
    Kernel("nn.max_pool3d", MaxPoolFast),
    Kernel("nn.max_pool1d_with_indices", MaxPoolWithIndices),
    Kernel("nn.max_pool2d_with_indices", MaxPoolWithIndices),
    Kernel("nn.max_pool3d_with_indices", MaxPoolWithIndices),
    Kernel("nn.avg_pool1d", AvgPoolFast),
    Kernel("nn.avg_pool2d", AvgPoolFast),
    Kernel("nn.avg_pool3d", AvgPoolFast),
    Kernel("nn.lp_pool1d", LpPool),
    Kernel("nn.lp_pool2d", LpPool),
    Kernel("nn.lp_pool3d", LpPool),
    Kernel("nn.adaptive_avg_pool1d", AdaptiveAvgPoolFast),
    Kernel("nn.adaptive_avg_pool2d", AdaptiveAvgPoolFast),
    Kernel("nn.adaptive_avg_pool3d", AdaptiveAvgPoolFast),
    Kernel("nn.adaptive_max_pool1d", AdaptiveMaxPoolFast),
    Kernel("nn.adaptive_max_pool2d", AdaptiveMaxPoolFast),
    Kernel("nn.adaptive_max_pool3d", AdaptiveMaxPoolFast),
    Kernel("nn.max_unpool1d", MaxUnpool),
    Kernel("nn.max_unpool2d", MaxUnpool),
    Kernel("nn.max_unpool3d", MaxUnpool),
};

}  // namespace
}  // namespace nn

std::span<const rt::KernelEntry> ConvKernels() { return nn::kKernels; }

Status nn::ConvTransposeReference(KernelContext& ctx) { return ConvTransposeImpl(ctx, false); }
Status nn::ConvTransposeFast(KernelContext& ctx) { return ConvTransposeImpl(ctx, true); }

}  // namespace quilt::cpu
