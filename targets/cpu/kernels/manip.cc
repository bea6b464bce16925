// Layout, shape and indexing ops: reshape, transpose, concat, split, slice, pad, gather/scatter,
// topk, sort, unique, nonzero, ...
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

// Kernels of this family, by op name (see ir/ops/*.def for each op's arguments and attributes).
constexpr rt::KernelEntry kKernels[] = {
    {"", nullptr},
};

}  // namespace

std::span<const rt::KernelEntry> ManipKernels() { return std::span(kKernels).subspan(1); }

}  // namespace quilt::cpu
