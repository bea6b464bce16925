// Blocked float32 GEMM. The inner kernel keeps a kMR x kGemmPanel block of C in registers and
// walks one packed panel of A and of B; around it, C is cut into blocks of kMC rows and a few
// panels of columns (the tasks of a parallel loop), and the reduction into slabs of kKC so that
// a panel of B stays in the L1 cache while the panels of A stream past it. Vectors, and the AVX2
// copy of the block kernel: simd.h.
#include "targets/cpu/kernels/gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "targets/cpu/kernels/simd.h"

namespace quilt::cpu {
namespace {

constexpr int64_t kMR = 4;
constexpr int64_t kNR = kGemmPanel;
constexpr int64_t kKC = 128;
constexpr int64_t kMC = 64;

static_assert(kNR % 8 == 0);
constexpr int kVecs = static_cast<int>(kNR / 8);

// C block (mr x nr, at most kMR x kNR) = (or +=, with `accumulate`) the product of kc columns of
// an A panel (kc x kMR, packed) and kc rows of a B panel (kc x kNR, row stride ldb: packed, or
// full columns of B read in place).
QUILT_ALWAYS_INLINE void MicroKernel(int64_t kc, const float* a, const float* b, int64_t ldb,
                                     float* c, int64_t ldc, int64_t mr, int64_t nr,
                                     bool accumulate) {
  V8 acc[kMR][kVecs];
  for (auto& row : acc) {
    for (V8& v : row) v = V8{};
  }
  for (int64_t p = 0; p < kc; ++p) {
    V8 bv[kVecs];
    for (int v = 0; v < kVecs; ++v) LoadV(&bv[v], b + p * ldb + 8 * v);
    for (int64_t i = 0; i < kMR; ++i) {
      float av = a[p * kMR + i];
      for (int v = 0; v < kVecs; ++v) acc[i][v] += av * bv[v];
    }
  }
  if (mr == kMR && nr == kNR) {
    for (int64_t i = 0; i < kMR; ++i) {
      for (int v = 0; v < kVecs; ++v) {
        float* p = c + i * ldc + 8 * v;
        if (accumulate) {
          V8 old;
          LoadV(&old, p);
          acc[i][v] += old;
        }
        StoreV(p, acc[i][v]);
      }
    }
    return;
  }
  float out[kMR][kNR];
  for (int64_t i = 0; i < kMR; ++i) {
    for (int v = 0; v < kVecs; ++v) StoreV(&out[i][8 * v], acc[i][v]);
  }
  for (int64_t i = 0; i < mr; ++i) {
    float* ci = c + i * ldc;
    if (accumulate) {
      for (int64_t j = 0; j < nr; ++j) ci[j] += out[i][j];
    } else {
      for (int64_t j = 0; j < nr; ++j) ci[j] = out[i][j];
    }
  }
}

// One block of C: rows [0, mc) from the packed A panels at `ap`, columns [0, nc) from the B
// panels `bp` (row strides `ldb`), the whole reduction of length k.
QUILT_CLONES void Block(int64_t mc, int64_t nc, int64_t k, const float* ap, const float* const* bp,
                        const int64_t* ldb, float* c, int64_t ldc) {
  for (int64_t pc = 0; pc < k; pc += kKC) {
    int64_t kc = std::min(kKC, k - pc);
    for (int64_t jr = 0; jr < nc; jr += kNR) {
      int64_t panel = jr / kNR;
      const float* bpanel = bp[panel] + pc * ldb[panel];
      for (int64_t ir = 0; ir < mc; ir += kMR) {
        const float* apanel = ap + (ir / kMR) * k * kMR + pc * kMR;
        MicroKernel(kc, apanel, bpanel, ldb[panel], c + ir * ldc + jr, ldc, std::min(kMR, mc - ir),
                    std::min(kNR, nc - jr), pc > 0);
      }
    }
  }
  if (k == 0) {
    for (int64_t i = 0; i < mc; ++i) std::fill(c + i * ldc, c + i * ldc + nc, 0.0f);
  }
}

// Rows [i, i + kMR) of A into a panel, k x kMR, rows past m zero.
void PackA(const float* a, int64_t lda, int64_t m, int64_t k, int64_t i, float* panel) {
  int64_t rows = std::min(kMR, m - i);
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t r = 0; r < kMR; ++r) panel[p * kMR + r] = r < rows ? a[(i + r) * lda + p] : 0.0f;
  }
}

// A product with few columns: one dot product per element of C, along the rows of A.
QUILT_CLONES void NarrowProduct(int64_t m0, int64_t m1, int64_t n, int64_t k, const float* a,
                                int64_t lda, const float* cols, float* c, int64_t ldc) {
  for (int64_t i = m0; i < m1; ++i) {
    const float* ai = a + i * lda;
    for (int64_t j = 0; j < n; ++j) {
      const float* bj = cols + j * k;
      V8 acc = V8{};
      int64_t p = 0;
      for (; p + 8 <= k; p += 8) {
        V8 x, y;
        LoadV(&x, ai + p);
        LoadV(&y, bj + p);
        acc += x * y;
      }
      float lanes[8];
      std::memcpy(lanes, &acc, sizeof lanes);
      float s = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
                ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
      for (; p < k; ++p) s += ai[p] * bj[p];
      c[i * ldc + j] = s;
    }
  }
}

struct FreeFloats {
  void operator()(float* p) const { delete[] p; }
};
using Floats = std::unique_ptr<float[], FreeFloats>;
Floats NewFloats(int64_t n) {
  return Floats(new float[static_cast<size_t>(std::max<int64_t>(n, 1))]);
}

// The epilogue on rows [0, rows) of C (row stride ldc), columns [0, n); `bias` for row 0.
void Finish(const GemmEpilogue* e, int64_t row0, int64_t rows, int64_t n, float* c, int64_t ldc) {
  if (!e) return;
  for (int64_t r = 0; r < rows; ++r) {
    FinishRow(*e, c + r * ldc, n, e->bias ? e->bias[row0 + r] : -0.0f);
  }
}

}  // namespace

// -0 added changes no value, so a missing bias is -0.
QUILT_CLONES void BiasClamp(float* __restrict y, int64_t n, float b, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i] + b;
    v = v < lo ? lo : v;
    y[i] = v > hi ? hi : v;
  }
}

QUILT_CLONES void BiasHardSwish(float* __restrict y, int64_t n, float b) {
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i] + b;
    float t = v + 3.0f;
    t = t < 0.0f ? 0.0f : t;
    t = t > 6.0f ? 6.0f : t;
    y[i] = v * t;
  }
}

void MatrixB::Pack(int64_t j, int64_t cols, float* panel) const {
  for (int64_t p = 0; p < k_; ++p) {
    const float* row = b_ + p * ld_ + j;
    float* out = panel + p * kGemmPanel;
    std::memcpy(out, row, static_cast<size_t>(cols) * sizeof(float));
    std::fill(out + cols, out + kGemmPanel, 0.0f);
  }
}

void TransposedB::Pack(int64_t j, int64_t cols, float* panel) const {
  if (cols < kGemmPanel) {
    for (int64_t p = 0; p < k_; ++p)
      std::fill(panel + p * kGemmPanel + cols, panel + (p + 1) * kGemmPanel, 0.0f);
  }
  for (int64_t q = 0; q < cols; ++q) {
    const float* row = rows_ + (j + q) * ld_;
    for (int64_t p = 0; p < k_; ++p) panel[p * kGemmPanel + q] = row[p];
  }
}

namespace {

// Columns [j0, j0 + n) of another right operand.
class ColumnRange final : public GemmB {
 public:
  ColumnRange(const GemmB& b, int64_t j0) : b_(b), j0_(j0) {}
  void Pack(int64_t j, int64_t cols, float* panel) const override { b_.Pack(j0_ + j, cols, panel); }
  const float* Direct(int64_t* ld) const override {
    const float* d = b_.Direct(ld);
    return d ? d + j0_ : nullptr;
  }

 private:
  const GemmB& b_;
  int64_t j0_;
};

// Floats of packed B a product holds at once (16 MiB): wider products go in column ranges, so
// that packing an im2col view costs a bounded buffer rather than k x n floats.
constexpr int64_t kMaxPackedB = int64_t{1} << 22;

// C = A * B over n columns packed at once (Sgemm keeps n within kMaxPackedB / k).
void SgemmColumns(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const GemmB& b,
                  float* c, int64_t ldc, rt::ThreadPool* pool, const GemmEpilogue* epilogue) {
  int threads = pool ? pool->threads() : 1;
  int64_t npanels = (n + kNR - 1) / kNR;
  int64_t work = m * n * std::max<int64_t>(k, 1);
  // Below this many multiply-adds a loop is not worth splitting across threads.
  constexpr int64_t kParallelWork = 1 << 15;
  if (n <= kNR / 3) {
    // Few columns: B's columns made contiguous, then dot products.
    Floats panel = NewFloats(k * kNR), cols = NewFloats(n * k);
    b.Pack(0, n, panel.get());
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) cols[j * k + p] = panel[p * kNR + j];
    }
    int64_t grain = std::max<int64_t>(1, kParallelWork / std::max<int64_t>(1, n * k));
    rt::ParallelFor(pool, m, grain, [&](int64_t i0, int64_t i1) {
      NarrowProduct(i0, i1, n, k, a, lda, cols.get(), c, ldc);
      Finish(epilogue, i0, i1 - i0, n, c + i0 * ldc, ldc);
    });
    return;
  }
  int64_t mpanels = (m + kMR - 1) / kMR;
  // B's panels: full ones read in place when B is a matrix, the others packed.
  int64_t direct_ld = 0;
  const float* direct = b.Direct(&direct_ld);
  int64_t direct_panels = direct ? n / kNR : 0;
  std::vector<const float*> bpanels(static_cast<size_t>(npanels));
  std::vector<int64_t> bld(static_cast<size_t>(npanels), kNR);
  Floats ap = NewFloats(mpanels * kMR * k), bp = NewFloats((npanels - direct_panels) * kNR * k);
  for (int64_t t = 0; t < npanels; ++t) {
    if (t < direct_panels) {
      bpanels[t] = direct + t * kNR;
      bld[t] = direct_ld;
    } else {
      bpanels[t] = bp.get() + (t - direct_panels) * kNR * k;
    }
  }
  // Pack A and B: panels of A first, then the panels of B not read in place.
  int64_t pack_grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, k * kNR));
  rt::ThreadPool* pack_pool = work >= kParallelWork ? pool : nullptr;
  int64_t packs = mpanels + npanels - direct_panels;
  rt::ParallelFor(pack_pool, packs, pack_grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (t < mpanels) {
        PackA(a, lda, m, k, t * kMR, ap.get() + t * kMR * k);
      } else {
        int64_t panel = t - mpanels + direct_panels;
        int64_t j = panel * kNR;
        b.Pack(j, std::min(kNR, n - j), const_cast<float*>(bpanels[panel]));
      }
    }
  });
  // Blocks of C: kMC rows by `nc` columns, enough of them to keep every thread busy.
  int64_t mblocks = (m + kMC - 1) / kMC;
  int64_t nc_panels = 10;
  if (threads > 1 && work >= kParallelWork) {
    int64_t want = 4 * threads;
    int64_t nblocks = std::max<int64_t>(1, (want + mblocks - 1) / mblocks);
    nc_panels = std::clamp<int64_t>((npanels + nblocks - 1) / nblocks, 1, nc_panels);
  }
  int64_t nc = nc_panels * kNR;
  int64_t nblocks = (n + nc - 1) / nc;
  rt::ThreadPool* run_pool = work >= kParallelWork ? pool : nullptr;
  rt::ParallelFor(run_pool, mblocks * nblocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t ib = t % mblocks, jb = t / mblocks;
      int64_t i = ib * kMC, j = jb * nc;
      int64_t mc = std::min(kMC, m - i), ncols = std::min(nc, n - j);
      Block(mc, ncols, k, ap.get() + (i / kMR) * kMR * k, bpanels.data() + j / kNR,
            bld.data() + j / kNR, c + i * ldc + j, ldc);
      Finish(epilogue, i, mc, ncols, c + i * ldc + j, ldc);
    }
  });
}

}  // namespace

void Sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const GemmB& b, float* c,
           int64_t ldc, rt::ThreadPool* pool, const GemmEpilogue* epilogue) {
  if (m <= 0 || n <= 0) return;
  int64_t cols = std::max<int64_t>(kNR, kMaxPackedB / std::max<int64_t>(k, 1) / kNR * kNR);
  if (n <= cols) {
    SgemmColumns(m, n, k, a, lda, b, c, ldc, pool, epilogue);
    return;
  }
  for (int64_t j0 = 0; j0 < n; j0 += cols) {
    SgemmColumns(m, std::min(cols, n - j0), k, a, lda, ColumnRange(b, j0), c + j0, ldc, pool,
                 epilogue);
  }
}

}  // namespace quilt::cpu
