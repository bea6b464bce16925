// What is in a compiled package, for quilt-inspect: devices, signature, steps by kernel and
// device, arena sizes, constant bytes, metadata.
#pragma once

#include <string>

#include "runtime/src/package.h"

namespace quilt::tools {

std::string SummarizePackage(const rt::LoadedPackage& package, bool list_steps);

}  // namespace quilt::tools
