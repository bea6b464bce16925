// Winograd F(2x2, 3x3) for ConvFast (conv_fast.h), and what the blocked kernel's Winograd
// (conv_blocked_winograd.cc) shares with it: the filter's transform, when Winograd pays, the plan
// of tile-row blocks.
//
// A 3x3 convolution with unit strides computed on 2x2 output tiles: each 4x4 input tile d and
// 3x3 filter g are transformed (V = B^T d B, U = G g G^T), the tiles' products summed over the
// input channels as 16 GEMMs (one per element of the 4x4 transform: U_e (og x cg) times V_e (cg x
// tiles)), and each tile's 4x4 result m brought back to 2x2 outputs (Y = A^T m A). 16 multiplies
// per 4 outputs instead of 36: 2.25 times fewer, for a few additions per tile. The weights'
// transform is made once (kept in the step's cache for constant weights).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "targets/cpu/kernels/conv_fast.h"
#include "targets/cpu/kernels/simd.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
#include <immintrin.h>
#endif

namespace quilt::cpu::nn {

// U = G g G^T of one 3x3 filter (tap t at g[t * tap_stride]), in double, element (i, j) at
// u[i * 4 + j].
void WinogradFilter(const float* g, int64_t tap_stride, float u[16]) {
  double gg[4][3];  // G g: rows of g combined
  for (int j = 0; j < 3; ++j) {
    double a = g[j * tap_stride], b = g[(3 + j) * tap_stride], d = g[(6 + j) * tap_stride];
    gg[0][j] = a;
    gg[1][j] = (a + b + d) / 2;
    gg[2][j] = (a - b + d) / 2;
    gg[3][j] = d;
  }
  for (int i = 0; i < 4; ++i) {
    double a = gg[i][0], b = gg[i][1], d = gg[i][2];
    double r[4] = {a, (a + b + d) / 2, (a - b + d) / 2, d};
    for (int j = 0; j < 4; ++j) u[i * 4 + j] = static_cast<float>(r[j]);
  }
}

// Whether a step that may take Winograd does on images of out0 x out1 outputs, n of them, rather
// than the GEMM path: on enough tiles for the 16 small GEMMs and the transforms to cost less than
// the multiplies they save. Where the transforms run on 16 lanes (AVX-512; the GEMM's switch,
// not the transforms' own, so that tests comparing the two compare the same GEMMs), from 9 tiles
// an image (5 x 5 outputs) and 16 in the batch, one thread, 3 images unless said (ms): 256 -> 256
// channels at 7 x 7 1.40-1.49 on the GEMM path, 0.86-0.92 as Winograd; 128 at 8 x 8 0.50-0.54 and
// 0.24-0.27; 64 at 10 x 10 0.23-0.26 and 0.13; 64 at 6 x 6 0.11 and 0.08; 128 at 5 x 5 0.25 and
// 0.21; 512 at 7 x 7, one image, 1.97-2.74 and 1.62-1.69; at 2 threads 256 at 7 x 7 0.87-0.89
// and 0.51-0.52. Fewer tiles keep the GEMM path: 128 at 4 x 4 0.16 against 0.18 as Winograd;
// 256 at 5 x 5, one image, 0.28-0.30 against 0.43-0.48. With the 8-lane transforms, from 36
// tiles an image (12 x 12 outputs).
bool WinogradPays(int64_t n, int64_t out0, int64_t out1) {
  int64_t tiles = (out0 + 1) / 2 * ((out1 + 1) / 2);
  if (HasAvx512Gemm()) return tiles >= 9 && n * tiles >= 16;
  return tiles >= 36;
}

WinogradBlocks PlanWinogradBlocks(int64_t rows, int64_t tiles_w, int64_t cg, int64_t og,
                                  int threads, int elements) {
  WinogradBlocks p{rows, 0, 0};
  p.per_block = std::clamp<int64_t>((int64_t{1} << 19) / (elements * (cg + og) * tiles_w), 1, rows);
  p.blocks = (rows + p.per_block - 1) / p.per_block;
  // The rows shared evenly: a last block of a few rows would run its 16 GEMMs on a few columns
  // (3 images of 11 tile rows in blocks of 31: 31 and 2).
  p.per_block = (rows + p.blocks - 1) / p.blocks;
  // With threads, a multiple of their number of blocks where the rows allow: each block's
  // transforms and GEMMs then run on one thread, rather than the transforms on one and every
  // small GEMM split across them.
  if (threads > 1) {
    const int64_t t = threads;
    const int64_t want = std::min(rows, (p.blocks + t - 1) / t * t);
    p.per_block = (rows + want - 1) / want;
    p.blocks = (rows + p.per_block - 1) / p.per_block;
  }
  return p;
}

// Whether a convolution may run as Winograd: decided from what is static (kernel, strides,
// dilations, groups, channels), never the image size, so that the step's cache always holds the
// Winograd weights (a small image takes the GEMM path without the cache).
// Winograd's 16 GEMMs have og rows: from 24 output channels they pay on this code (quilt-run
// latency, interleaved, 1 thread, GEMM -> Winograd: 24 -> 24 at 112 x 112 1.49 -> 1.39 ms, 3
// images of 24 -> 24 at 56 x 56 1.11 -> 1.04, 32 -> 32 1.96 -> 1.56, 96 -> 24 at 96 x 192 (a
// text detector's head) 9.1 -> 8.6); at 16 not always (16 -> 16 at 112 x 112 0.68 -> 0.75).
constexpr int64_t kWinogradMinOutChannels = 24;
bool UseWinograd(const ConvGeometry& geo) {
  const Window& w = geo.w;
  return w.rank == 2 && w.kernel[0] == 3 && w.kernel[1] == 3 && w.stride[0] == 1 &&
         w.stride[1] == 1 && w.dilation[0] == 1 && w.dilation[1] == 1 && geo.groups == 1 &&
         geo.cg >= 8 && geo.og >= kWinogradMinOutChannels && w.pad_begin[0] >= 0 &&
         w.pad_begin[1] >= 0;
}

std::shared_ptr<WinogradWeights> WinogradTransform(const float* w, int64_t og, int64_t cg) {
  auto out = std::make_shared<WinogradWeights>();
  out->u.resize(static_cast<size_t>(16 * og * cg));
  for (int64_t o = 0; o < og; ++o) {
    for (int64_t c = 0; c < cg; ++c) {
      float u[16];
      WinogradFilter(w + (o * cg + c) * 9, 1, u);
      for (int e = 0; e < 16; ++e) out->u[static_cast<size_t>((e * og + o) * cg + c)] = u[e];
    }
  }
  for (int e = 0; e < 16 && !GemmReadsAInPlace(); ++e) {
    out->packed.emplace_back(out->u.data() + e * og * cg, cg, og, cg);
  }
  return out;
}

namespace {

// Tile rows [r0, r1) of one image (cg channels of ih x iw; tiles_w tiles a row) transformed into
// columns [col, col + (r1 - r0) * tiles_w) of v ([16][cg][nb]). Per channel and tile row, each of
// the four input rows it reads is copied zero-padded to the tiles' width and split into its even
// and odd columns; B^T runs down the rows and B across each tile's four columns (even t, odd t,
// even t + 1, odd t + 1) as whole-row vector arithmetic on contiguous arrays.
// `rows`: WinogradRowsSize(tiles_w) floats.
int64_t WinogradRowsSize(int64_t tiles_w) { return 9 * (2 * tiles_w + 2); }

// The row loops of WinogradInput, on arrays that do not overlap (so that they vectorize).
QUILT_ALWAYS_INLINE void SplitEvenOdd(const float* __restrict row, int64_t half,
                                      float* __restrict even, float* __restrict odd) {
  for (int64_t t = 0; t < half; ++t) {
    even[t] = row[2 * t];
    odd[t] = row[2 * t + 1];
  }
}

QUILT_ALWAYS_INLINE void WinogradBtRows(const float* __restrict d0, const float* __restrict d1,
                                        const float* __restrict d2, const float* __restrict d3,
                                        int64_t n, float* __restrict r0, float* __restrict r1,
                                        float* __restrict r2, float* __restrict r3) {
  for (int64_t t = 0; t < n; ++t) {
    r0[t] = d0[t] - d2[t];
    r1[t] = d1[t] + d2[t];
    r2[t] = d2[t] - d1[t];
    r3[t] = d1[t] - d3[t];
  }
}

QUILT_ALWAYS_INLINE void WinogradBCols(const float* __restrict e, const float* __restrict o,
                                       int64_t n, float* __restrict v0, float* __restrict v1,
                                       float* __restrict v2, float* __restrict v3) {
  for (int64_t tx = 0; tx < n; ++tx) {
    v0[tx] = e[tx] - e[tx + 1];
    v1[tx] = o[tx] + e[tx + 1];
    v2[tx] = e[tx + 1] - o[tx];
    v3[tx] = o[tx] - o[tx + 1];
  }
}

QUILT_CLONES void WinogradInput(const float* x, int64_t cg, int64_t ih, int64_t iw, int64_t pad_t,
                                int64_t pad_l, int64_t tiles_w, int64_t r0, int64_t r1, float* rows,
                                float* v, int64_t col, int64_t nb) {
  int64_t wp = 2 * tiles_w + 2, half = tiles_w + 1;
  float* padded = rows;
  float *de[4], *dd[4], *re[4], *ro[4];  // even and odd columns of the input rows and of B^T d
  for (int k = 0; k < 4; ++k) {
    de[k] = rows + wp + (2 * k) * half;
    dd[k] = rows + wp + (2 * k + 1) * half;
    re[k] = rows + wp + (8 + 2 * k) * half;
    ro[k] = rows + wp + (9 + 2 * k) * half;
  }
  // Columns of the padded row that read the image: [lo, hi).
  int64_t lo = std::min(wp, pad_l), hi = std::clamp(pad_l + iw, lo, wp);
  for (int64_t c = 0; c < cg; ++c) {
    const float* xc = x + c * ih * iw;
    for (int64_t ty = r0; ty < r1; ++ty) {
      for (int k = 0; k < 4; ++k) {
        int64_t yy = 2 * ty - pad_t + k;
        if (yy < 0 || yy >= ih) {
          std::fill(de[k], de[k] + half, 0.0f);
          std::fill(dd[k], dd[k] + half, 0.0f);
          continue;
        }
        const float* xr = xc + yy * iw - pad_l;
        std::fill(padded, padded + lo, 0.0f);
        std::copy(xr + lo, xr + hi, padded + lo);
        std::fill(padded + hi, padded + wp, 0.0f);
        SplitEvenOdd(padded, half, de[k], dd[k]);
      }
      // B^T d, down the rows
      WinogradBtRows(de[0], de[1], de[2], de[3], half, re[0], re[1], re[2], re[3]);
      WinogradBtRows(dd[0], dd[1], dd[2], dd[3], half, ro[0], ro[1], ro[2], ro[3]);
      int64_t t0 = col + (ty - r0) * tiles_w;
      for (int i = 0; i < 4; ++i) {  // (B^T d) B, across each tile's columns
        WinogradBCols(re[i], ro[i], tiles_w, v + ((i * 4 + 0) * cg + c) * nb + t0,
                      v + ((i * 4 + 1) * cg + c) * nb + t0, v + ((i * 4 + 2) * cg + c) * nb + t0,
                      v + ((i * 4 + 3) * cg + c) * nb + t0);
      }
    }
  }
}

// Tile rows [r0, r1) of one image, columns [col, ...) of the products m ([16][og][nb]), brought
// back to 2x2 outputs in y (the image's og planes of oh x ow): A^T down each tile's four rows of
// products, then A across, a whole tile row at a time; then each plane's rows of the block take
// the epilogue (if active) while they are in cache.
QUILT_CLONES void WinogradOutput(const float* m, int64_t og, int64_t oh, int64_t ow,
                                 int64_t tiles_w, int64_t r0, int64_t r1, float* rows, float* y,
                                 int64_t col, int64_t nb, const Epilogue& epilogue) {
  float* s[2][4];
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) s[i][j] = rows + (i * 4 + j) * tiles_w;
  }
  float* line = rows + 8 * tiles_w;  // one output row, 2 * tiles_w wide
  for (int64_t o = 0; o < og; ++o) {
    float* yo = y + o * oh * ow;
    for (int64_t ty = r0; ty < r1; ++ty) {
      int64_t t0 = col + (ty - r0) * tiles_w;
      for (int j = 0; j < 4; ++j) {
        const float* q0 = m + ((0 * 4 + j) * og + o) * nb + t0;
        const float* q1 = m + ((1 * 4 + j) * og + o) * nb + t0;
        const float* q2 = m + ((2 * 4 + j) * og + o) * nb + t0;
        const float* q3 = m + ((3 * 4 + j) * og + o) * nb + t0;
        for (int64_t tx = 0; tx < tiles_w; ++tx) {
          s[0][j][tx] = q0[tx] + q1[tx] + q2[tx];
          s[1][j][tx] = q1[tx] - q2[tx] - q3[tx];
        }
      }
      for (int i = 0; i < 2; ++i) {
        int64_t yy = 2 * ty + i;
        if (yy >= oh) break;
        for (int64_t tx = 0; tx < tiles_w; ++tx) {
          line[2 * tx] = s[i][0][tx] + s[i][1][tx] + s[i][2][tx];
          line[2 * tx + 1] = s[i][1][tx] - s[i][2][tx] - s[i][3][tx];
        }
        std::copy(line, line + ow, yo + yy * ow);
      }
    }
    // The plane's rows of this block, one span, just written.
    int64_t y0 = 2 * r0, y1 = std::min(oh, 2 * r1);
    epilogue.Channel(yo + y0 * ow, o, (y1 - y0) * ow);
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
#define QUILT_HAS_AVX512_WINOGRAD 1
#define QUILT_WINOGRAD512 __attribute__((target("avx2,fma,avx512f,avx512vl")))

std::atomic<bool> g_winograd512_allowed{true};

// The transforms above on sixteen tiles at a time, in 16-lane vectors, where the CPU has AVX-512:
// the same additions in the same order on each tile, so the same values bit for bit. The rows
// and tile rows of small images are short (7 tiles a row at 14 x 14), and the loops above, a few
// elements each with their copies and splits between, took a third of a Winograd step (128 -> 128
// channels at 14 x 14, 3 images).

// The first n lanes (n in [0, 16]).
QUILT_ALWAYS_INLINE __mmask16 FirstLanes(int64_t n) {
  return static_cast<__mmask16>(FirstLanesBits(n));
}

// The lanes of a vector of 16 image columns from column s that lie in [0, iw): those before
// iw - s less those before -s.
QUILT_ALWAYS_INLINE __mmask16 ImageColumns(int64_t s, int64_t iw) {
  return static_cast<__mmask16>(FirstLanesBits(iw - s) & ~FirstLanesBits(-s));
}

// Columns [s, s + 16) of an image row, zero outside [0, iw): nothing outside is read.
QUILT_ALWAYS_INLINE QUILT_WINOGRAD512 __m512 LoadImageColumns(const float* row, int64_t s,
                                                              int64_t iw) {
  __mmask16 lanes = ImageColumns(s, iw);
  if (!lanes) return _mm512_setzero_ps();
  // Only the lanes in `lanes` are read; the address of lane 0 may lie before the row.
  return _mm512_maskz_loadu_ps(
      lanes, reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) + s * sizeof(float)));
}

// Lanes 1 to 15 of low, then lane 0 of high. (The masked form: GCC 12's unmasked one warns of
// an uninitialized value inside its header.)
QUILT_ALWAYS_INLINE QUILT_WINOGRAD512 __m512 AlignOne(__m512 high, __m512 low) {
  return _mm512_castsi512_ps(
      _mm512_maskz_alignr_epi32(0xffff, _mm512_castps_si512(high), _mm512_castps_si512(low), 1));
}

// B^T d down a tile's four rows (WinogradBtRows).
QUILT_ALWAYS_INLINE QUILT_WINOGRAD512 void WinogradBt512(const __m512* d, __m512* r) {
  r[0] = d[0] - d[2];
  r[1] = d[1] + d[2];
  r[2] = d[2] - d[1];
  r[3] = d[1] - d[3];
}

// WinogradInput on sixteen tiles of a tile row at a time: per input row, its even and odd
// columns and the same one tile on (e[t + 1], o[t + 1]) permuted out of three vectors of the row.
QUILT_WINOGRAD512 void WinogradInput512(const float* x, int64_t cg, int64_t ih, int64_t iw,
                                        int64_t pad_t, int64_t pad_l, int64_t tiles_w, int64_t r0,
                                        int64_t r1, float* v, int64_t col, int64_t nb) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t plane = cg * nb;  // from v's element (i, j) to (i, j + 1)
  for (int64_t c = 0; c < cg; ++c) {
    const float* xc = x + c * ih * iw;
    for (int64_t ty = r0; ty < r1; ++ty) {
      int64_t t0 = col + (ty - r0) * tiles_w;
      for (int64_t tx = 0; tx < tiles_w; tx += 16) {
        __m512 e[4], o[4], e1[4], o1[4];
        int64_t s = 2 * tx - pad_l;  // the image column of the tiles' first padded column
        for (int k = 0; k < 4; ++k) {
          int64_t yy = 2 * ty - pad_t + k;
          if (yy < 0 || yy >= ih) {
            e[k] = o[k] = e1[k] = o1[k] = _mm512_setzero_ps();
            continue;
          }
          const float* row = xc + yy * iw;
          __m512 a = LoadImageColumns(row, s, iw), b = LoadImageColumns(row, s + 16, iw);
          __m512 rest = LoadImageColumns(row, s + 32, iw);
          e[k] = _mm512_permutex2var_ps(a, even, b);
          o[k] = _mm512_permutex2var_ps(a, odd, b);
          // One tile on: lanes 1 to 15 of e and o, then columns 32 and 33.
          e1[k] = AlignOne(rest, e[k]);
          o1[k] = AlignOne(AlignOne(rest, rest), o[k]);
        }
        __m512 re[4], ro[4], re1[4], ro1[4];
        WinogradBt512(e, re);
        WinogradBt512(o, ro);
        WinogradBt512(e1, re1);
        WinogradBt512(o1, ro1);
        __mmask16 lanes = FirstLanes(tiles_w - tx);
        for (int i = 0; i < 4; ++i) {  // (B^T d) B, across each tile's columns (WinogradBCols)
          float* out = v + (i * 4 * cg + c) * nb + t0 + tx;
          _mm512_mask_storeu_ps(out, lanes, re[i] - re1[i]);
          _mm512_mask_storeu_ps(out + plane, lanes, ro[i] + re1[i]);
          _mm512_mask_storeu_ps(out + 2 * plane, lanes, re1[i] - ro[i]);
          _mm512_mask_storeu_ps(out + 3 * plane, lanes, ro[i] - ro1[i]);
        }
      }
    }
  }
}

// WinogradOutput on sixteen tiles of a tile row at a time: A^T and A as there, each output row's
// even and odd columns interleaved into two vectors.
QUILT_WINOGRAD512 void WinogradOutput512(const float* m, int64_t og, int64_t oh, int64_t ow,
                                         int64_t tiles_w, int64_t r0, int64_t r1, float* y,
                                         int64_t col, int64_t nb, const Epilogue& epilogue) {
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const int64_t plane = og * nb;  // from m's element (i, j) to (i + 1, j)
  for (int64_t o = 0; o < og; ++o) {
    float* yo = y + o * oh * ow;
    for (int64_t ty = r0; ty < r1; ++ty) {
      int64_t t0 = col + (ty - r0) * tiles_w;
      for (int64_t tx = 0; tx < tiles_w; tx += 16) {
        __mmask16 lanes = FirstLanes(tiles_w - tx);
        __m512 s[2][4];
        for (int j = 0; j < 4; ++j) {
          const float* q = m + (j * og + o) * nb + t0 + tx;
          __m512 q0 = _mm512_maskz_loadu_ps(lanes, q);
          __m512 q1 = _mm512_maskz_loadu_ps(lanes, q + 4 * plane);
          __m512 q2 = _mm512_maskz_loadu_ps(lanes, q + 8 * plane);
          __m512 q3 = _mm512_maskz_loadu_ps(lanes, q + 12 * plane);
          s[0][j] = q0 + q1 + q2;
          s[1][j] = q1 - q2 - q3;
        }
        int64_t x0 = 2 * tx, cols = std::min<int64_t>(32, ow - x0);
        for (int i = 0; i < 2; ++i) {
          int64_t yy = 2 * ty + i;
          if (yy >= oh) break;
          __m512 left = s[i][0] + s[i][1] + s[i][2];
          __m512 right = s[i][1] - s[i][2] - s[i][3];
          float* out = yo + yy * ow + x0;
          _mm512_mask_storeu_ps(out, FirstLanes(cols), _mm512_permutex2var_ps(left, first, right));
          if (cols > 16) {
            _mm512_mask_storeu_ps(out + 16, FirstLanes(cols - 16),
                                  _mm512_permutex2var_ps(left, second, right));
          }
        }
      }
    }
    int64_t y0 = 2 * r0, y1 = std::min(oh, 2 * r1);
    epilogue.Channel(yo + y0 * ow, o, (y1 - y0) * ow);
  }
}
#endif

}  // namespace

void WinogradConv(const float* x, const WinogradWeights& u, float* y, const ConvGeometry& geo,
                  const Epilogue& epilogue, KernelContext& ctx) {
  const Window& w = geo.w;
  int64_t ih = w.in[0], iw = w.in[1], oh = w.out[0], ow = w.out[1];
  int64_t cg = geo.cg, og = geo.og;
  int64_t tiles_w = (ow + 1) / 2, tiles_h = (oh + 1) / 2;
  // Blocks of tile rows across the batch's images (a block may end one image and start the
  // next), their transformed inputs and products near 2 MiB.
  const WinogradBlocks plan = PlanWinogradBlocks(geo.n * tiles_h, tiles_w, cg, og, ctx.threads());
  const int64_t rows_total = plan.rows, per_block = plan.per_block, blocks = plan.blocks;
  const int64_t threads = static_cast<int64_t>(ctx.threads());
  int64_t most = per_block * tiles_w;
  // The 16-lane transforms where the CPU has AVX-512 (and the GEMM's switch and the transforms'
  // own allow them: tests compare the two).
#if defined(QUILT_HAS_AVX512_WINOGRAD)
  const bool wide = HasAvx512Gemm() && g_winograd512_allowed.load(std::memory_order_relaxed);
#endif
  auto run = [&](int64_t blk, rt::ThreadPool* gemm_pool, float* v, float* m, float* rows) {
    int64_t r0 = blk * per_block, r1 = std::min(rows_total, r0 + per_block);
    int64_t n = (r1 - r0) * tiles_w;
    // The block's rows, image by image: (image, first tile row, last + 1, first column).
    auto each = [&](auto&& fn) {
      for (int64_t r = r0; r < r1;) {
        int64_t b = r / tiles_h, ty0 = r % tiles_h, ty1 = std::min(tiles_h, ty0 + (r1 - r));
        fn(b, ty0, ty1, (r - r0) * tiles_w);
        r += ty1 - ty0;
      }
    };
    each([&](int64_t b, int64_t ty0, int64_t ty1, int64_t col) {
      const float* xb = x + b * geo.c * ih * iw;
#if defined(QUILT_HAS_AVX512_WINOGRAD)
      if (wide) {
        WinogradInput512(xb, cg, ih, iw, w.pad_begin[0], w.pad_begin[1], tiles_w, ty0, ty1, v, col,
                         n);
        return;
      }
#endif
      WinogradInput(xb, cg, ih, iw, w.pad_begin[0], w.pad_begin[1], tiles_w, ty0, ty1, rows, v, col,
                    n);
    });
    for (int e = 0; e < 16; ++e) {
      Sgemm(og, n, cg, u.u.data() + e * og * cg, cg, MatrixB(v + e * cg * n, cg, n), m + e * og * n,
            n, gemm_pool, nullptr, u.Packed(e));
    }
    each([&](int64_t b, int64_t ty0, int64_t ty1, int64_t col) {
      float* yb = y + b * geo.o * oh * ow;
#if defined(QUILT_HAS_AVX512_WINOGRAD)
      if (wide) {
        WinogradOutput512(m, og, oh, ow, tiles_w, ty0, ty1, yb, col, n, epilogue);
        return;
      }
#endif
      WinogradOutput(m, og, oh, ow, tiles_w, ty0, ty1, rows, yb, col, n, epilogue);
    });
  };
  // The scratch of a block (this thread's Winograd slots): every element is written
  // before it is read, so none is cleared.
  struct Buffers {
    float *v, *m, *rows;
  };
  auto buffers = [&] {
    return Buffers{Scratch(ScratchSlot::kWinogradInput, 16 * cg * most),
                   Scratch(ScratchSlot::kWinogradProduct, 16 * og * most),
                   Scratch(ScratchSlot::kWinogradRows, WinogradRowsSize(tiles_w))};
  };
  if (blocks < threads) {
    // Few blocks (small images): one at a time, each GEMM on the run's threads.
    Buffers b = buffers();
    for (int64_t blk = 0; blk < blocks; ++blk) run(blk, ctx.thread_pool(), b.v, b.m, b.rows);
  } else {
    ctx.ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
      Buffers b = buffers();
      for (int64_t blk = b0; blk < b1; ++blk) run(blk, nullptr, b.v, b.m, b.rows);
    });
  }
}

void SetWinograd512AllowedForTesting(bool allowed) {
#if defined(QUILT_HAS_AVX512_WINOGRAD)
  g_winograd512_allowed.store(allowed);
#else
  (void)allowed;
#endif
}

}  // namespace quilt::cpu::nn
