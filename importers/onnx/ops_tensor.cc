// Converters of layout, shape and indexing ops. Shape computations on known values stay
// symbolic here (Shape -> Concat -> Reshape with a dynamic batch gives `R.reshape(x, (n, 64))`).
#include <algorithm>
#include <cstring>

#include "importers/onnx/converter.h"
#include "importers/onnx/graph.h"
#include "importers/onnx/tensor.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

// Attribute `axes` before `since_input`, input `input` from then on (must be known).
Expected<std::vector<int64_t>> AxesOf(NodeContext& ctx, int64_t since_input, int input,
                                      bool required) {
  if (ctx.opset() < since_input) {
    Expected<std::vector<int64_t>> a =
        ctx.Ints("axes", required ? std::nullopt : std::optional<std::vector<int64_t>>({}));
    if (!a) return ctx.Error(a.error().message);
    return a;
  }
  if (!ctx.HasInput(input)) {
    if (required) return ctx.Error("input 'axes' is required");
    return std::vector<int64_t>{};
  }
  std::optional<std::vector<int64_t>> k = ctx.KnownInts(input);
  if (!k) return ctx.Error("input 'axes' must be a constant");
  return *k;
}

ir::PrimExpr Product(const std::vector<ir::PrimExpr>& dims, size_t begin, size_t end) {
  ir::PrimExpr p = ir::IntImm(1);
  for (size_t i = begin; i < end; ++i) p = p * dims[i];
  return p;
}

Expected<Outputs> ShapeSliced(NodeContext& ctx, const ir::Expr& x, int64_t b, int64_t e,
                              std::optional<KnownValues> dims);

Expected<Outputs> Identity(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Identity needs an input");
  return Outputs{x};
}

Expected<Outputs> Constant(NodeContext& ctx) {
  if (ctx.node().attribute_size() != 1) {
    return ctx.Error("Constant must have exactly one value attribute, got " +
                     std::to_string(ctx.node().attribute_size()));
  }
  const ::onnx::AttributeProto& a = ctx.node().attribute(0);
  const std::string& n = a.name();
  if (n == "value") {
    if (a.type() != ::onnx::AttributeProto::TENSOR)
      return ctx.Error("attribute 'value' must be a tensor");
    Expected<TensorData> t = ReadTensor(a.t(), ctx.graph()->model().model_dir);
    if (!t) return ctx.Error(t.error().message);
    Expected<ir::Expr> c = TensorToConstant(*t);
    if (!c) return ctx.Error(c.error().message);
    return Outputs{*c};
  }
  if (n == "value_float" || n == "value_floats") {
    std::vector<float> v;
    if (n == "value_float") v.push_back(a.f());
    for (float f : a.floats()) v.push_back(f);
    std::vector<int64_t> shape;
    if (n == "value_floats") shape.push_back(static_cast<int64_t>(v.size()));
    return NodeContext::Single(ctx.Const(ir::DataType::kFloat32, shape, v.data()));
  }
  if (n == "value_int" || n == "value_ints") {
    std::vector<int64_t> v;
    if (n == "value_int") v.push_back(a.i());
    for (int64_t i : a.ints()) v.push_back(i);
    std::vector<int64_t> shape;
    if (n == "value_ints") shape.push_back(static_cast<int64_t>(v.size()));
    return NodeContext::Single(ctx.Const(ir::DataType::kInt64, shape, v.data()));
  }
  if (n == "value_string" || n == "value_strings")
    return ctx.Error("string constants are left out");
  if (n == "sparse_value") return ctx.Error("sparse constants are not supported");
  return ctx.Error("unknown Constant attribute '" + n + "'");
}

Expected<Outputs> Shape(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Shape needs an input");
  const ir::StructInfo& s = x->struct_info;
  if (s->ndim < 0) {
    // The whole shape of a tensor of unknown rank: a 1-D tensor of unknown length. A slice of it
    // (start or end given) needs the rank.
    if (ctx.Attr("start") || ctx.Attr("end"))
      return ctx.Error("the rank of the input must be known for 'start' and 'end'");
    Expected<ir::Expr> shape = ctx.Emit(OpKind::kShapeOf, {x});
    if (!shape) return shape.error();
    return NodeContext::Single(ctx.Emit(OpKind::kShapeToTensor, {*shape}));
  }
  int64_t rank = s->ndim;
  Expected<int64_t> start = ctx.Int("start", 0);
  Expected<int64_t> end = ctx.Int("end", rank);
  if (!start || !end) return ctx.Error(!start ? start.error().message : end.error().message);
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t b = clamp(*start), e = std::max(clamp(*end), clamp(*start));
  if (s->shape) {
    KnownValues dims(s->shape->begin() + b, s->shape->begin() + e);
    std::vector<int64_t> values;
    for (const ir::PrimExpr& d : dims) {
      if (auto v = ir::AsInt(d)) values.push_back(*v);
    }
    if (values.size() == dims.size()) {
      // Every dim is static: the shape is a constant.
      return NodeContext::Single(
          ctx.Const(ir::DataType::kInt64, {static_cast<int64_t>(values.size())}, values.data()));
    }
    if (b != 0 || e != rank) return ShapeSliced(ctx, x, b, e, dims);
    ctx.SetKnown(0, dims);
  } else if (b != 0 || e != rank) {
    return ShapeSliced(ctx, x, b, e, std::nullopt);
  }
  Expected<ir::Expr> shape = ctx.Emit(OpKind::kShapeOf, {x});
  if (!shape) return shape.error();
  return NodeContext::Single(ctx.Emit(OpKind::kShapeToTensor, {*shape}));
}

// A shape tensor `t` known only at run time with each 0 among its first rank(x) entries replaced by
// x's dim there (Reshape with allowzero = 0): where(t[:m] == 0, shape(x)[:m], t[:m]) ++ t[m:], m =
// min(len(t), rank(x)). A 0 past x's rank stays, and the reshape then fails on the element count.
Expected<ir::Expr> CopyZeroDims(NodeContext& ctx, const ir::Expr& x, const ir::Expr& t) {
  const ir::StructInfo& xs = x->struct_info;
  const ir::StructInfo& ts = t->struct_info;
  std::optional<int64_t> k;
  if (ts->shape && ts->shape->size() == 1) k = ir::AsInt((*ts->shape)[0]);
  if (xs->ndim < 0 || !k) {
    return ctx.Error(std::string("Reshape with allowzero = 0 to a shape known only at run time "
                                 "needs ") +
                     (xs->ndim < 0 ? "the data's rank" : "the shape's length") +
                     " at compile time (a 0 in the shape copies the data's dim there)");
  }
  int64_t m = std::min<int64_t>(*k, xs->ndim);
  if (m == 0) return t;
  auto slice = [&](const ir::Expr& v, int64_t begin, int64_t end) -> Expected<ir::Expr> {
    ir::Attrs a;
    a.Set("axes", std::vector<int64_t>{0});
    a.Set("begin", std::vector<int64_t>{begin});
    a.Set("end", std::vector<int64_t>{end});
    a.Set("strides", std::vector<int64_t>{1});
    return ctx.Emit(OpKind::kStridedSlice, {v}, a);
  };
  Expected<ir::Expr> shape = ctx.Emit(OpKind::kShapeOf, {x});
  if (!shape) return shape.error();
  Expected<ir::Expr> dims = ctx.Emit(OpKind::kShapeToTensor, {*shape});
  if (!dims) return dims.error();
  if (m < xs->ndim) dims = slice(*dims, 0, m);
  if (!dims) return dims.error();
  Expected<ir::Expr> head = m < *k ? slice(t, 0, m) : Expected<ir::Expr>(t);
  if (!head) return head.error();
  Expected<ir::Expr> zero = ctx.ScalarConst(ir::DataType::kInt64, 0);
  if (!zero) return zero.error();
  Expected<ir::Expr> is_zero = ctx.Emit(OpKind::kEqual, {*head, *zero});
  if (!is_zero) return is_zero.error();
  Expected<ir::Expr> fixed = ctx.Emit(OpKind::kWhere, {*is_zero, *dims, *head});
  if (!fixed || m == *k) return fixed;
  Expected<ir::Expr> tail = slice(t, m, *k);
  if (!tail) return tail.error();
  ir::Attrs a;
  a.Set("axis", int64_t{0});
  return ctx.Emit(OpKind::kConcat, {ir::MakeTuple({*fixed, *tail})}, a);
}

Expected<Outputs> Reshape(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x || !ctx.HasInput(1)) return ctx.Error("Reshape needs data and shape");
  Expected<int64_t> allowzero = ctx.Int("allowzero", 0);
  if (!allowzero) return ctx.Error(allowzero.error().message);
  std::optional<KnownValues> target = ctx.Known(1);
  if (!target) {
    Expected<ir::Expr> t = *allowzero ? ctx.Input(1) : CopyZeroDims(ctx, x, ctx.Input(1));
    if (!t) return t.error();
    Expected<ir::Expr> s = ctx.Emit(OpKind::kTensorToShape, {*t});
    if (!s) return s.error();
    return NodeContext::Single(ctx.Emit(OpKind::kReshape, {x, *s}));
  }
  const ir::StructInfo& in = x->struct_info;
  std::vector<ir::PrimExpr> dims = *target;
  int infer_at = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    std::optional<int64_t> v = ir::AsInt(dims[i]);
    if (v == 0 && !*allowzero) {
      if (!in->shape || i >= in->shape->size()) {
        return ctx.Error("shape[" + std::to_string(i) +
                         "] = 0 copies an input dimension that does not exist");
      }
      dims[i] = (*in->shape)[i];
    } else if (v == -1) {
      if (infer_at >= 0) return ctx.Error("more than one -1 in the shape");
      infer_at = static_cast<int>(i);
    } else if (v && *v < -1) {
      return ctx.Error("shape[" + std::to_string(i) + "] = " + std::to_string(*v) + " is invalid");
    }
  }
  if (infer_at >= 0 && in->shape) {
    // -1: the input's element count over the others', symbolically when dims are symbolic.
    ir::PrimExpr total = Product(*in->shape, 0, in->shape->size());
    ir::PrimExpr known = ir::IntImm(1);
    for (size_t i = 0; i < dims.size(); ++i) {
      if (static_cast<int>(i) != infer_at) known = known * dims[i];
    }
    std::optional<int64_t> t = ir::AsInt(total), k = ir::AsInt(known);
    if (!(t && k && (*k == 0 || *t % *k != 0))) {
      dims[infer_at] = ir::PrimEqual(total, known)
                           ? ir::IntImm(1)
                           : ir::MakeBinary(ir::PrimKind::kFloorDiv, total, known);
    }
  }
  return NodeContext::Single(ctx.Emit(OpKind::kReshape, {x, ir::MakeShapeExpr(dims)}));
}

Expected<Outputs> Transpose(NodeContext& ctx) {
  ir::Attrs a;
  if (ctx.Attr("perm")) {
    Expected<std::vector<int64_t>> perm = ctx.Ints("perm");
    if (!perm) return ctx.Error(perm.error().message);
    a.Set("axes", *perm);
  }
  return NodeContext::Single(ctx.Emit(OpKind::kPermuteDims, {ctx.Input(0)}, a));
}

Expected<Outputs> Concat(NodeContext& ctx) {
  Expected<int64_t> axis = ctx.Int("axis");
  if (!axis) return ctx.Error(axis.error().message);
  std::vector<ir::Expr> parts;
  for (int i = 0; i < ctx.NumInputs(); ++i) {
    if (ctx.HasInput(i)) parts.push_back(ctx.Input(i));
  }
  if (parts.empty()) return ctx.Error("Concat needs at least one input");
  ir::Attrs a;
  a.Set("axis", *axis);
  return NodeContext::Single(ctx.Emit(OpKind::kConcat, {ir::MakeTuple(parts)}, a));
}

Expected<Outputs> Unsqueeze(NodeContext& ctx) {
  Expected<std::vector<int64_t>> axes = AxesOf(ctx, 13, 1, true);
  if (!axes) return axes.error();
  ir::Attrs a;
  a.Set("axis", *axes);
  return NodeContext::Single(ctx.Emit(OpKind::kExpandDims, {ctx.Input(0)}, a));
}

Expected<Outputs> Squeeze(NodeContext& ctx) {
  Expected<std::vector<int64_t>> axes = AxesOf(ctx, 13, 1, false);
  if (!axes) return axes.error();
  ir::Attrs a;
  if (!axes->empty()) a.Set("axis", *axes);
  return NodeContext::Single(ctx.Emit(OpKind::kSqueeze, {ctx.Input(0)}, a));
}

Expected<Outputs> Flatten(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Flatten needs an input");
  const ir::StructInfo& s = x->struct_info;
  Expected<int64_t> axis = ctx.Int("axis", 1);
  if (!axis) return ctx.Error(axis.error().message);
  if (!s->shape) return ctx.Error("the input shape must be known");
  int64_t rank = s->ndim;
  if (*axis < -rank || *axis > rank) {
    return ctx.Error("axis " + std::to_string(*axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  size_t split = static_cast<size_t>(*axis < 0 ? *axis + rank : *axis);
  std::vector<ir::PrimExpr> dims = {Product(*s->shape, 0, split),
                                    Product(*s->shape, split, s->shape->size())};
  return NodeContext::Single(ctx.Emit(OpKind::kReshape, {x, ir::MakeShapeExpr(dims)}));
}

ir::Attrs OneAttr(std::string name, ir::AttrValue v) {
  ir::Attrs a;
  a.Set(std::move(name), std::move(v));
  return a;
}

// ---- Helpers for shape-like inputs ----------------------------------------------------------

ir::Expr IntsShape(const std::vector<int64_t>& v) {
  std::vector<ir::PrimExpr> p;
  for (int64_t x : v) p.push_back(ir::IntImm(x));
  return ir::MakeShapeExpr(std::move(p));
}

// Input i as a shape: its known values (possibly symbolic), else `tensor_to_shape` of the tensor
// (cast to int64 first), whose values are only known at run time.
Expected<ir::Expr> ShapeInput(NodeContext& ctx, int i, const char* what) {
  if (!ctx.HasInput(i)) return ctx.Error(std::string("input '") + what + "' is required");
  if (std::optional<KnownValues> k = ctx.Known(i)) return ir::MakeShapeExpr(*k);
  ir::Expr t = ctx.Input(i);
  const ir::StructInfo& s = t->struct_info;
  if (s->ndim > 1) return ctx.Error(std::string("input '") + what + "' must be 1-D");
  if (s->dtype == ir::DataType::kInt32) {
    ir::Attrs a;
    a.Set("dtype", ir::DataType::kInt64);
    Expected<ir::Expr> c = ctx.Emit(OpKind::kAstype, {t}, a);
    if (!c) return c.error();
    t = *c;
  }
  Expected<ir::Expr> e = ctx.Emit(OpKind::kTensorToShape, {t});
  if (!e) return ctx.Error(std::string("input '") + what + "': " + e.error().message);
  return e;
}

// A scalar input as R.prim_value when its integer value is known, else the tensor itself.
ir::Expr ScalarInput(NodeContext& ctx, int i) {
  if (std::optional<KnownValues> k = ctx.Known(i); k && k->size() == 1) {
    return ir::MakePrimValue((*k)[0]);
  }
  return ctx.Input(i);
}

// A scalar constant of `dtype` with every byte zero (0, 0.0 or false).
Expected<ir::Expr> ZeroScalar(NodeContext& ctx, ir::DataType dtype) {
  uint8_t zero[16] = {};
  return ctx.Const(dtype, {}, zero);
}

Expected<std::vector<int64_t>> RequiredInts(NodeContext& ctx, int i, const char* what) {
  if (!ctx.HasInput(i)) return ctx.Error(std::string("input '") + what + "' is required");
  std::optional<std::vector<int64_t>> k = ctx.KnownInts(i);
  if (!k) return ctx.Error(std::string("input '") + what + "' must be a constant");
  return *k;
}

Expected<Outputs> Unpack(NodeContext& ctx, const ir::Expr& tuple, int n) {
  Outputs outs;
  for (int i = 0; i < n; ++i) {
    if (!ctx.HasOutput(i)) {
      outs.push_back(nullptr);
      continue;
    }
    Expected<ir::Expr> item = ir::MakeTupleGetItem(tuple, i);
    if (!item) return ctx.Error(item.error().message);
    outs.push_back(ctx.Bind(*item, i));
  }
  return outs;
}

// Whether a slice of x along `axes` (each once, in range) with these constant bounds and steps
// keeps every element in place: steps of 1 and, clamped as the spec clamps them, a start of 0 and
// an end at the axis' length, on axes of known length. Exporters write such slices (jax2tf's
// strided_slice of a whole tensor: magika-v3's 4 MB conv output copied for nothing).
bool SlicesNothing(const ir::Expr& x, const std::vector<int64_t>& axes,
                   const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                   const std::vector<int64_t>& strides) {
  std::optional<std::vector<int64_t>> shape = x->struct_info->StaticShape();
  if (!shape || begin.size() != axes.size() || end.size() != axes.size() ||
      strides.size() != axes.size()) {
    return false;
  }
  const int64_t rank = static_cast<int64_t>(shape->size());
  std::vector<bool> seen(shape->size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || seen[static_cast<size_t>(axis)] || strides[i] != 1) {
      return false;
    }
    seen[static_cast<size_t>(axis)] = true;
    const int64_t d = (*shape)[static_cast<size_t>(axis)];
    const int64_t b = std::clamp<int64_t>(begin[i] < 0 ? begin[i] + d : begin[i], 0, d);
    const int64_t e = std::clamp<int64_t>(end[i] < 0 ? end[i] + d : end[i], 0, d);
    if (b != 0 || e != d) return false;
  }
  return true;
}

// ONNX slice of known values (clamping as the spec does).
// strided_slice when every bound is a constant, else dynamic_strided_slice with shapes; x itself
// where the slice keeps all of it (SlicesNothing).
Expected<ir::Expr> EmitSlice(NodeContext& ctx, const ir::Expr& x, const std::vector<int64_t>& axes,
                             const ir::Expr& begin, const ir::Expr& end, const ir::Expr& strides) {
  std::vector<int64_t> v[3];
  bool constant = true;
  const ir::Expr* parts[3] = {&begin, &end, &strides};
  for (int i = 0; i < 3 && constant; ++i) {
    const auto* s = ir::As<ir::ShapeExprNode>(*parts[i]);
    constant = s != nullptr;
    for (size_t j = 0; constant && j < s->values.size(); ++j) {
      std::optional<int64_t> c = ir::AsInt(s->values[j]);
      constant = c.has_value();
      if (c) v[i].push_back(*c);
    }
  }
  ir::Attrs a;
  if (constant && SlicesNothing(x, axes, v[0], v[1], v[2])) return x;
  if (constant) {
    a.Set("axes", axes);
    a.Set("begin", v[0]);
    a.Set("end", v[1]);
    a.Set("strides", v[2]);
    return ctx.Emit(OpKind::kStridedSlice, {x}, a);
  }
  a.Set("axes", axes);
  return ctx.Emit(OpKind::kDynamicStridedSlice, {x, begin, end, strides}, a);
}

// ---- Shape, Size ------------------------------------------------------------------------------

Expected<Outputs> ShapeSliced(NodeContext& ctx, const ir::Expr& x, int64_t b, int64_t e,
                              std::optional<KnownValues> dims) {
  Expected<ir::Expr> shape = ctx.Emit(OpKind::kShapeOf, {x});
  if (!shape) return shape.error();
  Expected<ir::Expr> t = ctx.Emit(OpKind::kShapeToTensor, {*shape});
  if (!t) return t.error();
  Expected<ir::Expr> s = EmitSlice(ctx, *t, {0}, IntsShape({b}), IntsShape({e}), IntsShape({1}));
  if (!s) return s.error();
  if (dims) ctx.SetKnown(0, *dims);
  return Outputs{*s};
}

Expected<Outputs> Size(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Size needs an input");
  const ir::StructInfo& s = x->struct_info;
  if (std::optional<std::vector<int64_t>> st = s->StaticShape()) {
    std::optional<int64_t> count = ir::ElementCount(*st);
    if (!count) return ctx.Error("the input has more than 2^50 elements");
    int64_t n = *count;
    return NodeContext::Single(ctx.Const(ir::DataType::kInt64, {}, &n));
  }
  Expected<ir::Expr> e = ctx.Emit(OpKind::kSize, {x});
  if (!e) return e.error();
  if (s->shape) ctx.SetKnown(0, {Product(*s->shape, 0, s->shape->size())});
  return Outputs{*e};
}

// ---- Expand, ConstantOfShape, Range, EyeLike
// -----------------------------------------------------

Expected<Outputs> Expand(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Expand needs an input");
  const ir::StructInfo& s = x->struct_info;
  std::optional<KnownValues> target = ctx.Known(1);
  ir::Expr shape;
  if (target) {
    if (!s->shape) {
      bool ok = s->ndim >= 0 && s->ndim <= static_cast<int>(target->size());
      for (const ir::PrimExpr& d : *target) ok &= ir::AsInt(d) != 1;
      if (!ok) return ctx.Error("the input shape must be known to expand it");
      shape = ir::MakeShapeExpr(*target);
    } else {
      // Bidirectional broadcasting: the result has the larger rank; each dim is the non-1 one.
      const std::vector<ir::PrimExpr>& in = *s->shape;
      size_t rank = std::max(in.size(), target->size());
      std::vector<ir::PrimExpr> out(rank);
      for (size_t i = 0; i < rank; ++i) {
        ir::PrimExpr a = i + in.size() >= rank ? in[i + in.size() - rank] : ir::IntImm(1);
        ir::PrimExpr b =
            i + target->size() >= rank ? (*target)[i + target->size() - rank] : ir::IntImm(1);
        std::optional<int64_t> ca = ir::AsInt(a), cb = ir::AsInt(b);
        if (ca == 1 || ir::PrimEqual(a, b)) {
          out[i] = b;
        } else if (cb == 1) {
          out[i] = a;
        } else if (ca && cb) {
          return ctx.Error("cannot expand dimension " + std::to_string(i) + " of size " +
                           std::to_string(*ca) + " to " + std::to_string(*cb));
        } else if (ca || cb) {
          out[i] = ca ? a : b;  // the other is 1 or equal to it
        } else {
          out[i] = ir::MakeBinary(ir::PrimKind::kMax, a, b);
        }
      }
      shape = ir::MakeShapeExpr(out);
    }
  } else {
    Expected<ir::Expr> sh = ShapeInput(ctx, 1, "shape");
    if (!sh) return sh.error();
    shape = *sh;
  }
  Expected<ir::Expr> e = ctx.Emit(OpKind::kBroadcastTo, {x, shape});
  if (!e) return e.error();
  return Outputs{*e};
}

Expected<Outputs> ConstantOfShape(NodeContext& ctx) {
  Expected<ir::Expr> shape = ShapeInput(ctx, 0, "input");
  if (!shape) return shape.error();
  ir::Expr fill;
  if (const ::onnx::AttributeProto* a = ctx.Attr("value")) {
    if (a->type() != ::onnx::AttributeProto::TENSOR)
      return ctx.Error("attribute 'value' must be a tensor");
    Expected<TensorData> t = ReadTensor(a->t(), ctx.graph()->model().model_dir);
    if (!t) return ctx.Error(t.error().message);
    int64_t n = 1;
    for (int64_t d : t->shape) n *= d;
    if (n != 1)
      return ctx.Error("attribute 'value' must hold one element, got " + std::to_string(n));
    Expected<ir::Expr> c = ctx.Const(t->dtype, {}, t->bytes->data());
    if (!c) return c.error();
    fill = *c;
  } else {
    Expected<ir::Expr> c = ZeroScalar(ctx, ir::DataType::kFloat32);
    if (!c) return c.error();
    fill = *c;
  }
  ir::Attrs a;
  a.Set("dtype", fill->struct_info->dtype);
  Expected<ir::Expr> e = ctx.Emit(OpKind::kFull, {*shape, fill}, a);
  if (!e) return e.error();
  const ir::StructInfo& o = (*e)->struct_info;
  if (o->ndim == 1 && o->shape) {
    auto n = ir::AsInt((*o->shape)[0]);
    const auto* c = ir::As<ir::ConstantNode>(fill);
    if (n && *n <= 64 && c &&
        (c->dtype == ir::DataType::kInt64 || c->dtype == ir::DataType::kInt32)) {
      int64_t value = 0;
      if (c->dtype == ir::DataType::kInt64) {
        std::memcpy(&value, c->data->data(), 8);
      } else {
        int32_t v32;
        std::memcpy(&v32, c->data->data(), 4);
        value = v32;
      }
      ctx.SetKnown(0, KnownValues(*n, ir::IntImm(value)));
    }
  }
  return Outputs{*e};
}

Expected<Outputs> Range(NodeContext& ctx) {
  std::vector<ir::Expr> args;
  for (int i = 0; i < 3; ++i) {
    if (!ctx.HasInput(i)) return ctx.Error("Range needs start, limit and delta");
    args.push_back(ScalarInput(ctx, i));
    // A one-element 1-D tensor (ONNX's own function bodies pass those) reads as its scalar.
    const ir::StructInfo& si = args.back()->struct_info;
    if (si->IsTensor() && si->ndim == 1 && si->StaticShape() == std::vector<int64_t>{1}) {
      Expected<ir::Expr> r = ctx.Emit(OpKind::kReshape, {args.back(), ir::MakeShapeExpr({})});
      if (!r) return r.error();
      args.back() = *r;
    }
  }
  ir::DataType dtype = ctx.InputSInfo(0)->dtype;
  Expected<ir::Expr> e = ctx.Emit(OpKind::kArange, args, OneAttr("dtype", dtype));
  if (!e) return e.error();
  auto s = ctx.KnownInts(0), l = ctx.KnownInts(1), d = ctx.KnownInts(2);
  if (s && l && d && s->size() == 1 && l->size() == 1 && d->size() == 1 && (*d)[0] != 0) {
    KnownValues v;
    for (int64_t x = (*s)[0]; ((*d)[0] > 0 ? x < (*l)[0] : x > (*l)[0]) && v.size() <= 64;
         x += (*d)[0]) {
      v.push_back(ir::IntImm(x));
    }
    if (v.size() <= 64) ctx.SetKnown(0, v);
  }
  return Outputs{*e};
}

Expected<Outputs> EyeLike(NodeContext& ctx) {
  Expected<int64_t> k = ctx.Int("k", 0);
  if (!k) return ctx.Error(k.error().message);
  ir::Attrs a;
  a.Set("k", *k);
  if (ctx.Attr("dtype")) {
    Expected<int64_t> dt = ctx.Int("dtype");
    if (!dt) return ctx.Error(dt.error().message);
    std::optional<ir::DataType> t = ElemType(static_cast<int32_t>(*dt));
    if (!t) return ctx.Error("attribute 'dtype' = " + std::to_string(*dt) + " is not a known type");
    a.Set("dtype", *t);
  }
  return NodeContext::Single(ctx.Emit(OpKind::kEyeLike, {ctx.Input(0)}, a));
}

// ---- Slice, Pad, Split, Tile, Trilu, CenterCropPad
// ----------------------------------------------------

Expected<Outputs> Slice(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Slice needs an input");
  std::vector<int64_t> axes;
  ir::Expr begin, end, strides;
  if (ctx.opset() < 10) {
    Expected<std::vector<int64_t>> starts = ctx.Ints("starts");
    Expected<std::vector<int64_t>> ends = ctx.Ints("ends");
    if (!starts || !ends) return ctx.Error(!starts ? starts.error().message : ends.error().message);
    if (starts->size() != ends->size()) return ctx.Error("starts and ends differ in length");
    std::vector<int64_t> def;
    for (size_t i = 0; i < starts->size(); ++i) def.push_back(static_cast<int64_t>(i));
    Expected<std::vector<int64_t>> ax = ctx.Ints("axes", def);
    if (!ax) return ctx.Error(ax.error().message);
    axes = *ax;
    begin = IntsShape(*starts);
    end = IntsShape(*ends);
    strides = IntsShape(std::vector<int64_t>(starts->size(), 1));
  } else {
    Expected<ir::Expr> b = ShapeInput(ctx, 1, "starts");
    if (!b) return b.error();
    Expected<ir::Expr> e = ShapeInput(ctx, 2, "ends");
    if (!e) return e.error();
    begin = *b;
    end = *e;
    int n = begin->struct_info->ndim;
    if (n < 0) return ctx.Error("the length of 'starts' must be static");
    if (ctx.HasInput(3)) {
      Expected<std::vector<int64_t>> ax = RequiredInts(ctx, 3, "axes");
      if (!ax) return ax.error();
      axes = *ax;
    } else {
      for (int i = 0; i < n; ++i) axes.push_back(i);
    }
    if (ctx.HasInput(4)) {
      Expected<ir::Expr> st = ShapeInput(ctx, 4, "steps");
      if (!st) return st.error();
      strides = *st;
    } else {
      strides = IntsShape(std::vector<int64_t>(axes.size(), 1));
    }
  }
  return NodeContext::Single(EmitSlice(ctx, x, axes, begin, end, strides));
}

// Pad-11+ with pads known only symbolically or at run time.
Expected<Outputs> DynamicPad(NodeContext& ctx, const ir::Expr& x, const std::string& mode) {
  Expected<ir::Expr> pads = ShapeInput(ctx, 1, "pads");
  if (!pads) return pads.error();
  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.HasInput(3)) {
    Expected<std::vector<int64_t>> ax = RequiredInts(ctx, 3, "axes");
    if (!ax) return ax.error();
    axes = *ax;
  } else {
    for (int i = 0; i < x->struct_info->ndim; ++i) axes.push_back(i);
  }
  ir::Expr value = ctx.Input(2);
  if (!value) {
    Expected<ir::Expr> c = ZeroScalar(ctx, x->struct_info->dtype);
    if (!c) return ctx.Error(c.error().message);
    value = *c;
  } else if (value->struct_info->ndim == 1) {
    Expected<ir::Expr> r = ctx.Emit(OpKind::kReshape, {value, ir::MakeShapeExpr({})});
    if (!r) return r.error();
    value = *r;
  }
  ir::Attrs a;
  a.Set("axes", axes);
  a.Set("pad_mode", mode);
  return NodeContext::Single(ctx.Emit(OpKind::kDynamicPad, {x, value, *pads}, a));
}

Expected<Outputs> Pad(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Pad needs an input");
  const ir::StructInfo& s = x->struct_info;
  if (s->ndim < 0) return ctx.Error("the rank of the input must be known");
  int rank = s->ndim;
  Expected<std::string> mode = ctx.String("mode", "constant");
  if (!mode) return ctx.Error(mode.error().message);
  if (*mode != "constant" && *mode != "edge" && *mode != "reflect" &&
      !(*mode == "wrap" && ctx.opset() >= 19)) {
    return ctx.Error("mode '" + *mode + "' is not supported at this opset");
  }
  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
  ir::Expr value;
  if (ctx.opset() < 11) {
    Expected<std::vector<int64_t>> p = ctx.Ints("pads");
    Expected<double> v = ctx.Float("value", 0.0);
    if (!p || !v) return ctx.Error(!p ? p.error().message : v.error().message);
    pads = *p;
    Expected<ir::Expr> c = *v == 0.0 ? ZeroScalar(ctx, s->dtype) : ctx.ScalarConst(s->dtype, *v);
    if (!c) return ctx.Error(c.error().message);
    value = *c;
  } else {
    if (!ctx.HasInput(1)) return ctx.Error("input 'pads' is required");
    std::optional<std::vector<int64_t>> p = ctx.KnownInts(1);
    if (!p) return DynamicPad(ctx, x, *mode);
    pads = *p;
    if (ctx.HasInput(2)) {
      value = ctx.Input(2);
      if (value->struct_info->ndim == 1) {
        Expected<ir::Expr> r = ctx.Emit(OpKind::kReshape, {value, ir::MakeShapeExpr({})});
        if (!r) return r.error();
        value = *r;
      }
    } else {
      Expected<ir::Expr> c = ZeroScalar(ctx, s->dtype);
      if (!c) return ctx.Error(c.error().message);
      value = *c;
    }
    if (ctx.opset() >= 18 && ctx.HasInput(3)) {
      Expected<std::vector<int64_t>> ax = RequiredInts(ctx, 3, "axes");
      if (!ax) return ax.error();
      axes = *ax;
    }
  }
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size()) {
    return ctx.Error("pads has " + std::to_string(pads.size()) + " values for " +
                     std::to_string(axes.size()) + " axes, expected " +
                     std::to_string(2 * axes.size()));
  }
  std::vector<int64_t> width(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (ax < 0 || ax >= rank) {
      return ctx.Error("axis " + std::to_string(axes[i]) + " is out of range for rank " +
                       std::to_string(rank));
    }
    width[2 * ax] = pads[i];
    width[2 * ax + 1] = pads[i + axes.size()];
  }
  ir::Attrs a;
  a.Set("pad_width", width);
  a.Set("pad_mode", *mode);
  return NodeContext::Single(ctx.Emit(OpKind::kPad, {x, value}, a));
}

// Split into n parts of ceil(d / n) along a dimension known only at run time.
Expected<Outputs> SplitSections(NodeContext& ctx, const ir::Expr& x, int64_t axis, int n) {
  ir::Attrs a;
  a.Set("indices_or_sections", std::vector<int64_t>{});
  a.Set("axis", axis);
  a.Set("sections", static_cast<int64_t>(n));
  Expected<ir::Expr> call = ir::MakeOpCall(OpKind::kSplit, {x}, a);
  if (!call) return ctx.Error(call.error().message);
  return Unpack(ctx, ctx.Bind(*call), n);
}

Expected<Outputs> Split(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Split needs an input");
  Expected<int64_t> axis = ctx.Int("axis", 0);
  if (!axis) return ctx.Error(axis.error().message);
  const ir::StructInfo& s = x->struct_info;
  int rank = s->ndim;
  if (rank >= 0 && (*axis < -rank || *axis >= rank)) {
    return ctx.Error("axis " + std::to_string(*axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  std::optional<int64_t> dim;
  if (s->shape) dim = ir::AsInt((*s->shape)[*axis < 0 ? *axis + rank : *axis]);
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.opset() < 13) {
    if (ctx.Attr("split")) {
      Expected<std::vector<int64_t>> sp = ctx.Ints("split");
      if (!sp) return ctx.Error(sp.error().message);
      sizes = *sp;
    }
  } else if (ctx.HasInput(1)) {
    Expected<std::vector<int64_t>> sp = RequiredInts(ctx, 1, "split");
    if (!sp) return sp.error();
    sizes = *sp;
  }
  int n = ctx.NumOutputs();
  if (ctx.opset() >= 18 && ctx.Attr("num_outputs")) {
    if (sizes) return ctx.Error("'split' and 'num_outputs' cannot both be given");
    Expected<int64_t> no = ctx.Int("num_outputs");
    if (!no) return ctx.Error(no.error().message);
    if (*no < 1 || *no != n) {
      return ctx.Error("num_outputs = " + std::to_string(*no) + " but the node has " +
                       std::to_string(n) + " outputs");
    }
    if (!dim) return SplitSections(ctx, x, *axis, n);
    int64_t chunk = (*dim + n - 1) / n;
    sizes.emplace();
    for (int i = 0; i < n; ++i)
      sizes->push_back(std::max<int64_t>(0, std::min(chunk, *dim - chunk * i)));
  }
  if (!sizes) {
    // Equal parts of a dimension known only at run time (a multiple of n in a valid model).
    if (!dim) return SplitSections(ctx, x, *axis, n);
    if (*dim % n != 0) {
      return ctx.Error("cannot split a dimension of size " + std::to_string(*dim) + " into " +
                       std::to_string(n) + " equal parts");
    }
    sizes = std::vector<int64_t>(n, *dim / n);
  }
  if (static_cast<int>(sizes->size()) != n) {
    return ctx.Error("split has " + std::to_string(sizes->size()) + " sizes for " +
                     std::to_string(n) + " outputs");
  }
  int64_t total = 0;
  std::vector<int64_t> indices;
  for (size_t i = 0; i < sizes->size(); ++i) {
    if ((*sizes)[i] < 0) return ctx.Error("split sizes must be non-negative");
    total += (*sizes)[i];
    if (i + 1 < sizes->size()) indices.push_back(total);
  }
  if (dim && total != *dim) {
    return ctx.Error("split sizes add up to " + std::to_string(total) + ", but the axis has size " +
                     std::to_string(*dim));
  }
  ir::Attrs a;
  a.Set("indices_or_sections", indices);
  a.Set("axis", *axis);
  Expected<ir::Expr> call = ir::MakeOpCall(OpKind::kSplit, {x}, a);
  if (!call) return ctx.Error(call.error().message);
  ir::Expr t = ctx.Bind(*call);
  Expected<Outputs> outs = Unpack(ctx, t, n);
  // The parts of a known 1-D shape tensor are known.
  if (std::optional<KnownValues> k = ctx.Known(0);
      outs && k && rank == 1 && dim && static_cast<int64_t>(k->size()) == *dim) {
    int64_t begin = 0;
    for (int i = 0; i < n; ++i) {
      ctx.SetKnown(i, KnownValues(k->begin() + begin, k->begin() + begin + (*sizes)[i]));
      begin += (*sizes)[i];
    }
  }
  return outs;
}

Expected<Outputs> Tile(NodeContext& ctx) {
  if (ctx.HasInput(1) && !ctx.KnownInts(1)) {
    // Repeats known symbolically or only at run time (e.g. from a loop counter).
    Expected<ir::Expr> r = ShapeInput(ctx, 1, "repeats");
    if (!r) return r.error();
    return NodeContext::Single(ctx.Emit(OpKind::kDynamicTile, {ctx.Input(0), *r}));
  }
  Expected<std::vector<int64_t>> r = RequiredInts(ctx, 1, "repeats");
  if (!r) return r.error();
  ir::Attrs a;
  a.Set("repeats", *r);
  return NodeContext::Single(ctx.Emit(OpKind::kTile, {ctx.Input(0)}, a));
}

Expected<Outputs> Trilu(NodeContext& ctx) {
  Expected<int64_t> upper = ctx.Int("upper", 1);
  if (!upper) return ctx.Error(upper.error().message);
  int64_t k = 0;
  if (ctx.HasInput(1)) {
    Expected<std::vector<int64_t>> kk = RequiredInts(ctx, 1, "k");
    if (!kk) return kk.error();
    if (kk->size() != 1) return ctx.Error("input 'k' must hold one value");
    k = (*kk)[0];
  }
  ir::Attrs a;
  a.Set("k", k);
  return NodeContext::Single(ctx.Emit(*upper ? OpKind::kTriu : OpKind::kTril, {ctx.Input(0)}, a));
}

Expected<Outputs> CenterCropPad(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("CenterCropPad needs an input");
  const ir::StructInfo& s = x->struct_info;
  if (!s->shape) return ctx.Error("the input shape must be known");
  int rank = s->ndim;
  Expected<std::vector<int64_t>> target = RequiredInts(ctx, 1, "shape");
  if (!target) return target.error();
  std::vector<int64_t> def;
  for (int i = 0; i < rank; ++i) def.push_back(i);
  Expected<std::vector<int64_t>> axes = ctx.Ints("axes", def);
  if (!axes) return ctx.Error(axes.error().message);
  if (axes->size() != target->size()) {
    return ctx.Error("shape has " + std::to_string(target->size()) + " values for " +
                     std::to_string(axes->size()) + " axes");
  }
  std::vector<int64_t> crop_axes, crop_b, crop_e, width(2 * rank, 0);
  bool pad = false;
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t ax = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
    if (ax < 0 || ax >= rank)
      return ctx.Error("axis " + std::to_string((*axes)[i]) + " is out of range");
    std::optional<int64_t> d = ir::AsInt((*s->shape)[ax]);
    if (!d) return ctx.Error("axis " + std::to_string(ax) + " must have a static size");
    int64_t t = (*target)[i];
    if (t < *d) {
      crop_axes.push_back(ax);
      crop_b.push_back((*d - t) / 2);
      crop_e.push_back((*d - t) / 2 + t);
    } else if (t > *d) {
      width[2 * ax] = (t - *d) / 2;
      width[2 * ax + 1] = t - *d - (t - *d) / 2;
      pad = true;
    }
  }
  ir::Expr cur = x;
  if (!crop_axes.empty()) {
    Expected<ir::Expr> e = EmitSlice(ctx, cur, crop_axes, IntsShape(crop_b), IntsShape(crop_e),
                                     IntsShape(std::vector<int64_t>(crop_axes.size(), 1)));
    if (!e) return e.error();
    cur = *e;
  }
  if (pad) {
    Expected<ir::Expr> zero = ZeroScalar(ctx, s->dtype);
    if (!zero) return ctx.Error(zero.error().message);
    ir::Attrs a;
    a.Set("pad_width", width);
    a.Set("pad_mode", std::string("constant"));
    Expected<ir::Expr> e = ctx.Emit(OpKind::kPad, {cur, *zero}, a);
    if (!e) return e.error();
    cur = *e;
  }
  if (cur == x) cur = ctx.Bind(x);
  return Outputs{cur};
}

// ---- Indexing
// -------------------------------------------------------------------------------------

Expected<Outputs> Gather(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0), ind = ctx.Input(1);
  if (!x || !ind) return ctx.Error("Gather needs data and indices");
  Expected<int64_t> axis = ctx.Int("axis", 0);
  if (!axis) return ctx.Error(axis.error().message);
  const ir::StructInfo& s = x->struct_info;
  int rank = s->ndim;
  if (rank >= 0 && (*axis < -rank || *axis >= rank)) {
    return ctx.Error("axis " + std::to_string(*axis) + " is out of range for rank " +
                     std::to_string(rank));
  }
  // take's "fast" mode counts negative indices from the end and fails the run on an index
  // outside [-n, n), as ONNX defines Gather; known indices are checked here instead.
  std::optional<std::vector<int64_t>> idx = ctx.KnownInts(1);
  const auto* ci = ctx.ConstantInput(1);
  if (idx && ci && s->shape) {
    if (std::optional<int64_t> dim = ir::AsInt((*s->shape)[*axis < 0 ? *axis + rank : *axis])) {
      bool negative = false;
      for (int64_t& i : *idx) {
        if (i < -*dim || i >= *dim) {
          return ctx.Error("index " + std::to_string(i) + " is out of bounds for axis " +
                           std::to_string(*axis) + " of size " + std::to_string(*dim));
        }
        negative |= i < 0;
        if (i < 0) i += *dim;
      }
      if (negative) {
        Expected<ir::Expr> c = ctx.Const(ir::DataType::kInt64, ci->shape, idx->data());
        if (!c) return ctx.Error(c.error().message);
        ind = *c;
      }
    }
  }
  ir::Attrs a;
  a.Set("axis", *axis);
  a.Set("mode", std::string("fast"));
  Expected<ir::Expr> e = ctx.Emit(OpKind::kTake, {x, ind}, a);
  if (!e) return e.error();
  return Outputs{*e};
}

Expected<Outputs> GatherElements(NodeContext& ctx) {
  Expected<int64_t> axis = ctx.Int("axis", 0);
  if (!axis) return ctx.Error(axis.error().message);
  return NodeContext::Single(
      ctx.Emit(OpKind::kGatherElements, {ctx.Input(0), ctx.Input(1)}, OneAttr("axis", *axis)));
}

Expected<Outputs> GatherND(NodeContext& ctx) {
  Expected<int64_t> b = ctx.Int("batch_dims", 0);
  if (!b) return ctx.Error(b.error().message);
  return NodeContext::Single(
      ctx.Emit(OpKind::kGatherND, {ctx.Input(0), ctx.Input(1)}, OneAttr("batch_dims", *b)));
}

Expected<std::string> Reduction(NodeContext& ctx) {
  Expected<std::string> r = ctx.String("reduction", "none");
  if (!r) return ctx.Error(r.error().message);
  if (*r == "none") return std::string("update");
  bool ok = (*r == "add" || *r == "mul") ? ctx.opset() >= 16
                                         : (*r == "max" || *r == "min") && ctx.opset() >= 18;
  if (!ok) return ctx.Error("reduction '" + *r + "' is not supported at this opset");
  return r;
}

Expected<Outputs> ScatterElements(NodeContext& ctx) {
  Expected<int64_t> axis = ctx.Int("axis", 0);
  if (!axis) return ctx.Error(axis.error().message);
  std::string red = "update";
  if (ctx.op_type() == "ScatterElements") {
    Expected<std::string> r = Reduction(ctx);
    if (!r) return r.error();
    red = *r;
  }
  ir::Attrs a;
  a.Set("axis", *axis);
  a.Set("reduction", red);
  return NodeContext::Single(
      ctx.Emit(OpKind::kScatterElements, {ctx.Input(0), ctx.Input(1), ctx.Input(2)}, a));
}

Expected<Outputs> ScatterND(NodeContext& ctx) {
  Expected<std::string> r = Reduction(ctx);
  if (!r) return r.error();
  return NodeContext::Single(ctx.Emit(
      OpKind::kScatterND, {ctx.Input(0), ctx.Input(1), ctx.Input(2)}, OneAttr("reduction", *r)));
}

Expected<Outputs> OneHot(NodeContext& ctx) {
  Expected<int64_t> axis = ctx.Int("axis", -1);
  if (!axis) return ctx.Error(axis.error().message);
  if (!ctx.HasInput(1) || !ctx.HasInput(2))
    return ctx.Error("OneHot needs indices, depth and values");
  return NodeContext::Single(ctx.Emit(
      OpKind::kOneHot, {ctx.Input(0), ScalarInput(ctx, 1), ctx.Input(2)}, OneAttr("axis", *axis)));
}

Expected<Outputs> Compress(NodeContext& ctx) {
  ir::Attrs a;
  if (ctx.Attr("axis")) {
    Expected<int64_t> axis = ctx.Int("axis");
    if (!axis) return ctx.Error(axis.error().message);
    a.Set("axis", *axis);
  }
  return NodeContext::Single(ctx.Emit(OpKind::kCompress, {ctx.Input(0), ctx.Input(1)}, a));
}

Expected<Outputs> ReverseSequence(NodeContext& ctx) {
  Expected<int64_t> b = ctx.Int("batch_axis", 1);
  Expected<int64_t> t = ctx.Int("time_axis", 0);
  if (!b || !t) return ctx.Error(!b ? b.error().message : t.error().message);
  ir::Attrs a;
  a.Set("seq_axis", *t);
  a.Set("batch_axis", *b);
  return NodeContext::Single(ctx.Emit(OpKind::kReverseSequence, {ctx.Input(0), ctx.Input(1)}, a));
}

Expected<Outputs> CastLike(NodeContext& ctx) {
  if (!ctx.HasInput(0) || !ctx.HasInput(1))
    return ctx.Error("CastLike needs input and target_type");
  ir::DataType t = ctx.InputSInfo(1)->dtype;
  if (t == ir::DataType::kVoid) return ctx.Error("the dtype of 'target_type' must be known");
  if (t == ir::DataType::kString) return ctx.Error("casts to string are not supported");
  Expected<int64_t> saturate = ctx.Int("saturate", 1);
  if (!saturate) return ctx.Error(saturate.error().message);
  ir::Attrs a;
  a.Set("dtype", t);
  a.Set("saturate", *saturate != 0);
  Expected<ir::Expr> e = ctx.Emit(OpKind::kAstype, {ctx.Input(0)}, a);
  if (!e) return e.error();
  return Outputs{*e};
}

Expected<Outputs> NonZero(NodeContext& ctx) {
  return NodeContext::Single(ctx.Emit(OpKind::kNonzero, {ctx.Input(0)}));
}

Expected<Outputs> Unique(NodeContext& ctx) {
  Expected<int64_t> sorted = ctx.Int("sorted", 1);
  if (!sorted) return ctx.Error(sorted.error().message);
  ir::Attrs a;
  a.Set("sorted", *sorted != 0);
  if (ctx.Attr("axis")) {
    Expected<int64_t> axis = ctx.Int("axis");
    if (!axis) return ctx.Error(axis.error().message);
    a.Set("axis", *axis);
  }
  Expected<ir::Expr> call = ir::MakeOpCall(OpKind::kUnique, {ctx.Input(0)}, a);
  if (!call) return ctx.Error(call.error().message);
  return Unpack(ctx, ctx.Bind(*call), ctx.NumOutputs());
}

Expected<Outputs> TopK(NodeContext& ctx) {
  Expected<int64_t> axis = ctx.Int("axis", -1);
  Expected<int64_t> largest = ctx.Int("largest", 1);
  Expected<int64_t> sorted = ctx.Int("sorted", 1);
  if (!axis || !largest || !sorted) {
    return ctx.Error((!axis ? axis : !largest ? largest : sorted).error().message);
  }
  int64_t k;
  if (ctx.opset() < 10) {
    Expected<int64_t> kk = ctx.Int("k");
    if (!kk) return ctx.Error(kk.error().message);
    k = *kk;
  } else {
    Expected<std::vector<int64_t>> kk = RequiredInts(ctx, 1, "K");
    if (!kk) return kk.error();
    if (kk->size() != 1) return ctx.Error("input 'K' must hold one value");
    k = (*kk)[0];
  }
  ir::Attrs a;
  a.Set("k", k);
  a.Set("axis", *axis);
  a.Set("largest", *largest != 0);
  a.Set("sorted", *sorted != 0);
  a.Set("dtype", ir::DataType::kInt64);
  if (!ctx.Input(0)) return ctx.Error("TopK needs an input");
  Expected<ir::Expr> call = ir::MakeOpCall(OpKind::kTopk, {ctx.Input(0)}, a);
  if (!call) return ctx.Error(call.error().message);
  return Unpack(ctx, ctx.Bind(*call), ctx.NumOutputs());
}

Expected<Outputs> BitCast(NodeContext& ctx) {
  Expected<int64_t> to = ctx.Int("to");
  if (!to) return ctx.Error(to.error().message);
  std::optional<ir::DataType> t = ElemType(static_cast<int32_t>(*to));
  if (!t || *t == ir::DataType::kString) {
    return ctx.Error("attribute 'to' = " + std::to_string(*to) + " is not a supported type");
  }
  return NodeContext::Single(ctx.Emit(OpKind::kBitcast, {ctx.Input(0)}, OneAttr("dtype", *t)));
}

// Upsample (deprecated): Resize-10's semantics (asymmetric coordinates, nearest rounds down);
// scales an attribute before opset 9, an input from then on.
Expected<Outputs> Upsample(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Upsample needs an input");
  Expected<std::string> mode = ctx.String("mode", "nearest");
  if (!mode) return ctx.Error(mode.error().message);
  if (*mode != "nearest" && *mode != "linear") {
    return ctx.Error("mode must be nearest or linear, got '" + *mode + "'");
  }
  ir::Expr scales;
  if (ctx.opset() < 9) {
    Expected<std::vector<double>> sc = ctx.Floats("scales");
    if (!sc) return ctx.Error(sc.error().message);
    std::vector<float> f(sc->begin(), sc->end());
    Expected<ir::Expr> c =
        ctx.Const(ir::DataType::kFloat32, {static_cast<int64_t>(f.size())}, f.data());
    if (!c) return ctx.Error(c.error().message);
    scales = *c;
  } else {
    if (!ctx.HasInput(1)) return ctx.Error("input 'scales' is required");
    scales = ctx.Input(1);
  }
  Expected<ir::Expr> roi = ctx.Const(ir::DataType::kFloat32, {0}, nullptr);
  Expected<ir::Expr> sizes = ctx.Const(ir::DataType::kInt64, {0}, nullptr);
  if (!roi || !sizes) return ctx.Error("cannot build empty constants");
  ir::Attrs a;
  a.Set("mode", *mode);
  a.Set("coordinate_transformation_mode", std::string("asymmetric"));
  a.Set("nearest_mode", std::string("floor"));
  return NodeContext::Single(ctx.Emit(OpKind::kResize, {x, *roi, scales, *sizes}, a));
}

}  // namespace

const std::vector<Converter> kTensorConverters = {
    {"Identity", 1, Identity},
    {"Constant", 1, Constant},
    {"Shape", 1, Shape},
    {"Size", 1, Size},
    {"Reshape", 5, Reshape},
    {"Transpose", 1, Transpose},
    {"Concat", 4, Concat},
    {"Unsqueeze", 1, Unsqueeze},
    {"Squeeze", 1, Squeeze},
    {"Flatten", 1, Flatten},
    {"Expand", 8, Expand},
    {"ConstantOfShape", 9, ConstantOfShape},
    {"Range", 11, Range},
    {"EyeLike", 9, EyeLike},
    {"Slice", 1, Slice},
    {"Pad", 2, Pad},
    {"Split", 2, Split},
    {"Tile", 6, Tile},
    {"Trilu", 14, Trilu},
    {"CenterCropPad", 18, CenterCropPad},
    {"Gather", 1, Gather},
    {"GatherElements", 11, GatherElements},
    {"GatherND", 11, GatherND},
    {"Scatter", 9, ScatterElements},
    {"ScatterElements", 11, ScatterElements},
    {"ScatterND", 11, ScatterND},
    {"OneHot", 9, OneHot},
    {"Compress", 9, Compress},
    {"ReverseSequence", 10, ReverseSequence},
    {"CastLike", 15, CastLike},
    {"NonZero", 9, NonZero},
    {"Unique", 11, Unique},
    {"TopK", 1, TopK},
    {"BitCast", 26, BitCast},
    {"Upsample", 7, Upsample},
};

}  // namespace quilt::importers::onnx
