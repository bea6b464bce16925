// Struct-info rules of the ops in ir/ops/reduce.def.
#include <vector>

#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

// The reduced axes of a rank-`ndim` tensor (normalized, in order); every axis for None.
Expected<std::vector<bool>> ReducedAxes(const std::vector<int64_t>* axes, int ndim) {
  std::vector<bool> reduced(ndim, axes == nullptr);
  if (!axes) return reduced;
  for (int64_t a : *axes) {
    Expected<int64_t> n = NormalizeAxis(a, ndim, "axis");
    if (!n) return n.error();
    if (reduced[*n]) return Error("axis " + std::to_string(a) + " appears twice");
    reduced[*n] = true;
  }
  return reduced;
}

// Shape of reducing `x` over `axes` (None: all).
Expected<StructInfo> ReduceShape(const StructInfoNode& x, const std::vector<int64_t>* axes,
                                 bool keepdims, DataType dtype) {
  if (x.ndim < 0) {
    // Reducing every axis without keepdims gives a scalar whatever the rank.
    if (!axes && !keepdims) return TensorSInfo(std::vector<PrimExpr>{}, dtype);
    return TensorSInfo(std::nullopt, dtype, std::nullopt, -1);
  }
  Expected<std::vector<bool>> reduced = ReducedAxes(axes, x.ndim);
  if (!reduced) return reduced.error();
  int out_ndim = 0;
  for (int i = 0; i < x.ndim; ++i) out_ndim += (keepdims || !(*reduced)[i]) ? 1 : 0;
  if (!x.shape) return TensorSInfo(std::nullopt, dtype, std::nullopt, out_ndim);
  std::vector<PrimExpr> out;
  for (int i = 0; i < x.ndim; ++i) {
    if (!(*reduced)[i]) {
      out.push_back((*x.shape)[i]);
    } else if (keepdims) {
      out.push_back(IntImm(1));
    }
  }
  return TensorSInfo(std::move(out), dtype);
}

}  // namespace

Expected<StructInfo> InferReduce(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType t = (*x)->dtype;
  bool ordered = op.kind == OpKind::kMax || op.kind == OpKind::kMin;
  if (t != DataType::kVoid && !IsFloat(t) && !IsInteger(t) && !(ordered && t == DataType::kBool)) {
    return Error("expects numeric tensors, got " + DtypeName(t));
  }
  return ReduceShape(**x, attrs.Get<std::vector<int64_t>>("axis"), *attrs.Get<bool>("keepdims"), t);
}

Expected<StructInfo> InferArgReduce(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType t = (*x)->dtype;
  if (t != DataType::kVoid && !IsFloat(t) && !IsInteger(t) && t != DataType::kBool) {
    return Error("expects numeric tensors, got " + DtypeName(t));
  }
  const int64_t* axis = attrs.Get<int64_t>("axis");
  bool keepdims = *attrs.Get<bool>("keepdims");
  if (!axis) return ReduceShape(**x, nullptr, keepdims, DataType::kInt64);
  if ((*x)->ndim == 0) return Error("axis " + std::to_string(*axis) + " given for a scalar");
  std::vector<int64_t> axes = {*axis};
  return ReduceShape(**x, &axes, keepdims, DataType::kInt64);
}

Expected<StructInfo> InferScan(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType t = *attrs.Get<DataType>("dtype");
  if (t == DataType::kVoid) t = (*x)->dtype;
  if (t != DataType::kVoid && !IsFloat(t) && !IsInteger(t)) {
    return Error("expects numeric tensors, got " + DtypeName(t));
  }
  const int64_t* axis = attrs.Get<int64_t>("axis");
  if (!axis) {
    // Of the flattened tensor.
    if (!(*x)->shape) return TensorSInfo(std::nullopt, t, std::nullopt, 1);
    PrimExpr n = IntImm(1);
    for (const PrimExpr& d : *(*x)->shape) n = n * d;
    return TensorSInfo(std::vector<PrimExpr>{n}, t);
  }
  if ((*x)->ndim == 0) return Error("axis " + std::to_string(*axis) + " given for a scalar");
  Expected<int64_t> a = NormalizeAxis(*axis, (*x)->ndim, "axis");
  if (!a) return a.error();
  return SameShape(**x, t);
}

Expected<StructInfo> InferNllLoss(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  Expected<const StructInfoNode*> p = TensorArg(op, args, 0);
  if (!p) return p.error();
  Expected<const StructInfoNode*> t = TensorArg(op, args, 1);
  if (!t) return t.error();
  Expected<const StructInfoNode*> w = TensorArg(op, args, 2);
  if (!w) return w.error();
  const std::string& reduction = *attrs.Get<std::string>("reduction");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return Error("reduction must be none, sum or mean, got '" + reduction + "'");
  }
  DataType dtype = (*p)->dtype;
  if (dtype != DataType::kVoid && !IsFloat(dtype)) {
    return Error("'" + op.arg_names[0] + "' must be floating-point, got " + DtypeName(dtype));
  }
  if ((*t)->dtype != DataType::kVoid && !IsInteger((*t)->dtype)) {
    return Error("'" + op.arg_names[1] + "' must be integer class indices, got " +
                 DtypeName((*t)->dtype));
  }
  Expected<DataType> wd = SameDtype(**p, **w);
  if (!wd) return Error("'" + op.arg_names[2] + "': " + wd.error().message);
  if ((*w)->ndim >= 0 && (*w)->ndim != 1) {
    return Error("'" + op.arg_names[2] + "' must be 1-D, got rank " + std::to_string((*w)->ndim));
  }
  int ndim = (*p)->ndim;
  if (ndim >= 0 && ndim < 2) {
    return Error("'" + op.arg_names[0] + "' must have rank >= 2 (N, C, ...), got rank " +
                 std::to_string(ndim));
  }
  if (ndim >= 0 && (*t)->ndim >= 0 && (*t)->ndim != ndim - 1) {
    return Error("'" + op.arg_names[1] + "' must have rank " + std::to_string(ndim - 1) +
                 ", got rank " + std::to_string((*t)->ndim));
  }
  // Loss shape: (N, d1, ...) from whichever side is known, checked against the other.
  std::optional<std::vector<PrimExpr>> loss;
  if ((*p)->shape) {
    const std::vector<PrimExpr>& s = *(*p)->shape;
    loss = std::vector<PrimExpr>{s[0]};
    loss->insert(loss->end(), s.begin() + 2, s.end());
    if ((*t)->shape) {
      for (size_t i = 0; i < loss->size(); ++i) {
        std::optional<int64_t> a = AsInt((*loss)[i]), b = AsInt((*(*t)->shape)[i]);
        if (a && b && *a != *b) {
          return Error("'" + op.arg_names[1] + "' dimension " + std::to_string(i) + " is " +
                       std::to_string(*b) + ", expected " + std::to_string(*a));
        }
        if (!a && b) (*loss)[i] = (*(*t)->shape)[i];
      }
    }
    if ((*w)->shape) {
      std::optional<int64_t> c = AsInt(s[1]), n = AsInt((*(*w)->shape)[0]);
      if (c && n && *c != *n) {
        return Error("'" + op.arg_names[2] + "' has " + std::to_string(*n) + " entries for " +
                     std::to_string(*c) + " classes");
      }
    }
  } else if ((*t)->shape) {
    loss = (*t)->shape;
  }
  int loss_ndim = ndim >= 0 ? ndim - 1 : (*t)->ndim;
  StructInfo out = reduction != "none" ? TensorSInfo(std::vector<PrimExpr>{}, dtype)
                                       : TensorSInfo(loss, dtype, std::nullopt, loss_ndim);
  if (op.kind == OpKind::kNllLoss) return out;
  return TupleSInfo({out, SameShape(**p, dtype)});
}

}  // namespace quilt::ir
