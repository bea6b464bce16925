// Image and detection ops: resize, grid sample, ROI align, non-max suppression, ...
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// Kernels of this family, by op name (see ir/ops/*.def for each op's arguments and attributes).
constexpr rt::KernelEntry kKernels[] = {
    {"", nullptr},
};

}  // namespace

std::span<const rt::KernelEntry> ImageKernels() { return std::span(kKernels).subspan(1); }

}  // namespace quilt::cpu
