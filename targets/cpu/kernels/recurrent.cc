// Recurrent layers: RNN, GRU, LSTM (ONNX semantics, every output), and deformable convolution.
//
// Everything is computed in double from the inputs read as double, and stored in the element
// type at the end: the reference kernels, and the quantized LSTM's kernel but for its default
// cell, in float. The float32 RNN, GRU and LSTM run recurrent_fast.cc, tested against these.
#include "targets/cpu/kernels/recurrent.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/int8_gemm.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

using rnn::Act;
using rnn::Activation;
using rnn::Cell;
using rnn::ParseActivation;
using rnn::StandardLstmColumn;

// ---- RNN / GRU / LSTM ------------------------------------------------------------------------

// The quantized weights of nn.dynamic_quantize_lstm, less their zero points, as [dir][row j]
// [col], with a scale per direction and row (a float32, multiplied by the activation's scale).
struct QuantWeights {
  std::vector<int32_t> w;
  std::vector<float> scale;
  std::vector<int32_t> zp;  // [dir][row j]
};

// Reads weight `q` ([dirs, cols, rows] int8 or uint8, stored transposed) with its scale and zero
// point ([dirs] or [dirs, rows]) into `out`; its values as well where `values` (the 8-bit GEMM
// packs them from `q` itself: four bytes a value here, for two weights of 2 x 512 x 2048, were
// 16 MB of a quantized LSTM's peak memory that nothing read).
Status ReadQuantWeights(const Tensor& q, const Tensor& scale, const Tensor& zp, int64_t dirs,
                        int64_t rows, int64_t cols, const char* name, QuantWeights* out,
                        bool values = true) {
  std::string n(name);
  if (q.dtype != DType::kInt8 && q.dtype != DType::kUInt8) {
    return Status::Error(n + " must be int8 or uint8");
  }
  if (q.shape != Shape{dirs, cols, rows}) {
    return Status::Error(n + " must have shape " + rt::ShapeString(Shape{dirs, cols, rows}) +
                         ", got " + rt::ShapeString(q.shape));
  }
  if (scale.dtype != DType::kFloat32) return Status::Error(n + "_scale must be float32");
  if (zp.dtype != q.dtype) return Status::Error(n + "_zero_point must have " + n + "'s type");
  auto per_row = [&](const Tensor& t, const char* what, bool* by_row) -> Status {
    *by_row = t.shape == Shape{dirs, rows};
    if (!*by_row && t.shape != Shape{dirs}) {
      return Status::Error(n + what + " must have shape " + rt::ShapeString(Shape{dirs}) + " or " +
                           rt::ShapeString(Shape{dirs, rows}));
    }
    return Status::Ok();
  };
  bool scale_by_row = false, zp_by_row = false;
  QUILT_RETURN_IF_ERROR(per_row(scale, "_scale", &scale_by_row));
  QUILT_RETURN_IF_ERROR(per_row(zp, "_zero_point", &zp_by_row));
  auto value = [&](const Tensor& t, int64_t i) -> int32_t {
    return t.dtype == DType::kInt8 ? t.Data<int8_t>()[i] : t.Data<uint8_t>()[i];
  };
  out->w.assign(values ? dirs * rows * cols : 0, 0);
  out->scale.resize(dirs * rows);
  out->zp.resize(dirs * rows);
  for (int64_t d = 0; d < dirs; ++d) {
    for (int64_t j = 0; j < rows; ++j) {
      out->scale[d * rows + j] = scale.Data<float>()[scale_by_row ? d * rows + j : d];
      int32_t z = value(zp, zp_by_row ? d * rows + j : d);
      out->zp[d * rows + j] = z;
      for (int64_t c = 0; c < cols && values; ++c) {
        out->w[(d * rows + j) * cols + c] = value(q, (d * cols + c) * rows + j) - z;
      }
    }
  }
  return Status::Ok();
}

// One quantized weight (W or R) for Int8Gemm: per direction, its [cols][rows] bytes as int8
// panels (a uint8 weight less 128), each row's sum of them and its zero point moved likewise.
struct Int8Weight {
  std::vector<Int8Panels> panels;  // [dir]
  std::vector<int64_t> sums, zp;   // [dir][row j]
};

Int8Weight ToInt8Weight(const Tensor& q, const QuantWeights& read, int64_t dirs, int64_t rows,
                        int64_t cols, rt::ThreadPool* pool) {
  Int8Weight out;
  bool flip = q.dtype == DType::kUInt8;
  out.panels.resize(static_cast<size_t>(dirs));
  out.sums.reserve(static_cast<size_t>(dirs * rows));
  for (int64_t d = 0; d < dirs; ++d) {
    PackInt8Panels(static_cast<const uint8_t*>(q.data) + d * cols * rows, cols, rows, rows, flip,
                   &out.panels[d], pool);
    std::vector<int64_t> sums;
    Int8ColumnSums(out.panels[d], false, &sums);
    out.sums.insert(out.sums.end(), sums.begin(), sums.end());
  }
  for (int32_t z : read.zp) out.zp.push_back(z - (flip ? 128 : 0));
  return out;
}

// The weights as the fast products read them, kept in the step's cache when they are
// constants: for Int8Gemm (`int8`), or as floats (exact: 9-bit integers) for ExactIntDots.
struct QuantFastWeights {
  bool int8 = false;
  Int8Weight w8, r8;
  std::vector<float> w, r;
  std::vector<float> w_scale, r_scale;
};

std::shared_ptr<QuantFastWeights> ToFastWeights(const Tensor& tw, const Tensor& tr,
                                                const QuantWeights& w, const QuantWeights& r,
                                                int64_t dirs, int64_t rows, bool int8,
                                                rt::ThreadPool* pool) {
  auto out = std::make_shared<QuantFastWeights>();
  out->int8 = int8;
  if (int8) {
    out->w8 = ToInt8Weight(tw, w, dirs, rows, tw.shape[1], pool);
    out->r8 = ToInt8Weight(tr, r, dirs, rows, tr.shape[1], pool);
  } else {
    out->w.assign(w.w.begin(), w.w.end());
    out->r.assign(r.w.begin(), r.w.end());
  }
  out->w_scale = w.scale;
  out->r_scale = r.scale;
  return out;
}

// sums[q * cols + j] = sum over i < k of a[q * k + i] * b[j * k + i], for `rows` rows of a and
// `cols` rows of b whose values are integers of magnitude at most 255 (8-bit values less zero
// points of their type): float GEMMs over slabs of kEightBitExactTerms products, each slab's
// sums exact, added as integers. Bit for bit the integer dot products.
void ExactIntDots(const float* a, int64_t rows, const float* b, int64_t cols, int64_t k,
                  int64_t* sums, rt::ThreadPool* pool) {
  std::fill(sums, sums + rows * cols, int64_t{0});
  thread_local std::vector<float> kept_part;  // this thread's, kept from step to step
  std::vector<float>& part = kept_part;
  part.assign(static_cast<size_t>(rows * cols), 0.0f);
  for (int64_t p0 = 0; p0 < k; p0 += kEightBitExactTerms) {
    int64_t ks = std::min(kEightBitExactTerms, k - p0);
    // part (cols x rows) = b's slab (cols x ks) times a's slab transposed (ks x rows).
    Sgemm(cols, rows, ks, b + p0, k, TransposedB(a + p0, ks, k), part.data(), rows, pool);
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t q = 0; q < rows; ++q) {
        sums[q * cols + j] += static_cast<int64_t>(part[static_cast<size_t>(j * rows + q)]);
      }
    }
  }
}

// Activations quantized to uint8 (`bytes`, with their zero point), less their zero point (`q`),
// with their scale.
struct QuantActs {
  std::vector<uint8_t> bytes;
  uint8_t zp = 0;
  std::vector<int32_t> q;
  float scale = 1;
};

void QuantizeActs(const float* v, size_t n, QuantActs* out) {
  out->bytes.resize(n);
  DynamicQuantizeU8(v, static_cast<int64_t>(n), out->bytes.data(), &out->scale, &out->zp);
  out->q.resize(n);
  for (size_t i = 0; i < n; ++i) out->q[i] = static_cast<int32_t>(out->bytes[i]) - out->zp;
}

void QuantizeActs(const double* v, size_t n, QuantActs* out) {
  thread_local std::vector<float> kept_f;  // this thread's, kept from step to step
  std::vector<float>& f = kept_f;
  f.assign(v, v + n);
  QuantizeActs(f.data(), n, out);
}

// sums[q * rows + j] = sum over i < k of (a[q][i] - a.zp) * (w[i][j] - w.zp[j]) for `count` rows
// of quantized activations (k bytes each) and direction d of an Int8Weight (k x rows): Int8Gemm's
// int32 products with the zero points' terms added.
void Int8Dots(const QuantActs& a, int64_t count, int64_t k, const Int8Weight& w, int64_t d,
              int64_t rows, int64_t* sums, rt::ThreadPool* pool) {
  // This thread's, kept from step to step (a cell runs this at every time step).
  thread_local Int8Rows kept_packed;
  thread_local std::vector<int64_t> kept_a_sums;
  thread_local std::vector<int32_t> kept_prod;
  Int8Rows& packed = kept_packed;
  std::vector<int64_t>& a_sums = kept_a_sums;
  std::vector<int32_t>& prod = kept_prod;
  PackInt8Rows(a.bytes.data(), count, k, k, false, &packed);
  Int8RowSums(packed, true, &a_sums);
  prod.assign(static_cast<size_t>(count * rows), 0);
  Int8Gemm(packed, w.panels[d], true, prod.data(), rows, pool);
  int64_t az = a.zp;
  const int64_t* w_sums = w.sums.data() + d * rows;
  const int64_t* w_zp = w.zp.data() + d * rows;
  for (int64_t q = 0; q < count; ++q) {
    for (int64_t j = 0; j < rows; ++j) {
      sums[q * rows + j] =
          prod[q * rows + j] - az * w_sums[j] - w_zp[j] * a_sums[q] + k * az * w_zp[j];
    }
  }
}

// The RNN, GRU and LSTM cells of ONNX, and with kQuant com.microsoft DynamicQuantizeLSTM (its
// weights and their quantization parameters as inputs 1, 2 and 8 to 11). Steps run in time order
// for the whole batch at once, as the quantized form needs. Its ranges are ONNX Runtime's: X's
// over the steps before the longest sequence length, the hidden state's before each step over
// the sequences that ran the step before (one that ended earlier counts as zeros). kFast: the
// quantized form's integer products on the 8-bit GEMM or the float GEMM (ExactIntDots): the same
// integers, the input's for every step at once, constant weights converted once into the step's
// cache; an LSTM cell with ONNX's default activations, no clip and no coupled gates in float (as
// ONNX Runtime computes it: its hidden state, quantized again at every step, then differs from
// the reference's where a rounding moves it across a quantization step), any other the
// reference's, bit for bit.
// Recurrent's per-run lists, kept by the thread that runs it, and a direction's by the thread that
// runs the direction: a run in steady state allocates none of them.
struct RecurrentLists {
  std::vector<double> x, w, r, b, h0, c0, p, y, yh, yc, state;
  std::vector<int64_t> lens;
  std::vector<float> fx;
  std::vector<Activation> acts;
  QuantWeights wq, rq;
  QuantActs qx;
};
struct DirectionLists {
  std::vector<double> gx, gh, hn, cn, rg, h_range, hs, cs;
  QuantActs qh;
  std::vector<int64_t> xdots, hdots;
  std::vector<float> fh, hf, cf, range, bias, x_scale, peep, gx_f, gh_f;
};

template <Cell kCell, bool kQuant = false, bool kFast = false>
Status Recurrent(KernelContext& ctx) {
  constexpr int kGates = kCell == Cell::kLstm ? 4 : kCell == Cell::kGru ? 3 : 1;
  constexpr int kActs = kCell == Cell::kLstm ? 3 : kCell == Cell::kGru ? 2 : 1;
  const Tensor& tx = *ctx.input(0);
  const Tensor& tw = *ctx.input(1);
  const Tensor& tr = *ctx.input(2);
  const Tensor* tb = ctx.input(3);
  const Tensor* tseq = ctx.input(4);
  const Tensor* th0 = ctx.input(5);
  const Tensor* tc0 = kCell == Cell::kLstm ? ctx.input(6) : nullptr;
  const Tensor* tp = kCell == Cell::kLstm ? ctx.input(7) : nullptr;
  const rt::AttrView& at = ctx.attrs();
  std::string_view direction = at.Str("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return Status::Error("direction must be forward, reverse or bidirectional");
  }
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t layout = at.Int("layout", 0);
  if (layout != 0 && layout != 1) return Status::Error("layout must be 0 or 1");
  if (tx.rank() != 3 || tw.rank() != 3 || tr.rank() != 3) {
    return Status::Error("X, W and R must be 3-D");
  }
  int64_t S = layout == 0 ? tx.shape[0] : tx.shape[1];
  int64_t N = layout == 0 ? tx.shape[1] : tx.shape[0];
  int64_t I = tx.shape[2];
  int64_t H = at.Has("hidden_size") ? at.Int("hidden_size") : tr.shape[kQuant ? 1 : 2];
  if (H <= 0) return Status::Error("hidden_size must be positive");
  // R holds H as a dim: a hidden_size that differs is refused before sizes are computed from it.
  if (H != tr.shape[kQuant ? 1 : 2]) {
    return Status::Error("hidden_size " + std::to_string(H) + " does not match R " +
                         rt::ShapeString(tr.shape));
  }
  thread_local RecurrentLists kept;  // this thread's (see RecurrentLists)
  RecurrentLists& lists = kept;
  std::vector<double>&x = lists.x, &w = lists.w, &r = lists.r;
  QuantWeights &wq = lists.wq, &rq = lists.rq;
  std::shared_ptr<const QuantFastWeights> fw;  // kFast
  if constexpr (kQuant) {
    if (tx.dtype != DType::kFloat32) return Status::Error("X must be float32");
    if (layout != 0) return Status::Error("layout must be 0");
    // The weights' values where a product reads them as read here (the reference's loops, the
    // exact float GEMMs), their scales and zero points alone for the 8-bit GEMM.
    auto read = [&](bool values = true) -> Status {
      QUILT_RETURN_IF_ERROR(ReadQuantWeights(tw, *ctx.input(8), *ctx.input(9), dirs, kGates * H, I,
                                             "W", &wq, values));
      return ReadQuantWeights(tr, *ctx.input(10), *ctx.input(11), dirs, kGates * H, H, "R", &rq,
                              values);
    };
    if constexpr (kFast) {
      // Int8Gemm where the CPU has it and no sum can overflow an int32 lane.
      bool int8 = HasInt8Dot() && I <= kInt8MaxTerms && H <= kInt8MaxTerms;
      auto make = [&] {
        return ToFastWeights(tw, tr, wq, rq, dirs, kGates * H, int8, ctx.thread_pool());
      };
      bool constant = ctx.cache() != nullptr;
      for (int i : {1, 2, 8, 9, 10, 11}) constant &= ctx.constant_input(i);
      if (constant) {
        Status st = Status::Ok();
        fw = ctx.cache()->Get<QuantFastWeights>([&]() -> std::shared_ptr<QuantFastWeights> {
          st = read(!int8);
          return st.ok() ? make() : nullptr;
        });
        // A refused weight is refused again on every run (nothing was kept); a cache made for
        // the other path is read as this one reads it, for this run.
        if (!fw || fw->int8 != int8) {
          QUILT_RETURN_IF_ERROR(st.ok() ? read(!int8) : st);
          fw = make();
        }
      } else {
        QUILT_RETURN_IF_ERROR(read(!int8));
        fw = make();
      }
      wq.scale = fw->w_scale;
      rq.scale = fw->r_scale;
    } else {
      QUILT_RETURN_IF_ERROR(read());
    }
  } else {
    if (tw.dtype != tx.dtype || tr.dtype != tx.dtype) {
      return Status::Error("X, W and R must have one element type");
    }
    if (tr.shape != Shape{dirs, kGates * H, H} || tw.shape != Shape{dirs, kGates * H, I}) {
      return Status::Error("W " + rt::ShapeString(tw.shape) + " and R " +
                           rt::ShapeString(tr.shape) +
                           " do not match the direction, gates, hidden size and input size");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(tw, &w));
    QUILT_RETURN_IF_ERROR(ReadFloats(tr, &r));
  }
  auto names = at.Strs("activations");
  auto alphas = at.Floats("activation_alpha"), betas = at.Floats("activation_beta");
  if (names.size() != static_cast<size_t>(kActs * dirs) || alphas.size() != names.size() ||
      betas.size() != names.size()) {
    return Status::Error("activations, activation_alpha and activation_beta need " +
                         std::to_string(kActs * dirs) + " entries");
  }
  std::vector<Activation>& acts = lists.acts;
  acts.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    QUILT_RETURN_IF_ERROR(ParseActivation(names[i], alphas[i], betas[i], &acts[i]));
  }
  bool has_clip = at.Has("clip");
  double clip = at.Float("clip", 0.0);
  bool input_forget = kCell == Cell::kLstm && at.Bool("input_forget", false);
  bool lbr = kCell == Cell::kGru && at.Bool("linear_before_reset", false);

  std::vector<double>&b = lists.b, &h0 = lists.h0, &c0 = lists.c0, &p = lists.p;
  b.assign(dirs * 2 * kGates * H, 0.0);
  h0.assign(dirs * N * H, 0.0);
  c0.assign(dirs * N * H, 0.0);
  p.assign(dirs * 3 * H, 0.0);
  QUILT_RETURN_IF_ERROR(ReadFloats(tx, &x));
  if (!Absent(tb)) {
    if (tb->shape != Shape{dirs, 2 * kGates * H} || tb->dtype != tx.dtype) {
      return Status::Error("B must be [num_directions, 2 * gates * hidden_size]");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*tb, &b));
  }
  Shape state_shape = layout == 0 ? Shape{dirs, N, H} : Shape{N, dirs, H};
  // States are kept as [dir][batch][hidden] whatever the layout.
  auto read_state = [&](const Tensor* t, std::vector<double>* out, const char* what) -> Status {
    if (Absent(t)) return Status::Ok();
    if (t->shape != state_shape || t->dtype != tx.dtype) {
      return Status::Error(std::string(what) + " must have shape " + rt::ShapeString(state_shape));
    }
    std::vector<double>& v = lists.state;
    QUILT_RETURN_IF_ERROR(ReadFloats(*t, &v));
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t h = 0; h < H; ++h) {
          int64_t src = layout == 0 ? (d * N + n) * H + h : (n * dirs + d) * H + h;
          (*out)[(d * N + n) * H + h] = v[src];
        }
      }
    }
    return Status::Ok();
  };
  QUILT_RETURN_IF_ERROR(read_state(th0, &h0, "initial_h"));
  QUILT_RETURN_IF_ERROR(read_state(tc0, &c0, "initial_c"));
  if (!Absent(tp)) {
    if (tp->shape != Shape{dirs, 3 * H} || tp->dtype != tx.dtype) {
      return Status::Error("P must be [num_directions, 3 * hidden_size]");
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*tp, &p));
  }
  std::vector<int64_t>& lens = lists.lens;
  lens.assign(N, S);
  if (!Absent(tseq)) {
    if (tseq->dtype != DType::kInt32 || tseq->shape != Shape{N}) {
      return Status::Error("sequence_lens must be int32 of shape [batch_size]");
    }
    for (int64_t n = 0; n < N; ++n) {
      lens[n] = tseq->Data<int32_t>()[n];
      if (lens[n] < 0 || lens[n] > S) {
        return Status::Error("sequence length " + std::to_string(lens[n]) + " is outside [0, " +
                             std::to_string(S) + "]");
      }
    }
  }
  Shape y_shape = layout == 0 ? Shape{S, dirs, N, H} : Shape{N, S, dirs, H};
  Tensor *ty, *tyh, *tyc = nullptr;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, tx.dtype, y_shape, &ty));
  QUILT_RETURN_IF_ERROR(ctx.Output(1, tx.dtype, state_shape, &tyh));
  if (kCell == Cell::kLstm) QUILT_RETURN_IF_ERROR(ctx.Output(2, tx.dtype, state_shape, &tyc));
  std::vector<double>&y = lists.y, &yh = lists.yh, &yc = lists.yc;
  y.assign(S * dirs * N * H, 0.0);
  yh.resize(dirs * N * H);
  yc.resize(dirs * N * H);
  auto clipped = [&](double v) { return has_clip ? std::min(clip, std::max(-clip, v)) : v; };
  auto xoff = [&](int64_t t, int64_t n) { return layout == 0 ? (t * N + n) * I : (n * S + t) * I; };
  // The quantized form quantizes X once, the steps [0, longest) of layout 0.
  QuantActs& qx = lists.qx;
  int64_t longest = N > 0 ? *std::max_element(lens.begin(), lens.end()) : 0;
  // kFast: the quantized input as floats.
  std::vector<float>& fx = lists.fx;
  if constexpr (kQuant) {
    QuantizeActs(x.data(), static_cast<size_t>(longest * N * I), &qx);
    if constexpr (kFast) {
      if (!fw->int8) fx.assign(qx.q.begin(), qx.q.end());
    }
  }
  // Direction d, its products on `pool`'s threads.
  auto run_direction = [&](int64_t d, rt::ThreadPool* pool) {
    // Rows are addressed as data() + offset, not &v[offset]: with an input or hidden size of 0
    // the vectors are empty.
    // The direction's lists: the thread's that runs it (a worker's, where the directions run side
    // by side).
    thread_local DirectionLists kept_direction;
    DirectionLists& dl = kept_direction;
    std::vector<double>&gx = dl.gx, &gh = dl.gh, &hn = dl.hn, &cn = dl.cn, &rg = dl.rg;
    gx.resize(kGates * H);
    gh.resize(kGates * H);
    hn.resize(H);
    cn.resize(H);
    rg.resize(H);
    QuantActs& qh = dl.qh;
    std::vector<double>& h_range = dl.h_range;
    // kFast: the integer products of the direction: the input's for every step ([t][n][gate
    // row]), the hidden state's for the current step ([n][gate row]); the quantized hidden
    // state as floats.
    std::vector<int64_t>&xdots = dl.xdots, &hdots = dl.hdots;
    std::vector<float>& fh = dl.fh;
    (void)pool;
    bool reverse = direction == "reverse" || d == 1;
    const double* Wb = b.data() + d * 2 * kGates * H;
    const double* Rb = Wb + kGates * H;
    const double* P = p.data() + d * 3 * H;
    const Activation& f = acts[d * kActs];
    const Activation& g = acts[d * kActs + (kActs > 1 ? 1 : 0)];
    const Activation& hact = acts[d * kActs + (kActs > 2 ? 2 : 0)];
    // The states of the whole batch, [batch][hidden].
    std::vector<double>&hs = dl.hs, &cs = dl.cs;
    hs.assign(h0.begin() + d * N * H, h0.begin() + (d + 1) * N * H);
    cs.assign(c0.begin() + d * N * H, c0.begin() + (d + 1) * N * H);
    if constexpr (kQuant && kFast) {
      xdots.resize(static_cast<size_t>(longest * N * kGates * H));
      if (fw->int8) {
        Int8Dots(qx, longest * N, I, fw->w8, d, kGates * H, xdots.data(), pool);
      } else {
        ExactIntDots(fx.data(), longest * N, fw->w.data() + d * kGates * H * I, kGates * H, I,
                     xdots.data(), pool);
      }
    }
    // Row j of the input and recurrent projections for time t and batch n.
    auto project_x = [&](int64_t t, int64_t n, int64_t j) {
      if constexpr (kQuant) {
        int64_t acc = 0;
        if constexpr (kFast) {
          acc = xdots[static_cast<size_t>((t * N + n) * kGates * H + j)];
        } else {
          const int32_t* a = qx.q.data() + xoff(t, n);
          const int32_t* wj = wq.w.data() + (d * kGates * H + j) * I;
          for (int64_t i = 0; i < I; ++i) acc += static_cast<int64_t>(a[i]) * wj[i];
        }
        return static_cast<double>(acc) *
               static_cast<double>(qx.scale * wq.scale[d * kGates * H + j]);
      } else {
        const double* a = x.data() + xoff(t, n);
        const double* wj = w.data() + (d * kGates * H + j) * I;
        double acc = 0;
        for (int64_t i = 0; i < I; ++i) acc += a[i] * wj[i];
        return acc;
      }
    };
    auto project_h = [&](int64_t n, int64_t j) {
      if constexpr (kQuant) {
        int64_t acc = 0;
        if constexpr (kFast) {
          acc = hdots[static_cast<size_t>(n * kGates * H + j)];
        } else {
          const int32_t* a = qh.q.data() + n * H;
          const int32_t* rj = rq.w.data() + (d * kGates * H + j) * H;
          for (int64_t k = 0; k < H; ++k) acc += static_cast<int64_t>(a[k]) * rj[k];
        }
        return static_cast<double>(acc) *
               static_cast<double>(qh.scale * rq.scale[d * kGates * H + j]);
      } else {
        const double* a = hs.data() + n * H;
        const double* rj = r.data() + (d * kGates * H + j) * H;
        double acc = 0;
        for (int64_t k = 0; k < H; ++k) acc += a[k] * rj[k];
        return acc;
      }
    };
    // Before each step of the quantized form: the hidden state (`state`, float or double) of the
    // sequences that ran the step before (zeros for those that ended) quantized (qh); kFast, its
    // products as integers (hdots).
    auto quantize_hidden = [&](int64_t step, const auto& state, auto* range) {
      range->assign(state.begin(), state.end());
      for (int64_t n = 0; n < N; ++n) {
        if (step > lens[n]) std::fill_n(range->begin() + n * H, H, 0);
      }
      QuantizeActs(range->data(), range->size(), &qh);
      if constexpr (kQuant && kFast) {
        hdots.resize(static_cast<size_t>(N * kGates * H));
        if (fw->int8) {
          Int8Dots(qh, N, H, fw->r8, d, kGates * H, hdots.data(), pool);
        } else {
          fh.assign(qh.q.begin(), qh.q.end());
          ExactIntDots(fh.data(), N, fw->r.data() + d * kGates * H * H, kGates * H, H, hdots.data(),
                       pool);
        }
      }
    };
    bool float_cell = false;
    if constexpr (kQuant && kFast && kCell == Cell::kLstm) {
      // ONNX's default activations, no clip and no coupled gates: the cell in float, as ONNX
      // Runtime computes it (StandardLstmColumn), the gates' sums from the same integers.
      float_cell = !has_clip && !input_forget && f.act == Act::kSigmoid && g.act == Act::kTanh &&
                   hact.act == Act::kTanh;
    }
    if (float_cell) {
      const int64_t G = kGates * H;
      std::vector<float>&hf = dl.hf, &cf = dl.cf, &range = dl.range;
      hf.assign(hs.begin(), hs.end());
      cf.assign(cs.begin(), cs.end());
      // Per gate row: both biases, the input's scale (X's times W's); the peepholes.
      std::vector<float>&bias = dl.bias, &x_scale = dl.x_scale, &peep = dl.peep, &gx_f = dl.gx_f,
      &gh_f = dl.gh_f;
      bias.resize(G);
      x_scale.resize(G);
      peep.assign(P, P + 3 * H);
      gx_f.resize(G);
      gh_f.resize(G);
      const float* r_scale = rq.scale.data() + d * G;
      for (int64_t j = 0; j < G; ++j) {
        bias[j] = static_cast<float>(Wb[j] + Rb[j]);
        x_scale[j] = qx.scale * wq.scale[d * G + j];
      }
      for (int64_t step = 0; step < S; ++step) {
        quantize_hidden(step, hf, &range);
        for (int64_t n = 0; n < N; ++n) {
          if (step >= lens[n]) continue;
          int64_t t = reverse ? lens[n] - 1 - step : step;
          const int64_t* xd = xdots.data() + (t * N + n) * G;
          const int64_t* hd = hdots.data() + n * G;
          for (int64_t j = 0; j < G; ++j) {
            gx_f[j] = static_cast<float>(xd[j]) * x_scale[j] + bias[j];
            gh_f[j] = static_cast<float>(hd[j]) * (qh.scale * r_scale[j]);
          }
          float* h_n = hf.data() + n * H;
          StandardLstmColumn(H, gx_f.data(), gx_f.data() + H, gx_f.data() + 2 * H,
                             gx_f.data() + 3 * H, gh_f.data(), gh_f.data() + H, gh_f.data() + 2 * H,
                             gh_f.data() + 3 * H, peep.data(), peep.data() + H, peep.data() + 2 * H,
                             cf.data() + n * H, h_n);
          std::copy(h_n, h_n + H, y.begin() + ((t * dirs + d) * N + n) * H);
        }
      }
      std::copy(hf.begin(), hf.end(), hs.begin());
      std::copy(cf.begin(), cf.end(), cs.begin());
    } else {
      for (int64_t step = 0; step < S; ++step) {
        if constexpr (kQuant) quantize_hidden(step, hs, &h_range);
        for (int64_t n = 0; n < N; ++n) {
          if (step >= lens[n]) continue;
          int64_t t = reverse ? lens[n] - 1 - step : step;
          double* h_n = hs.data() + n * H;
          double* c_n = cs.data() + n * H;
          // Input and recurrent projections of every gate, each with its bias.
          for (int64_t j = 0; j < kGates * H; ++j) {
            gx[j] = Wb[j] + project_x(t, n, j);
            gh[j] = Rb[j] + project_h(n, j);
          }
          if constexpr (kCell == Cell::kRnn) {
            for (int64_t h = 0; h < H; ++h) hn[h] = f(clipped(gx[h] + gh[h]));
          } else if constexpr (kCell == Cell::kGru) {
            // Gates z, r, h: cn holds z, rg holds r, hn the pre-activation of h.
            for (int64_t h = 0; h < H; ++h) {
              cn[h] = f(clipped(gx[h] + gh[h]));
              rg[h] = f(clipped(gx[H + h] + gh[H + h]));
            }
            for (int64_t h = 0; h < H; ++h) {
              if (lbr) {
                hn[h] = gx[2 * H + h] + rg[h] * gh[2 * H + h];
              } else {
                double acc = gx[2 * H + h] + Rb[2 * H + h];
                for (int64_t k = 0; k < H; ++k)
                  acc += rg[k] * h_n[k] * r[(d * 3 * H + 2 * H + h) * H + k];
                hn[h] = acc;
              }
            }
            for (int64_t h = 0; h < H; ++h) {
              double ht = g(clipped(hn[h]));
              hn[h] = (1 - cn[h]) * ht + cn[h] * h_n[h];
            }
          } else {
            // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
            for (int64_t h = 0; h < H; ++h) {
              double ig = f(clipped(gx[h] + gh[h] + P[h] * c_n[h]));
              double fg = input_forget
                              ? 1 - ig
                              : f(clipped(gx[2 * H + h] + gh[2 * H + h] + P[2 * H + h] * c_n[h]));
              double cg = g(clipped(gx[3 * H + h] + gh[3 * H + h]));
              cn[h] = fg * c_n[h] + ig * cg;
              double og = f(clipped(gx[H + h] + gh[H + h] + P[H + h] * cn[h]));
              hn[h] = og * hact(cn[h]);
            }
            std::copy(cn.begin(), cn.end(), c_n);
          }
          std::copy(hn.begin(), hn.end(), h_n);
          for (int64_t h = 0; h < H; ++h) {
            int64_t idx =
                layout == 0 ? ((t * dirs + d) * N + n) * H + h : ((n * S + t) * dirs + d) * H + h;
            y[idx] = h_n[h];
          }
        }
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t h = 0; h < H; ++h) {
        int64_t idx = layout == 0 ? (d * N + n) * H + h : (n * dirs + d) * H + h;
        yh[idx] = hs[n * H + h];
        yc[idx] = cs[n * H + h];
      }
    }
  };
  // kFast with two directions and threads: the directions side by side, each on one thread (a
  // step's products are too small to split well, and its cell is serial); the same arithmetic.
  if (kFast && dirs == 2 && ctx.threads() > 1) {
    ctx.ParallelFor(dirs, 1, [&](int64_t d0, int64_t d1) {
      for (int64_t d = d0; d < d1; ++d) run_direction(d, nullptr);
    });
  } else {
    for (int64_t d = 0; d < dirs; ++d) run_direction(d, ctx.thread_pool());
  }
  WriteFloats(ty, y);
  WriteFloats(tyh, yh);
  if (tyc) WriteFloats(tyc, yc);
  return Status::Ok();
}

// ---- Deformable convolution ------------------------------------------------------------------

Status DeformConv(KernelContext& ctx) {
  const Tensor& tx = *ctx.input(0);
  const Tensor& tw = *ctx.input(1);
  const Tensor& toff = *ctx.input(2);
  const Tensor* tb = ctx.input(3);
  const Tensor* tm = ctx.input(4);
  const rt::AttrView& at = ctx.attrs();
  Shape kernel = at.Ints("kernel_shape"), strides = at.Ints("strides"), pads = at.Ints("pads"),
        dil = at.Ints("dilations");
  int64_t group = at.Int("group", 1), ogroup = at.Int("offset_group", 1);
  int r = tx.rank();
  size_t k = kernel.size();
  if (r < 3 || static_cast<size_t>(r - 2) != k || tw.rank() != r || toff.rank() != r) {
    return Status::Error("x, w and offset must have rank 2 + the kernel's");
  }
  if (strides.size() != k || dil.size() != k || pads.size() != 2 * k) {
    return Status::Error("strides, dilations and pads do not match the kernel rank");
  }
  if (tw.dtype != tx.dtype || toff.dtype != tx.dtype) {
    return Status::Error("x, w and offset must have one element type");
  }
  int64_t N = tx.shape[0], C = tx.shape[1], OC = tw.shape[0], CG = tw.shape[1];
  int64_t grouped;
  if (group < 1 || ogroup < 1 || __builtin_mul_overflow(CG, group, &grouped) || C != grouped ||
      OC % group != 0 || C % ogroup != 0) {
    return Status::Error("channels do not match group / offset_group");
  }
  int64_t ksize = 1;
  for (size_t i = 0; i < k; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dil[i] < 1) {
      return Status::Error("kernel_shape, strides and dilations must be positive");
    }
    if (tw.shape[2 + i] != kernel[i]) return Status::Error("w does not match kernel_shape");
    ksize *= kernel[i];
  }
  Shape out = {N, OC};
  for (size_t i = 0; i < k; ++i) {
    int64_t span, padded;
    if (__builtin_mul_overflow(kernel[i] - 1, dil[i], &span) ||
        __builtin_add_overflow(span, 1, &span) ||
        __builtin_add_overflow(tx.shape[2 + i], pads[i], &padded) ||
        __builtin_add_overflow(padded, pads[k + i], &padded)) {
      return Status::Error("the dilated kernel or the padded input overflows");
    }
    if (padded < span) return Status::Error("the kernel is larger than the padded input");
    out.push_back((padded - span) / strides[i] + 1);
  }
  Shape off_shape = out;
  if (__builtin_mul_overflow(ogroup, ksize * static_cast<int64_t>(k), &off_shape[1])) {
    return Status::Error("offset_group " + std::to_string(ogroup) + " is too large");
  }
  if (toff.shape != off_shape) {
    return Status::Error("offset has shape " + rt::ShapeString(toff.shape) + ", expected " +
                         rt::ShapeString(off_shape));
  }
  std::vector<double> x, w, off, bias, mask;
  QUILT_RETURN_IF_ERROR(ReadFloats(tx, &x));
  QUILT_RETURN_IF_ERROR(ReadFloats(tw, &w));
  QUILT_RETURN_IF_ERROR(ReadFloats(toff, &off));
  if (!Absent(tb)) {
    if (tb->shape != Shape{OC} || tb->dtype != tx.dtype) return Status::Error("b must be [oC]");
    QUILT_RETURN_IF_ERROR(ReadFloats(*tb, &bias));
  }
  if (!Absent(tm)) {
    Shape ms = out;
    ms[1] = ogroup * ksize;
    if (tm->shape != ms || tm->dtype != tx.dtype) {
      return Status::Error("mask must have shape " + rt::ShapeString(ms));
    }
    QUILT_RETURN_IF_ERROR(ReadFloats(*tm, &mask));
  }
  Tensor* ty;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, tx.dtype, out, &ty));
  int64_t osize = 1;
  for (size_t i = 0; i < k; ++i) osize *= out[2 + i];
  int64_t isize = 1;
  for (size_t i = 0; i < k; ++i) isize *= tx.shape[2 + i];
  std::vector<double> y(N * OC * osize, 0.0);
  int64_t opg = OC / group, cpog = C / ogroup;
  std::vector<int64_t> opos(k), kpos(k), lo(k);
  std::vector<double> frac(k), loc(k);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < osize; ++o) {
      int64_t rem = o;
      for (size_t i = k; i-- > 0;) {
        opos[i] = rem % out[2 + i];
        rem /= out[2 + i];
      }
      for (int64_t c = 0; c < C; ++c) {
        int64_t og = c / cpog;
        int64_t g = c / CG;
        for (int64_t kk = 0; kk < ksize; ++kk) {
          int64_t kr = kk;
          for (size_t i = k; i-- > 0;) {
            kpos[i] = kr % kernel[i];
            kr /= kernel[i];
          }
          for (size_t i = 0; i < k; ++i) {
            int64_t ch = ((og * ksize + kk) * static_cast<int64_t>(k) + i);
            double dv = off[(n * off_shape[1] + ch) * osize + o];
            loc[i] = static_cast<double>(opos[i] * strides[i] - pads[i] + kpos[i] * dil[i]) + dv;
          }
          double mval =
              mask.empty() ? 1.0 : mask[(n * ogroup * ksize + og * ksize + kk) * osize + o];
          // Multilinear interpolation; corners outside the input count as zero.
          double sample = 0;
          bool finite = true;
          for (size_t i = 0; i < k; ++i) {
            if (!std::isfinite(loc[i]) || std::fabs(loc[i]) > 1e15) finite = false;
          }
          if (finite) {
            for (size_t i = 0; i < k; ++i) {
              double fl = std::floor(loc[i]);
              lo[i] = static_cast<int64_t>(fl);
              frac[i] = loc[i] - fl;
            }
            for (int64_t corner = 0; corner < (int64_t{1} << k); ++corner) {
              double wgt = 1;
              int64_t idx = 0;
              bool inside = true;
              for (size_t i = 0; i < k; ++i) {
                int64_t bit = corner >> i & 1;
                int64_t p = lo[i] + bit;
                wgt *= bit ? frac[i] : 1 - frac[i];
                if (p < 0 || p >= tx.shape[2 + i]) {
                  inside = false;
                  break;
                }
                idx = idx * tx.shape[2 + i] + p;
              }
              if (inside && wgt != 0) sample += wgt * x[(n * C + c) * isize + idx];
            }
          }
          double contrib = sample * mval;
          if (contrib == 0) continue;
          for (int64_t m = g * opg; m < (g + 1) * opg; ++m) {
            y[(n * OC + m) * osize + o] += contrib * w[(m * CG + (c - g * CG)) * ksize + kk];
          }
        }
      }
      if (!bias.empty()) {
        for (int64_t m = 0; m < OC; ++m) y[(n * OC + m) * osize + o] += bias[m];
      }
    }
  }
  WriteFloats(ty, y);
  return Status::Ok();
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("nn.rnn", rnn::RnnFast),
    Kernel("nn.gru", rnn::GruFast),
    Kernel("nn.lstm", rnn::LstmFast),
    Kernel("nn.dynamic_quantize_lstm", rnn::DynamicQuantizeLstm),
    Kernel("nn.deform_conv", DeformConv),
};

}  // namespace

namespace rnn {
Status RnnReference(KernelContext& ctx) { return Recurrent<Cell::kRnn>(ctx); }
Status GruReference(KernelContext& ctx) { return Recurrent<Cell::kGru>(ctx); }
Status LstmReference(KernelContext& ctx) { return Recurrent<Cell::kLstm>(ctx); }
Status DynamicQuantizeLstmReference(KernelContext& ctx) {
  return Recurrent<Cell::kLstm, true>(ctx);
}
Status DynamicQuantizeLstm(KernelContext& ctx) { return Recurrent<Cell::kLstm, true, true>(ctx); }
}  // namespace rnn

std::span<const rt::KernelEntry> RecurrentKernels() { return kKernels; }

}  // namespace quilt::cpu
