// Writes a package: the FlatBuffer, then the data section with every constant at a 64-byte
// aligned offset, then the checksum footer (runtime/src/checksum.h). The bytes depend only on the
// spec: compiling one model twice gives identical files.
#pragma once

#include <cstdint>
#include <vector>

#include "targets/package_spec.h"

namespace quilt::compiler {

// The package format this compiler writes (the runtime's kFormatMajor.kFormatMinor).
std::vector<uint8_t> WritePackage(const PackageSpec& spec);

}  // namespace quilt::compiler
