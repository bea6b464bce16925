// The op families the OpenCL back end writes kernels for. Capability (capability.cc) and the
// emitter (emit.cc) both classify an op here, so a placement never promises a kernel the emitter
// cannot write. Every kernel takes float32 tensors.
#pragma once

#include <optional>
#include <string_view>

namespace quilt::targets::opencl {

enum class Family {
  kElementwise,  // elementwise.h's expressions, with broadcasting
  kIdentity,     // reshape, squeeze, expand_dims: the bytes of the data, copied
  kSoftmax,      // nn.softmax, nn.log_softmax along one axis
  kMatmul,       // matmul, rank >= 2, the second operand 2-D or of the first's batch dims
  kConv2d,       // nn.conv2d, NCHW, any groups, strides, dilation, padding; a fused bias and
                 // activation (targets/fuse_epilogue.h)
  kPool2d,       // nn.max_pool2d, nn.avg_pool2d
  kGlobalPool,   // nn.adaptive_avg_pool2d to 1 x 1
  kBatchNorm,    // nn.batch_norm in inference form, along any axis
};

// The family of op `op` (Relax name without "R."), or nullopt when OpenCL has no kernel for it.
// Elementwise ops are those elementwise.h has an expression for.
std::optional<Family> FamilyOf(std::string_view op);

}  // namespace quilt::targets::opencl
