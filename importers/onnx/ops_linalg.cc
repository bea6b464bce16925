// Converters of the linalg category: MatMul, Gemm (composed of permute_dims, matmul, multiply
// and add), Einsum and Det. (MatMulInteger is in ops_quantize.cc.)
#include <cmath>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

// A scalar constant of the inputs' dtype; integer dtypes need an integer value.
Expected<ir::Expr> Scalar(NodeContext& ctx, ir::DataType dtype, double v, const char* what) {
  if (ir::IsInteger(dtype) && v != std::floor(v)) {
    return ctx.Error(std::string(what) + " = " + std::to_string(v) + " is not an integer for " +
                     std::string(ir::DataTypeName(dtype)) + " inputs");
  }
  Expected<ir::Expr> c = ctx.ScalarConst(dtype, v);
  if (!c) return ctx.Error(c.error().message);
  return c;
}

Expected<Outputs> MatMul(NodeContext& ctx) {
  return NodeContext::Single(ctx.Emit(OpKind::kMatmul, {ctx.Input(0), ctx.Input(1)}));
}

// Y = alpha * A' B' + beta * C, C (optional from opset 11) broadcast one way to (M, N).
Expected<Outputs> Gemm(NodeContext& ctx) {
  ir::Expr a = ctx.Input(0), b = ctx.Input(1), c = ctx.Input(2);
  if (!a || !b) return ctx.Error("needs inputs A and B");
  if (!c && ctx.opset() < 11) return ctx.Error("input 'C' is required before opset 11");
  Expected<double> alpha = ctx.Float("alpha", 1.0), beta = ctx.Float("beta", 1.0);
  if (!alpha || !beta) return ctx.Error(!alpha ? alpha.error().message : beta.error().message);
  Expected<int64_t> ta = ctx.Int("transA", 0), tb = ctx.Int("transB", 0);
  if (!ta || !tb) return ctx.Error(!ta ? ta.error().message : tb.error().message);
  for (auto [e, name] : {std::pair{a, "A"}, {b, "B"}}) {
    int n = e->struct_info->ndim;
    if (n >= 0 && n != 2) {
      return ctx.Error(std::string("input '") + name + "' must be 2-D, got rank " +
                       std::to_string(n));
    }
  }
  if (c && c->struct_info->ndim > 2) {
    return ctx.Error("input 'C' must have rank <= 2, got rank " +
                     std::to_string(c->struct_info->ndim));
  }
  ir::Attrs swap;
  swap.Set("axes", std::vector<int64_t>{1, 0});
  if (*ta) {
    Expected<ir::Expr> t = ctx.Emit(OpKind::kPermuteDims, {a}, swap);
    if (!t) return t.error();
    a = *t;
  }
  if (*tb) {
    Expected<ir::Expr> t = ctx.Emit(OpKind::kPermuteDims, {b}, swap);
    if (!t) return t.error();
    b = *t;
  }
  Expected<ir::Expr> y = ctx.Emit(OpKind::kMatmul, {a, b});
  if (!y) return y.error();
  ir::DataType dtype = (*y)->struct_info->dtype;
  if (*alpha != 1.0) {
    Expected<ir::Expr> k = Scalar(ctx, dtype, *alpha, "alpha");
    if (!k) return k.error();
    y = ctx.Emit(OpKind::kMultiply, {*y, *k});
    if (!y) return y.error();
  }
  if (!c) return Outputs{*y};
  ir::StructInfo mn = (*y)->struct_info;
  if (*beta != 1.0) {
    Expected<ir::Expr> k = Scalar(ctx, dtype, *beta, "beta");
    if (!k) return k.error();
    Expected<ir::Expr> scaled = ctx.Emit(OpKind::kMultiply, {c, *k});
    if (!scaled) return scaled.error();
    c = *scaled;
  }
  y = ctx.Emit(OpKind::kAdd, {*y, c});
  if (!y) return y.error();
  // One-way broadcast: C must not grow the (M, N) result.
  const ir::StructInfo& out = (*y)->struct_info;
  if (mn->shape && out->shape) {
    for (size_t i = 0; i < 2; ++i) {
      std::optional<int64_t> want = ir::AsInt((*mn->shape)[i]), got = ir::AsInt((*out->shape)[i]);
      if (want && got && *want != *got) {
        return ctx.Error("input 'C' does not broadcast to the " +
                         std::to_string(*ir::AsInt((*mn->shape)[0])) + " x " +
                         std::to_string(*ir::AsInt((*mn->shape)[1])) + " product");
      }
    }
  }
  return Outputs{*y};
}

Expected<Outputs> Einsum(NodeContext& ctx) {
  Expected<std::string> eq = ctx.String("equation");
  if (!eq) return ctx.Error(eq.error().message);
  std::vector<ir::Expr> operands;
  for (int i = 0; i < ctx.NumInputs(); ++i) {
    if (!ctx.HasInput(i)) return ctx.Error("input " + std::to_string(i) + " is missing");
    operands.push_back(ctx.Input(i));
  }
  if (operands.empty()) return ctx.Error("needs at least one input");
  ir::Attrs a;
  a.Set("subscripts", *eq);
  return NodeContext::Single(ctx.Emit(OpKind::kEinsum, {ir::MakeTuple(operands)}, a));
}

Expected<Outputs> Det(NodeContext& ctx) {
  return NodeContext::Single(ctx.Emit(OpKind::kDet, {ctx.Input(0)}));
}

}  // namespace

const std::vector<Converter> kLinalgConverters = {
    {"MatMul", 1, MatMul},
    {"Gemm", 7, Gemm},
    {"Einsum", 12, Einsum},
    {"Det", 11, Det},
};

}  // namespace quilt::importers::onnx
