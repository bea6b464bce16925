// Winograd F(2x2, 3x3) on channel-blocked data (conv_blocked.h), for the blocked kernel's dense
// 3x3 convs of unit strides: the transforms of conv_fast.cc's Winograd with a lane per channel,
// the 16 products as pointwise blocked convs through the dense tiles (conv_blocked_internal.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "targets/cpu/kernels/conv_blocked_internal.h"

namespace quilt::cpu::nn::blocked {
namespace {

// ---- Winograd F(2x2, 3x3) on blocked data ----------------------------------------------------
//
// The transforms of conv_fast.cc's Winograd with a lane per channel: each 4x4 input tile of a
// block of 16 channels (16 vectors) becomes its 16 elements V_e = (B^T d B)_e, each stored as a
// pixel of a blocked "image" of one row of tiles per element; the 16 products M_e = U_e V_e are
// pointwise blocked convolutions of those images (RunItems, the dense tiles above), and each
// tile's 16 elements M_e of a block of output channels become its 2x2 outputs (A^T m A), the
// epilogue applied as they are stored. No transposes: every load and store is a vector of 16
// channels.

// The weights' transform: U_e (o x i) for each element, laid out as a pointwise conv's weight
// (BlockConvWeight of one tap), one element after another.
struct BlockedWinogradWeights {
  std::vector<float> u;
};

// From w laid out by BlockConvWeight for o x i channels and 3x3 taps (blocked data).
std::shared_ptr<BlockedWinogradWeights> BlockedWinogradTransform(const float* w, int64_t o,
                                                                 int64_t i) {
  auto out = std::make_shared<BlockedWinogradWeights>();
  out->u.resize(static_cast<size_t>(16 * o * i));
  const int64_t group = kBlocksPerGroup * kB16;
  for (int64_t oc = 0; oc < o; ++oc) {
    const int64_t first = oc / group * group, width = std::min(group, o - first);
    for (int64_t ic = 0; ic < i; ++ic) {
      // Tap t of (oc, ic) at g[t * width * 16] (BlockConvWeight, in blocks of 16 input channels).
      const float* g =
          w + first * i * 9 + ((ic / kB16) * 9 * kB16 + ic % kB16) * width + oc - first;
      float u[16];
      WinogradFilter(g, width * kB16, u);
      for (int e = 0; e < 16; ++e)
        out->u[static_cast<size_t>(e * o * i + first * i + ic * width + oc - first)] = u[e];
    }
  }
  return out;
}

// The tiles of a Winograd block: tile rows [r0, r1) of the batch (row r: image r / tiles_h, tile
// row r % tiles_h), `count` tiles; element e of block b of tile t at ((e * blocks + b) * count +
// t) * 16 of v (input) and m (products).
struct WinoTiles {
  int64_t tiles_w, tiles_h, r0, r1, count;
};

// B^T d down a tile's rows (d[row][col] -> r[row][col]), then (.) B across its columns; T: a
// vector of 16 channels, or one channel's float.
template <typename T>
QUILT_ALWAYS_INLINE void WinoInputTile(const T (&d)[4][4], T (&v)[16]) {
  T r[4][4];
  for (int j = 0; j < 4; ++j) {
    r[0][j] = d[0][j] - d[2][j];
    r[1][j] = d[1][j] + d[2][j];
    r[2][j] = d[2][j] - d[1][j];
    r[3][j] = d[1][j] - d[3][j];
  }
  for (int i = 0; i < 4; ++i) {
    v[i * 4 + 0] = r[i][0] - r[i][2];
    v[i * 4 + 1] = r[i][1] + r[i][2];
    v[i * 4 + 2] = r[i][2] - r[i][1];
    v[i * 4 + 3] = r[i][1] - r[i][3];
  }
}

// A^T m A: a tile's 2x2 outputs y from its 16 elements m (element (i, j) at m[i * 4 + j]).
template <typename T>
QUILT_ALWAYS_INLINE void WinoOutputTile(const T (&m)[16], T (&y)[2][2]) {
  T s[2][4];
  for (int j = 0; j < 4; ++j) {  // A^T m down the columns
    s[0][j] = m[j] + m[4 + j] + m[8 + j];
    s[1][j] = m[4 + j] - m[8 + j] - m[12 + j];
  }
  for (int i = 0; i < 2; ++i) {
    y[i][0] = s[i][0] + s[i][1] + s[i][2];
    y[i][1] = s[i][1] - s[i][2] - s[i][3];
  }
}

// Sixteen zeros: the pixels of a tile's window in the padding.
alignas(64) constexpr float kZeros[kB16] = {};

// One tile's 16 elements of a block from its window's pixels (src[i][j]: a pixel's 16 channels)
// to out + e * e_stride. Without AVX-512 (16 registers of 8 lanes), each half of the block in
// turn: a generic 16-lane vector there is kept in memory (conv_blocked_internal.h), and with the
// transforms a channel at a time opennsfw's Winograd convs of 32 channels over 56 x 56 took 2.8
// ms each, 1.65 so.
template <bool kWide>
QUILT_ALWAYS_INLINE void WinoInputAt(const float* const (&src)[4][4], float* out,
                                     int64_t e_stride) {
  if constexpr (kWide) {
    V16 d[4][4], t[16];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) Load16(&d[i][j], src[i][j]);
    WinoInputTile(d, t);
    for (int e = 0; e < 16; ++e) Store16(out + e * e_stride, t[e]);
  } else {
    for (int h = 0; h < kB16; h += 8) {
      V8 d[4][4], t[16];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) LoadV(&d[i][j], src[i][j] + h);
      WinoInputTile(d, t);
      for (int e = 0; e < 16; ++e) StoreV(out + e * e_stride + h, t[e]);
    }
  }
}

// Input blocks [cb0, cb1) of the block's tiles into v.
template <bool kWide>
QUILT_ALWAYS_INLINE void WinoInputOf(const Blocked& c, const float* x, const WinoTiles& w,
                                     int64_t cb0, int64_t cb1, float* v) {
  const int64_t plane = c.ih * c.iw * kB16, e_stride = c.ib * w.count * kB16;
  for (int64_t cb = cb0; cb < cb1; ++cb) {
    for (int64_t r = w.r0; r < w.r1; ++r) {
      const int64_t b = r / w.tiles_h, ty = r % w.tiles_h;
      const float* xp = x + (b * c.ib + cb) * plane;
      const int64_t iy0 = 2 * ty - c.ph;
      const bool rows_inside = iy0 >= 0 && iy0 + 4 <= c.ih;
      float* out = v + (cb * w.count + (r - w.r0) * w.tiles_w) * kB16;
      for (int64_t tx = 0; tx < w.tiles_w; ++tx) {
        const int64_t ix0 = 2 * tx - c.pw;
        const float* src[4][4];
        if (rows_inside && ix0 >= 0 && ix0 + 4 <= c.iw) {  // no pixel of the window in the padding
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) src[i][j] = xp + ((iy0 + i) * c.iw + ix0 + j) * kB16;
        } else {
          for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 4; ++j) {
              const int64_t iy = iy0 + i, ix = ix0 + j;
              const bool inside = iy >= 0 && iy < c.ih && ix >= 0 && ix < c.iw;
              src[i][j] = inside ? xp + (iy * c.iw + ix) * kB16 : kZeros;
            }
          }
        }
        WinoInputAt<kWide>(src, out + tx * kB16, e_stride);
      }
    }
  }
}

// Output blocks [ob0, ob1) of the block's tiles from m: A^T m A, the epilogue, into y (and its
// residual).
template <bool kWide>
QUILT_ALWAYS_INLINE void WinoOutputOf(const Blocked& c, const float* m, const WinoTiles& w,
                                      int64_t ob0, int64_t ob1, float* y, const float* res,
                                      const Epilogue& epilogue) {
  using Ep = LaneEpilogue<kWide>;
  const int64_t plane = c.oh * c.ow * kB16, e_stride = c.ob * w.count * kB16;
  alignas(Ep) unsigned char storage[sizeof(Ep)];
  Ep* lanes = reinterpret_cast<Ep*>(storage);
  for (int64_t ob = ob0; ob < ob1; ++ob) {
    const Ep* ep = nullptr;
    if (epilogue.active) ep = new (lanes) Ep(epilogue.e, ob * kB16, TakeLanes{});
    for (int64_t r = w.r0; r < w.r1; ++r) {
      const int64_t b = r / w.tiles_h, ty = r % w.tiles_h;
      const int64_t at = (b * c.ob + ob) * plane;
      const float* in = m + (ob * w.count + (r - w.r0) * w.tiles_w) * kB16;
      for (int64_t tx = 0; tx < w.tiles_w; ++tx) {
        if constexpr (!kWide) {
          // Each half of the block (WinoInputAt), then the tile's rows stored and their epilogue
          // on them (FinishTile, out of line).
          V8 yv[2][2][2];  // [half][row][column]
          for (int h = 0; h < 2; ++h) {
            V8 mv[16];
            for (int e = 0; e < 16; ++e) LoadV(&mv[e], in + e * e_stride + tx * kB16 + h * 8);
            WinoOutputTile(mv, yv[h]);
          }
          const int n = 2 * tx + 1 < c.ow ? 2 : 1;
          for (int i = 0; i < 2 && 2 * ty + i < c.oh; ++i) {
            const int64_t o = at + ((2 * ty + i) * c.ow + 2 * tx) * kB16;
            const float* r = res ? res + o : nullptr;
            if (r && r == y + o) r = SetAside(r, n);  // a residual in y's memory (StoreTile)
            for (int j = 0; j < n; ++j) StoreHalves(y + o + j * kB16, yv[0][i][j], yv[1][i][j]);
            if (ep) FinishTile(*ep, y + o, n, r);
          }
        } else {
          V16 mv[16], out[2][2];
          for (int e = 0; e < 16; ++e) Load16(&mv[e], in + e * e_stride + tx * kB16);
          WinoOutputTile(mv, out);
          for (int i = 0; i < 2 && 2 * ty + i < c.oh; ++i) {
            for (int j = 0; j < 2 && 2 * tx + j < c.ow; ++j) {
              const int64_t o = at + ((2 * ty + i) * c.ow + 2 * tx + j) * kB16;
              if (ep) {
                if (res) {
                  V16 rv;
                  Load16(&rv, res + o);
                  ep->template Apply<1>(&out[i][j], &rv);
                } else {
                  ep->template Apply<1>(&out[i][j]);
                }
              }
              Store16(y + o, out[i][j]);
            }
          }
        }
      }
    }
  }
}

// What a Winograd step's phases read: the step's blocked geometry, its data, transformed weights,
// output, residual and epilogue, and the product's plan (the pointwise convs of one element).
struct WinoStep {
  const Blocked* c;
  const float *x, *u, *res;
  float* y;
  const Epilogue* epilogue;
  int64_t segments;
};

// The 16 products of a block's tiles, items [i0, i1) of 16 * chunks (element, then a chunk of
// 96 tiles): M_e = U_e V_e as a pointwise blocked conv of the element's row of tiles.
template <bool kWide>
QUILT_ALWAYS_INLINE void WinoProductsOf(const WinoStep& s, const WinoTiles& w, const float* v,
                                        float* m, int64_t i0, int64_t i1) {
  const Blocked& c = *s.c;
  Blocked p = c;
  p.n = 1;
  p.ih = p.oh = 1;
  p.iw = p.ow = w.count;
  p.kh = p.kw = p.sh = p.sw = p.dh = p.dw = 1;
  p.ph = p.pw = 0;
  p.pointwise = true;
  p.x_block = w.count * kB16;
  p.cb0 = 0;
  p.cb1 = c.ib;
  Epilogue none = *s.epilogue;
  none.active = false;
  constexpr int64_t kChunk = 96;
  const int64_t chunks = (w.count + kChunk - 1) / kChunk;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t e = i / chunks, col = i % chunks;
    Work k{&p,
           v + e * c.ib * w.count * kB16,
           s.u + e * c.ob * c.ib * kB16 * kB16,
           nullptr,
           m + e * c.ob * w.count * kB16,
           &none,
           kChunk,
           1,
           1,
           s.segments};
    // The dense tiles' own out-of-line copies (inlined here, they were another 190 KB of the
    // library).
#if defined(QUILT_BLOCKED_AVX512)
    if constexpr (kWide) {
      RunPointwiseItems512(k, col, col + 1);
      continue;
    }
#endif
    RunItemsAny(k, col, col + 1);
  }
}

template <bool kWide>
QUILT_ALWAYS_INLINE void WinoPhase(const WinoStep& s, const WinoTiles& w, int phase, float* v,
                                   float* m, int64_t i0, int64_t i1) {
  switch (phase) {
    case 0:
      WinoInputOf<kWide>(*s.c, s.x, w, i0, i1, v);
      break;
    case 1:
      WinoProductsOf<kWide>(s, w, v, m, i0, i1);
      break;
    default:
      WinoOutputOf<kWide>(*s.c, m, w, i0, i1, s.y, s.res, *s.epilogue);
  }
}

#if defined(QUILT_BLOCKED_AVX512)
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void WinoPhase512(
    const WinoStep& s, const WinoTiles& w, int phase, float* v, float* m, int64_t i0, int64_t i1) {
  WinoPhase<true>(s, w, phase, v, m, i0, i1);
}
#endif
// Without AVX-512: an AVX2 copy, and one for the baseline (not QUILT_CLONES nor GCC's copies per
// phase: the products they call are RunItemsAny's clones). With the baseline's alone (pairs of
// SSE registers) opennsfw's Winograd convs ran 3-10% slower (32 channels over 56 x 56, 3 images:
// 1.78-1.84 ms against 1.65; 12 KB of code).
QUILT_AVX2_ONLY
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noclone))
#endif
void WinoPhaseAvx2(const WinoStep& s, const WinoTiles& w, int phase, float* v, float* m, int64_t i0,
                   int64_t i1) {
  WinoPhase<false>(s, w, phase, v, m, i0, i1);
}
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noclone))
#endif
void WinoPhaseAny(const WinoStep& s, const WinoTiles& w, int phase, float* v, float* m, int64_t i0,
                  int64_t i1) {
  WinoPhase<false>(s, w, phase, v, m, i0, i1);
}

void RunBlockedWinograd(KernelContext& ctx, const Blocked& c, const WinoStep& step) {
  WinoTiles all{(c.ow + 1) / 2, (c.oh + 1) / 2, 0, 0, 0};
  // Blocks of tile rows across the batch's images, as conv_fast.cc's Winograd.
  const int64_t cg = c.ib * kB16, og = c.ob * kB16;
  const WinogradBlocks plan =
      PlanWinogradBlocks(c.n * all.tiles_h, all.tiles_w, cg, og, ctx.threads());
  const int64_t rows_total = plan.rows, per_block = plan.per_block, blocks = plan.blocks;
  const int64_t threads = static_cast<int64_t>(ctx.threads());
  const int64_t most = per_block * all.tiles_w;
  auto phase = [&](const WinoTiles& w, int ph, float* v, float* m, int64_t i0, int64_t i1) {
#if defined(QUILT_BLOCKED_AVX512)
    if (HasAvx512Gemm()) return WinoPhase512(step, w, ph, v, m, i0, i1);
#endif
    if (HasAvx2Fma()) return WinoPhaseAvx2(step, w, ph, v, m, i0, i1);
    WinoPhaseAny(step, w, ph, v, m, i0, i1);
  };
  auto tiles = [&](int64_t blk) {
    WinoTiles w = all;
    w.r0 = blk * per_block;
    w.r1 = std::min(rows_total, w.r0 + per_block);
    w.count = (w.r1 - w.r0) * w.tiles_w;
    return w;
  };
  // Every element of the scratch is written before it is read.
  auto scratch = [&](float** v, float** m) {
    *v = Scratch(ScratchSlot::kWinogradInput, 16 * cg * most);
    *m = Scratch(ScratchSlot::kWinogradProduct, 16 * og * most);
  };
  if (blocks >= threads) {
    ctx.ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
      float *v, *m;
      scratch(&v, &m);
      for (int64_t blk = b0; blk < b1; ++blk) {
        WinoTiles w = tiles(blk);
        const int64_t chunks = (w.count + 95) / 96;
        phase(w, 0, v, m, 0, c.ib);
        phase(w, 1, v, m, 0, 16 * chunks);
        phase(w, 2, v, m, 0, c.ob);
      }
    });
    return;
  }
  // Few blocks (small images): each phase of a block on the run's threads.
  float *v, *m;
  scratch(&v, &m);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    WinoTiles w = tiles(blk);
    const int64_t counts[3] = {c.ib, 16 * ((w.count + 95) / 96), c.ob};
    for (int ph = 0; ph < 3; ++ph) {
      ctx.ParallelFor(counts[ph], 1, [&](int64_t i0, int64_t i1) { phase(w, ph, v, m, i0, i1); });
    }
  }
}

}  // namespace

// Where the kernels run on 8 lanes (no AVX-512), Winograd takes every plane of 4 x 4 outputs or
// more: against the direct tiles, whose rows of a few pixels leave the multiply-adds waiting on
// each other, its products are pointwise convs over all the tiles at once. The 3x3 conv of a
// chain of 1x1, 3x3 + bias + relu, 1x1, 1x1 (ms, one thread, the median of 20 runs' profiles;
// AMD EPYC, AVX2): 512 -> 512 channels over 7 x 7, one image, 6.2 direct and 2.9 as Winograd; 3
// images 21 and 7.1; 256 at 4 x 4, one image, 0.56 and 0.27; 3 images 1.6 and 0.40; 128 at 5 x 5
// 0.14 and 0.086; 32 at 4 x 4 0.009 and 0.005; 64 at 12 x 12, 3 images, 0.51 and 0.22; at two
// threads 512 at 7 x 7 0.68 and 0.41, 512 at 4 x 4 1.15 and 1.07-1.14. Smaller planes stay
// direct: 512 at 3 x 3 1.26-1.36 against 1.39-1.41 as Winograd, at 2 x 2 0.49 and 0.70-0.88;
// 128 at 3 x 3, two threads, 0.035 and 0.057.
namespace {
bool WinogradPaysBlocked(const Blocked& c) {
  if (HasAvx512Gemm()) return WinogradPays(c.n, c.oh, c.ow);
  return c.oh >= 4 && c.ow >= 4;
}
}  // namespace

bool TakesWinograd(const Blocked& c, bool plain) {
  return !plain && !c.depthwise && c.kh == 3 && c.kw == 3 && c.sh == 1 && c.sw == 1 && c.dh == 1 &&
         c.dw == 1 && c.ph >= 0 && c.pw >= 0 && WinogradPaysBlocked(c);
}

void RunWinograd(KernelContext& ctx, const Blocked& c, const float* x, const float* w, int64_t o,
                 int64_t i, const float* residual, float* y, const Epilogue& epilogue) {
  // The weights' transform made once, kept in the step's cache.
  auto make = [&] { return BlockedWinogradTransform(w, o, i); };
  std::shared_ptr<const BlockedWinogradWeights> u =
      ctx.cache() ? ctx.cache()->Get<BlockedWinogradWeights>(make) : make();
  // The products' input blocks in parts of 64 KB of a group's weights (one tap), as the
  // pointwise convs over short rows (a Winograd block is a few chunks of tiles).
  const int64_t per_block = std::min(kBlocksPerGroup, c.ob) * kB16 * kB16 * int64_t{sizeof(float)};
  WinoStep step{&c,
                x,
                u->u.data(),
                residual,
                y,
                &epilogue,
                std::clamp<int64_t>((per_block * c.ib + (64 << 10) - 1) / (64 << 10), 1, c.ib)};
  RunBlockedWinograd(ctx, c, step);
}

}  // namespace quilt::cpu::nn::blocked
