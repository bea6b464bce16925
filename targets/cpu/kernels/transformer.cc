// Transformer ops: attention, rotary embedding, SwiGLU, KV-cache scatter, linear attention and
// the stateful causal conv.
//
// The float kernels read their inputs as double and round intermediate results to the element
// type where the ONNX reference computes in that type, so half-precision results match it.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

bool IsFloatType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

// v rounded to the float type t.
double RoundTo(DType t, double v) {
  switch (t) {
    case DType::kFloat64:
      return v;
    case DType::kFloat16:
      return rt::HalfToFloat(rt::FloatToHalf(static_cast<float>(v)));
    case DType::kBFloat16:
      return rt::BFloat16ToFloat(rt::FloatToBFloat16(static_cast<float>(v)));
    default:
      return static_cast<float>(v);
  }
}

// ---- Attention -------------------------------------------------------------------------------

// A (B, H, S, D) view of a 4-D tensor or of a 3-D (B, S, H * D) one.
struct Heads {
  const std::vector<double>* data;
  int64_t b, h, s, d;
  bool three_d;
  double at(int64_t bi, int64_t hi, int64_t si, int64_t di) const {
    if (three_d) return (*data)[((bi * s + si) * h + hi) * d + di];
    return (*data)[((bi * h + hi) * s + si) * d + di];
  }
};

Status MakeHeads(const Tensor& t, const std::vector<double>& data, int64_t heads, const char* what,
                 Heads* out) {
  out->data = &data;
  if (t.rank() == 4) {
    *out = {&data, t.shape[0], t.shape[1], t.shape[2], t.shape[3], false};
    return Status::Ok();
  }
  if (t.rank() != 3) return Status::Error(std::string(what) + " must have rank 3 or 4");
  if (heads <= 0 || t.shape[2] % heads != 0) {
    return Status::Error(std::string(what) + "'s hidden size " + std::to_string(t.shape[2]) +
                         " does not split into " + std::to_string(heads) + " heads");
  }
  *out = {&data, t.shape[0], heads, t.shape[1], t.shape[2] / heads, true};
  return Status::Ok();
}

Status Attention(KernelContext& ctx) {
  const Tensor& tq = *ctx.input(0);
  const Tensor& tk = *ctx.input(1);
  const Tensor& tv = *ctx.input(2);
  const Tensor* tmask = ctx.input(3);
  const Tensor* tpk = ctx.input(4);
  const Tensor* tpv = ctx.input(5);
  const Tensor* tnp = ctx.input(6);
  const rt::AttrView& at = ctx.attrs();
  DType qt = tq.dtype;
  if (!IsFloatType(qt) || tk.dtype != qt || !IsFloatType(tv.dtype)) {
    return Status::Error("attention needs float query, key and value (query's and key's alike)");
  }
  if (tq.rank() != tk.rank() || tq.rank() != tv.rank()) {
    return Status::Error("query, key and value must have the same rank");
  }
  std::vector<double> q, k, v;
  QUILT_RETURN_IF_ERROR(ReadFloats(tq, &q));
  QUILT_RETURN_IF_ERROR(ReadFloats(tk, &k));
  QUILT_RETURN_IF_ERROR(ReadFloats(tv, &v));
  Heads Q, K, V;
  QUILT_RETURN_IF_ERROR(MakeHeads(tq, q, at.Int("q_num_heads", 0), "query", &Q));
  QUILT_RETURN_IF_ERROR(MakeHeads(tk, k, at.Int("kv_num_heads", 0), "key", &K));
  QUILT_RETURN_IF_ERROR(MakeHeads(tv, v, at.Int("kv_num_heads", 0), "value", &V));
  int64_t B = Q.b, Hq = Q.h, Sq = Q.s, D = Q.d, Hkv = K.h, Skv = K.s, Dv = V.d;
  if (K.b != B || V.b != B || K.d != D || V.h != Hkv || V.s != Skv) {
    return Status::Error("query, key and value shapes do not agree");
  }
  if (Hkv <= 0 || Hq % Hkv != 0) {
    return Status::Error("the query heads are not a multiple of the key/value heads");
  }
  bool has_past = !Absent(tpk) || !Absent(tpv);
  int64_t P = 0;
  std::vector<double> pk, pv;
  if (has_past) {
    if (Absent(tpk) || Absent(tpv)) return Status::Error("past_key and past_value go together");
    if (tpk->rank() != 4 || tpv->rank() != 4 || tpk->shape[0] != B || tpk->shape[1] != Hkv ||
        tpk->shape[3] != D || tpv->shape[0] != B || tpv->shape[1] != Hkv || tpv->shape[3] != Dv ||
        tpv->shape[2] != tpk->shape[2]) {
      return Status::Error("past_key / past_value shapes do not match key and value");
    }
    if (tpk->dtype != tk.dtype || tpv->dtype != tv.dtype) {
      return Status::Error("past_key / past_value dtypes differ from key / value");
    }
    P = tpk->shape[2];
    QUILT_RETURN_IF_ERROR(ReadFloats(*tpk, &pk));
    QUILT_RETURN_IF_ERROR(ReadFloats(*tpv, &pv));
  }
  int64_t T = P + Skv;
  // present_key / present_value: (B, Hkv, T, D / Dv).
  std::vector<double> kp(B * Hkv * T * D), vp(B * Hkv * T * Dv);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hkv; ++h) {
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t d = 0; d < D; ++d) {
          kp[((b * Hkv + h) * T + t) * D + d] =
              t < P ? pk[((b * Hkv + h) * P + t) * D + d] : K.at(b, h, t - P, d);
        }
        for (int64_t d = 0; d < Dv; ++d) {
          vp[((b * Hkv + h) * T + t) * Dv + d] =
              t < P ? pv[((b * Hkv + h) * P + t) * Dv + d] : V.at(b, h, t - P, d);
        }
      }
    }
  }
  std::vector<int64_t> nonpad;
  bool has_nonpad = !Absent(tnp);
  if (has_nonpad) {
    if (tnp->dtype != DType::kInt64 || tnp->rank() != 1 || tnp->shape[0] != B) {
      return Status::Error("nonpad_kv_seqlen must be int64 of shape (batch,)");
    }
    nonpad.assign(tnp->Data<int64_t>(), tnp->Data<int64_t>() + B);
    for (int64_t n : nonpad) {
      if (n < 0 || n > T) {
        return Status::Error("nonpad_kv_seqlen value " + std::to_string(n) + " is outside [0, " +
                             std::to_string(T) + "]");
      }
    }
  }
  // The mask, broadcast (right-aligned) to (B, Hq, Sq, Tm) with Tm <= T.
  bool has_mask = !Absent(tmask);
  std::vector<double> mask;
  Shape mshape;
  Shape mstrides;
  if (has_mask) {
    const Tensor& m = *tmask;
    if (m.rank() < 1 || m.rank() > 4) return Status::Error("attn_mask must have rank 1 to 4");
    mshape = m.shape;
    while (mshape.size() < 4) mshape.insert(mshape.begin(), 1);
    const int64_t want[3] = {B, Hq, Sq};
    for (int i = 0; i < 3; ++i) {
      if (mshape[i] != 1 && mshape[i] != want[i]) {
        return Status::Error("attn_mask of shape " + rt::ShapeString(m.shape) +
                             " does not broadcast to the scores");
      }
    }
    if (mshape[3] > T) return Status::Error("attn_mask covers more keys than there are");
    mstrides = Strides(mshape);
    for (int i = 0; i < 3; ++i) {
      if (mshape[i] == 1) mstrides[i] = 0;
    }
    int64_t n = m.NumElements();
    mask.resize(n);
    if (m.dtype == DType::kBool) {
      for (int64_t i = 0; i < n; ++i) {
        mask[i] = m.Data<uint8_t>()[i] ? 0.0 : -INFINITY;
      }
    } else if (IsFloatType(m.dtype)) {
      QUILT_RETURN_IF_ERROR(ReadFloats(m, &mask));
    } else {
      QUILT_RETURN_IF_ERROR(VisitInteger(m.dtype, [&](auto tag) {
        using I = typename decltype(tag)::type;
        for (int64_t i = 0; i < n; ++i) mask[i] = static_cast<double>(m.Data<I>()[i]);
        return Status::Ok();
      }));
    }
  }
  bool causal = at.Bool("is_causal", false);
  int64_t left = at.Int("left_window_size", -1), right = at.Int("right_window_size", -1);
  double softcap = at.Float("softcap", 0.0);
  int64_t mode = at.Int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return Status::Error("qk_matmul_output_mode must be 0 to 3");
  DType sp = at.Dtype("softmax_precision", DType::kVoid);
  if (sp == DType::kVoid) sp = qt;
  double scale = at.Has("scale") ? at.Float("scale") : 1.0 / std::sqrt(static_cast<double>(D));
  double sq_scale = RoundTo(qt, std::sqrt(scale));

  Shape yshape = tq.rank() == 4 ? Shape{B, Hq, Sq, Dv} : Shape{B, Sq, Hq * Dv};
  Tensor *ty, *tkp, *tvp, *tqk;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, qt, yshape, &ty));
  QUILT_RETURN_IF_ERROR(ctx.Output(1, tk.dtype, {B, Hkv, T, D}, &tkp));
  QUILT_RETURN_IF_ERROR(ctx.Output(2, tv.dtype, {B, Hkv, T, Dv}, &tvp));
  QUILT_RETURN_IF_ERROR(ctx.Output(3, qt, {B, Hq, Sq, T}, &tqk));
  std::vector<double> y(B * Sq * Hq * Dv), qk(B * Hq * Sq * T);
  int64_t group = Hq / Hkv;
  std::vector<double> s(T), bias(T), p(T);
  for (int64_t b = 0; b < B; ++b) {
    int64_t offset = has_past ? P : has_nonpad ? nonpad[b] - Sq : 0;
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t hk = h / group;
      for (int64_t i = 0; i < Sq; ++i) {
        bool all_masked = true;
        for (int64_t j = 0; j < T; ++j) {
          double bv = 0;
          if (has_mask) {
            if (j >= mshape[3]) {
              bv = -INFINITY;
            } else {
              bv = mask[b * mstrides[0] + h * mstrides[1] + i * mstrides[2] + j];
            }
          }
          bool allowed = true;
          if (causal && j > i + offset) allowed = false;
          if (left >= 0 && offset + i - j > left) allowed = false;
          if (right >= 0 && j - (offset + i) > right) allowed = false;
          if (has_nonpad && j >= nonpad[b]) allowed = false;
          if (!allowed) bv = -INFINITY;
          bias[j] = RoundTo(qt, bv);
          if (!(std::isinf(bias[j]) && bias[j] < 0)) all_masked = false;
          double acc = 0;
          for (int64_t d = 0; d < D; ++d) {
            acc += RoundTo(qt, Q.at(b, h, i, d) * sq_scale) *
                   RoundTo(qt, kp[((b * Hkv + hk) * T + j) * D + d] * sq_scale);
          }
          s[j] = RoundTo(qt, acc);
        }
        double* qrow = &qk[((b * Hq + h) * Sq + i) * T];
        if (mode == 0) {
          for (int64_t j = 0; j < T; ++j) qrow[j] = s[j];
        }
        if (softcap > 0) {
          for (int64_t j = 0; j < T; ++j) {
            s[j] = RoundTo(qt, RoundTo(qt, std::tanh(RoundTo(qt, s[j] / softcap))) * softcap);
          }
        }
        if (mode == 1) {
          for (int64_t j = 0; j < T; ++j) qrow[j] = s[j];
        }
        for (int64_t j = 0; j < T; ++j) s[j] = RoundTo(qt, s[j] + bias[j]);
        if (mode == 2) {
          for (int64_t j = 0; j < T; ++j) qrow[j] = s[j];
        }
        // Softmax in the softmax precision; a fully masked row is zeros.
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) mx = std::max(mx, RoundTo(sp, s[j]));
        if (std::isinf(mx) && mx < 0) mx = 0;
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          p[j] = RoundTo(sp, std::exp(RoundTo(sp, RoundTo(sp, s[j]) - mx)));
          // numpy sums bfloat16 (a custom type) one element at a time, float16 in float.
          sum = sp == DType::kBFloat16 ? RoundTo(sp, sum + p[j]) : sum + p[j];
        }
        sum = RoundTo(sp, sum);
        if (sum == 0) sum = 1;
        for (int64_t j = 0; j < T; ++j) {
          p[j] = all_masked ? 0.0 : RoundTo(qt, RoundTo(sp, p[j] / sum));
        }
        if (mode == 3) {
          for (int64_t j = 0; j < T; ++j) qrow[j] = p[j];
        }
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += p[j] * vp[((b * Hkv + hk) * T + j) * Dv + d];
          int64_t idx =
              tq.rank() == 4 ? ((b * Hq + h) * Sq + i) * Dv + d : ((b * Sq + i) * Hq + h) * Dv + d;
          y[idx] = acc;
        }
      }
    }
  }
  WriteFloats(ty, y);
  WriteFloats(tkp, kp);
  WriteFloats(tvp, vp);
  WriteFloats(tqk, qk);
  return Status::Ok();
}

// ---- Rotary embedding ------------------------------------------------------------------------

Status RotaryEmbedding(KernelContext& ctx) {
  const Tensor& tx = *ctx.input(0);
  const Tensor& tc = *ctx.input(1);
  const Tensor& ts = *ctx.input(2);
  const Tensor* tp = ctx.input(3);
  const rt::AttrView& at = ctx.attrs();
  if (!IsFloatType(tx.dtype) || tc.dtype != tx.dtype || ts.dtype != tx.dtype) {
    return Status::Error("rotary_embedding needs float data and caches of one type");
  }
  std::vector<double> x, c, s;
  QUILT_RETURN_IF_ERROR(ReadFloats(tx, &x));
  QUILT_RETURN_IF_ERROR(ReadFloats(tc, &c));
  QUILT_RETURN_IF_ERROR(ReadFloats(ts, &s));
  Heads X;
  QUILT_RETURN_IF_ERROR(MakeHeads(tx, x, at.Int("num_heads", 0), "data", &X));
  int64_t R = at.Int("rotary_embedding_dim", 0);
  if (R == 0) R = X.d;
  if (R < 0 || R > X.d || R % 2 != 0) {
    return Status::Error("rotary_embedding_dim must be even and at most the head size");
  }
  int64_t half = R / 2;
  bool interleaved = at.Bool("interleaved", false);
  bool has_pos = !Absent(tp);
  if (tc.shape != ts.shape) return Status::Error("cos_cache and sin_cache shapes differ");
  if (has_pos) {
    if (tp->dtype != DType::kInt64 || tp->rank() != 2 || tp->shape[0] != X.b ||
        tp->shape[1] != X.s) {
      return Status::Error("position_ids must be int64 of shape (batch, sequence)");
    }
    if (tc.rank() != 2 || tc.shape[1] != half) {
      return Status::Error("cos_cache must be (max_position, rotary_dim / 2)");
    }
  } else if (tc.rank() != 3 || tc.shape[0] != X.b || tc.shape[1] != X.s || tc.shape[2] != half) {
    return Status::Error("cos_cache must be (batch, sequence, rotary_dim / 2)");
  }
  Tensor* ty;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, tx.dtype, tx.shape, &ty));
  std::vector<double> y(x.size());
  DType dt = tx.dtype;
  for (int64_t b = 0; b < X.b; ++b) {
    for (int64_t si = 0; si < X.s; ++si) {
      int64_t row;
      if (has_pos) {
        int64_t pos = tp->Data<int64_t>()[b * X.s + si];
        if (pos < 0 || pos >= tc.shape[0]) {
          return Status::Error("position id " + std::to_string(pos) + " is outside the cache of " +
                               std::to_string(tc.shape[0]) + " positions");
        }
        row = pos * half;
      } else {
        row = (b * X.s + si) * half;
      }
      for (int64_t h = 0; h < X.h; ++h) {
        auto index = [&](int64_t d) {
          return X.three_d ? ((b * X.s + si) * X.h + h) * X.d + d
                           : ((b * X.h + h) * X.s + si) * X.d + d;
        };
        for (int64_t d = R; d < X.d; ++d) y[index(d)] = x[index(d)];
        for (int64_t i = 0; i < half; ++i) {
          int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          double x1 = x[index(i1)], x2 = x[index(i2)];
          double cv = c[row + i], sv = s[row + i];
          y[index(i1)] = RoundTo(dt, RoundTo(dt, cv * x1) - RoundTo(dt, sv * x2));
          y[index(i2)] = RoundTo(dt, RoundTo(dt, sv * x1) + RoundTo(dt, cv * x2));
        }
      }
    }
  }
  WriteFloats(ty, y);
  return Status::Ok();
}

// ---- SwiGLU ----------------------------------------------------------------------------------

Status SwiGLU(KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype != b.dtype || a.shape != b.shape) {
    return Status::Error("swiglu needs a and b of the same shape and type");
  }
  double alpha = ctx.attrs().Float("alpha", 1.0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, a.dtype, a.shape, &y));
  return VisitFloat(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    int64_t n = a.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      C va = Load(a.Data<T>()[i]), vb = Load(b.Data<T>()[i]);
      C sig = static_cast<C>(1) / (static_cast<C>(1) + std::exp(-static_cast<C>(alpha) * va));
      y->MutableData<T>()[i] = Store<T>(static_cast<C>(va * sig * vb));
    }
    return Status::Ok();
  });
}

// ---- TensorScatter ---------------------------------------------------------------------------

Status TensorScatter(KernelContext& ctx) {
  const Tensor& cache = *ctx.input(0);
  const Tensor& upd = *ctx.input(1);
  const Tensor* wi = ctx.input(2);
  int64_t axis = ctx.attrs().Int("axis", -2);
  std::string_view mode = ctx.attrs().Str("mode", "linear");
  bool circular = mode == "circular";
  if (!circular && mode != "linear") return Status::Error("mode must be linear or circular");
  int r = cache.rank();
  if (r < 2 || upd.rank() != r) return Status::Error("past_cache and update need one rank >= 2");
  if (!NormalizeAxis(&axis, r) || axis == 0) return Status::Error("axis out of range (or 0)");
  if (cache.dtype != upd.dtype) return Status::Error("past_cache and update types differ");
  for (int d = 0; d < r; ++d) {
    if (d == axis ? upd.shape[d] > cache.shape[d] : upd.shape[d] != cache.shape[d]) {
      return Status::Error("update of shape " + rt::ShapeString(upd.shape) +
                           " does not fit past_cache of shape " + rt::ShapeString(cache.shape));
    }
  }
  int64_t B = cache.shape[0], M = cache.shape[axis], L = upd.shape[axis];
  bool has_wi = !Absent(wi);
  if (has_wi && (wi->dtype != DType::kInt64 || wi->rank() != 1 || wi->shape[0] != B)) {
    return Status::Error("write_indices must be int64 of shape (batch,)");
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, cache.dtype, cache.shape, &y));
  if (cache.ByteSize()) std::memcpy(y->data, cache.data, cache.ByteSize());
  int64_t prefix = 1, inner = 1;
  for (int d = 1; d < axis; ++d) prefix *= cache.shape[d];
  for (int d = static_cast<int>(axis) + 1; d < r; ++d) inner *= cache.shape[d];
  size_t esize = rt::DTypeBits(cache.dtype) / 8;
  if (esize == 0) return Status::Error("tensor_scatter does not support sub-byte types");
  const uint8_t* pu = upd.Data<uint8_t>();
  uint8_t* py = y->MutableData<uint8_t>();
  for (int64_t b = 0; b < B; ++b) {
    int64_t w = has_wi ? wi->Data<int64_t>()[b] : 0;
    if (w < 0 || (!circular && w > M - L) || (circular && M > 0 && w >= M)) {
      return Status::Error("write index " + std::to_string(w) + " out of range for " +
                           std::to_string(L) + " positions in a cache of " + std::to_string(M));
    }
    for (int64_t p = 0; p < prefix; ++p) {
      for (int64_t si = 0; si < L; ++si) {
        int64_t pos = circular ? (w + si) % M : w + si;
        int64_t src = ((b * prefix + p) * L + si) * inner;
        int64_t dst = ((b * prefix + p) * M + pos) * inner;
        std::memcpy(py + dst * esize, pu + src * esize, inner * esize);
      }
    }
  }
  return Status::Ok();
}

// ---- Linear attention ------------------------------------------------------------------------

Status LinearAttention(KernelContext& ctx) {
  const Tensor& tq = *ctx.input(0);
  const Tensor& tk = *ctx.input(1);
  const Tensor& tv = *ctx.input(2);
  const Tensor* tpast = ctx.input(3);
  const Tensor* tdecay = ctx.input(4);
  const Tensor* tbeta = ctx.input(5);
  const rt::AttrView& at = ctx.attrs();
  int64_t hq = at.Int("q_num_heads", 0), hkv = at.Int("kv_num_heads", 0);
  std::string_view rule = at.Str("update_rule", "gated_delta");
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (!gated && !delta && rule != "linear") return Status::Error("unknown update_rule");
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) {
    return Status::Error("q_num_heads must be a positive multiple of kv_num_heads");
  }
  if (tq.rank() != 3 || tk.rank() != 3 || tv.rank() != 3) {
    return Status::Error("query, key and value must be 3-D");
  }
  int64_t B = tq.shape[0], T = tq.shape[1];
  if (tq.shape[2] % hq != 0 || tk.shape[2] % hkv != 0 || tv.shape[2] % hkv != 0) {
    return Status::Error("hidden sizes do not split into the heads");
  }
  int64_t dk = tq.shape[2] / hq, dv = tv.shape[2] / hkv;
  if (tk.shape[0] != B || tk.shape[1] != T || tv.shape[0] != B || tv.shape[1] != T ||
      tk.shape[2] / hkv != dk) {
    return Status::Error("query, key and value shapes do not agree");
  }
  std::vector<double> q, k, v, state(B * hkv * dk * dv, 0.0), decay, beta;
  QUILT_RETURN_IF_ERROR(ReadFloats(tq, &q));
  QUILT_RETURN_IF_ERROR(ReadFloats(tk, &k));
  QUILT_RETURN_IF_ERROR(ReadFloats(tv, &v));
  DType state_dt = tq.dtype;
  if (!Absent(tpast)) {
    if (tpast->shape != Shape{B, hkv, dk, dv}) {
      return Status::Error("past_state must be (batch, kv_num_heads, dk, dv)");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*tpast, &state));
    state_dt = tpast->dtype;
    for (double& x : state) x = static_cast<float>(x);
  }
  int64_t decay_last = 0, beta_last = 0;
  if (gated) {
    if (Absent(tdecay)) return Status::Error("this update_rule needs decay");
    decay_last = tdecay->rank() == 3 ? tdecay->shape[2] : -1;
    if (tdecay->rank() != 3 || tdecay->shape[0] != B || tdecay->shape[1] != T ||
        (decay_last != hkv && decay_last != hkv * dk)) {
      return Status::Error("decay must be (batch, T, kv_heads) or (batch, T, kv_heads * dk)");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*tdecay, &decay));
  }
  if (delta) {
    if (Absent(tbeta)) return Status::Error("this update_rule needs beta");
    beta_last = tbeta->rank() == 3 ? tbeta->shape[2] : -1;
    if (tbeta->rank() != 3 || tbeta->shape[0] != B || tbeta->shape[1] != T ||
        (beta_last != hkv && beta_last != 1)) {
      return Status::Error("beta must be (batch, T, kv_heads) or (batch, T, 1)");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*tbeta, &beta));
  }
  double scale = at.Float("scale", 0.0);
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(dk));
  Tensor *ty, *ts;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, tq.dtype, {B, T, hq * dv}, &ty));
  QUILT_RETURN_IF_ERROR(ctx.Output(1, state_dt, {B, hkv, dk, dv}, &ts));
  std::vector<double> y(B * T * hq * dv), vt(dv);
  int64_t group = hq / hkv;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < hkv; ++h) {
        double* S = &state[(b * hkv + h) * dk * dv];
        const double* kt = &k[((b * T + t) * hkv + h) * dk];
        for (int64_t m = 0; m < dv; ++m) vt[m] = v[((b * T + t) * hkv + h) * dv + m];
        if (gated) {
          for (int64_t d = 0; d < dk; ++d) {
            double g = decay_last == hkv ? decay[(b * T + t) * hkv + h]
                                         : decay[((b * T + t) * hkv + h) * dk + d];
            double e = std::exp(g);
            for (int64_t m = 0; m < dv; ++m) S[d * dv + m] *= e;
          }
        }
        if (delta) {
          double bt = beta[(b * T + t) * beta_last + (beta_last == 1 ? 0 : h)];
          for (int64_t m = 0; m < dv; ++m) {
            double r = 0;
            for (int64_t d = 0; d < dk; ++d) r += S[d * dv + m] * kt[d];
            vt[m] = bt * (vt[m] - r);
          }
        }
        for (int64_t d = 0; d < dk; ++d) {
          for (int64_t m = 0; m < dv; ++m) S[d * dv + m] += kt[d] * vt[m];
        }
      }
      for (int64_t h = 0; h < hq; ++h) {
        const double* S = &state[(b * hkv + h / group) * dk * dv];
        const double* qt = &q[((b * T + t) * hq + h) * dk];
        for (int64_t m = 0; m < dv; ++m) {
          double o = 0;
          for (int64_t d = 0; d < dk; ++d) o += qt[d] * S[d * dv + m];
          y[((b * T + t) * hq + h) * dv + m] = scale * o;
        }
      }
    }
  }
  WriteFloats(ty, y);
  WriteFloats(ts, state);
  return Status::Ok();
}

// ---- Causal conv with state ------------------------------------------------------------------

Status CausalConvWithState(KernelContext& ctx) {
  const Tensor& tx = *ctx.input(0);
  const Tensor& tw = *ctx.input(1);
  const Tensor* tb = ctx.input(2);
  const Tensor* tp = ctx.input(3);
  bool silu = ctx.attrs().Str("activation", "none") == "silu";
  if (!IsFloatType(tx.dtype) || tw.dtype != tx.dtype) {
    return Status::Error("causal_conv_with_state needs float data and weight of one type");
  }
  if (tx.rank() != 3 || tw.rank() != 3) return Status::Error("data and weight must be 3-D");
  int64_t B = tx.shape[0], C = tx.shape[1], L = tx.shape[2], K = tw.shape[2];
  if (tw.shape[0] != C || tw.shape[1] != 1 || K < 1) {
    return Status::Error("weight must be (channels, 1, kernel >= 1)");
  }
  std::vector<double> x, w, bias, past;
  QUILT_RETURN_IF_ERROR(ReadFloats(tx, &x));
  QUILT_RETURN_IF_ERROR(ReadFloats(tw, &w));
  if (!Absent(tb)) {
    if (tb->shape != Shape{C} || tb->dtype != tx.dtype) return Status::Error("bias must be (C,)");
    QUILT_RETURN_IF_ERROR(ReadFloats(*tb, &bias));
  }
  if (!Absent(tp)) {
    if (tp->shape != Shape{B, C, K - 1} || tp->dtype != tx.dtype) {
      return Status::Error("past_state must be (batch, channels, kernel - 1)");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*tp, &past));
  } else {
    past.assign(B * C * (K - 1), 0.0);
  }
  Tensor *ty, *ts;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, tx.dtype, {B, C, L}, &ty));
  QUILT_RETURN_IF_ERROR(ctx.Output(1, tx.dtype, {B, C, K - 1}, &ts));
  std::vector<double> y(B * C * L), state(B * C * (K - 1)), padded(K - 1 + L);
  DType dt = tx.dtype;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t i = 0; i < K - 1; ++i) padded[i] = past[(b * C + c) * (K - 1) + i];
      for (int64_t i = 0; i < L; ++i) padded[K - 1 + i] = x[(b * C + c) * L + i];
      for (int64_t i = 0; i < L; ++i) {
        double acc = bias.empty() ? 0.0 : bias[c];
        for (int64_t j = 0; j < K; ++j) acc += padded[i + j] * w[c * K + j];
        acc = RoundTo(dt, acc);
        if (silu) acc = acc / (1.0 + std::exp(-acc));
        y[(b * C + c) * L + i] = acc;
      }
      for (int64_t i = 0; i < K - 1; ++i) {
        state[(b * C + c) * (K - 1) + i] = padded[L + i];
      }
    }
  }
  WriteFloats(ty, y);
  WriteFloats(ts, state);
  return Status::Ok();
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("nn.attention", Attention),
    Kernel("nn.rotary_embedding", RotaryEmbedding),
    Kernel("nn.swiglu", SwiGLU),
    Kernel("tensor_scatter", TensorScatter),
    Kernel("nn.linear_attention", LinearAttention),
    Kernel("nn.causal_conv_with_state", CausalConvWithState),
};

}  // namespace

std::span<const rt::KernelEntry> TransformerKernels() { return kKernels; }

}  // namespace quilt::cpu
