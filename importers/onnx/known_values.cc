#include "importers/onnx/known_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

namespace quilt::importers::onnx {
namespace {

using ir::PrimExpr;
using ir::PrimKind;
using Shape = std::vector<int64_t>;

// A known value with its static shape (row-major elements).
struct Known {
  Shape shape;
  KnownValues v;
};

int64_t NumElements(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
}

Shape Strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// The multi-index of flat index `flat` in shape `s`.
Shape Unravel(int64_t flat, const Shape& s) {
  Shape idx(s.size());
  for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) {
    idx[i] = s[i] ? flat % s[i] : 0;
    flat = s[i] ? flat / s[i] : 0;
  }
  return idx;
}

bool IsIntegral(ir::DataType t) {
  switch (t) {
    case ir::DataType::kBool:
    case ir::DataType::kInt8:
    case ir::DataType::kInt16:
    case ir::DataType::kInt32:
    case ir::DataType::kInt64:
    case ir::DataType::kUInt8:
    case ir::DataType::kUInt16:
    case ir::DataType::kUInt32:
      return true;
    default:
      return false;
  }
}

std::optional<Known> Input(const NodeContext& ctx, int i) {
  if (!ctx.HasInput(i)) return std::nullopt;
  std::optional<KnownValues> k = ctx.Known(i);
  if (!k) return std::nullopt;
  const ir::StructInfo& s = ctx.InputSInfo(i);
  if (!s) return std::nullopt;
  if (std::optional<Shape> st = s->StaticShape(); st && NumElements(*st) == int64_t(k->size())) {
    return Known{*st, *k};
  }
  if (s->ndim == 0 && k->size() == 1) return Known{{}, *k};
  if (s->ndim == 1) return Known{{int64_t(k->size())}, *k};
  return std::nullopt;
}

std::optional<std::vector<Known>> Inputs(const NodeContext& ctx) {
  std::vector<Known> all;
  for (int i = 0; i < ctx.NumInputs(); ++i) {
    std::optional<Known> k = Input(ctx, i);
    if (!k) return std::nullopt;
    all.push_back(std::move(*k));
  }
  return all;
}

std::optional<Shape> Broadcast(const std::vector<Known>& in) {
  size_t rank = 0;
  for (const Known& k : in) rank = std::max(rank, k.shape.size());
  Shape out(rank, 1);
  for (const Known& k : in) {
    for (size_t i = 0; i < k.shape.size(); ++i) {
      int64_t& o = out[rank - k.shape.size() + i];
      int64_t d = k.shape[i];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  }
  return out;
}

// Where element `idx` (a multi-index into `out`) of a tensor of `shape` broadcast to `out` lies
// in its elements.
size_t BroadcastIndex(const Shape& shape, const Shape& idx, const Shape& out) {
  int64_t flat = 0;
  size_t lead = out.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    flat = flat * shape[i] + (shape[i] == 1 ? 0 : idx[lead + i]);
  }
  return static_cast<size_t>(flat);
}

// Element `idx` (a multi-index into `out`) of `k` broadcast to `out`.
const PrimExpr& At(const Known& k, const Shape& idx, const Shape& out) {
  return k.v[BroadcastIndex(k.shape, idx, out)];
}

std::optional<int64_t> Int(const PrimExpr& e) { return ir::AsInt(e); }
PrimExpr Bool(bool b) { return ir::IntImm(b ? 1 : 0); }

// Whether e is never negative: a dim (every symbolic variable is one), a constant of at least
// zero, or their sums, products, quotients, remainders, minimums and maximums.
bool NonNegative(const PrimExpr& e) {
  switch (e->kind) {
    case PrimKind::kInt:
      return e->value >= 0;
    case PrimKind::kVar:
      return true;
    case PrimKind::kAdd:
    case PrimKind::kMul:
    case PrimKind::kFloorDiv:
    case PrimKind::kFloorMod:
    case PrimKind::kMin:
      return NonNegative(e->a) && NonNegative(e->b);
    case PrimKind::kMax:
      return NonNegative(e->a) || NonNegative(e->b);
    case PrimKind::kSub:
      return false;
  }
  return false;
}

// One element of an elementwise op; nullopt where it cannot be known (symbolic operands that
// the op cannot carry, division by zero).
std::optional<PrimExpr> Elementwise(const std::string& op, const std::vector<PrimExpr>& a,
                                    int64_t fmod) {
  auto c = [&](size_t i) { return Int(a[i]); };
  if (op == "Add" || op == "Sum") {
    PrimExpr r = a[0];
    for (size_t i = 1; i < a.size(); ++i) r = r + a[i];
    return r;
  }
  if (op == "Sub") return a[0] - a[1];
  if (op == "Mul") return a[0] * a[1];
  if (op == "Min" || op == "Max") {
    PrimExpr r = a[0];
    for (size_t i = 1; i < a.size(); ++i) {
      r = ir::MakeBinary(op == "Min" ? PrimKind::kMin : PrimKind::kMax, r, a[i]);
    }
    return r;
  }
  if (op == "Div") {
    // Integer Div truncates toward zero. Symbolic dims are non-negative, where truncation is
    // floor division; a negative or zero constant divisor is left unknown.
    if (c(0) && c(1)) {
      if (*c(1) == 0) return std::nullopt;
      return ir::IntImm(*c(0) / *c(1));
    }
    if ((c(1) && *c(1) <= 0) || (c(0) && *c(0) < 0)) return std::nullopt;
    return ir::MakeBinary(PrimKind::kFloorDiv, a[0], a[1]);
  }
  if (op == "Mod") {
    if (c(0) && c(1)) {
      int64_t x = *c(0), y = *c(1);
      if (y == 0) return std::nullopt;
      int64_t r = x % y;                                    // fmod=1: the sign of the dividend
      if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;  // fmod=0: the sign of the divisor
      return ir::IntImm(r);
    }
    if (!c(1) || *c(1) <= 0) return std::nullopt;
    return ir::MakeBinary(PrimKind::kFloorMod, a[0], a[1]);
  }
  if (op == "Neg") return ir::IntImm(0) - a[0];
  if (op == "Identity" || op == "Cast" || op == "CastLike") return a[0];
  if (op == "Abs" || op == "Sign") {
    if (!c(0)) return std::nullopt;
    int64_t x = *c(0);
    return ir::IntImm(op == "Abs" ? (x < 0 ? -x : x) : (x > 0) - (x < 0));
  }
  if (op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" ||
      op == "GreaterOrEqual") {
    if (c(0) && c(1)) {
      int64_t x = *c(0), y = *c(1);
      bool r = op == "Equal"         ? x == y
               : op == "Less"        ? x < y
               : op == "LessOrEqual" ? x <= y
               : op == "Greater"     ? x > y
                                     : x >= y;
      return Bool(r);
    }
    // The same symbolic dim on both sides.
    if (ir::PrimEqual(a[0], a[1])) {
      return Bool(op == "Equal" || op == "LessOrEqual" || op == "GreaterOrEqual");
    }
    // A dim against a negative constant, as an Expand's shape computed as Where(Equal([n, -1,
    // -1], -1), 1, [n, -1, -1]) is (a vision transformer's class token broadcast to the batch):
    // the dim is the greater.
    const bool greater = NonNegative(a[0]) && c(1) && *c(1) < 0;
    const bool less = c(0) && *c(0) < 0 && NonNegative(a[1]);
    if (!greater && !less) return std::nullopt;
    if (op == "Equal") return Bool(false);
    return Bool((op == "Greater" || op == "GreaterOrEqual") == greater);
  }
  if (op == "Not") {
    if (!c(0)) return std::nullopt;
    return Bool(*c(0) == 0);
  }
  if (op == "And" || op == "Or" || op == "Xor") {
    if (!c(0) || !c(1)) return std::nullopt;
    bool x = *c(0) != 0, y = *c(1) != 0;
    return Bool(op == "And" ? x && y : op == "Or" ? x || y : x != y);
  }
  if (op == "Where") {
    if (!c(0)) return std::nullopt;
    return *c(0) ? a[1] : a[2];
  }
  return std::nullopt;
}

bool IsElementwise(const std::string& op) {
  static const char* kOps[] = {
      "Add",   "Sum",   "Sub",  "Mul",      "Min",         "Max",           "Div", "Mod",
      "Neg",   "Abs",   "Sign", "Identity", "Not",         "And",           "Or",  "Xor",
      "Where", "Equal", "Less", "Greater",  "LessOrEqual", "GreaterOrEqual"};
  return std::find_if(std::begin(kOps), std::end(kOps), [&](const char* o) { return op == o; }) !=
         std::end(kOps);
}

std::optional<Known> EvaluateElementwise(const NodeContext& ctx, std::vector<Known> in,
                                         ir::DataType out_dtype) {
  const std::string& op = ctx.op_type();
  std::optional<Shape> shape = Broadcast(in);
  if (!shape || NumElements(*shape) > kMaxKnownElements) return std::nullopt;
  int64_t fmod = 0;
  if (op == "Mod") {
    Expected<int64_t> f = ctx.Int("fmod", 0);
    if (!f) return std::nullopt;
    fmod = *f;
  }
  Known out{*shape, {}};
  std::vector<PrimExpr> args(in.size());
  for (int64_t i = 0; i < NumElements(*shape); ++i) {
    Shape idx = Unravel(i, *shape);
    for (size_t j = 0; j < in.size(); ++j) args[j] = At(in[j], idx, *shape);
    std::optional<PrimExpr> r = Elementwise(op, args, fmod);
    if (!r) return std::nullopt;
    // A cast to bool: non-zero is true.
    if (out_dtype == ir::DataType::kBool && (op == "Cast" || op == "CastLike")) {
      std::optional<int64_t> v = Int(*r);
      if (!v) return std::nullopt;
      r = Bool(*v != 0);
    }
    out.v.push_back(*r);
  }
  return out;
}

// Normalizes a possibly negative axis of a rank-`rank` tensor.
std::optional<int64_t> Axis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

std::optional<Known> Transpose(const NodeContext& ctx, const Known& x) {
  Shape perm(x.shape.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
  Expected<std::vector<int64_t>> p = ctx.Ints("perm", perm);
  if (!p || p->size() != x.shape.size()) return std::nullopt;
  Shape shape;
  for (int64_t a : *p) {
    std::optional<int64_t> ax = Axis(a, x.shape.size());
    if (!ax) return std::nullopt;
    shape.push_back(x.shape[*ax]);
  }
  Shape st = Strides(x.shape);
  Known out{shape, {}};
  for (int64_t i = 0; i < NumElements(shape); ++i) {
    Shape idx = Unravel(i, shape);
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat += idx[d] * st[*Axis((*p)[d], x.shape.size())];
    out.v.push_back(x.v[static_cast<size_t>(flat)]);
  }
  return out;
}

std::optional<Known> Concat(const NodeContext& ctx, const std::vector<Known>& in) {
  Expected<int64_t> a = ctx.Int("axis");
  if (!a || in.empty()) return std::nullopt;
  std::optional<int64_t> axis = Axis(*a, in[0].shape.size());
  if (!axis) return std::nullopt;
  Shape shape = in[0].shape;
  shape[*axis] = 0;
  for (const Known& k : in) {
    if (k.shape.size() != shape.size()) return std::nullopt;
    shape[*axis] += k.shape[*axis];
  }
  // Row-major: for each index of the dims before the axis, the inputs' blocks in order.
  int64_t outer = NumElements(Shape(shape.begin(), shape.begin() + *axis));
  Known out{shape, {}};
  for (int64_t o = 0; o < outer; ++o) {
    for (const Known& k : in) {
      int64_t block = NumElements(Shape(k.shape.begin() + *axis, k.shape.end()));
      for (int64_t j = 0; j < block; ++j) out.v.push_back(k.v[static_cast<size_t>(o * block + j)]);
    }
  }
  return out;
}

// The elements of `x` at the index lists `picks` (one list per axis).
Known Pick(const Known& x, const std::vector<Shape>& picks) {
  Shape shape;
  for (const Shape& p : picks) shape.push_back(static_cast<int64_t>(p.size()));
  Shape st = Strides(x.shape);
  Known out{shape, {}};
  for (int64_t i = 0; i < NumElements(shape); ++i) {
    Shape idx = Unravel(i, shape);
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat += picks[d][idx[d]] * st[d];
    out.v.push_back(x.v[static_cast<size_t>(flat)]);
  }
  return out;
}

std::vector<Shape> AllIndices(const Shape& s) {
  std::vector<Shape> picks;
  for (int64_t d : s) {
    Shape p(d);
    std::iota(p.begin(), p.end(), 0);
    picks.push_back(p);
  }
  return picks;
}

std::optional<Known> Slice(const NodeContext& ctx, const Known& x) {
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    Expected<std::vector<int64_t>> s = ctx.Ints("starts"), e = ctx.Ints("ends");
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (ctx.Attr("axes")) {
      Expected<std::vector<int64_t>> a = ctx.Ints("axes");
      if (!a) return std::nullopt;
      axes = *a;
    }
  } else {
    starts = ctx.KnownInts(1);
    ends = ctx.KnownInts(2);
    if (ctx.HasInput(3)) axes = ctx.KnownInts(3);
    if (ctx.HasInput(4)) steps = ctx.KnownInts(4);
    if ((ctx.HasInput(3) && !axes) || (ctx.HasInput(4) && !steps)) return std::nullopt;
  }
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  if (!axes) {
    axes.emplace(starts->size());
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps.emplace(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size()) return std::nullopt;
  std::vector<Shape> picks = AllIndices(x.shape);
  for (size_t i = 0; i < axes->size(); ++i) {
    std::optional<int64_t> ax = Axis((*axes)[i], x.shape.size());
    int64_t step = (*steps)[i];
    if (!ax || step == 0) return std::nullopt;
    int64_t dim = x.shape[*ax], lo = (*starts)[i], hi = (*ends)[i];
    if (lo < 0) lo += dim;
    if (hi < 0) hi += dim;
    Shape p;
    if (step > 0) {
      lo = std::clamp<int64_t>(lo, 0, dim);
      hi = std::clamp<int64_t>(hi, 0, dim);
      for (int64_t j = lo; j < hi; j += step) p.push_back(j);
    } else {
      lo = std::clamp<int64_t>(lo, 0, dim - 1);
      hi = std::clamp<int64_t>(hi, -1, dim - 1);
      for (int64_t j = lo; j > hi; j += step) p.push_back(j);
    }
    picks[*ax] = p;
  }
  return Pick(x, picks);
}

std::optional<Known> Gather(const NodeContext& ctx, const Known& data, const Known& indices) {
  Expected<int64_t> a = ctx.Int("axis", 0);
  if (!a) return std::nullopt;
  std::optional<int64_t> axis = Axis(*a, data.shape.size());
  if (!axis) return std::nullopt;
  Shape shape(data.shape.begin(), data.shape.begin() + *axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + *axis + 1, data.shape.end());
  int64_t outer = NumElements(Shape(data.shape.begin(), data.shape.begin() + *axis));
  int64_t inner = NumElements(Shape(data.shape.begin() + *axis + 1, data.shape.end()));
  int64_t dim = data.shape[*axis];
  Known out{shape, {}};
  for (int64_t o = 0; o < outer; ++o) {
    for (const PrimExpr& e : indices.v) {
      std::optional<int64_t> j = Int(e);
      if (!j || *j < -dim || *j >= dim) return std::nullopt;
      int64_t row = *j < 0 ? *j + dim : *j;
      for (int64_t k = 0; k < inner; ++k) {
        out.v.push_back(data.v[static_cast<size_t>((o * dim + row) * inner + k)]);
      }
    }
  }
  return out;
}

std::optional<Known> Reduce(const NodeContext& ctx, const Known& x) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.NumInputs() > 1) {
    if (ctx.HasInput(1)) {
      axes = ctx.KnownInts(1);
      if (!axes) return std::nullopt;
    }
  } else if (ctx.Attr("axes")) {
    Expected<std::vector<int64_t>> a = ctx.Ints("axes");
    if (!a) return std::nullopt;
    axes = *a;
  }
  Expected<int64_t> keep = ctx.Int("keepdims", 1);
  Expected<int64_t> noop = ctx.Int("noop_with_empty_axes", 0);
  if (!keep || !noop) return std::nullopt;
  if ((!axes || axes->empty()) && *noop) return x;
  std::vector<bool> reduced(x.shape.size(), !axes || axes->empty());
  if (axes) {
    for (int64_t a : *axes) {
      std::optional<int64_t> ax = Axis(a, x.shape.size());
      if (!ax) return std::nullopt;
      reduced[*ax] = true;
    }
  }
  Shape kept = x.shape;  // the shape with reduced dims as 1
  for (size_t d = 0; d < kept.size(); ++d) {
    if (reduced[d]) kept[d] = 1;
  }
  const std::string& op = ctx.op_type();
  std::vector<std::optional<PrimExpr>> acc(static_cast<size_t>(NumElements(kept)));
  Shape kst = Strides(kept);
  for (int64_t i = 0; i < NumElements(x.shape); ++i) {
    Shape idx = Unravel(i, x.shape);
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat += (reduced[d] ? 0 : idx[d]) * kst[d];
    std::optional<PrimExpr>& a = acc[static_cast<size_t>(flat)];
    const PrimExpr& v = x.v[static_cast<size_t>(i)];
    if (!a) {
      a = v;
    } else if (op == "ReduceSum") {
      a = *a + v;
    } else if (op == "ReduceProd") {
      a = *a * v;
    } else {
      a = ir::MakeBinary(op == "ReduceMin" ? PrimKind::kMin : PrimKind::kMax, *a, v);
    }
  }
  Known out{{}, {}};
  for (const std::optional<PrimExpr>& a : acc) {
    if (!a) {
      // An empty reduction: the sum's and product's identities; min and max have none.
      if (op != "ReduceSum" && op != "ReduceProd") return std::nullopt;
      out.v.push_back(ir::IntImm(op == "ReduceSum" ? 0 : 1));
    } else {
      out.v.push_back(*a);
    }
  }
  for (size_t d = 0; d < kept.size(); ++d) {
    if (!reduced[d] || *keep) out.shape.push_back(kept[d]);
  }
  return out;
}

std::optional<Known> Evaluate(const NodeContext& ctx, int output, const ir::StructInfo& out) {
  const std::string& op = ctx.op_type();
  if (output != 0) return std::nullopt;
  if (op == "Cast" || op == "CastLike" || IsElementwise(op)) {
    std::optional<std::vector<Known>> in = Inputs(ctx);
    if (op == "Cast" || op == "CastLike") {
      std::optional<Known> x = Input(ctx, 0);
      if (!x) return std::nullopt;
      in = std::vector<Known>{*x};
    }
    if (!in || in->empty()) return std::nullopt;
    return EvaluateElementwise(ctx, std::move(*in), out->dtype);
  }
  std::optional<Known> x = Input(ctx, 0);
  if (!x) return std::nullopt;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    return Known{{}, x->v};  // the same elements; the shape comes from the output
  }
  if (op == "Transpose") return Transpose(ctx, *x);
  if (op == "Slice") return Slice(ctx, *x);
  if (op == "Concat") {
    std::optional<std::vector<Known>> in = Inputs(ctx);
    if (!in) return std::nullopt;
    return Concat(ctx, *in);
  }
  if (op == "Gather") {
    std::optional<Known> indices = Input(ctx, 1);
    if (!indices) return std::nullopt;
    return Gather(ctx, *x, *indices);
  }
  if (op == "ReduceSum" || op == "ReduceProd" || op == "ReduceMin" || op == "ReduceMax") {
    return Reduce(ctx, *x);
  }
  if (op == "Expand" || op == "Tile") {
    std::optional<Shape> shape = out->StaticShape();
    if (!shape || NumElements(*shape) > kMaxKnownElements) return std::nullopt;
    Known r{*shape, {}};
    size_t lead = shape->size() - std::min(shape->size(), x->shape.size());
    if (op == "Tile" && x->shape.size() != shape->size()) return std::nullopt;
    for (int64_t i = 0; i < NumElements(*shape); ++i) {
      Shape idx = Unravel(i, *shape);
      int64_t flat = 0;
      for (size_t d = 0; d < x->shape.size(); ++d) {
        int64_t n = x->shape[d], j = idx[lead + d];
        if (op == "Expand" && n != 1 && n != (*shape)[lead + d]) return std::nullopt;
        flat = flat * n + (n == 1 ? 0 : j % n);
      }
      r.v.push_back(x->v[static_cast<size_t>(flat)]);
    }
    return r;
  }
  return std::nullopt;
}

// `values` as a constant of `dtype` (float32, float64, int64 or int32; each value already fits).
Expected<ir::Expr> ValuesConstant(NodeContext& ctx, ir::DataType dtype, const Shape& shape,
                                  const std::vector<double>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  for (size_t i = 0; i < values.size(); ++i) {
    auto put = [&](auto v) { std::memcpy(bytes.data() + sizeof(v) * i, &v, sizeof(v)); };
    if (dtype == ir::DataType::kFloat32) {
      put(static_cast<float>(values[i]));  // rounded to nearest, as the kernels' casts
    } else if (dtype == ir::DataType::kFloat64) {
      put(values[i]);
    } else if (dtype == ir::DataType::kInt64) {
      put(static_cast<int64_t>(values[i]));
    } else {
      put(static_cast<int32_t>(values[i]));
    }
  }
  return ctx.Const(dtype, std::vector<int64_t>(shape.begin(), shape.end()), bytes.data());
}

}  // namespace

std::optional<KnownValues> EvaluateKnown(const NodeContext& ctx, int output,
                                         const ir::StructInfo& out) {
  if (!out || out->kind != ir::StructInfoKind::kTensor || !IsIntegral(out->dtype)) {
    return std::nullopt;
  }
  std::optional<Known> k = Evaluate(ctx, output, out);
  if (!k || static_cast<int64_t>(k->v.size()) > kMaxKnownElements) return std::nullopt;
  // The converted output must hold exactly these elements.
  if (std::optional<Shape> st = out->StaticShape()) {
    if (NumElements(*st) != static_cast<int64_t>(k->v.size())) return std::nullopt;
    if (!k->shape.empty() && *st != k->shape) return std::nullopt;
  } else if (out->ndim != 1) {
    return std::nullopt;
  }
  return k->v;
}

std::optional<Expected<ir::Expr>> FoldFloatConstants(NodeContext& ctx) {
  const std::string& op = ctx.op_type();
  static const char* kOps[] = {"Add",  "Sub",   "Mul",  "Div",     "Pow",        "Min",
                               "Max",  "Sqrt",  "Neg",  "Abs",     "Reciprocal", "Floor",
                               "Ceil", "Round", "Cast", "CastLike"};
  if (std::find_if(std::begin(kOps), std::end(kOps), [&](const char* o) { return op == o; }) ==
          std::end(kOps) ||
      ctx.NumOutputs() != 1 || ctx.NumInputs() < 1) {
    return std::nullopt;
  }
  bool cast = op == "Cast" || op == "CastLike";
  int operands = cast ? 1 : ctx.NumInputs();
  if (!ctx.InputSInfo(0)) return std::nullopt;
  ir::DataType in_dtype = ctx.InputSInfo(0)->dtype, out_dtype = in_dtype;
  if (op == "Cast") {
    Expected<int64_t> to = ctx.Int("to");
    if (!to) return std::nullopt;
    out_dtype = static_cast<ir::DataType>(*to);
  } else if (op == "CastLike") {
    if (!ctx.HasInput(1) || !ctx.InputSInfo(1)) return std::nullopt;
    out_dtype = ctx.InputSInfo(1)->dtype;
  }
  bool to_int = out_dtype == ir::DataType::kInt64 || out_dtype == ir::DataType::kInt32;
  bool to_float = out_dtype == ir::DataType::kFloat32 || out_dtype == ir::DataType::kFloat64;
  if (!to_float && !to_int) return std::nullopt;
  if (cast && to_float && IsIntegral(in_dtype) && in_dtype != ir::DataType::kBool) {
    // Integers known at import (a Shape's dims, arithmetic on them) cast to a float: a float
    // constant. A detector's anchor grid is Range(0.0, Cast(Gather(Shape(x))), 1.0) + 0.5; with
    // the limit constant the Range has a static length.
    std::optional<Known> k = Input(ctx, 0);
    if (!k || static_cast<int64_t>(k->v.size()) > kMaxKnownElements) return std::nullopt;
    std::vector<double> out;
    for (const PrimExpr& e : k->v) {
      std::optional<int64_t> v = Int(e);
      if (!v || *v > (int64_t{1} << 53) || *v < -(int64_t{1} << 53)) return std::nullopt;
      out.push_back(static_cast<double>(*v));  // exact
    }
    return ValuesConstant(ctx, out_dtype, k->shape, out);
  }
  if (in_dtype != ir::DataType::kFloat32 && in_dtype != ir::DataType::kFloat64) {
    return std::nullopt;
  }
  std::vector<Known> in;  // shapes only; the values are in `values`
  std::vector<std::vector<double>> values;
  for (int i = 0; i < operands; ++i) {
    const ir::ConstantNode* c = ctx.ConstantInput(i);
    if (!c || c->dtype != in_dtype) return std::nullopt;
    std::optional<std::vector<double>> v = ctx.ConstantFloats(i);
    if (!v) return std::nullopt;
    Shape shape(c->shape.begin(), c->shape.end());
    in.push_back(Known{shape, {}});
    values.push_back(std::move(*v));
  }
  std::optional<Shape> shape = Broadcast(in);
  if (!shape || NumElements(*shape) > kMaxKnownElements) return std::nullopt;
  auto at = [&](size_t j, const Shape& idx) {
    return values[j][BroadcastIndex(in[j].shape, idx, *shape)];
  };
  // One operation on operands of the input's type, computed in double and rounded to that type:
  // for float32 operands the same as float32 arithmetic (+ - * / and sqrt are correctly rounded).
  auto rounded = [&](double v) {
    return in_dtype == ir::DataType::kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
  };
  std::vector<double> out;
  for (int64_t e = 0; e < NumElements(*shape); ++e) {
    Shape idx = Unravel(e, *shape);
    double a = at(0, idx), r = a;
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
      if (operands != 2) return std::nullopt;
      double b = at(1, idx);
      r = op == "Add"   ? a + b
          : op == "Sub" ? a - b
          : op == "Mul" ? a * b
          : op == "Div" ? a / b
          // pow is not correctly rounded: float32's as its kernel computes it (powf).
          : in_dtype == ir::DataType::kFloat32
              ? static_cast<double>(std::pow(static_cast<float>(a), static_cast<float>(b)))
              : std::pow(a, b);
    } else if (op == "Min" || op == "Max") {
      for (int j = 1; j < operands; ++j) {
        double b = at(static_cast<size_t>(j), idx);
        r = std::isnan(r) || std::isnan(b) ? std::nan("")
            : op == "Min"                  ? std::min(r, b)
                                           : std::max(r, b);
      }
    } else if (op == "Sqrt") {
      r = std::sqrt(a);
    } else if (op == "Neg") {
      r = -a;
    } else if (op == "Abs") {
      r = std::abs(a);
    } else if (op == "Reciprocal") {
      r = 1.0 / a;
    } else if (op == "Floor") {
      r = std::floor(a);
    } else if (op == "Ceil") {
      r = std::ceil(a);
    } else if (op == "Round") {
      r = std::nearbyint(a);  // halves to even
    }
    if (cast) {
      if (to_int) {
        // Toward zero, where the value fits the type; anything else is left to the kernel.
        double limit = out_dtype == ir::DataType::kInt64 ? 9223372036854775807.0 : 2147483647.0;
        if (!std::isfinite(a) || std::trunc(a) >= limit || std::trunc(a) < -limit) {
          return std::nullopt;
        }
        r = std::trunc(a);
      } else if (out_dtype == ir::DataType::kFloat32) {
        r = static_cast<double>(static_cast<float>(a));
      }
    } else {
      r = rounded(r);
    }
    out.push_back(r);
  }
  return ValuesConstant(ctx, out_dtype, *shape, out);
}

}  // namespace quilt::importers::onnx
