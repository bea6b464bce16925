// Converters of the nn category: convolution, pooling, normalization, softmax, activations,
// dropout, the depth/space rearrangements and TfIdfVectorizer. Windows (kernel, strides, pads,
// dilations) are written out in full; auto_pad is resolved to explicit pads when the spatial dims
// are static.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

#define NN_TRY(var, expr) \
  auto var = (expr);      \
  if (!var) return var.error()

std::string Str(int64_t v) { return std::to_string(v); }

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Expected<double> FloatAttr(NodeContext& ctx, const std::string& name, double fallback) {
  Expected<double> v = ctx.Float(name, fallback);
  if (!v) return v;
  return ShortestFloat32(*v);
}

ir::DataType DtypeOf(const ir::Expr& e) { return e ? e->struct_info->dtype : ir::DataType::kVoid; }

// The rank of input i, which must be known.
Expected<int> RankOf(NodeContext& ctx, int i) {
  ir::Expr x = ctx.Input(i);
  if (!x) return ctx.Error("input " + Str(i) + " is required");
  int n = x->struct_info->ndim;
  if (n < 0) return ctx.Error("the rank of input " + Str(i) + " must be known");
  return n;
}

// The number of spatial dims of input 0 (N, C, spatial...), 1 to 3.
Expected<int> SpatialRankOf(NodeContext& ctx) {
  NN_TRY(n, RankOf(ctx, 0));
  if (*n < 3)
    return ctx.Error("the input must have rank 3 or more (N, C, spatial...), got " + Str(*n));
  if (*n > 5) return ctx.Error(Str(*n - 2) + " spatial dims are not supported (1 to 3 are)");
  return *n - 2;
}

OpKind PerRank(const OpKind (&ops)[3], int r) { return ops[r - 1]; }

// Static spatial dims of input 0, or nullopt.
std::optional<Ints> StaticSpatial(NodeContext& ctx) {
  const ir::StructInfo& s = ctx.InputSInfo(0);
  std::optional<Ints> all = s->StaticShape();
  if (!all) {
    if (!s->shape) return std::nullopt;
    Ints out;
    for (size_t i = 2; i < s->shape->size(); ++i) {
      std::optional<int64_t> v = ir::AsInt((*s->shape)[i]);
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
  return Ints(all->begin() + 2, all->end());
}

Expected<Ints> IntsOfSize(NodeContext& ctx, const std::string& name, size_t n, int64_t fill) {
  NN_TRY(v, ctx.Ints(name, Ints(n, fill)));
  if (v->size() != n) {
    return ctx.Error("attribute '" + name + "' has " + Str(v->size()) + " values, expected " +
                     Str(n));
  }
  return *v;
}

// Kernel, strides, dilations, pads and auto_pad of a conv or pool, with auto_pad resolved to
// pads when the spatial dims are static.
struct Window {
  Ints kernel, strides, dilations, pads;
  std::string auto_pad = "NOTSET";        // left for the op: SAME_* over symbolic dims
  std::string given_auto_pad = "NOTSET";  // as the model wrote it
};

Expected<Window> ReadWindow(NodeContext& ctx, int r, const Ints& kernel, bool has_dilations) {
  Window w;
  w.kernel = kernel;
  NN_TRY(strides, IntsOfSize(ctx, "strides", r, 1));
  w.strides = *strides;
  w.dilations = Ints(r, 1);
  if (has_dilations) {
    NN_TRY(d, IntsOfSize(ctx, "dilations", r, 1));
    w.dilations = *d;
  }
  NN_TRY(pads, IntsOfSize(ctx, "pads", 2 * r, 0));
  w.pads = *pads;
  NN_TRY(auto_pad, ctx.String("auto_pad", "NOTSET"));
  w.auto_pad = auto_pad->empty() ? "NOTSET" : *auto_pad;
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
      w.auto_pad != "VALID") {
    return ctx.Error("attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" +
                     w.auto_pad + "'");
  }
  w.given_auto_pad = w.auto_pad;
  for (int i = 0; i < r; ++i) {
    if (w.strides[i] < 1) return ctx.Error("strides must be positive, got " + Str(w.strides[i]));
    if (w.dilations[i] < 1)
      return ctx.Error("dilations must be positive, got " + Str(w.dilations[i]));
  }
  if (w.auto_pad == "VALID") {
    w.pads = Ints(2 * r, 0);
    w.auto_pad = "NOTSET";
  } else if (w.auto_pad != "NOTSET") {
    std::optional<Ints> in = StaticSpatial(ctx);
    bool known = in.has_value();
    for (int64_t k : kernel) known &= k > 0;
    if (known) {
      for (int i = 0; i < r; ++i) {
        int64_t s = w.strides[i], dk = (kernel[i] - 1) * w.dilations[i] + 1;
        int64_t out = ((*in)[i] + s - 1) / s;
        int64_t total = std::max<int64_t>(0, (out - 1) * s + dk - (*in)[i]);
        bool upper = w.auto_pad == "SAME_UPPER";
        w.pads[i] = upper ? total / 2 : total - total / 2;
        w.pads[r + i] = total - w.pads[i];
      }
      w.auto_pad = "NOTSET";
    } else {
      w.pads = Ints(2 * r, 0);
    }
  }
  return w;
}

void SetWindow(ir::Attrs& a, const Window& w, bool with_dilation = true) {
  a.Set("strides", w.strides);
  a.Set("padding", w.pads);
  if (with_dilation) a.Set("dilation", w.dilations);
}

// Adds a per-channel bias (M,) to an (N, M, spatial...) result.
Expected<ir::Expr> AddChannelBias(NodeContext& ctx, ir::Expr y, int bias_input, int r) {
  if (!ctx.HasInput(bias_input)) return y;
  Ints axes = {0};
  for (int i = 0; i < r; ++i) axes.push_back(2 + i);
  ir::Attrs a;
  a.Set("axis", axes);
  NN_TRY(b, ctx.Emit(OpKind::kExpandDims, {ctx.Input(bias_input)}, a));
  return ctx.Emit(OpKind::kAdd, {y, *b});
}

// Kernel dims from kernel_shape or the weight's static dims (-1 where unknown).
Expected<Ints> KernelFrom(NodeContext& ctx, int r, int weight) {
  Ints k(r, -1);
  const ir::StructInfo& ws = ctx.InputSInfo(weight);
  if (ws->shape && static_cast<int>(ws->shape->size()) == r + 2) {
    for (int i = 0; i < r; ++i) {
      if (auto v = ir::AsInt((*ws->shape)[2 + i])) k[i] = *v;
    }
  }
  if (ctx.Attr("kernel_shape")) {
    NN_TRY(ks, IntsOfSize(ctx, "kernel_shape", r, 1));
    for (int i = 0; i < r; ++i) {
      if (k[i] >= 0 && k[i] != (*ks)[i]) {
        return ctx.Error("kernel_shape " + Str((*ks)[i]) + " differs from the weight's dim " +
                         Str(k[i]) + " along spatial dim " + Str(i));
      }
      k[i] = (*ks)[i];
    }
  }
  return k;
}

Expected<Outputs> Conv(NodeContext& ctx) {
  NN_TRY(r, SpatialRankOf(ctx));
  if (!ctx.HasInput(1)) return ctx.Error("Conv needs a weight input");
  NN_TRY(kernel, KernelFrom(ctx, *r, 1));
  NN_TRY(w, ReadWindow(ctx, *r, *kernel, true));
  NN_TRY(group, ctx.Int("group", 1));
  ir::Attrs a;
  SetWindow(a, *w);
  a.Set("groups", *group);
  if (w->auto_pad != "NOTSET") a.Set("auto_pad", w->auto_pad);
  static const OpKind kOps[3] = {OpKind::kConv1d, OpKind::kConv2d, OpKind::kConv3d};
  NN_TRY(y, ctx.Emit(PerRank(kOps, *r), {ctx.Input(0), ctx.Input(1)}, a));
  return NodeContext::Single(AddChannelBias(ctx, *y, 2, *r));
}

Expected<Outputs> ConvTranspose(NodeContext& ctx) {
  NN_TRY(r, SpatialRankOf(ctx));
  if (!ctx.HasInput(1)) return ctx.Error("ConvTranspose needs a weight input");
  NN_TRY(kernel, KernelFrom(ctx, *r, 1));
  NN_TRY(strides, IntsOfSize(ctx, "strides", *r, 1));
  NN_TRY(dil, IntsOfSize(ctx, "dilations", *r, 1));
  NN_TRY(pads, IntsOfSize(ctx, "pads", 2 * *r, 0));
  NN_TRY(out_pad, IntsOfSize(ctx, "output_padding", *r, 0));
  NN_TRY(group, ctx.Int("group", 1));
  NN_TRY(auto_pad, ctx.String("auto_pad", "NOTSET"));
  std::string mode = auto_pad->empty() ? "NOTSET" : *auto_pad;
  bool same = mode == "SAME_UPPER" || mode == "SAME_LOWER";
  if (!same && mode != "NOTSET" && mode != "VALID") {
    return ctx.Error("attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" +
                     mode + "'");
  }
  Ints p = mode == "VALID" ? Ints(2 * *r, 0) : *pads;
  if (ctx.Attr("output_shape") || same) {
    // The pads come from the wanted output size: total = stride * (in - 1) + output_padding +
    // dilated kernel - out, split with the odd one at the beginning unless SAME_UPPER.
    std::optional<Ints> in = StaticSpatial(ctx);
    if (!in) return ctx.Error("output_shape and SAME auto_pad need static spatial input dims");
    Ints out(*r);
    for (int i = 0; i < *r; ++i) out[i] = (*in)[i] * (*strides)[i];
    if (ctx.Attr("output_shape")) {
      NN_TRY(os, ctx.Ints("output_shape"));
      if (static_cast<int>(os->size()) < *r) {
        return ctx.Error("attribute 'output_shape' has " + Str(os->size()) + " values, expected " +
                         Str(*r));
      }
      out.assign(os->end() - *r, os->end());
    }
    for (int i = 0; i < *r; ++i) {
      if ((*kernel)[i] < 0) return ctx.Error("the kernel size must be known");
      int64_t dk = ((*kernel)[i] - 1) * (*dil)[i] + 1;
      int64_t total = (*strides)[i] * ((*in)[i] - 1) + (*out_pad)[i] + dk - out[i];
      int64_t half = FloorDiv(total, 2);
      p[i] = mode == "SAME_UPPER" ? half : total - half;
      p[*r + i] = total - p[i];
    }
  }
  ir::Attrs a;
  a.Set("strides", *strides);
  a.Set("padding", p);
  a.Set("output_padding", *out_pad);
  a.Set("dilation", *dil);
  a.Set("groups", *group);
  static const OpKind kOps[3] = {OpKind::kConv1dTranspose, OpKind::kConv2dTranspose,
                                 OpKind::kConv3dTranspose};
  NN_TRY(y, ctx.Emit(PerRank(kOps, *r), {ctx.Input(0), ctx.Input(1)}, a));
  return NodeContext::Single(AddChannelBias(ctx, *y, 2, *r));
}

// MaxPool, AveragePool, LpPool: which attributes exist depends on the opset.
enum class PoolKind { kMax, kAvg, kLp };

Expected<Outputs> Pool(NodeContext& ctx, PoolKind kind) {
  NN_TRY(r, SpatialRankOf(ctx));
  NN_TRY(kernel, IntsOfSize(ctx, "kernel_shape", *r, 1));
  if (!ctx.Attr("kernel_shape")) return ctx.Error("missing required attribute 'kernel_shape'");
  for (int64_t k : *kernel) {
    if (k < 1) return ctx.Error("kernel_shape must be positive, got " + Str(k));
  }
  int64_t v = ctx.opset();
  bool has_dilations = kind == PoolKind::kMax   ? v >= 10
                       : kind == PoolKind::kAvg ? v >= 19
                                                : v >= 18;
  bool has_ceil = kind == PoolKind::kLp ? v >= 18 : v >= 10;
  NN_TRY(w, ReadWindow(ctx, *r, *kernel, has_dilations));
  ir::Attrs a;
  a.Set("pool_size", *kernel);
  if (kind == PoolKind::kLp) {
    const ::onnx::AttributeProto* pa = ctx.Attr("p");
    double p = 2.0;
    if (pa && pa->type() == ::onnx::AttributeProto::FLOAT) {
      NN_TRY(f, FloatAttr(ctx, "p", 2.0));
      p = *f;
    } else if (pa) {
      NN_TRY(i, ctx.Int("p", 2));
      p = static_cast<double>(*i);
    }
    if (!(p > 0)) return ctx.Error("attribute 'p' must be positive");
    a.Set("p", p);
  }
  SetWindow(a, *w);
  if (has_ceil && w->given_auto_pad != "SAME_UPPER" && w->given_auto_pad != "SAME_LOWER") {
    // SAME sizes do not depend on ceil_mode; VALID is explicit zero pads.
    NN_TRY(ceil, ctx.Int("ceil_mode", 0));
    a.Set("ceil_mode", *ceil != 0);
  }
  if (kind == PoolKind::kAvg) {
    NN_TRY(cip, ctx.Int("count_include_pad", 0));
    a.Set("count_include_pad", *cip != 0);
  }
  if (w->auto_pad != "NOTSET") a.Set("auto_pad", w->auto_pad);
  static const OpKind kMax[3] = {OpKind::kMaxPool1d, OpKind::kMaxPool2d, OpKind::kMaxPool3d};
  static const OpKind kMaxIdx[3] = {OpKind::kMaxPool1dWithIndices, OpKind::kMaxPool2dWithIndices,
                                    OpKind::kMaxPool3dWithIndices};
  static const OpKind kAvg[3] = {OpKind::kAvgPool1d, OpKind::kAvgPool2d, OpKind::kAvgPool3d};
  static const OpKind kLp[3] = {OpKind::kLpPool1d, OpKind::kLpPool2d, OpKind::kLpPool3d};
  if (kind == PoolKind::kMax && ctx.HasOutput(1)) {
    NN_TRY(order, ctx.Int("storage_order", 0));
    a.Set("storage_order", *order);
    NN_TRY(t, ctx.Emit(PerRank(kMaxIdx, *r), {ctx.Input(0)}, a));
    NN_TRY(values, ir::MakeTupleGetItem(*t, 0));
    NN_TRY(indices, ir::MakeTupleGetItem(*t, 1));
    return Outputs{*values, *indices};
  }
  const OpKind(&ops)[3] = kind == PoolKind::kMax ? kMax : kind == PoolKind::kAvg ? kAvg : kLp;
  return NodeContext::Single(ctx.Emit(PerRank(ops, *r), {ctx.Input(0)}, a));
}

Expected<Outputs> MaxPool(NodeContext& ctx) { return Pool(ctx, PoolKind::kMax); }
Expected<Outputs> AveragePool(NodeContext& ctx) { return Pool(ctx, PoolKind::kAvg); }
Expected<Outputs> LpPool(NodeContext& ctx) { return Pool(ctx, PoolKind::kLp); }

template <bool kMax>
Expected<Outputs> GlobalPool(NodeContext& ctx) {
  NN_TRY(r, SpatialRankOf(ctx));
  ir::Attrs a;
  a.Set("output_size", Ints(*r, 1));
  static const OpKind kAvgOps[3] = {OpKind::kAdaptiveAvgPool1d, OpKind::kAdaptiveAvgPool2d,
                                    OpKind::kAdaptiveAvgPool3d};
  static const OpKind kMaxOps[3] = {OpKind::kAdaptiveMaxPool1d, OpKind::kAdaptiveMaxPool2d,
                                    OpKind::kAdaptiveMaxPool3d};
  return NodeContext::Single(ctx.Emit(PerRank(kMax ? kMaxOps : kAvgOps, *r), {ctx.Input(0)}, a));
}

Expected<Outputs> MaxUnpool(NodeContext& ctx) {
  NN_TRY(r, SpatialRankOf(ctx));
  if (!ctx.Attr("kernel_shape")) return ctx.Error("missing required attribute 'kernel_shape'");
  NN_TRY(kernel, IntsOfSize(ctx, "kernel_shape", *r, 1));
  NN_TRY(strides, IntsOfSize(ctx, "strides", *r, 1));
  NN_TRY(pads, IntsOfSize(ctx, "pads", 2 * *r, 0));
  ir::Attrs a;
  a.Set("pool_size", *kernel);
  a.Set("strides", *strides);
  a.Set("padding", *pads);
  if (ctx.HasInput(2)) {
    std::optional<Ints> shape = ctx.KnownInts(2);
    if (!shape) return ctx.Error("input 'output_shape' must be a constant");
    if (static_cast<int>(shape->size()) != *r + 2) {
      return ctx.Error("input 'output_shape' has " + Str(shape->size()) + " values, expected " +
                       Str(*r + 2));
    }
    a.Set("output_size", *shape);
  }
  static const OpKind kOps[3] = {OpKind::kMaxUnpool1d, OpKind::kMaxUnpool2d, OpKind::kMaxUnpool3d};
  return NodeContext::Single(ctx.Emit(PerRank(kOps, *r), {ctx.Input(0), ctx.Input(1)}, a));
}

Expected<Outputs> Col2Im(NodeContext& ctx) {
  std::optional<Ints> image = ctx.KnownInts(1), block = ctx.KnownInts(2);
  if (!image || !block)
    return ctx.Error("inputs 'image_shape' and 'block_shape' must be constants");
  size_t r = image->size();
  NN_TRY(strides, IntsOfSize(ctx, "strides", r, 1));
  NN_TRY(dil, IntsOfSize(ctx, "dilations", r, 1));
  NN_TRY(pads, IntsOfSize(ctx, "pads", 2 * r, 0));
  ir::Attrs a;
  a.Set("image_shape", *image);
  a.Set("block_shape", *block);
  a.Set("strides", *strides);
  a.Set("padding", *pads);
  a.Set("dilation", *dil);
  return NodeContext::Single(ctx.Emit(OpKind::kCol2Im, {ctx.Input(0)}, a));
}

template <OpKind kOp>
Expected<Outputs> SpaceDepth(NodeContext& ctx) {
  NN_TRY(b, ctx.Int("blocksize"));
  std::string mode = "DCR";
  bool has_mode = kOp == OpKind::kDepthToSpace ? ctx.opset() >= 11 : ctx.opset() >= 28;
  if (has_mode) {
    NN_TRY(m, ctx.String("mode", "DCR"));
    mode = *m;
  }
  ir::Attrs a;
  a.Set("block_size", *b);
  a.Set("mode", mode);
  return NodeContext::Single(ctx.Emit(kOp, {ctx.Input(0)}, a));
}

// --- Normalization ---

Ints Range(int64_t begin, int64_t end) {
  Ints out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

Expected<Outputs> BatchNormalization(NodeContext& ctx) {
  for (int i = 1; i < 5; ++i) {
    if (!ctx.HasInput(i)) return ctx.Error("BatchNormalization needs 5 inputs");
  }
  if (ctx.opset() >= 14) {
    NN_TRY(training, ctx.Int("training_mode", 0));
    if (*training) return ctx.Error("training_mode=1 (batch statistics) is not supported");
  }
  for (int i = 1; i < ctx.NumOutputs(); ++i) {
    if (ctx.HasOutput(i)) {
      return ctx.Error("output " + Str(i) + " (a training statistic) is not supported");
    }
  }
  NN_TRY(eps, FloatAttr(ctx, "epsilon", 1e-5));
  int64_t spatial = 1;
  if (ctx.opset() < 9) {
    NN_TRY(s, ctx.Int("spatial", 1));
    spatial = *s;
  }
  if (spatial == 0) {
    // Per-activation statistics (C, D1, ...): the parameters broadcast against x exactly as
    // written, so the formula is spelled out.
    ir::Expr x = ctx.Input(0);
    NN_TRY(e, ctx.ScalarConst(DtypeOf(x), *eps));
    NN_TRY(centered, ctx.Emit(OpKind::kSubtract, {x, ctx.Input(3)}));
    NN_TRY(var, ctx.Emit(OpKind::kAdd, {ctx.Input(4), *e}));
    NN_TRY(sd, ctx.Emit(OpKind::kSqrt, {*var}));
    NN_TRY(norm, ctx.Emit(OpKind::kDivide, {*centered, *sd}));
    NN_TRY(scaled, ctx.Emit(OpKind::kMultiply, {*norm, ctx.Input(1)}));
    return NodeContext::Single(ctx.Emit(OpKind::kAdd, {*scaled, ctx.Input(2)}));
  }
  ir::Attrs a;
  a.Set("axis", int64_t{1});
  a.Set("epsilon", *eps);
  a.Set("training", false);
  NN_TRY(t, ctx.Emit(OpKind::kBatchNorm,
                     {ctx.Input(0), ctx.Input(1), ctx.Input(2), ctx.Input(3), ctx.Input(4)}, a));
  NN_TRY(y, ir::MakeTupleGetItem(*t, 0));
  return Outputs{*y};
}

Expected<Outputs> InstanceNormalization(NodeContext& ctx) {
  NN_TRY(n, RankOf(ctx, 0));
  if (*n < 3) return ctx.Error("the input must have rank 3 or more (N, C, spatial...)");
  NN_TRY(eps, FloatAttr(ctx, "epsilon", 1e-5));
  ir::Attrs a;
  a.Set("channel_axis", int64_t{1});
  a.Set("axes", Range(2, *n));
  a.Set("epsilon", *eps);
  return NodeContext::Single(
      ctx.Emit(OpKind::kInstanceNorm, {ctx.Input(0), ctx.Input(1), ctx.Input(2)}, a));
}

// A zero of x's dtype, for a missing bias.
Expected<ir::Expr> ZeroLike(NodeContext& ctx, const ir::Expr& x) {
  Expected<ir::Expr> z = ctx.ScalarConst(DtypeOf(x), 0);
  if (!z) return ctx.Error(z.error().message);
  return z;
}

Expected<Outputs> LayerNormalization(NodeContext& ctx) {
  NN_TRY(n, RankOf(ctx, 0));
  NN_TRY(axis, ctx.Int("axis", -1));
  NN_TRY(eps, FloatAttr(ctx, "epsilon", 1e-5));
  NN_TRY(stash, ctx.Int("stash_type", 1));
  int64_t first = *axis < 0 ? *axis + *n : *axis;
  if (first < 0 || first >= *n) {
    return ctx.Error("axis " + Str(*axis) + " is out of range for rank " + Str(*n));
  }
  ir::Expr x = ctx.Input(0);
  if (!ctx.HasInput(1)) return ctx.Error("LayerNormalization needs a scale input");
  ir::Expr bias = ctx.Input(2);
  if (!bias) {
    NN_TRY(z, ZeroLike(ctx, x));
    bias = *z;
  }
  ir::Attrs a;
  a.Set("axes", Range(first, *n));
  a.Set("epsilon", *eps);
  NN_TRY(y, ctx.Emit(OpKind::kLayerNorm, {x, ctx.Input(1), bias}, a));
  Outputs outs = {*y};
  if (ctx.HasOutput(1) || ctx.HasOutput(2)) {
    ir::Attrs s;
    s.Set("axes", Range(first, *n));
    s.Set("epsilon", *eps);
    s.Set("dtype", static_cast<ir::DataType>(*stash));
    NN_TRY(t, ctx.Emit(OpKind::kLayerNormStats, {x}, s, 1));
    NN_TRY(mean, ir::MakeTupleGetItem(*t, 0));
    NN_TRY(inv, ir::MakeTupleGetItem(*t, 1));
    outs.push_back(*mean);
    outs.push_back(*inv);
  }
  return outs;
}

Expected<Outputs> GroupNormalization(NodeContext& ctx) {
  NN_TRY(n, RankOf(ctx, 0));
  if (*n < 3) return ctx.Error("the input must have rank 3 or more (N, C, spatial...)");
  NN_TRY(groups, ctx.Int("num_groups"));
  NN_TRY(eps, FloatAttr(ctx, "epsilon", 1e-5));
  ir::Expr scale = ctx.Input(1), bias = ctx.Input(2);
  if (!scale || !bias) return ctx.Error("GroupNormalization needs scale and bias inputs");
  const ir::StructInfo& xs = ctx.InputSInfo(0);
  std::optional<int64_t> c;
  if (xs->shape) c = ir::AsInt((*xs->shape)[1]);
  if (ctx.opset() < 21 && c && *groups > 0 && *c != *groups && *c % *groups == 0) {
    // Opset 18: one scale and bias per group; repeat each over the group's channels.
    int64_t per = *c / *groups;
    std::vector<float> ones(per, 1.0f);
    if (DtypeOf(scale) != ir::DataType::kFloat32) {
      return ctx.Error("per-group scale of type " + std::string(ir::DataTypeName(DtypeOf(scale))) +
                       " is not supported");
    }
    NN_TRY(ones_c, ctx.Const(ir::DataType::kFloat32, {1, per}, ones.data()));
    for (ir::Expr* p : {&scale, &bias}) {
      NN_TRY(col, ctx.Emit(OpKind::kReshape,
                           {*p, ir::MakeShapeExpr({ir::IntImm(*groups), ir::IntImm(1)})}));
      NN_TRY(rep, ctx.Emit(OpKind::kMultiply, {*col, *ones_c}));
      NN_TRY(flat, ctx.Emit(OpKind::kReshape, {*rep, ir::MakeShapeExpr({ir::IntImm(*c)})}));
      *p = *flat;
    }
  }
  ir::Attrs a;
  a.Set("num_groups", *groups);
  a.Set("channel_axis", int64_t{1});
  a.Set("axes", Range(2, *n));
  a.Set("epsilon", *eps);
  return NodeContext::Single(ctx.Emit(OpKind::kGroupNorm, {ctx.Input(0), scale, bias}, a));
}

Expected<Outputs> RMSNormalization(NodeContext& ctx) {
  NN_TRY(n, RankOf(ctx, 0));
  NN_TRY(axis, ctx.Int("axis", -1));
  NN_TRY(eps, FloatAttr(ctx, "epsilon", 1e-5));
  int64_t first = *axis < 0 ? *axis + *n : *axis;
  if (first < 0 || first >= *n) {
    return ctx.Error("axis " + Str(*axis) + " is out of range for rank " + Str(*n));
  }
  ir::Attrs a;
  a.Set("axes", Range(first, *n));
  a.Set("epsilon", *eps);
  return NodeContext::Single(ctx.Emit(OpKind::kRmsNorm, {ctx.Input(0), ctx.Input(1)}, a));
}

Expected<Outputs> LpNormalization(NodeContext& ctx) {
  NN_TRY(axis, ctx.Int("axis", -1));
  NN_TRY(p, ctx.Int("p", 2));
  if (*p != 1 && *p != 2) return ctx.Error("attribute 'p' must be 1 or 2, got " + Str(*p));
  ir::Attrs a;
  a.Set("axis", *axis);
  a.Set("p", *p);
  return NodeContext::Single(ctx.Emit(OpKind::kLpNormalize, {ctx.Input(0)}, a));
}

Expected<Outputs> MeanVarianceNormalization(NodeContext& ctx) {
  NN_TRY(axes, ctx.Ints("axes", Ints{0, 2, 3}));
  ir::Attrs a;
  a.Set("axes", *axes);
  a.Set("epsilon", 1e-9);
  return NodeContext::Single(ctx.Emit(OpKind::kMeanVarianceNorm, {ctx.Input(0)}, a));
}

Expected<Outputs> LRN(NodeContext& ctx) {
  NN_TRY(size, ctx.Int("size"));
  NN_TRY(alpha, FloatAttr(ctx, "alpha", 1e-4));
  NN_TRY(beta, FloatAttr(ctx, "beta", 0.75));
  NN_TRY(bias, FloatAttr(ctx, "bias", 1.0));
  ir::Attrs a;
  a.Set("size", *size);
  a.Set("alpha", *alpha);
  a.Set("beta", *beta);
  a.Set("bias", *bias);
  a.Set("axis", int64_t{1});
  return NodeContext::Single(ctx.Emit(OpKind::kLrn, {ctx.Input(0)}, a));
}

// Dropout at inference: the input unchanged; the mask (when asked for) all ones.
Expected<Outputs> Dropout(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Dropout needs an input");
  double ratio = 0.5;
  if (ctx.opset() < 12) {
    NN_TRY(r, FloatAttr(ctx, "ratio", 0.5));
    ratio = *r;
  } else {
    // The ratio only matters in training mode; a ratio computed at run time is kept out.
    std::optional<std::vector<double>> r = ctx.ConstantFloats(1);
    if (ctx.HasInput(1) && r && r->size() == 1) ratio = ShortestFloat32((*r)[0]);
    bool ratio_known = !ctx.HasInput(1) || (r && r->size() == 1);
    if (ctx.HasInput(2)) {
      const ir::ConstantNode* t = ctx.ConstantInput(2);
      if (!t || t->dtype != ir::DataType::kBool || t->NumElements() != 1) {
        return ctx.Error("input 'training_mode' must be a constant bool (inference only)");
      }
      if ((*t->data)[0] != 0 && !(ratio_known && ratio == 0)) {
        return ctx.Error("training-mode dropout (random) is not supported");
      }
    }
  }
  if (!ctx.HasOutput(1)) return Outputs{x};
  ir::Attrs a;
  a.Set("rate", ratio);
  NN_TRY(t, ctx.Emit(OpKind::kDropout, {x}, a, 1));
  NN_TRY(y, ir::MakeTupleGetItem(*t, 0));
  NN_TRY(mask, ir::MakeTupleGetItem(*t, 1));
  if (ctx.opset() < 10) return Outputs{*y, *mask};
  ir::Attrs c;
  c.Set("dtype", ir::DataType::kBool);
  NN_TRY(m, ctx.Emit(OpKind::kAstype, {ctx.Bind(*mask, 1)}, c, 1));
  return Outputs{*y, *m};
}

// --- Softmax family ---

// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is seen as 2-D at `axis` (default 1):
// (prod(dims[:axis]), prod(dims[axis:])), which is a reshape around an op on the last axis.
template <OpKind kOp>
Expected<Outputs> SoftmaxLike(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("needs an input");
  if (ctx.opset() >= 13) {
    NN_TRY(axis, ctx.Int("axis", -1));
    ir::Attrs a;
    a.Set("axis", *axis);
    return NodeContext::Single(ctx.Emit(kOp, {x}, a));
  }
  NN_TRY(n, RankOf(ctx, 0));
  NN_TRY(axis, ctx.Int("axis", 1));
  int64_t k = *axis < 0 ? *axis + *n : *axis;
  if (k < 0 || k > *n || (*n > 0 && k == *n)) {
    return ctx.Error("axis " + Str(*axis) + " is out of range for rank " + Str(*n));
  }
  ir::Attrs a;
  a.Set("axis", int64_t{-1});
  if (k == *n - 1) return NodeContext::Single(ctx.Emit(kOp, {x}, a));
  const ir::StructInfo& s = x->struct_info;
  if (!s->shape)
    return ctx.Error("the input's shape must be known (coerced to 2-D before opset 13)");
  ir::PrimExpr rows = ir::IntImm(1), cols = ir::IntImm(1);
  for (int64_t i = 0; i < *n; ++i) {
    if (i < k) {
      rows = rows * (*s->shape)[i];
    } else {
      cols = cols * (*s->shape)[i];
    }
  }
  NN_TRY(flat, ctx.Emit(OpKind::kReshape, {x, ir::MakeShapeExpr({rows, cols})}));
  NN_TRY(y, ctx.Emit(kOp, {*flat}, a));
  return NodeContext::Single(ctx.Emit(OpKind::kReshape, {*y, ir::MakeShapeExpr(*s->shape)}));
}

// --- Activations ---

template <OpKind kOp>
Expected<Outputs> Activation(NodeContext& ctx) {
  return NodeContext::Single(ctx.Emit(kOp, {ctx.Input(0)}));
}

// An activation with float attributes (ONNX name, IR name, default).
struct FloatParam {
  const char* onnx;
  const char* ir;
  double fallback;
};

Expected<Outputs> WithFloats(NodeContext& ctx, OpKind op, std::initializer_list<FloatParam> ps) {
  ir::Attrs a;
  for (const FloatParam& p : ps) {
    NN_TRY(v, FloatAttr(ctx, p.onnx, p.fallback));
    a.Set(p.ir, *v);
  }
  return NodeContext::Single(ctx.Emit(op, {ctx.Input(0)}, a));
}

Expected<Outputs> Elu(NodeContext& ctx) {
  return WithFloats(ctx, OpKind::kElu, {{"alpha", "alpha", 1.0}});
}
Expected<Outputs> Selu(NodeContext& ctx) {
  return WithFloats(ctx, OpKind::kSelu,
                    {{"alpha", "alpha", 1.67326319217681884765625},
                     {"gamma", "gamma", 1.05070102214813232421875}});
}
Expected<Outputs> Celu(NodeContext& ctx) {
  return WithFloats(ctx, OpKind::kCelu, {{"alpha", "alpha", 1.0}});
}
Expected<Outputs> LeakyRelu(NodeContext& ctx) {
  return WithFloats(ctx, OpKind::kLeakyRelu, {{"alpha", "alpha", 0.01}});
}
Expected<Outputs> ThresholdedRelu(NodeContext& ctx) {
  return WithFloats(ctx, OpKind::kThresholdedRelu, {{"alpha", "alpha", 1.0}});
}
Expected<Outputs> HardSigmoid(NodeContext& ctx) {
  return WithFloats(ctx, OpKind::kHardSigmoid, {{"alpha", "alpha", 0.2}, {"beta", "beta", 0.5}});
}
Expected<Outputs> Shrink(NodeContext& ctx) {
  return WithFloats(ctx, OpKind::kShrink, {{"bias", "bias", 0.0}, {"lambd", "lambd", 0.5}});
}

Expected<Outputs> Gelu(NodeContext& ctx) {
  NN_TRY(approx, ctx.String("approximate", "none"));
  if (*approx == "none") return Activation<OpKind::kGelu>(ctx);
  if (*approx == "tanh") return Activation<OpKind::kGeluTanh>(ctx);
  return ctx.Error("attribute 'approximate' must be none or tanh, got '" + *approx + "'");
}

// Swish(alpha) = x * sigmoid(alpha * x): nn.silu when alpha is 1.
Expected<Outputs> Swish(NodeContext& ctx) {
  NN_TRY(alpha, FloatAttr(ctx, "alpha", 1.0));
  ir::Expr x = ctx.Input(0);
  if (*alpha == 1.0) return NodeContext::Single(ctx.Emit(OpKind::kSilu, {x}));
  NN_TRY(k, ctx.ScalarConst(DtypeOf(x), *alpha));
  NN_TRY(ax, ctx.Emit(OpKind::kMultiply, {x, *k}));
  NN_TRY(sig, ctx.Emit(OpKind::kSigmoid, {*ax}));
  return NodeContext::Single(ctx.Emit(OpKind::kMultiply, {x, *sig}));
}

// PRelu: the slope broadcasts to x (numpy, from the right). A slope varying along one dim is
// nn.prelu on that axis; anything else is where(x < 0, x * slope, x).
Expected<Outputs> PRelu(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0), slope = ctx.Input(1);
  if (!x || !slope) return ctx.Error("PRelu needs X and slope");
  const ir::StructInfo& xs = x->struct_info;
  std::optional<Ints> ss = slope->struct_info->StaticShape();
  int n = xs->ndim;
  if (ss && n >= 1 && static_cast<int>(ss->size()) <= n) {
    int k = static_cast<int>(ss->size());
    std::vector<int> varying;
    int64_t count = 1;
    for (int j = 0; j < k; ++j) {
      count *= (*ss)[j];
      if ((*ss)[j] != 1) varying.push_back(n - k + j);
    }
    std::optional<int> axis;
    if (varying.size() == 1) axis = varying[0];
    if (varying.empty() && n >= 2) axis = 1;
    if (varying.empty() && n == 1) axis = 0;
    if (axis) {
      ir::Expr alpha = slope;
      if (k != 1) {
        NN_TRY(r, ctx.Emit(OpKind::kReshape, {slope, ir::MakeShapeExpr({ir::IntImm(count)})}));
        alpha = *r;
      }
      ir::Attrs a;
      a.Set("axis", static_cast<int64_t>(*axis));
      return NodeContext::Single(ctx.Emit(OpKind::kPRelu, {x, alpha}, a));
    }
  }
  NN_TRY(zero, ZeroLike(ctx, x));
  NN_TRY(neg, ctx.Emit(OpKind::kLess, {x, *zero}));
  NN_TRY(scaled, ctx.Emit(OpKind::kMultiply, {x, slope}));
  return NodeContext::Single(ctx.Emit(OpKind::kWhere, {*neg, *scaled, x}));
}

Expected<Outputs> TfIdfVectorizer(NodeContext& ctx) {
  if (ctx.Attr("pool_strings")) {
    return ctx.Error("string pools are left out (string ops); only pool_int64s is supported");
  }
  ir::Attrs a;
  Expected<std::string> mode = ctx.String("mode");
  if (!mode) return ctx.Error(mode.error().message);
  a.Set("mode", *mode);
  for (const char* name : {"min_gram_length", "max_gram_length", "max_skip_count"}) {
    Expected<int64_t> v = ctx.Int(name);
    if (!v) return ctx.Error(v.error().message);
    a.Set(name, *v);
  }
  for (const char* name : {"ngram_counts", "ngram_indexes", "pool_int64s"}) {
    Expected<std::vector<int64_t>> v = ctx.Ints(name, std::vector<int64_t>{});
    if (!v) return ctx.Error(v.error().message);
    a.Set(name, *v);
  }
  if (ctx.Attr("weights")) {
    Expected<std::vector<double>> w = ctx.Floats("weights");
    if (!w) return ctx.Error(w.error().message);
    for (double& v : *w) v = ShortestFloat32(v);
    a.Set("weights", *w);
  }
  return NodeContext::Single(ctx.Emit(OpKind::kTfIdfVectorizer, {ctx.Input(0)}, a));
}

#undef NN_TRY

}  // namespace

const std::vector<Converter> kNnConverters = {
    {"Conv", 1, Conv},
    {"ConvTranspose", 1, ConvTranspose},
    {"MaxPool", 1, MaxPool},
    {"AveragePool", 1, AveragePool},
    {"LpPool", 1, LpPool},
    {"GlobalAveragePool", 1, GlobalPool<false>},
    {"GlobalMaxPool", 1, GlobalPool<true>},
    {"MaxUnpool", 9, MaxUnpool},
    {"Col2Im", 18, Col2Im},
    {"DepthToSpace", 1, SpaceDepth<OpKind::kDepthToSpace>},
    {"SpaceToDepth", 1, SpaceDepth<OpKind::kSpaceToDepth>},
    {"BatchNormalization", 7, BatchNormalization},
    {"InstanceNormalization", 6, InstanceNormalization},
    {"LayerNormalization", 17, LayerNormalization},
    {"GroupNormalization", 18, GroupNormalization},
    {"RMSNormalization", 23, RMSNormalization},
    {"LpNormalization", 1, LpNormalization},
    {"MeanVarianceNormalization", 9, MeanVarianceNormalization},
    {"LRN", 1, LRN},
    {"Dropout", 7, Dropout},
    {"Softmax", 1, SoftmaxLike<OpKind::kSoftmax>},
    {"LogSoftmax", 1, SoftmaxLike<OpKind::kLogSoftmax>},
    {"Hardmax", 1, SoftmaxLike<OpKind::kHardmax>},
    {"Elu", 6, Elu},
    {"Selu", 6, Selu},
    {"Celu", 12, Celu},
    {"LeakyRelu", 6, LeakyRelu},
    {"PRelu", 7, PRelu},
    {"ThresholdedRelu", 10, ThresholdedRelu},
    {"HardSigmoid", 6, HardSigmoid},
    {"HardSwish", 14, Activation<OpKind::kHardSwish>},
    {"Softplus", 1, Activation<OpKind::kSoftplus>},
    {"Softsign", 1, Activation<OpKind::kSoftsign>},
    {"Gelu", 20, Gelu},
    {"Mish", 18, Activation<OpKind::kMish>},
    {"Swish", 24, Swish},
    {"Shrink", 9, Shrink},
    {"TfIdfVectorizer", 9, TfIdfVectorizer},
};

}  // namespace quilt::importers::onnx
