// fold-constants: folds at compile time what constants allow.
//
// First a reshape or expand_dims of a constant whose result has a static shape becomes that
// constant in the new shape (same elements in the same order, on the result's vdevice; chains of
// them too): a conv bias the importer reshapes to (1, M, 1, 1) is then a constant the rules
// below and the conv epilogue fusion see. A permute_dims of a constant becomes the transposed
// constant (a Gemm's transB weight is transposed once, not at every run). A result the function
// returns stays a call. Every rule applies inside If branches too, each branch seen on its own
// (a Gemm in a branch has its weight transposed once as well).
//
// An inference batch_norm (axis 1) whose scale, shift, mean and variance are constants, right
// after a 2-d convolution (or transposed convolution) with a constant weight, becomes part of it:
//
//   c = R.nn.conv2d(x, W)              c = R.nn.conv2d(x, W')
//   [a = R.add(c, B)]          ==>     y = R.add(c, B')
//   (t read by nothing else)
//   t = R.nn.batch_norm(a or c, gamma, beta, mean, var, 1, training=False)
//   y = t[0]
//
// with s = gamma / sqrt(var + eps) per output channel, W' = W * s and B' = (B - mean) * s + beta
// (B = 0 without the add), B' of shape (1, M, 1, 1). The factor is computed in double. (A
// transposed conv's weight is (C, M / groups, kh, kw): output channel g * M / groups + j scales
// W[i, j] for the input channels i of group g.) Only when
// every tensor is float32, every intermediate result has no other use, the bias B is one value
// per channel (a constant, or a reshape/expand_dims of one) and the ops share one vdevice.
//
// Then a multiply or divide by a float32 scalar constant whose result only feeds a conv2d's data
// goes into that conv's weight: R.nn.conv2d(u / k, W) becomes R.nn.conv2d(u, W / k) (the
// hardswish's final divide by 6, say). And the adds and multiplies by constants per output
// channel (or of one value) that follow a conv2d, each read only by the next (its bias, a
// learnable affine block's scale and shift, a layer scale), go into its weight and one bias
// add (FoldAffineAfterConv): W' = W * scale, y = R.add(c, shift), the factors composed in
// double and each value rounded once, as ONNX Runtime's and OpenVINO's conv-mul and conv-add
// fusions do. The variables keep their struct info; bindings left without a use are removed.
//
// Not of constants, but of the same kind (a few steps an exporter writes for one): a layer
// normalization written out in steps becomes nn.layer_norm, and the extreme of a stack
// (StackedExtremes) a chain of pairwise maximum or minimum.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "ir/builder.h"
#include "passes/pass.h"

namespace quilt::passes {
namespace {

using ir::As;

struct FunctionView {
  std::map<const ir::VarNode*, ir::Expr> value;  // binding value of each bound variable
  std::map<const ir::VarNode*, int> uses;
  std::map<const ir::VarNode*, size_t> block;               // which block binds each bound variable
  std::set<const ir::VarNode*> returned;                    // variables the function body returns
  std::map<const ir::VarNode*, const ir::VarNode*> reader;  // a binding that reads each one
};

// The view of one body: a function's, or an If branch's. What it returns is the variable its
// result is, or each variable of a result tuple (a branch's result may be a call, whose
// arguments are uses, not results).
FunctionView View(const ir::SeqExprNode& body) {
  FunctionView v;
  for (const ir::VarNode* u : ir::UsedVars(body.body)) ++v.uses[u];
  if (const auto* var = As<ir::VarNode>(body.body)) v.returned.insert(var);
  if (const auto* tuple = As<ir::TupleNode>(body.body)) {
    for (const ir::Expr& field : tuple->fields) {
      if (const auto* var = As<ir::VarNode>(field)) v.returned.insert(var);
    }
  }
  for (size_t i = 0; i < body.blocks.size(); ++i) {
    for (const ir::Binding& b : body.blocks[i].bindings) {
      v.value[b.var.get()] = b.value;
      v.block[b.var.get()] = i;
      for (const ir::VarNode* u : ir::UsedVars(b.value)) {
        ++v.uses[u];
        v.reader[u] = b.var.get();
      }
    }
  }
  return v;
}

// Whether the binding of `here` may read `e` where it is: a dataflow variable only inside its
// own block.
bool VisibleAt(const FunctionView& v, const ir::Expr& e, const ir::VarNode* here) {
  const auto* var = As<ir::VarNode>(e);
  if (!var || !var->IsDataflow()) return true;
  auto at = v.block.find(var), it = v.block.find(here);
  return at != v.block.end() && it != v.block.end() && at->second == it->second;
}
bool VisibleAt(const FunctionView& v, const ir::Expr& e, const ir::Binding& b) {
  return VisibleAt(v, e, b.var.get());
}

// `e` itself when it is a constant, else the constant a variable is bound to.
const ir::ConstantNode* ConstantOf(const FunctionView& v, const ir::Expr& e) {
  if (const auto* c = As<ir::ConstantNode>(e)) return c;
  if (const auto* var = As<ir::VarNode>(e)) {
    auto it = v.value.find(var);
    if (it != v.value.end()) return As<ir::ConstantNode>(it->second);
  }
  return nullptr;
}

const ir::CallNode* OpCallOf(const ir::Expr& e, ir::OpKind kind) {
  const auto* call = As<ir::CallNode>(e);
  return call && call->op() && call->op()->kind == kind ? call : nullptr;
}

// The variable's binding value when it is a call of `kind` and the variable has `uses` uses (a
// return counts as one).
const ir::CallNode* SoleUseCall(const FunctionView& v, const ir::Expr& e, ir::OpKind kind,
                                int uses = 1) {
  const auto* var = As<ir::VarNode>(e);
  if (!var) return nullptr;
  auto n = v.uses.find(var);
  auto value = v.value.find(var);
  if (n == v.uses.end() || n->second != uses || value == v.value.end()) return nullptr;
  return OpCallOf(value->second, kind);
}

std::optional<std::vector<float>> Floats(const ir::ConstantNode* c, int64_t n) {
  if (!c || c->dtype != ir::DataType::kFloat32 || c->NumElements() != n || !c->data ||
      c->data->size() != static_cast<size_t>(n) * 4) {
    return std::nullopt;
  }
  std::vector<float> out(n);
  std::memcpy(out.data(), c->data->data(), out.size() * 4);
  return out;
}

// Static dims of a tensor struct info, or nullopt.
std::optional<std::vector<int64_t>> StaticShape(const ir::StructInfo& s) {
  if (!s || !s->shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const ir::PrimExpr& d : *s->shape) {
    std::optional<int64_t> v = ir::AsInt(d);
    if (!v) return std::nullopt;
    dims.push_back(*v);
  }
  return dims;
}

// One float32 value per channel of an (N, M, H, W) tensor: `e` broadcasts along every dim but
// the channel (its shape right-aligned: (M, 1, 1) or (1, M, 1, 1)), and it is a constant or a
// reshape/expand_dims of a constant of M elements (whose order such a shape keeps).
std::optional<std::vector<float>> ChannelVector(const FunctionView& v, const ir::Expr& e,
                                                int64_t m) {
  std::optional<std::vector<int64_t>> shape = StaticShape(e->struct_info);
  if (!shape || shape->size() < 3 || shape->size() > 4) return std::nullopt;
  for (size_t i = 0; i < shape->size(); ++i) {
    bool channel = i + 3 == shape->size();
    if ((*shape)[i] != (channel ? m : 1)) return std::nullopt;
  }
  if (const ir::ConstantNode* c = ConstantOf(v, e)) return Floats(c, m);
  const auto* var = As<ir::VarNode>(e);
  auto it = var ? v.value.find(var) : v.value.end();
  if (it == v.value.end()) return std::nullopt;
  const ir::CallNode* call = OpCallOf(it->second, ir::OpKind::kReshape);
  if (!call) call = OpCallOf(it->second, ir::OpKind::kExpandDims);
  if (!call || call->args.empty()) return std::nullopt;
  return Floats(ConstantOf(v, call->args[0]), m);
}

std::optional<ir::VDevice> VDeviceOf(const ir::Expr& e) {
  return e && e->struct_info ? e->struct_info->vdevice : std::nullopt;
}

Expected<ir::Expr> FloatConstant(const std::vector<float>& values, std::vector<int64_t> shape) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * 4);
  std::memcpy(bytes->data(), values.data(), bytes->size());
  return ir::MakeConstant(ir::DataType::kFloat32, std::move(shape), std::move(bytes));
}

// New binding values for some variables of a function; empty when a rule does not apply.
using Rewrites = std::vector<std::pair<const ir::VarNode*, ir::Expr>>;

// y = R.reshape(k, shape) or R.expand_dims(k, axis) with k a constant and y of static shape (not
// returned): y = k's elements in y's shape.
Expected<Rewrites> FoldReshape(const FunctionView& v, const ir::Binding& binding) {
  const ir::CallNode* call = OpCallOf(binding.value, ir::OpKind::kReshape);
  if (!call) call = OpCallOf(binding.value, ir::OpKind::kExpandDims);
  if (!call || call->args.empty() || v.returned.count(binding.var.get())) return Rewrites();
  const ir::ConstantNode* c = ConstantOf(v, call->args[0]);
  const ir::StructInfo& s = binding.var->struct_info;
  if (!s || s->kind != ir::StructInfoKind::kTensor) return Rewrites();
  std::optional<std::vector<int64_t>> shape = StaticShape(s);
  if (!c || !c->data || !shape || s->dtype != c->dtype) return Rewrites();
  if (ir::ElementCount(*shape) != c->NumElements()) return Rewrites();
  Expected<ir::Expr> k = ir::MakeConstant(c->dtype, *shape, c->data, VDeviceOf(binding.var));
  if (!k) return k.error();
  return Rewrites{{binding.var.get(), *k}};
}

// y = R.permute_dims(k, axes) with k a constant of static shape (not returned): y = k's elements
// transposed, once at compile time instead of at every run (a Gemm's transB on its weight).
Expected<Rewrites> FoldPermuteDims(const FunctionView& v, const ir::Binding& binding) {
  const ir::CallNode* call = OpCallOf(binding.value, ir::OpKind::kPermuteDims);
  if (!call || call->args.empty() || v.returned.count(binding.var.get())) return Rewrites();
  const ir::ConstantNode* c = ConstantOf(v, call->args[0]);
  const ir::StructInfo& s = binding.var->struct_info;
  int bits = c ? ir::DataTypeBits(c->dtype) : 0;
  if (!c || !c->data || !s || s->kind != ir::StructInfoKind::kTensor || s->dtype != c->dtype ||
      bits < 8 || bits % 8 || !StaticShape(s)) {
    return Rewrites();
  }
  size_t rank = c->shape.size();
  std::vector<int64_t> axes(rank);
  for (size_t i = 0; i < rank; ++i) axes[i] = static_cast<int64_t>(rank - 1 - i);
  if (const auto* a = call->attrs.Get<std::vector<int64_t>>("axes")) axes = *a;
  if (axes.size() != rank) return Rewrites();
  std::vector<int64_t> in_strides(rank, 1), shape(rank);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * c->shape[i];
  for (size_t i = 0; i < rank; ++i) {
    if (axes[i] < 0) axes[i] += static_cast<int64_t>(rank);
    shape[i] = c->shape[static_cast<size_t>(axes[i])];
  }
  if (shape != *StaticShape(s)) return Rewrites();
  size_t elem = static_cast<size_t>(bits / 8);
  auto bytes = std::make_shared<std::vector<uint8_t>>(c->data->size());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t out = 0; out < c->NumElements(); ++out) {
    int64_t from = 0;
    for (size_t i = 0; i < rank; ++i) from += idx[i] * in_strides[static_cast<size_t>(axes[i])];
    std::memcpy(bytes->data() + static_cast<size_t>(out) * elem,
                c->data->data() + static_cast<size_t>(from) * elem, elem);
    for (size_t i = rank; i-- > 0;) {  // the next output index, row-major
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
  Expected<ir::Expr> k =
      ir::MakeConstant(c->dtype, shape, std::move(bytes), VDeviceOf(binding.var));
  if (!k) return k.error();
  return Rewrites{{binding.var.get(), *k}};
}

// A reshape, expand_dims or permute_dims of a constant.
Expected<Rewrites> FoldLayout(const FunctionView& v, const ir::Binding& binding) {
  Expected<Rewrites> r = FoldReshape(v, binding);
  if (!r || !r->empty()) return r;
  return FoldPermuteDims(v, binding);
}

Expected<Rewrites> FoldBatchNorm(const FunctionView& v, const ir::Binding& binding) {
  // y = bn[0] with bn = R.nn.batch_norm(...) in inference form, read only there.
  const auto* item = As<ir::TupleGetItemNode>(binding.value);
  if (!item || item->index != 0) return Rewrites();
  const ir::CallNode* bn = SoleUseCall(v, item->tuple, ir::OpKind::kBatchNorm);
  if (!bn || bn->args.size() != 5) return Rewrites();
  const int64_t* axis = bn->attrs.Get<int64_t>("axis");
  const double* eps = bn->attrs.Get<double>("epsilon");
  const bool* training = bn->attrs.Get<bool>("training");
  const bool* center = bn->attrs.Get<bool>("center");
  const bool* scale = bn->attrs.Get<bool>("scale");
  if (!axis || *axis != 1 || !eps || !training || *training || !center || !*center || !scale ||
      !*scale) {
    return Rewrites();
  }
  // The bias add between conv and batch_norm, if any.
  ir::Expr conv_expr = bn->args[0];
  const ir::CallNode* add = SoleUseCall(v, conv_expr, ir::OpKind::kAdd);
  std::optional<ir::VDevice> device = VDeviceOf(binding.var);
  if (add) {
    if (add->args.size() != 2 || VDeviceOf(conv_expr) != device) return Rewrites();
    conv_expr = add->args[0];
  }
  ir::OpKind kind = ir::OpKind::kConv2d;
  const ir::CallNode* conv = SoleUseCall(v, conv_expr, kind);
  if (!conv) {
    kind = ir::OpKind::kConv2dTranspose;
    conv = SoleUseCall(v, conv_expr, kind);
  }
  if (!conv || conv->args.size() != 2 || VDeviceOf(conv_expr) != device ||
      !VisibleAt(v, conv_expr, binding)) {
    return Rewrites();
  }
  const bool transposed = kind == ir::OpKind::kConv2dTranspose;
  const ir::ConstantNode* w = ConstantOf(v, conv->args[1]);
  const int64_t* group_attr = conv->attrs.Get<int64_t>("groups");
  const int64_t groups = group_attr ? *group_attr : 1;
  if (!w || w->dtype != ir::DataType::kFloat32 || w->shape.size() != 4 || w->shape[0] <= 0 ||
      w->shape[1] <= 0 || groups < 1 || (transposed && w->shape[0] % groups != 0)) {
    return Rewrites();
  }
  if (!conv_expr->struct_info || conv_expr->struct_info->dtype != ir::DataType::kFloat32 ||
      conv_expr->struct_info->ndim != 4 || !binding.var->struct_info ||
      binding.var->struct_info->dtype != ir::DataType::kFloat32) {
    return Rewrites();
  }
  // Output channels: a conv's weight (M, C / groups, kh, kw), a transposed conv's
  // (C, M / groups, kh, kw).
  const int64_t m = transposed ? w->shape[1] * groups : w->shape[0];
  std::vector<std::vector<float>> p;
  for (int i = 1; i <= 4; ++i) {
    std::optional<std::vector<float>> f = Floats(ConstantOf(v, bn->args[i]), m);
    if (!f) return Rewrites();
    p.push_back(std::move(*f));
  }
  std::vector<float> bias(m, 0.0f);
  if (add) {
    std::optional<std::vector<float>> b = ChannelVector(v, add->args[1], m);
    if (!b) return Rewrites();
    bias = std::move(*b);
  }
  const std::vector<float>&gamma = p[0], &beta = p[1], &mean = p[2], &var = p[3];
  std::vector<float> weight(w->NumElements());
  std::memcpy(weight.data(), w->data->data(), weight.size() * 4);
  std::vector<float> shift(m);
  std::vector<double> factor(m);
  for (int64_t c = 0; c < m; ++c) {
    factor[c] = static_cast<double>(gamma[c]) / std::sqrt(static_cast<double>(var[c]) + *eps);
    shift[c] = static_cast<float>((static_cast<double>(bias[c]) - mean[c]) * factor[c] + beta[c]);
  }
  if (transposed) {
    // W[i, j, ...] feeds output channel (i / (C / groups)) * (M / groups) + j.
    const int64_t in = w->shape[0], og = w->shape[1], taps = w->NumElements() / (in * og);
    for (int64_t i = 0; i < in; ++i) {
      for (int64_t j = 0; j < og; ++j) {
        double s = factor[i / (in / groups) * og + j];
        float* row = weight.data() + (i * og + j) * taps;
        for (int64_t t = 0; t < taps; ++t) row[t] = static_cast<float>(row[t] * s);
      }
    }
  } else {
    const int64_t per_channel = w->NumElements() / m;
    for (int64_t c = 0; c < m; ++c) {
      for (int64_t i = 0; i < per_channel; ++i) {
        float& x = weight[c * per_channel + i];
        x = static_cast<float>(x * factor[c]);
      }
    }
  }
  Expected<ir::Expr> new_w = FloatConstant(weight, w->shape);
  if (!new_w) return new_w.error();
  Expected<ir::Expr> new_b = FloatConstant(shift, {1, m, 1, 1});
  if (!new_b) return new_b.error();
  Expected<ir::Expr> new_conv = ir::MakeOpCall(kind, {conv->args[0], *new_w}, conv->attrs);
  if (!new_conv) return new_conv.error();
  const auto* conv_var = As<ir::VarNode>(conv_expr);
  Expected<ir::Expr> new_add = ir::MakeOpCall(ir::OpKind::kAdd, {conv_expr, *new_b});
  if (!new_add) return new_add.error();
  return Rewrites{{conv_var, *new_conv}, {binding.var.get(), *new_add}};
}

// c = R.nn.conv2d(h, W) with h = u * k, k * u or u / k (k a float32 scalar constant, h used
// only here): c = R.nn.conv2d(u, W * k) (or W / k). The zero padding is scaled alike.
Expected<Rewrites> FoldScaleIntoConv(const FunctionView& v, const ir::Binding& binding) {
  const ir::CallNode* conv = OpCallOf(binding.value, ir::OpKind::kConv2d);
  if (!conv || conv->args.size() != 2) return Rewrites();
  const ir::ConstantNode* w = ConstantOf(v, conv->args[1]);
  if (!w || w->dtype != ir::DataType::kFloat32 || w->shape.size() != 4) return Rewrites();
  const ir::Expr& h = conv->args[0];
  const ir::CallNode* scale = SoleUseCall(v, h, ir::OpKind::kMultiply);
  bool divide = false;
  if (!scale) {
    scale = SoleUseCall(v, h, ir::OpKind::kDivide);
    divide = true;
  }
  if (!scale || scale->args.size() != 2 || VDeviceOf(h) != VDeviceOf(binding.var)) {
    return Rewrites();
  }
  int k_arg = divide ? 1 : ConstantOf(v, scale->args[1]) ? 1 : 0;
  const ir::Expr& u = scale->args[1 - k_arg];
  if (!VisibleAt(v, u, binding)) return Rewrites();
  std::optional<std::vector<float>> k = Floats(ConstantOf(v, scale->args[k_arg]), 1);
  if (!k || !std::isfinite((*k)[0]) || (divide && (*k)[0] == 0.0f)) return Rewrites();
  const ir::StructInfo& us = u->struct_info;
  const ir::StructInfo& hs = h->struct_info;
  if (!us || !hs || us->dtype != ir::DataType::kFloat32 || us->ndim != 4 || hs->ndim != 4) {
    return Rewrites();
  }
  std::vector<float> weight(w->NumElements());
  std::memcpy(weight.data(), w->data->data(), weight.size() * 4);
  double factor = divide ? 1.0 / static_cast<double>((*k)[0]) : (*k)[0];
  for (float& x : weight) x = static_cast<float>(x * factor);
  Expected<ir::Expr> new_w = FloatConstant(weight, w->shape);
  if (!new_w) return new_w.error();
  Expected<ir::Expr> new_conv = ir::MakeOpCall(ir::OpKind::kConv2d, {u, *new_w}, conv->attrs);
  if (!new_conv) return new_conv.error();
  return Rewrites{{binding.var.get(), *new_conv}};
}

// ---- layer normalization written out in steps ----

// The variable whose binding is the one use of `var` (a return is a use), or null.
const ir::VarNode* SoleUser(const FunctionView& v, const ir::VarNode* var) {
  auto uses = v.uses.find(var);
  auto reader = v.reader.find(var);
  return uses != v.uses.end() && uses->second == 1 && reader != v.reader.end() ? reader->second
                                                                               : nullptr;
}

// The float32 value of a constant with one element.
std::optional<double> ScalarOf(const FunctionView& v, const ir::Expr& e) {
  const ir::ConstantNode* c = ConstantOf(v, e);
  if (!c || c->dtype != ir::DataType::kFloat32 || c->NumElements() != 1 || !c->data ||
      c->data->size() != 4) {
    return std::nullopt;
  }
  float f;
  std::memcpy(&f, c->data->data(), 4);
  return f;
}

// The other argument of binary `call` when one is a constant: {constant, other}.
std::optional<std::pair<ir::Expr, ir::Expr>> ConstantAndOther(const FunctionView& v,
                                                              const ir::CallNode* call) {
  if (!call || call->args.size() != 2) return std::nullopt;
  if (ConstantOf(v, call->args[1])) return std::make_pair(call->args[1], call->args[0]);
  if (ConstantOf(v, call->args[0])) return std::make_pair(call->args[0], call->args[1]);
  return std::nullopt;
}

// The float32 values of constant `e` as one per channel of a conv's (N, M, H, W) result: a
// ChannelVector, or one value for every channel (a constant whose dims, at most four, are all 1)
// repeated M times.
std::optional<std::vector<float>> ChannelOrScalar(const FunctionView& v, const ir::Expr& e,
                                                  int64_t m) {
  std::optional<std::vector<int64_t>> shape = StaticShape(e->struct_info);
  if (shape && shape->size() <= 4 &&
      std::all_of(shape->begin(), shape->end(), [](int64_t d) { return d == 1; })) {
    std::optional<std::vector<float>> one = Floats(ConstantOf(v, e), 1);
    if (!one) return std::nullopt;
    return std::vector<float>(static_cast<size_t>(m), (*one)[0]);
  }
  return ChannelVector(v, e, m);
}

// The affine chain of a conv: y = ((R.nn.conv2d(x, W) op k1) op k2) ... with each op an add or a
// multiply (either operand order) of a float32 constant per output channel or of one for all (a
// multiply's finite and nonzero: the fold would turn the conv's inf or NaN into a number), each
// result but the last read only by the next op, W a float32 constant of 4 dims read only by the
// conv, every value of 4 dims, float32 and on the last op's vdevice: y = conv * scale + shift per
// output channel, the factors composed in double. (A conv's bias, a learnable affine block's
// scale and shift, a layer scale.)
struct ConvAffine {
  ir::Expr conv_expr;
  const ir::VarNode* conv_var = nullptr;
  const ir::CallNode* conv = nullptr;
  const ir::ConstantNode* w = nullptr;
  std::vector<double> scale, shift;
  bool scaled = false;  // a multiply among the ops
  int ops = 0;
};
std::optional<ConvAffine> AffineChain(const FunctionView& v, const ir::Expr& value,
                                      const ir::VarNode* end) {
  constexpr int kMaxOps = 8;
  std::optional<ir::VDevice> device = end->struct_info ? end->struct_info->vdevice : std::nullopt;
  auto float4 = [&](const ir::Expr& e) {
    return e->struct_info && e->struct_info->dtype == ir::DataType::kFloat32 &&
           e->struct_info->ndim == 4 && VDeviceOf(e) == device;
  };
  if (!end->struct_info || end->struct_info->dtype != ir::DataType::kFloat32 ||
      end->struct_info->ndim != 4) {
    return std::nullopt;
  }
  std::vector<std::pair<bool, ir::Expr>> ops;  // (multiply, constant), the last op first
  const ir::CallNode* call = As<ir::CallNode>(value);
  ConvAffine r;
  for (;;) {
    if (!call || !call->op() ||
        (call->op()->kind != ir::OpKind::kAdd && call->op()->kind != ir::OpKind::kMultiply)) {
      return std::nullopt;
    }
    std::optional<std::pair<ir::Expr, ir::Expr>> ko = ConstantAndOther(v, call);
    if (!ko || static_cast<int>(ops.size()) == kMaxOps || !float4(ko->second)) return std::nullopt;
    ops.emplace_back(call->op()->kind == ir::OpKind::kMultiply, ko->first);
    if (const ir::CallNode* conv = SoleUseCall(v, ko->second, ir::OpKind::kConv2d)) {
      r.conv = conv;
      r.conv_expr = ko->second;
      break;
    }
    call = SoleUseCall(v, ko->second, ir::OpKind::kAdd);
    if (!call) call = SoleUseCall(v, ko->second, ir::OpKind::kMultiply);
  }
  r.conv_var = As<ir::VarNode>(r.conv_expr);
  if (!r.conv_var || r.conv->args.size() != 2 || !VisibleAt(v, r.conv_expr, end)) {
    return std::nullopt;
  }
  r.w = ConstantOf(v, r.conv->args[1]);
  if (!r.w || r.w->dtype != ir::DataType::kFloat32 || r.w->shape.size() != 4 ||
      r.w->shape[0] <= 0 || !r.w->data ||
      r.w->data->size() != static_cast<size_t>(r.w->NumElements()) * 4) {
    return std::nullopt;
  }
  const int64_t m = r.w->shape[0];
  r.scale.assign(static_cast<size_t>(m), 1.0);
  r.shift.assign(static_cast<size_t>(m), 0.0);
  for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
    std::optional<std::vector<float>> k = ChannelOrScalar(v, op->second, m);
    if (!k) return std::nullopt;
    for (size_t o = 0; o < static_cast<size_t>(m); ++o) {
      const double f = (*k)[o];
      if (op->first) {
        if (!std::isfinite(f) || f == 0.0) return std::nullopt;
        r.scale[o] *= f;
        r.shift[o] *= f;
      } else {
        r.shift[o] += f;
      }
    }
    r.scaled |= op->first;
  }
  r.ops = static_cast<int>(ops.size());
  return r;
}

// At the last op of a conv's affine chain (AffineChain) of a multiply or of two adds or more:
// c = R.nn.conv2d(x, W * scale) (per output channel, each weight rounded once) and y = R.add(c,
// shift) (each rounded once; none where no op is an add). The ops between are left unread. At
// an op the next op of a longer chain reads, nothing: that op's chain takes this one's.
Expected<Rewrites> FoldAffineAfterConv(const FunctionView& v, const ir::Binding& binding) {
  if (!OpCallOf(binding.value, ir::OpKind::kAdd) &&
      !OpCallOf(binding.value, ir::OpKind::kMultiply)) {
    return Rewrites();
  }
  if (const ir::VarNode* next = SoleUser(v, binding.var.get())) {
    auto it = v.value.find(next);
    if (it != v.value.end() && !v.returned.count(binding.var.get()) &&
        AffineChain(v, it->second, next)) {
      return Rewrites();
    }
  }
  std::optional<ConvAffine> c = AffineChain(v, binding.value, binding.var.get());
  if (!c || (!c->scaled && c->ops < 2)) return Rewrites();
  const int64_t m = c->w->shape[0];
  std::vector<float> weight(c->w->NumElements());
  std::memcpy(weight.data(), c->w->data->data(), weight.size() * 4);
  const int64_t per_channel = static_cast<int64_t>(weight.size()) / m;
  for (int64_t o = 0; o < m; ++o) {
    for (int64_t i = 0; i < per_channel; ++i) {
      float& x = weight[static_cast<size_t>(o * per_channel + i)];
      x = static_cast<float>(static_cast<double>(x) * c->scale[static_cast<size_t>(o)]);
    }
  }
  Expected<ir::Expr> new_w = FloatConstant(weight, c->w->shape);
  if (!new_w) return new_w.error();
  Expected<ir::Expr> new_conv =
      ir::MakeOpCall(ir::OpKind::kConv2d, {c->conv->args[0], *new_w}, c->conv->attrs);
  if (!new_conv) return new_conv.error();
  if (c->scaled && c->ops == 1) return Rewrites{{binding.var.get(), *new_conv}};
  std::vector<float> shift(static_cast<size_t>(m));
  for (size_t o = 0; o < shift.size(); ++o) shift[o] = static_cast<float>(c->shift[o]);
  Expected<ir::Expr> new_b = FloatConstant(shift, {1, m, 1, 1});
  if (!new_b) return new_b.error();
  Expected<ir::Expr> new_add = ir::MakeOpCall(ir::OpKind::kAdd, {c->conv_expr, *new_b});
  if (!new_add) return new_add.error();
  return Rewrites{{c->conv_var, *new_conv}, {binding.var.get(), *new_add}};
}

struct LayerNormCore {
  ir::Expr x;
  std::vector<int64_t> axes;        // a trailing run, non-negative
  std::vector<int64_t> normalized;  // x's dims on them
  double eps = 0;
};

// The normalized axes of a keepdims mean over a trailing run of x's static dims.
std::optional<std::vector<int64_t>> TrailingMeanAxes(const ir::CallNode* mean, int rank) {
  const bool* keep = mean->attrs.Get<bool>("keepdims");
  const auto* axis = mean->attrs.Get<std::vector<int64_t>>("axis");
  if (!keep || !*keep || !axis || axis->empty()) return std::nullopt;
  std::set<int64_t> set;
  for (int64_t a : *axis) set.insert(a < 0 ? a + rank : a);
  int64_t k = static_cast<int64_t>(set.size());
  if (*set.begin() != rank - k || *set.rbegin() != rank - 1) return std::nullopt;
  return std::vector<int64_t>(set.begin(), set.end());
}

// n = d / sqrt(mean((x - mean(x)) ** 2) + eps), over trailing axes of a float32 x whose
// normalized dims are static, every step read only by the next one (d by both of its readers).
std::optional<LayerNormCore> MatchLayerNormCore(const FunctionView& v, const ir::CallNode* div,
                                                const std::optional<ir::VDevice>& device) {
  if (!div || div->args.size() != 2) return std::nullopt;
  const ir::CallNode* sqrt = SoleUseCall(v, div->args[1], ir::OpKind::kSqrt);
  if (!sqrt || sqrt->args.size() != 1) return std::nullopt;
  std::optional<std::pair<ir::Expr, ir::Expr>> add =
      ConstantAndOther(v, SoleUseCall(v, sqrt->args[0], ir::OpKind::kAdd));
  if (!add) return std::nullopt;
  std::optional<double> eps = ScalarOf(v, add->first);
  const ir::CallNode* var_mean = SoleUseCall(v, add->second, ir::OpKind::kMean);
  if (!eps || !var_mean || var_mean->args.size() != 1) return std::nullopt;
  // (x - m) ** 2 or (x - m) * (x - m).
  const ir::Expr& d = div->args[0];
  const ir::Expr& sq = var_mean->args[0];
  int d_uses = 0;
  if (const ir::CallNode* pow = SoleUseCall(v, sq, ir::OpKind::kPower)) {
    std::optional<double> two = pow->args.size() == 2 ? ScalarOf(v, pow->args[1]) : std::nullopt;
    if (!two || *two != 2.0 || pow->args[0] != d) return std::nullopt;
    d_uses = 2;
  } else if (const ir::CallNode* mul = SoleUseCall(v, sq, ir::OpKind::kMultiply)) {
    if (mul->args.size() != 2 || mul->args[0] != d || mul->args[1] != d) return std::nullopt;
    d_uses = 3;
  } else {
    return std::nullopt;
  }
  const ir::CallNode* sub = SoleUseCall(v, d, ir::OpKind::kSubtract, d_uses);
  if (!sub || sub->args.size() != 2) return std::nullopt;
  const ir::CallNode* mean = SoleUseCall(v, sub->args[1], ir::OpKind::kMean);
  if (!mean || mean->args.size() != 1 || mean->args[0] != sub->args[0]) return std::nullopt;
  LayerNormCore core;
  core.x = sub->args[0];
  core.eps = *eps;
  const ir::StructInfo& xs = core.x->struct_info;
  if (!xs || !xs->IsTensor() || xs->dtype != ir::DataType::kFloat32 || xs->ndim <= 0) {
    return std::nullopt;
  }
  int rank = xs->ndim;
  std::optional<std::vector<int64_t>> axes = TrailingMeanAxes(mean, rank);
  if (!axes || TrailingMeanAxes(var_mean, rank) != axes) return std::nullopt;
  core.axes = *axes;
  for (int64_t a : core.axes) {
    // -1: known only at run time (the scale or shift constant then says it).
    std::optional<int64_t> dim =
        xs->shape ? ir::AsInt((*xs->shape)[static_cast<size_t>(a)]) : std::nullopt;
    if (dim && *dim <= 0) return std::nullopt;
    core.normalized.push_back(dim ? *dim : -1);
  }
  // One device for every step.
  for (const ir::Expr& e :
       {core.x, sub->args[1], d, sq, add->second, sqrt->args[0], div->args[1]}) {
    if (VDeviceOf(e) != device || !e->struct_info ||
        e->struct_info->dtype != ir::DataType::kFloat32) {
      return std::nullopt;
    }
  }
  return core;
}

// A float32 constant of the normalized shape, right-aligned (leading 1s allowed). A normalized
// dim that only the run knows (-1) takes the constant's, in `core`: x's rows must then have that
// length, or the steps would have failed to broadcast as the op does.
bool IsRowParam(const FunctionView& v, const ir::Expr& e, LayerNormCore* core) {
  const ir::ConstantNode* c = ConstantOf(v, e);
  if (!c || c->dtype != ir::DataType::kFloat32) return false;
  size_t k = core->normalized.size();
  if (c->shape.size() < k) return false;
  for (size_t i = 0; i < c->shape.size(); ++i) {
    size_t from_end = c->shape.size() - i;
    if (from_end > k) {
      if (c->shape[i] != 1) return false;
      continue;
    }
    int64_t& want = core->normalized[k - from_end];
    if (want < 0 && c->shape[i] > 1) want = c->shape[i];
    if (c->shape[i] != want) return false;
  }
  return true;
}

// The layer normalization exporters write out in steps (PyTorch's LayerNorm before opset 17):
//   m = mean(x, axes, keepdims=True); d = x - m; p = d ** 2 (or d * d);
//   v = mean(p, axes, keepdims=True); e = v + eps; s = sqrt(e); n = d / s;
//   [g = n * gamma]; [b = g + beta]
// over trailing axes of a float32 x, gamma and beta constants of the normalized shape, every
// intermediate read only by the next step, one vdevice: b = R.nn.layer_norm(x, gamma, beta, axes,
// eps) (gamma 1 and beta 0 where absent). The kernel accumulates the mean and variance in double,
// so its result is at least as close to the float64 value as the steps' was.
Expected<Rewrites> FoldLayerNorm(const FunctionView& v, const ir::Binding& binding) {
  const auto* call = As<ir::CallNode>(binding.value);
  if (!call || !call->op()) return Rewrites();
  std::optional<ir::VDevice> device = VDeviceOf(binding.var);
  ir::Expr gamma, beta;
  const ir::CallNode* div = nullptr;
  // Where the chain ends: after the shift, after the scale, or at the division.
  auto scale_of = [&](const ir::CallNode* mul) -> const ir::CallNode* {
    std::optional<std::pair<ir::Expr, ir::Expr>> ko = ConstantAndOther(v, mul);
    if (!ko) return nullptr;
    const ir::CallNode* d = SoleUseCall(v, ko->second, ir::OpKind::kDivide);
    if (d && VDeviceOf(ko->second) == device) gamma = ko->first;
    return d;
  };
  auto user_is = [&](ir::OpKind kind) {
    const ir::VarNode* user = SoleUser(v, binding.var.get());
    if (!user) return false;
    const ir::CallNode* c = OpCallOf(v.value.at(user), kind);
    return c && ConstantAndOther(v, c).has_value();
  };
  switch (call->op()->kind) {
    case ir::OpKind::kAdd: {
      std::optional<std::pair<ir::Expr, ir::Expr>> ko = ConstantAndOther(v, call);
      if (!ko) return Rewrites();
      const ir::CallNode* mul = SoleUseCall(v, ko->second, ir::OpKind::kMultiply);
      if (!mul || VDeviceOf(ko->second) != device) return Rewrites();
      div = scale_of(mul);
      beta = ko->first;
      break;
    }
    case ir::OpKind::kMultiply:
      if (user_is(ir::OpKind::kAdd)) return Rewrites();  // the shift's binding takes it all
      div = scale_of(call);
      break;
    case ir::OpKind::kDivide:
      if (user_is(ir::OpKind::kMultiply)) return Rewrites();
      div = call;
      break;
    default:
      return Rewrites();
  }
  if (!div || (call->op()->kind != ir::OpKind::kDivide && !gamma)) return Rewrites();
  std::optional<LayerNormCore> core = MatchLayerNormCore(v, div, device);
  if (!core || !VisibleAt(v, core->x, binding)) return Rewrites();
  if ((gamma && !IsRowParam(v, gamma, &*core)) || (beta && !IsRowParam(v, beta, &*core))) {
    return Rewrites();
  }
  int64_t len = 1;
  for (int64_t d : core->normalized) {
    if (d < 0) return Rewrites();  // a length neither x nor a constant gives
    len *= d;
  }
  if (!gamma) {
    Expected<ir::Expr> ones = FloatConstant(std::vector<float>(len, 1.0f), core->normalized);
    if (!ones) return ones.error();
    gamma = *ones;
  }
  if (!beta) {
    Expected<ir::Expr> zeros = FloatConstant(std::vector<float>(len, 0.0f), core->normalized);
    if (!zeros) return zeros.error();
    beta = *zeros;
  }
  ir::Attrs attrs;
  attrs.Set("axes", core->axes);
  attrs.Set("epsilon", core->eps);
  Expected<ir::Expr> ln =
      ir::MakeOpCall(ir::OpKind::kLayerNorm, {core->x, gamma, beta}, std::move(attrs));
  if (!ln) return ln.error();
  return Rewrites{{binding.var.get(), *ln}};
}

// The bindings a rule makes in place of binding `b`: each a new variable named after b's, on b's
// vdevice and from b's source node, in b's block; the last computes b's value and takes b's
// variable (Finish).
class MadeBindings {
 public:
  MadeBindings(const ir::Binding& b, bool dataflow, std::string suffix = "_rows")
      : b_(b), dataflow_(dataflow), suffix_(std::move(suffix)) {}
  // `call` bound to a new variable, which is returned.
  Expected<ir::Expr> Bind(Expected<ir::Expr> call) {
    if (!call) return call.error();
    ir::Var var = ir::MakeVar(b_.var->name_hint + suffix_ + std::to_string(made_.size()),
                              ir::WithVDevice((*call)->struct_info, VDeviceOf(b_.var)), dataflow_);
    made_.push_back({var, *call, b_.source, b_.source_op});
    return ir::Expr(var);
  }
  bool empty() const { return made_.empty(); }
  std::vector<ir::Binding> Finish() {
    made_.back().var = b_.var;
    return std::move(made_);
  }

 private:
  const ir::Binding& b_;
  bool dataflow_;
  std::string suffix_;
  std::vector<ir::Binding> made_;
};

// Rows taken from a table that constants make, before the table is made: for
//   y = R.take(E, indices, axis=a)
// with E an astype, add, subtract, multiply or divide of constants (and of such ops of
// constants), every one of them read by nothing else and on y's vdevice, y becomes the same ops
// of the rows taken from each constant that spans axis a (its dims right-aligned with E's, with
// E's length there); a constant that does not reach axis a (fewer dims than E has after it) is
// read as it is. An int8 embedding table cast and scaled per row (minilm-l6: 30522 x 384) is then
// converted for the rows a run reads, not whole when the session is created (47 MB of floats).
// The take's indices and mode go to every take, so an index out of range fails as before.
class TakeFirst {
 public:
  TakeFirst(const FunctionView& v, const ir::Binding& b, const ir::CallNode& take, int64_t axis,
            int64_t rank, int64_t length, bool dataflow)
      : made(b, dataflow), v_(v), b_(b), take_(take), axis_(axis), rank_(rank), length_(length) {}

  // The rows of `e` (E, or an operand of one of its steps), as an expression of the bindings
  // made; null where the rule does not apply.
  Expected<ir::Expr> Rows(const ir::Expr& e) {
    const ir::StructInfo& s = e->struct_info;
    // (A constant lives on each device that reads it; a variable must be on y's.)
    if (!s || !s->IsTensor() || s->ndim < 0 ||
        (As<ir::VarNode>(e) && s->vdevice != VDeviceOf(b_.var))) {
      return ir::Expr();
    }
    if (s->ndim <= rank_ - 1 - axis_) return e;  // broadcast along the rows: read as it is
    if (!VisibleAt(v_, e, b_)) return ir::Expr();
    if (const ir::ConstantNode* c = ConstantOf(v_, e)) {
      // Its dims right-aligned with E's: the axis is its own `a`.
      int64_t a = axis_ - (rank_ - static_cast<int64_t>(c->shape.size()));
      if (a < 0 || c->shape[static_cast<size_t>(a)] != length_) return ir::Expr();
      ir::Attrs attrs = take_.attrs;
      attrs.Set("axis", a);
      return made.Bind(ir::MakeOpCall(ir::OpKind::kTake, {e, take_.args[1]}, std::move(attrs)));
    }
    if (s->ndim != rank_) return ir::Expr();
    const auto* var = As<ir::VarNode>(e);
    auto n = var ? v_.uses.find(var) : v_.uses.end();
    auto value = var ? v_.value.find(var) : v_.value.end();
    if (n == v_.uses.end() || n->second != 1 || value == v_.value.end()) return ir::Expr();
    const auto* call = As<ir::CallNode>(value->second);
    if (!call || !call->op()) return ir::Expr();
    std::optional<std::vector<int64_t>> shape = StaticShape(s);
    if (!shape || (*shape)[static_cast<size_t>(axis_)] != length_) return ir::Expr();
    ir::OpKind kind = call->op()->kind;
    bool binary = kind == ir::OpKind::kAdd || kind == ir::OpKind::kSubtract ||
                  kind == ir::OpKind::kMultiply || kind == ir::OpKind::kDivide;
    if ((!binary && kind != ir::OpKind::kAstype) || call->args.size() != (binary ? 2u : 1u)) {
      return ir::Expr();
    }
    std::vector<ir::Expr> args;
    for (const ir::Expr& arg : call->args) {
      Expected<ir::Expr> rows = Rows(arg);
      if (!rows || !*rows) return rows;
      args.push_back(*rows);
    }
    return made.Bind(ir::MakeOpCall(kind, std::move(args), call->attrs));
  }

  MadeBindings made;

 private:
  const FunctionView& v_;
  const ir::Binding& b_;
  const ir::CallNode& take_;
  int64_t axis_, rank_;
  int64_t length_;  // E's length along the axis
};

// The bindings TakeFirst makes for binding `b` (the last one the new value of b's variable), or
// none.
Expected<std::vector<ir::Binding>> TakeRowsFirst(const FunctionView& v, const ir::Binding& b,
                                                 bool dataflow) {
  const ir::CallNode* take = OpCallOf(b.value, ir::OpKind::kTake);
  if (!take || take->args.size() != 2) return std::vector<ir::Binding>();
  const ir::StructInfo& e = take->args[0]->struct_info;
  std::optional<std::vector<int64_t>> shape = e ? StaticShape(e) : std::nullopt;
  if (!shape || shape->empty() || ConstantOf(v, take->args[0]) || !VisibleAt(v, take->args[1], b)) {
    return std::vector<ir::Binding>();
  }
  int64_t rank = static_cast<int64_t>(shape->size());
  const int64_t* axis_attr = take->attrs.Get<int64_t>("axis");
  int64_t axis = axis_attr ? *axis_attr : 0;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::vector<ir::Binding>();
  TakeFirst rule(v, b, *take, axis, rank, (*shape)[static_cast<size_t>(axis)], dataflow);
  Expected<ir::Expr> rows = rule.Rows(take->args[0]);
  if (!rows) return rows.error();
  if (!*rows || rule.made.empty() || As<ir::ConstantNode>(*rows)) return std::vector<ir::Binding>();
  return rule.made.Finish();
}

// A float32 one-hot encoding times a constant matrix (an embedding written as a product):
//   o = R.one_hot(i, depth, R.const([0.0, 1.0])), axis -1; [r = R.reshape(o, (..., depth))]
//   y = R.matmul(o or r, W)                         W: (depth, D), every value finite
// becomes the rows of W the indices pick: y = R.take(T, k, axis=0, mode="clip") with
// k = i + depth + 1 (reshaped as r is, less its last dim) and T = [0; W; W; 0] (2 depth + 2 rows):
// an index in [-depth, depth) picks its row of W as one_hot counts it (a negative one from the
// end), and one outside picks a row of zeros, as the product of an all-zero encoding gives. Each
// element of y is then the weight itself, as the product gives it (0 x w adds zero; W finite).
// On a CPU (the take's clip mode), one_hot and reshape read by nothing else, T at most 8 MB.
Expected<std::vector<ir::Binding>> OneHotRows(const FunctionView& v, const ir::Binding& b,
                                              bool dataflow) {
  std::vector<ir::Binding> none;
  const ir::CallNode* mm = OpCallOf(b.value, ir::OpKind::kMatmul);
  std::optional<ir::VDevice> device = VDeviceOf(b.var);
  if (!mm || mm->args.size() != 2 || (device && device->target.DeviceType() != "cpu")) {
    return none;
  }
  if (const auto* dt = mm->attrs.Get<ir::DataType>("out_dtype");
      dt && *dt != ir::DataType::kVoid && *dt != ir::DataType::kFloat32) {
    return none;
  }
  const ir::ConstantNode* w = ConstantOf(v, mm->args[1]);
  if (!w || w->dtype != ir::DataType::kFloat32 || w->shape.size() != 2 || !w->data) return none;
  int64_t depth = w->shape[0], cols = w->shape[1];
  if (depth <= 0 || (2 * depth + 2) * cols * 4 > (int64_t{8} << 20)) return none;
  std::optional<std::vector<float>> wv = Floats(w, depth * cols);
  if (!wv) return none;
  for (float x : *wv) {
    if (!std::isfinite(x)) return none;
  }
  // Through a reshape that keeps the last dim (batch dims merged).
  const ir::CallNode* reshape = SoleUseCall(v, mm->args[0], ir::OpKind::kReshape);
  ir::Expr encoded = reshape ? reshape->args[0] : mm->args[0];
  const ir::CallNode* oh = SoleUseCall(v, encoded, ir::OpKind::kOneHot);
  if (!oh || oh->args.size() != 3 || !VisibleAt(v, oh->args[0], b) ||
      VDeviceOf(encoded) != device || (reshape && VDeviceOf(mm->args[0]) != device)) {
    return none;
  }
  const ir::StructInfo& os = encoded->struct_info;
  const int64_t* axis = oh->attrs.Get<int64_t>("axis");
  if (!os || !os->IsTensor() || os->dtype != ir::DataType::kFloat32 || os->ndim < 1 ||
      (axis && *axis != -1 && *axis != os->ndim - 1)) {
    return none;
  }
  std::optional<std::vector<float>> values = Floats(ConstantOf(v, oh->args[2]), 2);
  const auto* d = As<ir::PrimValueNode>(oh->args[1]);
  std::optional<int64_t> dv = d ? ir::AsInt(d->value) : std::nullopt;
  if (!values || (*values)[0] != 0.0f || (*values)[1] != 1.0f || !dv || *dv != depth) return none;
  const ir::StructInfo& is = oh->args[0]->struct_info;
  if (!is || !is->IsTensor() ||
      (is->dtype != ir::DataType::kInt32 && is->dtype != ir::DataType::kInt64)) {
    return none;
  }
  // The reshape's shape without its last dim (which must be depth).
  ir::Expr index_shape;
  if (reshape) {
    const auto* shape =
        reshape->args.size() == 2 ? As<ir::ShapeExprNode>(reshape->args[1]) : nullptr;
    if (!shape || shape->values.empty() || ir::AsInt(shape->values.back()) != depth) return none;
    index_shape = ir::MakeShapeExpr(
        std::vector<ir::PrimExpr>(shape->values.begin(), shape->values.end() - 1));
  }
  std::vector<float> table(static_cast<size_t>((2 * depth + 2) * cols), 0.0f);
  std::copy(wv->begin(), wv->end(), table.begin() + cols);
  std::copy(wv->begin(), wv->end(), table.begin() + (depth + 1) * cols);
  Expected<ir::Expr> t = FloatConstant(table, {2 * depth + 2, cols});
  if (!t) return t.error();
  std::vector<uint8_t> shift_bytes(is->dtype == ir::DataType::kInt32 ? 4 : 8);
  if (is->dtype == ir::DataType::kInt32) {
    int32_t s32 = static_cast<int32_t>(depth + 1);
    std::memcpy(shift_bytes.data(), &s32, 4);
  } else {
    int64_t s64 = depth + 1;
    std::memcpy(shift_bytes.data(), &s64, 8);
  }
  Expected<ir::Expr> shift = ir::MakeConstant(
      is->dtype, {}, std::make_shared<std::vector<uint8_t>>(std::move(shift_bytes)));
  if (!shift) return shift.error();
  MadeBindings made(b, dataflow);
  Expected<ir::Expr> k = made.Bind(ir::MakeOpCall(ir::OpKind::kAdd, {oh->args[0], *shift}));
  if (k && reshape) k = made.Bind(ir::MakeOpCall(ir::OpKind::kReshape, {*k, index_shape}));
  if (!k) return k.error();
  ir::Attrs attrs;
  attrs.Set("axis", int64_t{0});
  attrs.Set("mode", std::string("clip"));
  Expected<ir::Expr> y = made.Bind(ir::MakeOpCall(ir::OpKind::kTake, {*t, *k}, std::move(attrs)));
  if (!y) return y.error();
  return made.Finish();
}

// The If that `b` binds with each branch swept by `sweep` (each with the view of its own
// bindings), or null where `b` binds no If or no branch changed.
template <class F>
Expected<ir::Expr> SweptIf(const ir::Binding& b, F&& sweep) {
  const auto* branch = As<ir::IfNode>(b.value);
  if (!branch) return ir::Expr();
  Expected<ir::SeqExpr> then_branch = sweep(branch->then_branch);
  if (!then_branch) return then_branch.error();
  Expected<ir::SeqExpr> else_branch = sweep(branch->else_branch);
  if (!else_branch) return else_branch.error();
  if (*then_branch == branch->then_branch && *else_branch == branch->else_branch) return ir::Expr();
  return ir::MakeIf(branch->cond, *then_branch, *else_branch);
}

// ---- the extreme of a stack ----

// The one axis of `attr` (ints) in a rank `rank` tensor, normalized; nullopt for none or more.
std::optional<int64_t> OneAxis(const std::vector<int64_t>* attr, int64_t rank) {
  if (!attr || attr->size() != 1) return std::nullopt;
  int64_t a = (*attr)[0] < 0 ? (*attr)[0] + rank : (*attr)[0];
  if (a < 0 || a >= rank) return std::nullopt;
  return a;
}

// The greatest (least) of tensors stacked along a new axis:
//   e_i = R.expand_dims(x_i, axis=[a])          (i = 1 .. n, n >= 2)
//   c = R.concat((e_1, ..., e_n), axis=a)
//   y = R.max(c, axis=[a], keepdims=k)           (or R.min)
// each e_i and c read by nothing else (torch.stack(...).max(dim), as PyTorch exports it) becomes
// y = R.maximum(...R.maximum(x_1, x_2)..., x_n) (minimum), of the e_i where k keeps the axis: no
// stacked copy and no reduction over an axis of n (attacut-c's three conv branches, 14,700 floats
// interleaved and then reduced: 20 of its 130 us). The same values: NaN where any is NaN, else the
// greatest (least), of equal values the first (a reduction replaces its running extreme only with
// a greater one; maximum keeps its first operand on a tie).
Expected<std::vector<ir::Binding>> StackedExtremes(const FunctionView& v, const ir::Binding& b,
                                                   bool dataflow) {
  const std::vector<ir::Binding> none;
  const ir::CallNode* red = OpCallOf(b.value, ir::OpKind::kMax);
  ir::OpKind pairwise = ir::OpKind::kMaximum;
  if (!red) {
    red = OpCallOf(b.value, ir::OpKind::kMin);
    pairwise = ir::OpKind::kMinimum;
  }
  if (!red || red->args.size() != 1) return none;
  const ir::CallNode* concat = SoleUseCall(v, red->args[0], ir::OpKind::kConcat, 1);
  const ir::StructInfo& cs = red->args[0]->struct_info;
  if (!concat || concat->args.size() != 1 || !cs || cs->ndim < 1) return none;
  const auto* tuple = As<ir::TupleNode>(concat->args[0]);
  const int64_t rank = cs->ndim;
  std::optional<int64_t> axis = OneAxis(red->attrs.Get<std::vector<int64_t>>("axis"), rank);
  const int64_t* concat_axis = concat->attrs.Get<int64_t>("axis");
  if (!tuple || tuple->fields.size() < 2 || !axis || !concat_axis ||
      (*concat_axis < 0 ? *concat_axis + rank : *concat_axis) != *axis) {
    return none;
  }
  const bool* keep = red->attrs.Get<bool>("keepdims");
  std::vector<ir::Expr> operands;
  for (const ir::Expr& e : tuple->fields) {
    const ir::CallNode* expand = SoleUseCall(v, e, ir::OpKind::kExpandDims, 1);
    if (!expand || expand->args.size() != 1 || VDeviceOf(e) != VDeviceOf(b.var) ||
        OneAxis(expand->attrs.Get<std::vector<int64_t>>("axis"), rank) != axis) {
      return none;
    }
    const ir::Expr& x = keep && *keep ? e : expand->args[0];
    if (!VisibleAt(v, x, b)) return none;
    operands.push_back(x);
  }
  MadeBindings made(b, dataflow, "_extreme");
  ir::Expr acc = operands[0];
  for (size_t i = 1; i < operands.size(); ++i) {
    Expected<ir::Expr> next = made.Bind(ir::MakeOpCall(pairwise, {acc, operands[i]}));
    if (!next) return next.error();
    acc = *next;
  }
  return made.Finish();
}

// A rule that replaces a binding with bindings of its own (the last takes the binding's variable),
// or returns none.
using BindingsRule = Expected<std::vector<ir::Binding>> (*)(const FunctionView&, const ir::Binding&,
                                                            bool dataflow);

// Applies `rule` to every binding of `body` and of the If branches bound in it (each with the
// view of its own bindings).
Expected<ir::SeqExpr> SweepBindings(const ir::SeqExpr& body, BindingsRule rule) {
  FunctionView v = View(*body);
  std::vector<ir::BindingBlock> blocks = body->blocks;
  bool changed = false;
  for (ir::BindingBlock& block : blocks) {
    std::vector<ir::Binding> out;
    for (const ir::Binding& b : block.bindings) {
      Expected<ir::Expr> swept =
          SweptIf(b, [&](const ir::SeqExpr& branch) { return SweepBindings(branch, rule); });
      if (!swept) return swept.error();
      if (*swept) {
        ir::Binding nb = b;
        nb.value = *swept;
        out.push_back(std::move(nb));
        changed = true;
        continue;
      }
      Expected<std::vector<ir::Binding>> made = rule(v, b, block.dataflow);
      if (!made) return made.error();
      if (made->empty()) {
        out.push_back(b);
        continue;
      }
      changed = true;
      for (ir::Binding& m : *made) out.push_back(std::move(m));
    }
    block.bindings = std::move(out);
  }
  if (!changed) return body;
  return ir::MakeSeqExpr(std::move(blocks), body->body);
}

using Rule = Expected<Rewrites> (*)(const FunctionView&, const ir::Binding&);

// Applies `rule` to every binding of `body` (the rewrites of one sweep touch distinct variables),
// and to the bodies of the If branches bound in it, each with the view of its own bindings: a
// variable of the enclosing body is not in that view, so a rule never rewrites it from a branch.
Expected<ir::SeqExpr> Sweep(const ir::SeqExpr& body, Rule rule) {
  FunctionView v = View(*body);
  std::vector<ir::BindingBlock> blocks = body->blocks;
  std::map<const ir::VarNode*, ir::Expr> replace;
  for (const ir::BindingBlock& block : blocks) {
    for (const ir::Binding& b : block.bindings) {
      if (As<ir::IfNode>(b.value)) {
        Expected<ir::Expr> swept =
            SweptIf(b, [&](const ir::SeqExpr& branch) { return Sweep(branch, rule); });
        if (!swept) return swept.error();
        if (*swept) replace[b.var.get()] = *swept;
        continue;
      }
      Expected<Rewrites> r = rule(v, b);
      if (!r) return r.error();
      for (auto& [var, value] : *r) replace[var] = value;
    }
  }
  if (replace.empty()) return body;
  for (ir::BindingBlock& block : blocks) {
    for (ir::Binding& b : block.bindings) {
      auto it = replace.find(b.var.get());
      if (it != replace.end()) b.value = it->second;
    }
  }
  return ir::MakeSeqExpr(std::move(blocks), body->body);
}

Expected<ir::Function> Sweep(const ir::Function& f, Rule rule) {
  Expected<ir::SeqExpr> body = Sweep(f->body, rule);
  if (!body) return body.error();
  if (*body == f->body) return f;
  return ir::MakeFunction(f->params, *body, f->ret_struct_info, f->attrs, f->is_pure, f->is_private,
                          f->param_defaults);
}

Expected<ir::Function> FoldFunction(const ir::Function& f) {
  ir::Function r = f;
  for (BindingsRule rule : {&TakeRowsFirst, &OneHotRows, &StackedExtremes}) {
    Expected<ir::SeqExpr> body = SweepBindings(r->body, rule);
    if (!body) return body.error();
    if (*body != r->body) {
      Expected<ir::Function> g = ir::MakeFunction(r->params, *body, r->ret_struct_info, r->attrs,
                                                  r->is_pure, r->is_private, r->param_defaults);
      if (!g) return g;
      r = *g;
    }
  }
  // Until no reshape or transpose of a constant is left (one of another folds in the next
  // sweep).
  for (;;) {
    Expected<ir::Function> next = Sweep(r, &FoldLayout);
    if (!next) return next;
    if (*next == r) break;
    r = *next;
  }
  Expected<ir::Function> g = Sweep(r, &FoldBatchNorm);
  if (!g) return g;
  g = Sweep(*g, &FoldScaleIntoConv);
  if (!g) return g;
  g = Sweep(*g, &FoldAffineAfterConv);
  if (!g) return g;
  return Sweep(*g, &FoldLayerNorm);
}

}  // namespace

Expected<Pass> CreateFoldConstants(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {}); !s) return s.error();
  return Pass{"fold-constants", [](const ir::IRModule& mod) -> Expected<ir::IRModule> {
                ir::IRModule out = mod;
                bool changed = false;
                for (auto& [name, f] : out.functions) {
                  Expected<ir::Function> g = FoldFunction(f);
                  if (!g) return Error(g.error().message, "function '" + name + "'");
                  changed |= *g != f;
                  f = *g;
                }
                if (!changed) return out;
                Expected<Pass> simplify = CreateSimplify(PassSpec{"simplify", {}});
                if (!simplify) return simplify.error();
                return simplify->Run(out);
              }};
}

}  // namespace quilt::passes
