// The channel-blocked layout (NCHW16c) of the CPU's convolutions: a float32 tensor (N, C, H, W)
// held as (N, C / 16, H, W, 16) (C / 16 rounded up: where C is not a multiple of 16, the last
// block's lanes past it padding, zeros as layout_to_nchw16c writes them and what each step makes
// of them after, finite values no conv reads), each pixel's sixteen channels of a block one vector,
// so that a convolution's multiply-adds run across sixteen output channels (dense) or sixteen
// channels (depthwise) with no gather, whatever its stride. Its kernels (conv_blocked.cc; the tiles
// in conv_blocked_internal.h, dense 3x3 convs as Winograd in conv_blocked_winograd.cc):
//
//   layout_to_nchw16c    x (N, C, H, W) -> (N, C / 16 rounded up, H, W, 16), padding zeros
//   layout_from_nchw16c  x (N, B, H, W, 16) -> (N, C, H, W): C the attribute channels (in the
//                        last block; B * 16 without it), the padding dropped
//   nn.conv2d_nchw16c    x (N, I / 16, H, W, 16), or (N, I, H, W) for a dense convolution of
//                        NCHW data (a first layer), and a weight laid out by BlockConvWeight ->
//                        (N, O / 16, OH, OW, 16): nn.conv2d's attributes (strides, padding,
//                        dilation, groups: 1, or I = O for a depthwise convolution) and its
//                        epilogue (nn_internal.h: the per-channel inputs of O values, a residual
//                        input blocked as the output), attribute weight_shape = (O, I / groups,
//                        KH, KW), the weight's shape before it was laid out, and for a dense
//                        one weight_group_blocks = kBlocksPerGroup (kWeightGroupBlocks). Over
//                        padded channels O, I and groups are the padded counts: the compiler
//                        pads the weight (zeros) and the epilogue's values per channel.
//   nn.max_pool2d_nchw16c
//                        x (N, C / 16, H, W, 16) -> (N, C / 16, OH, OW, 16): nn.max_pool2d's
//                        attributes and values (a window's first cell inside the input, then a
//                        later one only where greater, lane by lane; NaN as nn.max_pool2d keeps
//                        it), for a pool between blocked convs.
//   nn.global_avg_pool2d_nchw16c
//                        x (N, C / 16, H, W, 16) -> (N, C, 1, 1) (the same floats as its
//                        blocked form but a last block's padding; C the attribute channels,
//                        else 16 a block): each channel's mean as nn.adaptive_avg_pool2d to 1 x 1
//                        gives it (summed in double in the pixels' order), a squeeze-and-excite
//                        block's pool.
//   multiply_channels_nchw16c
//                        x (N, C / 16, H, W, 16), gate (C, 1, 1), (1, C, 1, 1) or (N, C, 1, 1)
//                        -> x's shape: x times its channel's gate value (of its image), the
//                        block's gate (C the gate's, in x's last block: its padding times 0).
//   image.resize2d_nchw16c
//                        x (N, C / 16, H, W, 16), roi, scales, sizes -> (N, C / 16, OH, OW, 16):
//                        image.resize of x's NCHW view (its inputs and attributes as they are,
//                        its channels the attribute channels where given; the batch and
//                        channels kept), each pixel's lanes summed as the plane
//                        path sums an element (image.cc, the kernel beside it).
//
// The compiler (targets/block_layout.h) makes these steps; tests/runtime/conv_blocked_test.cc
// checks them against the reference convolution.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace quilt::cpu::nn {

constexpr int64_t kChannelBlock = 16;

// The kernels' names: steps lowering makes, of no op of ir/ops.def.
inline constexpr std::string_view kConvNchw16c = "nn.conv2d_nchw16c";
inline constexpr std::string_view kToNchw16c = "layout_to_nchw16c";
inline constexpr std::string_view kFromNchw16c = "layout_from_nchw16c";
inline constexpr std::string_view kMaxPoolNchw16c = "nn.max_pool2d_nchw16c";
inline constexpr std::string_view kGlobalAvgPoolNchw16c = "nn.global_avg_pool2d_nchw16c";
inline constexpr std::string_view kGateNchw16c = "multiply_channels_nchw16c";
inline constexpr std::string_view kResizeNchw16c = "image.resize2d_nchw16c";

// Output blocks a dense kernel's tile computes at once (its weights laid out together), and the
// attribute that says the count a dense step's weight was laid out for: the kernel refuses a
// weight laid out otherwise (a package of an older compiler) rather than read it wrong.
constexpr int64_t kBlocksPerGroup = 4;
inline constexpr std::string_view kWeightGroupBlocks = "weight_group_blocks";

// The attribute of a dense conv step that asks for its Winograd's output tile, where the kernel
// runs it as Winograd: 2 (or none), F(2x2, 3x3); 4, F(4x4, 3x3) on planes of 16 x 16 or more
// (conv_blocked_winograd.cc: 2.25 multiplies an output against 4, for about 5 times the
// rounding), F(2x2, 3x3) on smaller ones, where F(4x4)'s partial tiles cost more than it saves.
inline constexpr std::string_view kWinogradTile = "winograd_tile";

// A weight (o, i, taps) laid out for nn.conv2d_nchw16c (the same element count). Dense (groups
// 1): per group of kBlocksPerGroup blocks of 16 output channels (the kernel's tile; the last
// group the blocks left), (I / in_block, taps, in_block input channels, the group's output
// channels), so that a tap's input channel's vectors of the group's output channels lie together
// and a tile reads its weights as one stream; in_block 16 for blocked data, I for NCHW data.
// Depthwise (one input channel per group, O channels): (O / 16, taps, 16). o, and i for blocked
// data, multiples of 16.
inline void BlockConvWeight(const float* w, int64_t o, int64_t i, int64_t taps, bool depthwise,
                            float* out, int64_t in_block = kChannelBlock) {
  const int64_t b = kChannelBlock;
  if (depthwise) {
    for (int64_t c = 0; c < o; ++c)
      for (int64_t t = 0; t < taps; ++t) out[((c / b) * taps + t) * b + c % b] = w[c * taps + t];
    return;
  }
  const int64_t group = kBlocksPerGroup * b;
  for (int64_t oc = 0; oc < o; ++oc) {
    // The group's first channel and width.
    const int64_t first = oc / group * group, width = std::min(group, o - first);
    for (int64_t ic = 0; ic < i; ++ic)
      for (int64_t t = 0; t < taps; ++t)
        out[first * i * taps + (((ic / in_block) * taps + t) * in_block + ic % in_block) * width +
            oc - first] = w[(oc * i + ic) * taps + t];
  }
}

}  // namespace quilt::cpu::nn
