// Struct-info rules of the ops in ir/ops/transformer.def.
#include <string>
#include <vector>

#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// An optional input the model left out: a rank-1 tensor with 0 elements.
bool Absent(const Expr& e) {
  const StructInfo& s = e->struct_info;
  if (!s || !s->IsTensor() || s->ndim != 1 || !s->shape) return false;
  return AsInt((*s->shape)[0]).value_or(-1) == 0;
}

// The value of a dim that is a constant, else -1.
int64_t Const(const PrimExpr& e) { return e ? AsInt(e).value_or(-1) : -1; }

// Dim i of `s`, or null when the shape is not known.
PrimExpr Dim(const StructInfoNode& s, int i) {
  if (!s.shape || i < 0 || i >= static_cast<int>(s.shape->size())) return nullptr;
  return (*s.shape)[i];
}

// A tensor of these dims; any unknown (null) dim leaves the shape unknown with the rank kept.
StructInfo Tensor(const std::vector<PrimExpr>& dims, DataType dtype) {
  for (const PrimExpr& d : dims) {
    if (!d) return TensorSInfo(std::nullopt, dtype, std::nullopt, static_cast<int>(dims.size()));
  }
  return TensorSInfo(dims, dtype);
}

PrimExpr Mul(const PrimExpr& a, const PrimExpr& b) { return a && b ? a * b : nullptr; }
PrimExpr Add(const PrimExpr& a, const PrimExpr& b) { return a && b ? a + b : nullptr; }

// Two dims that must agree: an error when both are constants and differ.
Status Agree(const PrimExpr& a, const PrimExpr& b, const std::string& what) {
  int64_t x = Const(a), y = Const(b);
  if (x >= 0 && y >= 0 && x != y) return Error(what + ": " + Str(x) + " vs " + Str(y));
  return {};
}

// `hidden` / `heads` for a packed (..., heads * size) dim; an error when it does not divide.
Expected<PrimExpr> HeadSize(const PrimExpr& hidden, int64_t heads, const std::string& heads_name,
                            const std::string& what) {
  if (!hidden) return PrimExpr();
  int64_t h = Const(hidden);
  if (h >= 0 && h % heads != 0) {
    return Error(heads_name + " " + Str(heads) + " does not divide the hidden size " + Str(h) +
                 " of " + what);
  }
  return MakeBinary(PrimKind::kFloorDiv, hidden, IntImm(heads));
}

// The rank must be `want` (when known).
Status Rank(const StructInfoNode& s, int want, const std::string& what) {
  if (s.ndim >= 0 && s.ndim != want) {
    return Error(what + " must have rank " + Str(want) + ", got rank " + Str(s.ndim));
  }
  return {};
}

bool IsAttentionFloat(DataType t) {
  return t == DataType::kVoid || t == DataType::kFloat32 || t == DataType::kFloat16 ||
         t == DataType::kBFloat16 || t == DataType::kFloat64;
}

Status FloatDtype(const StructInfoNode& s, const std::string& what, bool allow_double = true) {
  if (!IsAttentionFloat(s.dtype) || (!allow_double && s.dtype == DataType::kFloat64)) {
    return Error(what + " must be a " +
                 (allow_double ? "float16, bfloat16, float32 or float64"
                               : "float16, bfloat16 or "
                                 "float32") +
                 " tensor, got " + DtypeName(s.dtype));
  }
  return {};
}

Status SameType(const StructInfoNode& a, const StructInfoNode& b, const std::string& what) {
  if (a.dtype != DataType::kVoid && b.dtype != DataType::kVoid && a.dtype != b.dtype) {
    return Error(what + " must have the same dtype, got " + DtypeName(a.dtype) + " and " +
                 DtypeName(b.dtype));
  }
  return {};
}

std::optional<int64_t> OptInt(const Attrs& attrs, const char* name) {
  const int64_t* v = attrs.Get<int64_t>(name);
  return v ? std::optional<int64_t>(*v) : std::nullopt;
}

#define TF_CHECK(expr)          \
  do {                          \
    Status s_ = (expr);         \
    if (!s_) return s_.error(); \
  } while (0)

#define TF_TRY(var, expr) \
  auto var = (expr);      \
  if (!var) return var.error()

}  // namespace

Expected<StructInfo> InferAttention(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  TF_TRY(q, TensorArg(op, args, 0));
  TF_TRY(k, TensorArg(op, args, 1));
  TF_TRY(v, TensorArg(op, args, 2));
  for (size_t i = 3; i < 7; ++i) {
    TF_TRY(t, TensorArg(op, args, i));
  }
  const StructInfoNode &Q = **q, &K = **k, &V = **v;
  TF_CHECK(FloatDtype(Q, "query"));
  TF_CHECK(FloatDtype(K, "key"));
  TF_CHECK(FloatDtype(V, "value"));
  TF_CHECK(SameType(Q, K, "query and key"));
  DataType qt = Q.dtype != DataType::kVoid ? Q.dtype : K.dtype;

  int rank = -1;
  for (const StructInfoNode* s : {&Q, &K, &V}) {
    if (s->ndim < 0) continue;
    if (s->ndim != 3 && s->ndim != 4) {
      return Error("query, key and value must have rank 3 or 4, got rank " + Str(s->ndim));
    }
    if (rank >= 0 && s->ndim != rank) {
      return Error("query, key and value must have the same rank, got " + Str(Q.ndim) + ", " +
                   Str(K.ndim) + " and " + Str(V.ndim));
    }
    rank = s->ndim;
  }
  std::optional<int64_t> qh = OptInt(attrs, "q_num_heads"), kvh = OptInt(attrs, "kv_num_heads");
  if (rank == 3 && (!qh || !kvh)) {
    return Error("3-D query, key and value need q_num_heads and kv_num_heads");
  }
  if (rank == 4 && (qh || kvh)) {
    return Error(
        "q_num_heads and kv_num_heads are for 3-D inputs; 4-D inputs carry the heads in "
        "dim 1");
  }
  if ((qh && *qh <= 0) || (kvh && *kvh <= 0)) {
    return Error("q_num_heads and kv_num_heads must be positive");
  }

  int64_t mode = *attrs.Get<int64_t>("qk_matmul_output_mode");
  if (mode < 0 || mode > 3) {
    return Error("qk_matmul_output_mode must be 0, 1, 2 or 3, got " + Str(mode));
  }
  for (const char* w : {"left_window_size", "right_window_size"}) {
    int64_t n = *attrs.Get<int64_t>(w);
    if (n < -1) return Error(std::string(w) + " must be -1 or non-negative, got " + Str(n));
  }
  if (const DataType* p = attrs.Get<DataType>("softmax_precision")) {
    if (*p == DataType::kVoid || !IsAttentionFloat(*p)) {
      return Error("softmax_precision must be float16, bfloat16, float32 or float64, got " +
                   DtypeName(*p));
    }
  }

  // Heads and sizes.
  PrimExpr b, hq, sq, d, dk, hkv, skv, dv;
  if (rank == 4) {
    b = Dim(Q, 0);
    hq = Dim(Q, 1);
    sq = Dim(Q, 2);
    d = Dim(Q, 3);
    hkv = Dim(K, 1);
    skv = Dim(K, 2);
    dk = Dim(K, 3);
    dv = Dim(V, 3);
    TF_CHECK(Agree(Dim(K, 1), Dim(V, 1), "key and value have different head counts"));
  } else if (rank == 3) {
    b = Dim(Q, 0);
    sq = Dim(Q, 1);
    hq = IntImm(*qh);
    hkv = IntImm(*kvh);
    TF_TRY(qd, HeadSize(Dim(Q, 2), *qh, "q_num_heads", "query"));
    TF_TRY(kd, HeadSize(Dim(K, 2), *kvh, "kv_num_heads", "key"));
    TF_TRY(vd, HeadSize(Dim(V, 2), *kvh, "kv_num_heads", "value"));
    d = *qd;
    dk = *kd;
    dv = *vd;
    skv = Dim(K, 1);
  }
  TF_CHECK(Agree(Dim(Q, 0), Dim(K, 0), "query and key have different batch sizes"));
  TF_CHECK(Agree(Dim(K, 0), Dim(V, 0), "key and value have different batch sizes"));
  if (!b) b = Dim(K, 0);
  TF_CHECK(Agree(d, dk, "query and key have different head sizes"));
  if (!d) d = dk;
  if (rank >= 0) {
    TF_CHECK(
        Agree(Dim(K, rank - 2), Dim(V, rank - 2), "key and value have different sequence lengths"));
  }
  int64_t nq = Const(hq), nkv = Const(hkv);
  if (nq >= 0 && nkv > 0 && nq % nkv != 0) {
    return Error("the query's " + Str(nq) + " heads are not a multiple of the key's and value's " +
                 Str(nkv) + " heads");
  }

  // The KV cache.
  const StructInfoNode &PK = *args[4]->struct_info, &PV = *args[5]->struct_info;
  bool has_pk = !Absent(args[4]), has_pv = !Absent(args[5]);
  if (has_pk != has_pv) return Error("past_key and past_value must be given together");
  PrimExpr total = skv;
  if (has_pk) {
    TF_CHECK(Rank(PK, 4, "past_key"));
    TF_CHECK(Rank(PV, 4, "past_value"));
    TF_CHECK(SameType(PK, K, "past_key and key"));
    TF_CHECK(SameType(PV, V, "past_value and value"));
    TF_CHECK(Agree(Dim(PK, 0), b, "past_key and query have different batch sizes"));
    TF_CHECK(Agree(Dim(PK, 1), hkv, "past_key and key have different head counts"));
    TF_CHECK(Agree(Dim(PK, 3), d, "past_key and key have different head sizes"));
    TF_CHECK(Agree(Dim(PV, 0), b, "past_value and query have different batch sizes"));
    TF_CHECK(Agree(Dim(PV, 1), hkv, "past_value and value have different head counts"));
    TF_CHECK(Agree(Dim(PV, 2), Dim(PK, 2), "past_key and past_value have different lengths"));
    TF_CHECK(Agree(Dim(PV, 3), dv, "past_value and value have different head sizes"));
    total = Add(Dim(PK, 2), skv);
  }
  if (!Absent(args[6])) {
    const StructInfoNode& N = *args[6]->struct_info;
    if (has_pk) return Error("nonpad_kv_seqlen cannot be combined with past_key and past_value");
    if (N.dtype != DataType::kVoid && N.dtype != DataType::kInt64) {
      return Error("nonpad_kv_seqlen must be int64, got " + DtypeName(N.dtype));
    }
    TF_CHECK(Rank(N, 1, "nonpad_kv_seqlen"));
    TF_CHECK(Agree(Dim(N, 0), b, "nonpad_kv_seqlen and query have different batch sizes"));
  }
  if (!Absent(args[3])) {
    const StructInfoNode& M = *args[3]->struct_info;
    if (M.dtype == DataType::kString || M.dtype == DataType::kComplex64 ||
        M.dtype == DataType::kComplex128) {
      return Error("attn_mask must be a bool or numeric tensor, got " + DtypeName(M.dtype));
    }
    if (M.ndim == 0 || M.ndim > 4) {
      return Error("attn_mask must have rank 1 to 4, got rank " + Str(M.ndim));
    }
    if (M.ndim > 0 && M.shape) {
      int64_t keys = Const((*M.shape)[M.ndim - 1]), t = Const(total);
      if (keys >= 0 && t >= 0 && keys > t) {
        return Error("attn_mask covers " + Str(keys) + " keys but there are only " + Str(t));
      }
      // The other dims broadcast to (batch, q heads, q length).
      const PrimExpr lead[3] = {b, hq, sq};
      const char* names[3] = {"batch size", "query head count", "query length"};
      for (int i = 2; i <= M.ndim; ++i) {
        int64_t m = Const((*M.shape)[M.ndim - i]), w = Const(lead[4 - i]);
        if (m >= 0 && w >= 0 && m != 1 && m != w) {
          return Error("attn_mask dim " + Str(M.ndim - i) + " is " + Str(m) + ", expected 1 or " +
                       "the " + names[4 - i] + " " + Str(w));
        }
      }
    }
  }

  if (rank < 0) {
    return TupleSInfo({TensorSInfo(std::nullopt, qt, std::nullopt, -1),
                       TensorSInfo(std::nullopt, K.dtype, std::nullopt, 4),
                       TensorSInfo(std::nullopt, V.dtype, std::nullopt, 4),
                       TensorSInfo(std::nullopt, qt, std::nullopt, 4)});
  }
  StructInfo y = rank == 4 ? Tensor({b, hq, sq, dv}, qt) : Tensor({b, sq, Mul(hq, dv)}, qt);
  return TupleSInfo({y, Tensor({b, hkv, total, d}, K.dtype), Tensor({b, hkv, total, dv}, V.dtype),
                     Tensor({b, hq, sq, total}, qt)});
}

Expected<StructInfo> InferRotaryEmbedding(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs& attrs) {
  TF_TRY(x, TensorArg(op, args, 0));
  TF_TRY(c, TensorArg(op, args, 1));
  TF_TRY(s, TensorArg(op, args, 2));
  TF_TRY(p, TensorArg(op, args, 3));
  const StructInfoNode &X = **x, &C = **c, &S = **s;
  TF_CHECK(FloatDtype(X, "data", false));
  TF_CHECK(SameType(X, C, "data and cos_cache"));
  TF_CHECK(SameType(X, S, "data and sin_cache"));
  if (X.ndim >= 0 && X.ndim != 3 && X.ndim != 4) {
    return Error("data must have rank 3 or 4, got rank " + Str(X.ndim));
  }
  std::optional<int64_t> heads = OptInt(attrs, "num_heads");
  if (X.ndim == 3 && !heads) return Error("3-D data needs num_heads");
  if (X.ndim == 4 && heads)
    return Error("num_heads is for 3-D data; 4-D data has the heads in dim 1");
  if (heads && *heads <= 0) return Error("num_heads must be positive, got " + Str(*heads));
  int64_t rot = *attrs.Get<int64_t>("rotary_embedding_dim");
  if (rot < 0) return Error("rotary_embedding_dim must be non-negative, got " + Str(rot));

  PrimExpr batch = Dim(X, 0), seq, head;
  if (X.ndim == 4) {
    seq = Dim(X, 2);
    head = Dim(X, 3);
  } else if (X.ndim == 3) {
    seq = Dim(X, 1);
    TF_TRY(h, HeadSize(Dim(X, 2), *heads, "num_heads", "data"));
    head = *h;
  }
  int64_t hs = Const(head);
  if (rot > 0 && hs >= 0 && rot > hs) {
    return Error("rotary_embedding_dim " + Str(rot) + " is larger than the head size " + Str(hs));
  }
  int64_t r = rot > 0 ? rot : hs;
  if (r >= 0 && r % 2 != 0) return Error("the rotated size " + Str(r) + " must be even");
  PrimExpr half = r >= 0 ? IntImm(r / 2) : nullptr;

  if (C.ndim >= 0 && S.ndim >= 0 && C.ndim != S.ndim) {
    return Error("cos_cache and sin_cache must have the same rank, got " + Str(C.ndim) + " and " +
                 Str(S.ndim));
  }
  for (int i = 0; i < std::max(C.ndim, S.ndim); ++i) {
    TF_CHECK(Agree(Dim(C, i), Dim(S, i), "cos_cache and sin_cache have different shapes"));
  }
  bool has_pos = !Absent(args[3]);
  if (has_pos) {
    const StructInfoNode& P = **p;
    if (P.dtype != DataType::kVoid && P.dtype != DataType::kInt64) {
      return Error("position_ids must be int64, got " + DtypeName(P.dtype));
    }
    TF_CHECK(Rank(P, 2, "position_ids"));
    TF_CHECK(Rank(C, 2, "cos_cache (indexed by position_ids)"));
    TF_CHECK(Rank(S, 2, "sin_cache (indexed by position_ids)"));
    TF_CHECK(Agree(Dim(P, 0), batch, "position_ids and data have different batch sizes"));
    TF_CHECK(Agree(Dim(P, 1), seq, "position_ids and data have different sequence lengths"));
    TF_CHECK(Agree(Dim(C, 1), half, "cos_cache's last dim must be half the rotated size"));
  } else {
    TF_CHECK(Rank(C, 3, "cos_cache (without position_ids)"));
    TF_CHECK(Rank(S, 3, "sin_cache (without position_ids)"));
    TF_CHECK(Agree(Dim(C, 0), batch, "cos_cache and data have different batch sizes"));
    TF_CHECK(Agree(Dim(C, 1), seq, "cos_cache and data have different sequence lengths"));
    TF_CHECK(Agree(Dim(C, 2), half, "cos_cache's last dim must be half the rotated size"));
  }
  DataType dt = X.dtype != DataType::kVoid ? X.dtype : C.dtype;
  return TensorSInfo(X.shape, dt, std::nullopt, X.ndim);
}

Expected<StructInfo> InferSwiGLU(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  TF_TRY(a, TensorArg(op, args, 0));
  TF_TRY(b, TensorArg(op, args, 1));
  const StructInfoNode &A = **a, &B = **b;
  TF_CHECK(FloatDtype(A, "a"));
  TF_CHECK(FloatDtype(B, "b"));
  TF_CHECK(SameType(A, B, "a and b"));
  if (A.ndim >= 0 && B.ndim >= 0 && A.ndim != B.ndim) {
    return Error("a and b must have the same shape (no broadcasting), got ranks " + Str(A.ndim) +
                 " and " + Str(B.ndim));
  }
  for (int i = 0; i < std::max(A.ndim, B.ndim); ++i) {
    TF_CHECK(
        Agree(Dim(A, i), Dim(B, i),
              "a and b must have the same shape (no broadcasting); dim " + Str(i) + " differs"));
  }
  const StructInfoNode& known = A.shape || B.ndim < 0 ? A : B;
  DataType dt = A.dtype != DataType::kVoid ? A.dtype : B.dtype;
  return TensorSInfo(known.shape, dt, std::nullopt, known.ndim);
}

Expected<StructInfo> InferTensorScatter(const OpInfo& op, const std::vector<Expr>& args,
                                        const Attrs& attrs) {
  TF_TRY(c, TensorArg(op, args, 0));
  TF_TRY(u, TensorArg(op, args, 1));
  TF_TRY(w, TensorArg(op, args, 2));
  const StructInfoNode &C = **c, &U = **u;
  TF_CHECK(SameType(C, U, "past_cache and update"));
  const std::string& mode = *attrs.Get<std::string>("mode");
  if (mode != "linear" && mode != "circular") {
    return Error("mode must be linear or circular, got '" + mode + "'");
  }
  if (C.ndim >= 0 && U.ndim >= 0 && C.ndim != U.ndim) {
    return Error("past_cache and update must have the same rank, got " + Str(C.ndim) + " and " +
                 Str(U.ndim));
  }
  int ndim = C.ndim >= 0 ? C.ndim : U.ndim;
  int64_t axis = *attrs.Get<int64_t>("axis");
  if (ndim >= 0) {
    if (ndim < 2) return Error("past_cache must have rank 2 or more, got rank " + Str(ndim));
    TF_TRY(ax, NormalizeAxis(axis, ndim, "axis"));
    axis = *ax;
  }
  if (axis == 0) {
    return Error("axis cannot be 0 (the batch dimension)");
  }
  for (int i = 0; i < ndim; ++i) {
    int64_t x = Const(Dim(C, i)), y = Const(Dim(U, i));
    if (x < 0 || y < 0) continue;
    if (i == axis && y > x) {
      return Error("update has " + Str(y) + " positions along axis " + Str(i) +
                   " but past_cache has only " + Str(x));
    }
    if (i != axis && x != y) {
      return Error("past_cache and update differ in dim " + Str(i) + ": " + Str(x) + " vs " +
                   Str(y));
    }
  }
  if (!Absent(args[2])) {
    const StructInfoNode& W = **w;
    if (W.dtype != DataType::kVoid && W.dtype != DataType::kInt64) {
      return Error("write_indices must be int64, got " + DtypeName(W.dtype));
    }
    TF_CHECK(Rank(W, 1, "write_indices"));
    TF_CHECK(
        Agree(Dim(W, 0), Dim(C, 0), "write_indices and past_cache have different batch sizes"));
  }
  DataType dt = C.dtype != DataType::kVoid ? C.dtype : U.dtype;
  return TensorSInfo(C.shape, dt, std::nullopt, ndim);
}

Expected<StructInfo> InferLinearAttention(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs& attrs) {
  TF_TRY(q, TensorArg(op, args, 0));
  TF_TRY(k, TensorArg(op, args, 1));
  TF_TRY(v, TensorArg(op, args, 2));
  for (size_t i = 3; i < 6; ++i) {
    TF_TRY(t, TensorArg(op, args, i));
  }
  const StructInfoNode &Q = **q, &K = **k, &V = **v;
  TF_CHECK(FloatDtype(Q, "query", false));
  TF_CHECK(SameType(Q, K, "query and key"));
  TF_CHECK(SameType(Q, V, "query and value"));
  TF_CHECK(Rank(Q, 3, "query"));
  TF_CHECK(Rank(K, 3, "key"));
  TF_CHECK(Rank(V, 3, "value"));
  int64_t qh = *attrs.Get<int64_t>("q_num_heads"), kvh = *attrs.Get<int64_t>("kv_num_heads");
  if (qh <= 0 || kvh <= 0 || qh % kvh != 0) {
    return Error("q_num_heads " + Str(qh) + " must be a positive multiple of kv_num_heads " +
                 Str(kvh));
  }
  const std::string& rule = *attrs.Get<std::string>("update_rule");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return Error("update_rule must be linear, gated, delta or gated_delta, got '" + rule + "'");
  }
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  DataType qt = Q.dtype != DataType::kVoid ? Q.dtype : K.dtype;
  PrimExpr b = Dim(Q, 0), t = Dim(Q, 1);
  for (const StructInfoNode* s : {&K, &V}) {
    TF_CHECK(Agree(Dim(*s, 0), b, "query, key and value have different batch sizes"));
    TF_CHECK(Agree(Dim(*s, 1), t, "query, key and value have different sequence lengths"));
  }
  TF_TRY(dk, HeadSize(Dim(Q, 2), qh, "q_num_heads", "query"));
  TF_TRY(kd, HeadSize(Dim(K, 2), kvh, "kv_num_heads", "key"));
  TF_TRY(dv, HeadSize(Dim(V, 2), kvh, "kv_num_heads", "value"));
  TF_CHECK(Agree(*dk, *kd, "query and key have different head sizes"));
  PrimExpr d = *dk ? *dk : *kd;

  DataType state_dt = qt;
  if (!Absent(args[3])) {
    const StructInfoNode& P = *args[3]->struct_info;
    TF_CHECK(FloatDtype(P, "past_state", false));
    TF_CHECK(Rank(P, 4, "past_state"));
    const PrimExpr want[4] = {b, IntImm(kvh), d, *dv};
    for (int i = 0; i < 4; ++i) {
      TF_CHECK(Agree(Dim(P, i), want[i],
                     "past_state must be (batch, kv_num_heads, key head size, value head size); "
                     "dim " +
                         Str(i) + " differs"));
    }
    state_dt = P.dtype;
  }
  bool has_decay = !Absent(args[4]), has_beta = !Absent(args[5]);
  if (gated != has_decay) {
    return Error("update_rule '" + rule + "' " + (gated ? "needs" : "takes no") + " decay input");
  }
  if (delta != has_beta) {
    return Error("update_rule '" + rule + "' " + (delta ? "needs" : "takes no") + " beta input");
  }
  if (has_decay) {
    const StructInfoNode& G = *args[4]->struct_info;
    TF_CHECK(SameType(Q, G, "query and decay"));
    TF_CHECK(Rank(G, 3, "decay"));
    TF_CHECK(Agree(Dim(G, 0), b, "decay and query have different batch sizes"));
    TF_CHECK(Agree(Dim(G, 1), t, "decay and query have different sequence lengths"));
    int64_t last = Const(Dim(G, 2)), dd = Const(d);
    if (last >= 0 && dd >= 0 && last != kvh && last != kvh * dd) {
      return Error("decay's last dim " + Str(last) + " must be kv_num_heads (" + Str(kvh) +
                   ") or kv_num_heads * head size (" + Str(kvh * dd) + ")");
    }
  }
  if (has_beta) {
    const StructInfoNode& B = *args[5]->struct_info;
    TF_CHECK(SameType(Q, B, "query and beta"));
    TF_CHECK(Rank(B, 3, "beta"));
    TF_CHECK(Agree(Dim(B, 0), b, "beta and query have different batch sizes"));
    TF_CHECK(Agree(Dim(B, 1), t, "beta and query have different sequence lengths"));
    int64_t last = Const(Dim(B, 2));
    if (last >= 0 && last != kvh && last != 1) {
      return Error("beta's last dim " + Str(last) + " must be kv_num_heads (" + Str(kvh) +
                   ") or 1");
    }
  }
  return TupleSInfo(
      {Tensor({b, t, Mul(IntImm(qh), *dv)}, qt), Tensor({b, IntImm(kvh), d, *dv}, state_dt)});
}

Expected<StructInfo> InferCausalConvWithState(const OpInfo& op, const std::vector<Expr>& args,
                                              const Attrs& attrs) {
  TF_TRY(x, TensorArg(op, args, 0));
  TF_TRY(w, TensorArg(op, args, 1));
  for (size_t i = 2; i < 4; ++i) {
    TF_TRY(t, TensorArg(op, args, i));
  }
  const StructInfoNode &X = **x, &W = **w;
  TF_CHECK(FloatDtype(X, "data", false));
  TF_CHECK(SameType(X, W, "data and weight"));
  TF_CHECK(Rank(X, 3, "data"));
  TF_CHECK(Rank(W, 3, "weight"));
  const std::string& act = *attrs.Get<std::string>("activation");
  if (act != "none" && act != "silu") {
    return Error("activation must be none or silu, got '" + act + "'");
  }
  PrimExpr b = Dim(X, 0), c = Dim(X, 1), len = Dim(X, 2), kk = Dim(W, 2);
  TF_CHECK(Agree(Dim(W, 0), c, "weight must be (channels, 1, kernel); its channels differ"));
  TF_CHECK(Agree(Dim(W, 1), IntImm(1), "weight must be (channels, 1, kernel); dim 1"));
  int64_t kn = Const(kk);
  if (kn == 0) return Error("the kernel size must be at least 1, got 0");
  PrimExpr state = kk ? kk - IntImm(1) : nullptr;
  if (!Absent(args[2])) {
    const StructInfoNode& B = *args[2]->struct_info;
    TF_CHECK(SameType(X, B, "data and bias"));
    TF_CHECK(Rank(B, 1, "bias"));
    TF_CHECK(Agree(Dim(B, 0), c, "bias and data have different channel counts"));
  }
  if (!Absent(args[3])) {
    const StructInfoNode& P = *args[3]->struct_info;
    TF_CHECK(SameType(X, P, "data and past_state"));
    TF_CHECK(Rank(P, 3, "past_state"));
    TF_CHECK(Agree(Dim(P, 0), b, "past_state and data have different batch sizes"));
    TF_CHECK(Agree(Dim(P, 1), c, "past_state and data have different channel counts"));
    TF_CHECK(Agree(Dim(P, 2), state, "past_state must hold kernel size - 1 positions"));
  }
  DataType dt = X.dtype != DataType::kVoid ? X.dtype : W.dtype;
  return TupleSInfo({Tensor({b, c, len}, dt), Tensor({b, c, state}, dt)});
}

}  // namespace quilt::ir
