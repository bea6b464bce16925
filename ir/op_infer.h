// Struct-info rules named in ops.def (shape and dtype only; InferCall handles vdevices).
#pragma once

#include "ir/op.h"

namespace quilt::ir {

#define QUILT_RULE(name) \
  Expected<StructInfo> name(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs);
QUILT_RULE(InferHintOnDevice)
QUILT_RULE(InferToVDevice)
QUILT_RULE(InferArith)
QUILT_RULE(InferCompare)
QUILT_RULE(InferLogical)
QUILT_RULE(InferLogicalNot)
QUILT_RULE(InferUnaryFloat)
QUILT_RULE(InferUnaryNumber)
QUILT_RULE(InferAstype)
QUILT_RULE(InferSoftmax)
QUILT_RULE(InferMatmul)
QUILT_RULE(InferReshape)
QUILT_RULE(InferPermuteDims)
QUILT_RULE(InferConcat)
QUILT_RULE(InferExpandDims)
QUILT_RULE(InferSqueeze)
#undef QUILT_RULE

// Numpy broadcasting of two shapes. Unknown rank gives nullopt with *ndim = -1; a pair of dims
// that cannot be proved compatible nor equal gives nullopt with the rank known. Two different
// constants (neither 1) are an error.
Expected<std::optional<std::vector<PrimExpr>>> BroadcastShapes(const StructInfoNode& a,
                                                               const StructInfoNode& b, int* ndim);

}  // namespace quilt::ir
