// Shared between the files of the nn and conv kernel families (nn.cc, nn_norm.cc, conv.cc,
// pool.cc): kernels listed in another file's table, and the sliding-window geometry of
// convolution and pooling.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/src/kernel.h"
#include "targets/cpu/kernels/util.h"
#include "targets/cpu/kernels/vmath.h"

namespace quilt::cpu::nn {

// nn_norm.cc
Status BatchNorm(KernelContext& ctx);
// Float32 fast paths (elementwise_fast.cc); other types go to the reference kernels.
Status BatchNormFast(KernelContext& ctx);
Status ReluReference(KernelContext& ctx);  // nn.cc
Status ReluFast(KernelContext& ctx);
Status PReluReference(KernelContext& ctx);  // nn.cc
// Float32: each (image, channel) row at once, the slope a scalar along it (elementwise_fast.cc).
Status PReluFast(KernelContext& ctx);
// The reference activations and softmax (nn.cc) and their float32 paths (elementwise_fast.cc):
// hard_swish, hard_sigmoid and leakyrelu give the reference's values bit for bit; silu, gelu and
// softmax go through vmath.h (a few ulp; gelu within 2e-7 absolute where 1 + erf cancels);
// softmax over the last axis only.
Status HardSwishReference(KernelContext& ctx);
Status HardSigmoidReference(KernelContext& ctx);
Status LeakyReluReference(KernelContext& ctx);
Status SiluReference(KernelContext& ctx);
Status GeluReference(KernelContext& ctx);
Status SoftmaxReference(KernelContext& ctx);
Status HardSwishFast(KernelContext& ctx);
Status HardSigmoidFast(KernelContext& ctx);
Status LeakyReluFast(KernelContext& ctx);
Status SiluFast(KernelContext& ctx);
Status GeluFast(KernelContext& ctx);
Status SoftmaxFast(KernelContext& ctx);
Status AdaptiveAvgPoolFast(KernelContext& ctx);  // global average pooling
Status InstanceNorm(KernelContext& ctx);
Status LayerNorm(KernelContext& ctx);
// Float32 over trailing axes with per-row parameters (norm_fast.cc); the rest: LayerNorm.
Status LayerNormFast(KernelContext& ctx);
Status LayerNormStats(KernelContext& ctx);
Status GroupNorm(KernelContext& ctx);
Status RmsNorm(KernelContext& ctx);
Status MeanVarianceNorm(KernelContext& ctx);
Status Lrn(KernelContext& ctx);

// pool.cc
Status MaxPool(KernelContext& ctx);
// Float32 max pooling without indices (pool_fast.cc); other types go to MaxPool.
Status MaxPoolFast(KernelContext& ctx);
Status MaxPoolWithIndices(KernelContext& ctx);
Status AvgPool(KernelContext& ctx);
Status AvgPoolFast(KernelContext& ctx);  // float32; the reference's sums, no cell lists
Status LpPool(KernelContext& ctx);
Status AdaptiveAvgPool(KernelContext& ctx);
Status AdaptiveMaxPool(KernelContext& ctx);
// Float32 adaptive max pooling, the same values as AdaptiveMaxPool bit for bit; other types go
// to it.
Status AdaptiveMaxPoolFast(KernelContext& ctx);
Status MaxUnpool(KernelContext& ctx);

// A sliding window over up to 3 spatial dims; unused trailing dims are size 1 with kernel 1,
// stride 1, dilation 1 and no padding, so loops can always run over 3 dims.
constexpr int kMaxSpatial = 3;
struct Window {
  int rank = 0;  // spatial dims in use
  int64_t in[kMaxSpatial] = {1, 1, 1};
  int64_t out[kMaxSpatial] = {1, 1, 1};
  int64_t kernel[kMaxSpatial] = {1, 1, 1};
  int64_t stride[kMaxSpatial] = {1, 1, 1};
  int64_t dilation[kMaxSpatial] = {1, 1, 1};
  int64_t pad_begin[kMaxSpatial] = {0, 0, 0};
  int64_t pad_end[kMaxSpatial] = {0, 0, 0};
  int64_t InSize() const { return in[0] * in[1] * in[2]; }
  int64_t OutSize() const { return out[0] * out[1] * out[2]; }
  int64_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// The window of a conv or pool over spatial dims `in` with kernel dims `kernel`, from the
// attributes strides, dilation, padding, ceil_mode and auto_pad (ir/ops/nn.def), with the output
// size computed as the IR rule does.
Status MakeWindow(const rt::AttrView& attrs, std::span<const int64_t> in,
                  std::span<const int64_t> kernel, Window* w);

// Convolution (conv.cc, conv_fast.cc): data (N, C, spatial...), weight (O, C / groups,
// kernel...) -> (N, O, out...).
//
// A step may carry an epilogue (the compiler folds following adds and multiplies by constants and
// an activation into it, targets/fuse_epilogue.h): an optional third input `bias` of O values (any
// shape), added per output channel; or, with the attribute affine (up to three letters, 'b' an
// add, 's' a multiply), one input per letter after the weight, of O values or of one for every
// channel, applied in order, each rounded as the add and multiply kernels round it; then the
// attribute activation = "relu" (max(v, 0)), "clip" (bounds
// activation_min, activation_max, each infinite when absent), "hardswish"
// (v * min(max(v + 3, 0), 6), each step rounded as the add, clip and multiply kernels round it)
// "hard_swish" (ONNX HardSwish: v * max(0, min(1, v / 6 + 0.5)), rounded as nn.hard_swish's
// kernel rounds it), "silu" (v * sigmoid(v), the sigmoid and multiply kernels' values),
// "sigmoid" (the sigmoid kernel's values),
// "leaky_relu" (v < 0 ? v * activation_alpha : v, as nn.leakyrelu rounds it) or "prelu"
// (v < 0 ? v * slope : v, as nn.prelu, the slope one more input of O values or of one), with NaN
// and -0 kept as the relu, clip and multiply kernels keep them; then, with the attribute post (up
// to three letters, 'b' add, 's' multiply, 'd' divide by, 'x' maximum, 'n' minimum: the maximum
// and minimum kernels' values with v the first operand), one more input per letter, applied the
// same way. With the attribute residual (1), one more input of the output's shape and type is
// added element by element after the affine ones and before the activation (a residual
// connection), rounded as the add kernel rounds it. The inputs: the affine ones, the residual, a
// prelu's slope, then the post ones.
struct ConvGeometry {
  int64_t n = 0, c = 0, o = 0, cg = 0, og = 0, groups = 1;  // cg, og: channels per group
  Window w;
  Tensor* y = nullptr;
  // The epilogue's adds ('b') and multiplies ('s') before the activation, in order: each by a
  // tensor of o values (one per output channel) or of one (for all).
  struct Affine {
    char op = 'b';
    const Tensor* t = nullptr;
  };
  Affine affine[3];
  int affines = 0;
  // After the activation, adds ('b'), multiplies ('s') and divides by ('d') the same way.
  Affine post[3];
  int posts = 0;
  bool clamp = false;       // an activation: y = min(max(y, lo), hi)
  bool hardswish = false;   // or y = y * min(max(y + 3, 0), 6)
  bool hard_swish = false;  // or y = y * max(0, min(1, y / 6 + 0.5)) (ONNX HardSwish)
  vmath::Smooth smooth = vmath::Smooth::kNone;  // or y = y * sigmoid(y), or sigmoid(y)
  // or y = y < 0 ? y * slope : y, the slope per output channel or one for all (prelu), or alpha
  // (leaky_relu: slope null)
  bool negative_slope = false;
  const Tensor* residual = nullptr;  // added after the affine ops, before the activation
  const Tensor* slope = nullptr;
  double alpha = 0;
  double lo = 0, hi = 0;
};
// Checks the operands and attributes (the epilogue's too), computes the window and asks for the
// output.
Status PrepareConv(KernelContext& ctx, ConvGeometry* geo);
// The epilogue's part of it: reads inputs 2... and the attributes into geo (geo->o and geo->y
// set before).
Status PrepareEpilogue(KernelContext& ctx, ConvGeometry* geo);
// The channel-blocked kernels (conv_blocked.h).
Status ConvBlocked(KernelContext& ctx);
Status ToBlocked(KernelContext& ctx);
Status FromBlocked(KernelContext& ctx);
Status MaxPoolBlocked(KernelContext& ctx);
Status GlobalAvgPoolBlocked(KernelContext& ctx);
Status GateBlocked(KernelContext& ctx);
// The channels of blocked data x's NCHW form: the step's attribute `channels` where it has one
// (fewer than the blocks hold where the last block is padded), else 16 a block; an error where
// they do not fill the blocks but the last's padding.
Status BlockedChannels(const rt::AttrView& attrs, const Tensor& x, int64_t* channels);
// The reference convolution (any float type), accumulating in double: the oracle.
Status ConvReference(KernelContext& ctx);
// Float32 convolution through the blocked GEMM (depthwise directly); other types go to the
// reference.
Status ConvFast(KernelContext& ctx);
// Tests: whether Winograd's transforms may run on 16 lanes where the CPU has AVX-512 (the GEMMs
// between them are the GEMM's own choice).
void SetWinograd512AllowedForTesting(bool allowed);
// Tests: the output tile every Winograd step on blocked data takes, 2 (F(2x2, 3x3)) or 4 (F(4x4,
// 3x3)); 0: the kernel's own choice, F(2x2) (conv_blocked_winograd.cc).
void SetBlockedWinogradTileForTesting(int tile);
// The integer convolution's sums (n, oc, out...) of xf (n, c, in...) and wf (oc, c / groups,
// kernel...), both holding integers of at most 255 in magnitude (8-bit values less zero points of
// their type) as floats, added into `sums`: as float GEMMs over slabs of channels of at most
// kEightBitExactTerms products per sum (gemm.h), so that every float sum is exact. The kernel's
// size must be at most kEightBitExactTerms.
void ConvIntegerSums(const float* xf, const float* wf, int64_t n, int64_t c, int64_t oc,
                     int64_t groups, const Window& win, int64_t* sums, rt::ThreadPool* pool);
// conv_integer (quantize.cc): per output element (reference), or 8-bit through ConvIntegerSums.
Status ConvIntegerReference(KernelContext& ctx);
Status ConvIntegerFast(KernelContext& ctx);
// Transposed convolution: in double (reference), or float32 as GEMMs and a col2im
// (ConvTransposeFloat, conv_fast.cc) with every other dtype in double.
Status ConvTransposeReference(KernelContext& ctx);
Status ConvTransposeFast(KernelContext& ctx);
// y (n, groups * og, out...) = the transposed convolution of x (n, groups * cg, in...) with w
// (groups * cg, og, kernel...) over the window `w` (in: the input's spatial dims, out: y's).
// `weight_cache`: the step's cache when w is constant (its transposed, packed form is kept
// there), else null. `epilogue` (conv_fast.h; none with a residual): applied in the products as
// they are stored where the kernel can; true where it did, false where the caller is to apply
// it.
struct Epilogue;
bool ConvTransposeFloat(const float* x, const float* w, float* y, int64_t n, int64_t groups,
                        int64_t cg, int64_t og, const Window& win, rt::ThreadPool* pool,
                        rt::StepCache* weight_cache = nullptr, const Epilogue* epilogue = nullptr);

// The window of a pool (pool.cc): pool_size and the window attributes, for data (N, C, spatial...).
Status PoolWindow(const KernelContext& ctx, const Tensor& x, Window* w);

// Reads the int list attribute `name` as n values, or n copies of `fill` when absent.
Status IntsAttr(const rt::AttrView& attrs, const char* name, size_t n, int64_t fill, Shape* out);

}  // namespace quilt::cpu::nn
