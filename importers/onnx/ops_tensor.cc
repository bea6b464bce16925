// Converters of layout, shape and indexing ops. Shape computations on known values stay
// symbolic here (Shape -> Concat -> Reshape with a dynamic batch gives `R.reshape(x, (n, 64))`).
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

Expected<Outputs> Identity(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Identity needs an input");
  if (auto k = ctx.Known(0)) ctx.SetKnown(0, *k);
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
    if (a.type() != ::onnx::AttributeProto::TENSOR) return ctx.Error("attribute 'value' must be a tensor");
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
  if (n == "value_string" || n == "value_strings") return ctx.Error("string constants are left out");
  if (n == "sparse_value") return ctx.Error("sparse constants are not supported");
  return ctx.Error("unknown Constant attribute '" + n + "'");
}

Expected<Outputs> Shape(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Shape needs an input");
  const ir::StructInfo& s = x->struct_info;
  if (s->ndim < 0) return ctx.Error("the rank of the input must be known");
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
    if (b != 0 || e != rank) return ctx.Error("a slice of a symbolic shape is not supported yet");
    ctx.SetKnown(0, dims);
  } else if (b != 0 || e != rank) {
    return ctx.Error("a slice of an unknown shape is not supported yet");
  }
  Expected<ir::Expr> shape = ctx.Emit(OpKind::kShapeOf, {x});
  if (!shape) return shape.error();
  return NodeContext::Single(ctx.Emit(OpKind::kShapeToTensor, {*shape}));
}

Expected<Outputs> Reshape(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0);
  if (!x || !ctx.HasInput(1)) return ctx.Error("Reshape needs data and shape");
  Expected<int64_t> allowzero = ctx.Int("allowzero", 0);
  if (!allowzero) return ctx.Error(allowzero.error().message);
  std::optional<KnownValues> target = ctx.Known(1);
  if (!target) {
    Expected<ir::Expr> s = ctx.Emit(OpKind::kTensorToShape, {ctx.Input(1)});
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
        return ctx.Error("shape[" + std::to_string(i) + "] = 0 copies an input dimension that does not exist");
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
      dims[infer_at] = ir::PrimEqual(total, known) ? ir::IntImm(1)
                                                   : ir::MakeBinary(ir::PrimKind::kFloorDiv, total, known);
    }
  }
  Expected<ir::Expr> e = ctx.Emit(OpKind::kReshape, {x, ir::MakeShapeExpr(dims)});
  if (!e) return e.error();
  if (auto k = ctx.Known(0)) ctx.SetKnown(0, *k);
  return Outputs{*e};
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
  KnownValues known;
  bool all_known = true;
  for (int i = 0; i < ctx.NumInputs(); ++i) {
    if (!ctx.HasInput(i)) continue;
    parts.push_back(ctx.Input(i));
    std::optional<KnownValues> k = ctx.Known(i);
    if (k) known.insert(known.end(), k->begin(), k->end());
    all_known &= k.has_value();
  }
  if (parts.empty()) return ctx.Error("Concat needs at least one input");
  ir::Attrs a;
  a.Set("axis", *axis);
  Expected<ir::Expr> e = ctx.Emit(OpKind::kConcat, {ir::MakeTuple(parts)}, a);
  if (!e) return e.error();
  if (all_known && (*e)->struct_info->ndim == 1) ctx.SetKnown(0, known);
  return Outputs{*e};
}

Expected<Outputs> Unsqueeze(NodeContext& ctx) {
  Expected<std::vector<int64_t>> axes = AxesOf(ctx, 13, 1, true);
  if (!axes) return axes.error();
  ir::Attrs a;
  a.Set("axis", *axes);
  Expected<ir::Expr> e = ctx.Emit(OpKind::kExpandDims, {ctx.Input(0)}, a);
  if (!e) return e.error();
  if (auto k = ctx.Known(0); k && (*e)->struct_info->ndim <= 1) ctx.SetKnown(0, *k);
  return Outputs{*e};
}

Expected<Outputs> Squeeze(NodeContext& ctx) {
  Expected<std::vector<int64_t>> axes = AxesOf(ctx, 13, 1, false);
  if (!axes) return axes.error();
  ir::Attrs a;
  if (!axes->empty()) a.Set("axis", *axes);
  Expected<ir::Expr> e = ctx.Emit(OpKind::kSqueeze, {ctx.Input(0)}, a);
  if (!e) return e.error();
  if (auto k = ctx.Known(0); k && (*e)->struct_info->ndim <= 1) ctx.SetKnown(0, *k);
  return Outputs{*e};
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
    return ctx.Error("axis " + std::to_string(*axis) + " is out of range for rank " + std::to_string(rank));
  }
  size_t split = static_cast<size_t>(*axis < 0 ? *axis + rank : *axis);
  std::vector<ir::PrimExpr> dims = {Product(*s->shape, 0, split),
                                    Product(*s->shape, split, s->shape->size())};
  return NodeContext::Single(ctx.Emit(OpKind::kReshape, {x, ir::MakeShapeExpr(dims)}));
}

}  // namespace

const std::vector<Converter> kTensorConverters = {
    {"Identity", 1, Identity},   {"Constant", 1, Constant},   {"Shape", 1, Shape},
    {"Reshape", 5, Reshape},     {"Transpose", 1, Transpose}, {"Concat", 4, Concat},
    {"Unsqueeze", 1, Unsqueeze}, {"Squeeze", 1, Squeeze},     {"Flatten", 1, Flatten},
};

}  // namespace quilt::importers::onnx
