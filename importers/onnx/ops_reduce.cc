// Converters of the reduce category: the Reduce* ops, ArgMax/ArgMin, CumSum/CumProd and the
// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss losses.
#include <cstring>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

// The reduced axes: the `axes` attribute before opset `since_input`, the (constant) second input
// from then on. nullopt reduces every axis; an empty list none (noop_with_empty_axes).
Expected<std::optional<std::vector<int64_t>>> ReduceAxes(NodeContext& ctx, int64_t since_input) {
  std::vector<int64_t> axes;
  int64_t noop = 0;
  if (ctx.opset() < since_input) {
    Expected<std::vector<int64_t>> a = ctx.Ints("axes", std::vector<int64_t>{});
    if (!a) return ctx.Error(a.error().message);
    axes = *a;
  } else {
    Expected<int64_t> n = ctx.Int("noop_with_empty_axes", 0);
    if (!n) return ctx.Error(n.error().message);
    noop = *n;
    if (ctx.HasInput(1)) {
      std::optional<std::vector<int64_t>> k = ctx.KnownInts(1);
      if (!k) return ctx.Error("input 'axes' must be a constant");
      axes = *k;
    }
  }
  if (axes.empty() && !noop) return std::optional<std::vector<int64_t>>();
  return std::optional<std::vector<int64_t>>(axes);
}

template <OpKind kOp, int64_t kSinceInput>
Expected<Outputs> Reduce(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("needs an input");
  Expected<int64_t> keepdims = ctx.Int("keepdims", 1);
  if (!keepdims) return ctx.Error(keepdims.error().message);
  Expected<std::optional<std::vector<int64_t>>> axes = ReduceAxes(ctx, kSinceInput);
  if (!axes) return axes.error();
  ir::Attrs a;
  if (*axes) a.Set("axis", **axes);
  a.Set("keepdims", *keepdims != 0);
  Expected<ir::Expr> e = ctx.Emit(kOp, {x}, a);
  if (!e) return e.error();
  return Outputs{*e};
}

template <OpKind kOp>
Expected<Outputs> ArgReduce(NodeContext& ctx) {
  Expected<int64_t> axis = ctx.Int("axis", 0);
  Expected<int64_t> keepdims = ctx.Int("keepdims", 1);
  Expected<int64_t> last = ctx.Int("select_last_index", 0);
  if (!axis || !keepdims || !last) {
    return ctx.Error(!axis       ? axis.error().message
                     : !keepdims ? keepdims.error().message
                                 : last.error().message);
  }
  ir::Attrs a;
  a.Set("axis", *axis);
  a.Set("keepdims", *keepdims != 0);
  a.Set("select_last_index", *last != 0);
  return NodeContext::Single(ctx.Emit(kOp, {ctx.Input(0)}, a));
}

template <OpKind kOp>
Expected<Outputs> Scan(NodeContext& ctx) {
  Expected<int64_t> exclusive = ctx.Int("exclusive", 0);
  Expected<int64_t> reverse = ctx.Int("reverse", 0);
  if (!exclusive || !reverse) {
    return ctx.Error(!exclusive ? exclusive.error().message : reverse.error().message);
  }
  if (!ctx.HasInput(1)) return ctx.Error("input 'axis' is required");
  std::optional<std::vector<int64_t>> axis = ctx.KnownInts(1);
  if (!axis) return ctx.Error("input 'axis' must be a constant");
  if (axis->size() != 1) {
    return ctx.Error("input 'axis' must hold one value, got " + std::to_string(axis->size()));
  }
  ir::Attrs a;
  a.Set("axis", (*axis)[0]);
  a.Set("exclusive", *exclusive != 0);
  a.Set("reverse", *reverse != 0);
  return NodeContext::Single(ctx.Emit(kOp, {ctx.Input(0)}, a));
}

// A 1-D tensor of `n` ones of a floating-point dtype.
Expected<ir::Expr> Ones(NodeContext& ctx, ir::DataType dtype, int64_t n) {
  int bits = ir::DataTypeBits(dtype);
  std::vector<uint8_t> buf(static_cast<size_t>(n) * bits / 8);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* p = buf.data() + i * bits / 8;
    if (dtype == ir::DataType::kFloat32) {
      float one = 1.0f;
      std::memcpy(p, &one, 4);
    } else if (dtype == ir::DataType::kFloat64) {
      double one = 1.0;
      std::memcpy(p, &one, 8);
    } else if (dtype == ir::DataType::kFloat16 || dtype == ir::DataType::kBFloat16) {
      uint16_t one =
          dtype == ir::DataType::kFloat16 ? ir::FloatToHalf(1.0f) : ir::FloatToBFloat16(1.0f);
      std::memcpy(p, &one, 2);
    } else {
      return ctx.Error("no class weights of type " + std::string(ir::DataTypeName(dtype)));
    }
  }
  return ctx.Const(dtype, {n}, buf.data());
}

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Absent weights are ones (the same
// loss, "mean" included), which needs a static class count.
template <OpKind kOp>
Expected<Outputs> Loss(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0), t = ctx.Input(1);
  if (!x || !t) return ctx.Error("needs two inputs");
  Expected<std::string> reduction = ctx.String("reduction", "mean");
  if (!reduction) return ctx.Error(reduction.error().message);
  ir::Attrs a;
  a.Set("reduction", *reduction);
  if (ctx.Attr("ignore_index")) {
    Expected<int64_t> ignore = ctx.Int("ignore_index");
    if (!ignore) return ctx.Error(ignore.error().message);
    a.Set("ignore_index", *ignore);
  }
  ir::Expr w = ctx.Input(2);
  if (!w) {
    const ir::StructInfo& s = x->struct_info;
    std::optional<int64_t> c;
    if (s->shape && s->ndim >= 2) c = ir::AsInt((*s->shape)[1]);
    if (!c) return ctx.Error("without weights the class count (dimension 1) must be static");
    Expected<ir::Expr> ones = Ones(ctx, s->dtype, *c);
    if (!ones) return ones.error();
    w = *ones;
  }
  Expected<ir::Expr> e = ctx.Emit(kOp, {x, t, w}, a);
  if (!e) return e.error();
  if (kOp == OpKind::kNllLoss) return Outputs{*e};
  Outputs outs;
  for (int i = 0; i < std::max(1, ctx.NumOutputs()); ++i) {
    Expected<ir::Expr> item = ir::MakeTupleGetItem(*e, i);
    if (!item) return ctx.Error(item.error().message);
    outs.push_back(ctx.Bind(*item, i));
  }
  return outs;
}

}  // namespace

const std::vector<Converter> kReduceConverters = {
    {"ReduceSum", 1, Reduce<OpKind::kSum, 13>},
    {"ReduceMean", 1, Reduce<OpKind::kMean, 18>},
    {"ReduceMax", 1, Reduce<OpKind::kMax, 18>},
    {"ReduceMin", 1, Reduce<OpKind::kMin, 18>},
    {"ReduceProd", 1, Reduce<OpKind::kProd, 18>},
    {"ReduceL1", 1, Reduce<OpKind::kReduceL1, 18>},
    {"ReduceL2", 1, Reduce<OpKind::kReduceL2, 18>},
    {"ReduceLogSum", 1, Reduce<OpKind::kReduceLogSum, 18>},
    {"ReduceLogSumExp", 1, Reduce<OpKind::kReduceLogSumExp, 18>},
    {"ReduceSumSquare", 1, Reduce<OpKind::kReduceSumSquare, 18>},
    {"ArgMax", 1, ArgReduce<OpKind::kArgmax>},
    {"ArgMin", 1, ArgReduce<OpKind::kArgmin>},
    {"CumSum", 11, Scan<OpKind::kCumsum>},
    {"CumProd", 26, Scan<OpKind::kCumprod>},
    {"NegativeLogLikelihoodLoss", 12, Loss<OpKind::kNllLoss>},
    {"SoftmaxCrossEntropyLoss", 12, Loss<OpKind::kSoftmaxCrossEntropy>},
};

}  // namespace quilt::importers::onnx
