#include "targets/cpu/kernels/registry.h"

#include <algorithm>
#include <vector>

namespace quilt::cpu {
namespace {

std::vector<rt::KernelEntry> Collect() {
  std::vector<rt::KernelEntry> all;
  for (auto family :
       {ElementwiseKernels(), CastKernels(), ReduceKernels(), NnKernels(), ConvKernels(),
        ManipKernels(), IndexKernels(), ImageKernels(), LinalgKernels(), QuantizeKernels(),
        TransformerKernels(), RecurrentKernels(), SignalKernels(), TextKernels(), FusedKernels()})
    for (const rt::KernelEntry& e : family)
      if (e.fn) all.push_back(e);
  std::sort(all.begin(), all.end(),
            [](const rt::KernelEntry& a, const rt::KernelEntry& b) { return a.name < b.name; });
  return all;
}

const std::vector<rt::KernelEntry>& Table() {
  static const std::vector<rt::KernelEntry> table = Collect();
  return table;
}

}  // namespace

std::span<const rt::KernelEntry> AllKernels() { return Table(); }

rt::KernelFn FindKernel(std::string_view op) {
  const auto& t = Table();
  auto it =
      std::lower_bound(t.begin(), t.end(), op,
                       [](const rt::KernelEntry& e, std::string_view n) { return e.name < n; });
  return it != t.end() && it->name == op ? it->fn : nullptr;
}

std::string_view KernelMissingHint() {
  if (kEveryKernel) return {};
  return " (this runtime was built with chosen CPU kernels alone, QUILT_KERNELS: build it with "
         "the package's list, `quilt-inspect PACKAGE --kernels`)";
}

}  // namespace quilt::cpu
