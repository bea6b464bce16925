// The OpenCL kernels of nn.attention, and (after it) nn.causal_conv_with_state and
// nn.rotary_embedding. nn.attention (ONNX Attention, targets/cpu/kernels/transformer.cc's
// semantics; float32, or float16 with each step the CPU rounds to float16 rounded alike): one
// work-item per query row (batch, head, position), and one per element of present_key /
// present_value (the past and the new keys / values, concatenated).
//  1. A row computes its scores against all T = P + Skv keys: the scaled dot product (query and
//     key each scaled by sqrt(scale) first, as the CPU does), softcap, then the bias (the mask
//     broadcast to (B, Hq, Sq, T), its missing keys -inf; causal, window and non-pad limits).
//  2. The biased scores go to the row of qk_matmul_output as scratch (float16 ones lose nothing
//     there: the CPU rounds them to float16 too); the row's softmax (a fully
//     masked row is zeros) weights the values into the output.
//  3. Last the qk row gets what qk_matmul_output_mode asks for (scores before softcap, after it,
//     after the bias, or the softmax), recomputed where the scratch no longer holds it.
#include <cmath>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "targets/opencl/emit_util.h"

namespace quilt::compiler::opencl {

Status EmitAttention(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  if (step.inputs.size() != 7 || step.outputs.size() != 4) {
    return Error(Where(step) + ": 7 inputs and 4 outputs expected");
  }
  for (int v : step.inputs) {
    if (v < 0) return Error(Where(step) + ": an absent input");
  }
  const std::vector<int>& q = k.In(0).dims;
  const std::vector<int>& key = k.In(1).dims;
  const std::vector<int>& value = k.In(2).dims;
  const std::vector<int>& mask = k.In(3).dims;
  const std::vector<int>& past = k.In(4).dims;
  size_t rank = q.size();
  if ((rank != 3 && rank != 4) || key.size() != rank || value.size() != rank) {
    return Error(Where(step) + ": query, key and value of rank 3 or 4 expected");
  }
  if (const auto* sp = step.attrs.Get<ir::DataType>("softmax_precision")) {
    if (*sp != ir::DataType::kFloat32 && !(*sp == ir::DataType::kFloat16 && IsHalf(k.In(0)))) {
      return Error(Where(step) + ": OpenCL computes the softmax in float32 (or float16) only");
    }
  }
  auto absent = [&](const std::vector<int>& d) {
    std::optional<int64_t> n = d.size() == 1 ? StaticDim(g, d[0]) : std::nullopt;
    return n && *n == 0;
  };
  bool has_mask = !absent(mask), has_past = !absent(past);
  if (has_mask && (mask.empty() || mask.size() > 4)) {
    return Error(Where(step) + ": attn_mask of rank 1 to 4 expected");
  }
  if (has_past && past.size() != 4) return Error(Where(step) + ": past_key of rank 4 expected");
  // The (B, H, S, D) sizes: 4-D tensors carry them, 3-D ones (B, S, H * D) split by heads.
  const int64_t* q_heads = step.attrs.Get<int64_t>("q_num_heads");
  const int64_t* kv_heads = step.attrs.Get<int64_t>("kv_num_heads");
  int B = q[0], Hq, Sq, D, Hkv, Skv, Dv;
  if (rank == 4) {
    Hq = q[1], Sq = q[2], D = q[3], Hkv = key[1], Skv = key[2], Dv = value[3];
  } else {
    if (!q_heads || !kv_heads || *q_heads < 1 || *kv_heads < 1) {
      return Error(Where(step) + ": 3-D attention needs q_num_heads and kv_num_heads");
    }
    auto split = [&](int hidden, int64_t heads) {
      g.dims.push_back({pkg::DimKind::FloorDiv, hidden, IntDim(g, heads), 0});
      return static_cast<int>(g.dims.size()) - 1;
    };
    Hq = IntDim(g, *q_heads), Sq = q[1], D = split(q[2], *q_heads);
    Hkv = IntDim(g, *kv_heads), Skv = key[1], Dv = split(value[2], *kv_heads);
  }
  int P = has_past ? past[2] : IntDim(g, 0);
  int rows = Product(g, {B, Hq, Sq}, 0);
  int T = k.Out(3).dims[3];
  int nk = Product(g, k.Out(1).dims, 0), nv = Product(g, k.Out(2).dims, 0);
  k.Long("total", AddDim(g, rows, AddDim(g, nk, nv)));
  k.Long("rows", rows);
  k.Long("nk", nk);
  k.Long("B", B);
  k.Long("Hq", Hq);
  k.Long("Sq", Sq);
  k.Long("D", D);
  k.Long("Hkv", Hkv);
  k.Long("Skv", Skv);
  k.Long("Dv", Dv);
  k.Long("P", P);
  k.Long("T", T);
  k.Long("nnp", Product(g, k.In(6).dims, 0));
  std::vector<int> m(4, -1);
  if (has_mask) {
    for (size_t j = 0; j < mask.size(); ++j) m[4 - mask.size() + j] = mask[j];
  }
  for (size_t j = 0; j < 4; ++j) k.Long("m" + std::to_string(j), m[j] < 0 ? IntDim(g, 1) : m[j]);

  const double* scale_attr = step.attrs.Get<double>("scale");
  std::optional<int64_t> d_static = StaticDim(g, D);
  std::string sq_scale;
  if (scale_attr) {
    sq_scale = FloatLiteral(std::sqrt(*scale_attr));
  } else if (d_static && *d_static > 0) {
    sq_scale = FloatLiteral(std::sqrt(1.0 / std::sqrt(static_cast<double>(*d_static))));
  } else {
    sq_scale = "sqrt(1.0f / sqrt((float)D))";
  }
  const bool* causal_attr = step.attrs.Get<bool>("is_causal");
  bool causal = causal_attr && *causal_attr;
  const int64_t* left_attr = step.attrs.Get<int64_t>("left_window_size");
  const int64_t* right_attr = step.attrs.Get<int64_t>("right_window_size");
  int64_t left = left_attr ? *left_attr : -1, right = right_attr ? *right_attr : -1;
  const double* softcap_attr = step.attrs.Get<double>("softcap");
  double softcap = softcap_attr ? *softcap_attr : 0.0;
  const int64_t* mode_attr = step.attrs.Get<int64_t>("qk_matmul_output_mode");
  int64_t mode = mode_attr ? *mode_attr : 0;
  if (mode < 0 || mode > 3) return Error(Where(step) + ": qk_matmul_output_mode must be 0 to 3");

  // float16 data: every step the CPU rounds to float16 (as ONNX's numpy reference computes) is
  // rounded here too (R); the softmax's steps as well unless softmax_precision is float32.
  const bool half = IsHalf(k.In(0));
  const ir::DataType* sp = step.attrs.Get<ir::DataType>("softmax_precision");
  const bool sp_half = half && (!sp || *sp == ir::DataType::kFloat16);
  auto R = [&](const std::string& x) { return RoundHalf(half, x); };
  const std::string pointee = Pointee(half);

  // Index expressions of the query, key and value elements, 4-D or 3-D.
  auto at4 = [&](const std::string& b, const std::string& h, const std::string& s,
                 const std::string& d, const std::string& H, const std::string& S,
                 const std::string& Dn) {
    if (rank == 4)
      return "((" + b + " * " + H + " + " + h + ") * " + S + " + " + s + ") * " + Dn + " + " + d;
    return "((" + b + " * " + S + " + " + s + ") * " + H + " + " + h + ") * " + Dn + " + " + d;
  };
  // The present key / value element (b, h, t, d): the past's (input `past_x`) for t < P, else
  // the new one's (input `x`).
  auto present = [&](size_t past_x, size_t x, const std::string& Dn, const std::string& b,
                     const std::string& h, const std::string& t, const std::string& d) {
    std::string fresh = k.Read(x, at4(b, h, "(" + t + " - P)", d, "Hkv", "Skv", Dn));
    if (!has_past) return fresh;
    return "(" + t + " < P ? " +
           k.Read(past_x, "((" + b + " * Hkv + " + h + ") * P + " + t + ") * " + Dn + " + " + d) +
           " : " + fresh + ")";
  };
  // Declares s0 (the scaled scores of key j), s1 (after softcap), bv (the bias) and s2 (biased).
  std::string score = "    float s0 = 0.0f;\n    for (long d = 0; d < D; ++d) {\n";
  score += "      float qv = " + R(k.Read(0, at4("b", "h", "i", "d", "Hq", "Sq", "D")) + " * sq") +
           ";\n";
  score += "      float kv = " + R(present(4, 1, "D", "b", "hk", "j", "d") + " * sq") + ";\n";
  score += "      s0 += qv * kv;\n    }\n";
  if (half) score += "    s0 = " + R("s0") + ";\n";
  std::string cap = FloatLiteral(softcap);
  score += softcap > 0
               ? "    float s1 = " + R(R("tanh(" + R("s0 / " + cap) + ")") + " * " + cap) + ";\n"
               : "    float s1 = s0;\n";
  score += "    float bv = 0.0f;\n";
  if (has_mask) {
    score +=
        "    bv = j < m3 ? " + k.Read(3, "b * ms0 + h * ms1 + i * ms2 + j") + " : -INFINITY;\n";
  }
  std::string allowed = "j < T";
  if (causal) allowed += " && j <= i + off";
  if (left >= 0) allowed += " && off + i - j <= " + Int(left);
  if (right >= 0) allowed += " && j - (off + i) <= " + Int(right);
  allowed += " && (nnp == 0 || j < np)";
  score += "    if (!(" + allowed + ")) bv = -INFINITY;\n    float s2 = " + R("s1 + bv") + ";\n";
  // The softmax's weight of key j (its biased score in the qk row): the row's maximum `mx` and
  // sum `sum` known.
  const std::string qk_j = LoadFloat(half, "qk", "j");
  const std::string e_j = RoundHalf(sp_half, "exp(" + RoundHalf(sp_half, qk_j + " - mx") + ")");
  const std::string p_j = R(e_j + " / sum");

  std::string body = R"(  long t = get_global_id(0);
  if (t >= total) return;
  if (t >= rows) {
    long e = t - rows;
    bool is_key = e < nk;
)";
  body += "    __global " + pointee + "* out = is_key ? y1 : y2;\n";
  body += R"(    long Dn = is_key ? D : Dv;
    if (!is_key) e -= nk;
    long d = e % Dn, tt = e / Dn % T, h = e / Dn / T % Hkv, b = e / Dn / T / Hkv;
)";
  body += "    " +
          StoreFloat(half, "out", "e",
                     "is_key ? " + present(4, 1, "D", "b", "h", "tt", "d") + " : " +
                         present(5, 2, "Dv", "b", "h", "tt", "d")) +
          ";\n    return;\n  }\n";
  body += "  const float sq = " + R(sq_scale) + ";\n";
  body += R"(  long i = t % Sq, h = t / Sq % Hq, b = t / Sq / Hq;
  long hk = h / (Hq / Hkv);
  long np = nnp > 0 ? (long)x6[b] : 0;
)";
  body += std::string("  long off = ") + (has_past ? "P" : "nnp > 0 ? np - Sq : 0") + ";\n";
  body +=
      "  long ms2 = m2 == 1 ? 0 : m3, ms1 = m1 == 1 ? 0 : m2 * m3, ms0 = m0 == 1 ? 0 : m1 * "
      "m2 * m3;\n";
  body += "  __global " + pointee + "* qk = y3 + t * T;\n";
  body += "  float mx = -INFINITY;\n  bool all_masked = true;\n  for (long j = 0; j < T; ++j) {\n" +
          score + "    " + StoreFloat(half, "qk", "j", "s2") + ";\n";
  body += R"(    if (!(isinf(bv) && bv < 0.0f)) all_masked = false;
    mx = mx < s2 ? s2 : mx;
  }
  if (isinf(mx) && mx < 0.0f) mx = 0.0f;
  float sum = 0.0f;
)";
  body += "  for (long j = 0; j < T; ++j) sum += " + e_j + ";\n";
  if (sp_half) body += "  sum = " + RoundHalf(true, "sum") + ";\n";
  body += R"(  if (sum == 0.0f) sum = 1.0f;
  for (long dv = 0; dv < Dv; ++dv) {
    float acc = 0.0f;
    for (long j = 0; j < T && !all_masked; ++j) {
)";
  body += "      float p = " + p_j + ";\n";
  body += "      acc += p * " + present(5, 2, "Dv", "b", "hk", "j", "dv") + ";\n    }\n";
  body += "    " + k.Write(0, at4("b", "h", "i", "dv", "Hq", "Sq", "Dv"), "acc") + ";\n  }\n";
  if (mode == 3) {
    body += "  for (long j = 0; j < T; ++j) " +
            StoreFloat(half, "qk", "j", "all_masked ? 0.0f : " + p_j) + ";\n";
  } else if (mode != 2) {
    body += "  for (long j = 0; j < T; ++j) {\n" + score + "    " +
            StoreFloat(half, "qk", "j", mode == 0 ? "s0" : "s1") + ";\n  }\n";
  }
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// nn.causal_conv_with_state (ONNX CausalConvWithState): a depthwise causal conv1d over the past
// state followed by the data, then silu when asked, and the last K - 1 positions as the present
// state; one work-item per element of either output, as targets/cpu/kernels/transformer.cc
// computes them (an absent bias or past state is none / zeros).
Status EmitCausalConv(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  if (step.inputs.size() != 4 || step.outputs.size() != 2) {
    return Error(Where(step) + ": 4 inputs and 2 outputs expected");
  }
  for (int v : step.inputs) {
    if (v < 0) return Error(Where(step) + ": an absent input");
  }
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& w = k.In(1).dims;
  if (x.size() != 3 || w.size() != 3) return Error(Where(step) + ": 3-D data and weight expected");
  auto absent = [&](const std::vector<int>& d) {
    std::optional<int64_t> n = d.size() == 1 ? StaticDim(g, d[0]) : std::nullopt;
    return n && *n == 0;
  };
  bool bias = !absent(k.In(2).dims), past = !absent(k.In(3).dims);
  const std::string* act = step.attrs.Get<std::string>("activation");
  bool silu = act && *act == "silu";
  int ny = Product(g, x, 0);
  k.Long("total", AddDim(g, ny, Product(g, k.Out(1).dims, 0)));
  k.Long("ny", ny);
  k.Long("C", x[1]);
  k.Long("L", x[2]);
  k.Long("K", w[2]);
  std::string body = R"(  long t = get_global_id(0);
  if (t >= total) return;
  bool state = t >= ny;
  long e = state ? t - ny : t;
  long len = state ? K - 1 : L;
  long i = e % len, bc = e / len, c = bc % C;
)";
  // The padded sequence's position p: the past state's, then the data's.
  std::string past_at = past ? k.Read(3, "bc * (K - 1) + p") : "0.0f";
  body += "#define Q_PADDED(p) ((p) < K - 1 ? " + past_at + " : " +
          k.Read(0, "bc * L + (p) - (K - 1)") + ")\n";
  body += "  if (state) {\n    long p = L + i;\n    " + k.Write(1, "e", "Q_PADDED(p)") +
          ";\n    return;\n  }\n";
  body += "  float acc = " + (bias ? k.Read(2, "c") : std::string("0.0f")) + ";\n";
  body += "  for (long j = 0; j < K; ++j) {\n    long p = i + j;\n    acc += Q_PADDED(p) * " +
          k.Read(1, "c * K + j") + ";\n  }\n#undef Q_PADDED\n";
  // float16: the sum rounded before the activation, as the CPU rounds it.
  if (IsHalf(k.In(0))) body += "  acc = " + RoundHalf(true, "acc") + ";\n";
  if (silu) body += "  acc = acc / (1.0f + exp(-acc));\n";
  body += "  " + k.Write(0, "e", "acc") + ";\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// nn.rotary_embedding (ONNX RotaryEmbedding), as targets/cpu/kernels/transformer.cc computes it:
// one work-item per element; the first R features of each head rotate in pairs (x[i],
// x[i + R/2]) (interleaved: (x[2i], x[2i + 1])) by the cache row of the position (position_ids
// when given, clamped to the cache, else the (batch, position) row); the rest pass through.
Status EmitRotaryEmbedding(GraphSpec& g, StepSpec& step, const std::string& name,
                           std::string* code) {
  KernelText k(g, step);
  if (step.inputs.size() != 4) return Error(Where(step) + ": 4 inputs expected");
  for (int v : step.inputs) {
    if (v < 0) return Error(Where(step) + ": an absent input");
  }
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& pos = k.In(3).dims;
  std::optional<int64_t> npos = pos.size() == 1 ? StaticDim(g, pos[0]) : std::nullopt;
  bool has_pos = !(npos && *npos == 0);
  const int64_t* heads = step.attrs.Get<int64_t>("num_heads");
  int B = x[0], H, S, D;
  if (x.size() == 4) {
    H = x[1], S = x[2], D = x[3];
  } else if (x.size() == 3 && heads && *heads > 0) {
    H = IntDim(g, *heads), S = x[1];
    g.dims.push_back({pkg::DimKind::FloorDiv, x[2], IntDim(g, *heads), 0});
    D = static_cast<int>(g.dims.size()) - 1;
  } else {
    return Error(Where(step) + ": 4-D data, or 3-D with num_heads, expected");
  }
  const int64_t* r_attr = step.attrs.Get<int64_t>("rotary_embedding_dim");
  const bool* inter_attr = step.attrs.Get<bool>("interleaved");
  bool interleaved = inter_attr && *inter_attr;
  k.Long("n", Product(g, x, 0));
  k.Long("B", B);
  k.Long("H", H);
  k.Long("S", S);
  k.Long("D", D);
  k.Long("rows", k.In(1).dims.empty() ? IntDim(g, 1) : k.In(1).dims[0]);
  std::string body = "  long t = get_global_id(0);\n  if (t >= n) return;\n";
  body += x.size() == 4
              ? "  long d = t % D, s = t / D % S, h = t / (D * S) % H, b = t / (D * S * H);\n"
              : "  long d = t % D, h = t / D % H, s = t / (D * H) % S, b = t / (D * H * S);\n";
  body += "  long R = " + Int(r_attr ? *r_attr : 0) + ";\n  if (R == 0) R = D;\n";
  body += "  if (d >= R) {\n    " + k.Write(0, "t", k.Read(0, "t")) +
          ";\n    return;\n  }\n  long hr = R / 2;  // (half is an OpenCL type)\n";
  body += interleaved
              ? "  bool first = d % 2 == 0;\n  long i = d / 2, other = first ? d + 1 : d - 1;\n"
              : "  bool first = d < hr;\n  long i = first ? d : d - hr, other = first ? "
                "d + hr : d - hr;\n";
  if (has_pos) {
    // A position id outside the cache fails the run, as on the CPU.
    k.Checked();
    body += "  long pos = (long)x3[b * S + s];\n" +
            BadIndex("pos", "rows", k.Write(0, "t", "0.0f"), false) + "  long row = pos * hr;\n";
  } else {
    body += "  long row = (b * S + s) * hr;\n";
  }
  body += "  float c = " + k.Read(1, "row + i") + ", sn = " + k.Read(2, "row + i") + ";\n";
  body += "  float mine = " + k.Read(0, "t") + ", theirs = " + k.Read(0, "t + other - d") + ";\n";
  // float16: each product rounded, as the CPU rounds it.
  auto R = [&](const std::string& x) { return RoundHalf(IsHalf(k.In(0)), x); };
  body += "  " +
          k.Write(0, "t",
                  "first ? " + R("c * mine") + " - " + R("sn * theirs") + " : " + R("sn * theirs") +
                      " + " + R("c * mine")) +
          ";\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

}  // namespace quilt::compiler::opencl
