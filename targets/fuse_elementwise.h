// Elementwise fusion on a lowered graph (run by Lower after the conv epilogues, before memory
// planning): for devices that generate a kernel per step (OpenCL), and on the CPU for float32
// chains of the ops its fused kernel computes block by block (add, subtract, multiply, divide,
// maximum, minimum, relu, sigmoid, tanh, exp, erf, sqrt, abs, negative) whose operands are of the
// result's shape, a single element, or (a binary op's) a step input broadcast to it, joined only
// where shapes are equal: every member then runs on a block of the output in L1 before the next
// block, a broadcast input gathered for each block, one step in place of several (a step's own
// cost, about 0.1 us, is most of an op on a few floats).
//
// An elementwise or broadcasting step (an op of OpenCL's elementwise family) whose result is
// read by exactly one other such step, on the same device and in the same region, and that is no
// graph output, joins that step when its result has the shape of that step's result (dim by dim,
// symbolic dims by name), or broadcasts to it and it has at most 3 members so far (they are then
// computed again for every element: the hard sigmoid of a squeeze-excite block's channel scales
// joins the multiply that scales the feature map): the two become one `fused_elementwise` step
// (targets/cpu/kernels/fused.h) at the reader's place, which the OpenCL back end writes as one
// kernel computing every member per element in registers. Joining repeats, so a chain or a tree of
// such steps (x * sigmoid(x), (a - mean) * rstd * gamma + beta) becomes one step; its inputs are
// the values the members read from outside it, its output the last member's. The values between are
// left unwritten and unread (neither planned nor allocated).
#pragma once

#include <vector>

#include "targets/package_spec.h"

namespace quilt::compiler {

// Fuses in place; returns the number of steps removed.
int FuseElementwise(const std::vector<DeviceSpec>& devices, GraphSpec& g);

}  // namespace quilt::compiler
