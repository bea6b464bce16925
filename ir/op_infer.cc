// Shape and dtype rules for the ops of ops.def. Each returns the result's struct info without a
// vdevice (InferCall adds it) or a diagnostic that says what is wrong with which argument.
#include "ir/op_infer.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace quilt::ir {
namespace {

Expected<StructInfo> Binary(const OpInfo& op, const std::vector<Expr>& args, bool bool_result,
                            bool bool_inputs) {
  Expected<const StructInfoNode*> a = TensorArg(op, args, 0);
  if (!a) return a.error();
  Expected<const StructInfoNode*> b = TensorArg(op, args, 1);
  if (!b) return b.error();
  Expected<DataType> dtype = SameDtype(**a, **b);
  if (!dtype) return dtype.error();
  if (bool_inputs && *dtype != DataType::kVoid && *dtype != DataType::kBool) {
    return Error("expects bool tensors, got " + DtypeName(*dtype));
  }
  int ndim = -1;
  Expected<std::optional<std::vector<PrimExpr>>> shape = BroadcastShapes(**a, **b, &ndim);
  if (!shape) return shape.error();
  return TensorSInfo(*shape, bool_result ? DataType::kBool : *dtype, std::nullopt, ndim);
}

Expected<StructInfo> Unary(const OpInfo& op, const std::vector<Expr>& args,
                           bool (*accepts)(DataType), const char* what) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if ((*x)->dtype != DataType::kVoid && !accepts((*x)->dtype)) {
    return Error("expects " + std::string(what) + " tensors, got " + DtypeName((*x)->dtype));
  }
  return TensorSInfo((*x)->shape, (*x)->dtype, std::nullopt, (*x)->ndim);
}

}  // namespace

Expected<const StructInfoNode*> TensorArg(const OpInfo& op, const std::vector<Expr>& args,
                                          size_t i) {
  const StructInfo& s = args[i]->struct_info;
  if (!s || !s->IsTensor()) {
    return Error("argument '" + op.arg_names[i] + "' (" + ArgName(args[i]) + ") is " + Describe(s) +
                 ", expected a tensor");
  }
  return s.get();
}

Expected<int64_t> NormalizeAxis(int64_t axis, int ndim, const std::string& what) {
  if (ndim < 0) return axis;
  if (axis < -ndim || axis >= ndim) {
    return Error(what + " " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(ndim));
  }
  return axis < 0 ? axis + ndim : axis;
}

Expected<DataType> SameDtype(const StructInfoNode& a, const StructInfoNode& b) {
  if (a.dtype == DataType::kVoid) return b.dtype;
  if (b.dtype == DataType::kVoid || a.dtype == b.dtype) return a.dtype;
  return Error("dtypes differ: " + DtypeName(a.dtype) + " and " + DtypeName(b.dtype));
}

std::optional<std::vector<PrimExpr>> ShapeValues(const Expr& e) {
  if (const ShapeExprNode* s = As<ShapeExprNode>(e)) return s->values;
  if (e->struct_info && e->struct_info->kind == StructInfoKind::kShape) {
    return e->struct_info->shape;
  }
  return std::nullopt;
}

std::string DtypeName(DataType t) { return std::string(DataTypeName(t)); }

StructInfo SameShape(const StructInfoNode& x, DataType dtype) {
  return TensorSInfo(x.shape, dtype, std::nullopt, x.ndim);
}

namespace {

// The most nodes a broadcast dim's two operands may have together before it is given up.
constexpr size_t kMaxBroadcastExpr = 512;

// Nodes in e's tree, counted up to just past kMaxBroadcastExpr.
size_t ExprSize(const PrimExpr& e, size_t seen = 0) {
  if (!e || seen > kMaxBroadcastExpr) return 0;
  size_t n = 1;
  n += ExprSize(e->a, seen + n);
  n += ExprSize(e->b, seen + n);
  return n;
}

}  // namespace

Expected<std::optional<std::vector<PrimExpr>>> BroadcastShapes(const StructInfoNode& a,
                                                               const StructInfoNode& b, int* ndim) {
  *ndim = (a.ndim < 0 || b.ndim < 0) ? -1 : std::max(a.ndim, b.ndim);
  if (!a.shape || !b.shape) return std::optional<std::vector<PrimExpr>>();
  const std::vector<PrimExpr>& x = *a.shape;
  const std::vector<PrimExpr>& y = *b.shape;
  size_t n = std::max(x.size(), y.size());
  std::vector<PrimExpr> out(n);
  bool known = true;
  for (size_t i = 0; i < n; ++i) {
    PrimExpr dx = i < n - x.size() ? IntImm(1) : x[i - (n - x.size())];
    PrimExpr dy = i < n - y.size() ? IntImm(1) : y[i - (n - y.size())];
    std::optional<int64_t> cx = AsInt(dx), cy = AsInt(dy);
    if (cx == 1) {
      out[i] = dy;
    } else if (cy == 1 || PrimEqual(dx, dy)) {
      out[i] = dx;
    } else if (cx && cy) {
      return Error("shapes cannot broadcast: dimension " + std::to_string(i) + " is " +
                   std::to_string(*cx) + " in one and " + std::to_string(*cy) + " in the other");
    } else if (cx || cy) {
      // n against a constant c other than 1: n is 1 or c wherever the inputs broadcast, and the
      // result c either way (the kernel refuses any other n when it runs).
      out[i] = cx ? dx : dy;
    } else if (ExprSize(dx) + ExprSize(dy) <= kMaxBroadcastExpr) {
      // Two dims the compiler cannot prove equal (an upsampled h * 2 against a conv's
      // (h - 1) // 2 + 1): for every pair that broadcasts (equal, or one of them 1) the result is
      // max(a, b), or 0 where one is 0: max(a, b) * min(a, b, 1). Only the shape's other dims
      // would be lost without it (a network's channels among them).
      out[i] =
          MakeBinary(PrimKind::kMul, MakeBinary(PrimKind::kMax, dx, dy),
                     MakeBinary(PrimKind::kMin, MakeBinary(PrimKind::kMin, dx, dy), IntImm(1)));
    } else {
      known = false;  // each such broadcast doubles the expression: past a bound, rank only
    }
  }
  if (!known) return std::optional<std::vector<PrimExpr>>();
  return std::optional<std::vector<PrimExpr>>(std::move(out));
}

Expected<StructInfo> InferHintOnDevice(const OpInfo& op, const std::vector<Expr>& args,
                                       const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  // The result is on the hinted device, which realize-vdevice resolves against the module's
  // list; until then it is free (it does not inherit the input's device).
  return args[0]->struct_info->vdevice ? WithVDevice(args[0]->struct_info, std::nullopt)
                                       : args[0]->struct_info;
}

Expected<StructInfo> InferToVDevice(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  return WithVDevice(args[0]->struct_info, *attrs.Get<VDevice>("dst_vdevice"));
}

Expected<StructInfo> InferArith(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  return Binary(op, args, false, false);
}

Expected<StructInfo> InferCompare(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  return Binary(op, args, true, false);
}

Expected<StructInfo> InferLogical(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  return Binary(op, args, true, true);
}

Expected<StructInfo> InferLogicalNot(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs&) {
  return Unary(
      op, args, [](DataType t) { return t == DataType::kBool; }, "bool");
}

Expected<StructInfo> InferUnaryFloat(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs&) {
  return Unary(op, args, IsFloat, "floating-point");
}

Expected<StructInfo> InferUnaryNumber(const OpInfo& op, const std::vector<Expr>& args,
                                      const Attrs&) {
  return Unary(
      op, args, [](DataType t) { return IsFloat(t) || IsInteger(t); }, "numeric");
}

Expected<StructInfo> InferAstype(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  return TensorSInfo((*x)->shape, *attrs.Get<DataType>("dtype"), std::nullopt, (*x)->ndim);
}

Expected<StructInfo> InferSoftmax(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  Expected<StructInfo> s = InferUnaryFloat(op, args, attrs);
  if (!s) return s;
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), (*s)->ndim, "axis");
  if (!axis) return axis.error();
  return s;
}

Expected<StructInfo> InferMatmul(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  Expected<const StructInfoNode*> a = TensorArg(op, args, 0);
  if (!a) return a.error();
  Expected<const StructInfoNode*> b = TensorArg(op, args, 1);
  if (!b) return b.error();
  Expected<DataType> dtype = SameDtype(**a, **b);
  if (!dtype) return dtype.error();
  DataType out_dtype = *attrs.Get<DataType>("out_dtype");
  if (out_dtype == DataType::kVoid) out_dtype = *dtype;
  if ((*a)->ndim == 0 || (*b)->ndim == 0) return Error("operands must have rank >= 1");
  if (!(*a)->shape || !(*b)->shape) {
    int ndim = -1;
    if ((*a)->ndim > 0 && (*b)->ndim > 0) {
      ndim = std::max((*a)->ndim, (*b)->ndim);
      if ((*a)->ndim == 1 || (*b)->ndim == 1) ndim -= 1;
      if ((*a)->ndim == 1 && (*b)->ndim == 1) ndim = 0;
    }
    return TensorSInfo(std::nullopt, out_dtype, std::nullopt, ndim);
  }
  std::vector<PrimExpr> x = *(*a)->shape, y = *(*b)->shape;
  bool x_vec = x.size() == 1, y_vec = y.size() == 1;
  if (x_vec) x.insert(x.begin(), IntImm(1));
  if (y_vec) y.push_back(IntImm(1));
  const PrimExpr& kx = x.back();
  const PrimExpr& ky = y[y.size() - 2];
  std::optional<int64_t> ck = AsInt(kx), cy = AsInt(ky);
  if (ck && cy && *ck != *cy) {
    return Error("reduction dimensions differ: " + std::to_string(*ck) + " in '" + op.arg_names[0] +
                 "' and " + std::to_string(*cy) + " in '" + op.arg_names[1] + "'");
  }
  StructInfoNode bx, by;
  bx.shape = std::vector<PrimExpr>(x.begin(), x.end() - 2);
  by.shape = std::vector<PrimExpr>(y.begin(), y.end() - 2);
  bx.ndim = static_cast<int>(bx.shape->size());
  by.ndim = static_cast<int>(by.shape->size());
  int ndim = -1;
  Expected<std::optional<std::vector<PrimExpr>>> batch = BroadcastShapes(bx, by, &ndim);
  if (!batch) return Error("batch " + batch.error().message);
  int out_rank = ndim + (x_vec ? 0 : 1) + (y_vec ? 0 : 1);
  if (!*batch) return TensorSInfo(std::nullopt, out_dtype, std::nullopt, out_rank);
  std::vector<PrimExpr> out = **batch;
  if (!x_vec) out.push_back(x[x.size() - 2]);
  if (!y_vec) out.push_back(y.back());
  return TensorSInfo(std::move(out), out_dtype);
}

Expected<StructInfo> InferReshape(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  std::optional<std::vector<PrimExpr>> target = ShapeValues(args[1]);
  const StructInfo& ss = args[1]->struct_info;
  if (!target) {
    if (ss && ss->kind == StructInfoKind::kShape) {
      return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, ss->ndim);
    }
    return Error("argument 'shape' (" + ArgName(args[1]) + ") is " + Describe(ss) +
                 ", expected a shape");
  }
  std::vector<PrimExpr> dims = *target;
  int infer_at = -1;
  PrimExpr known = IntImm(1);
  for (size_t i = 0; i < dims.size(); ++i) {
    std::optional<int64_t> c = AsInt(dims[i]);
    if (c == -1) {
      if (infer_at >= 0) return Error("more than one -1 in the new shape");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (c && *c < 0) return Error("negative dimension " + std::to_string(*c) + " in new shape");
    known = known * dims[i];
  }
  std::optional<std::vector<int64_t>> in = (*x)->StaticShape();
  if (in) {
    int64_t total = ElementCount(*in).value_or(0);  // InferCall checked the argument's size
    std::optional<int64_t> k = AsInt(known);
    if (k && infer_at >= 0) {
      if (*k == 0 || total % *k != 0) {
        return Error("cannot reshape " + std::to_string(total) + " elements with -1 and " +
                     std::to_string(*k) + " others");
      }
      dims[infer_at] = IntImm(total / *k);
    } else if (k && *k != total) {
      return Error("cannot reshape " + Describe(args[0]->struct_info) + " (" +
                   std::to_string(total) + " elements) into " + std::to_string(*k) + " elements");
    }
  }
  if (infer_at >= 0 && AsInt(dims[infer_at]) == -1) {
    return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, static_cast<int>(dims.size()));
  }
  return TensorSInfo(std::move(dims), (*x)->dtype);
}

Expected<StructInfo> InferPermuteDims(const OpInfo& op, const std::vector<Expr>& args,
                                      const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const auto* axes = attrs.Get<std::vector<int64_t>>("axes");
  int ndim = (*x)->ndim;
  if (axes && ndim >= 0 && static_cast<int>(axes->size()) != ndim) {
    return Error("axes has " + std::to_string(axes->size()) + " entries for a tensor of rank " +
                 std::to_string(ndim));
  }
  if (ndim < 0) {
    int rank = axes ? static_cast<int>(axes->size()) : -1;
    return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, rank);
  }
  std::vector<int64_t> perm(ndim);
  std::set<int64_t> seen;
  for (int i = 0; i < ndim; ++i) {
    int64_t a = axes ? (*axes)[i] : ndim - 1 - i;
    Expected<int64_t> n = NormalizeAxis(a, ndim, "axis");
    if (!n) return n.error();
    if (!seen.insert(*n).second) return Error("axis " + std::to_string(a) + " appears twice");
    perm[i] = *n;
  }
  if (!(*x)->shape) return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, ndim);
  std::vector<PrimExpr> out;
  for (int64_t p : perm) out.push_back((*(*x)->shape)[p]);
  return TensorSInfo(std::move(out), (*x)->dtype);
}

Expected<StructInfo> InferConcat(const OpInfo&, const std::vector<Expr>& args, const Attrs& attrs) {
  const StructInfo& t = args[0]->struct_info;
  if (!t || t->kind != StructInfoKind::kTuple || t->fields.empty()) {
    return Error("argument 'tensors' must be a non-empty tuple of tensors, got " + Describe(t));
  }
  DataType dtype = DataType::kVoid;
  int ndim = -1;
  for (size_t i = 0; i < t->fields.size(); ++i) {
    const StructInfo& f = t->fields[i];
    if (!f->IsTensor()) return Error("field " + std::to_string(i) + " is not a tensor");
    if (f->dtype != DataType::kVoid) {
      if (dtype != DataType::kVoid && dtype != f->dtype) {
        return Error("dtypes differ: " + DtypeName(dtype) + " and " + DtypeName(f->dtype));
      }
      dtype = f->dtype;
    }
    if (f->ndim >= 0) {
      if (ndim >= 0 && ndim != f->ndim) {
        return Error("ranks differ: " + std::to_string(ndim) + " and " + std::to_string(f->ndim));
      }
      ndim = f->ndim;
    }
  }
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), ndim, "axis");
  if (!axis) return axis.error();
  std::vector<PrimExpr> out;
  for (size_t i = 0; i < t->fields.size(); ++i) {
    const StructInfo& f = t->fields[i];
    if (!f->shape) return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
    if (i == 0) {
      out = *f->shape;
      continue;
    }
    for (int d = 0; d < ndim; ++d) {
      const PrimExpr& v = (*f->shape)[d];
      if (d == *axis) {
        out[d] = out[d] + v;
        continue;
      }
      std::optional<int64_t> a = AsInt(out[d]), b = AsInt(v);
      if (a && b && *a != *b) {
        return Error("dimension " + std::to_string(d) + " differs: " + std::to_string(*a) +
                     " and " + std::to_string(*b));
      }
    }
  }
  return TensorSInfo(std::move(out), dtype);
}

Expected<StructInfo> InferExpandDims(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const std::vector<int64_t>& axes = *attrs.Get<std::vector<int64_t>>("axis");
  if ((*x)->ndim < 0) return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, -1);
  int out_ndim = (*x)->ndim + static_cast<int>(axes.size());
  std::vector<bool> is_new(out_ndim, false);
  for (int64_t a : axes) {
    Expected<int64_t> n = NormalizeAxis(a, out_ndim, "axis");
    if (!n) return n.error();
    if (is_new[*n]) return Error("axis " + std::to_string(a) + " appears twice");
    is_new[*n] = true;
  }
  if (!(*x)->shape) return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, out_ndim);
  std::vector<PrimExpr> out;
  size_t j = 0;
  for (int i = 0; i < out_ndim; ++i) out.push_back(is_new[i] ? IntImm(1) : (*(*x)->shape)[j++]);
  return TensorSInfo(std::move(out), (*x)->dtype);
}

Expected<StructInfo> InferSqueeze(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const auto* axes = attrs.Get<std::vector<int64_t>>("axis");
  int ndim = (*x)->ndim;
  if (ndim < 0) return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, -1);
  std::vector<bool> drop(ndim, false);
  const std::vector<PrimExpr>* shape = (*x)->shape ? &*(*x)->shape : nullptr;
  if (axes) {
    for (int64_t a : *axes) {
      Expected<int64_t> n = NormalizeAxis(a, ndim, "axis");
      if (!n) return n.error();
      if (shape) {
        std::optional<int64_t> c = AsInt((*shape)[*n]);
        if (c && *c != 1) {
          return Error("cannot squeeze axis " + std::to_string(a) + " of size " +
                       std::to_string(*c));
        }
      }
      drop[*n] = true;
    }
  } else {
    if (!shape) return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, -1);
    for (int i = 0; i < ndim; ++i) {
      std::optional<int64_t> c = AsInt((*shape)[i]);
      if (!c) return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, -1);
      drop[i] = *c == 1;
    }
  }
  int out_ndim = static_cast<int>(std::count(drop.begin(), drop.end(), false));
  if (!shape) return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, out_ndim);
  std::vector<PrimExpr> out;
  for (int i = 0; i < ndim; ++i) {
    if (!drop[i]) out.push_back((*shape)[i]);
  }
  return TensorSInfo(std::move(out), (*x)->dtype);
}

}  // namespace quilt::ir

namespace quilt::ir {

Expected<StructInfo> InferBitwise(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  Expected<StructInfo> s = InferArith(op, args, attrs);
  if (!s) return s;
  DataType t = (*s)->dtype;
  if (t != DataType::kVoid && !IsInteger(t) &&
      !(t == DataType::kBool && op.name.find("bitwise") == 0)) {
    return Error("expects integer tensors, got " + DtypeName(t));
  }
  return s;
}

Expected<StructInfo> InferUnaryInteger(const OpInfo& op, const std::vector<Expr>& args,
                                       const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType t = (*x)->dtype;
  if (t != DataType::kVoid && !IsInteger(t) && t != DataType::kBool) {
    return Error("expects integer tensors, got " + DtypeName(t));
  }
  return SameShape(**x, t);
}

Expected<StructInfo> InferUnaryPredicate(const OpInfo& op, const std::vector<Expr>& args,
                                         const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if ((*x)->dtype != DataType::kVoid && !IsFloat((*x)->dtype)) {
    return Error("expects floating-point tensors, got " + DtypeName((*x)->dtype));
  }
  return SameShape(**x, DataType::kBool);
}

Expected<StructInfo> InferWhere(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  Expected<const StructInfoNode*> c = TensorArg(op, args, 0);
  if (!c) return c.error();
  if ((*c)->dtype != DataType::kVoid && (*c)->dtype != DataType::kBool) {
    return Error("the condition must be bool, got " + DtypeName((*c)->dtype));
  }
  Expected<const StructInfoNode*> a = TensorArg(op, args, 1);
  if (!a) return a.error();
  Expected<const StructInfoNode*> b = TensorArg(op, args, 2);
  if (!b) return b.error();
  Expected<DataType> dtype = SameDtype(**a, **b);
  if (!dtype) return dtype.error();
  int ndim = -1;
  Expected<std::optional<std::vector<PrimExpr>>> ab = BroadcastShapes(**a, **b, &ndim);
  if (!ab) return ab.error();
  StructInfo mid = TensorSInfo(*ab, *dtype, std::nullopt, ndim);
  Expected<std::optional<std::vector<PrimExpr>>> all = BroadcastShapes(**c, *mid, &ndim);
  if (!all) return all.error();
  return TensorSInfo(*all, *dtype, std::nullopt, ndim);
}

std::optional<double> ConstantElement(const ConstantNode& c, int64_t k) {
  const uint8_t* p = c.data->data();
  auto get = [&](auto v) {
    std::memcpy(&v, p + sizeof(v) * k, sizeof(v));
    return static_cast<double>(v);
  };
  switch (c.dtype) {
    case DataType::kFloat32:
      return get(float{});
    case DataType::kFloat64:
      return get(double{});
    case DataType::kInt64:
      return get(int64_t{});
    case DataType::kInt32:
      return get(int32_t{});
    case DataType::kInt16:
      return get(int16_t{});
    case DataType::kInt8:
      return get(int8_t{});
    case DataType::kUInt64:
      return get(uint64_t{});
    case DataType::kUInt32:
      return get(uint32_t{});
    case DataType::kUInt16:
      return get(uint16_t{});
    case DataType::kUInt8:
      return get(uint8_t{});
    default:
      return std::nullopt;
  }
}

std::optional<std::vector<double>> ConstantValues(const Expr& e) {
  const ConstantNode* c = As<ConstantNode>(e);
  if (!c) return std::nullopt;
  std::vector<double> out;
  for (int64_t k = 0; k < c->NumElements(); ++k) {
    std::optional<double> v = ConstantElement(*c, k);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

}  // namespace quilt::ir
