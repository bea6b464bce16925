// Convolution (1-3d, grouped, dilated, transposed), pooling (max, average, Lp, adaptive,
// unpooling), col2im, depth/space.
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// Kernels of this family, by op name (see ir/ops/*.def for each op's arguments and attributes).
constexpr rt::KernelEntry kKernels[] = {
    {"", nullptr},
};

}  // namespace

std::span<const rt::KernelEntry> ConvKernels() { return std::span(kKernels).subspan(1); }

}  // namespace quilt::cpu
