// The OpenCL back end's code emitter, run on the lowered package: every library-kernel step on
// an OpenCL device becomes a dispatch step of generated OpenCL C (one kernel per step, its sizes
// passed as step dims under targets/opencl/device/dispatch.h), and each OpenCL device gets one
// "opencl-c" code section holding the kernels of all its steps.
#pragma once

#include "ir/diagnostic.h"
#include "targets/package_spec.h"

namespace quilt::compiler {

// Rewrites the OpenCL steps of `spec` and adds their code sections. An op the back end has no
// code for (placed there by hand against the capability check) is an error naming its node.
Status EmitOpenClCode(PackageSpec& spec);

}  // namespace quilt::compiler
