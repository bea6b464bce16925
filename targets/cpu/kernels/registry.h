// The CPU kernels, by op name. An explicit list of families (registry.cc), no static
// constructors. The compiler asks the same table which ops the CPU can run.
#pragma once

#include <span>
#include <string_view>

#include "quilt/kernel_selection.h"
#include "runtime/src/kernel.h"

namespace quilt::cpu {

// Whether this build has `op`'s kernel: every kernel, unless the runtime was built with a chosen
// list of them (the CMake option QUILT_KERNELS, runtime/README.md).
consteval bool KernelChosen(std::string_view op) {
  if (kEveryKernel) return true;
  for (std::string_view chosen : kChosenKernels)
    if (chosen == op) return true;
  return false;
}

// A family table's entry. A kernel the build did not choose gets no function: nothing refers to
// it, and the linker drops its code.
consteval rt::KernelEntry Kernel(std::string_view op, rt::KernelFn fn) {
  return {op, KernelChosen(op) ? fn : nullptr};
}

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
// What to add to "no CPU kernel for OP": in a build with chosen kernels, that the build may have
// left it out, and how to build one with it. Empty in a build with every kernel.
std::string_view KernelMissingHint();

}  // namespace quilt::cpu
