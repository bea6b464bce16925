// Conv epilogue fusion on a lowered graph (run by Lower before memory planning).
//
// A float32 nn.conv1d/2d/3d step on a CPU or OpenCL device whose result is read only by an `add`
// of a constant per-channel bias (static shape (1, M, 1, ...) or (M, 1, ...), M the conv's output
// channels) on the same device takes the bias as its third input. On a CPU device the chain goes
// on through up to three adds and multiplies by constants, per channel or of one value for every
// channel (a batch norm's scale and shift as exporters write them, a learnable affine block),
// each read alone: the conv takes each constant as its next input and the attribute affine, one
// letter per input ('b' an add, 's' a multiply; none for a lone add). When the result (after
// these, if any) is in turn read only by an nn.relu or a clip (constant bounds: attributes) on the
// same device, the conv step also takes the activation (attributes activation, activation_min,
// activation_max; see targets/cpu/kernels/nn_internal.h). When it is read only by the hardswish
// chain a = add(r, 3), c = clip(a, 0, 6), y = multiply(r, c) (3 a float32 scalar constant; the
// operands of each in either order), a and c each read once, within the chain, the conv step
// takes activation = "hardswish" and writes y; on the CPU an nn.hard_swish (ONNX HardSwish) read
// alone joins it as activation = "hard_swish", SiLU, s = sigmoid(r), y = multiply(r, s) (s read
// by the multiply alone), as activation = "silu", an nn.leakyrelu as activation = "leaky_relu"
// (activation_alpha its alpha), an nn.prelu on the channel axis whose slope is a constant of
// one value per channel or one for all as activation = "prelu" (the slope the conv's next input),
// and a sigmoid as activation = "sigmoid".
// On the CPU, after the adds and multiplies and before the activation, an add of another value
// of the result's shape and element type that is ready before the conv step (a graph input, a
// constant, or an earlier step's result: a residual connection) joins it too, the value its next
// input (attribute residual).
// After an activation, on the CPU, up to three adds, multiplies, divides (of the result by the
// constant), maximums and minimums with constants of those shapes join it in the attribute post
// ('b', 's', 'd', 'x', 'n'; a maximum or minimum whose first operand is the constant only when no
// value of it is a zero, the one case where the operands' order shows), their constants its next
// inputs. The fused step
// writes the last value of the chain; the steps after the conv go, and the values between are
// left unwritten and unread (so neither planned nor allocated). A value between that is a graph
// output, is read by another step or more often, or differs in shape or element type stops the
// chain there.
//
// On a CPU device a float32 matmul read alone by an add of a constant of one value per column
// of its result takes it as its third input (attribute bias), and a relu, clip, SiLU or sigmoid
// read alone after that add as a conv's activation.
//
// Before the convs, on a CPU device, GELU as exporters write it out of erf (x * 1/sqrt(2) or
// x / sqrt(2), erf, + 1, and the multiplies by x and by 0.5 in any of three orders, every value
// between read once within the chain and of x's shape) becomes one nn.gelu step of x.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "targets/package_spec.h"

namespace quilt::compiler {

using Buffers = std::vector<std::shared_ptr<const std::vector<uint8_t>>>;

// Fuses in place (`buffers`: the package's, for the constants' values); returns the number of
// steps removed.
int FuseConvEpilogues(const std::vector<DeviceSpec>& devices, const Buffers& buffers, GraphSpec& g);

}  // namespace quilt::compiler
