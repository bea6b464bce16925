// Built with the runtime when QUILT_KERNELS chooses its kernels: fails (and the build with it)
// when a chosen name is no kernel of the table, naming it.
#include <cstdio>

#include "targets/cpu/kernels/registry.h"

int main() {
  int missing = 0;
  for (std::string_view name : quilt::cpu::kChosenKernels) {
    if (name.empty() || quilt::cpu::FindKernel(name)) continue;
    std::fprintf(stderr, "QUILT_KERNELS names '%.*s', which is no CPU kernel of this runtime\n",
                 static_cast<int>(name.size()), name.data());
    ++missing;
  }
  return missing ? 1 : 0;
}
