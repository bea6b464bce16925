// Float32 RNN, GRU and LSTM (ONNX semantics, every output) on the blocked GEMM: per direction,
// the input projections of every step in one product (W x X^T: gates x steps * batch), then per
// step the recurrent projection of the whole batch (R x h^T: gates x batch) and the cell, in
// float. States are kept transposed, hidden x batch, so that the product reads them in place and
// the cell's loops run along the batch. Another element type, and any input the reference
// refuses, goes to the reference kernels of recurrent.cc, which tests/runtime/fast_kernels_test.cc
// compares these with.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/recurrent.h"
#include "targets/cpu/kernels/util.h"
#include "targets/cpu/kernels/vmath.h"

namespace quilt::cpu::rnn {

// (recurrent.h)
QUILT_CLONES void StandardLstmColumn(int64_t n, const float* xi, const float* xo, const float* xf,
                                     const float* xc, const float* ri, const float* ro,
                                     const float* rf, const float* rc, const float* pi,
                                     const float* po, const float* pf, float* __restrict c,
                                     float* __restrict h) {
  for (int64_t k = 0; k < n; ++k) {
    float cp = c[k];
    float ig = vmath::Sigmoid(xi[k] + ri[k] + pi[k] * cp);
    float fg = vmath::Sigmoid(xf[k] + rf[k] + pf[k] * cp);
    float cg = vmath::Tanh(xc[k] + rc[k]);
    float cn = fg * cp + ig * cg;
    float og = vmath::Sigmoid(xo[k] + ro[k] + po[k] * cn);
    c[k] = cn;
    h[k] = og * vmath::Tanh(cn);
  }
}

namespace {

// An activation in float: sigmoid and tanh by vmath.h (a few ulp, no library call), relu
// directly, the others through the double one.
struct FloatAct {
  Activation a;
  float operator()(float x) const {
    switch (a.act) {
      case Act::kSigmoid:
        return vmath::Sigmoid(x);
      case Act::kTanh:
        return vmath::Tanh(x);
      case Act::kRelu:
        return x > 0 ? x : 0.0f;
      default:
        return static_cast<float>(a(x));
    }
  }
};

// One hidden unit of the LSTM cell across the batch, with ONNX's default activations (sigmoid,
// tanh, tanh) and no clip: the gates' input projections xi, xo, xf, xc and recurrent ones ri, ro,
// rf, rc (n values each, contiguous), peepholes pi, po, pf; the cell c and hidden h (n values)
// updated in place. A loop the compiler vectorizes.
QUILT_CLONES void StandardLstmRow(int64_t n, const float* xi, const float* xo, const float* xf,
                                  const float* xc, const float* ri, const float* ro,
                                  const float* rf, const float* rc, float pi, float po, float pf,
                                  float* __restrict c, float* __restrict h) {
  for (int64_t k = 0; k < n; ++k) {
    float cp = c[k];
    float ig = vmath::Sigmoid(xi[k] + ri[k] + pi * cp);
    float fg = vmath::Sigmoid(xf[k] + rf[k] + pf * cp);
    float cg = vmath::Tanh(xc[k] + rc[k]);
    float cn = fg * cp + ig * cg;
    float og = vmath::Sigmoid(xo[k] + ro[k] + po * cn);
    c[k] = cn;
    h[k] = og * vmath::Tanh(cn);
  }
}

bool Float32(const Tensor* t) { return t != nullptr && t->dtype == DType::kFloat32; }

// An optional float32 input: absent, or of `shape`.
bool Optional(const Tensor* t, const Shape& shape) {
  return Absent(t) || (t->dtype == DType::kFloat32 && t->shape == shape);
}

// Constant weights packed once for the GEMM, per direction, into the step's cache (one object,
// made on the step's first run): W, and R when that run's batch has more than one row (a batch
// of one multiplies R by a vector, reading it as it is): the rows of the first recurrent product
// (all of them, or GRU's update and reset gates without linear_before_reset) and GRU's hidden gate
// rows in that case. A later run of a larger batch, with no R packed, packs it as it goes.
// A batch of one: a direction's R (its first `first_rows` rows, H wide) transposed, and, for a
// GRU without linear_before_reset (`hidden`), its hidden gate's rows (those from 2H) transposed,
// in SgemvTransposed's blocks of columns.
struct TransposedR {
  std::vector<float> first, hidden;
  TransposedR(const float* r, int64_t first_rows, int64_t h, bool with_hidden)
      : first(TransposedBlocks(r, first_rows, h)),
        hidden(with_hidden ? TransposedBlocks(r + 2 * h * h, h, h) : std::vector<float>()) {}
};

struct PackedRecurrent {
  std::vector<PackedA> w, r, r_hidden;
  std::vector<TransposedR> rt;  // a batch of one's, per direction
  std::vector<PackedB> wt;      // a batch of one's standard LSTM: W^T, per direction
};

template <Cell kCell>
Status Fast(KernelContext& ctx, rt::KernelFn reference) {
  constexpr int kGates = kCell == Cell::kLstm ? 4 : kCell == Cell::kGru ? 3 : 1;
  constexpr int kActs = kCell == Cell::kLstm ? 3 : kCell == Cell::kGru ? 2 : 1;
  const Tensor *tx = ctx.input(0), *tw = ctx.input(1), *tr = ctx.input(2);
  const Tensor *tb = ctx.input(3), *tseq = ctx.input(4), *th0 = ctx.input(5);
  const Tensor* tc0 = kCell == Cell::kLstm ? ctx.input(6) : nullptr;
  const Tensor* tp = kCell == Cell::kLstm ? ctx.input(7) : nullptr;
  if (!Float32(tx) || !Float32(tw) || !Float32(tr) || tx->rank() != 3 || tr->rank() != 3) {
    return reference(ctx);
  }
  const rt::AttrView& at = ctx.attrs();
  std::string_view direction = at.Str("direction", "forward");
  int64_t layout = at.Int("layout", 0);
  if ((direction != "forward" && direction != "reverse" && direction != "bidirectional") ||
      (layout != 0 && layout != 1)) {
    return reference(ctx);
  }
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t S = layout == 0 ? tx->shape[0] : tx->shape[1];
  const int64_t N = layout == 0 ? tx->shape[1] : tx->shape[0];
  const int64_t I = tx->shape[2];
  const int64_t H = tr->shape[2];
  const int64_t G = kGates * H;
  if (H <= 0 || (at.Has("hidden_size") && at.Int("hidden_size") != H) ||
      tr->shape != Shape{dirs, G, H} || tw->shape != Shape{dirs, G, I}) {
    return reference(ctx);
  }
  auto names = at.Strs("activations");
  auto alphas = at.Floats("activation_alpha"), betas = at.Floats("activation_beta");
  if (names.size() != static_cast<size_t>(kActs * dirs) || alphas.size() != names.size() ||
      betas.size() != names.size()) {
    return reference(ctx);
  }
  // This thread's, kept from run to run (the directions' threads read it through the reference).
  thread_local std::vector<FloatAct> kept_acts;
  std::vector<FloatAct>& acts = kept_acts;
  acts.assign(names.size(), FloatAct{});
  for (size_t i = 0; i < names.size(); ++i) {
    if (!ParseActivation(names[i], alphas[i], betas[i], &acts[i].a).ok()) return reference(ctx);
  }
  Shape state_shape = layout == 0 ? Shape{dirs, N, H} : Shape{N, dirs, H};
  if (!Optional(tb, {dirs, 2 * G}) || !Optional(th0, state_shape) || !Optional(tc0, state_shape) ||
      !Optional(tp, {dirs, 3 * H})) {
    return reference(ctx);
  }
  Shape lens(static_cast<size_t>(N), S);
  bool ragged = false;
  if (!Absent(tseq)) {
    if (tseq->dtype != DType::kInt32 || tseq->shape != Shape{N}) return reference(ctx);
    for (int64_t n = 0; n < N; ++n) {
      lens[n] = tseq->Data<int32_t>()[n];
      if (lens[n] < 0 || lens[n] > S) return reference(ctx);
      ragged |= lens[n] < S;
    }
  }
  const bool has_clip = at.Has("clip");
  const float clip = static_cast<float>(at.Float("clip", 0.0));
  const bool input_forget = kCell == Cell::kLstm && at.Bool("input_forget", false);
  const bool lbr = kCell == Cell::kGru && at.Bool("linear_before_reset", false);

  Shape y_shape = layout == 0 ? Shape{S, dirs, N, H} : Shape{N, S, dirs, H};
  Tensor *ty, *tyh, *tyc = nullptr;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, y_shape, &ty));
  QUILT_RETURN_IF_ERROR(ctx.Output(1, DType::kFloat32, state_shape, &tyh));
  if (kCell == Cell::kLstm)
    QUILT_RETURN_IF_ERROR(ctx.Output(2, DType::kFloat32, state_shape, &tyc));
  float* y = ty->MutableData<float>();
  float* yh = tyh->MutableData<float>();
  float* yc = tyc ? tyc->MutableData<float>() : nullptr;
  if (ragged) std::fill(y, y + ty->NumElements(), 0.0f);
  const float* x = tx->Data<float>();
  auto clipped = [&](float v) { return has_clip ? std::min(clip, std::max(-clip, v)) : v; };
  // Column of X (and of the input projections) for time t and batch row n.
  auto xcol = [&](int64_t t, int64_t n) { return layout == 0 ? t * N + n : n * S + t; };
  // Where the state of (direction d, batch row n) lies in initial_h / Y_h and the others.
  auto state_at = [&](int64_t d, int64_t n) {
    return layout == 0 ? (d * N + n) * H : (n * dirs + d) * H;
  };
  const int64_t cols = S * N;
  // Rows of the cell's loops per task: enough elements to be worth a thread.
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, N));
  const int64_t first_rows = kCell == Cell::kGru && !lbr ? 2 * H : G;
  // Direction d's cell as most models have it: an LSTM of layout 0 with ONNX's default
  // activations, no clip or coupled input and forget gates (StandardLstmRow, where every sequence
  // is full length).
  auto standard_cell = [&](int64_t d) {
    return kCell == Cell::kLstm && layout == 0 && !has_clip && !input_forget &&
           acts[d * kActs].a.act == Act::kSigmoid &&
           acts[d * kActs + (kActs > 1 ? 1 : 0)].a.act == Act::kTanh &&
           acts[d * kActs + (kActs > 2 ? 2 : 0)].a.act == Act::kTanh;
  };
  // A batch of one of such cells takes its input projections by step, from W^T: W itself is then
  // not packed as well (ddddocr-beta: 8 MB).
  bool by_step_cells = N == 1;
  for (int64_t d = 0; d < dirs; ++d) by_step_cells = by_step_cells && standard_cell(d);
  std::shared_ptr<const PackedRecurrent> packed;
  if (ctx.cache() && ctx.constant_input(1) && ctx.constant_input(2) && I > 0) {
    packed = ctx.cache()->Get<PackedRecurrent>([&] {
      auto p = std::make_shared<PackedRecurrent>();
      for (int64_t d = 0; d < dirs; ++d) {
        const float* R = tr->Data<float>() + d * G * H;
        if (by_step_cells) {
          p->wt.emplace_back(TransposedB(tw->Data<float>() + d * G * I, I, I), I, G);
        } else {
          p->w.emplace_back(tw->Data<float>() + d * G * I, I, G, I);
        }
        if (N == 1) {
          p->rt.emplace_back(R, first_rows, H, kCell == Cell::kGru && !lbr);
          continue;
        }
        p->r.emplace_back(R, H, first_rows, H);
        if (kCell == Cell::kGru && !lbr) p->r_hidden.emplace_back(R + 2 * H * H, H, H, H);
      }
      return p;
    });
  }
  const bool packed_r = packed && !packed->r.empty();
  // Direction d, on the session's threads (`pool`), or on the calling thread alone (null): the
  // two directions of a bidirectional layer then run side by side, one per thread, with no
  // threads to join at each step (below). The sums are the same either way.
  auto run_direction = [&](int64_t d, rt::ThreadPool* pool) {
    // The running thread's scratch, every element written before it is read: the input
    // projections (by the product), the recurrent ones (each step's product) and the states
    // (from the initial ones).
    float* gx = Scratch(ScratchSlot::kRecurrentInput, G * cols);
    float* gh = Scratch(ScratchSlot::kRecurrentGates, G * N);
    float* hs = Scratch(ScratchSlot::kRecurrentHidden, H * N);
    float* cs = Scratch(ScratchSlot::kRecurrentCell, H * N);
    // GRU: the update and reset gates of a step, and r * h for the product of the hidden gate.
    // Kept by the running thread from run to run, cleared as new vectors would be.
    thread_local std::vector<float> kept_zs, kept_rs, kept_rh, kept_ghh;
    std::vector<float>&zs = kept_zs, &rs = kept_rs, &rh = kept_rh, &ghh = kept_ghh;
    zs.clear();
    rs.clear();
    rh.clear();
    ghh.clear();
    if (kCell == Cell::kGru) {
      zs.resize(static_cast<size_t>(H * N));
      rs.resize(static_cast<size_t>(H * N));
      if (!lbr) {
        rh.resize(static_cast<size_t>(H * N));
        ghh.resize(static_cast<size_t>(H * N));
      }
    }
    // The standard LSTM cell of a batch of one: zero peepholes, and, without inputs (the input
    // projections then gates x steps of zeros and biases), a step's column of them.
    thread_local std::vector<float> kept_column, kept_no_peepholes;  // the running thread's
    std::vector<float>&column = kept_column, &no_peepholes = kept_no_peepholes;
    column.clear();
    no_peepholes.clear();
    if (kCell == Cell::kLstm && N == 1) {
      if (I == 0) column.resize(static_cast<size_t>(G));
      no_peepholes.assign(static_cast<size_t>(3 * H), 0.0f);
    }
    const bool reverse = direction == "reverse" || d == 1;
    const float* W = tw->Data<float>() + d * G * I;
    const float* R = tr->Data<float>() + d * G * H;
    const float* Wb = Absent(tb) ? nullptr : tb->Data<float>() + d * 2 * G;
    const float* Rb = Wb ? Wb + G : nullptr;
    const float* P = Absent(tp) ? nullptr : tp->Data<float>() + d * 3 * H;
    // A batch of one: R^T for its steps' products (from the cache, or laid out here once).
    std::optional<TransposedR> rt_here;
    const TransposedR* rt = nullptr;
    if (N == 1) {
      if (packed && !packed->rt.empty()) {
        rt = &packed->rt[static_cast<size_t>(d)];
      } else {
        rt = &rt_here.emplace(R, first_rows, H, kCell == Cell::kGru && !lbr);
      }
    }
    const FloatAct& f = acts[d * kActs];
    const FloatAct& g = acts[d * kActs + (kActs > 1 ? 1 : 0)];
    const FloatAct& hact = acts[d * kActs + (kActs > 2 ? 2 : 0)];
    const bool standard_lstm = standard_cell(d) && !ragged;
    // The input projections of every step, with the biases that add to them: both of every
    // gate but GRU's hidden gate with linear_before_reset, whose recurrent bias goes inside r *.
    // A batch of one's standard LSTM takes them transposed, a row of G per step (X W^T: steps x
    // gates), which each step's cell then reads as it lies; gates x steps made a product of as
    // few columns as steps (oww-hey-mycroft's 16) and a gather of each step's column.
    const bool by_step = standard_lstm && N == 1 && I > 0;
    if (by_step) {
      const PackedB* wt = packed && packed->wt.size() == static_cast<size_t>(dirs)
                              ? &packed->wt[static_cast<size_t>(d)]
                              : nullptr;
      if (wt) {
        Sgemm(S, G, I, x, I, *wt, gx, G, pool);
      } else {
        Sgemm(S, G, I, x, I, TransposedB(W, I, I), gx, G, pool);
      }
      if (Wb) {
        for (int64_t t = 0; t < S; ++t) {
          float* row = gx + t * G;
          for (int64_t j = 0; j < G; ++j) row[j] += Wb[j] + Rb[j];
        }
      }
    } else if (I > 0) {
      Sgemm(G, cols, I, W, I, TransposedB(x, I, I), gx, cols, pool, nullptr,
            packed && packed->w.size() == static_cast<size_t>(dirs)
                ? &packed->w[static_cast<size_t>(d)]
                : nullptr);
    } else {
      std::fill(gx, gx + G * cols, 0.0f);
    }
    if (Wb && !by_step) {
      rt::ParallelFor(pool, G, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cols)),
                      [&](int64_t j0, int64_t j1) {
                        for (int64_t j = j0; j < j1; ++j) {
                          float b = Wb[j] + (lbr && j >= 2 * H ? 0.0f : Rb[j]);
                          float* row = gx + j * cols;
                          for (int64_t c = 0; c < cols; ++c) row[c] += b;
                        }
                      });
    }
    const float* h0 = Absent(th0) ? nullptr : th0->Data<float>();
    const float* c0 = Absent(tc0) ? nullptr : tc0->Data<float>();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t h = 0; h < H; ++h) {
        hs[h * N + n] = h0 ? h0[state_at(d, n) + h] : 0.0f;
        cs[h * N + n] = c0 ? c0[state_at(d, n) + h] : 0.0f;
      }
    }
    for (int64_t step = 0; step < S; ++step) {
      auto time = [&](int64_t n) { return reverse ? lens[n] - 1 - step : step; };
      // The recurrent projections of the batch (GRU without linear_before_reset: of the update
      // and reset gates; its hidden gate's comes after r is known).
      if (N == 1) {
        SgemvTransposed(first_rows, H, rt->first.data(), hs, gh, pool);
      } else {
        Sgemm(first_rows, N, H, R, H, MatrixB(hs, H, N), gh, N, pool, nullptr,
              packed_r ? &packed->r[static_cast<size_t>(d)] : nullptr);
      }
      if constexpr (kCell == Cell::kRnn) {
        rt::ParallelFor(pool, H, grain, [&](int64_t h0, int64_t h1) {
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t n = 0; n < N; ++n) {
              if (step >= lens[n]) continue;
              hs[h * N + n] = f(clipped(gx[h * cols + xcol(time(n), n)] + gh[h * N + n]));
            }
          }
        });
      } else if constexpr (kCell == Cell::kGru) {
        rt::ParallelFor(pool, H, grain, [&](int64_t h0, int64_t h1) {
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t n = 0; n < N; ++n) {
              if (step >= lens[n]) continue;
              int64_t c = xcol(time(n), n), i = h * N + n;
              zs[i] = f(clipped(gx[h * cols + c] + gh[i]));
              rs[i] = f(clipped(gx[(H + h) * cols + c] + gh[(H + h) * N + n]));
              if (!lbr) rh[i] = rs[i] * hs[i];
            }
          }
        });
        if (!lbr && N == 1) {
          SgemvTransposed(H, H, rt->hidden.data(), rh.data(), ghh.data(), pool);
        } else if (!lbr) {
          Sgemm(H, N, H, R + 2 * H * H, H, MatrixB(rh.data(), H, N), ghh.data(), N, pool, nullptr,
                packed_r ? &packed->r_hidden[static_cast<size_t>(d)] : nullptr);
        }
        rt::ParallelFor(pool, H, grain, [&](int64_t h0, int64_t h1) {
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t n = 0; n < N; ++n) {
              if (step >= lens[n]) continue;
              int64_t c = xcol(time(n), n), i = h * N + n;
              float pre = gx[(2 * H + h) * cols + c];
              if (lbr) {
                pre += rs[i] * (gh[(2 * H + h) * N + n] + (Rb ? Rb[2 * H + h] : 0.0f));
              } else {
                pre += ghh[i];
              }
              float ht = g(clipped(pre));
              hs[i] = (1 - zs[i]) * ht + zs[i] * hs[i];
            }
          }
        });
      } else if (standard_lstm && N == 1) {
        // One sequence: this step's input projections (a row of gx, or zeros without inputs),
        // the cell run across the hidden units.
        int64_t c0 = reverse ? S - 1 - step : step;
        const float* xg = I > 0 ? gx + c0 * G : column.data();
        if (I == 0) {
          for (int64_t j = 0; j < G; ++j) column[j] = gx[j * cols + c0];
        }
        const float* pp = P ? P : no_peepholes.data();
        StandardLstmColumn(H, xg, xg + H, xg + 2 * H, xg + 3 * H, gh, gh + H, gh + 2 * H,
                           gh + 3 * H, pp, pp + H, pp + 2 * H, cs, hs);
      } else if (standard_lstm) {
        // Every row of the batch at this step's time: its columns are contiguous.
        int64_t c0 = (reverse ? S - 1 - step : step) * N;
        rt::ParallelFor(pool, H, grain, [&](int64_t h0, int64_t h1) {
          for (int64_t h = h0; h < h1; ++h) {
            StandardLstmRow(N, &gx[h * cols + c0], &gx[(H + h) * cols + c0],
                            &gx[(2 * H + h) * cols + c0], &gx[(3 * H + h) * cols + c0], &gh[h * N],
                            &gh[(H + h) * N], &gh[(2 * H + h) * N], &gh[(3 * H + h) * N],
                            P ? P[h] : 0.0f, P ? P[H + h] : 0.0f, P ? P[2 * H + h] : 0.0f,
                            &cs[h * N], &hs[h * N]);
          }
        });
      } else {
        // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
        rt::ParallelFor(pool, H, grain, [&](int64_t h0, int64_t h1) {
          for (int64_t h = h0; h < h1; ++h) {
            float pi = P ? P[h] : 0.0f, po = P ? P[H + h] : 0.0f, pf = P ? P[2 * H + h] : 0.0f;
            for (int64_t n = 0; n < N; ++n) {
              if (step >= lens[n]) continue;
              int64_t c = xcol(time(n), n), i = h * N + n;
              float cp = cs[i];
              float ig = f(clipped(gx[h * cols + c] + gh[h * N + n] + pi * cp));
              float fg =
                  input_forget
                      ? 1 - ig
                      : f(clipped(gx[(2 * H + h) * cols + c] + gh[(2 * H + h) * N + n] + pf * cp));
              float cg = g(clipped(gx[(3 * H + h) * cols + c] + gh[(3 * H + h) * N + n]));
              float cn = fg * cp + ig * cg;
              float og = f(clipped(gx[(H + h) * cols + c] + gh[(H + h) * N + n] + po * cn));
              cs[i] = cn;
              hs[i] = og * hact(cn);
            }
          }
        });
      }
      for (int64_t n = 0; n < N; ++n) {
        if (step >= lens[n]) continue;
        int64_t t = time(n);
        float* out =
            y + (layout == 0 ? ((t * dirs + d) * N + n) * H : ((n * S + t) * dirs + d) * H);
        for (int64_t h = 0; h < H; ++h) out[h] = hs[h * N + n];
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t h = 0; h < H; ++h) {
        yh[state_at(d, n) + h] = hs[h * N + n];
        if (yc) yc[state_at(d, n) + h] = cs[h * N + n];
      }
    }
  };
  rt::ThreadPool* pool = ctx.thread_pool();
  // Side by side where a direction's recurrent matrix fits well within a core's L2 (each thread
  // then reads its own at every step: oww-hey-mycroft's 64 KB); a larger one is split across the
  // threads at each step, each reading its share (ddddocr-beta's 4 MB: 2 MB a core).
  constexpr int64_t kSideBySideBytes = int64_t{1} << 20;
  if (dirs == 2 && pool && ctx.threads() >= 2 &&
      first_rows * H * static_cast<int64_t>(sizeof(float)) <= kSideBySideBytes) {
    ctx.ParallelFor(2, 1, [&](int64_t d0, int64_t d1) {
      for (int64_t d = d0; d < d1; ++d) run_direction(d, nullptr);
    });
  } else {
    for (int64_t d = 0; d < dirs; ++d) run_direction(d, pool);
  }
  return Status::Ok();
}

}  // namespace

Status RnnFast(KernelContext& ctx) { return Fast<Cell::kRnn>(ctx, RnnReference); }
Status GruFast(KernelContext& ctx) { return Fast<Cell::kGru>(ctx, GruReference); }
Status LstmFast(KernelContext& ctx) { return Fast<Cell::kLstm>(ctx, LstmReference); }

}  // namespace quilt::cpu::rnn
