// Reductions: sum, mean, max, min, prod, l1/l2 norms, log-sum(-exp), sum of squares,
// argmax/argmin, cumulative sums and products, and the nll / softmax cross-entropy losses.
//
// Floating-point reductions accumulate in double; integer sums and products wrap around in 64
// bits and are then narrowed (modular) to the element type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/simd.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

template <typename T>
constexpr bool kIsFloatLike =
    std::is_floating_point_v<T> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

// A double as integer type T: truncated toward zero, NaN 0, saturated to T's range.
template <typename T>
T DoubleToInt(double v) {
  if (std::isnan(v)) return T(0);
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  if (t >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(t);
}

template <typename T>
T FromDouble(double v) {
  if constexpr (kIsFloatLike<T>) {
    return Store<T>(static_cast<Compute<T>>(v));
  } else {
    return DoubleToInt<T>(v);
  }
}

// The layout of a reduction: which axes are reduced, the output shape, and for every axis of the
// input the stride of the output element it contributes to (0 on reduced axes).
struct Plan {
  rt::InlineVector<bool, 8> reduced;
  Shape out_shape;
  Shape out_strides;  // over the input's axes
  int64_t out_n = 1;
  int64_t count = 1;  // input elements per output element
};

Status MakePlan(const Shape& in, const Shape* axes, bool keepdims, Plan* p) {
  int rank = static_cast<int>(in.size());
  p->reduced.assign(rank, axes == nullptr);
  if (axes) {
    for (int64_t a : *axes) {
      int64_t ax = a;
      if (!NormalizeAxis(&ax, rank)) {
        return Status::Error("axis " + std::to_string(a) + " is out of range for rank " +
                             std::to_string(rank));
      }
      if (p->reduced[ax]) return Status::Error("axis " + std::to_string(a) + " appears twice");
      p->reduced[ax] = true;
    }
  }
  Shape kept;  // the output shape without keepdims' ones
  for (int i = 0; i < rank; ++i) {
    if (p->reduced[i]) {
      p->count *= in[i];
      if (keepdims) p->out_shape.push_back(1);
    } else {
      kept.push_back(in[i]);
      p->out_shape.push_back(in[i]);
    }
  }
  Shape ks = Strides(kept);
  p->out_strides.assign(rank, 0);
  for (int i = 0, k = 0; i < rank; ++i) {
    if (!p->reduced[i]) p->out_strides[i] = ks[k++];
  }
  for (int64_t d : kept) p->out_n *= d;
  return Status::Ok();
}

// Calls f(input_index, output_index) for every input element.
template <typename F>
void ForEachReduced(const Shape& in, const Plan& p, F&& f) {
  const Shape strides[1] = {p.out_strides};
  ForEachBroadcast(in, strides, [&](int64_t i, const int64_t* off) { f(i, off[0]); });
}

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// A reduction's per-run accumulators (`which`: one of two lists at once), kept by the thread that
// runs it: a run in steady state allocates none. A reduction does not nest.
template <class C>
std::vector<C>& KeptAccumulators(int which) {
  thread_local std::vector<C> kept[2];
  return kept[which];
}

template <Red kRed, typename T>
Status ReduceTyped(const Tensor& x, const Plan& p, Tensor* y) {
  const T* px = x.Data<T>();
  T* py = y->MutableData<T>();
  using C = Compute<T>;
  if constexpr (kRed == Red::kMax || kRed == Red::kMin) {
    // Empty reductions give the identity: -inf / +inf for floats, the extreme integers.
    C init;
    if constexpr (std::is_same_v<T, bool>) {
      init = kRed == Red::kMin;
    } else if constexpr (kIsFloatLike<T>) {
      init = kRed == Red::kMax ? -std::numeric_limits<C>::infinity()
                               : std::numeric_limits<C>::infinity();
    } else {
      init = kRed == Red::kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    }
    std::vector<C>& acc = KeptAccumulators<C>(0);
    acc.assign(static_cast<size_t>(p.out_n), init);
    ForEachReduced(x.shape, p, [&](int64_t i, int64_t o) {
      C v = Load(px[i]);
      bool nan = false;
      if constexpr (kIsFloatLike<T>) nan = std::isnan(v) || std::isnan(acc[o]);
      if (nan) {
        acc[o] = std::numeric_limits<C>::quiet_NaN();
      } else if (kRed == Red::kMax ? v > acc[o] : v < acc[o]) {
        acc[o] = v;
      }
    });
    for (int64_t o = 0; o < p.out_n; ++o) py[o] = Store<T>(acc[o]);
    return Status::Ok();
  } else if constexpr (std::is_same_v<T, bool>) {
    return Unsupported(DType::kBool);
  } else if constexpr (!kIsFloatLike<T> && kRed != Red::kL2 && kRed != Red::kLogSum &&
                       kRed != Red::kLogSumExp) {
    // Integers: 64-bit wrapping arithmetic.
    std::vector<uint64_t>& acc = KeptAccumulators<uint64_t>(0);
    acc.assign(static_cast<size_t>(p.out_n), kRed == Red::kProd ? 1 : 0);
    ForEachReduced(x.shape, p, [&](int64_t i, int64_t o) {
      T v = px[i];
      uint64_t u = static_cast<uint64_t>(v);
      if constexpr (kRed == Red::kL1 && std::is_signed_v<T>) {
        if (v < 0) u = uint64_t{0} - u;
      }
      if constexpr (kRed == Red::kProd) {
        acc[o] *= u;
      } else if constexpr (kRed == Red::kSumSquare) {
        acc[o] += u * u;
      } else {
        acc[o] += u;
      }
    });
    for (int64_t o = 0; o < p.out_n; ++o) {
      if constexpr (kRed == Red::kMean) {
        if (p.count == 0) {
          py[o] = T(0);
        } else if constexpr (std::is_signed_v<T>) {
          py[o] = static_cast<T>(static_cast<int64_t>(acc[o]) / p.count);
        } else {
          py[o] = static_cast<T>(acc[o] / static_cast<uint64_t>(p.count));
        }
      } else {
        py[o] = static_cast<T>(acc[o]);
      }
    }
    return Status::Ok();
  } else {
    // Floats (and integer l2 / log-sum / log-sum-exp) in double.
    std::vector<double>& shift = KeptAccumulators<double>(1);
    shift.assign(static_cast<size_t>(p.out_n), 0.0);
    if constexpr (kRed == Red::kLogSumExp) {
      // Subtract the maximum of each group: exp never overflows.
      std::fill(shift.begin(), shift.end(), -std::numeric_limits<double>::infinity());
      ForEachReduced(x.shape, p, [&](int64_t i, int64_t o) {
        double v = static_cast<double>(Load(px[i]));
        if (std::isnan(v) || v > shift[o]) shift[o] = std::isnan(shift[o]) ? shift[o] : v;
      });
    }
    std::vector<double>& acc = KeptAccumulators<double>(0);
    acc.assign(static_cast<size_t>(p.out_n), kRed == Red::kProd ? 1.0 : 0.0);
    ForEachReduced(x.shape, p, [&](int64_t i, int64_t o) {
      double v = static_cast<double>(Load(px[i]));
      if constexpr (kRed == Red::kProd) {
        acc[o] *= v;
      } else if constexpr (kRed == Red::kL1) {
        acc[o] += std::fabs(v);
      } else if constexpr (kRed == Red::kL2 || kRed == Red::kSumSquare) {
        acc[o] += v * v;
      } else if constexpr (kRed == Red::kLogSumExp) {
        if (std::isfinite(shift[o])) acc[o] += std::exp(v - shift[o]);
      } else {
        acc[o] += v;
      }
    });
    for (int64_t o = 0; o < p.out_n; ++o) {
      double r = acc[o];
      if constexpr (kRed == Red::kMean) {
        r = p.count == 0 ? std::numeric_limits<double>::quiet_NaN()
                         : r / static_cast<double>(p.count);
      } else if constexpr (kRed == Red::kL2) {
        r = std::sqrt(r);
      } else if constexpr (kRed == Red::kLogSum) {
        r = std::log(r);
      } else if constexpr (kRed == Red::kLogSumExp) {
        r = std::isfinite(shift[o]) ? shift[o] + std::log(r) : shift[o];
      }
      py[o] = FromDouble<T>(r);
    }
    return Status::Ok();
  }
}

// The reduced axes of x as one block with kept axes on both sides: `outer` blocks of `len` rows
// of `inner` lanes. False when the reduced axes are not one block (a kept axis other than 1
// inside it) or there are none.
bool MiddleBlock(const Tensor& x, const Plan& p, int64_t* outer, int64_t* len, int64_t* inner) {
  int first = -1, last = -1;
  for (int i = 0; i < x.rank(); ++i) {
    if (!p.reduced[i] || x.shape[i] == 1) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) return false;
  *outer = *len = *inner = 1;
  for (int i = 0; i < x.rank(); ++i) {
    if (i < first) {
      *outer *= x.shape[i];
    } else if (i <= last) {
      if (!p.reduced[i] && x.shape[i] != 1) return false;  // a kept axis inside the block
      *len *= x.shape[i];
    } else {
      *inner *= x.shape[i];
    }
  }
  return true;
}

// The greater (kMax) or lesser of a and v, as the reference takes it: NaN where either is, of
// equal values a (the first).
template <bool kMax>
inline float Extreme(float a, float v) {
  if (std::isnan(v) || std::isnan(a)) return std::numeric_limits<float>::quiet_NaN();
  return (kMax ? v > a : v < a) ? v : a;
}

// a = the greater (kMax) or lesser of a and the 8 floats at p, lane by lane; NaN where either is.
// (A function, not a lambda: a lambda is compiled without its caller's target.)
template <bool kMax>
QUILT_ALWAYS_INLINE void ExtremeStep(V8& a, const float* p, const V8& nans) {
  V8 v;
  LoadV(&v, p);
  const V8 better = (kMax ? v > a : v < a) ? v : a;
  a = ((v != v) | (a != a)) ? nans : better;
}

// The maxima (kMax) or minima of x's rows [0, len) of `inner` lanes, for lanes [i0, i1), into
// y[i0, i1): each lane over the rows in order, as the reference walks it (NaN wins; of equal
// values the first, so a first -0 stays against a later +0), the lanes side by side.
template <bool kMax>
QUILT_ALWAYS_INLINE void ExtremeLanes(const float* __restrict x, int64_t len, int64_t inner,
                                      int64_t i0, int64_t i1, float* __restrict y) {
  const float start =
      kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = i0; i < i1; ++i) y[i] = start;
  // 32 and then 8 lanes at a time in vectors (the compiler leaves the scalar loop's NaN tests
  // scalar), four chains side by side where they fit (one chain waits on its compare and selects).
  const V8 nans = V8{} + nan;
  int64_t i = i0;
  for (; i + 32 <= i1; i += 32) {
    V8 a[4];
    for (int j = 0; j < 4; ++j) LoadV(&a[j], y + i + 8 * j);
    for (int64_t k = 0; k < len; ++k) {
      for (int j = 0; j < 4; ++j) ExtremeStep<kMax>(a[j], x + k * inner + i + 8 * j, nans);
    }
    for (int j = 0; j < 4; ++j) StoreV(y + i + 8 * j, a[j]);
  }
  for (; i + 8 <= i1; i += 8) {
    V8 a;
    LoadV(&a, y + i);
    for (int64_t k = 0; k < len; ++k) ExtremeStep<kMax>(a, x + k * inner + i, nans);
    StoreV(y + i, a);
  }
  for (; i < i1; ++i) {
    float a = y[i];
    for (int64_t k = 0; k < len; ++k) a = Extreme<kMax>(a, x[k * inner + i]);
    y[i] = a;
  }
}

QUILT_CLONES void MaxLanes(const float* x, int64_t len, int64_t inner, int64_t i0, int64_t i1,
                           float* y) {
  ExtremeLanes<true>(x, len, inner, i0, i1, y);
}

QUILT_CLONES void MinLanes(const float* x, int64_t len, int64_t inner, int64_t i0, int64_t i1,
                           float* y) {
  ExtremeLanes<false>(x, len, inner, i0, i1, y);
}

// Float32 maxima and minima over one block of axes with kept axes on both sides (outer blocks of
// `len` rows of `inner` lanes: a global max pool over a sequence, (N, L, C) -> (N, C)), the lanes
// side by side (the reference walks each output's strided column: magika-v1's max over 384 rows
// of 256 lanes in 4 blocks took 0.8 ms, 7% of its run). False when the reduced axes are not one
// block.
template <Red kRed>
bool ExtremeMiddle(const Tensor& x, const Plan& p, Tensor* y, KernelContext& ctx) {
  int64_t outer, len, inner;
  if (!MiddleBlock(x, p, &outer, &len, &inner)) return false;
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  // Tasks of up to 256 lanes of one outer block.
  constexpr int64_t kLanes = 256;
  const int64_t parts = (inner + kLanes - 1) / kLanes;
  const int64_t per_task = std::min(inner, kLanes) * len;
  ctx.ParallelFor(outer * parts, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, per_task)),
                  [&](int64_t t0, int64_t t1) {
                    for (int64_t t = t0; t < t1; ++t) {
                      const int64_t o = t / parts, i0 = t % parts * kLanes;
                      const int64_t i1 = std::min(inner, i0 + kLanes);
                      const float* xo = px + o * len * inner;
                      float* yo = py + o * inner;
                      if constexpr (kRed == Red::kMax) {
                        MaxLanes(xo, len, inner, i0, i1, yo);
                      } else {
                        MinLanes(xo, len, inner, i0, i1, yo);
                      }
                    }
                  });
  return true;
}

// Float32 sums, means, sums of squares and l1 / l2 norms over one block of axes with kept axes on
// both sides (outer blocks of `len` rows of `inner` lanes): SumAcross, in double. False when the
// reduced axes are not one block.
template <Red kRed>
bool ReduceMiddle(const Tensor& x, const Plan& p, Tensor* y, KernelContext& ctx) {
  int64_t outer, len, inner;
  if (!MiddleBlock(x, p, &outer, &len, &inner)) return false;
  RowSum what = kRed == Red::kSumSquare || kRed == Red::kL2 ? RowSum::kSquares
                : kRed == Red::kL1                          ? RowSum::kMagnitudes
                                                            : RowSum::kPlain;
  thread_local std::vector<double> kept_sums;  // this thread's, kept from run to run
  std::vector<double>& sums = kept_sums;
  sums.assign(static_cast<size_t>(outer * inner), 0.0);
  SumAcross(x.Data<float>(), outer, len, inner, what, sums.data(), ctx.thread_pool());
  float* py = y->MutableData<float>();
  for (size_t o = 0; o < sums.size(); ++o) {
    double r = sums[o];
    if constexpr (kRed == Red::kMean) r /= static_cast<double>(p.count);
    if constexpr (kRed == Red::kL2) r = std::sqrt(r);
    py[o] = static_cast<float>(r);
  }
  return true;
}

// Float32 sums, means, sums of squares, l1 / l2 norms, maxima and minima whose reduced axes follow
// every kept one (rows of `count` contiguous elements, one per output): sums by SumRows, in
// double lanes (the reference adds in index order; the two differ by double rounding only),
// extremes row by row as the reference finds them. False where it does not apply.
template <Red kRed>
bool ReduceRows(const Tensor& x, const Plan& p, Tensor* y, KernelContext& ctx) {
  constexpr bool kExtreme = kRed == Red::kMax || kRed == Red::kMin;
  constexpr bool kRows = kRed == Red::kSum || kRed == Red::kMean || kRed == Red::kSumSquare ||
                         kRed == Red::kL1 || kRed == Red::kL2 || kExtreme;
  if (!kRows || x.dtype != DType::kFloat32 || p.count == 0) return false;
  int last_kept = -1, first_reduced = x.rank();
  for (int i = 0; i < x.rank(); ++i) {
    if (x.shape[i] == 1) continue;
    if (p.reduced[i]) {
      first_reduced = std::min(first_reduced, i);
    } else {
      last_kept = i;
    }
  }
  if (last_kept > first_reduced) {
    // One block of reduced axes between kept ones: sums along it, lane by lane.
    if constexpr (!kExtreme) return ReduceMiddle<kRed>(x, p, y, ctx);
    return ExtremeMiddle<kRed>(x, p, y, ctx);
  }
  if constexpr (kExtreme) {
    // Each row in order, as the reference walks it: NaN wins, and of equal values the first.
    const float* px = x.Data<float>();
    float* py = y->MutableData<float>();
    ctx.ParallelFor(p.out_n, std::max<int64_t>(1, 16384 / p.count), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const float* row = px + o * p.count;
        float acc = kRed == Red::kMax ? -std::numeric_limits<float>::infinity()
                                      : std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < p.count; ++i) acc = Extreme<kRed == Red::kMax>(acc, row[i]);
        py[o] = acc;
      }
    });
    return true;
  }
  RowSum what = kRed == Red::kSumSquare || kRed == Red::kL2 ? RowSum::kSquares
                : kRed == Red::kL1                          ? RowSum::kMagnitudes
                                                            : RowSum::kPlain;
  std::vector<double>& sums = KeptAccumulators<double>(0);
  sums.resize(static_cast<size_t>(p.out_n));
  SumRows(x.Data<float>(), p.out_n, p.count, what, sums.data(), ctx.thread_pool());
  float* py = y->MutableData<float>();
  for (int64_t o = 0; o < p.out_n; ++o) {
    double r = sums[static_cast<size_t>(o)];
    if constexpr (kRed == Red::kMean) r /= static_cast<double>(p.count);
    if constexpr (kRed == Red::kL2) r = std::sqrt(r);
    py[o] = static_cast<float>(r);
  }
  return true;
}

// kFast: float32 row sums by ReduceRows where they apply (the registered kernels); without it, the
// reference alone (for the tests).
template <Red kRed, bool kFast = true>
Status Reduce(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const rt::AttrView& attrs = ctx.attrs();
  Shape axes;
  bool all = !attrs.Has("axis");
  if (!all) axes = attrs.Ints("axis");
  Plan p;
  QUILT_RETURN_IF_ERROR(MakePlan(x.shape, all ? nullptr : &axes, attrs.Bool("keepdims"), &p));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, p.out_shape, &y));
  if (kFast && ReduceRows<kRed>(x, p, y, ctx)) return Status::Ok();
  return VisitAll(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return ReduceTyped<kRed, T>(x, p, y);
  });
}

// Index of the max / min along one axis (None: of the flattened tensor). NaN counts as the
// largest (and smallest) value, as numpy's argmax / argmin.
template <bool kMax>
Status ArgReduce(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const rt::AttrView& attrs = ctx.attrs();
  bool keepdims = attrs.Bool("keepdims");
  bool last = attrs.Bool("select_last_index");
  int rank = x.rank();
  int64_t outer = 1, len = 1, inner = 1;
  Shape out_shape;
  if (!attrs.Has("axis")) {
    len = x.NumElements();
    if (keepdims) out_shape.assign(rank, 1);
  } else {
    int64_t axis = attrs.Int("axis");
    if (!NormalizeAxis(&axis, rank)) {
      return Status::Error("axis " + std::to_string(attrs.Int("axis")) +
                           " is out of range for rank " + std::to_string(rank));
    }
    for (int i = 0; i < rank; ++i) {
      if (i < axis) outer *= x.shape[i];
      if (i > axis) inner *= x.shape[i];
      if (i == axis) {
        len = x.shape[i];
        if (keepdims) out_shape.push_back(1);
      } else {
        out_shape.push_back(x.shape[i]);
      }
    }
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kInt64, out_shape, &y));
  if (outer * inner == 0) return Status::Ok();
  if (len == 0) return Status::Error("argmax / argmin over an empty axis");
  return VisitAll(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T* px = x.Data<T>();
    int64_t* py = y->MutableData<int64_t>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const T* base = px + o * len * inner + in;
        C best = Load(base[0]);
        int64_t best_k = 0;
        for (int64_t k = 1; k < len; ++k) {
          C v = Load(base[k * inner]);
          bool take;
          bool v_nan = false, best_nan = false;
          if constexpr (kIsFloatLike<T>) {
            v_nan = std::isnan(v);
            best_nan = std::isnan(best);
          }
          if (best_nan) {
            take = last && v_nan;
          } else if (v_nan) {
            take = true;
          } else {
            take = kMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
          }
          if (take) {
            best = v;
            best_k = k;
          }
        }
        py[o * inner + in] = best_k;
      }
    }
    return Status::Ok();
  });
}

// Running sum / product along one axis (None: of the flattened tensor).
template <bool kProd>
Status Scan(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const rt::AttrView& attrs = ctx.attrs();
  DType dtype = attrs.Dtype("dtype");
  if (dtype == DType::kVoid) dtype = x.dtype;
  if (dtype != x.dtype)
    return Status::Error("a result type other than the input's is not supported");
  bool exclusive = attrs.Bool("exclusive"), reverse = attrs.Bool("reverse");
  int64_t outer = 1, len = x.NumElements(), inner = 1;
  Shape out_shape = {len};
  if (attrs.Has("axis")) {
    int64_t axis = attrs.Int("axis");
    if (!NormalizeAxis(&axis, x.rank())) {
      return Status::Error("axis " + std::to_string(attrs.Int("axis")) +
                           " is out of range for rank " + std::to_string(x.rank()));
    }
    out_shape = x.shape;
    len = x.shape[axis];
    for (int i = 0; i < x.rank(); ++i) {
      if (i < axis) outer *= x.shape[i];
      if (i > axis) inner *= x.shape[i];
    }
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, out_shape, &y));
  return VisitNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<kIsFloatLike<T>, double, uint64_t>;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        A acc = kProd ? A(1) : A(0);
        for (int64_t s = 0; s < len; ++s) {
          int64_t k = reverse ? len - 1 - s : s;
          int64_t at = (o * len + k) * inner + in;
          A v;
          if constexpr (kIsFloatLike<T>) {
            v = static_cast<double>(Load(px[at]));
          } else {
            v = static_cast<uint64_t>(px[at]);
          }
          if (!exclusive) acc = kProd ? A(acc * v) : A(acc + v);
          if constexpr (kIsFloatLike<T>) {
            py[at] = FromDouble<T>(acc);
          } else {
            py[at] = static_cast<T>(acc);
          }
          if (exclusive) acc = kProd ? A(acc * v) : A(acc + v);
        }
      }
    }
    return Status::Ok();
  });
}

// The class index of element i of an integer tensor.
int64_t ClassAt(const Tensor& t, int64_t i) {
  int64_t r = 0;
  (void)VisitInteger(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    r = static_cast<int64_t>(t.Data<T>()[i]);
    return Status::Ok();
  });
  return r;
}

// The nll loss of log-probabilities `logp` (N, C, d...) as doubles: per element, or reduced.
Status NllFromLogProb(KernelContext& ctx, const std::vector<double>& logp, const Shape& pshape,
                      const Tensor& t, const Tensor& w, DType dtype) {
  const rt::AttrView& attrs = ctx.attrs();
  std::string reduction(attrs.Str("reduction", "mean"));
  bool has_ignore = attrs.Has("ignore_index");
  int64_t ignore = attrs.Int("ignore_index");
  if (pshape.size() < 2) return Status::Error("predictions must have rank >= 2 (N, C, ...)");
  int64_t n = pshape[0], c = pshape[1], d = 1;
  Shape loss_shape = {n};
  for (size_t i = 2; i < pshape.size(); ++i) {
    d *= pshape[i];
    loss_shape.push_back(pshape[i]);
  }
  if (t.shape != loss_shape) {
    return Status::Error("targets have shape " + rt::ShapeString(t.shape) + ", expected " +
                         rt::ShapeString(loss_shape));
  }
  if (w.rank() != 1 || w.shape[0] != c) {
    return Status::Error("weights have shape " + rt::ShapeString(w.shape) + ", expected (" +
                         std::to_string(c) + ")");
  }
  if (w.dtype != dtype) return Status::Error("weights have another element type");
  if (!VisitInteger(t.dtype, [](auto) { return Status::Ok(); }).ok()) {
    return Status::Error("targets must be integer class indices");
  }
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return Status::Error("unknown reduction '" + reduction + "'");
  }
  std::vector<double> weights(c);
  QUILT_RETURN_IF_ERROR(VisitFloat(w.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t k = 0; k < c; ++k) weights[k] = static_cast<double>(Load(w.Data<T>()[k]));
    return Status::Ok();
  }));
  std::vector<double> loss(n * d, 0.0);
  double wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      int64_t cls = ClassAt(t, i * d + j);
      if (has_ignore && cls == ignore) continue;
      if (cls < 0 || cls >= c) {
        return Status::Error("target " + std::to_string(cls) + " is out of range for " +
                             std::to_string(c) + " classes");
      }
      double wt = weights[cls];
      loss[i * d + j] = -wt * logp[(i * c + cls) * d + j];
      wsum += wt;
    }
  }
  Tensor* y;
  if (reduction == "none") {
    QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, loss_shape, &y));
  } else {
    QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, {}, &y));
  }
  return VisitFloat(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* py = y->MutableData<T>();
    if (reduction == "none") {
      for (size_t k = 0; k < loss.size(); ++k) py[k] = FromDouble<T>(loss[k]);
    } else {
      double s = 0;
      for (double v : loss) s += v;
      if (reduction == "mean") {
        s = wsum == 0 ? std::numeric_limits<double>::quiet_NaN() : s / wsum;
      }
      py[0] = FromDouble<T>(s);
    }
    return Status::Ok();
  });
}

std::vector<double> ToDoubles(const Tensor& x) {
  std::vector<double> out(x.NumElements());
  (void)VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(Load(x.Data<T>()[i]));
    return Status::Ok();
  });
  return out;
}

Status NllLoss(KernelContext& ctx) {
  const Tensor& p = *ctx.input(0);
  if (p.dtype != DType::kFloat32 && p.dtype != DType::kFloat64 && p.dtype != DType::kFloat16 &&
      p.dtype != DType::kBFloat16) {
    return Unsupported(p.dtype);
  }
  return NllFromLogProb(ctx, ToDoubles(p), p.shape, *ctx.input(1), *ctx.input(2), p.dtype);
}

// log_softmax over axis 1, then the nll loss; outputs (loss, log_softmax).
Status SoftmaxCrossEntropy(KernelContext& ctx) {
  const Tensor& s = *ctx.input(0);
  if (s.dtype != DType::kFloat32 && s.dtype != DType::kFloat64 && s.dtype != DType::kFloat16 &&
      s.dtype != DType::kBFloat16) {
    return Unsupported(s.dtype);
  }
  if (s.rank() < 2) return Status::Error("scores must have rank >= 2 (N, C, ...)");
  int64_t n = s.shape[0], c = s.shape[1], d = 1;
  for (int i = 2; i < s.rank(); ++i) d *= s.shape[i];
  std::vector<double> v = ToDoubles(s);
  std::vector<double> logp(v.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) m = std::max(m, v[(i * c + k) * d + j]);
      double sum = 0;
      for (int64_t k = 0; k < c; ++k) sum += std::exp(v[(i * c + k) * d + j] - m);
      double lse = m + std::log(sum);
      for (int64_t k = 0; k < c; ++k) logp[(i * c + k) * d + j] = v[(i * c + k) * d + j] - lse;
    }
  }
  QUILT_RETURN_IF_ERROR(NllFromLogProb(ctx, logp, s.shape, *ctx.input(1), *ctx.input(2), s.dtype));
  if (ctx.num_outputs() < 2) return Status::Ok();
  Tensor* lp;
  QUILT_RETURN_IF_ERROR(ctx.Output(1, s.dtype, s.shape, &lp));
  return VisitFloat(s.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = lp->MutableData<T>();
    for (size_t k = 0; k < logp.size(); ++k) out[k] = FromDouble<T>(logp[k]);
    return Status::Ok();
  });
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("sum", Reduce<Red::kSum>),
    Kernel("mean", Reduce<Red::kMean>),
    Kernel("max", Reduce<Red::kMax>),
    Kernel("min", Reduce<Red::kMin>),
    Kernel("prod", Reduce<Red::kProd>),
    Kernel("reduce_l1", Reduce<Red::kL1>),
    Kernel("reduce_l2", Reduce<Red::kL2>),
    Kernel("reduce_log_sum", Reduce<Red::kLogSum>),
    Kernel("reduce_log_sum_exp", Reduce<Red::kLogSumExp>),
    Kernel("reduce_sum_square", Reduce<Red::kSumSquare>),
    Kernel("argmax", ArgReduce<true>),
    Kernel("argmin", ArgReduce<false>),
    Kernel("cumsum", Scan<false>),
    Kernel("cumprod", Scan<true>),
    Kernel("nn.nll_loss", NllLoss),
    Kernel("nn.softmax_cross_entropy", SoftmaxCrossEntropy),
};

}  // namespace

std::span<const rt::KernelEntry> ReduceKernels() { return kKernels; }

rt::KernelFn ReduceReference(std::string_view op) {
  static constexpr rt::KernelEntry kReference[] = {
      {"max", Reduce<Red::kMax, false>},
      {"min", Reduce<Red::kMin, false>},
      {"sum", Reduce<Red::kSum, false>},
      {"mean", Reduce<Red::kMean, false>},
      {"reduce_l1", Reduce<Red::kL1, false>},
      {"reduce_l2", Reduce<Red::kL2, false>},
      {"reduce_sum_square", Reduce<Red::kSumSquare, false>},
  };
  for (const rt::KernelEntry& e : kReference) {
    if (e.name == op) return e.fn;
  }
  return nullptr;
}

}  // namespace quilt::cpu
