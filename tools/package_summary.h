// What is in a compiled package, for quilt-inspect: devices, signature, steps by kernel and
// device, arena sizes, constant bytes, metadata.
#pragma once

#include <string>
#include <vector>

#include "runtime/src/package.h"

namespace quilt::tools {

std::string SummarizePackage(const rt::LoadedPackage& package, bool list_steps);

// The CPU kernels a package may run, by name, sorted, each once: every library kernel step (of
// every graph, subgraphs included), the members of each fused step, and the op of each dispatch
// step (the CPU runs it where its device is absent or its code does not load). A runtime built
// with these alone (QUILT_KERNELS, runtime/README.md) runs the package.
std::vector<std::string> PackageKernels(const rt::LoadedPackage& package);

}  // namespace quilt::tools
