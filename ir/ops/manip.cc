// Struct-info rules of the ops in ir/ops/manip.def (the first layout ops are in op_infer.cc).
#include "ir/op_infer.h"

namespace quilt::ir {

Expected<StructInfo> InferShapeOf(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  return ShapeSInfo((*x)->shape, (*x)->ndim);
}

Expected<StructInfo> InferShapeToTensor(const OpInfo&, const std::vector<Expr>& args,
                                        const Attrs&) {
  const StructInfo& s = args[0]->struct_info;
  if (!s || s->kind != StructInfoKind::kShape) {
    return Error("argument 'shape' is " + Describe(s) + ", expected a shape");
  }
  if (s->ndim < 0) return TensorSInfo(std::nullopt, DataType::kInt64, std::nullopt, 1);
  return TensorSInfo(std::vector<int64_t>{s->ndim}, DataType::kInt64);
}

Expected<StructInfo> InferTensorToShape(const OpInfo& op, const std::vector<Expr>& args,
                                        const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if ((*x)->ndim != 1) return Error("expects a 1-D tensor, got rank " + std::to_string((*x)->ndim));
  if ((*x)->dtype != DataType::kInt64 && (*x)->dtype != DataType::kVoid) {
    return Error("expects an int64 tensor, got " + DtypeName((*x)->dtype));
  }
  std::optional<std::vector<int64_t>> shape = (*x)->StaticShape();
  if (!shape) return Error("the length of the shape tensor must be static");
  return ShapeSInfo(std::nullopt, static_cast<int>((*shape)[0]));
}

}  // namespace quilt::ir
