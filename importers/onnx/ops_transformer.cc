// Converters of the transformer category: Attention, RotaryEmbedding, SwiGLU, TensorScatter,
// LinearAttention, CausalConvWithState, FlexAttention (ai.onnx.preview). Optional inputs the model
// leaves out become empty constants of shape (0,); multi-output ops return a tuple whose items are
// bound per output.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "importers/onnx/converter.h"
#include "importers/onnx/graph.h"
#include "importers/onnx/tensor.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

#define TF_TRY(var, expr) \
  auto var = (expr);      \
  if (!var) return ctx.Error(var.error().message)

std::string Str(int64_t v) { return std::to_string(v); }

int RankOf(NodeContext& ctx, int i) {
  return ctx.HasInput(i) && ctx.Input(i) ? ctx.InputSInfo(i)->ndim : -1;
}

// The dtype of input i for placeholder constants (float32 when not known).
ir::DataType FloatDtypeOf(NodeContext& ctx, int i) {
  ir::Expr x = ctx.Input(i);
  if (!x || x->struct_info->dtype == ir::DataType::kVoid) return ir::DataType::kFloat32;
  return x->struct_info->dtype;
}

// Emits a tuple-valued call (bound under the op type's name) and binds the items the node uses.
Expected<Outputs> EmitTuple(NodeContext& ctx, OpKind op, std::vector<ir::Expr> args,
                            ir::Attrs attrs, int num_items) {
  // An output index past the node's outputs names the tuple after the op type.
  Expected<ir::Expr> t = ctx.Emit(op, std::move(args), std::move(attrs), ctx.NumOutputs());
  if (!t) return t.error();
  Outputs outs;
  for (int i = 0; i < std::min(ctx.NumOutputs(), num_items); ++i) {
    if (!ctx.HasOutput(i)) {
      outs.push_back(nullptr);
      continue;
    }
    Expected<ir::Expr> item = ir::MakeTupleGetItem(*t, i);
    if (!item) return ctx.Error(item.error().message);
    outs.push_back(ctx.Bind(*item, i));
  }
  return outs;
}

// ONNX Attention-23 (Q, K, V, attn_mask, past_key, past_value), -24 (+ nonpad_kv_seqlen) and
// -25 (+ left_window_size, right_window_size).
Expected<Outputs> Attention(NodeContext& ctx) {
  if (!ctx.HasInput(0) || !ctx.HasInput(1) || !ctx.HasInput(2)) {
    return ctx.Error("Q, K and V are required");
  }
  int rank = RankOf(ctx, 0);
  ir::Attrs a;
  bool has_qh = ctx.Attr("q_num_heads") != nullptr, has_kvh = ctx.Attr("kv_num_heads") != nullptr;
  TF_TRY(qh, ctx.Int("q_num_heads", 0));
  TF_TRY(kvh, ctx.Int("kv_num_heads", 0));
  if (rank == 4 && (has_qh || has_kvh)) {
    // Opset 25 forbids them with 4-D inputs; earlier opsets read the heads from the shapes.
    if (ctx.opset() >= 25) {
      return ctx.Error("q_num_heads and kv_num_heads must not be given with 4-D inputs");
    }
    const ir::StructInfo& q = ctx.InputSInfo(0);
    const ir::StructInfo& k = ctx.InputSInfo(1);
    // Head counts from the shapes; -1 when not static.
    int64_t nq = q->shape ? ir::AsInt((*q->shape)[1]).value_or(-1) : -1;
    int64_t nkv = k->shape && k->ndim == 4 ? ir::AsInt((*k->shape)[1]).value_or(-1) : -1;
    if (has_qh && nq >= 0 && nq != *qh) {
      return ctx.Error("q_num_heads " + Str(*qh) + " does not match Q's " + Str(nq) + " heads");
    }
    if (has_kvh && nkv >= 0 && nkv != *kvh) {
      return ctx.Error("kv_num_heads " + Str(*kvh) + " does not match K's " + Str(nkv) + " heads");
    }
  } else {
    if (rank == 3 && (!has_qh || !has_kvh)) {
      return ctx.Error("3-D Q, K and V need the q_num_heads and kv_num_heads attributes");
    }
    if (has_qh) a.Set("q_num_heads", *qh);
    if (has_kvh) a.Set("kv_num_heads", *kvh);
  }
  if (ctx.Attr("scale")) {
    TF_TRY(scale, ctx.Float("scale"));
    a.Set("scale", ShortestFloat32(*scale));
  }
  TF_TRY(causal, ctx.Int("is_causal", 0));
  if (*causal != 0 && *causal != 1) return ctx.Error("is_causal must be 0 or 1");
  a.Set("is_causal", *causal != 0);
  TF_TRY(softcap, ctx.Float("softcap", 0.0));
  a.Set("softcap", ShortestFloat32(*softcap));
  TF_TRY(mode, ctx.Int("qk_matmul_output_mode", 0));
  a.Set("qk_matmul_output_mode", *mode);
  if (ctx.Attr("softmax_precision")) {
    TF_TRY(p, ctx.Int("softmax_precision"));
    std::optional<ir::DataType> t = ElemType(static_cast<int32_t>(*p));
    if (!t || !ir::IsFloat(*t)) {
      return ctx.Error("softmax_precision must name a float type (1, 10, 11 or 16), got " +
                       Str(*p));
    }
    a.Set("softmax_precision", *t);
  }
  if (ctx.opset() >= 25) {
    TF_TRY(left, ctx.Int("left_window_size", -1));
    TF_TRY(right, ctx.Int("right_window_size", -1));
    a.Set("left_window_size", *left);
    a.Set("right_window_size", *right);
  }
  if (ctx.opset() < 24 && ctx.HasInput(6)) {
    return ctx.Error("nonpad_kv_seqlen (input 6) needs opset 24 or newer");
  }
  TF_TRY(mask, ctx.InputOrEmpty(3, ir::DataType::kFloat32));
  TF_TRY(pk, ctx.InputOrEmpty(4, ir::DataType::kFloat32));
  TF_TRY(pv, ctx.InputOrEmpty(5, ir::DataType::kFloat32));
  TF_TRY(nonpad, ctx.InputOrEmpty(6, ir::DataType::kInt64));
  return EmitTuple(ctx, OpKind::kAttention,
                   {ctx.Input(0), ctx.Input(1), ctx.Input(2), *mask, *pk, *pv, *nonpad}, a, 4);
}

Expected<Outputs> RotaryEmbedding(NodeContext& ctx) {
  ir::Attrs a;
  // 4-D data carries its heads in dim 1; num_heads only splits 3-D data.
  if (ctx.Attr("num_heads") && RankOf(ctx, 0) != 4) {
    TF_TRY(heads, ctx.Int("num_heads"));
    a.Set("num_heads", *heads);
  }
  TF_TRY(dim, ctx.Int("rotary_embedding_dim", 0));
  TF_TRY(interleaved, ctx.Int("interleaved", 0));
  a.Set("rotary_embedding_dim", *dim);
  a.Set("interleaved", *interleaved != 0);
  TF_TRY(pos, ctx.InputOrEmpty(3, ir::DataType::kInt64));
  return NodeContext::Single(
      ctx.Emit(OpKind::kRotaryEmbedding, {ctx.Input(0), ctx.Input(1), ctx.Input(2), *pos}, a));
}

Expected<Outputs> SwiGLU(NodeContext& ctx) {
  TF_TRY(alpha, ctx.Float("alpha", 1.0));
  ir::Attrs a;
  a.Set("alpha", ShortestFloat32(*alpha));
  return NodeContext::Single(ctx.Emit(OpKind::kSwiGLU, {ctx.Input(0), ctx.Input(1)}, a));
}

Expected<Outputs> TensorScatter(NodeContext& ctx) {
  TF_TRY(axis, ctx.Int("axis", -2));
  TF_TRY(mode, ctx.String("mode", "linear"));
  int64_t ax = *axis;
  int rank = RankOf(ctx, 0);
  if (rank >= 0 && ax < 0) ax += rank;
  ir::Attrs a;
  a.Set("axis", ax);
  a.Set("mode", *mode);
  TF_TRY(w, ctx.InputOrEmpty(2, ir::DataType::kInt64));
  return NodeContext::Single(ctx.Emit(OpKind::kTensorScatter, {ctx.Input(0), ctx.Input(1), *w}, a));
}

Expected<Outputs> LinearAttention(NodeContext& ctx) {
  TF_TRY(qh, ctx.Int("q_num_heads"));
  TF_TRY(kvh, ctx.Int("kv_num_heads"));
  TF_TRY(scale, ctx.Float("scale", 0.0));
  TF_TRY(rule, ctx.String("update_rule", "gated_delta"));
  // chunk_size only tunes chunk-parallel kernels; the result does not depend on it.
  TF_TRY(chunk, ctx.Int("chunk_size", 64));
  if (*chunk <= 0) return ctx.Error("chunk_size must be positive, got " + Str(*chunk));
  ir::Attrs a;
  a.Set("q_num_heads", *qh);
  a.Set("kv_num_heads", *kvh);
  a.Set("scale", ShortestFloat32(*scale));
  a.Set("update_rule", *rule);
  ir::DataType dt = FloatDtypeOf(ctx, 0);
  TF_TRY(past, ctx.InputOrEmpty(3, dt));
  TF_TRY(decay, ctx.InputOrEmpty(4, dt));
  TF_TRY(beta, ctx.InputOrEmpty(5, dt));
  return EmitTuple(ctx, OpKind::kLinearAttention,
                   {ctx.Input(0), ctx.Input(1), ctx.Input(2), *past, *decay, *beta}, a, 2);
}

Expected<Outputs> CausalConvWithState(NodeContext& ctx) {
  TF_TRY(act, ctx.String("activation", "none"));
  std::string activation = *act == "swish" ? "silu" : *act;
  if (activation != "none" && activation != "silu") {
    return ctx.Error("activation must be silu, swish or none, got '" + *act + "'");
  }
  ir::Attrs a;
  a.Set("activation", activation);
  ir::DataType dt = FloatDtypeOf(ctx, 0);
  TF_TRY(bias, ctx.InputOrEmpty(2, dt));
  TF_TRY(past, ctx.InputOrEmpty(3, dt));
  return EmitTuple(ctx, OpKind::kCausalConvWithState, {ctx.Input(0), ctx.Input(1), *bias, *past}, a,
                   2);
}

// score_mod / prob_mod of FlexAttention: the subgraph imported in line on `x`, which it must map
// to a rank-4 tensor of `dtype`.
Expected<ir::Expr> ApplyModifier(NodeContext& ctx, const std::string& name, ir::Expr x,
                                 ir::DataType dtype) {
  const ::onnx::AttributeProto* attr = ctx.Attr(name);
  if (!attr) return x;
  if (attr->type() != ::onnx::AttributeProto::GRAPH) {
    return ctx.Error("attribute '" + name + "' must be a graph");
  }
  const ::onnx::GraphProto& g = attr->g();
  if (g.input_size() != 1 || g.output_size() != 1) {
    return ctx.Error(name + " must take one input and produce one output, got " +
                     Str(g.input_size()) + " and " + Str(g.output_size()));
  }
  Expected<ir::SeqExpr> seq = ctx.graph()->ImportSubgraph(g, {x}, name);
  // A diagnostic of a node in the subgraph names that node: keep it in the message.
  if (!seq) {
    const Diagnostic& d = seq.error();
    return ctx.Error(d.location.empty() ? d.message : name + ": " + d.ToString());
  }
  ctx.graph()->InlineBindings(*seq);
  ir::Expr out = (*seq)->body;
  const ir::StructInfo& s = out->struct_info;
  if (!s->IsTensor() || (s->ndim >= 0 && s->ndim != 4)) {
    return ctx.Error(name + " must return a rank-4 tensor, got " + ir::Describe(s));
  }
  if (s->dtype != dtype && s->dtype != ir::DataType::kVoid) {
    return ctx.Error(name + " must return " + std::string(ir::DataTypeName(dtype)) + ", got " +
                     std::string(ir::DataTypeName(s->dtype)));
  }
  return out;
}

// K or V (B, Hkv, S, D) with each head repeated `group` times in a row: (B, Hkv * group, S, D).
Expected<ir::Expr> RepeatHeads(NodeContext& ctx, const ir::Expr& x, int64_t group) {
  if (group == 1) return x;
  const ir::StructInfo& s = x->struct_info;
  if (!s->shape) return ctx.Error("K and V need known dims when Q has more heads");
  const std::vector<ir::PrimExpr>& d = *s->shape;
  TF_TRY(r, ctx.Emit(OpKind::kReshape,
                     {x, ir::MakeShapeExpr({d[0], d[1], ir::IntImm(1), d[2], d[3]})}));
  TF_TRY(b, ctx.Emit(OpKind::kBroadcastTo,
                     {*r, ir::MakeShapeExpr({d[0], d[1], ir::IntImm(group), d[2], d[3]})}));
  return ctx.Emit(OpKind::kReshape,
                  {*b, ir::MakeShapeExpr({d[0], d[1] * ir::IntImm(group), d[2], d[3]})});
}

ir::Attrs DtypeAttr(ir::DataType t) {
  ir::Attrs a;
  a.Set("dtype", t);
  return a;
}

// FlexAttention (ai.onnx.preview 1), written out in IR ops: Q and K pre-scaled by sqrt(scale)
// (in Q's dtype), K and V heads repeated for GQA, scores = Q @ K^T in the softmax dtype
// (softmax_precision; default float64 for float64 inputs, else float32), score_mod, softmax over
// the keys, prob_mod, then probs @ V cast back to V's dtype. The modifier subgraphs are imported
// in line on the (B, Hq, L, S) tensors.
Expected<Outputs> FlexAttention(NodeContext& ctx) {
  if (!ctx.HasInput(0) || !ctx.HasInput(1) || !ctx.HasInput(2)) {
    return ctx.Error("Q, K and V are required");
  }
  ir::Expr q = ctx.Input(0), k = ctx.Input(1), v = ctx.Input(2);
  const char* names[] = {"Q", "K", "V"};
  ir::DataType dtype = q->struct_info->dtype;
  for (int i = 0; i < 3; ++i) {
    const ir::StructInfo& s = ctx.InputSInfo(i);
    if (s->ndim >= 0 && s->ndim != 4) {
      return ctx.Error(std::string(names[i]) + " must have rank 4, got rank " + Str(s->ndim));
    }
    if (s->dtype != dtype) {
      return ctx.Error(std::string(names[i]) + " is " + std::string(ir::DataTypeName(s->dtype)) +
                       ", Q is " + std::string(ir::DataTypeName(dtype)));
    }
  }
  if (dtype != ir::DataType::kFloat16 && dtype != ir::DataType::kBFloat16 &&
      dtype != ir::DataType::kFloat32 && dtype != ir::DataType::kFloat64) {
    return ctx.Error("Q, K and V must be float16, bfloat16, float32 or float64, got " +
                     std::string(ir::DataTypeName(dtype)));
  }
  const ir::StructInfo& qs = q->struct_info;
  const ir::StructInfo& ks = k->struct_info;
  double scale;
  if (ctx.Attr("scale")) {
    TF_TRY(s, ctx.Float("scale"));
    scale = *s;
  } else {
    std::optional<int64_t> e;
    if (qs->shape) e = ir::AsInt((*qs->shape)[3]);
    if (!e || *e <= 0)
      return ctx.Error("the head size of Q must be static when 'scale' is not given");
    scale = 1.0 / std::sqrt(static_cast<double>(*e));
  }
  ir::DataType compute = dtype == ir::DataType::kFloat64 ? dtype : ir::DataType::kFloat32;
  if (ctx.Attr("softmax_precision")) {
    TF_TRY(p, ctx.Int("softmax_precision"));
    std::optional<ir::DataType> t = ElemType(static_cast<int32_t>(*p));
    if (!t || (*t != ir::DataType::kFloat16 && *t != ir::DataType::kBFloat16 &&
               *t != ir::DataType::kFloat32 && *t != ir::DataType::kFloat64)) {
      return ctx.Error("softmax_precision must be a float type, got " + Str(*p));
    }
    compute = *t;
  }
  // GQA: each K/V head serves Hq / Hkv query heads in a row.
  int64_t group = 1;
  if (qs->shape && ks->shape && !ir::PrimEqual((*qs->shape)[1], (*ks->shape)[1])) {
    std::optional<int64_t> hq = ir::AsInt((*qs->shape)[1]), hkv = ir::AsInt((*ks->shape)[1]);
    if (!hq || !hkv) return ctx.Error("Q and K head counts must be static when they differ");
    if (*hkv <= 0 || *hq % *hkv != 0) {
      return ctx.Error("Q's " + Str(*hq) + " heads are not a multiple of K's " + Str(*hkv));
    }
    group = *hq / *hkv;
  }
  // sqrt(scale) is computed in float32, then cast to the inputs' dtype.
  TF_TRY(root, ctx.ScalarConst(dtype, std::sqrt(static_cast<float>(scale))));
  TF_TRY(q1, ctx.Emit(OpKind::kMultiply, {q, *root}));
  TF_TRY(k1, ctx.Emit(OpKind::kMultiply, {k, *root}));
  TF_TRY(k2, RepeatHeads(ctx, *k1, group));
  TF_TRY(v1, RepeatHeads(ctx, v, group));
  ir::Attrs perm;
  perm.Set("axes", std::vector<int64_t>{0, 1, 3, 2});
  TF_TRY(kt, ctx.Emit(OpKind::kPermuteDims, {*k2}, perm));
  TF_TRY(scores, ctx.Emit(OpKind::kMatmul, {*q1, *kt}));
  ir::Expr x = *scores;
  if (compute != dtype) {
    TF_TRY(c, ctx.Emit(OpKind::kAstype, {x}, DtypeAttr(compute)));
    x = *c;
  }
  TF_TRY(modified, ApplyModifier(ctx, "score_mod", x, compute));
  ir::Attrs axis;
  axis.Set("axis", int64_t{-1});
  TF_TRY(probs, ctx.Emit(OpKind::kSoftmax, {*modified}, axis));
  TF_TRY(p, ApplyModifier(ctx, "prob_mod", *probs, compute));
  ir::Expr vv = *v1;
  if (compute != dtype) {
    TF_TRY(c, ctx.Emit(OpKind::kAstype, {vv}, DtypeAttr(compute)));
    vv = *c;
  }
  TF_TRY(y, ctx.Emit(OpKind::kMatmul, {*p, vv}));
  if (compute == dtype) return Outputs{*y};
  return NodeContext::Single(ctx.Emit(OpKind::kAstype, {*y}, DtypeAttr(dtype)));
}

}  // namespace

const std::vector<Converter> kTransformerConverters = {
    {"Attention", 23, Attention},
    {"RotaryEmbedding", 23, RotaryEmbedding},
    {"SwiGLU", 28, SwiGLU},
    {"TensorScatter", 24, TensorScatter},
    {"LinearAttention", 27, LinearAttention},
    {"CausalConvWithState", 27, CausalConvWithState},
    {"FlexAttention", 1, FlexAttention, "ai.onnx.preview"},
};

}  // namespace quilt::importers::onnx
