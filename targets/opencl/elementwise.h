// The elementwise and broadcasting ops the OpenCL back end makes code for, each as an OpenCL C
// expression of its operands (float32). The capability check (capability.cc) and the code
// emitter (emit.cc) read this one table, so a placement never promises what the emitter cannot
// write. The expressions follow the CPU reference kernels (NaN in max / min / clip / sign stays
// NaN; round is half to even; gelu uses erf), so both devices give the same results within
// float rounding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"

namespace quilt::targets::opencl {

// The OpenCL C expression of op `op` (Relax name without "R.") on `args` (C expressions of type
// float, one per tensor argument), or nullopt when the back end has no code for that op with
// that many arguments.
std::optional<std::string> FloatExpr(std::string_view op, const ir::Attrs& attrs,
                                     const std::vector<std::string>& args);

}  // namespace quilt::targets::opencl
