// Struct-info rules of the ops in ir/ops/manip.def (the first layout ops are in op_infer.cc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

StructInfo Unknown(DataType dtype, int ndim) {
  return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
}

// The shape argument i: its values when known, else its rank (-1 when unknown) in *ndim.
Expected<std::optional<std::vector<PrimExpr>>> ShapeArg(const OpInfo& op,
                                                        const std::vector<Expr>& args, size_t i,
                                                        int* ndim) {
  const StructInfo& s = args[i]->struct_info;
  if (!s || s->kind != StructInfoKind::kShape) {
    return Error("argument '" + op.arg_names[i] + "' (" + ArgName(args[i]) + ") is " + Describe(s) +
                 ", expected a shape");
  }
  std::optional<std::vector<PrimExpr>> v = ShapeValues(args[i]);
  *ndim = v ? static_cast<int>(v->size()) : s->ndim;
  return v;
}

// A scalar argument's value: an integer PrimExpr (prim value, or an integral constant) or a
// double (floating-point constant). Neither when it is only known at run time.
struct ScalarValue {
  PrimExpr integer;
  std::optional<double> number;
};

ScalarValue ScalarOf(const Expr& e) {
  ScalarValue out;
  const StructInfo& s = e->struct_info;
  if (s && s->kind == StructInfoKind::kPrim && s->value) {
    out.integer = s->value;
    if (auto v = AsInt(s->value)) out.number = static_cast<double>(*v);
    return out;
  }
  if (const ConstantNode* c = As<ConstantNode>(e); c && c->NumElements() == 1) {
    out.number = ConstantElement(*c, 0);
    if (out.number && !IsFloat(c->dtype)) out.integer = IntImm(static_cast<int64_t>(*out.number));
  }
  return out;
}

bool IsIndexType(DataType t) {
  return t == DataType::kVoid || t == DataType::kInt64 || t == DataType::kInt32;
}

Expected<const StructInfoNode*> IndexArg(const OpInfo& op, const std::vector<Expr>& args,
                                         size_t i) {
  Expected<const StructInfoNode*> t = TensorArg(op, args, i);
  if (!t) return t;
  if (!IsIndexType((*t)->dtype)) {
    return Error("argument '" + op.arg_names[i] + "' must be int32 or int64, got " +
                 DtypeName((*t)->dtype));
  }
  return t;
}

constexpr int64_t kBig = (int64_t{1} << 31) - 1;  // at or past this, a bound means "the end"
// A constant bound at or past this on a symbolic dim is clamped against it, T.min(bound, n):
// exporters write huge bounds for "to the end" (tf2onnx: 1000000000).
constexpr int64_t kClampFrom = int64_t{1} << 20;

// The length of an ONNX slice of a dim of size n (begin/end clamped as ONNX does). Smaller
// constant bounds on symbolic dims, and symbolic bounds, are assumed in range.
Expected<PrimExpr> SliceLength(const PrimExpr& n, const PrimExpr& b, const PrimExpr& e,
                               int64_t step) {
  std::optional<int64_t> cn = AsInt(n), cb = AsInt(b), ce = AsInt(e);
  if (cn && cb && ce) {
    int64_t dim = *cn, lo = *cb, hi = *ce;
    if (lo < 0) lo += dim;
    if (hi < 0) hi += dim;
    int64_t len;
    if (step > 0) {
      lo = std::clamp<int64_t>(lo, 0, dim);
      hi = std::clamp<int64_t>(hi, 0, dim);
      len = hi > lo ? (hi - lo + step - 1) / step : 0;
    } else {
      lo = std::clamp<int64_t>(lo, 0, dim - 1);
      hi = std::clamp<int64_t>(hi, -1, dim - 1);
      len = lo > hi ? (lo - hi - step - 1) / -step : 0;
    }
    return IntImm(len);
  }
  // A bound is n + offset (relative, offset constant) or an absolute value.
  struct Bound {
    bool relative;
    PrimExpr v;
  };
  auto norm = [&](const PrimExpr& v) -> Bound {
    std::optional<int64_t> c = AsInt(v);
    if (!c) return {false, v};
    if (*c >= kBig) return {true, IntImm(step > 0 ? 0 : -1)};
    if (*c <= -kBig) return {false, IntImm(step > 0 ? 0 : -1)};
    if (*c >= kClampFrom) {
      return {false, MakeBinary(PrimKind::kMin, v, step > 0 ? n : n - IntImm(1))};
    }
    return {*c < 0, v};
  };
  auto plus = [](const PrimExpr& x, int64_t c) { return c < 0 ? x - IntImm(-c) : x + IntImm(c); };
  // hi - lo, with n cancelled when both are relative.
  auto minus = [&](const Bound& hi, const Bound& lo) -> PrimExpr {
    int64_t h = AsInt(hi.v).value_or(0), l = AsInt(lo.v).value_or(0);
    if (hi.relative && lo.relative) return IntImm(h - l);
    if (hi.relative) return AsInt(lo.v) ? plus(n, h - l) : plus(n, h) - lo.v;
    if (lo.relative) return AsInt(hi.v) ? plus(IntImm(0) - n, h - l) : plus(hi.v - n, -l);
    return hi.v - lo.v;
  };
  Bound lo = norm(b), hi = norm(e);
  PrimExpr diff = step > 0 ? minus(hi, lo) : minus(lo, hi);
  int64_t s = step > 0 ? step : -step;
  if (auto d = AsInt(diff)) return IntImm(*d > 0 ? (*d + s - 1) / s : 0);
  if (s == 1) return diff;
  return MakeBinary(PrimKind::kFloorDiv, diff + IntImm(s - 1), IntImm(s));
}

}  // namespace

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
  if ((*x)->ndim >= 0 && (*x)->ndim != 1) {
    return Error("expects a 1-D tensor, got rank " + std::to_string((*x)->ndim));
  }
  if ((*x)->dtype != DataType::kInt64 && (*x)->dtype != DataType::kVoid) {
    return Error("expects an int64 tensor, got " + DtypeName((*x)->dtype));
  }
  // A length known only at run time gives a shape of unknown rank.
  std::optional<std::vector<int64_t>> shape = (*x)->StaticShape();
  if (!shape) return ShapeSInfo(std::nullopt, -1);
  return ShapeSInfo(std::nullopt, static_cast<int>((*shape)[0]));
}

Expected<StructInfo> InferBroadcastTo(const OpInfo& op, const std::vector<Expr>& args,
                                      const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  int ndim = -1;
  Expected<std::optional<std::vector<PrimExpr>>> target = ShapeArg(op, args, 1, &ndim);
  if (!target) return target.error();
  if (ndim >= 0 && (*x)->ndim > ndim) {
    return Error("cannot broadcast a tensor of rank " + std::to_string((*x)->ndim) + " to rank " +
                 std::to_string(ndim));
  }
  if (!*target) return Unknown((*x)->dtype, ndim);
  if ((*x)->shape) {
    const std::vector<PrimExpr>& in = *(*x)->shape;
    size_t off = (*target)->size() - in.size();
    for (size_t i = 0; i < in.size(); ++i) {
      std::optional<int64_t> a = AsInt(in[i]), b = AsInt((**target)[off + i]);
      if (a && b && *a != 1 && *a != *b) {
        return Error("cannot broadcast dimension " + std::to_string(i) + " of size " +
                     std::to_string(*a) + " to " + std::to_string(*b));
      }
    }
  }
  return TensorSInfo(**target, (*x)->dtype);
}

Expected<StructInfo> InferFull(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  int ndim = -1;
  Expected<std::optional<std::vector<PrimExpr>>> shape = ShapeArg(op, args, 0, &ndim);
  if (!shape) return shape.error();
  Expected<const StructInfoNode*> v = TensorArg(op, args, 1);
  if (!v) return v.error();
  if ((*v)->ndim > 0)
    return Error("fill_value must be a scalar, got rank " + std::to_string((*v)->ndim));
  DataType dtype = (*v)->dtype;
  if (const DataType* d = attrs.Get<DataType>("dtype")) dtype = *d;
  if (*shape) {
    for (const PrimExpr& d : **shape) {
      if (auto c = AsInt(d); c && *c < 0) return Error("negative dimension " + std::to_string(*c));
    }
    return TensorSInfo(**shape, dtype);
  }
  return Unknown(dtype, ndim);
}

Expected<StructInfo> InferFail(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  int ndim = -1;
  Expected<std::optional<std::vector<PrimExpr>>> shape = ShapeArg(op, args, 0, &ndim);
  if (!shape) return shape.error();
  DataType dtype = *attrs.Get<DataType>("dtype");
  if (*shape) return TensorSInfo(**shape, dtype);
  return Unknown(dtype, ndim);
}

Expected<StructInfo> InferArange(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  DataType dtype = *attrs.Get<DataType>("dtype");
  ScalarValue v[3];
  for (size_t i = 0; i < 3; ++i) {
    const StructInfo& s = args[i]->struct_info;
    if (!s || !(s->kind == StructInfoKind::kPrim || (s->IsTensor() && s->ndim <= 0))) {
      return Error("argument '" + op.arg_names[i] + "' must be a scalar, got " + Describe(s));
    }
    v[i] = ScalarOf(args[i]);
  }
  if (v[2].number && *v[2].number == 0) return Error("step must not be zero");
  if (v[0].number && v[1].number && v[2].number) {
    double n = std::ceil((*v[1].number - *v[0].number) / *v[2].number);
    return TensorSInfo(std::vector<int64_t>{std::max<int64_t>(0, static_cast<int64_t>(n))}, dtype);
  }
  if (v[0].integer && v[1].integer && v[2].number) {
    int64_t step = static_cast<int64_t>(*v[2].number);
    PrimExpr diff = step > 0 ? v[1].integer - v[0].integer : v[0].integer - v[1].integer;
    int64_t s = std::abs(step);
    PrimExpr len = s == 1 ? diff : MakeBinary(PrimKind::kFloorDiv, diff + IntImm(s - 1), IntImm(s));
    return TensorSInfo(std::vector<PrimExpr>{len}, dtype);
  }
  return Unknown(dtype, 1);
}

Expected<StructInfo> InferEyeLike(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if ((*x)->ndim >= 0 && (*x)->ndim != 2) {
    return Error("expects a 2-D tensor, got rank " + std::to_string((*x)->ndim));
  }
  DataType dtype = (*x)->dtype;
  if (const DataType* d = attrs.Get<DataType>("dtype")) dtype = *d;
  return TensorSInfo((*x)->shape, dtype, std::nullopt, 2);
}

Expected<StructInfo> InferSize(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  return TensorSInfo(std::vector<int64_t>{}, DataType::kInt64);
}

namespace {

Expected<StructInfo> SliceRule(const StructInfoNode& x, const std::vector<int64_t>& axes,
                               const std::optional<std::vector<PrimExpr>> (&bounds)[3]) {
  int ndim = x.ndim;
  std::vector<int64_t> norm;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    Expected<int64_t> n = NormalizeAxis(a, ndim, "axis");
    if (!n) return n.error();
    if (!seen.insert(*n).second) return Error("axis " + std::to_string(a) + " appears twice");
    norm.push_back(*n);
  }
  if (bounds[2]) {
    for (const PrimExpr& s : *bounds[2]) {
      if (AsInt(s) == 0) return Error("a slice step must not be zero");
    }
  }
  if (!x.shape || !bounds[0] || !bounds[1] || !bounds[2]) return Unknown(x.dtype, ndim);
  std::vector<PrimExpr> out = *x.shape;
  for (size_t i = 0; i < norm.size(); ++i) {
    std::optional<int64_t> step = AsInt((*bounds[2])[i]);
    if (!step) return Unknown(x.dtype, ndim);
    Expected<PrimExpr> len = SliceLength(out[norm[i]], (*bounds[0])[i], (*bounds[1])[i], *step);
    if (!len) return len.error();
    out[norm[i]] = *len;
  }
  return TensorSInfo(std::move(out), x.dtype);
}

}  // namespace

Expected<StructInfo> InferStridedSlice(const OpInfo& op, const std::vector<Expr>& args,
                                       const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const std::vector<int64_t>& axes = *attrs.Get<std::vector<int64_t>>("axes");
  std::optional<std::vector<PrimExpr>> bounds[3];
  const char* names[3] = {"begin", "end", "strides"};
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<int64_t>& v = *attrs.Get<std::vector<int64_t>>(names[i]);
    if (v.size() != axes.size()) {
      return Error(std::string(names[i]) + " has " + std::to_string(v.size()) + " values for " +
                   std::to_string(axes.size()) + " axes");
    }
    bounds[i].emplace();
    for (int64_t e : v) bounds[i]->push_back(IntImm(e));
  }
  return SliceRule(**x, axes, bounds);
}

Expected<StructInfo> InferDynamicStridedSlice(const OpInfo& op, const std::vector<Expr>& args,
                                              const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const std::vector<int64_t>& axes = *attrs.Get<std::vector<int64_t>>("axes");
  std::optional<std::vector<PrimExpr>> bounds[3];
  for (size_t i = 0; i < 3; ++i) {
    int n = -1;
    Expected<std::optional<std::vector<PrimExpr>>> v = ShapeArg(op, args, i + 1, &n);
    if (!v) return v.error();
    if (n >= 0 && n != static_cast<int>(axes.size())) {
      return Error("'" + op.arg_names[i + 1] + "' has " + std::to_string(n) + " values for " +
                   std::to_string(axes.size()) + " axes");
    }
    bounds[i] = *v;
  }
  return SliceRule(**x, axes, bounds);
}

Expected<StructInfo> InferPad(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> v = TensorArg(op, args, 1);
  if (!v) return v.error();
  if ((*v)->ndim > 0)
    return Error("pad_value must be a scalar, got rank " + std::to_string((*v)->ndim));
  Expected<DataType> dtype = SameDtype(**x, **v);
  if (!dtype) return Error("pad_value: " + dtype.error().message);
  const std::string& mode = *attrs.Get<std::string>("pad_mode");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    return Error("pad_mode must be constant, edge, reflect or wrap, got '" + mode + "'");
  }
  const std::vector<int64_t>& w = *attrs.Get<std::vector<int64_t>>("pad_width");
  int ndim = (*x)->ndim;
  if (ndim >= 0 && static_cast<int>(w.size()) != 2 * ndim) {
    return Error("pad_width has " + std::to_string(w.size()) + " values for rank " +
                 std::to_string(ndim) + ", expected " + std::to_string(2 * ndim));
  }
  if (!(*x)->shape) return Unknown((*x)->dtype, static_cast<int>(w.size() / 2));
  std::vector<PrimExpr> out;
  for (int i = 0; i < ndim; ++i) {
    PrimExpr d = (*(*x)->shape)[i] + IntImm(w[2 * i] + w[2 * i + 1]);
    if (auto c = AsInt(d); c && *c < 0) {
      return Error("padding axis " + std::to_string(i) + " by " + std::to_string(w[2 * i]) +
                   " and " + std::to_string(w[2 * i + 1]) + " gives a negative size");
    }
    out.push_back(d);
  }
  return TensorSInfo(std::move(out), (*x)->dtype);
}

Expected<StructInfo> InferDynamicPad(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> v = TensorArg(op, args, 1);
  if (!v) return v.error();
  if ((*v)->ndim > 0) {
    return Error("pad_value must be a scalar, got rank " + std::to_string((*v)->ndim));
  }
  Expected<DataType> dtype = SameDtype(**x, **v);
  if (!dtype) return Error("pad_value: " + dtype.error().message);
  const std::string& mode = *attrs.Get<std::string>("pad_mode");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    return Error("pad_mode must be constant, edge, reflect or wrap, got '" + mode + "'");
  }
  int n = -1;
  Expected<std::optional<std::vector<PrimExpr>>> pads = ShapeArg(op, args, 2, &n);
  if (!pads) return pads.error();
  const std::vector<int64_t>& axes = *attrs.Get<std::vector<int64_t>>("axes");
  if (n >= 0 && n != 2 * static_cast<int>(axes.size())) {
    return Error("pads has " + std::to_string(n) + " values for " + std::to_string(axes.size()) +
                 " axes, expected " + std::to_string(2 * axes.size()));
  }
  int ndim = (*x)->ndim;
  std::vector<int64_t> norm;
  for (int64_t a : axes) {
    Expected<int64_t> ax = NormalizeAxis(a, ndim, "axis");
    if (!ax) return ax.error();
    norm.push_back(*ax);
  }
  if (!*pads || !(*x)->shape) return Unknown((*x)->dtype, ndim);
  std::vector<PrimExpr> out = *(*x)->shape;
  for (size_t i = 0; i < norm.size(); ++i) {
    out[norm[i]] = out[norm[i]] + (**pads)[i] + (**pads)[i + norm.size()];
  }
  return TensorSInfo(std::move(out), (*x)->dtype);
}

namespace {

// `n` parts of ceil(d / n) along `axis`, the last one smaller. With d static, part i has
// max(0, min(chunk, d - chunk * i)) elements; with d symbolic the parts are assumed non-empty
// (chunk each, the last d - chunk * (n - 1)), as ONNX's shape inference assumes.
StructInfo SplitSections(const StructInfoNode& x, int64_t axis, int64_t n) {
  std::vector<StructInfo> fields;
  for (int64_t i = 0; i < n; ++i) {
    if (!x.shape) {
      fields.push_back(Unknown(x.dtype, x.ndim));
      continue;
    }
    std::vector<PrimExpr> s = *x.shape;
    const PrimExpr d = s[axis];
    if (std::optional<int64_t> c = AsInt(d)) {
      int64_t chunk = (*c + n - 1) / n;
      s[axis] = IntImm(std::max<int64_t>(0, std::min(chunk, *c - chunk * i)));
    } else {
      PrimExpr chunk = MakeBinary(PrimKind::kFloorDiv, d + IntImm(n - 1), IntImm(n));
      s[axis] = i + 1 < n ? chunk : d - chunk * IntImm(n - 1);
    }
    fields.push_back(TensorSInfo(std::move(s), x.dtype));
  }
  return TupleSInfo(std::move(fields));
}

}  // namespace

Expected<StructInfo> InferSplit(const OpInfo& op, const std::vector<Expr>& args,
                                const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const std::vector<int64_t>& idx = *attrs.Get<std::vector<int64_t>>("indices_or_sections");
  int ndim = (*x)->ndim;
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), ndim, "axis");
  if (!axis) return axis.error();
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || (i > 0 && idx[i] < idx[i - 1])) {
      return Error("split indices must be non-negative and ascending");
    }
  }
  std::vector<StructInfo> fields;
  int64_t sections = *attrs.Get<int64_t>("sections");
  if (sections < 0) return Error("sections must be non-negative, got " + std::to_string(sections));
  if (sections > 0) {
    if (!idx.empty()) return Error("indices_or_sections must be empty when sections is given");
    return SplitSections(**x, *axis, sections);
  }
  std::optional<int64_t> total;
  if ((*x)->shape) total = AsInt((*(*x)->shape)[*axis]);
  if (total && !idx.empty() && idx.back() > *total) {
    return Error("split index " + std::to_string(idx.back()) + " is past the size " +
                 std::to_string(*total) + " of axis " + std::to_string(*axis));
  }
  for (size_t i = 0; i <= idx.size(); ++i) {
    if (!(*x)->shape) {
      fields.push_back(Unknown((*x)->dtype, ndim));
      continue;
    }
    std::vector<PrimExpr> s = *(*x)->shape;
    PrimExpr lo = IntImm(i == 0 ? 0 : idx[i - 1]);
    PrimExpr hi = i == idx.size() ? s[*axis] : IntImm(idx[i]);
    s[*axis] = hi - lo;
    fields.push_back(TensorSInfo(std::move(s), (*x)->dtype));
  }
  return TupleSInfo(std::move(fields));
}

Expected<StructInfo> InferTile(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const std::vector<int64_t>& r = *attrs.Get<std::vector<int64_t>>("repeats");
  int ndim = (*x)->ndim;
  if (ndim >= 0 && static_cast<int>(r.size()) != ndim) {
    return Error("repeats has " + std::to_string(r.size()) + " values for rank " +
                 std::to_string(ndim));
  }
  for (int64_t v : r) {
    if (v < 0) return Error("repeats must be non-negative, got " + std::to_string(v));
  }
  if (!(*x)->shape) return Unknown((*x)->dtype, static_cast<int>(r.size()));
  std::vector<PrimExpr> out;
  for (int i = 0; i < ndim; ++i) out.push_back((*(*x)->shape)[i] * IntImm(r[i]));
  return TensorSInfo(std::move(out), (*x)->dtype);
}

Expected<StructInfo> InferDynamicTile(const OpInfo& op, const std::vector<Expr>& args,
                                      const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  int n = -1;
  Expected<std::optional<std::vector<PrimExpr>>> r = ShapeArg(op, args, 1, &n);
  if (!r) return r.error();
  int ndim = (*x)->ndim;
  if (ndim >= 0 && n >= 0 && n != ndim) {
    return Error("repeats has " + std::to_string(n) + " values for rank " + std::to_string(ndim));
  }
  if (*r) {
    for (const PrimExpr& v : **r) {
      if (std::optional<int64_t> c = AsInt(v); c && *c < 0) {
        return Error("repeats must be non-negative, got " + std::to_string(*c));
      }
    }
  }
  if (ndim < 0) ndim = n;
  if (!*r || !(*x)->shape) return Unknown((*x)->dtype, ndim);
  std::vector<PrimExpr> out;
  for (int i = 0; i < ndim; ++i) out.push_back((*(*x)->shape)[i] * (**r)[i]);
  return TensorSInfo(std::move(out), (*x)->dtype);
}

Expected<StructInfo> InferTrilu(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if ((*x)->ndim >= 0 && (*x)->ndim < 2) {
    return Error("expects a tensor of rank >= 2, got rank " + std::to_string((*x)->ndim));
  }
  return SameShape(**x, (*x)->dtype);
}

Expected<StructInfo> InferReverseSequence(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> l = IndexArg(op, args, 1);
  if (!l) return l.error();
  if ((*l)->ndim >= 0 && (*l)->ndim != 1) return Error("seq_lengths must be 1-D");
  int ndim = (*x)->ndim;
  if (ndim >= 0 && ndim < 2)
    return Error("expects a tensor of rank >= 2, got rank " + std::to_string(ndim));
  Expected<int64_t> t = NormalizeAxis(*attrs.Get<int64_t>("seq_axis"), ndim, "seq_axis");
  if (!t) return t.error();
  Expected<int64_t> b = NormalizeAxis(*attrs.Get<int64_t>("batch_axis"), ndim, "batch_axis");
  if (!b) return b.error();
  if (*t == *b) return Error("seq_axis and batch_axis must differ");
  if ((*x)->shape && (*l)->shape) {
    std::optional<int64_t> a = AsInt((*(*x)->shape)[*b]), c = AsInt((*(*l)->shape)[0]);
    if (a && c && *a != *c) {
      return Error("seq_lengths has " + std::to_string(*c) + " values for a batch of " +
                   std::to_string(*a));
    }
  }
  return SameShape(**x, (*x)->dtype);
}

Expected<StructInfo> InferBitcast(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType to = *attrs.Get<DataType>("dtype");
  if ((*x)->dtype != DataType::kVoid && DataTypeBits((*x)->dtype) != DataTypeBits(to)) {
    return Error("cannot bitcast " + DtypeName((*x)->dtype) + " to " + DtypeName(to) +
                 ": the element sizes differ");
  }
  return SameShape(**x, to);
}

Expected<StructInfo> InferTake(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> ind = IndexArg(op, args, 1);
  if (!ind) return ind.error();
  const std::string& mode = *attrs.Get<std::string>("mode");
  if (mode != "fast" && mode != "wrap" && mode != "clip") {
    return Error("mode must be fast, wrap or clip, got '" + mode + "'");
  }
  int ndim = (*x)->ndim;
  if (ndim == 0) return Error("cannot take from a scalar");
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), ndim, "axis");
  if (!axis) return axis.error();
  int out_ndim = ndim < 0 || (*ind)->ndim < 0 ? -1 : ndim - 1 + (*ind)->ndim;
  if (!(*x)->shape || !(*ind)->shape) return Unknown((*x)->dtype, out_ndim);
  const std::vector<PrimExpr>& s = *(*x)->shape;
  std::vector<PrimExpr> out(s.begin(), s.begin() + *axis);
  out.insert(out.end(), (*ind)->shape->begin(), (*ind)->shape->end());
  out.insert(out.end(), s.begin() + *axis + 1, s.end());
  return TensorSInfo(std::move(out), (*x)->dtype);
}

Expected<StructInfo> InferGatherElements(const OpInfo& op, const std::vector<Expr>& args,
                                         const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> ind = IndexArg(op, args, 1);
  if (!ind) return ind.error();
  int ndim = (*x)->ndim;
  if (ndim >= 0 && (*ind)->ndim >= 0 && ndim != (*ind)->ndim) {
    return Error("data and indices must have the same rank, got " + std::to_string(ndim) + " and " +
                 std::to_string((*ind)->ndim));
  }
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), ndim, "axis");
  if (!axis) return axis.error();
  return TensorSInfo((*ind)->shape, (*x)->dtype, std::nullopt,
                     (*ind)->ndim >= 0 ? (*ind)->ndim : ndim);
}

Expected<StructInfo> InferGatherND(const OpInfo& op, const std::vector<Expr>& args,
                                   const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> ind = TensorArg(op, args, 1);
  if (!ind) return ind.error();
  if ((*ind)->dtype != DataType::kVoid && (*ind)->dtype != DataType::kInt64) {
    return Error("indices must be int64, got " + DtypeName((*ind)->dtype));
  }
  int64_t b = *attrs.Get<int64_t>("batch_dims");
  int r = (*x)->ndim, q = (*ind)->ndim;
  if (b < 0) return Error("batch_dims must be non-negative");
  if (q == 0) return Error("indices must have rank >= 1");
  if (!(*ind)->shape || r < 0) return Unknown((*x)->dtype, -1);
  std::optional<int64_t> k = AsInt((*ind)->shape->back());
  if (!k) return Unknown((*x)->dtype, -1);
  if (b >= std::min<int64_t>(r, q) || *k < 1 || b + *k > r) {
    return Error("indices.shape[-1] = " + std::to_string(*k) + " with batch_dims " +
                 std::to_string(b) + " does not fit data of rank " + std::to_string(r));
  }
  int out_ndim = q - 1 + r - static_cast<int>(b + *k);
  if (!(*x)->shape) return Unknown((*x)->dtype, out_ndim);
  std::vector<PrimExpr> out((*ind)->shape->begin(), (*ind)->shape->end() - 1);
  out.insert(out.end(), (*x)->shape->begin() + b + *k, (*x)->shape->end());
  return TensorSInfo(std::move(out), (*x)->dtype);
}

namespace {
Status CheckReduction(const std::string& r) {
  if (r != "update" && r != "add" && r != "mul" && r != "max" && r != "min") {
    return Error("reduction must be update, add, mul, max or min, got '" + r + "'");
  }
  return {};
}
}  // namespace

Expected<StructInfo> InferScatterElements(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> ind = IndexArg(op, args, 1);
  if (!ind) return ind.error();
  Expected<const StructInfoNode*> upd = TensorArg(op, args, 2);
  if (!upd) return upd.error();
  Expected<DataType> dtype = SameDtype(**x, **upd);
  if (!dtype) return Error("updates: " + dtype.error().message);
  if (Status s = CheckReduction(*attrs.Get<std::string>("reduction")); !s) return s.error();
  int ndim = (*x)->ndim;
  for (const StructInfoNode* t : {*ind, *upd}) {
    if (ndim >= 0 && t->ndim >= 0 && t->ndim != ndim) {
      return Error("data, indices and updates must have the same rank");
    }
  }
  if ((*ind)->shape && (*upd)->shape) {
    for (size_t i = 0; i < (*ind)->shape->size(); ++i) {
      std::optional<int64_t> a = AsInt((*(*ind)->shape)[i]), c = AsInt((*(*upd)->shape)[i]);
      if (a && c && *a != *c) return Error("indices and updates must have the same shape");
    }
  }
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), ndim, "axis");
  if (!axis) return axis.error();
  return SameShape(**x, *dtype);
}

Expected<StructInfo> InferScatterND(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> ind = TensorArg(op, args, 1);
  if (!ind) return ind.error();
  if ((*ind)->dtype != DataType::kVoid && (*ind)->dtype != DataType::kInt64) {
    return Error("indices must be int64, got " + DtypeName((*ind)->dtype));
  }
  Expected<const StructInfoNode*> upd = TensorArg(op, args, 2);
  if (!upd) return upd.error();
  Expected<DataType> dtype = SameDtype(**x, **upd);
  if (!dtype) return Error("updates: " + dtype.error().message);
  if (Status s = CheckReduction(*attrs.Get<std::string>("reduction")); !s) return s.error();
  int r = (*x)->ndim, q = (*ind)->ndim;
  if (q == 0) return Error("indices must have rank >= 1");
  if ((*ind)->shape && r >= 0) {
    if (std::optional<int64_t> k = AsInt((*ind)->shape->back())) {
      if (*k > r) {
        return Error("indices.shape[-1] = " + std::to_string(*k) + " exceeds the rank " +
                     std::to_string(r) + " of data");
      }
      if ((*upd)->ndim >= 0 && (*upd)->ndim != q - 1 + r - *k) {
        return Error("updates has rank " + std::to_string((*upd)->ndim) + ", expected " +
                     std::to_string(q - 1 + r - *k));
      }
    }
  }
  return SameShape(**x, *dtype);
}

Expected<StructInfo> InferOneHot(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  Expected<const StructInfoNode*> ind = TensorArg(op, args, 0);
  if (!ind) return ind.error();
  const StructInfo& ds = args[1]->struct_info;
  if (!ds || !(ds->kind == StructInfoKind::kPrim || (ds->IsTensor() && ds->ndim <= 1))) {
    return Error("depth must be a scalar, got " + Describe(ds));
  }
  Expected<const StructInfoNode*> v = TensorArg(op, args, 2);
  if (!v) return v.error();
  if ((*v)->shape) {
    if ((*v)->shape->size() != 1 || (AsInt((*v)->shape->at(0)) && AsInt((*v)->shape->at(0)) != 2)) {
      return Error("values must hold two elements [off_value, on_value]");
    }
  }
  int out_ndim = (*ind)->ndim < 0 ? -1 : (*ind)->ndim + 1;
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), out_ndim, "axis");
  if (!axis) return axis.error();
  ScalarValue depth = ScalarOf(args[1]);
  PrimExpr d = depth.integer;
  if (!d && depth.number) d = IntImm(static_cast<int64_t>(*depth.number));
  if (d && AsInt(d) && *AsInt(d) < 1)
    return Error("depth must be positive, got " + std::to_string(*AsInt(d)));
  if (!d || !(*ind)->shape) return Unknown((*v)->dtype, out_ndim);
  std::vector<PrimExpr> out = *(*ind)->shape;
  out.insert(out.begin() + *axis, d);
  return TensorSInfo(std::move(out), (*v)->dtype);
}

Expected<StructInfo> InferNonzero(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  return Unknown(DataType::kInt64, 2);
}

Expected<StructInfo> InferCompress(const OpInfo& op, const std::vector<Expr>& args,
                                   const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> c = TensorArg(op, args, 1);
  if (!c) return c.error();
  if ((*c)->dtype != DataType::kVoid && (*c)->dtype != DataType::kBool) {
    return Error("condition must be bool, got " + DtypeName((*c)->dtype));
  }
  if ((*c)->ndim >= 0 && (*c)->ndim != 1) return Error("condition must be 1-D");
  const int64_t* axis = attrs.Get<int64_t>("axis");
  if (!axis) return Unknown((*x)->dtype, 1);
  Expected<int64_t> a = NormalizeAxis(*axis, (*x)->ndim, "axis");
  if (!a) return a.error();
  return Unknown((*x)->dtype, (*x)->ndim);
}

Expected<StructInfo> InferUnique(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  const int64_t* axis = attrs.Get<int64_t>("axis");
  int ndim = (*x)->ndim;
  PrimExpr inverse_len;
  int y_ndim = 1;
  if (axis) {
    Expected<int64_t> a = NormalizeAxis(*axis, ndim, "axis");
    if (!a) return a.error();
    y_ndim = ndim;
    if ((*x)->shape) inverse_len = (*(*x)->shape)[*a];
  } else if ((*x)->shape) {
    inverse_len = IntImm(1);
    for (const PrimExpr& d : *(*x)->shape) inverse_len = inverse_len * d;
  }
  StructInfo inverse = inverse_len
                           ? TensorSInfo(std::vector<PrimExpr>{inverse_len}, DataType::kInt64)
                           : Unknown(DataType::kInt64, 1);
  return TupleSInfo({Unknown((*x)->dtype, y_ndim), Unknown(DataType::kInt64, 1), inverse,
                     Unknown(DataType::kInt64, 1)});
}

Expected<StructInfo> InferTopk(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  int64_t k = *attrs.Get<int64_t>("k");
  DataType index_dtype = *attrs.Get<DataType>("dtype");
  if (k < 0) return Error("k must be non-negative, got " + std::to_string(k));
  int ndim = (*x)->ndim;
  if (ndim == 0) return Error("expects a tensor of rank >= 1");
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), ndim, "axis");
  if (!axis) return axis.error();
  if (!(*x)->shape) {
    return TupleSInfo({Unknown((*x)->dtype, ndim), Unknown(index_dtype, ndim)});
  }
  std::vector<PrimExpr> s = *(*x)->shape;
  if (auto n = AsInt(s[*axis]); n && k > *n) {
    return Error("k = " + std::to_string(k) + " is larger than the size " + std::to_string(*n) +
                 " of axis " + std::to_string(*axis));
  }
  s[*axis] = IntImm(k);
  return TupleSInfo({TensorSInfo(s, (*x)->dtype), TensorSInfo(s, index_dtype)});
}

}  // namespace quilt::ir
