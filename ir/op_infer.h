// Struct-info rules named in ops.def (shape and dtype only; InferCall handles vdevices), and the
// helpers rules share. Every rule named in ops.def is declared here from the list itself; a
// family's rules live in ir/ops/<family>.cc (the first ops in op_infer.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/op.h"

namespace quilt::ir {

#define QUILT_OP(kind, name, pattern, infer, schema) \
  Expected<StructInfo> infer(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs);
#include "ir/ops.def"

// Numpy broadcasting of two shapes. Unknown rank gives nullopt with *ndim = -1; a pair of dims
// that cannot be proved compatible nor equal gives nullopt with the rank known. Two different
// constants (neither 1) are an error.
Expected<std::optional<std::vector<PrimExpr>>> BroadcastShapes(const StructInfoNode& a,
                                                               const StructInfoNode& b, int* ndim);

// Argument i as a tensor, or a diagnostic naming the argument and what it is.
Expected<const StructInfoNode*> TensorArg(const OpInfo& op, const std::vector<Expr>& args,
                                          size_t i);
// `axis` normalized against `ndim` (negative counts from the end); unknown rank passes through.
Expected<int64_t> NormalizeAxis(int64_t axis, int ndim, const std::string& what);
// The common dtype of two tensors (kVoid counts as unknown); differing dtypes are an error.
Expected<DataType> SameDtype(const StructInfoNode& a, const StructInfoNode& b);
// A tensor like `x` (same shape and rank) with another dtype.
StructInfo SameShape(const StructInfoNode& x, DataType dtype);
// The values of a shape argument (ShapeExpr or Shape struct info), when known.
std::optional<std::vector<PrimExpr>> ShapeValues(const Expr& e);
std::string DtypeName(DataType t);
// Element k of a constant as a double (numeric dtypes; nullopt for the others).
std::optional<double> ConstantElement(const ConstantNode& c, int64_t k);
// Every element of a constant argument as doubles; nullopt when `e` is not such a constant.
std::optional<std::vector<double>> ConstantValues(const Expr& e);

}  // namespace quilt::ir
