// Matrix product kernels shared with the tests: the reference (any numeric type, accumulating in
// double or wrapping uint64) and the fast float32 path through the blocked GEMM (gemm.h).
#pragma once

#include <vector>

#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {

struct MatmulGeometry {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> offs_a, offs_b;  // per output matrix: the operands' matrix indices
  DType out_dtype = DType::kVoid;
  Tensor* y = nullptr;
};
// Checks the operands, broadcasts the batch dims and asks for the output.
Status PrepareMatmul(KernelContext& ctx, MatmulGeometry* geo);
Status MatmulReference(KernelContext& ctx);
// Float32 through the blocked GEMM; other types go to the reference.
Status MatmulFast(KernelContext& ctx);

}  // namespace quilt::cpu
