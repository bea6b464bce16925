// The op families the OpenCL back end writes kernels for. Capability (capability.cc) and the
// emitter (emit.cc) both classify an op here, so a placement never promises a kernel the emitter
// cannot write. Kernels compute in float32; elementwise ops, padding and those that move elements
// also take float16 (stored as such, computed in float32), int32, int64 and bool tensors; every
// other family float16 too (TakesFloat16); an index input (take) is int32 or int64.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace quilt::targets::opencl {

enum class Family {
  kElementwise,    // elementwise.h's expressions, with broadcasting
  kIdentity,       // reshape, squeeze, expand_dims: the bytes of the data, copied
  kSoftmax,        // nn.softmax, nn.log_softmax, nn.hardmax, nn.lp_normalize along one axis
  kMatmul,         // matmul, rank >= 2, the second operand 2-D or of the first's batch dims
  kConv2d,         // nn.conv2d, NCHW, any groups, strides, dilation, padding; a fused bias and
                   // activation (targets/fuse_epilogue.h)
  kConv,           // nn.conv1d, nn.conv3d (NC + spatial dims): groups, strides, dilation, padding,
                   // a fused bias and activation
  kConvTranspose,  // nn.conv1d_transpose, nn.conv2d_transpose, nn.conv3d_transpose
  kPool2d,         // nn.max_pool2d, nn.avg_pool2d
  kPool,           // max / average / Lp pooling over 1 to 3 spatial dims (not kPool2d's)
  kAdaptivePool,   // adaptive average / max pooling of 1 to 3 spatial dims to any size
  kGlobalPool,     // nn.adaptive_avg_pool2d (1 x 1: a mean per channel; else as kAdaptivePool)
  kBatchNorm,      // nn.batch_norm in inference form, along any axis
  kPRelu,          // nn.prelu: a slope per channel of `axis` (or one for all)
  kReduce,         // sum, mean, max, min, prod, reduce_l1 / l2 / log_sum / log_sum_exp /
                   // sum_square over any axes (none: all), keepdims or not
  kNorm,           // nn.layer_norm, nn.layer_norm_stats, nn.rms_norm, nn.instance_norm,
                   // nn.group_norm, nn.mean_variance_norm: moments over axes, per group
  kPermute,        // permute_dims, any rank
  kConcat,         // concat along any axis
  kSplit,          // split along any axis, one output per part
  kSlice,          // strided_slice over axes whose size the compiler knows
  kTake,           // take (gather) along any axis, int32 or int64 indices
  kGatherNd,       // gather_nd with static index tuples, any batch_dims, int32 / int64 indices
  kPad,            // nn.pad: constant, edge, reflect, wrap; any element type
  kSpaceDepth,     // nn.depth_to_space, nn.space_to_depth (NCHW, DCR or CRD), any element type
  kBroadcastTo,    // broadcast_to, any element type
  kFull,           // full: the value, converted, everywhere
  kArange,         // arange of an integer type from int64 start and step
  kResize,         // image.resize of static shapes with constant scales / sizes / roi: every mode
  kGridSample,     // image.grid_sample of 1 to 3 spatial dims, every mode and padding mode
  kCausalConv,     // nn.causal_conv_with_state: depthwise causal conv1d with past state, silu
  kRotary,         // nn.rotary_embedding: 3-D or 4-D, with or without position ids, interleaved
  kAttention,      // nn.attention (ONNX Attention): 3-D or 4-D, GQA, float masks, past keys and
                   // values, causal and window limits, softcap, every qk_matmul_output mode
};

// The family of op `op` (Relax name without "R."), or nullopt when OpenCL has no kernel for it.
// Elementwise ops are those elementwise.h has an expression for.
std::optional<Family> FamilyOf(std::string_view op);

// How a family's kernel reads its input k.
enum class InputUse {
  kFloat,   // float32 data
  kAny,     // data of any type the kernels take: float32, float16, int32, int64, bool
            // (elementwise.h)
  kIndex,   // int32 or int64 indices or scalars
  kUnread,  // not read (reshape's shape and the like)
};
InputUse InputUseOf(Family family, size_t k);

// Whether a family's outputs may be of any type the kernels take (else float32). Elementwise
// ops say which types they take in elementwise.h (TypedExpr).
bool AnyTypeOut(Family family);

// Whether a family whose data is float32 (InputUse::kFloat, a float32 output) also takes float16
// data throughout (every data input and output float16), stored as such and computed in float32:
// every such family.
bool TakesFloat16(Family family);

}  // namespace quilt::targets::opencl
