// Float32 max pooling without indices, fast: windows that tile the rows (strides equal to the
// window, no padding) over every plane's output rows as one run (MaxPoolTiled), other windows
// walked in the reference's order (MaxPoolPlanes; small windows with their cells in registers), or,
// for windows of 16 cells or more, in two passes (MaxPoolSeparable). Checked against MaxPool by
// tests/runtime/fast_kernels_test.cc, NaN and signed zeros bit for bit.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "targets/cpu/kernels/conv_geo.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/simd.h"

namespace quilt::cpu::nn {
namespace {

// Outputs [lo, hi) of a max pool's row (every cell of their windows' columns inside the input)
// from the window's `n` input rows: kK columns a window, kS apart; cells in the order of
// MaxPoolPlanes' walk, the first taken as is, later ones only when greater.
template <int kK, int kS>
QUILT_ALWAYS_INLINE void MaxPoolRow(const float* const* rows, int64_t n, int64_t lo, int64_t hi,
                                    int64_t pad, float* __restrict y) {
  for (int64_t o2 = lo; o2 < hi; ++o2) {
    int64_t i2 = o2 * kS - pad;
    float best = rows[0][i2];
    for (int k = 1; k < kK; ++k) {
      float v = rows[0][i2 + k];
      best = v > best ? v : best;
    }
    for (int64_t r = 1; r < n; ++r) {
      for (int k = 0; k < kK; ++k) {
        float v = rows[r][i2 + k];
        best = v > best ? v : best;
      }
    }
    y[o2] = best;
  }
}

// MaxPoolRow for a window of kN rows all inside the input (the common case): the rows and taps
// known at compile time, so each tap's loads across outputs vectorize (at stride 2, as even and
// odd lanes) instead of a scalar walk per output.
template <int kK, int kS, int kN>
QUILT_ALWAYS_INLINE void MaxPoolRowOfRows(const float* const* rows, int64_t lo, int64_t hi,
                                          int64_t pad, float* __restrict y) {
  const float* __restrict r[kN];
  for (int i = 0; i < kN; ++i) r[i] = rows[i] - pad;
  int64_t o2 = lo;
#if defined(__GNUC__)
  if constexpr (kS == 2 && (kK == 2 || kK == 3)) {
    // Eight outputs at a time: each row's 16 cells split into the windows' first and second
    // columns (even and odd lanes), with three columns (MTCNN's 3 x 3 pools) the third too (the
    // even lanes from the next cell on: 2o + 16 read alone, so that no load passes the window's
    // last cell), then taken in the walk's order, lane by lane. (Left to the compiler, the
    // stride-2 loads went one output at a time.)
    for (; o2 + 8 <= hi; o2 += 8) {
      V8 best;
      for (int i = 0; i < kN; ++i) {
        V8 a, b;
        LoadV(&a, r[i] + 2 * o2);
        LoadV(&b, r[i] + 2 * o2 + 8);
        const V8 first = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
        const V8 second = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
        best = i == 0 ? first : (first > best ? first : best);
        best = second > best ? second : best;
        if constexpr (kK == 3) {
          V8 third = __builtin_shufflevector(a, b, 2, 4, 6, 8, 10, 12, 14, 15);
          third[7] = r[i][2 * o2 + 16];
          best = third > best ? third : best;
        }
      }
      StoreV(y + o2, best);
    }
  }
  if constexpr (kK == 3 && kS == 2) {
    // Four outputs from 9 cells a row the same way.
    typedef float V4 __attribute__((vector_size(16)));
    for (; o2 + 4 <= hi; o2 += 4) {
      V4 best;
      for (int i = 0; i < kN; ++i) {
        V8 a;
        LoadV(&a, r[i] + 2 * o2);
        const V4 first = __builtin_shufflevector(a, a, 0, 2, 4, 6);
        const V4 second = __builtin_shufflevector(a, a, 1, 3, 5, 7);
        V4 third = __builtin_shufflevector(a, a, 2, 4, 6, 7);
        third[3] = r[i][2 * o2 + 8];
        best = i == 0 ? first : (first > best ? first : best);
        best = second > best ? second : best;
        best = third > best ? third : best;
      }
      std::memcpy(y + o2, &best, sizeof best);
    }
  }
#endif
  for (; o2 < hi; ++o2) {
    int64_t i2 = o2 * kS;
    float best = r[0][i2];
#pragma GCC unroll 4
    for (int k = 1; k < kK; ++k) {
      float v = r[0][i2 + k];
      best = v > best ? v : best;
    }
#pragma GCC unroll 4
    for (int i = 1; i < kN; ++i) {
#pragma GCC unroll 4
      for (int k = 0; k < kK; ++k) {
        float v = r[i][i2 + k];
        best = v > best ? v : best;
      }
    }
    y[o2] = best;
  }
}

// The common small windows (2 or 3 columns, stride 1 or 2, no dilation) through MaxPoolRow: each
// output's cells in registers, in the same order, rather than a pass over the row per cell. False
// (nothing written) for other windows.
QUILT_ALWAYS_INLINE bool MaxPoolSmallWindow(const float* const* rows, int64_t n, int64_t lo,
                                            int64_t hi, int64_t k, int64_t s, int64_t d,
                                            int64_t pad, float* y) {
  if (d != 1 || (k != 2 && k != 3) || (s != 1 && s != 2)) return false;
  if (n == k) {
    if (k == 3) {
      s == 2 ? MaxPoolRowOfRows<3, 2, 3>(rows, lo, hi, pad, y)
             : MaxPoolRowOfRows<3, 1, 3>(rows, lo, hi, pad, y);
    } else {
      s == 2 ? MaxPoolRowOfRows<2, 2, 2>(rows, lo, hi, pad, y)
             : MaxPoolRowOfRows<2, 1, 2>(rows, lo, hi, pad, y);
    }
    return true;
  }
  // Stride 2, a window cut short by the padding above or below (the last row of a pool padded
  // at its end, as SAME_UPPER pads): its rows the same way.
  if (s == 2 && n == k - 1) {
    k == 3 ? MaxPoolRowOfRows<3, 2, 2>(rows, lo, hi, pad, y)
           : MaxPoolRowOfRows<2, 2, 1>(rows, lo, hi, pad, y);
    return true;
  }
  if (k == 3) {
    s == 2 ? MaxPoolRow<3, 2>(rows, n, lo, hi, pad, y) : MaxPoolRow<3, 1>(rows, n, lo, hi, pad, y);
  } else {
    s == 2 ? MaxPoolRow<2, 2>(rows, n, lo, hi, pad, y) : MaxPoolRow<2, 1>(rows, n, lo, hi, pad, y);
  }
  return true;
}

// A max pool whose windows tile the planes' rows (no padding, unit dilations, each window kN rows
// tall and kK columns wide, as many as its strides, every one inside the input), walked as the
// plane walk walks them (MaxPoolRowOfRows), with none of its per-row bookkeeping: output row r of
// all the planes (rows planes * out[1]) from input rows base(r) + i, base(r) = plane * in[1] + o1
// * kN. A window of one row (kN 1) over rows the windows cover whole (in[2] = out[2] * kK) reads
// the input as one row: output j from input j * kK. For the small planes of audio and late CNN
// layers, whose rows hold a few outputs (oww-embedding's 1 x 2 pool over 16 x 48 x 32 x 16: 19
// ns a row of 8 outputs in the plane walk).
template <int kK, int kN>
QUILT_ALWAYS_INLINE void MaxPoolTiled(const float* x, float* y, const Geo& g, int64_t r0,
                                      int64_t r1) {
  const int64_t in2 = g.in[2], out2 = g.out[2];
  if (kN == 1 && in2 == out2 * kK && g.in[1] == g.out[1]) {
    // r0, r1 count outputs here: the rows are one.
    const float* row[1] = {x};
    MaxPoolRowOfRows<kK, kK, 1>(row, r0, r1, 0, y);
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t base = (r / g.out[1] * g.in[1] + r % g.out[1] * kN) * in2;
    const float* rows[kN];
    for (int i = 0; i < kN; ++i) rows[i] = x + base + i * in2;
    MaxPoolRowOfRows<kK, kK, kN>(rows, 0, out2, 0, y + r * out2);
  }
}

// MaxPoolTiled for the window g.kernel[1] x g.kernel[2] (each 1 to 3, not both 1).
QUILT_CLONES void MaxPoolTiledRun(const float* x, float* y, const Geo& g, int64_t r0, int64_t r1) {
  switch (g.kernel[1] * 4 + g.kernel[2]) {
    case 4 + 2:
      return MaxPoolTiled<2, 1>(x, y, g, r0, r1);
    case 4 + 3:
      return MaxPoolTiled<3, 1>(x, y, g, r0, r1);
    case 8 + 1:
      return MaxPoolTiled<1, 2>(x, y, g, r0, r1);
    case 8 + 2:
      return MaxPoolTiled<2, 2>(x, y, g, r0, r1);
    case 8 + 3:
      return MaxPoolTiled<3, 2>(x, y, g, r0, r1);
    case 12 + 1:
      return MaxPoolTiled<1, 3>(x, y, g, r0, r1);
    case 12 + 2:
      return MaxPoolTiled<2, 3>(x, y, g, r0, r1);
    default:
      return MaxPoolTiled<3, 3>(x, y, g, r0, r1);
  }
}

// MaxPoolTiled where it applies (windows of 1 to 3 rows and 2 or 3 columns, or 2 or 3 rows of
// one column), the work split across the threads; false otherwise.
bool MaxPoolTiledFast(const float* x, float* y, int64_t planes, const Geo& g, KernelContext& ctx) {
  if (g.in[0] != 1 || g.out[0] != 1 || g.kernel[0] != 1) return false;
  const int64_t kn = g.kernel[1], kk = g.kernel[2];
  for (int d = 1; d < 3; ++d) {
    if (g.pad[d] != 0 || g.dilation[d] != 1 || g.stride[d] != g.kernel[d] ||
        g.out[d] * g.kernel[d] > g.in[d]) {
      return false;
    }
  }
  if (kn < 1 || kn > 3 || kk < 1 || kk > 3 || kn * kk < 2) return false;
  const bool flat = kn == 1 && g.in[2] == g.out[2] * kk && g.in[1] == g.out[1];
  const int64_t items = flat ? planes * g.OutSize() : planes * g.out[1];
  const int64_t per_item = flat ? kk : kn * kk * g.out[2];
  ctx.ParallelFor(items, std::max<int64_t>(1, (1 << 15) / per_item),
                  [&](int64_t i0, int64_t i1) { MaxPoolTiledRun(x, y, g, i0, i1); });
  return true;
}

// Planes [p0, p1) of a max pool (each in_size inputs and out_size outputs apart). The window's
// cells are visited in the reference's order (k0, k1, k2), the first cell inside the input taken
// as is and later ones only when greater, so NaN behaves as there. Output columns whose every
// cell of the last dim lies inside the input go a row at a time (vectorized); the others one at a
// time over the taps inside. What depends on an output row alone (its input rows, the edge
// columns' taps) is worked out once for all the planes: MTCNN's planes are 11 x 11 outputs, where
// that bookkeeping, done for each row of each plane, cost more than the comparisons.
QUILT_CLONES void MaxPoolPlanes(const float* x, float* y, const Geo& g, int64_t p0, int64_t p1,
                                int64_t in_size, int64_t out_size) {
  const int64_t k2n = g.kernel[2], s2 = g.stride[2], d2 = g.dilation[2], p2 = g.pad[2];
  int64_t lo = 0, hi = g.out[2];
  for (int64_t k2 = 0; k2 < k2n; ++k2) {
    int64_t l, h;
    InsideRange(k2 * d2 - p2, s2, g.in[2], g.out[2], &l, &h);
    lo = std::max(lo, l);
    hi = std::min(hi, h);
  }
  hi = std::max(hi, lo);
  // This thread's, kept from call to call: the edge columns with their taps [first, last] (last
  // < first: none inside), an output row's input row offsets, and their pointers in a plane.
  struct Edge {
    int64_t o2, first, last;
  };
  thread_local std::vector<Edge> edges;
  thread_local std::vector<int64_t> offs;
  thread_local std::vector<const float*> rows;
  edges.clear();
  for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
    if (o2 == lo && hi > lo) o2 = hi;  // the inside columns are not edges
    if (o2 >= g.out[2]) break;
    Edge e{o2, 0, -1};
    ValidTaps(o2, s2, p2, d2, k2n, g.in[2], &e.first, &e.last);
    edges.push_back(e);
  }
  const auto window_rows = static_cast<size_t>(g.kernel[0] * g.kernel[1]);
  if (offs.size() < window_rows) offs.resize(window_rows);
  if (rows.size() < window_rows) rows.resize(window_rows);
  // (Local names for the thread's vectors: each use of a thread_local finds it again.)
  int64_t* const off = offs.data();
  const float** const rp = rows.data();
  const Edge* const edge = edges.data();
  const size_t num_edges = edges.size();
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      int64_t n = 0;
      ForEachInsideRow(g, o0, o1, [&](int64_t i0, int64_t i1, int64_t, int64_t) {
        off[n++] = (i0 * g.in[1] + i1) * g.in[2];
      });
      const int64_t row_out = (o0 * g.out[1] + o1) * g.out[2];
      for (int64_t p = p0; p < p1; ++p) {
        float* __restrict yr = y + p * out_size + row_out;
        if (n == 0) {
          std::fill(yr, yr + g.out[2], -std::numeric_limits<float>::infinity());
          continue;
        }
        const float* xp = x + p * in_size;
        for (int64_t r = 0; r < n; ++r) rp[r] = xp + off[r];
        for (size_t ei = 0; ei < num_edges; ++ei) {
          const Edge& e = edge[ei];
          if (e.first > e.last) {
            yr[e.o2] = -std::numeric_limits<float>::infinity();
            continue;
          }
          const int64_t base = e.o2 * s2 - p2;
          float best = rp[0][base + e.first * d2];
          for (int64_t r = 0; r < n; ++r) {
            for (int64_t k2 = r == 0 ? e.first + 1 : e.first; k2 <= e.last; ++k2) {
              float v = rp[r][base + k2 * d2];
              best = v > best ? v : best;
            }
          }
          yr[e.o2] = best;
        }
        if (hi == lo) continue;
        if (MaxPoolSmallWindow(rp, n, lo, hi, k2n, s2, d2, p2, yr)) continue;
        for (int64_t o2 = lo; o2 < hi; ++o2) yr[o2] = rp[0][o2 * s2 - p2];
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t k2 = r == 0 ? 1 : 0; k2 < k2n; ++k2) {
            const float* __restrict xr = rp[r];
            int64_t off = k2 * d2 - p2;
            if (s2 == 1) {
              for (int64_t o2 = lo; o2 < hi; ++o2) {
                float v = xr[o2 + off];
                yr[o2] = v > yr[o2] ? v : yr[o2];
              }
            } else if (s2 == 2) {  // a constant stride: the loop vectorizes
              const float* __restrict xo = xr + off;
              for (int64_t o2 = lo; o2 < hi; ++o2) {
                float v = xo[2 * o2];
                yr[o2] = v > yr[o2] ? v : yr[o2];
              }
            } else {
              for (int64_t o2 = lo; o2 < hi; ++o2) {
                float v = xr[o2 * s2 + off];
                yr[o2] = v > yr[o2] ? v : yr[o2];
              }
            }
          }
        }
      }
    }
  }
}

// A max pool of a 2-d window in two passes: each input row's maximum over the window's columns
// for every output column, then each output row's over the window's rows. The window walk
// (MaxPoolPlanes, as the reference does) starts from the window's first cell and lets a later cell
// replace the running value only when greater: the result is that first cell when it is NaN,
// else the greatest of the cells that are not NaN (the first of equals). So the row pass takes
// the greatest non-NaN cell of each row (NaN when there is none), the column pass the greatest of
// those, and a first cell that is NaN makes the output NaN. `rowmax` holds in[1] * out[2] floats,
// `first_col` out[2] indices.
QUILT_CLONES void MaxPoolSeparable(const float* x, float* y, const Geo& g, float* rowmax,
                                   int64_t* first_col) {
  const float kLowest = -std::numeric_limits<float>::infinity();
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
    int64_t k0, k1;
    ValidTaps(o2, g.stride[2], g.pad[2], g.dilation[2], g.kernel[2], g.in[2], &k0, &k1);
    first_col[o2] = k0 <= k1 ? o2 * g.stride[2] - g.pad[2] + k0 * g.dilation[2] : -1;
  }
  // Tap by tap over the output columns it reads inside the row (in tap order for each column):
  // selects the compiler turns into vector blends.
  int64_t s2 = g.stride[2];
  for (int64_t r = 0; r < g.in[1]; ++r) {
    float* __restrict rm = rowmax + r * g.out[2];
    const float* xr = x + r * g.in[2];
    std::fill(rm, rm + g.out[2], kNaN);  // no cell that is not NaN yet
    for (int64_t k = 0; k < g.kernel[2]; ++k) {
      int64_t off = k * g.dilation[2] - g.pad[2], lo, hi;
      InsideRange(off, s2, g.in[2], g.out[2], &lo, &hi);
      const float* __restrict xo = xr + off;
      auto update = [&](int64_t o2, float v) {
        bool take = (v > rm[o2]) | ((rm[o2] != rm[o2]) & (v == v));
        rm[o2] = take ? v : rm[o2];
      };
      if (s2 == 1) {
        for (int64_t o2 = lo; o2 < hi; ++o2) update(o2, xo[o2]);
      } else if (s2 == 2) {
        for (int64_t o2 = lo; o2 < hi; ++o2) update(o2, xo[2 * o2]);
      } else {
        for (int64_t o2 = lo; o2 < hi; ++o2) update(o2, xo[o2 * s2]);
      }
    }
  }
  for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
    float* __restrict yr = y + o1 * g.out[2];
    int64_t k0, k1;
    ValidTaps(o1, g.stride[1], g.pad[1], g.dilation[1], g.kernel[1], g.in[1], &k0, &k1);
    if (k0 > k1) {  // no cell: the walk's -inf
      std::fill(yr, yr + g.out[2], kLowest);
      continue;
    }
    int64_t base = o1 * g.stride[1] - g.pad[1];
    int64_t top = base + k0 * g.dilation[1];
    const float* first = rowmax + top * g.out[2];
    for (int64_t o2 = 0; o2 < g.out[2]; ++o2) yr[o2] = first[o2];
    for (int64_t k = k0 + 1; k <= k1; ++k) {
      const float* __restrict rm = rowmax + (base + k * g.dilation[1]) * g.out[2];
      for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
        float v = rm[o2];
        bool take = (v > yr[o2]) | ((yr[o2] != yr[o2]) & (v == v));
        yr[o2] = take ? v : yr[o2];
      }
    }
    const float* xt = x + top * g.in[2];
    for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
      if (first_col[o2] < 0) {
        yr[o2] = kLowest;
      } else if (xt[first_col[o2]] != xt[first_col[o2]]) {  // NaN
        yr[o2] = kNaN;
      }
    }
  }
}

}  // namespace

Status MaxPoolFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int64_t order = ctx.attrs().Int("storage_order", 0);
  if (x.dtype != DType::kFloat32 || (order != 0 && order != 1)) return MaxPool(ctx);
  Window w;
  QUILT_RETURN_IF_ERROR(PoolWindow(ctx, x, &w));
  Shape shape = {x.shape[0], x.shape[1]};
  for (int i = 0; i < w.rank; ++i) shape.push_back(w.out[i]);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, shape, &y));
  if (y->NumElements() == 0) return Status::Ok();
  Geo g = RightAligned(w);
  int64_t planes = x.shape[0] * x.shape[1], in_size = g.InSize(), out_size = g.OutSize();
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  if (MaxPoolTiledFast(px, py, planes, g, ctx)) return Status::Ok();
  int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, out_size * g.KernelSize()));
  // Windows of 16 cells or more over one plane (4x4 and up): two passes (MaxPoolSeparable), k1 +
  // k2 comparisons per output rather than k1 * k2. Smaller ones walk their windows.
  bool separable = g.in[0] == 1 && g.out[0] == 1 && g.kernel[0] == 1 && g.kernel[1] > 1 &&
                   g.kernel[2] > 1 && g.kernel[1] * g.kernel[2] >= 16;
  ctx.ParallelFor(planes, grain, [&](int64_t p0, int64_t p1) {
    if (!separable) return MaxPoolPlanes(px, py, g, p0, p1, in_size, out_size);
    std::vector<float> rowmax(static_cast<size_t>(g.in[1] * g.out[2]));
    std::vector<int64_t> first_col(static_cast<size_t>(g.out[2]));
    for (int64_t p = p0; p < p1; ++p) {
      MaxPoolSeparable(px + p * in_size, py + p * out_size, g, rowmax.data(), first_col.data());
    }
  });
  return Status::Ok();
}

namespace {

// Per output position along one dim of an average pool: the taps [lo, hi) that read inside the
// input, and how many read inside the input or its explicit padding (ForEachWindow's
// padded_count factor for that dim).
struct AvgTaps {
  // Inline for outputs up to 64 wide (no allocation at every run for the usual pools).
  rt::InlineVector<int64_t, 64> lo, hi, padded;
  AvgTaps(const Window& w, int d) {
    for (int64_t o = 0; o < w.out[d]; ++o) {
      int64_t first = w.kernel[d], last = -1, count = 0;
      for (int64_t k = 0; k < w.kernel[d]; ++k) {
        int64_t i = o * w.stride[d] - w.pad_begin[d] + k * w.dilation[d];
        if (i >= -w.pad_begin[d] && i < w.in[d] + w.pad_end[d]) ++count;
        if (i < 0 || i >= w.in[d]) continue;
        first = std::min(first, k);
        last = k;
      }
      lo.push_back(first);
      hi.push_back(std::max(first, last + 1));
      padded.push_back(count);
    }
  }
};

}  // namespace

Status AvgPoolFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kFloat32) return AvgPool(ctx);
  Window given;
  QUILT_RETURN_IF_ERROR(PoolWindow(ctx, x, &given));
  bool include_pad = ctx.attrs().Bool("count_include_pad", false);
  Shape shape = {x.shape[0], x.shape[1]};
  for (int i = 0; i < given.rank; ++i) shape.push_back(given.out[i]);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, shape, &y));
  if (y->NumElements() == 0) return Status::Ok();
  // The window's dims right-aligned in 3 (leading dims of one cell), so the last is the
  // contiguous one: the cells' order is unchanged.
  Window w;
  w.rank = kMaxSpatial;
  for (int d = 0, shift = kMaxSpatial - given.rank; d < given.rank; ++d) {
    w.in[d + shift] = given.in[d];
    w.out[d + shift] = given.out[d];
    w.kernel[d + shift] = given.kernel[d];
    w.stride[d + shift] = given.stride[d];
    w.dilation[d + shift] = given.dilation[d];
    w.pad_begin[d + shift] = given.pad_begin[d];
    w.pad_end[d + shift] = given.pad_end[d];
  }
  const AvgTaps taps[kMaxSpatial] = {AvgTaps(w, 0), AvgTaps(w, 1), AvgTaps(w, 2)};
  int64_t planes = x.shape[0] * x.shape[1], in_size = w.InSize(), out_size = w.OutSize();
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, out_size * w.KernelSize()));
  // The reference's sums: each window's cells inside the input in its order, in double, divided
  // in double; only the cell lists it builds per window are not built.
  // Per dim and output position: the count the window divides by, and where its first inside
  // tap reads (the row or column of the input).
  rt::InlineVector<int64_t, 64> count[kMaxSpatial], first[kMaxSpatial];
  for (int d = 0; d < kMaxSpatial; ++d) {
    const AvgTaps& t = taps[d];
    for (int64_t o = 0; o < w.out[d]; ++o) {
      count[d].push_back(include_pad ? t.padded[o] : t.hi[o] - t.lo[o]);
      first[d].push_back(o * w.stride[d] - w.pad_begin[d] + t.lo[o] * w.dilation[d]);
    }
  }
  // The outputs of a row whose windows lie wholly inside along the last dim, [full_lo, full_hi):
  // their sums run output by output within each tap (a vector loop), each output's still in
  // its cells' order.
  int64_t full_lo = 0, full_hi = 0;
  {
    const AvgTaps& t = taps[2];
    while (full_lo < w.out[2] && (t.lo[full_lo] != 0 || t.hi[full_lo] != w.kernel[2])) ++full_lo;
    full_hi = full_lo;
    while (full_hi < w.out[2] && t.lo[full_hi] == 0 && t.hi[full_hi] == w.kernel[2]) ++full_hi;
  }
  if (w.out[2] == 1) {
    // One output per row (a global pool, or a window as wide as the row): eight planes at a
    // time, each lane's sum in the cells' order, so eight sums are in flight instead of one
    // chain of dependent adds.
    constexpr int64_t kLanes = 8;
    int64_t groups = (planes + kLanes - 1) / kLanes;
    ctx.ParallelFor(groups, std::max<int64_t>(1, grain / kLanes), [&](int64_t g0, int64_t g1) {
      for (int64_t gi = g0; gi < g1; ++gi) {
        int64_t p0 = gi * kLanes, lanes = std::min(kLanes, planes - p0);
        const float* plane[kLanes];
        for (int64_t l = 0; l < kLanes; ++l)
          plane[l] = px + (p0 + std::min(l, lanes - 1)) * in_size;
        for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
          for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
            int64_t n0 = taps[0].hi[o0] - taps[0].lo[o0], n1 = taps[1].hi[o1] - taps[1].lo[o1];
            int64_t n2 = taps[2].hi[0] - taps[2].lo[0];
            int64_t corner = (first[0][o0] * w.in[1] + first[1][o1]) * w.in[2] + first[2][0];
            double sum[kLanes] = {};
            for (int64_t k0 = 0; k0 < n0; ++k0) {
              for (int64_t k1 = 0; k1 < n1; ++k1) {
                int64_t row =
                    corner + (k0 * w.dilation[0] * w.in[1] + k1 * w.dilation[1]) * w.in[2];
                for (int64_t k2 = 0; k2 < n2; ++k2) {
                  int64_t at = row + k2 * w.dilation[2];
                  for (int64_t l = 0; l < kLanes; ++l) sum[l] += static_cast<double>(plane[l][at]);
                }
              }
            }
            int64_t c = count[0][o0] * count[1][o1] * count[2][0];
            int64_t yi = o0 * w.out[1] + o1;
            for (int64_t l = 0; l < lanes; ++l) {
              double v = c > 0 ? sum[l] / static_cast<double>(c) : 0.0;
              py[(p0 + l) * out_size + yi] = static_cast<float>(v);
            }
          }
        }
      }
    });
    return Status::Ok();
  }
  ctx.ParallelFor(planes, grain, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<double> kept_sums;  // this worker's, kept (cleared per row below)
    std::vector<double>& sums = kept_sums;
    sums.resize(static_cast<size_t>(w.out[2]));
    for (int64_t p = p0; p < p1; ++p) {
      const float* plane = px + p * in_size;
      float* yp = py + p * out_size;
      for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
        int64_t n0 = taps[0].hi[o0] - taps[0].lo[o0];
        for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
          int64_t n1 = taps[1].hi[o1] - taps[1].lo[o1];
          int64_t c01 = count[0][o0] * count[1][o1];
          const float* corner = plane + (first[0][o0] * w.in[1] + first[1][o1]) * w.in[2];
          float* yr = yp + (o0 * w.out[1] + o1) * w.out[2];
          double* sum = sums.data();
          for (int64_t o2 = 0; o2 < w.out[2]; ++o2) sum[o2] = 0;
          for (int64_t k0 = 0; k0 < n0; ++k0) {
            for (int64_t k1 = 0; k1 < n1; ++k1) {
              const float* row =
                  corner + (k0 * w.dilation[0] * w.in[1] + k1 * w.dilation[1]) * w.in[2];
              for (int64_t o2 = 0; o2 < full_lo; ++o2) {
                int64_t n2 = taps[2].hi[o2] - taps[2].lo[o2];
                for (int64_t k2 = 0; k2 < n2; ++k2) {
                  sum[o2] += static_cast<double>(row[first[2][o2] + k2 * w.dilation[2]]);
                }
              }
              for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
                const float* tap = row + k2 * w.dilation[2] - w.pad_begin[2];
                int64_t s2 = w.stride[2];
                for (int64_t o2 = full_lo; o2 < full_hi; ++o2) {
                  sum[o2] += static_cast<double>(tap[o2 * s2]);
                }
              }
              for (int64_t o2 = full_hi; o2 < w.out[2]; ++o2) {
                int64_t n2 = taps[2].hi[o2] - taps[2].lo[o2];
                for (int64_t k2 = 0; k2 < n2; ++k2) {
                  sum[o2] += static_cast<double>(row[first[2][o2] + k2 * w.dilation[2]]);
                }
              }
            }
          }
          for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
            int64_t c = c01 * count[2][o2];
            double v = c > 0 ? sum[o2] / static_cast<double>(c) : 0.0;
            yr[o2] = static_cast<float>(v);
          }
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace quilt::cpu::nn
