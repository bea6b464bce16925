// Converters of control flow. If: both branches are imported as subgraphs that read the
// enclosing graph's values, and become an IR If whose branches end in their outputs (a tuple
// when there are several).
#include "importers/onnx/converter.h"
#include "importers/onnx/graph.h"

namespace quilt::importers::onnx {
namespace {

Expected<Outputs> If(NodeContext& ctx) {
  const ::onnx::AttributeProto* then_attr = ctx.Attr("then_branch");
  const ::onnx::AttributeProto* else_attr = ctx.Attr("else_branch");
  if (!then_attr || !else_attr || then_attr->type() != ::onnx::AttributeProto::GRAPH ||
      else_attr->type() != ::onnx::AttributeProto::GRAPH) {
    return ctx.Error("If needs graph attributes 'then_branch' and 'else_branch'");
  }
  ir::Expr cond = ctx.Input(0);
  if (!cond) return ctx.Error("If needs a condition");
  const ir::StructInfo& cs = cond->struct_info;
  if (cs->dtype != ir::DataType::kBool) {
    return ctx.Error("the condition must be bool, got " + std::string(ir::DataTypeName(cs->dtype)));
  }
  if (cs->ndim != 0) {
    // A one-element tensor of any rank: reshape it to a scalar.
    if (std::optional<std::vector<int64_t>> shape = cs->StaticShape()) {
      int64_t n = 1;
      for (int64_t d : *shape) n *= d;
      if (n != 1) return ctx.Error("the condition must have one element");
    }
    Expected<ir::Expr> scalar = ctx.Emit(ir::OpKind::kReshape, {cond, ir::MakeShapeExpr({})});
    if (!scalar) return scalar.error();
    cond = *scalar;
  }
  Expected<ir::SeqExpr> then_branch =
      ctx.graph()->ImportSubgraph(then_attr->g(), {}, "then_branch");
  if (!then_branch) return ctx.Error(then_branch.error().message);
  Expected<ir::SeqExpr> else_branch =
      ctx.graph()->ImportSubgraph(else_attr->g(), {}, "else_branch");
  if (!else_branch) return ctx.Error(else_branch.error().message);
  if (then_attr->g().output_size() != else_attr->g().output_size() ||
      then_attr->g().output_size() != ctx.NumOutputs()) {
    return ctx.Error("the branches and the node must have the same number of outputs");
  }
  Expected<ir::Expr> value = ir::MakeIf(cond, *then_branch, *else_branch);
  if (!value) return ctx.Error(value.error().message);
  ir::Expr bound = ctx.Bind(*value);
  if (ctx.NumOutputs() == 1) return Outputs{bound};
  Outputs outs;
  for (int i = 0; i < ctx.NumOutputs(); ++i) {
    Expected<ir::Expr> item = ir::MakeTupleGetItem(bound, i);
    if (!item) return ctx.Error(item.error().message);
    outs.push_back(ctx.Bind(*item, i));
  }
  return outs;
}

}  // namespace

const std::vector<Converter> kControlConverters = {
    {"If", 1, If},
};

}  // namespace quilt::importers::onnx
