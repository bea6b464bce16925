// Matrix product kernels shared with the tests: the reference (any numeric type, accumulating in
// double or wrapping uint64) and the fast float32 path through the blocked GEMM (gemm.h).
#pragma once

#include <limits>
#include <string_view>
#include <vector>

#include "targets/cpu/kernels/util.h"
#include "targets/cpu/kernels/vmath.h"

namespace quilt::cpu {

struct MatmulGeometry {
  int64_t m = 0, n = 0, k = 0;
  // Per output matrix: the operands' matrix indices (inline up to 64 matrices, an attention's
  // batch of heads: no allocation at every run).
  rt::InlineVector<int64_t, 64> offs_a, offs_b;
  DType out_dtype = DType::kVoid;
  Tensor* y = nullptr;
  // B is float32 panels that quiltc packed (targets/pack_weights.h): the step's attribute
  // packed_b is B's shape, each of its matrices PackedBFloats(k, n) floats of the 1-D input.
  bool b_packed = false;
  // The epilogue quiltc fused (targets/fuse_epilogue.cc), float32 alone: attribute bias, input 2
  // (n floats) added to every row of each product; attribute activation ("relu", or "clip" with
  // activation_min / activation_max) bounding the result after it, or ("silu", "sigmoid") a
  // function of it.
  const float* bias = nullptr;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  vmath::Smooth smooth = vmath::Smooth::kNone;
  bool Bounded() const {
    return lo != -std::numeric_limits<float>::infinity() ||
           hi != std::numeric_limits<float>::infinity();
  }
};
// Checks the operands, broadcasts the batch dims and asks for the output. `out_dtype` (not void):
// the output's type, the operands' types checked by the caller.
Status PrepareMatmul(KernelContext& ctx, MatmulGeometry* geo, DType out_dtype = DType::kVoid);
// The int32 products (each sum's low 32 bits) into geo.y of matrices of integers held exactly as
// floats, a's and b's matrices at geo's offsets: float GEMMs over slabs of `slab` products (each
// slab's sums exact, added as integers).
void ExactIntMatmul(const MatmulGeometry& geo, const float* a, const float* b, int64_t slab,
                    rt::ThreadPool* pool);
Status MatmulReference(KernelContext& ctx);
// matmul_integer (quantize.cc): the reference loop, and the 8-bit fast paths tested against it.
Status MatmulIntegerReference(KernelContext& ctx);
Status MatmulIntegerFast(KernelContext& ctx);
// Float32 through the blocked GEMM; other types go to the reference.
Status MatmulFast(KernelContext& ctx);
// A step lowering adds (targets/pack_weights.h): a matmul's B made from constants when a session
// is created, packed there into the panels the GEMM reads, as the matmul's packed_b input.
inline constexpr std::string_view kMatmulPackB = "matmul_pack_b";
Status MatmulPackB(KernelContext& ctx);

}  // namespace quilt::cpu
