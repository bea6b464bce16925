// Arithmetic and clip kernels shared with the tests: the reference kernels (elementwise.cc, every
// numeric type) and their fast float32 paths (elementwise_fast.cc), which hand other element
// types to the reference.
#pragma once

#include <span>
#include <string_view>

#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {

// Comparisons of two values, shared by the reference kernels and the fast paths.
struct EqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct LessOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct GreaterOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};

Status AddReference(KernelContext& ctx);
Status SubtractReference(KernelContext& ctx);
Status MultiplyReference(KernelContext& ctx);
Status DivideReference(KernelContext& ctx);
Status PowerReference(KernelContext& ctx);
Status ExpReference(KernelContext& ctx);
Status LogReference(KernelContext& ctx);
Status TanhReference(KernelContext& ctx);
Status SigmoidReference(KernelContext& ctx);
Status ErfReference(KernelContext& ctx);
Status MaximumReference(KernelContext& ctx);
Status MinimumReference(KernelContext& ctx);
Status ClipReference(KernelContext& ctx);
Status SqrtReference(KernelContext& ctx);
Status FloorReference(KernelContext& ctx);
Status CeilReference(KernelContext& ctx);
Status RoundReference(KernelContext& ctx);
Status ReciprocalReference(KernelContext& ctx);
Status AbsReference(KernelContext& ctx);
Status NegativeReference(KernelContext& ctx);
Status EqualReference(KernelContext& ctx);
Status LessReference(KernelContext& ctx);
Status GreaterReference(KernelContext& ctx);

// A fused_elementwise step (fused.h) computed in blocks of its output that stay in L1, every
// member on a block before the next block, where each member is one of the float32 ops the
// compiler fuses on the CPU (targets/fuse_elementwise.cc: add, subtract, multiply, divide,
// maximum, minimum, nn.relu, sigmoid, tanh, exp, erf, sqrt, abs, negative) and each input is of
// the output's shape or a single element. Each member computes as its own kernel does, so the
// values are the unfused steps' bit for bit. *done false, nothing written, otherwise.
Status FusedElementwiseBlocks(KernelContext& ctx, std::span<const std::string_view> ops,
                              std::span<const int64_t> arity, std::span<const int64_t> args,
                              std::span<const int64_t> dtypes, bool* done);
// Whether FusedElementwiseBlocks computes `op` (the compiler fuses only these on the CPU).
bool IsBlockOp(std::string_view op);

Status AddFast(KernelContext& ctx);
Status SubtractFast(KernelContext& ctx);
Status MultiplyFast(KernelContext& ctx);
Status DivideFast(KernelContext& ctx);
// std::pow on the broadcast rows; an exponent that is one element of 2 squares (x * x: correctly
// rounded, where powf may be an ulp away).
Status PowerFast(KernelContext& ctx);
// float32 through vmath.h (a few ulp from the correctly rounded value; the reference calls the
// C library per element).
Status ExpFast(KernelContext& ctx);
Status LogFast(KernelContext& ctx);
Status TanhFast(KernelContext& ctx);
Status SigmoidFast(KernelContext& ctx);
Status ErfFast(KernelContext& ctx);
// NaN where either operand is NaN, as the reference.
Status MaximumFast(KernelContext& ctx);
Status MinimumFast(KernelContext& ctx);
Status ClipFast(KernelContext& ctx);
// float32 ops whose float result is the same computed any way (correctly rounded or exact):
// sqrt, floor, ceil, round (half to even), reciprocal, abs, negative; split across the threads.
Status SqrtFast(KernelContext& ctx);
Status FloorFast(KernelContext& ctx);
Status CeilFast(KernelContext& ctx);
Status RoundFast(KernelContext& ctx);
Status ReciprocalFast(KernelContext& ctx);
Status AbsFast(KernelContext& ctx);
Status NegativeFast(KernelContext& ctx);
// Comparisons of two float32 or two int32 operands on the broadcast rows, to bool.
Status EqualFast(KernelContext& ctx);
Status LessFast(KernelContext& ctx);
Status GreaterFast(KernelContext& ctx);

// The reference kernel of a reduction with a fast float32 path ("max", "min", "sum", "mean",
// "reduce_l1", "reduce_l2", "reduce_sum_square"; reduce.cc), whose registered kernel takes that
// path; null for other ops.
rt::KernelFn ReduceReference(std::string_view op);

// out[r] = the sum over row r of `rows` contiguous rows of n floats of x, x * x (squares) or |x|
// (magnitudes), in eight double lanes added up at the end; rows split across the threads.
enum class RowSum { kPlain, kSquares, kMagnitudes };
void SumRows(const float* x, int64_t rows, int64_t n, RowSum what, double* out,
             rt::ThreadPool* pool);
// The same along a middle axis: x is `outer` blocks of `len` rows of `inner` lanes, and
// out[o * inner + i] the sum over the block's rows of lane i, in double.
void SumAcross(const float* x, int64_t outer, int64_t len, int64_t inner, RowSum what, double* out,
               rt::ThreadPool* pool);

}  // namespace quilt::cpu
