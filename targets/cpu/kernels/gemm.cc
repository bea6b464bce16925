// Blocked float32 GEMM. The inner kernel keeps a kMR x kGemmPanel block of C in registers and
// walks one packed panel of A and of B (where the CPU has AVX-512, eight rows by one or two
// panels, in 16-lane vectors, A's rows read where they are unless packed ahead); around it, C is
// cut into blocks of kMC rows and a few panels of columns (the tasks of a parallel loop), and the
// reduction into slabs of kKC so that a slab of the task's panels of B stays in cache while the
// panels of A pass over it. Vectors, and the AVX2 copy of the block kernel: simd.h.
#include "targets/cpu/kernels/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "targets/cpu/kernels/simd.h"
#include "targets/cpu/kernels/vmath.h"

namespace quilt::cpu {
namespace {

constexpr int64_t kMR = 4;
constexpr int64_t kNR = kGemmPanel;
constexpr int64_t kKC = 128;
constexpr int64_t kMC = 64;
// Rows of A a few-columns product takes at once: three rows by four columns, 12 sums in
// registers, 1.6x two rows' speed (four spill).
constexpr int kNarrowRows = 3;
// The same for a matrix-vector product: six rows, six sums in flight (one row's sum waits on
// each multiply-add; 1.9x one row at a time on a 4 MiB matrix).
constexpr int kVectorRows = 6;

static_assert(kNR % 8 == 0);
constexpr int kVecs = static_cast<int>(kNR / 8);

// C block (kM x nr rows, nr at most kNR) = (or +=, with `accumulate`) the product of kc columns
// of A and kc rows of kNR columns of B: a packed panel (row p at b + p * kNR), or, with kRows,
// rows anywhere (row p at b + offs[p]). A's element (i, p) is at a[p * kMR + i] (a packed panel,
// its first kM rows used), or, with kAInPlace, at a[i * lda + p] (A's rows read where they are).
// kM < kMR for the last rows of A, and kV < kVecs vectors of columns for a last panel of at most
// 8 * kV columns: no multiply-adds on the panels' padding.
template <bool kRows, int kM, bool kAInPlace = false, int kV = kVecs>
QUILT_ALWAYS_INLINE void MicroKernel(int64_t kc, const float* a, const float* b,
                                     const int64_t* offs, float* c, int64_t ldc, int64_t nr,
                                     bool accumulate, int64_t lda = 0) {
  // A single row keeps as many sums going by splitting the reduction: kSplit sets of
  // accumulators over alternate p, added at the end (each multiply-add waits on the one before
  // in its accumulator, so a single row's three would leave the FMA units idle). Two rows' six
  // are enough: split in two, their twelve and B's three vectors spill (1.2x slower). Fewer
  // vectors of columns split into about eight sums.
  constexpr int kSplit = kM == 1 && kV == kVecs ? 4 : (kM * kV >= 8 ? 1 : 8 / (kM * kV));
  V8 sums[kSplit][kM][kV];
  for (auto& set : sums) {
    for (auto& row : set) {
      for (V8& v : row) v = V8{};
    }
  }
  auto step = [&](int64_t p, V8(&acc)[kM][kV]) {
    const float* row = kRows ? b + offs[p] : b + p * kNR;
    V8 bv[kV];
    for (int v = 0; v < kV; ++v) LoadV(&bv[v], row + 8 * v);
    for (int i = 0; i < kM; ++i) {
      float av = kAInPlace ? a[i * lda + p] : a[p * kMR + i];
      for (int v = 0; v < kV; ++v) acc[i][v] += av * bv[v];
    }
  };
  int64_t p = 0;
  for (; p + kSplit <= kc; p += kSplit) {
    for (int q = 0; q < kSplit; ++q) step(p + q, sums[q]);
  }
  for (; p < kc; ++p) step(p, sums[0]);
  V8(&acc)[kM][kV] = sums[0];
  for (int q = 1; q < kSplit; ++q) {
    for (int i = 0; i < kM; ++i) {
      for (int v = 0; v < kV; ++v) acc[i][v] += sums[q][i][v];
    }
  }
  if (nr == 8 * kV) {
    for (int i = 0; i < kM; ++i) {
      for (int v = 0; v < kV; ++v) {
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
  float out[kM][kNR];
  for (int i = 0; i < kM; ++i) {
    for (int v = 0; v < kV; ++v) StoreV(&out[i][8 * v], acc[i][v]);
  }
  for (int i = 0; i < kM; ++i) {
    float* ci = c + i * ldc;
    if (accumulate) {
      for (int64_t j = 0; j < nr; ++j) ci[j] += out[i][j];
    } else {
      for (int64_t j = 0; j < nr; ++j) ci[j] = out[i][j];
    }
  }
}

// The micro kernel for mr (1 to kMR) rows, kV vectors of columns.
template <bool kRows, int kV, bool kAIn = false>
QUILT_ALWAYS_INLINE void MicroKernelRowsOf(int64_t kc, const float* a, const float* b,
                                           const int64_t* offs, float* c, int64_t ldc, int64_t mr,
                                           int64_t nr, bool accumulate, int64_t lda = 0) {
  static_assert(kMR == 4);
  switch (mr) {
    case 4:
      MicroKernel<kRows, 4, kAIn, kV>(kc, a, b, offs, c, ldc, nr, accumulate, lda);
      break;
    case 3:
      MicroKernel<kRows, 3, kAIn, kV>(kc, a, b, offs, c, ldc, nr, accumulate, lda);
      break;
    case 2:
      MicroKernel<kRows, 2, kAIn, kV>(kc, a, b, offs, c, ldc, nr, accumulate, lda);
      break;
    default:
      MicroKernel<kRows, 1, kAIn, kV>(kc, a, b, offs, c, ldc, nr, accumulate, lda);
      break;
  }
}

// The micro kernel for mr (1 to kMR) rows and nr (1 to kNR) columns: a last panel of 8 or 16
// columns or fewer computes one or two vectors, not three.
template <bool kRows, bool kAIn = false>
QUILT_ALWAYS_INLINE void MicroKernelRows(int64_t kc, const float* a, const float* b,
                                         const int64_t* offs, float* c, int64_t ldc, int64_t mr,
                                         int64_t nr, bool accumulate, int64_t lda = 0) {
  static_assert(kVecs == 3);
  // B's rows read in place come in whole panels (RowsBlock): only packed panels end short.
  if constexpr (!kRows) {
    if (nr <= 8) {
      return MicroKernelRowsOf<kRows, 1, kAIn>(kc, a, b, offs, c, ldc, mr, nr, accumulate, lda);
    }
    if (nr <= 16) {
      return MicroKernelRowsOf<kRows, 2, kAIn>(kc, a, b, offs, c, ldc, mr, nr, accumulate, lda);
    }
  }
  MicroKernelRowsOf<kRows, kVecs, kAIn>(kc, a, b, offs, c, ldc, mr, nr, accumulate, lda);
}

// Where A's rows [ir, ir + kMR) begin for the reduction slab from pc: in A's packed panels (`a`:
// panels of kMR rows, each k long), or, with kAIn, in A itself (row stride lda); and A's element
// (i, p) from there.
template <bool kAIn>
QUILT_ALWAYS_INLINE const float* APanel(const float* a, int64_t lda, int64_t k, int64_t ir,
                                        int64_t pc) {
  return kAIn ? a + ir * lda + pc : a + (ir / kMR) * k * kMR + pc * kMR;
}
template <bool kAIn>
QUILT_ALWAYS_INLINE float AAt(const float* a, int64_t lda, int i, int64_t p) {
  return kAIn ? a[i * lda + p] : a[p * kMR + i];
}

// A block's last panel of at most kNarrowCols columns (nr), all its rows. The panel kernels would
// broadcast each A value for a vector of columns that are mostly padding, one load for every
// multiply-add (a 49th column cost 1.7 times its share of 256 x 49 x 2304); these run along the
// reduction instead, slab by slab while the slab of A is in cache from the panel kernels (a pass
// of its own read all of A again from memory). Each sum (row i, column j) is split into kPhases
// sums over p = q, q + 16, ... (q = 0 to 15), kept in `ph` between slabs and added at the end by
// Phases in a fixed tree. With A in packed panels, a vector holds four p by the panel's four rows
// (8 lanes: two), against B's values each repeated four times (`bt`, value p of column j at
// bt[(j * k + p) * 4 + r]); with A's rows in place (AVX-512 alone), sixteen p of one row, against
// B's column laid out in order (value p at bt[j * k + p]). Every sum then runs over the same p in
// the same order in both, at 8 or 16 lanes: the values are the same bit for bit. Three columns
// at most: each column reads the slab of A again, and at four the 8-lane form (whose B is four
// times the floats) ran 5% behind the panel kernel on 256 x 28 x 2304, at eight 40%.
// And only for a reduction of 128 or more: each sum's fixed cost (its phases added, the k % 16
// products past the last whole vector one at a time) is then small beside its k / 16 vector
// multiply-adds. Below, the padded panel is faster (48 x 75 x 28, a Winograd product of a small
// image: 34 -> 76 GFLOP/s; 48 x 75 x 64: 72 -> 92; at 128 about even; 256 x 49 x 128 and up the
// narrow kernels ahead by 5-15%).
constexpr int64_t kNarrowCols = 3;
constexpr int64_t kNarrowMinK = 128;
constexpr int kPhases = 16;
// Floats of a block's phases: kMC rows by kNarrowCols columns.
constexpr int64_t kNarrowPhaseFloats = kMC * kNarrowCols * kPhases;

struct NarrowPart {
  const float* bt;  // B's narrow columns, laid out by LayOutNarrowB
  int64_t nr;
  float* ph;  // kNarrowPhaseFloats
};

// B's last nr columns (B's value (p, j) from `at`), laid out along the reduction for the narrow
// kernels, each value kRepeat times (value p of column j at bt[(j * k + p) * kRepeat + r]).
template <int kRepeat, typename At>
QUILT_ALWAYS_INLINE void LayOutNarrowB(int64_t k, int64_t nr, At at, float* bt) {
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < nr; ++j) {
      const float v = at(p, j);
      float* to = bt + (j * k + p) * kRepeat;
      for (int r = 0; r < kRepeat; ++r) to[r] = v;
    }
  }
}

// One sum from its phases (ph[q * stride], q = 0 to 15), halves added pairwise, into C.
QUILT_ALWAYS_INLINE void Phases(const float* ph, int stride, float* c) {
  float s[kPhases];
  for (int q = 0; q < kPhases; ++q) s[q] = ph[q * stride];
  for (int w = kPhases / 2; w >= 1; w /= 2) {
    for (int q = 0; q < w; ++q) s[q] = s[q] + s[q + w];
  }
  *c = s[0];
}

// Packed A: panels of kMR rows (panel g at a + g * next, its row p at p * kMR), kL lanes a vector
// (V, loaded by `load`), kNarrowGroup(kL) panels at a time. The phases of panel g, column j: 64
// floats at ph + (g0 * nr + j * kG + g - g0) * 64 (g0: the first panel of g's group of kG),
// phase q of row i at q * 4 + i.
constexpr int kNarrowGroup(int lanes) {
  // Four at 16 lanes (16 sums in registers); one at 8, whose 8 sums fill half of AVX2's registers.
  return lanes == 16 ? 4 : 1;
}

// Columns [j0, j0 + kC) of the sums' p in [p0, p1) (multiples of kPhases; from 0 on: the phases
// start at zero), kNarrowGroup(kL) / kC panels at a time.
template <typename V, int kL, int kC, typename Load>
QUILT_ALWAYS_INLINE void NarrowPanelsSlabOf(int64_t mc, const float* a, int64_t next,
                                            const NarrowPart& n, int64_t j0, int64_t k, int64_t p0,
                                            int64_t p1, Load load) {
  static_assert(kMR == 4 && (kL == 8 || kL == 16));
  constexpr int kG = kNarrowGroup(kL);
  constexpr int kP = kG / kC;  // panels at a time
  static_assert(kP * kC == kG);
  constexpr int kS = kPhases * kMR / kL;  // vectors of sums a panel
  const int64_t panels = (mc + kMR - 1) / kMR;
  for (int64_t g0 = 0; g0 < panels; g0 += kP) {
    // Panels past the block's last read its first again, their sums dropped.
    const float* ag[kP];
    for (int g = 0; g < kP; ++g) ag[g] = a + (g0 + g < panels ? g0 + g : 0) * next;
    // Panel g0 + g's phases for column j: at ph[c] + g * 64 (c = j - j0).
    const int64_t first = g0 / kG * kG;
    float* ph[kC];
    const float* bj[kC];
    for (int c = 0; c < kC; ++c) {
      bj[c] = n.bt + (j0 + c) * k * 4;
      ph[c] = n.ph + (first * n.nr + (j0 + c) * kG + (g0 - first)) * kPhases * kMR;
    }
    V acc[kP][kC][kS];
    for (int g = 0; g < kP; ++g) {
      for (int c = 0; c < kC; ++c) {
        for (int s = 0; s < kS; ++s) {
          if (p0 == 0) {
            acc[g][c][s] = V{};
          } else {
            load(&acc[g][c][s], ph[c] + g * kPhases * kMR + s * kL);
          }
        }
      }
    }
    for (int64_t p = p0; p < p1; p += kPhases) {
      for (int s = 0; s < kS; ++s) {
        V bv[kC];
        for (int c = 0; c < kC; ++c) load(&bv[c], bj[c] + p * 4 + s * kL);
        for (int g = 0; g < kP; ++g) {
          V av;
          load(&av, ag[g] + p * kMR + s * kL);
          for (int c = 0; c < kC; ++c) acc[g][c][s] += av * bv[c];
        }
      }
    }
    for (int g = 0; g < kP; ++g) {
      for (int c = 0; c < kC; ++c) {
        for (int s = 0; s < kS; ++s) {
          std::memcpy(ph[c] + g * kPhases * kMR + s * kL, &acc[g][c][s], sizeof(V));
        }
      }
    }
  }
}

// Two columns at a time where the vectors are 16 lanes (each panel's vector loaded once for
// both), then one.
template <typename V, int kL, typename Load>
QUILT_ALWAYS_INLINE void NarrowPanelsSlab(int64_t mc, const float* a, int64_t next,
                                          const NarrowPart& n, int64_t k, int64_t p0, int64_t p1,
                                          Load load) {
  int64_t j = 0;
  if constexpr (kL == 16) {
    for (; j + 2 <= n.nr; j += 2) NarrowPanelsSlabOf<V, kL, 2>(mc, a, next, n, j, k, p0, p1, load);
  }
  for (; j < n.nr; ++j) NarrowPanelsSlabOf<V, kL, 1>(mc, a, next, n, j, k, p0, p1, load);
}

// The sums' last p (past the last multiple of kPhases), then C's columns. The phases are the
// slabs': the first slab's call (p0 = 0) sets them, even with nothing to add (k < 16).
template <int kG>
QUILT_ALWAYS_INLINE void NarrowPanelsFinish(int64_t mc, const float* a, int64_t next,
                                            const NarrowPart& n, int64_t k, float* c, int64_t ldc) {
  const int64_t whole = k / kPhases * kPhases;
  for (int64_t ir = 0; ir < mc; ir += kMR) {
    const int64_t panel = ir / kMR, g0 = panel / kG * kG;
    const float* ap = a + panel * next;
    for (int64_t j = 0; j < n.nr; ++j) {
      const float* bj = n.bt + j * k * 4;
      float* ph = n.ph + (g0 * n.nr + j * kG + (panel - g0)) * kPhases * kMR;
      for (int64_t p = whole; p < k; ++p) {
        for (int i = 0; i < kMR; ++i) ph[(p - whole) * kMR + i] += ap[p * kMR + i] * bj[p * 4];
      }
      for (int64_t i = 0; i < std::min<int64_t>(kMR, mc - ir); ++i) {
        Phases(ph + i, kMR, c + (ir + i) * ldc + j);
      }
    }
  }
}

// A block's epilogue applied by its block kernel, tile by tile on the last slab of the reduction,
// rather than in a pass over the block after it (Finish): in the registers of the 8 x 48 kernel as
// it stores C, and by Finish on each other tile just stored, while it is in L1. The block's first
// row and column in the product: row0, col0.
struct FusedEpilogue {
  const GemmEpilogue* e;
  int64_t row0, col0;
};

// The bias, a residual and the bounds alone (a ResNet block's relu; FinishRowWith's one pass):
// the 8 x 48 kernel's shortest epilogue.
inline bool FusesInRegisters(const GemmEpilogue& e) {
  return e.pre.count == 0 && e.post.count == 0 && e.smooth == vmath::Smooth::kNone &&
         !e.hardswish && !e.hard_swish && !e.negative_slope;
}

void Finish(const GemmEpilogue* e, int64_t row0, int64_t col0, int64_t rows, int64_t n, float* c,
            int64_t ldc);

// Finish on the tile of rows [ir, ir + rows) and columns [jc, jc + cols) of the block at c.
inline void FinishTile(const FusedEpilogue& f, float* c, int64_t ldc, int64_t ir, int64_t jc,
                       int64_t rows, int64_t cols) {
  Finish(f.e, f.row0 + ir, f.col0 + jc, rows, cols, c + ir * ldc + jc, ldc);
}

// The narrow kernels out of line, one copy for every block kernel that calls them (a copy in each
// was 140 KB of the library).
QUILT_CLONES void NarrowPanelsSlab8(int64_t mc, const float* a, int64_t next, const NarrowPart& n,
                                    int64_t k, int64_t p0, int64_t p1) {
  NarrowPanelsSlab<V8, 8>(mc, a, next, n, k, p0, p1, [](V8* v, const float* p) { LoadV(v, p); });
}

QUILT_CLONES void NarrowPanelsFinish8(int64_t mc, const float* a, int64_t next, const NarrowPart& n,
                                      int64_t k, float* c, int64_t ldc) {
  NarrowPanelsFinish<kNarrowGroup(8)>(mc, a, next, n, k, c, ldc);
}

// One block of C: rows [0, mc) from the packed A panels at `ap`, columns [0, nc) of B, the whole
// reduction of length k. B: packed panels one after another at b (panel t at b + t * k * kNR),
// or, with kRows, rows b + offs[p].
// With `narrow`, its columns come after them (C's columns nc on), slab by slab.
template <bool kRows>
QUILT_ALWAYS_INLINE void BlockOf(int64_t mc, int64_t nc, int64_t k, const float* ap, const float* b,
                                 const int64_t* offs, float* c, int64_t ldc,
                                 const NarrowPart* narrow) {
  const int64_t whole = k / kPhases * kPhases;
  for (int64_t pc = 0; pc < k; pc += kKC) {
    int64_t kc = std::min(kKC, k - pc);
    for (int64_t jr = 0; jr < nc; jr += kNR) {
      const float* bslab = kRows ? b + jr : b + jr / kNR * k * kNR + pc * kNR;
      for (int64_t ir = 0; ir < mc; ir += kMR) {
        const float* apanel = ap + (ir / kMR) * k * kMR + pc * kMR;
        MicroKernelRows<kRows>(kc, apanel, bslab, kRows ? offs + pc : nullptr, c + ir * ldc + jr,
                               ldc, std::min(kMR, mc - ir), std::min(kNR, nc - jr), pc > 0);
      }
    }
    // Called for every slab (past `whole`, a slab with nothing to add): a test of pc here had the
    // compiler split the slab loop in two, a copy of every kernel in each.
    if (narrow) NarrowPanelsSlab8(mc, ap, k * kMR, *narrow, k, pc, std::min(whole, pc + kc));
  }
  if (narrow) NarrowPanelsFinish8(mc, ap, k * kMR, *narrow, k, c + nc, ldc);
  if (k == 0) {
    for (int64_t i = 0; i < mc; ++i) std::fill(c + i * ldc, c + i * ldc + nc, 0.0f);
  }
}

QUILT_CLONES void PackedBlock(int64_t mc, int64_t nc, int64_t k, const float* ap,
                              const float* panel, float* c, int64_t ldc, const NarrowPart* narrow) {
  BlockOf<false>(mc, nc, k, ap, panel, nullptr, c, ldc, narrow);
}

// C (m x nr, m < kMR) = A (m x k, rows read in place) times one packed panel of B (k x kNR, its
// first nr columns used), the whole reduction at once: the panel is read front to back once.
QUILT_CLONES void FewRowsPanel(int64_t m, int64_t k, const float* a, int64_t lda,
                               const float* panel, float* c, int64_t ldc, int64_t nr) {
  static_assert(kMR == 4);
  switch (m) {
    case 3:
      MicroKernel<false, 3, true>(k, a, panel, nullptr, c, ldc, nr, false, lda);
      break;
    case 2:
      MicroKernel<false, 2, true>(k, a, panel, nullptr, c, ldc, nr, false, lda);
      break;
    default:
      MicroKernel<false, 1, true>(k, a, panel, nullptr, c, ldc, nr, false, lda);
      break;
  }
}

QUILT_CLONES void RowsBlock(int64_t mc, int64_t nc, int64_t k, const float* ap, const float* b,
                            const int64_t* offs, float* c, int64_t ldc, const NarrowPart* narrow) {
  BlockOf<true>(mc, nc, k, ap, b, offs, c, ldc, narrow);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUILT_NO_CLONES)
#define QUILT_HAS_AVX512_GEMM 1
#define QUILT_AVX512 __attribute__((target("avx2,fma,avx512f,avx512vl")))

std::atomic<bool> g_avx512_allowed{true};

// Sixteen floats, for the AVX-512 block kernel alone (never passed to or returned from a
// function, so no ABI depends on it).
typedef float V16 __attribute__((vector_size(64)));
typedef float V16Unaligned __attribute__((vector_size(64), aligned(4), may_alias));
QUILT_ALWAYS_INLINE void LoadV16(V16* v, const float* p) {
  *v = *reinterpret_cast<const V16Unaligned*>(p);
}
QUILT_ALWAYS_INLINE void StoreV16(float* p, const V16& v) {
  *reinterpret_cast<V16Unaligned*>(p) = v;
}

// Lanes [0, n) of v (n in [0, 16]) stored at c, or (accumulate) added to what is there: masked,
// so nothing past them is read or written. A partial panel's tile goes from its registers to C
// this way, not through a buffer a float at a time (which cost a 16-column product more than a
// 24-column one). The same sums as the whole tile's (old + new, as `+=`).
QUILT_ALWAYS_INLINE QUILT_AVX512 void StorePart16(float* c, const V16& v, int64_t n,
                                                  bool accumulate) {
  const auto mask = static_cast<__mmask16>(FirstLanesBits(n));
  __m512 x = reinterpret_cast<const __m512&>(v);
  if (accumulate) x = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, c), x);
  _mm512_mask_storeu_ps(c, mask, x);
}
QUILT_ALWAYS_INLINE QUILT_AVX512 void StorePart8(float* c, const V8& v, int64_t n,
                                                 bool accumulate) {
  const auto mask = static_cast<__mmask8>(FirstLanesBits(n, 8));
  __m256 x = reinterpret_cast<const __m256&>(v);
  if (accumulate) x = _mm256_add_ps(_mm256_maskz_loadu_ps(mask, c), x);
  _mm256_mask_storeu_ps(c, mask, x);
}

// Eight rows of C (two packed panels of A, four rows each) by one panel of kNR = 24 columns,
// as 16 + 8 lanes a row: 16 sums in registers, each A value broadcast once for 24 columns. Where
// a CPU runs two 512-bit multiply-adds a cycle, 1.5 times the columns per cycle of the 8-lane
// kernel (which keeps 4 x 24). Each sum runs over p in order, as MicroKernel's for two or more
// rows does, so a row's values are the same whichever kernel computed it.
template <bool kRows, bool kAIn>
QUILT_ALWAYS_INLINE QUILT_AVX512 void MicroKernel8x24(int64_t kc, const float* a0, const float* a1,
                                                      const float* b, const int64_t* offs, float* c,
                                                      int64_t ldc, int64_t nr, bool accumulate,
                                                      int64_t lda) {
  static_assert(kNR == 24 && kMR == 4);
  V16 wide[8];
  V8 narrow[8];
  for (int i = 0; i < 8; ++i) {
    wide[i] = V16{};
    narrow[i] = V8{};
  }
  for (int64_t p = 0; p < kc; ++p) {
    const float* row = kRows ? b + offs[p] : b + p * kNR;
    V16 bw;
    LoadV16(&bw, row);
    V8 bn;
    LoadV(&bn, row + 16);
    for (int i = 0; i < 4; ++i) {
      float av = AAt<kAIn>(a0, lda, i, p);
      wide[i] += av * bw;
      narrow[i] += av * bn;
    }
    for (int i = 0; i < 4; ++i) {
      float av = AAt<kAIn>(a1, lda, i, p);
      wide[4 + i] += av * bw;
      narrow[4 + i] += av * bn;
    }
  }
  if (nr == kNR) {
    for (int i = 0; i < 8; ++i) {
      float* ci = c + i * ldc;
      if (accumulate) {
        V16 ow;
        V8 on;
        LoadV16(&ow, ci);
        LoadV(&on, ci + 16);
        wide[i] += ow;
        narrow[i] += on;
      }
      StoreV16(ci, wide[i]);
      StoreV(ci + 16, narrow[i]);
    }
    return;
  }
  for (int i = 0; i < 8; ++i) {
    float* ci = c + i * ldc;
    StorePart16(ci, wide[i], std::min<int64_t>(nr, 16), accumulate);
    StorePart8(ci + 16, narrow[i], std::max<int64_t>(nr - 16, 0), accumulate);
  }
}

// Row p of 48 columns of B as three 16-lane vectors: of two packed panels (b0, b1; row p of each
// at p * kNR, the middle vector joined from their two halves), or, with kRows, read in place (b0
// + offs[p]).
template <bool kRows>
QUILT_ALWAYS_INLINE QUILT_AVX512 void LoadB48(int64_t p, const float* b0, const float* b1,
                                              const int64_t* offs, V16 (&bv)[3]) {
  if constexpr (kRows) {
    const float* row = b0 + offs[p];
    for (int v = 0; v < 3; ++v) LoadV16(&bv[v], row + 16 * v);
  } else {
    const float* r0 = b0 + p * kNR;
    const float* r1 = b1 + p * kNR;
    V8 tail, head;
    LoadV16(&bv[0], r0);
    LoadV(&tail, r0 + 16);
    LoadV(&head, r1);
    bv[1] =
        __builtin_shufflevector(tail, head, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    LoadV16(&bv[2], r1 + 8);
  }
}

// kM rows of 48 sums from their registers to C (row i at c + i * ldc), or (accumulate) added to
// what is there. Unrolled, so that the sums go from their registers to C.
template <int kM>
QUILT_ALWAYS_INLINE QUILT_AVX512 void StoreRows48(V16 (&acc)[kM][3], float* c, int64_t ldc,
                                                  bool accumulate) {
#pragma GCC unroll 8
  for (int i = 0; i < kM; ++i) {
    float* ci = c + i * ldc;
#pragma GCC unroll 3
    for (int v = 0; v < 3; ++v) {
      if (accumulate) {
        V16 old;
        LoadV16(&old, ci + 16 * v);
        acc[i][v] += old;
      }
      StoreV16(ci + 16 * v, acc[i][v]);
    }
  }
}

// A hint that row p + 16 of two packed panels (b0, b1) will be read: where B streams from memory
// (a product of few rows over a large weight, read once), its lines are on their way while rows
// p to p + 15 are computed. (quilt-gemm-bench, 28 x 8210 x 1024 with A and B packed ahead, 6
// interleaved rounds at 1 thread: best 121.9 -> 129.1 GFLOP/s, median of the rounds' medians
// 98.6 -> 120.4; 512 x 512 x 512, whose panels are in cache, 154.7 either way.)
QUILT_ALWAYS_INLINE void PrefetchPanels(int64_t p, const float* b0, const float* b1) {
  __builtin_prefetch(b0 + (p + 16) * kNR);
  __builtin_prefetch(b1 + (p + 16) * kNR);
}

// Eight rows of C by two panels of 24 columns (48), as three 16-lane vectors a row: 24 sums in
// registers, every multiply-add 16 lanes wide. B: two packed panels (b0, b1; row p of each at
// p * kNR, the vector across them joined from their two halves), or, with kRows, 48 columns
// of rows read in place (b0 + offs[p]). The sums run in MicroKernel8x24's order.
template <bool kRows, bool kAIn>
QUILT_ALWAYS_INLINE QUILT_AVX512 void MicroKernel8x48(int64_t kc, const float* a0, const float* a1,
                                                      const float* b0, const float* b1,
                                                      const int64_t* offs, float* c, int64_t ldc,
                                                      int64_t nr, bool accumulate, int64_t lda,
                                                      const FusedEpilogue* fused = nullptr,
                                                      int64_t ir = 0, int64_t jr = 0) {
  static_assert(kNR == 24 && kMR == 4);
  V16 acc[8][3];
  for (auto& row : acc) {
    for (V16& v : row) v = V16{};
  }
  for (int64_t p = 0; p < kc; ++p) {
    V16 bv[3];
    if constexpr (!kRows) PrefetchPanels(p, b0, b1);
    LoadB48<kRows>(p, b0, b1, offs, bv);
    for (int i = 0; i < 4; ++i) {
      float av = AAt<kAIn>(a0, lda, i, p);
      for (int v = 0; v < 3; ++v) acc[i][v] += av * bv[v];
    }
    for (int i = 0; i < 4; ++i) {
      float av = AAt<kAIn>(a1, lda, i, p);
      for (int v = 0; v < 3; ++v) acc[4 + i][v] += av * bv[v];
    }
  }
  if (nr == 48 && fused && FusesInRegisters(*fused->e)) {
    // The epilogue on the sums in their registers, rounded as Finish rounds it (FinishRowWith
    // with a residual, else BiasClamp; a missing bias is -0).
    const GemmEpilogue& e = *fused->e;
    const V16 lo = V16{} + e.lo, hi = V16{} + e.hi;
    for (int i = 0; i < 8; ++i) {
      float* ci = c + i * ldc;
      const int64_t row = fused->row0 + ir + i;
      const float bias = e.bias ? e.bias[row * e.bias_step] : -0.0f;
      const float* res = e.residual ? e.residual + row * e.residual_ld + fused->col0 + jr : nullptr;
      for (int v = 0; v < 3; ++v) {
        V16 y = acc[i][v];
        if (accumulate) {
          V16 old;
          LoadV16(&old, ci + 16 * v);
          y += old;
        }
        y = y + bias;
        if (res) {
          V16 r;
          LoadV16(&r, res + 16 * v);
          y = y + r;
        }
        y = y < lo ? lo : y;
        y = y > hi ? hi : y;
        StoreV16(ci + 16 * v, y);
      }
    }
    return;
  }
  if (nr == 48 && fused) {
    // Any other epilogue (affine ops, the hardswishes, a silu or sigmoid, a negative slope) a row
    // at a time on its three vectors, as FinishRow (or FinishRowWith) computes it.
    const GemmEpilogue& e = *fused->e;
    for (int i = 0; i < 8; ++i) {
      float* ci = c + i * ldc;
      const int64_t row = fused->row0 + ir + i;
      if (accumulate) {
        for (int v = 0; v < 3; ++v) {
          V16 old;
          LoadV16(&old, ci + 16 * v);
          acc[i][v] += old;
        }
      }
      V16 res[3];
      if (e.residual) {
        const float* r = e.residual + row * e.residual_ld + fused->col0 + jr;
        for (int v = 0; v < 3; ++v) LoadV16(&res[v], r + 16 * v);
      }
      RowEpilogueOf<V16>(e, row).Apply<3>(acc[i], e.residual ? res : nullptr);
      for (int v = 0; v < 3; ++v) StoreV16(ci + 16 * v, acc[i][v]);
    }
    return;
  }
  if (nr == 48) {
    StoreRows48<8>(acc, c, ldc, accumulate);
    return;
  }
  for (int i = 0; i < 8; ++i) {
    float* ci = c + i * ldc;
    for (int v = 0; v < 3; ++v) {
      StorePart16(ci + 16 * v, acc[i][v], std::clamp<int64_t>(nr - 16 * v, 0, 16), accumulate);
    }
  }
}

// One step of the reduction for MicroKernelRowsOf48: B's row p (48 columns) times A's column p
// into the sums of rows [0, kM), a row alone in its panel (row 4 where kM is 5, a single row) into
// set `last` of its.
template <bool kRows, bool kAIn, int kM>
QUILT_ALWAYS_INLINE QUILT_AVX512 void RowsOf48Step(int64_t p, const float* a0, const float* a1,
                                                   const float* b0, const float* b1,
                                                   const int64_t* offs, int64_t lda,
                                                   V16 (&acc)[kM][3], V16 (&last)[3]) {
  V16 bv[3];
  if constexpr (!kRows) PrefetchPanels(p, b0, b1);
  LoadB48<kRows>(p, b0, b1, offs, bv);
  // Rows 0 to 3 from a0's panel (a single row: in its sets, below).
  if constexpr (kM > 1) {
    for (int i = 0; i < kM && i < 4; ++i) {
      float av = AAt<kAIn>(a0, lda, i, p);
      for (int v = 0; v < 3; ++v) acc[i][v] += av * bv[v];
    }
  }
  if constexpr (kM == 1 || kM == 5) {
    // The row alone in its panel: a0's only row, or a1's first.
    float av = AAt<kAIn>(kM == 1 ? a0 : a1, lda, 0, p);
    for (int v = 0; v < 3; ++v) last[v] += av * bv[v];
  } else {
    for (int i = 4; i < kM; ++i) {
      float av = AAt<kAIn>(a1, lda, i - 4, p);
      for (int v = 0; v < 3; ++v) acc[i][v] += av * bv[v];
    }
  }
}

// kM rows of C (1 to 7: a block's last rows, A's panel at a0 and the next at a1) by two whole
// panels of 24 columns (48), as three 16-lane vectors a row: each A value broadcast once for the
// 48 columns, B read once for every row. (The 4-row, 8-lane kernel took them a panel and four rows
// at a time, reading B again for each: a few-columns product's 4 or 5 rows streamed its weights 4
// times.) Each sum as the 8-lane kernel's for those rows: over p in order, but a row alone in its
// panel (a single row, or a fifth) in four sets over alternate p, added at the end (MicroKernel's
// kSplit for one row), so that the values are the same whichever kernel computed them.
template <bool kRows, bool kAIn, int kM>
QUILT_ALWAYS_INLINE QUILT_AVX512 void MicroKernelRowsOf48(int64_t kc, const float* a0,
                                                          const float* a1, const float* b0,
                                                          const float* b1, const int64_t* offs,
                                                          float* c, int64_t ldc, bool accumulate,
                                                          int64_t lda) {
  static_assert(kNR == 24 && kMR == 4 && kM >= 1 && kM < 8);
  constexpr int kSplit = kM == 5 || kM == 1 ? 4 : 1;
  V16 acc[kM][3], sets[kSplit][3];
  for (auto& row : acc) {
    for (V16& v : row) v = V16{};
  }
  for (auto& set : sets) {
    for (V16& v : set) v = V16{};
  }
  int64_t p = 0;
  for (; p + kSplit <= kc; p += kSplit) {
    for (int q = 0; q < kSplit; ++q) {
      RowsOf48Step<kRows, kAIn, kM>(p + q, a0, a1, b0, b1, offs, lda, acc, sets[q]);
    }
  }
  for (; p < kc; ++p) RowsOf48Step<kRows, kAIn, kM>(p, a0, a1, b0, b1, offs, lda, acc, sets[0]);
  if constexpr (kM == 5 || kM == 1) {
    for (int v = 0; v < 3; ++v) {
      acc[kM - 1][v] = sets[0][v];
      for (int q = 1; q < kSplit; ++q) acc[kM - 1][v] += sets[q][v];
    }
  }
  StoreRows48<kM>(acc, c, ldc, accumulate);
}

// MicroKernelRowsOf48 for mr (1 to 7) rows.
template <bool kRows, bool kAIn>
QUILT_ALWAYS_INLINE QUILT_AVX512 void MicroKernelRows48(int64_t mr, int64_t kc, const float* a0,
                                                        const float* a1, const float* b0,
                                                        const float* b1, const int64_t* offs,
                                                        float* c, int64_t ldc, bool accumulate,
                                                        int64_t lda) {
  switch (mr) {
    case 7:
      return MicroKernelRowsOf48<kRows, kAIn, 7>(kc, a0, a1, b0, b1, offs, c, ldc, accumulate, lda);
    case 6:
      return MicroKernelRowsOf48<kRows, kAIn, 6>(kc, a0, a1, b0, b1, offs, c, ldc, accumulate, lda);
    case 5:
      return MicroKernelRowsOf48<kRows, kAIn, 5>(kc, a0, a1, b0, b1, offs, c, ldc, accumulate, lda);
    case 4:
      return MicroKernelRowsOf48<kRows, kAIn, 4>(kc, a0, a1, b0, b1, offs, c, ldc, accumulate, lda);
    case 3:
      return MicroKernelRowsOf48<kRows, kAIn, 3>(kc, a0, a1, b0, b1, offs, c, ldc, accumulate, lda);
    case 2:
      return MicroKernelRowsOf48<kRows, kAIn, 2>(kc, a0, a1, b0, b1, offs, c, ldc, accumulate, lda);
    default:
      return MicroKernelRowsOf48<kRows, kAIn, 1>(kc, a0, a1, b0, b1, offs, c, ldc, accumulate, lda);
  }
}

// The narrow kernels with A's rows read in place (row i at a + i * lda): a vector is sixteen p of
// one row, kNarrowRows512 rows at a time. The phases of row i, column j: 16 floats at
// ph + ((i / 8 * nr + j) * 8 + i % 8) * 16.
constexpr int kNarrowRows512 = 8;

// Columns [j0, j0 + kC) of the sums, kR rows at a time: kR * kC sums in registers, each row's
// vector loaded once for kC columns.
template <int kC, int kR>
QUILT_ALWAYS_INLINE void NarrowRowsSlabOf512(int64_t mc, const float* a, int64_t lda,
                                             const NarrowPart& n, int64_t j0, int64_t k, int64_t p0,
                                             int64_t p1) {
  constexpr int kG = kNarrowRows512;
  static_assert(kG % kR == 0);
  for (int64_t ir = 0; ir < mc; ir += kR) {
    // Rows past the block's last read its first again, their sums dropped.
    const float* r[kR];
    for (int i = 0; i < kR; ++i) r[i] = a + (ir + i < mc ? ir + i : 0) * lda;
    float* ph[kC];
    const float* bj[kC];
    for (int c = 0; c < kC; ++c) {
      bj[c] = n.bt + (j0 + c) * k;
      ph[c] = n.ph + ((ir / kG * n.nr + j0 + c) * kG + ir % kG) * kPhases;
    }
    V16 acc[kR][kC];
    for (int i = 0; i < kR; ++i) {
      for (int c = 0; c < kC; ++c) {
        if (p0 == 0) {
          acc[i][c] = V16{};
        } else {
          LoadV16(&acc[i][c], ph[c] + i * kPhases);
        }
      }
    }
    for (int64_t p = p0; p < p1; p += kPhases) {
      V16 bv[kC];
      for (int c = 0; c < kC; ++c) LoadV16(&bv[c], bj[c] + p);
      for (int i = 0; i < kR; ++i) {
        V16 av;
        LoadV16(&av, r[i] + p);
        for (int c = 0; c < kC; ++c) acc[i][c] += av * bv[c];
      }
    }
    for (int i = 0; i < kR; ++i) {
      for (int c = 0; c < kC; ++c) StoreV16(ph[c] + i * kPhases, acc[i][c]);
    }
  }
}

// Two columns at a time (each row's vector loaded once for both), then one.
__attribute__((noinline)) QUILT_AVX512 void NarrowRowsSlab16(int64_t mc, const float* a,
                                                             int64_t lda, const NarrowPart& n,
                                                             int64_t k, int64_t p0, int64_t p1) {
  int64_t j = 0;
  for (; j + 2 <= n.nr; j += 2) NarrowRowsSlabOf512<2, 8>(mc, a, lda, n, j, k, p0, p1);
  for (; j < n.nr; ++j) NarrowRowsSlabOf512<1, 8>(mc, a, lda, n, j, k, p0, p1);
}

__attribute__((noinline)) QUILT_AVX512 void NarrowRowsFinish16(int64_t mc, const float* a,
                                                               int64_t lda, const NarrowPart& n,
                                                               int64_t k, float* c, int64_t ldc) {
  constexpr int kR = kNarrowRows512;
  const int64_t whole = k / kPhases * kPhases;
  for (int64_t i = 0; i < mc; ++i) {
    const float* row = a + i * lda;
    for (int64_t j = 0; j < n.nr; ++j) {
      const float* bj = n.bt + j * k;
      float* ph = n.ph + ((i / kR * n.nr + j) * kR + i % kR) * kPhases;
      for (int64_t p = whole; p < k; ++p) ph[p - whole] += row[p] * bj[p];
      Phases(ph, 1, c + i * ldc + j);
    }
  }
}

__attribute__((noinline)) QUILT_AVX512 void NarrowPanelsSlab16(int64_t mc, const float* a,
                                                               int64_t next, const NarrowPart& n,
                                                               int64_t k, int64_t p0, int64_t p1) {
  NarrowPanelsSlab<V16, 16>(mc, a, next, n, k, p0, p1,
                            [](V16* v, const float* p) { LoadV16(v, p); });
}

__attribute__((noinline)) QUILT_AVX512 void NarrowPanelsFinish16(int64_t mc, const float* a,
                                                                 int64_t next, const NarrowPart& n,
                                                                 int64_t k, float* c, int64_t ldc) {
  NarrowPanelsFinish<kNarrowGroup(16)>(mc, a, next, n, k, c, ldc);
}

// BlockOf with eight rows at a time where eight remain, by two panels at a time where the second
// has more than 8 columns; the rest as BlockOf takes it.
template <bool kRows, bool kAIn = false>
QUILT_ALWAYS_INLINE QUILT_AVX512 void BlockOf512(int64_t mc, int64_t nc, int64_t k, const float* ap,
                                                 const float* b, const int64_t* offs, float* c,
                                                 int64_t ldc, const NarrowPart* narrow,
                                                 const FusedEpilogue* fused, int64_t lda = 0) {
  const int64_t whole = k / kPhases * kPhases;
  // The next four rows of A: the next panel, or kMR rows down in A itself.
  const int64_t next = kAIn ? kMR * lda : k * kMR;
  for (int64_t pc = 0; pc < k; pc += kKC) {
    int64_t kc = std::min(kKC, k - pc);
    const int64_t* o = kRows ? offs + pc : nullptr;
    // The slab that completes C: its tiles finished as they are stored.
    const FusedEpilogue* fin = pc + kc == k ? fused : nullptr;
    int64_t jr = 0;
    for (; jr + kNR + 8 < nc; jr += 2 * kNR) {
      const float* b0 = kRows ? b + jr : b + jr / kNR * k * kNR + pc * kNR;
      const float* b1 = kRows ? nullptr : b0 + k * kNR;
      int64_t nr = std::min(2 * kNR, nc - jr);
      int64_t ir = 0;
      for (; ir + 2 * kMR <= mc; ir += 2 * kMR) {
        const float* a0 = APanel<kAIn>(ap, lda, k, ir, pc);
        const bool regs = fin && nr == 2 * kNR;
        MicroKernel8x48<kRows, kAIn>(kc, a0, a0 + next, b0, b1, o, c + ir * ldc + jr, ldc, nr,
                                     pc > 0, lda, regs ? fin : nullptr, ir, jr);
        if (fin && !regs) FinishTile(*fin, c, ldc, ir, jr, 2 * kMR, nr);
      }
      if (mc - ir >= 2 && nr == 2 * kNR) {  // the last rows (2 to 7) at once
        const float* a0 = APanel<kAIn>(ap, lda, k, ir, pc);
        MicroKernelRows48<kRows, kAIn>(mc - ir, kc, a0, a0 + next, b0, b1, o, c + ir * ldc + jr,
                                       ldc, pc > 0, lda);
        if (fin) FinishTile(*fin, c, ldc, ir, jr, mc - ir, nr);
        ir = mc;
      }
      for (; ir < mc; ir += kMR) {  // the last rows, panel by panel
        const float* apanel = APanel<kAIn>(ap, lda, k, ir, pc);
        for (int64_t h = 0; h < 2; ++h) {
          const float* bh = kRows ? b0 + h * kNR : b0 + h * k * kNR;
          MicroKernelRows<kRows, kAIn>(kc, apanel, bh, o, c + ir * ldc + jr + h * kNR, ldc,
                                       std::min(kMR, mc - ir), std::min(kNR, nr - h * kNR), pc > 0,
                                       lda);
        }
        if (fin) FinishTile(*fin, c, ldc, ir, jr, std::min(kMR, mc - ir), nr);
      }
    }
    for (; jr < nc; jr += kNR) {
      const float* bslab = kRows ? b + jr : b + jr / kNR * k * kNR + pc * kNR;
      int64_t nr = std::min(kNR, nc - jr);
      int64_t ir = 0;
      for (; nr > 8 && ir + 2 * kMR <= mc; ir += 2 * kMR) {
        const float* a0 = APanel<kAIn>(ap, lda, k, ir, pc);
        MicroKernel8x24<kRows, kAIn>(kc, a0, a0 + next, bslab, o, c + ir * ldc + jr, ldc, nr,
                                     pc > 0, lda);
        if (fin) FinishTile(*fin, c, ldc, ir, jr, 2 * kMR, nr);
      }
      for (; ir < mc; ir += kMR) {
        const float* apanel = APanel<kAIn>(ap, lda, k, ir, pc);
        MicroKernelRows<kRows, kAIn>(kc, apanel, bslab, o, c + ir * ldc + jr, ldc,
                                     std::min(kMR, mc - ir), nr, pc > 0, lda);
        if (fin) FinishTile(*fin, c, ldc, ir, jr, std::min(kMR, mc - ir), nr);
      }
    }
    // Called for every slab (past `whole`, a slab with nothing to add): a test of pc here had the
    // compiler split the slab loop in two, a copy of every kernel in each (36 KB a block kernel).
    if (narrow) {
      if constexpr (kAIn) {
        NarrowRowsSlab16(mc, ap, lda, *narrow, k, pc, std::min(whole, pc + kc));
      } else {
        NarrowPanelsSlab16(mc, ap, next, *narrow, k, pc, std::min(whole, pc + kc));
      }
    }
  }
  if (narrow) {
    if constexpr (kAIn) {
      NarrowRowsFinish16(mc, ap, lda, *narrow, k, c + nc, ldc);
    } else {
      NarrowPanelsFinish16(mc, ap, next, *narrow, k, c + nc, ldc);
    }
    if (fused) FinishTile(*fused, c, ldc, 0, nc, mc, narrow->nr);
  }
  if (k == 0) {
    for (int64_t i = 0; i < mc; ++i) std::fill(c + i * ldc, c + i * ldc + nc, 0.0f);
    if (fused) FinishTile(*fused, c, ldc, 0, 0, mc, nc);
  }
}

QUILT_AVX512 void PackedBlock512(int64_t mc, int64_t nc, int64_t k, const float* ap,
                                 const float* panel, float* c, int64_t ldc,
                                 const NarrowPart* narrow, const FusedEpilogue* fused) {
  BlockOf512<false>(mc, nc, k, ap, panel, nullptr, c, ldc, narrow, fused);
}

QUILT_AVX512 void RowsBlock512(int64_t mc, int64_t nc, int64_t k, const float* ap, const float* b,
                               const int64_t* offs, float* c, int64_t ldc, const NarrowPart* narrow,
                               const FusedEpilogue* fused) {
  BlockOf512<true>(mc, nc, k, ap, b, offs, c, ldc, narrow, fused);
}

// The same with A's rows read where they are (row stride lda), not from packed panels.
QUILT_AVX512 void PackedBlock512InPlace(int64_t mc, int64_t nc, int64_t k, const float* a,
                                        int64_t lda, const float* panel, float* c, int64_t ldc,
                                        const NarrowPart* narrow, const FusedEpilogue* fused) {
  BlockOf512<false, true>(mc, nc, k, a, panel, nullptr, c, ldc, narrow, fused, lda);
}

QUILT_AVX512 void RowsBlock512InPlace(int64_t mc, int64_t nc, int64_t k, const float* a,
                                      int64_t lda, const float* b, const int64_t* offs, float* c,
                                      int64_t ldc, const NarrowPart* narrow,
                                      const FusedEpilogue* fused) {
  BlockOf512<true, true>(mc, nc, k, a, b, offs, c, ldc, narrow, fused, lda);
}

// C (m x 48, m of 1 to 3) = A (m x k, rows read in place) times two whole packed panels of B
// (p0, p1), the whole reduction at once: FewRowsPanel's values (its sums over p in order) on
// 16-lane vectors, each panel read once.
QUILT_AVX512 void FewRowsPanels512(int64_t m, int64_t k, const float* a, int64_t lda,
                                   const float* p0, const float* p1, float* c, int64_t ldc) {
  MicroKernelRows48<false, true>(m, k, a, nullptr, p0, p1, nullptr, c, ldc, false, lda);
}

// A single row of C (nr <= kNR columns) = A's row (read in place) times one whole packed panel,
// the whole reduction at once, in vectors of 16 and 8 lanes as wide as the columns asked for:
// the last panel of a single-row product (a recurrent layer's step over a batch of one, a dense
// layer on one input) that the pairs of panels (FewRowsPanels512) leave. Its sums as the 8-lane
// kernel's single row (MicroKernel, kSplit): four sets over alternate p, added at the end in
// order, so each column's value is the same whichever kernel computed it.
template <int kW>
QUILT_ALWAYS_INLINE QUILT_AVX512 void RowOfPanel512(int64_t k, const float* a, const float* panel,
                                                    float* c, int64_t nr) {
  static_assert(kNR == 24 && (kW == 8 || kW == 16 || kW == 24));
  constexpr bool kWide = kW >= 16, kNarrow = kW != 16;
  constexpr int kOff = kW == 24 ? 16 : 0;  // where the 8-lane vector reads the panel's row
  V16 wide[4] = {};
  V8 narrow[4] = {};
  auto step = [&](int64_t p, int q) {
    const float av = a[p];
    const float* row = panel + p * kNR;
    if constexpr (kWide) {
      V16 b;
      LoadV16(&b, row);
      wide[q] += av * b;
    }
    if constexpr (kNarrow) {
      V8 b;
      LoadV(&b, row + kOff);
      narrow[q] += av * b;
    }
  };
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    for (int q = 0; q < 4; ++q) step(p + q, q);
  }
  for (; p < k; ++p) step(p, 0);
  for (int q = 1; q < 4; ++q) {
    wide[0] += wide[q];
    narrow[0] += narrow[q];
  }
  if constexpr (kWide) StorePart16(c, wide[0], std::min<int64_t>(nr, 16), false);
  if constexpr (kNarrow) StorePart8(c + kOff, narrow[0], nr - kOff, false);
}

QUILT_AVX512 void RowOfPanel512(int64_t k, const float* a, const float* panel, float* c,
                                int64_t nr) {
  if (nr <= 8) return RowOfPanel512<8>(k, a, panel, c, nr);
  if (nr <= 16) return RowOfPanel512<16>(k, a, panel, c, nr);
  RowOfPanel512<24>(k, a, panel, c, nr);
}

bool UseAvx512Gemm() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
  }();
  return has && g_avx512_allowed.load(std::memory_order_relaxed);
}
#else
bool UseAvx512Gemm() { return false; }
#endif

// A block's rows of A: its packed panels (lda 0), or, for the AVX-512 kernels alone, A itself
// with row stride lda.
struct ARows {
  const float* a;
  int64_t lda;
};

// The block kernels for this CPU: with AVX-512, eight rows at a time. With `narrow`, a last
// narrow panel's columns after C's nc. With `fused`, the AVX-512 kernels apply the epilogue as
// they store C; true where they did (else the caller runs Finish on the block).
bool Block(int64_t mc, int64_t nc, int64_t k, ARows a, const float* panel, float* c, int64_t ldc,
           const NarrowPart* narrow, const FusedEpilogue* fused) {
#if defined(QUILT_HAS_AVX512_GEMM)
  if (a.lda > 0) {
    PackedBlock512InPlace(mc, nc, k, a.a, a.lda, panel, c, ldc, narrow, fused);
    return fused != nullptr;
  }
  if (UseAvx512Gemm()) {
    PackedBlock512(mc, nc, k, a.a, panel, c, ldc, narrow, fused);
    return fused != nullptr;
  }
#endif
  (void)fused;
  PackedBlock(mc, nc, k, a.a, panel, c, ldc, narrow);
  return false;
}

bool Block(int64_t mc, int64_t nc, int64_t k, ARows a, const float* b, const int64_t* offs,
           float* c, int64_t ldc, const NarrowPart* narrow, const FusedEpilogue* fused) {
#if defined(QUILT_HAS_AVX512_GEMM)
  if (a.lda > 0) {
    RowsBlock512InPlace(mc, nc, k, a.a, a.lda, b, offs, c, ldc, narrow, fused);
    return fused != nullptr;
  }
  if (UseAvx512Gemm()) {
    RowsBlock512(mc, nc, k, a.a, b, offs, c, ldc, narrow, fused);
    return fused != nullptr;
  }
#endif
  (void)fused;
  RowsBlock(mc, nc, k, a.a, b, offs, c, ldc, narrow);
  return false;
}

// A task's narrow columns (k > 0): B's value (p, j) from `at`, laid out for the block kernels
// reading A as `a` does, once for all the task's row blocks, in this thread's scratch.
template <typename At>
NarrowPart LayOutNarrow(int64_t k, ARows a, int64_t nr, At at) {
  const int repeat = a.lda > 0 ? 1 : 4;
  float* buf = Scratch(ScratchSlot::kGemmNarrow, kNarrowPhaseFloats + nr * k * repeat);
  float* bt = buf + kNarrowPhaseFloats;
  if (repeat == 1) {
    LayOutNarrowB<1>(k, nr, at, bt);
  } else {
    LayOutNarrowB<4>(k, nr, at, bt);
  }
  return NarrowPart{bt, nr, buf};
}

// Rows [i, i + kMR) of A into a panel, k x kMR, rows past m zero.
void PackA(const float* a, int64_t lda, int64_t m, int64_t k, int64_t i, float* panel) {
  int64_t rows = std::min(kMR, m - i);
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t r = 0; r < kMR; ++r) panel[p * kMR + r] = r < rows ? a[(i + r) * lda + p] : 0.0f;
  }
}

// The eight lanes of v added up in pairs: (0 + 4) + (1 + 5), (2 + 6) + (3 + 7).
QUILT_ALWAYS_INLINE float LaneSum(const V8& v) {
  float lanes[8];
  std::memcpy(lanes, &v, sizeof lanes);
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
         ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

// A product with few columns: dot products along the rows of A, kRows rows by kCols columns of C
// at once, so that each load of A feeds kCols sums and each load of a column kRows.
template <int kRows, int kCols>
QUILT_ALWAYS_INLINE void DotRows(int64_t k, const float* a, int64_t lda, const float* cols,
                                 float* c, int64_t ldc) {
  V8 acc[kRows][kCols];
  for (auto& row : acc) {
    for (V8& v : row) v = V8{};
  }
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    V8 x[kRows];
    for (int r = 0; r < kRows; ++r) LoadV(&x[r], a + r * lda + p);
    for (int j = 0; j < kCols; ++j) {
      V8 y;
      LoadV(&y, cols + j * k + p);
      for (int r = 0; r < kRows; ++r) acc[r][j] += x[r] * y;
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int j = 0; j < kCols; ++j) {
      float s = LaneSum(acc[r][j]);
      for (int64_t q = p; q < k; ++q) s += a[r * lda + q] * cols[j * k + q];
      c[r * ldc + j] = s;
    }
  }
}

// Rows of C by kRows at once: every column, kCols at a time.
template <int kRows>
QUILT_ALWAYS_INLINE void DotRowsAll(int64_t n, int64_t k, const float* a, int64_t lda,
                                    const float* cols, float* c, int64_t ldc) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) DotRows<kRows, 4>(k, a, lda, cols + j * k, c + j, ldc);
  switch (n - j) {
    case 3:
      DotRows<kRows, 3>(k, a, lda, cols + j * k, c + j, ldc);
      break;
    case 2:
      DotRows<kRows, 2>(k, a, lda, cols + j * k, c + j, ldc);
      break;
    case 1:
      DotRows<kRows, 1>(k, a, lda, cols + j * k, c + j, ldc);
      break;
    default:
      break;
  }
}

QUILT_CLONES void NarrowProduct(int64_t m0, int64_t m1, int64_t n, int64_t k, const float* a,
                                int64_t lda, const float* cols, float* c, int64_t ldc) {
  if (n == 1) {  // a matrix-vector product: kVectorRows sums at once
    int64_t i = m0;
    for (; i + kVectorRows <= m1; i += kVectorRows) {
      DotRows<kVectorRows, 1>(k, a + i * lda, lda, cols, c + i * ldc, ldc);
    }
    for (; i < m1; ++i) DotRows<1, 1>(k, a + i * lda, lda, cols, c + i * ldc, ldc);
    return;
  }
  int64_t i = m0;
  for (; i + kNarrowRows <= m1; i += kNarrowRows) {
    DotRowsAll<kNarrowRows>(n, k, a + i * lda, lda, cols, c + i * ldc, ldc);
  }
  for (; i < m1; ++i) DotRowsAll<1>(n, k, a + i * lda, lda, cols, c + i * ldc, ldc);
}

// Columns [j0, j1) of y = at^T x (SgemvTransposed; j0 a multiple of 64), block by block: a full
// block in eight vectors of sums, a last narrower one eight columns at a time, then one.
QUILT_CLONES void TransposedColumns(int64_t m, int64_t k, const float* at, const float* x, float* y,
                                    int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += kTransposedBlock) {
    const int64_t w = std::min(kTransposedBlock, m - j);
    const float* block = at + j * k;
    if (w == kTransposedBlock) {
      V8 s[8];
      for (V8& v : s) v = V8{};
      for (int64_t p = 0; p < k; ++p) {
        const float* row = block + p * kTransposedBlock;
        float xv = x[p];
        for (int v = 0; v < 8; ++v) {
          V8 a;
          LoadV(&a, row + 8 * v);
          s[v] += xv * a;
        }
      }
      for (int v = 0; v < 8; ++v) StoreV(y + j + 8 * v, s[v]);
      continue;
    }
    int64_t c = 0;
    for (; c + 8 <= w; c += 8) {
      V8 s = V8{};
      for (int64_t p = 0; p < k; ++p) {
        V8 a;
        LoadV(&a, block + p * w + c);
        s += x[p] * a;
      }
      StoreV(y + j + c, s);
    }
    for (; c < w; ++c) {
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += x[p] * block[p * w + c];
      y[j + c] = s;
    }
  }
}

// The epilogue on rows [row0, row0 + rows) of C, columns [col0, col0 + n), at c (row stride ldc).
void Finish(const GemmEpilogue* e, int64_t row0, int64_t col0, int64_t rows, int64_t n, float* c,
            int64_t ldc) {
  if (!e) return;
  for (int64_t r = 0; r < rows; ++r) {
    if (e->residual) {
      FinishRowWith(*e, c + r * ldc, n, row0 + r, e->residual + (row0 + r) * e->residual_ld + col0);
    } else {
      FinishRow(*e, c + r * ldc, n, row0 + r);
    }
  }
}

}  // namespace

bool HasAvx512Gemm() { return UseAvx512Gemm(); }

void SetAvx512GemmAllowedForTesting(bool allowed) {
#if defined(QUILT_HAS_AVX512_GEMM)
  g_avx512_allowed.store(allowed);
#else
  (void)allowed;
#endif
}

QUILT_CLONES void Scale(float* __restrict y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

QUILT_CLONES void AddConst(float* __restrict y, int64_t n, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] += b;
}

QUILT_CLONES void DivideConst(float* __restrict y, int64_t n, float d) {
  for (int64_t i = 0; i < n; ++i) y[i] /= d;
}

void RowOps::Apply(float* y, int64_t n, int64_t row) const {
  for (int j = 0; j < count; ++j) {
    float v = k[j][row * step[j]];
    if (op[j] == 's') {
      Scale(y, n, v);
    } else if (op[j] == 'd') {
      DivideConst(y, n, v);
    } else if (op[j] == 'x') {
      for (int64_t i = 0; i < n; ++i) y[i] = MaxOf(y[i], v);
    } else if (op[j] == 'n') {
      for (int64_t i = 0; i < n; ++i) y[i] = MinOf(y[i], v);
    } else {
      AddConst(y, n, v);
    }
  }
}

QUILT_CLONES void RowEpilogue::Row(float* y, int64_t n) const {
  constexpr int kChunk = 8;  // vectors taken through the ops together
  int64_t i = 0;
  for (; i + 8 * kChunk <= n; i += 8 * kChunk) {
    V8 v[kChunk];
    for (int j = 0; j < kChunk; ++j) LoadV(&v[j], y + i + 8 * j);
    Apply<kChunk>(v);
    for (int j = 0; j < kChunk; ++j) StoreV(y + i + 8 * j, v[j]);
  }
  for (; i + 8 <= n; i += 8) {
    V8 v[1];
    LoadV(&v[0], y + i);
    Apply<1>(v);
    StoreV(y + i, v[0]);
  }
  if (i < n) {
    float lanes[8] = {};
    std::copy(y + i, y + n, lanes);
    V8 v[1];
    LoadV(&v[0], lanes);
    Apply<1>(v);
    StoreV(lanes, v[0]);
    std::copy(lanes, lanes + (n - i), y + i);
  }
}

void ApplyRowEpilogue(const RowEpilogue& e, float* y, int64_t n) { e.Row(y, n); }

QUILT_CLONES void FinishRow(const GemmEpilogue& e, float* y, int64_t n, int64_t row) {
  if (e.smooth != vmath::Smooth::kNone) {
    e.pre.Apply(y, n, row);
    BiasSmooth(y, n, e.bias ? e.bias[row * e.bias_step] : -0.0f, e.smooth);
    e.post.Apply(y, n, row);
    return;
  }
  if (e.pre.count == 0 && e.post.count == 0 && !e.hard_swish && !e.negative_slope) {
    // One op: its own loop (the compiler's vectors, no per-chunk dispatch).
    float b = e.bias ? e.bias[row * e.bias_step] : -0.0f;
    if (e.hardswish) {
      BiasHardSwish(y, n, b);
    } else {
      BiasClamp(y, n, b, e.lo, e.hi);
    }
    return;
  }
  RowEpilogue(e, row).Row(y, n);
}

QUILT_CLONES void FinishRowWith(const GemmEpilogue& e, float* __restrict y, int64_t n, int64_t row,
                                const float* __restrict res) {
  float b = e.bias ? e.bias[row * e.bias_step] : -0.0f;
  if (FusesInRegisters(e)) {
    // The bias, the residual and the bounds (a ResNet block's relu) in one pass, rounded as the
    // passes below round them (the bounds' pass adds a bias of -0, which changes no value): a
    // GEMM finishes each row of a block of C so, and for blocks a few panels wide the copy of
    // the epilogue below cost more than its arithmetic.
    for (int64_t i = 0; i < n; ++i) {
      float v = y[i] + b;
      v = v + res[i];
      v = v < e.lo ? e.lo : v;
      y[i] = v > e.hi ? e.hi : v;
    }
    return;
  }
  e.pre.Apply(y, n, row);
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i] + b;
    y[i] = v + res[i];
  }
  // The activation and the ops after it, with nothing before them.
  GemmEpilogue rest = e;
  rest.pre = RowOps();
  rest.bias = nullptr;
  rest.residual = nullptr;
  FinishRow(rest, y, n, row);
}

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

QUILT_CLONES void BiasOnnxHardSwish(float* __restrict y, int64_t n, float b) {
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i] + b;
    float t = v / 6.0f + 0.5f;
    y[i] = v * std::max(0.0f, std::min(1.0f, t));
  }
}

namespace {
// BiasSmooth's loops, one for each function (the compiler's vectors in each), compiled into each
// copy below.
QUILT_ALWAYS_INLINE void BiasSmoothLoops(float* __restrict y, int64_t n, float b, vmath::Smooth f) {
  if (f == vmath::Smooth::kSilu) {
    for (int64_t i = 0; i < n; ++i) {
      float v = y[i] + b;
      y[i] = v * vmath::Sigmoid(v);
    }
  } else if (f == vmath::Smooth::kSigmoid) {
    for (int64_t i = 0; i < n; ++i) y[i] = vmath::Sigmoid(y[i] + b);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] += b;
  }
}

QUILT_CLONES void BiasSmoothClones(float* __restrict y, int64_t n, float b, vmath::Smooth f) {
  BiasSmoothLoops(y, n, b, f);
}

#if defined(QUILT_HAS_AVX512_GEMM) && !defined(__clang__)
#define QUILT_HAS_SMOOTH512 1
// On 16 lanes (GCC: clang takes no prefer-vector-width in a target), as the sigmoid kernel computes
// it where the CPU has AVX-512 (its Map512): on a DBNet head's 295 K sigmoids, 0.34 ms in the AVX2
// copy, 0.15 in this one.
__attribute__((target("avx2,fma,avx512f,avx512vl,prefer-vector-width=512"))) void BiasSmooth512(
    float* __restrict y, int64_t n, float b, vmath::Smooth f) {
  BiasSmoothLoops(y, n, b, f);
}
#endif
}  // namespace

void BiasSmooth(float* y, int64_t n, float b, vmath::Smooth f) {
#if defined(QUILT_HAS_SMOOTH512)
  if (UseAvx512Gemm()) {
    BiasSmooth512(y, n, b, f);
    return;
  }
#endif
  BiasSmoothClones(y, n, b, f);
}

void GemmB::PackColumns(int64_t k, int64_t n, float* cols) const {
  // (The product of few columns packs no panels otherwise: its slot is free.)
  float* panel = Scratch(ScratchSlot::kGemmPanels, std::max<int64_t>(1, k * kGemmPanel));
  Pack(0, n, panel);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < k; ++p) cols[j * k + p] = panel[p * kGemmPanel + j];
  }
}

namespace {
// Rows [0, k) of columns [0, kGemmPanel) of a row-major matrix (row stride ld) into a panel, as
// whole vectors inline: a call to memcpy per row costs more than the copy.
QUILT_CLONES void CopyPanel(const float* b, int64_t k, int64_t ld, float* panel) {
  for (int64_t p = 0; p < k; ++p) {
    for (int v = 0; v < kVecs; ++v) {
      V8 x;
      LoadV(&x, b + p * ld + 8 * v);
      StoreV(panel + p * kGemmPanel + 8 * v, x);
    }
  }
}
}  // namespace

void MatrixB::Pack(int64_t j, int64_t cols, float* panel) const {
  if (cols == kGemmPanel) {
    CopyPanel(b_ + j, k_, ld_, panel);
    return;
  }
  for (int64_t p = 0; p < k_; ++p) {
    const float* row = b_ + p * ld_ + j;
    float* out = panel + p * kGemmPanel;
    std::memcpy(out, row, static_cast<size_t>(cols) * sizeof(float));
    std::fill(out + cols, out + kGemmPanel, 0.0f);
  }
}

void PackBPanels(const GemmB& b, int64_t k, int64_t n, float* out) {
  for (int64_t j = 0; j < n && k > 0; j += kGemmPanel) {
    b.Pack(j, std::min(kGemmPanel, n - j), out + j * k);
  }
}

void PackBMatrices(const float* b, int64_t matrices, int64_t k, int64_t n, float* out) {
  for (int64_t i = 0; i < matrices && k > 0; ++i) {
    PackBPanels(MatrixB(b + i * k * n, k, n), k, n, out + i * PackedBFloats(k, n));
  }
}

void UnpackBPanels(const float* panels, int64_t k, int64_t n, float* out) {
  for (int64_t j = 0; j < n; ++j) {
    const float* panel = panels + j / kGemmPanel * k * kGemmPanel + j % kGemmPanel;
    for (int64_t p = 0; p < k; ++p) out[p * n + j] = panel[p * kGemmPanel];
  }
}

PackedB::PackedB(const GemmB& b, int64_t k, int64_t n)
    : k_(k), own_(static_cast<size_t>(PackedBFloats(k, n))), panels_(own_.data()) {
  PackBPanels(b, k, n, own_.data());
  LayOutColumns(n);
}

PackedB::PackedB(const float* panels, int64_t k, int64_t n) : k_(k), panels_(panels) {
  LayOutColumns(n);
}

void PackedB::LayOutColumns(int64_t n) {
  if (n <= kFewColumns && k_ > 0) {
    columns_.resize(static_cast<size_t>(n * k_));
    PackColumns(k_, n, columns_.data());  // from the panels
  }
}

void PackedB::Pack(int64_t j, int64_t cols, float* panel) const {
  const float* from = panels_ + j / kGemmPanel * k_ * kGemmPanel;
  if (j % kGemmPanel == 0) {
    std::copy(from, from + k_ * kGemmPanel, panel);
    for (int64_t p = 0; cols < kGemmPanel && p < k_; ++p) {
      std::fill(panel + p * kGemmPanel + cols, panel + (p + 1) * kGemmPanel, 0.0f);
    }
    return;
  }
  for (int64_t p = 0; p < k_; ++p) {  // a range of columns not on a panel's edge
    for (int64_t q = 0; q < kGemmPanel; ++q) {
      int64_t col = j + q;
      panel[p * kGemmPanel + q] =
          q < cols ? panels_[col / kGemmPanel * k_ * kGemmPanel + p * kGemmPanel + col % kGemmPanel]
                   : 0.0f;
    }
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

// C = A * B, B packed from `b` or (b null) read in place at rows + offs[p] (Sgemm, SgemmRows).
void Product(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const PackedA* a_packed,
             const GemmB* b, const float* rows, const int64_t* offs, float* c, int64_t ldc,
             rt::ThreadPool* pool, const GemmEpilogue* epilogue) {
  int threads = pool ? pool->threads() : 1;
  int64_t npanels = (n + kNR - 1) / kNR;
  int64_t work = m * n * std::max<int64_t>(k, 1);
  // Below this many multiply-adds a loop is not worth splitting across threads.
  constexpr int64_t kParallelWork = 1 << 15;
  if (n <= kFewColumns) {
    // Few columns: B's columns made contiguous (or laid out so ahead), then dot products.
    const float* laid_out = b ? b->Columns() : nullptr;
    // In this thread's scratch, read by the pool's threads: no allocation per product (a
    // reduction of 4,096 or more made it one from the system, its pages faulted in again).
    float* cols =
        laid_out ? nullptr : Scratch(ScratchSlot::kGemmColumns, std::max<int64_t>(1, n * k));
    if (!laid_out && b) {
      b->PackColumns(k, n, cols);
    } else if (!laid_out) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t p = 0; p < k; ++p) cols[j * k + p] = rows[offs[p] + j];
      }
    }
    int64_t grain = std::max<int64_t>(1, kParallelWork / std::max<int64_t>(1, n * k));
    rt::ParallelFor(pool, m, grain, [&](int64_t i0, int64_t i1) {
      NarrowProduct(i0, i1, n, k, a, lda, laid_out ? laid_out : cols, c, ldc);
      Finish(epilogue, i0, 0, i1 - i0, n, c + i0 * ldc, ldc);
    });
    return;
  }
  if (m < kMR && b && k > 0 && b->Panel(0)) {
    // A few rows by a B packed ahead: each panel streamed once, A's rows read where they are.
    // With AVX-512, one to three rows take two whole panels at a time (a single row, a recurrent
    // layer's step over a batch of one, in 16-lane sums that keep up with L2, where the 8-lane
    // kernel's four sets of three waited on their multiply-adds).
    bool pairs = false;
#if defined(QUILT_HAS_AVX512_GEMM)
    pairs = UseAvx512Gemm();
#endif
    const int64_t per_task = pairs ? 2 : 1;
    int64_t grain =
        std::max<int64_t>(1, kParallelWork / std::max<int64_t>(1, m * per_task * kNR * k));
    rt::ParallelFor(work >= kParallelWork ? pool : nullptr, (npanels + per_task - 1) / per_task,
                    grain, [&](int64_t t0, int64_t t1) {
                      for (int64_t t = t0; t < t1; ++t) {
                        int64_t j = t * per_task * kNR, end = std::min(n, j + per_task * kNR);
#if defined(QUILT_HAS_AVX512_GEMM)
                        if (pairs && end - j == 2 * kNR) {
                          FewRowsPanels512(m, k, a, lda, b->Panel(j), b->Panel(j + kNR), c + j,
                                           ldc);
                          Finish(epilogue, 0, j, m, end - j, c + j, ldc);
                          continue;
                        }
#endif
                        for (int64_t jp = j; jp < end; jp += kNR) {
                          int64_t cols = std::min(kNR, n - jp);
#if defined(QUILT_HAS_AVX512_GEMM)
                          if (pairs && m == 1) {
                            RowOfPanel512(k, a, b->Panel(jp), c + jp, cols);
                            Finish(epilogue, 0, jp, m, cols, c + jp, ldc);
                            continue;
                          }
#endif
                          FewRowsPanel(m, k, a, lda, b->Panel(jp), c + jp, ldc, cols);
                          Finish(epilogue, 0, jp, m, cols, c + jp, ldc);
                        }
                      }
                    });
    return;
  }
  int64_t mpanels = (m + kMR - 1) / kMR;
  // B's rows read in place when given by address (SgemmRows); otherwise each task packs its
  // panels (at most ten, about 1 MiB) into its thread's scratch just before its row blocks read
  // them, so they are in cache when used (B packed whole ahead of the product went out to memory
  // and back).
  // A's panels: packed once for many products (PackedA), or here.
  // In this thread's scratch (shared with the pool's threads for the product): a new buffer of
  // megabytes on every call came from the system each time and faulted its pages in again.
  // Or, with the AVX-512 kernels, A's rows read where they are: nothing packed, and a weight
  // needs no packed copy kept beside it (GemmReadsAInPlace).
  const bool a_in_place = !a_packed && GemmReadsAInPlace();
  float* a_here = a_packed || a_in_place
                      ? nullptr
                      : Scratch(ScratchSlot::kGemmA, std::max<int64_t>(1, mpanels * kMR * k));
  const float* ap = a_packed ? a_packed->panels() : a_here;
  auto a_rows = [&](int64_t i) {
    return a_in_place ? ARows{a + i * lda, lda} : ARows{ap + i * k, 0};
  };
  if (!a_packed && !a_in_place) {
    int64_t pack_grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, k * kMR));
    rt::ParallelFor(work >= kParallelWork ? pool : nullptr, mpanels, pack_grain,
                    [&](int64_t t0, int64_t t1) {
                      for (int64_t t = t0; t < t1; ++t) {
                        PackA(a, lda, m, k, t * kMR, a_here + t * kMR * k);
                      }
                    });
  }
  // Tasks: a block of `nc` columns (a few panels) by a group of kMC-row blocks. Each panel of B is
  // packed once per task and used by every row block of the group while it is in cache; the rows
  // are split into groups when B is packed ahead (one group a thread), or when there are too few
  // column blocks to keep every thread busy.
  int64_t mblocks = (m + kMC - 1) / kMC;
  // A task's panels of B, packed one after another: at most ten, and about 1 MiB of them.
  int64_t nc_panels =
      rows ? 10 : std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(1, k * kNR), 1, 10);
  int64_t groups = 1;
  if (threads > 1 && work >= kParallelWork) {
    int64_t want = 4 * threads;
    // B packed ahead is read again at no cost: the rows are split among the threads first, so
    // that a thread's tasks share its rows of A rather than every task streaming all of A.
    if (!rows && b->Panel(0)) groups = std::min<int64_t>(mblocks, threads);
    int64_t per = (want + groups - 1) / groups;
    // At least two panels a task where there are two: the AVX-512 kernel computes them as one
    // block of 48 columns, half again as fast per multiply-add as a panel alone.
    nc_panels =
        std::clamp<int64_t>((npanels + per - 1) / per, std::min<int64_t>(2, npanels), nc_panels);
    int64_t col_blocks = (npanels + nc_panels - 1) / nc_panels;
    if (col_blocks * groups < want) {
      groups = std::min(mblocks, (want + col_blocks - 1) / col_blocks);
    }
  }
  int64_t per_group = (mblocks + groups - 1) / groups;
  groups = (mblocks + per_group - 1) / per_group;
  int64_t nc = nc_panels * kNR;
  int64_t nblocks = (n + nc - 1) / nc;
  rt::ThreadPool* run_pool = work >= kParallelWork ? pool : nullptr;
  // The epilogue (FusedEpilogue, where there is one) applied by the AVX-512 block kernels as they
  // store C: in the registers of the 8 x 48 kernel, and by Finish on each other tile just stored
  // (the 8-lane kernels leave it to Finish, a pass over each block after it). Before the 8 x 48
  // kernel took more than the bias, a residual and the bounds, finishing the others' tiles so
  // cost more than the pass saved (a hardswish 1x1 conv, 64 -> 128 channels, 3 images of 28 x
  // 28: 0.39-0.42 -> 0.44-0.59 ms).
  rt::ParallelFor(run_pool, groups * nblocks, 1, [&](int64_t t0, int64_t t1) {
    // A last panel of at most kNarrowCols columns runs along the reduction (NarrowPart).
    const bool narrow_tail = k >= kNarrowMinK && n % kNR <= kNarrowCols;
    // A last partial panel of B read in place, copied whole (this thread's scratch: the rows
    // path packs no other panels).
    float* panel = rows && n % kNR != 0 && !narrow_tail
                       ? Scratch(ScratchSlot::kGemmPanels, std::max<int64_t>(1, k * kNR))
                       : nullptr;
    for (int64_t t = t0; t < t1; ++t) {
      // Tasks of one group of rows next to each other: a thread's run of tasks shares its rows.
      int64_t ib0 = t / nblocks * per_group, ib1 = std::min(mblocks, ib0 + per_group);
      int64_t j = t % nblocks * nc, ncols = std::min(nc, n - j);
      if (rows) {
        // Whole panels read in place; a last partial panel (the matrix's end) laid out for the
        // narrow kernels, or copied, so that nothing past column n is read.
        int64_t whole = ncols / kNR * kNR;
        NarrowPart narrow{};
        if (whole < ncols && narrow_tail) {
          narrow = LayOutNarrow(k, a_rows(0), ncols - whole, [&](int64_t p, int64_t jj) {
            return rows[offs[p] + j + whole + jj];
          });
        } else if (whole < ncols) {
          for (int64_t p = 0; p < k; ++p) {
            const float* from = rows + offs[p] + j + whole;
            float* to = panel + p * kNR;
            std::copy(from, from + (ncols - whole), to);
            std::fill(to + (ncols - whole), to + kNR, 0.0f);
          }
        }
        const NarrowPart* np = narrow.nr > 0 ? &narrow : nullptr;
        for (int64_t ib = ib0; ib < ib1; ++ib) {
          int64_t i = ib * kMC, mc = std::min(kMC, m - i);
          const FusedEpilogue f{epilogue, i, j}, tail{epilogue, i, j + whole};
          bool finished = true;
          if (whole > 0 || np) {
            finished = Block(mc, whole, k, a_rows(i), rows + j, offs, c + i * ldc + j, ldc, np,
                             epilogue ? &f : nullptr);
          }
          if (whole < ncols && !np) {
            finished = Block(mc, ncols - whole, k, a_rows(i), panel, c + i * ldc + j + whole, ldc,
                             nullptr, epilogue ? &tail : nullptr) &&
                       finished;
          }
          if (!finished) Finish(epilogue, i, j, mc, ncols, c + i * ldc + j, ldc);
        }
      } else {
        // The task's panels one after another (packed ahead, or packed here): each row block
        // then runs over all of them while its panels of A are in cache, rather than all of A
        // streaming past each panel.
        const float* packed = b->Panel(j);
        if (!packed) {
          int64_t panels = (ncols + kNR - 1) / kNR;
          float* buf = Scratch(ScratchSlot::kGemmPanels, std::max<int64_t>(1, panels * k * kNR));
          for (int64_t jr = 0; jr < ncols; jr += kNR) {
            b->Pack(j + jr, std::min(kNR, ncols - jr), buf + jr / kNR * k * kNR);
          }
          packed = buf;
        }
        int64_t body = ncols;
        NarrowPart narrow{};
        if (ncols % kNR != 0 && narrow_tail) {
          body = ncols / kNR * kNR;
          const float* last = packed + body / kNR * k * kNR;
          narrow = LayOutNarrow(k, a_rows(0), ncols - body,
                                [&](int64_t p, int64_t jj) { return last[p * kNR + jj]; });
        }
        const NarrowPart* np = narrow.nr > 0 ? &narrow : nullptr;
        for (int64_t ib = ib0; ib < ib1; ++ib) {
          int64_t i = ib * kMC, mc = std::min(kMC, m - i);
          const FusedEpilogue f{epilogue, i, j};
          if (!Block(mc, body, k, a_rows(i), packed, c + i * ldc + j, ldc, np,
                     epilogue ? &f : nullptr)) {
            Finish(epilogue, i, j, mc, ncols, c + i * ldc + j, ldc);
          }
        }
      }
    }
  });
}

}  // namespace

PackedA::PackedA(const float* a, int64_t lda, int64_t m, int64_t k)
    : m_(m),
      k_(k),
      panels_(static_cast<size_t>(std::max<int64_t>(1, (m + kMR - 1) / kMR * kMR * k))) {
  for (int64_t i = 0; i < m; i += kMR) PackA(a, lda, m, k, i, panels_.data() + i * k);
}

void PackedA::Unpack(float* a) const {
  for (int64_t i = 0; i < m_; ++i) {
    const float* panel = panels_.data() + i / kMR * kMR * k_ + i % kMR;
    for (int64_t p = 0; p < k_; ++p) a[i * k_ + p] = panel[p * kMR];
  }
}

bool GemmReadsA(int64_t m, int64_t n) { return n <= kFewColumns || m < kMR; }

bool GemmReadsAInPlace() { return UseAvx512Gemm(); }

void Sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const GemmB& b, float* c,
           int64_t ldc, rt::ThreadPool* pool, const GemmEpilogue* epilogue,
           const PackedA* a_packed) {
  if (m <= 0 || n <= 0) return;
  Product(m, n, k, a, lda, a_packed, &b, nullptr, nullptr, c, ldc, pool, epilogue);
}

namespace {

// C[i, j] = C^T[j, i] + bias[i * bias_step] (none: -0, which changes no value), in [lo, hi] as
// BiasClamp (NaN kept), for m rows of n <= kFewColumns columns; C^T (n x m) at ct. Eight rows at a
// time in vectors, each column's eight values one vector: the scalar loop's selects and strided
// reads cost 1.7 us of a 10 us STFT conv (258 x 4).
QUILT_CLONES void TransposedFinish(int64_t m, int64_t n, const float* ct, const float* bias,
                                   int64_t bias_step, float lo, float hi, float* c, int64_t ldc) {
  const V8 vlo = V8{} + lo, vhi = V8{} + hi;
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    V8 b;
    for (int l = 0; l < 8; ++l) b[l] = bias ? bias[(i + l) * bias_step] : -0.0f;
    float t[kFewColumns][8];
    for (int64_t j = 0; j < n; ++j) {
      V8 v;
      LoadV(&v, ct + j * m + i);
      v += b;
      v = v < vlo ? vlo : v;
      v = v > vhi ? vhi : v;
      StoreV(t[j], v);
    }
    for (int l = 0; l < 8; ++l) {
      for (int64_t j = 0; j < n; ++j) c[(i + l) * ldc + j] = t[j][l];
    }
  }
  for (; i < m; ++i) {
    const float b = bias ? bias[i * bias_step] : -0.0f;
    for (int64_t j = 0; j < n; ++j) {
      float v = ct[j * m + i] + b;
      v = v < lo ? lo : v;
      c[i * ldc + j] = v > hi ? hi : v;
    }
  }
}

// C = A B of few columns, B^T (n x k, row j at bt + j * ldb) read in place (SgemmFewColumns).
void FewColumnsProduct(int64_t n, const FewColumnsA& a, const float* bt, int64_t ldb, float* c,
                       int64_t ldc, rt::ThreadPool* pool, const GemmEpilogue* epilogue) {
  const int64_t m = a.m(), k = a.k();
  float* ct = Scratch(ScratchSlot::kGemmTransposedC, n * m);
  Product(n, m, k, bt, ldb, nullptr, &a.at(), nullptr, nullptr, ct, m, pool, nullptr);
  const GemmEpilogue* e = epilogue;
  if (e && (!FusesInRegisters(*e) || e->residual)) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = ct[j * m + i];
    }
    Finish(epilogue, 0, 0, m, n, c, ldc);
    return;
  }
  // The bias and the bounds (or nothing) as C^T is written into C, as BiasClamp rounds them: a
  // call per row of a few columns cost more than its arithmetic.
  TransposedFinish(m, n, ct, e ? e->bias : nullptr, e ? e->bias_step : 0,
                   e ? e->lo : -std::numeric_limits<float>::infinity(),
                   e ? e->hi : std::numeric_limits<float>::infinity(), c, ldc);
}

// No reduction: C is zero, then the epilogue.
void ZeroProduct(int64_t m, int64_t n, float* c, int64_t ldc, const GemmEpilogue* epilogue) {
  for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
  Finish(epilogue, 0, 0, m, n, c, ldc);
}

}  // namespace

// B's columns, contiguous, are the rows of B^T, which the product reads in place (from this
// thread's scratch where B does not hold them so). A product of m rows by few columns of A^T
// takes its own few-columns path, which reads PackedB's columns, never this slot.
void SgemmFewColumns(int64_t n, const FewColumnsA& a, const GemmB& b, float* c, int64_t ldc,
                     rt::ThreadPool* pool, const GemmEpilogue* epilogue) {
  if (a.m() <= 0 || n <= 0) return;
  if (a.k() <= 0) return ZeroProduct(a.m(), n, c, ldc, epilogue);
  const float* bt = b.Columns();
  if (!bt) {
    float* cols = Scratch(ScratchSlot::kGemmColumns, n * a.k());
    b.PackColumns(a.k(), n, cols);
    bt = cols;
  }
  FewColumnsProduct(n, a, bt, a.k(), c, ldc, pool, epilogue);
}

void SgemmFewColumnsAt(int64_t n, const FewColumnsA& a, const float* bt, int64_t ldb, float* c,
                       int64_t ldc, rt::ThreadPool* pool, const GemmEpilogue* epilogue) {
  if (a.m() <= 0 || n <= 0) return;
  if (a.k() <= 0) return ZeroProduct(a.m(), n, c, ldc, epilogue);
  FewColumnsProduct(n, a, bt, ldb, c, ldc, pool, epilogue);
}

void SgemmRowsFewColumns(int64_t n, const FewColumnsA& a, const float* rows, const int64_t* offs,
                         float* c, int64_t ldc, rt::ThreadPool* pool,
                         const GemmEpilogue* epilogue) {
  const int64_t k = a.k();
  if (a.m() <= 0 || n <= 0) return;
  if (k <= 0) return ZeroProduct(a.m(), n, c, ldc, epilogue);
  float* cols = Scratch(ScratchSlot::kGemmColumns, n * k);
  // Each row's few columns read together (one offset for all of them).
  for (int64_t p = 0; p < k; ++p) {
    const float* row = rows + offs[p];
    for (int64_t j = 0; j < n; ++j) cols[j * k + p] = row[j];
  }
  FewColumnsProduct(n, a, cols, k, c, ldc, pool, epilogue);
}

std::vector<float> TransposedBlocks(const float* a, int64_t m, int64_t k) {
  std::vector<float> at(static_cast<size_t>(m * k));
  for (int64_t j = 0; j < m; j += kTransposedBlock) {
    const int64_t w = std::min(kTransposedBlock, m - j);
    float* block = at.data() + j * k;
    for (int64_t c = 0; c < w; ++c) {
      const float* row = a + (j + c) * k;
      for (int64_t p = 0; p < k; ++p) block[p * w + c] = row[p];
    }
  }
  return at;
}

void SgemvTransposed(int64_t m, int64_t k, const float* at, const float* x, float* y,
                     rt::ThreadPool* pool) {
  if (m <= 0) return;
  // Tasks of whole blocks, each of at least 2^15 multiply-adds.
  int64_t blocks = (m + kTransposedBlock - 1) / kTransposedBlock;
  int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, kTransposedBlock * k));
  // One share per thread rather than the pool's shrinking ranges: a recurrent layer runs this
  // at every step, and a thread that takes the same share as at the last step finds that part
  // of A^T still in its L2 (ddddocr-beta's LSTM at 2 threads: 3.54 -> 3.41 ms).
  if (pool && pool->threads() > 1) {
    grain = std::max(grain, (blocks + pool->threads() - 1) / pool->threads());
  }
  rt::ParallelFor(pool, blocks, grain, [&](int64_t b0, int64_t b1) {
    TransposedColumns(m, k, at, x, y, b0 * kTransposedBlock, std::min(m, b1 * kTransposedBlock));
  });
}

void SgemmRows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* rows,
               const int64_t* offs, float* c, int64_t ldc, rt::ThreadPool* pool,
               const GemmEpilogue* epilogue, const PackedA* a_packed) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // No reduction, and perhaps no rows to read (null): C is zero, then the epilogue.
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    Finish(epilogue, 0, 0, m, n, c, ldc);
    return;
  }
  Product(m, n, k, a, lda, a_packed, nullptr, rows, offs, c, ldc, pool, epilogue);
}

float* Scratch(ScratchSlot slot, int64_t n) {
  thread_local std::vector<float> slots[static_cast<int>(ScratchSlot::kCount)];
  std::vector<float>& v = slots[static_cast<int>(slot)];
  if (static_cast<int64_t>(v.size()) < n) {
    v.clear();
    v.shrink_to_fit();
    v.resize(static_cast<size_t>(n));
  }
  return v.data();
}

}  // namespace quilt::cpu
