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
Status PowerReference(KernelContext& ctx);
Status ClipReference(KernelContext& ctx);

Status AddFast(KernelContext& ctx);
Status SubtractFast(KernelContext& ctx);
Status MultiplyFast(KernelContext& ctx);
Status DivideFast(KernelContext& ctx);
// std::pow on the broadcast rows; an exponent that is one element of 2 squares (x * x: correctly
// rounded, where powf may be an ulp away).
Status PowerFast(KernelContext& ctx);
Status ClipFast(KernelContext& ctx);

}  // namespace quilt::cpu
