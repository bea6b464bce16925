// Constant matmul weights stored in the package in the layout the CPU's GEMM reads, so that a
// session reads them where they are instead of packing a copy beside them (half the memory a
// model's weights take at run time).
//
// A float32 constant that only CPU matmul steps read, as their B, of static shape [..., k, n]
// with n > kGemmPanel / 3 (fewer columns take the GEMM's dot-product path), becomes a 1-D
// float32 value of PackedBFloats(k, n) floats per matrix (targets/cpu/kernels/gemm.h), and each
// of those steps gets the attribute packed_b = [..., k, n].
#pragma once

#include "targets/package_spec.h"

namespace quilt::compiler {

// Packs every such constant of `spec`; returns how many.
int PackMatmulWeights(PackageSpec& spec);

// The same for a B that a session makes from constants when it is created (the steps it runs
// once then: runtime/src/session.cc, Hoistable), in the main graph `g`, before memory planning:
// a matmul_pack_b step (cpu/kernels/linalg.h) after the step making it packs it there, and the
// matmuls read the panels. The session then holds the panels alone, not B and a packed copy (an
// int8 weight scaled to float: minilm-l6). Returns how many.
int PackDerivedMatmulWeights(const std::vector<DeviceSpec>& devices, GraphSpec& g);

// Subnormal values (|w| < 2^-126, not zero) of float32 constant weights flushed to zero: a
// constant on a CPU device that only products read as their weight (a conv's or transposed
// conv's weight, either operand of a matmul, an RNN's input or recurrent weights). A CPU takes a
// slow path (a microcode assist, about a hundred cycles) for each multiply-add of a subnormal
// operand: ppocr-v4-rec's squeeze-and-excite convs, trained with weight decay, hold 31,350 of
// them (22% of one weight), and its 480 -> 120 conv over two pixels took 0.5 ms, not 20 us. A
// flushed weight changes a sum by less than 2^-126 times its input, far below the resolution of
// any sum with a normal term (OpenVINO flushes such constants as well). Constants that any other
// step reads (an epsilon added, a divisor) keep every bit. Returns how many values were flushed.
int FlushSubnormalWeights(PackageSpec& spec);

}  // namespace quilt::compiler
