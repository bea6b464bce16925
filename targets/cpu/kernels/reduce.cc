// Reductions: sum, mean, max, min, prod, l1/l2 norms, log-sum-exp, argmax/argmin, cumulative sums.
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// Kernels of this family, by op name (see ir/ops/*.def for each op's arguments and attributes).
constexpr rt::KernelEntry kKernels[] = {
    {"", nullptr},
};

}  // namespace

std::span<const rt::KernelEntry> ReduceKernels() { return std::span(kKernels).subspan(1); }

}  // namespace quilt::cpu
