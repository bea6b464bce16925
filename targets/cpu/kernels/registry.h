// The CPU kernels, by op name. An explicit list of families (registry.cc), no static
// constructors. The compiler asks the same table which ops the CPU can run.
#pragma once

#include <span>
#include <string_view>

#include "runtime/src/kernel.h"

namespace quilt::cpu {

// Each family file defines one of these.
std::span<const rt::KernelEntry> ElementwiseKernels();
std::span<const rt::KernelEntry> CastKernels();
std::span<const rt::KernelEntry> ReduceKernels();
std::span<const rt::KernelEntry> NnKernels();
std::span<const rt::KernelEntry> ConvKernels();
std::span<const rt::KernelEntry> ManipKernels();
std::span<const rt::KernelEntry> IndexKernels();
std::span<const rt::KernelEntry> ImageKernels();
std::span<const rt::KernelEntry> LinalgKernels();
std::span<const rt::KernelEntry> QuantizeKernels();
std::span<const rt::KernelEntry> TransformerKernels();
std::span<const rt::KernelEntry> RecurrentKernels();
std::span<const rt::KernelEntry> SignalKernels();
std::span<const rt::KernelEntry> TextKernels();
std::span<const rt::KernelEntry> FusedKernels();  // fused.h: steps lowering makes

// Every CPU kernel; null when `op` has none.
rt::KernelFn FindKernel(std::string_view op);
// Every op name with a CPU kernel.
std::span<const rt::KernelEntry> AllKernels();

}  // namespace quilt::cpu
