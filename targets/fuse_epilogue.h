// Conv epilogue fusion on a lowered graph (run by Lower before memory planning).
//
// A float32 nn.conv1d/2d/3d step on a CPU device whose result is read only by an `add` of a
// constant per-channel bias (static shape (1, M, 1, ...) or (M, 1, ...), M the conv's output
// channels) on the same device takes the bias as a third input; when the add's result is in turn
// read only by an nn.relu or a clip (constant bounds: attributes) on the same device, the conv
// step also takes the activation (attributes activation, activation_min, activation_max; see
// targets/cpu/kernels/nn_internal.h). The fused step writes the last value of the chain; the add
// and activation steps go, and the values between are left unwritten and unread (so neither
// planned nor allocated). A value between that is a graph output, is read by another step or
// twice, or differs in shape or element type stops the chain there.
#pragma once

#include <vector>

#include "targets/package_spec.h"

namespace quilt::compiler {

// Fuses in place; returns the number of steps removed.
int FuseConvEpilogues(const std::vector<DeviceSpec>& devices, GraphSpec& g);

}  // namespace quilt::compiler
