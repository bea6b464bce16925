// The parts of the fast float32 convolution (ConvFast) shared by its files: conv_fast.cc (the
// GEMM paths, and ConvFast, which picks the path), conv_winograd.cc (Winograd F(2x2, 3x3)) and
// depthwise_fast.cc (the direct kernels: depthwise, and first layers over a few input channels).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "targets/cpu/kernels/conv_geo.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/nn_internal.h"

namespace quilt::cpu::nn {

// The epilogue of ConvReference in float: per output channel, the adds and multiplies, a bias
// (none: -0, which changes no value), the activation (bounds, infinite when there is none), then
// the ops after it.
struct Epilogue {
  GemmEpilogue e;
  bool active = false;

  explicit Epilogue(const ConvGeometry& geo) {
    // The adds and multiplies in order; a last add is the bias the activation's pass adds.
    int n = geo.affines;
    bool bias = n > 0 && geo.affine[n - 1].op == 'b';
    auto step = [](const Tensor* t) -> int64_t { return t->NumElements() == 1 ? 0 : 1; };
    for (int i = 0; i < n; ++i) {
      const Tensor* t = geo.affine[i].t;
      if (bias && i == n - 1) {
        e.bias = t->Data<float>();
        e.bias_step = step(t);
      } else {
        e.pre.Add(geo.affine[i].op, t->Data<float>(), step(t));
      }
    }
    if (geo.clamp) {
      e.lo = static_cast<float>(geo.lo);
      e.hi = static_cast<float>(geo.hi);
    }
    e.hardswish = geo.hardswish;
    e.hard_swish = geo.hard_swish;
    e.smooth = geo.smooth;
    e.negative_slope = geo.negative_slope;
    if (geo.slope) {
      e.slope = geo.slope->Data<float>();
      e.slope_step = step(geo.slope);
    }
    e.alpha = static_cast<float>(geo.alpha);  // as nn.leakyrelu's float32 kernel
    for (int i = 0; i < geo.posts; ++i) {
      e.post.Add(geo.post[i].op, geo.post[i].t->Data<float>(), step(geo.post[i].t));
    }
    active = n > 0 || geo.posts > 0 || geo.clamp || geo.hardswish || geo.hard_swish ||
             geo.smooth != vmath::Smooth::kNone || geo.negative_slope || geo.residual;
  }

  // The epilogue of the GEMM of output channels [oc, ...), or null when there is none.
  const GemmEpilogue* From(int64_t oc, GemmEpilogue* out) const {
    if (!active) return nullptr;
    *out = e;
    out->pre = e.pre.From(oc);
    out->post = e.post.From(oc);
    if (e.bias) out->bias = e.bias + oc * e.bias_step;
    if (e.slope) out->slope = e.slope + oc * e.slope_step;
    return out;
  }

  // Whether a kernel applies it to its sums in registers (RowEpilogue), not as a pass after.
  bool InRegisters() const { return active && e.smooth == vmath::Smooth::kNone; }

  // Output channel oc, `size` values at y.
  void Channel(float* y, int64_t oc, int64_t size) const {
    if (active) FinishRow(e, y, size, oc);
  }
};

// A grouped convolution of one input channel per group: each output channel computed directly,
// its epilogue applied as it is done (depthwise_fast.cc).
Status DepthwiseConvFast(KernelContext& ctx, const ConvGeometry& geo, const Geo& g,
                         const Epilogue& epilogue);

// A network's first layer, 3x3 of stride 2 over one to four input channels, computed directly
// where the CPU has AVX2 and FMA; false (nothing done) for any other convolution
// (depthwise_fast.cc).
bool SmallDirectConvFast(KernelContext& ctx, const ConvGeometry& geo, const Geo& g,
                         const Epilogue& epilogue);

// Winograd F(2x2, 3x3) (conv_winograd.cc; on blocked data, conv_blocked_winograd.cc): U = G g G^T
// of one 3x3 filter (tap t at g[t * tap_stride]), element (i, j) at u[i * 4 + j]; and whether a
// convolution that may take it does on n images of out0 x out1 outputs (enough tiles for the
// transforms to cost less than the multiplies they save).
void WinogradFilter(const float* g, int64_t tap_stride, float u[16]);
bool WinogradPays(int64_t n, int64_t out0, int64_t out1);
// The tile rows of a Winograd conv's batch (`rows`: images times tile rows, tiles_w tiles a row)
// in blocks whose transformed inputs and products (cg and og channels, `elements` a tile: 16 for
// F(2x2), 36 for F(4x4)) are near 2 MiB: per_block rows a block (the last may have fewer),
// `blocks` of them, a multiple of the threads where the rows allow (each block then runs on one
// thread).
struct WinogradBlocks {
  int64_t rows, per_block, blocks;
};
WinogradBlocks PlanWinogradBlocks(int64_t rows, int64_t tiles_w, int64_t cg, int64_t og,
                                  int threads, int elements = 16);

// ConvFast's Winograd F(2x2, 3x3) (conv_winograd.cc): whether a convolution may take it (decided
// from what is static, so that the step's cache always holds the transformed weights), the
// weights' transform, and the convolution of x by it into y with the epilogue.
bool UseWinograd(const ConvGeometry& geo);
// The transformed weights: U_e (og x cg) for each of the 16 elements, row-major, and packed where
// the GEMM does not read A's rows in place. (With AVX-512 a packed copy beside the rows doubled
// the memory these weights take, 16/9 of the kernel's, and ran no faster: nudenet-320n at 2
// threads 55.1 -> 43.8 MB peak and 11.0-11.2 -> 10.9-11.0 ms, opennsfw 99.6 -> 80.0 MB and
// 26.6-26.8 -> 25.6 ms without it.)
struct WinogradWeights {
  std::vector<float> u;         // [16][og][cg]
  std::vector<PackedA> packed;  // empty, or one per element
  const PackedA* Packed(int e) const {
    return packed.empty() ? nullptr : &packed[static_cast<size_t>(e)];
  }
};

std::shared_ptr<WinogradWeights> WinogradTransform(const float* w, int64_t og, int64_t cg);
void WinogradConv(const float* x, const WinogradWeights& u, float* y, const ConvGeometry& geo,
                  const Epilogue& epilogue, KernelContext& ctx);

}  // namespace quilt::cpu::nn
