// The float32 matrix product behind the fast matmul and convolution kernels:
//
//   C (m x n) = A (m x k) * B (k x n)
//
// A is a row-major matrix; B is anything that can copy a slab of its columns (a matrix, the
// im2col view of an image). Both are packed into panels that the inner loop reads in order, and
// C is computed in cache-sized blocks spread over the run's threads. The reference kernels stay
// the oracle: tests/runtime/fast_kernels_test.cc compares the two.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/src/thread_pool.h"
#include "targets/cpu/kernels/simd.h"
#include "targets/cpu/kernels/vmath.h"

namespace quilt::cpu {

// Columns per packed panel of B.
constexpr int64_t kGemmPanel = 24;
static_assert(kGemmPanel % 8 == 0, "panels are whole vectors of 8 floats");

// The right operand (k x n).
class GemmB {
 public:
  virtual ~GemmB() = default;
  // Writes columns [j, j + cols) of every row into `panel`, row-major k x kGemmPanel, the
  // columns from `cols` to kGemmPanel zero (cols <= kGemmPanel).
  virtual void Pack(int64_t j, int64_t cols, float* panel) const = 0;
  // The panel of columns [j, j + kGemmPanel) as Pack would write it, already packed (j a multiple
  // of kGemmPanel), or null: the product then packs it.
  virtual const float* Panel(int64_t j) const {
    (void)j;
    return nullptr;
  }
  // B's columns one after another (column j at j * k), already laid out, or null: the product
  // of a B with few columns reads them so.
  virtual const float* Columns() const { return nullptr; }
  // Writes columns [0, n) of B (k rows) one after another into `cols`, column j at j * k; by
  // default through a packed panel (n at most kGemmPanel).
  virtual void PackColumns(int64_t k, int64_t n, float* cols) const;
};

// A row-major matrix with row stride `ld`.
class MatrixB final : public GemmB {
 public:
  MatrixB(const float* b, int64_t k, int64_t ld) : b_(b), k_(k), ld_(ld) {}
  void Pack(int64_t j, int64_t cols, float* panel) const override;

 private:
  const float* b_;
  int64_t k_, ld_;
};

// The transpose of a row-major matrix of n rows of k (row stride `ld`): B[p][q] = rows[q * ld +
// p]. A batch of vectors used as the columns of B (a recurrent layer's inputs, one per row).
class TransposedB final : public GemmB {
 public:
  TransposedB(const float* rows, int64_t k, int64_t ld) : rows_(rows), k_(k), ld_(ld) {}
  void Pack(int64_t j, int64_t cols, float* panel) const override;

 private:
  const float* rows_;
  int64_t k_, ld_;
};

// The floats of a k x n matrix packed as PackedB holds it: ceil(n / kGemmPanel) panels one after
// another, each k rows of kGemmPanel columns, the columns past n zero.
inline int64_t PackedBFloats(int64_t k, int64_t n) {
  return (n + kGemmPanel - 1) / kGemmPanel * kGemmPanel * k;
}
// Packs B (k x n) into `out` (PackedBFloats(k, n) floats): what quiltc stores for a constant
// matmul weight (targets/pack_weights.h) and what PackedB makes at run time.
void PackBPanels(const GemmB& b, int64_t k, int64_t n, float* out);
// The same for `matrices` row-major k x n matrices one after another at b, their panels one
// matrix after another (PackedBFloats(k, n) floats each) into `out`.
void PackBMatrices(const float* b, int64_t matrices, int64_t k, int64_t n, float* out);
// The inverse: row-major B (k x n) back from its panels.
void UnpackBPanels(const float* panels, int64_t k, int64_t n, float* out);

// Another right operand packed whole, once: for a B that many products read (a constant weight,
// packed when a session first runs its step and kept in the step's cache), or panels packed so
// already (a weight quiltc packed into the package), read where they are.
class PackedB final : public GemmB {
 public:
  PackedB(const GemmB& b, int64_t k, int64_t n);
  // Panels as PackBPanels writes them, not copied: they must outlive this object.
  PackedB(const float* panels, int64_t k, int64_t n);
  PackedB(const PackedB&) = delete;  // the panels may be its own
  PackedB(PackedB&&) = default;
  void Pack(int64_t j, int64_t cols, float* panel) const override;
  const float* Panel(int64_t j) const override {
    return k_ == 0 ? nullptr : panels_ + j / kGemmPanel * k_ * kGemmPanel;
  }
  const float* Columns() const override { return columns_.empty() ? nullptr : columns_.data(); }

 private:
  void LayOutColumns(int64_t n);
  int64_t k_;
  std::vector<float> own_;  // the panels, where this object packed them
  const float* panels_;
  std::vector<float> columns_;  // for a B of at most kFewColumns columns, as Columns()
};

// A left operand (m x k, row stride lda) packed once into the panels the product reads: for an A
// that many products read (a convolution's constant weights, kept in the step's cache). The
// product is still given A itself, which its few-columns path reads as it is.
class PackedA {
 public:
  PackedA(const float* a, int64_t lda, int64_t m, int64_t k);
  const float* panels() const { return panels_.data(); }
  // A back, row-major (m x k), into `a`.
  void Unpack(float* a) const;
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }

 private:
  int64_t m_, k_;
  std::vector<float> panels_;
};

// Products of at most this many columns run along the reduction: dot products of A's rows (read
// in place) with B's columns laid out contiguous, or, given a FewColumnsA, SgemmFewColumns.
inline constexpr int64_t kFewColumns = kGemmPanel / 3;

// A constant left operand (m x k, row stride lda) of products of few columns (at most
// kFewColumns: a convolution over a handful of output positions), laid out once as A^T in B's
// panels (k x m). SgemmFewColumns computes C^T = B^T A^T from it: A streamed once front to back,
// each of B's columns broadcast against a panel of 24 of A's rows, no sums across lanes. The dot
// products of A's rows read in place sum eight lanes for every output, and ran at half the
// multiply-adds' pace (silero-vad's encoder, 129 -> 128 channels, k 3, over 4 positions).
class FewColumnsA {
 public:
  FewColumnsA(const float* a, int64_t lda, int64_t m, int64_t k)
      : m_(m), k_(k), at_(TransposedB(a, k, lda), k, m) {}
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  const PackedB& at() const { return at_; }

 private:
  int64_t m_, k_;
  PackedB at_;
};

// Whether a product of m rows by n columns given a PackedA reads A itself as well (its
// few-columns and few-rows paths): where not, A may be passed as null.
bool GemmReadsA(int64_t m, int64_t n);
// Whether a product given A without a PackedA reads A's rows where they are (the AVX-512 block
// kernels), as fast as from panels, rather than packing them for each product: a constant A
// then needs no PackedA kept beside it.
bool GemmReadsAInPlace();

// Up to three adds ('b'), multiplies ('s'), divides ('d', by the value), maximums ('x') and
// minimums ('n') of each row i of C, in order, with k[j][i * step[j]] (a step of 0: one value for
// every row). A maximum or minimum is the maximum and minimum kernels' (NaN if either is NaN; of
// equal values, the row's).
struct RowOps {
  const float* k[3] = {};
  char op[3] = {};
  int64_t step[3] = {};
  int count = 0;

  void Add(char o, const float* values, int64_t s) {
    k[count] = values;
    op[count] = o;
    step[count++] = s;
  }
  // The same ops for the rows from `row` on.
  RowOps From(int64_t row) const {
    RowOps r = *this;
    for (int j = 0; j < count; ++j) r.k[j] = k[j] + row * step[j];
    return r;
  }
  // Applies them to row `row`, n values at y.
  void Apply(float* y, int64_t n, int64_t row) const;
};

// What the product does to each row i of C once computed, while it is in cache:
// c = min(max(c + bias[i], lo), hi), NaN kept (bias null: nothing added), after the ops of `pre`
// and before those of `post`. A convolution's fused adds, multiplies, activation and divides.
struct GemmEpilogue {
  RowOps pre;
  const float* bias = nullptr;  // bias[i * bias_step] added
  int64_t bias_step = 1;
  RowOps post;  // after the activation
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  bool hardswish = false;   // instead of the bounds: c = c * min(max(c + 3, 0), 6)
  bool hard_swish = false;  // or ONNX HardSwish: c = c * max(0, min(1, c / 6 + 0.5))
  // or a function of c through vmath (a silu or sigmoid, as its kernels compute it)
  vmath::Smooth smooth = vmath::Smooth::kNone;
  // or c = c < 0 ? c * slope : c (PReLU, LeakyRelu), the slope slope[i * slope_step], or `alpha`
  // for every row when slope is null
  bool negative_slope = false;
  const float* slope = nullptr;
  int64_t slope_step = 0;
  float alpha = 0;
  float Slope(int64_t row) const { return slope ? slope[row * slope_step] : alpha; }
  // A tensor added after the bias and before the activation, element by element (a residual
  // connection): C's element (i, j) takes residual[i * residual_ld + j]. Null: none.
  const float* residual = nullptr;
  int64_t residual_ld = 0;
};

// The maximum and minimum kernels' float32 values (elementwise_fast.cc's Max and Min, and the
// conv epilogue's 'x' and 'n'): NaN if either operand is, else the larger (smaller) with a tie
// going to a.
inline float MaxOf(float a, float b) {
  float m = a < b ? b : a;
  return a != a || b != b ? a + b : m;
}
inline float MinOf(float a, float b) {
  float m = b < a ? b : a;
  return a != a || b != b ? a + b : m;
}

// y[i] = min(max(y[i] + b, lo), hi) over [0, n), NaN kept: the epilogue of one row.
void BiasClamp(float* y, int64_t n, float b, float lo, float hi);
// v = y[i] + b, y[i] = v * min(max(v + 3, 0), 6) over [0, n), NaN kept.
void BiasHardSwish(float* y, int64_t n, float b);
// v = y[i] + b, y[i] = v * max(0, min(1, v / 6 + 0.5)) over [0, n) (ONNX HardSwish, rounded as
// its kernel rounds it), NaN kept.
void BiasOnnxHardSwish(float* y, int64_t n, float b);
// v = y[i] + b, y[i] = f(v) over [0, n) (a silu or sigmoid as its kernels
// compute it).
void BiasSmooth(float* y, int64_t n, float b, vmath::Smooth f);
// y[i] *= s over [0, n).
void Scale(float* y, int64_t n, float s);
// y[i] += b over [0, n).
void AddConst(float* y, int64_t n, float b);
// y[i] /= d over [0, n).
void DivideConst(float* y, int64_t n, float d);
// The epilogue `e` of row `row`: its ops before, its bias, the bounds, the hardswish or the
// negative slope, then its ops after; one pass over the row (a silu or sigmoid: one per op).
void FinishRow(const GemmEpilogue& e, float* y, int64_t n, int64_t row);
// The same with `res` (n values) added after the bias and before the activation: e's ops before,
// its bias, then y[i] + res[i], each rounded, then the rest (e.residual itself is not read).
void FinishRowWith(const GemmEpilogue& e, float* y, int64_t n, int64_t row, const float* res);

// The epilogue of one row with that row's constants, applied to vectors of V (eight or sixteen
// floats) in registers: FinishRow's ops in its order, each rounded as its own pass rounds it (no
// multiply and add fused into one), so that the values are FinishRow's bit for bit. It holds the
// constants as floats, a few to copy: the 16-lane GEMM kernel makes one for each row of each tile
// it stores. With K = V, a constant per lane instead: the lanes are rows (the channels of a
// channel-blocked convolution, conv_blocked.cc), each lane's op that row's, as FinishRow's.
// kRegisterBarrier: V is only ever used in AVX-512 code (Rounded below).
template <typename V, typename K = float, bool kRegisterBarrier = sizeof(V) == 64>
class RowEpilogueOf {
 public:
  RowEpilogueOf(const GemmEpilogue& e, int64_t row)
      : RowEpilogueOf(e, row, [](const float* k, int64_t step, int64_t r, float* out) {
          *out = k[r * step];
        }) {}
  // `take(values, step, row, &k)`: row `row`'s constant of an op whose values are `values`, one
  // every `step` (0: one for all rows), as a K.
  template <typename Take>
  RowEpilogueOf(const GemmEpilogue& e, int64_t row, Take take);
  // Whether the 8-lane kernels apply it in registers: not a silu or sigmoid, which
  // FinishRow's loop runs (BiasSmooth); the 16-lane kernels apply those too (vmath's vector
  // functions).
  bool Vector() const { return smooth_ == vmath::Smooth::kNone; }
  // Whether Apply is the bias, a residual and the bounds alone (no op before or after, no other
  // activation), which ApplyBiasClamp computes with fewer instructions.
  bool BiasClampOnly() const {
    return pres_ == 0 && posts_ == 0 && !hardswish_ && !hard_swish_ &&
           smooth_ == vmath::Smooth::kNone && !negative_slope_;
  }
  // Apply<kN> for an epilogue where BiasClampOnly(): v[i] + bias, + res[i] where res is given, in
  // the bounds: the same values.
  template <int kN>
  QUILT_ALWAYS_INLINE void ApplyBiasClamp(V* v, const V* res = nullptr) const {
    BiasResidual<kN>(v, res);
    if (clamp_) Bounds<kN>(v);
  }
  // v[0, kN) in place, each op over all kN vectors before the next (a branch per op, not per
  // vector); with `res`, res[i] added to v[i] after the bias and before the activation
  // (FinishRowWith's residual).
  template <int kN>
  QUILT_ALWAYS_INLINE void Apply(V* v, const V* res = nullptr) const {
    Ops<kN>(pre_, pres_, v);
    BiasResidual<kN>(v, res);
    const V zero = V{}, one = V{} + 1.0f;
    if (hardswish_) {
      const V six = V{} + 6.0f;
      for (int i = 0; i < kN; ++i) {
        V t = v[i] + 3.0f;
        Greater(zero, t, &t);
        Less(six, t, &t);
        v[i] *= t;
        Rounded(v[i]);
      }
    } else if (hard_swish_) {
      // ONNX HardSwish: v * max(0, min(1, v / 6 + 0.5)), as std::max and std::min pick.
      for (int i = 0; i < kN; ++i) {
        V t = v[i] / 6.0f + 0.5f;
        Less(t, one, &t);
        Greater(t, zero, &t);
        v[i] *= t;
        Rounded(v[i]);
      }
    } else if (smooth_ != vmath::Smooth::kNone) {
      vmath::Of<kN>(smooth_, v);
    } else if (negative_slope_) {
      for (int i = 0; i < kN; ++i) {
        V t = v[i] * slope_;
        Rounded(t);
        v[i] = v[i] < zero ? t : v[i];
      }
    } else if (clamp_) {
      Bounds<kN>(v);
    }
    Ops<kN>(post_, posts_, v);
  }

 private:
  struct Op {
    char op;
    K k;
  };
  // v[i] + the bias, then + res[i] where res is given (Apply's order).
  template <int kN>
  QUILT_ALWAYS_INLINE void BiasResidual(V* v, const V* res) const {
    for (int i = 0; i < kN; ++i) v[i] += bias_;
    if (res) {
      for (int i = 0; i < kN; ++i) v[i] += res[i];
    }
  }
  // v[i] in [lo_, hi_].
  template <int kN>
  QUILT_ALWAYS_INLINE void Bounds(V* v) const {
    const V lo = V{} + lo_, hi = V{} + hi_;
    for (int i = 0; i < kN; ++i) Clamp(v[i], lo, hi);
  }
  // min(max(v, lo), hi), NaN kept, as BiasClamp.
  static QUILT_ALWAYS_INLINE void Clamp(V& v, const V& lo, const V& hi) {
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
  }
  // *r = a > b ? a : b and a < b ? a : b, lane by lane (b where either is NaN or both are zeros) (r
  // may be either). On 16 lanes with GCC one vmaxps or vminps, whose MAXPS(a, b) and MINPS(a, b)
  // are these selects to the bit: GCC 12 took each select as a compare and a masked move, two
  // instructions on the ports the products use (ppocr-v4-rec's hardswish epilogues). (Not for the
  // bounds of the tiles' epilogues in registers, whose selects read the bounds from memory:
  // opennsfw's convs 3% slower with the bounds taking registers.)
  static QUILT_ALWAYS_INLINE void Greater(const V& a, const V& b, V* r) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if constexpr (kRegisterBarrier) {
      __asm__("vmaxps %2, %1, %0" : "=v"(*r) : "v"(a), "v"(b));
      return;
    }
#endif
    *r = a > b ? a : b;
  }
  static QUILT_ALWAYS_INLINE void Less(const V& a, const V& b, V* r) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if constexpr (kRegisterBarrier) {
      __asm__("vminps %2, %1, %0" : "=v"(*r) : "v"(a), "v"(b));
      return;
    }
#endif
    *r = a < b ? a : b;
  }
  // A product kept from being fused with the add after it. On 16 lanes (only ever in AVX-512
  // code) with GCC by an empty asm that holds the value in a register: GCC 12 takes its barrier
  // builtin lane by lane in AVX-512 code, 16 extracts and inserts a vector (on 8 lanes too, so
  // the 8-lane epilogue runs in AVX2 code: RowEpilogue::Row, FinishRow).
  static QUILT_ALWAYS_INLINE void Rounded(V& v) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if constexpr (kRegisterBarrier) {
      __asm__("" : "+v"(v));
      return;
    }
#endif
#if defined(__has_builtin)
#if __has_builtin(__builtin_assoc_barrier)
    v = __builtin_assoc_barrier(v);
#endif
#endif
    (void)v;
  }
  template <int kN>
  static QUILT_ALWAYS_INLINE void Ops(const Op* ops, int count, V* v) {
    for (int j = 0; j < count; ++j) {
      const char op = ops[j].op;
      const V k = V{} + ops[j].k;
      if (op == 's') {
        for (int i = 0; i < kN; ++i) {
          v[i] *= k;
          Rounded(v[i]);
        }
      } else if (op == 'd') {
        for (int i = 0; i < kN; ++i) v[i] /= k;
      } else if (op == 'x' || op == 'n') {
        // MaxOf / MinOf a lane at a time: NaN (the sum) where either is NaN, k's NaN told once.
        // (Each op a loop of its own, selects on one comparison: GCC 12 took the op's select
        // of the two, or the or of two comparisons, on 16 lanes a lane at a time.)
        if constexpr (!std::is_same_v<K, float>) {
          // Lanes of their own constants: NaN where either is, lane by lane.
          for (int i = 0; i < kN; ++i) {
            V m = op == 'x' ? (v[i] < k ? k : v[i]) : (k < v[i] ? k : v[i]);
            v[i] = ((v[i] != v[i]) | (k != k)) ? v[i] + k : m;
          }
        } else if (ops[j].k != ops[j].k) {
          for (int i = 0; i < kN; ++i) v[i] += k;
        } else if (op == 'x') {
          for (int i = 0; i < kN; ++i) {
            V m = v[i] < k ? k : v[i];
            v[i] = v[i] != v[i] ? v[i] + k : m;
          }
        } else {
          for (int i = 0; i < kN; ++i) {
            V m = k < v[i] ? k : v[i];
            v[i] = v[i] != v[i] ? v[i] + k : m;
          }
        }
      } else {
        for (int i = 0; i < kN; ++i) v[i] += k;
      }
    }
  }

  Op pre_[3], post_[3];
  int pres_ = 0, posts_ = 0;
  K bias_, slope_;
  float lo_, hi_;
  bool hardswish_, hard_swish_;
  vmath::Smooth smooth_;
  bool negative_slope_, clamp_;
};

// The 8-lane one, with its loop over a row.
class RowEpilogue : public RowEpilogueOf<V8> {
 public:
  using RowEpilogueOf<V8>::RowEpilogueOf;
  // y[0, n) in place (not for a silu or sigmoid). (From another file, through
  // ApplyRowEpilogue: clang binds a call there to a multiversioned member function to a symbol it
  // does not emit.)
  void Row(float* y, int64_t n) const;
};

// e.Row(y, n), for callers outside gemm.cc.
void ApplyRowEpilogue(const RowEpilogue& e, float* y, int64_t n);

template <typename V, typename K, bool kRegisterBarrier>
template <typename Take>
inline RowEpilogueOf<V, K, kRegisterBarrier>::RowEpilogueOf(const GemmEpilogue& e, int64_t row,
                                                            Take take)
    : hardswish_(e.hardswish),
      hard_swish_(e.hard_swish),
      smooth_(e.smooth),
      negative_slope_(e.negative_slope) {
  auto ops_of = [&](const RowOps& ops, Op* out, int* count) {
    for (int j = 0; j < ops.count; ++j) {
      out[j].op = ops.op[j];
      take(ops.k[j], ops.step[j], row, &out[j].k);
    }
    *count = ops.count;
  };
  ops_of(e.pre, pre_, &pres_);
  ops_of(e.post, post_, &posts_);
  static const float kMinusZero = -0.0f;  // -0 added changes no value
  if (e.bias) {
    take(e.bias, e.bias_step, row, &bias_);
  } else {
    take(&kMinusZero, 0, row, &bias_);
  }
  lo_ = e.lo;
  hi_ = e.hi;
  clamp_ = e.lo > -std::numeric_limits<float>::infinity() ||
           e.hi < std::numeric_limits<float>::infinity();
  if (e.negative_slope && e.slope) {
    take(e.slope, e.slope_step, row, &slope_);
  } else {
    const float alpha = e.negative_slope ? e.alpha : 0.0f;
    take(&alpha, 0, row, &slope_);
  }
}

// How many products of integers, each at most `max_abs_product` in magnitude, a float sum holds
// exactly (every partial sum below 2^24): 0 when not even one product fits. Integer products done
// as float GEMMs (quantized convolutions and matmuls) sum in slabs of at most this many terms.
constexpr int64_t ExactFloatTerms(int64_t max_abs_product) {
  constexpr int64_t kExact = int64_t{1} << 24;
  if (max_abs_product > kExact) return 0;
  return kExact / (max_abs_product < 1 ? 1 : max_abs_product);
}
// For 8-bit values less zero points of their type (differences of at most 255): 258.
constexpr int64_t kEightBitExactTerms = ExactFloatTerms(255 * 255);

// Per-thread scratch: a buffer of at least n floats for each slot, kept from call to call (it only
// grows), so a kernel's large temporaries are not allocated and freed on every run, where the C
// library may hand them back to the system and fault every page in again on the next run
// (nudenet-320n's convs through libquilt.so: 3,000 page faults a run, 4 ms of 29). Its contents
// are whatever the last user left. Each kernel owns its slots; one must not call another that
// uses the same slot while it holds it.
enum class ScratchSlot {
  kConvInput,      // ConvFast: a batch's im2col matrix, or an image's padded copy; ConvBlocked:
                   // a strided pointwise conv's gathered pixels
  kConvOutput,     // ConvFast: the product before it is moved into y
  kWinogradInput,  // a Winograd block's transformed input, products and rows
  kWinogradProduct,
  kWinogradRows,
  kRecurrentInput,  // an RNN's input projections, recurrent projections, hidden and cell states
  kRecurrentGates,
  kRecurrentHidden,
  kRecurrentCell,
  kGemmA,        // a product (the thread that calls it): A's packed panels, read by every task
  kGemmPanels,   // a product's task: its panels of B, packed one after another
  kGemmNarrow,   // a product's task: a last panel's few columns of B, laid out along the reduction
  kGemmColumns,  // a product of few columns (the thread that calls it): B's columns, contiguous
  kGemmTransposedC,  // SgemmFewColumns (the thread that calls it): C^T
  kCount
};
float* Scratch(ScratchSlot slot, int64_t n);

// Whether the products run the AVX-512 block kernel (eight rows by 24 columns, 16 + 8 lanes a
// row; where the CPU has AVX-512 F and VL), and the switch tests turn the 8-lane kernel back on
// with.
bool HasAvx512Gemm();
void SetAvx512GemmAllowedForTesting(bool allowed);

// C = A * B, C with row stride ldc, A with row stride lda; on `pool`'s threads (null: this
// thread alone); then the epilogue, if any.
// `a_packed`: A's panels packed ahead (PackedA of these m and k), or null.
void Sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const GemmB& b, float* c,
           int64_t ldc, rt::ThreadPool* pool, const GemmEpilogue* epilogue = nullptr,
           const PackedA* a_packed = nullptr);
// The same for n <= kFewColumns with A given as a FewColumnsA (of its m and k): C^T into the
// calling thread's scratch, then into C, then the epilogue.
void SgemmFewColumns(int64_t n, const FewColumnsA& a, const GemmB& b, float* c, int64_t ldc,
                     rt::ThreadPool* pool, const GemmEpilogue* epilogue = nullptr);
// And with B's columns read in place: column j is the a.k() floats from bt + j * ldb (a 1-d
// conv's image laid out (position, channel), whose columns overlap at a stride below the window).
void SgemmFewColumnsAt(int64_t n, const FewColumnsA& a, const float* bt, int64_t ldb, float* c,
                       int64_t ldc, rt::ThreadPool* pool, const GemmEpilogue* epilogue = nullptr);
// And with B's rows read in place (as SgemmRows reads them): B[p][j] = rows[offs[p] + j].
void SgemmRowsFewColumns(int64_t n, const FewColumnsA& a, const float* rows, const int64_t* offs,
                         float* c, int64_t ldc, rt::ThreadPool* pool,
                         const GemmEpilogue* epilogue = nullptr);
// y (m) = A (m x k) times the vector x (k), A given transposed in blocks of kTransposedBlock
// columns (TransposedBlocks): block b holds A^T's columns [64b, 64b + w), w = min(64, m - 64b),
// at at + 64b * k, as k rows of w. Each block is one contiguous stream, which the hardware
// prefetchers follow; rows of A^T m apart would cross a page at every row of a wide A. Each y[i]
// sums its k products in order of p, eight columns to a vector and eight vectors at a time: no
// sums across lanes, as dot products of A's rows need (a recurrent layer's step over a batch of
// one, with R^T laid out once).
inline constexpr int64_t kTransposedBlock = 64;
std::vector<float> TransposedBlocks(const float* a, int64_t m, int64_t k);
void SgemvTransposed(int64_t m, int64_t k, const float* at, const float* x, float* y,
                     rt::ThreadPool* pool);

// The same with B's rows read in place: B[p][j] = rows[offs[p] + j] for j < n (a last partial
// panel of columns is copied, so nothing past column n is read). For B whose rows are windows of
// one buffer (a convolution's padded image, or a 1x1 convolution's image itself: conv_fast.cc),
// where packing would copy each element of the image once per tap.
void SgemmRows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* rows,
               const int64_t* offs, float* c, int64_t ldc, rt::ThreadPool* pool,
               const GemmEpilogue* epilogue = nullptr, const PackedA* a_packed = nullptr);

}  // namespace quilt::cpu
