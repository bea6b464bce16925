// Converters of the transformer category: Attention, RotaryEmbedding, SwiGLU, TensorScatter,
// LinearAttention, CausalConvWithState. Optional inputs the model leaves out become empty
// constants of shape (0,); multi-output ops return a tuple whose items are bound per output.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "importers/onnx/converter.h"
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

}  // namespace

const std::vector<Converter> kTransformerConverters = {
    {"Attention", 23, Attention},
    {"RotaryEmbedding", 23, RotaryEmbedding},
    {"SwiGLU", 28, SwiGLU},
    {"TensorScatter", 24, TensorScatter},
    {"LinearAttention", 27, LinearAttention},
    {"CausalConvWithState", 27, CausalConvWithState},
};

}  // namespace quilt::importers::onnx
