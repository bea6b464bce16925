// Float32 layer normalization over trailing axes, fast: each row (the normalized elements of one
// position) in one pass for its sum and one for the squared deviations, both accumulated in double
// as the reference does, then the scale and shift in float; rows split across the run's threads.
// Anything else (other element types, axes that are not a trailing run, parameters that vary
// across rows) goes to the reference nn::LayerNorm, which tests/runtime/fast_kernels_test.cc
// compares this with.
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/simd.h"

namespace quilt::cpu::nn {
namespace {

// A parameter of the normalized shape (the trailing `axes` dims of x; leading 1s allowed) or a
// single element: its `len` values per row at *out (in place, or a single element repeated into
// `storage`). False for any other broadcast.
bool RowParam(const Tensor* p, const Shape& x, int axes, int64_t len, std::vector<float>* storage,
              const float** out) {
  if (p == nullptr || p->dtype != DType::kFloat32 || p->rank() > static_cast<int>(x.size())) {
    return false;
  }
  if (p->NumElements() == 1 && len != 1) {
    storage->assign(static_cast<size_t>(len), p->Data<float>()[0]);
    *out = storage->data();
    return true;
  }
  int rank = static_cast<int>(x.size());
  for (int i = 0; i < p->rank(); ++i) {
    int d = rank - p->rank() + i;
    int64_t want = d >= rank - axes ? x[d] : 1;
    if (p->shape[i] != want) return false;
  }
  if (p->NumElements() != len) return false;
  *out = p->Data<float>();
  return true;
}

// Sum of x[i] (squared deviations from `mean` when `mean` is given), in double, in 8 lanes that
// the vectorizer can keep in registers (a single running sum would wait on each add).
QUILT_ALWAYS_INLINE double SumOf(const float* __restrict x, int64_t n, const double* mean) {
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      double v = x[i + j];
      if (mean) v = (v - *mean) * (v - *mean);
      lanes[j] += v;
    }
  }
  double s = 0;
  for (double l : lanes) s += l;
  for (; i < n; ++i) {
    double v = x[i];
    if (mean) v = (v - *mean) * (v - *mean);
    s += v;
  }
  return s;
}

QUILT_CLONES void NormalizeRow(const float* __restrict x, float* __restrict y, int64_t n,
                               const float* __restrict gamma, const float* __restrict beta,
                               double eps) {
  double mean = SumOf(x, n, nullptr) / static_cast<double>(n);
  double var = SumOf(x, n, &mean) / static_cast<double>(n);
  float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  float m = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * gamma[i] + beta[i];
}

}  // namespace

Status LayerNormFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int rank = x.rank();
  if (x.dtype != DType::kFloat32 || rank == 0) return LayerNorm(ctx);
  // The reduced axes must be the last `axes` dims, each named once (read in place: a layer norm
  // runs per token in small models, where a copy per run showed).
  std::span<const int64_t> list = ctx.attrs().IntsView("axes");
  if (rank >= 64) return LayerNorm(ctx);
  uint64_t reduced = 0;  // bit d: dim d named
  for (int64_t a : list) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank || ((reduced >> n) & 1)) return LayerNorm(ctx);
    reduced |= uint64_t{1} << n;
  }
  int axes = static_cast<int>(list.size());
  for (int d = 0; d < rank; ++d) {
    if (static_cast<bool>((reduced >> d) & 1) != (d >= rank - axes)) return LayerNorm(ctx);
  }
  int64_t len = 1;
  for (int d = rank - axes; d < rank; ++d) len *= x.shape[d];
  std::vector<float> gamma_storage, beta_storage;
  const float *gamma = nullptr, *beta = nullptr;
  if (axes == 0 || !RowParam(ctx.input(1), x.shape, axes, len, &gamma_storage, &gamma) ||
      !RowParam(ctx.input(2), x.shape, axes, len, &beta_storage, &beta)) {
    return LayerNorm(ctx);
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, x.shape, &y));
  if (len == 0 || y->NumElements() == 0) return Status::Ok();
  int64_t rows = y->NumElements() / len;
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  ctx.ParallelFor(rows, std::max<int64_t>(1, (1 << 14) / len), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      NormalizeRow(px + r * len, py + r * len, len, gamma, beta, eps);
  });
  return Status::Ok();
}

}  // namespace quilt::cpu::nn
