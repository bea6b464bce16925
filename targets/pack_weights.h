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

}  // namespace quilt::compiler
