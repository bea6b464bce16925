// Arithmetic and clip kernels shared with the tests: the reference kernels (elementwise.cc, every
// numeric type) and their fast float32 paths (elementwise_fast.cc), which hand other element
// types to the reference.
#pragma once

#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {

Status AddReference(KernelContext& ctx);
Status SubtractReference(KernelContext& ctx);
Status MultiplyReference(KernelContext& ctx);
Status DivideReference(KernelContext& ctx);
Status ClipReference(KernelContext& ctx);

Status AddFast(KernelContext& ctx);
Status SubtractFast(KernelContext& ctx);
Status MultiplyFast(KernelContext& ctx);
Status DivideFast(KernelContext& ctx);
Status ClipFast(KernelContext& ctx);

}  // namespace quilt::cpu
