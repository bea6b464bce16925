// Image kernels shared with the tests: resize, and its reference walk (every output element the
// sum over every combination of its per-axis taps) that the float32 plane path is checked against.
#pragma once

#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {

Status Resize(KernelContext& ctx);
Status ResizeReference(KernelContext& ctx);
// image.resize2d_nchw16c (conv_blocked.h): image.resize of blocked data's NCHW view.
Status ResizeBlocked(KernelContext& ctx);

}  // namespace quilt::cpu
