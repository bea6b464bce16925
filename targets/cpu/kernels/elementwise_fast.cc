// Fast float32 paths of the elementwise ops a convolutional network runs around every conv: add,
// subtract, multiply, divide and power with numpy broadcasting, relu, clip, batch_norm in inference
// form and global average pooling. The broadcast is collapsed into as few dims as the operands
// allow, and the last one runs as a plain loop the compiler vectorizes (both operands contiguous,
// or one a scalar along it). Arithmetic, relu and clip give the reference kernels' results bit for
// bit; batch_norm folds its parameters into a scale and shift per channel; the pool sums in float
// lanes. Other element types (and other pools) go to the reference kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/simd.h"
#include "targets/cpu/kernels/vmath.h"

namespace quilt::cpu {
namespace {

// Elements below which a loop is not worth splitting across threads.
constexpr int64_t kParallelElements = 1 << 15;

// The broadcast of two operands over `out`, size-1 dims dropped and neighbouring dims merged
// where both operands (strides sa, sb) are contiguous across them. The last dim is the inner loop.
struct Collapsed {
  Shape dims, sa, sb;
};

Collapsed Collapse(const Shape& out, const Shape& sa, const Shape& sb) {
  Collapsed c;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!c.dims.empty() && c.sa.back() == sa[d] * out[d] && c.sb.back() == sb[d] * out[d]) {
      c.dims.back() *= out[d];
      c.sa.back() = sa[d];
      c.sb.back() = sb[d];
      continue;
    }
    c.dims.push_back(out[d]);
    c.sa.push_back(sa[d]);
    c.sb.push_back(sb[d]);
  }
  if (c.dims.empty()) {
    c.dims = {1};
    c.sa = {0};
    c.sb = {0};
  }
  return c;
}

struct Add {
  float operator()(float a, float b) const { return a + b; }
};
struct Sub {
  float operator()(float a, float b) const { return a - b; }
};
struct Mul {
  float operator()(float a, float b) const { return a * b; }
};
struct Div {
  float operator()(float a, float b) const { return a / b; }
};
// The conv epilogue's maximum and minimum by a constant (gemm.h) give these same values.
struct Max {
  float operator()(float a, float b) const { return MaxOf(a, b); }
};
struct Min {
  float operator()(float a, float b) const { return MinOf(a, b); }
};
struct Pow {
  float operator()(float a, float b) const { return std::pow(a, b); }
};
// int32, wrapping as the reference does (in uint32: no overflow).
struct AddInt {
  int32_t operator()(int32_t a, int32_t b) const {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  }
};
struct SubInt {
  int32_t operator()(int32_t a, int32_t b) const {
    return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
  }
};
struct MulInt {
  int32_t operator()(int32_t a, int32_t b) const {
    return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
  }
};

// y[i] = op(a[i * sa], b[i * sb]), i < n.
template <typename Op, typename T = float, typename Out = T>
QUILT_TEMPLATE_CLONES void Row(const T* __restrict a, int64_t sa, const T* __restrict b, int64_t sb,
                               Out* __restrict y, int64_t n) {
  Op op;
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    T bv = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    T av = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = op(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i * sa], b[i * sb]);
  }
}

// Elementwise op of two float32 (T float) or int32 (T int32_t) operands, broadcast, split across
// the threads when large, its result of type Out (T, or bool); other element types go to
// `reference`.
template <typename Op, typename T = float, typename Out = T>
Status BinaryFloat(KernelContext& ctx, rt::KernelFn reference) {
  constexpr DType kType = std::is_same_v<T, float> ? DType::kFloat32 : DType::kInt32;
  constexpr DType kOut = std::is_same_v<Out, bool> ? DType::kBool : kType;
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  // This thread's, kept from run to run: no allocation per step.
  thread_local Shape shape;
  if (a.dtype != kType || b.dtype != kType || !BroadcastShape(a.shape, b.shape, &shape)) {
    return reference(ctx);
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, kOut, shape, &y));
  int64_t total = y->NumElements();
  if (total == 0) return Status::Ok();
  const T* pa = a.Data<T>();
  const T* pb = b.Data<T>();
  Out* py = y->MutableData<Out>();
  int64_t na = a.NumElements(), nb = b.NumElements();
  if ((na == total || na == 1) && (nb == total || nb == 1)) {
    // Operands of the output's shape (less leading 1s) or of one element: one flat row.
    int64_t sa = na == total ? 1 : 0, sb = nb == total ? 1 : 0;
    ctx.ParallelFor(total, kParallelElements, [&](int64_t i0, int64_t i1) {
      Row<Op, T, Out>(pa + i0 * sa, sa, pb + i0 * sb, sb, py + i0, i1 - i0);
    });
    return Status::Ok();
  }
  Collapsed c = Collapse(shape, BroadcastStrides(a.shape, shape), BroadcastStrides(b.shape, shape));
  int outer_rank = static_cast<int>(c.dims.size()) - 1;
  int64_t inner = c.dims.back(), rows = total / inner;
  int64_t grain = std::max<int64_t>(1, kParallelElements / inner);
  ctx.ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
    // The outer index of row r0, then an odometer over the outer dims.
    Shape idx(static_cast<size_t>(outer_rank), 0);
    int64_t oa = 0, ob = 0;
    for (int64_t r = r0, d = outer_rank - 1; d >= 0; --d) {
      idx[d] = r % c.dims[d];
      r /= c.dims[d];
      oa += idx[d] * c.sa[d];
      ob += idx[d] * c.sb[d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      Row<Op, T, Out>(pa + oa, c.sa.back(), pb + ob, c.sb.back(), py + r * inner, inner);
      for (int d = outer_rank - 1; d >= 0; --d) {
        oa += c.sa[d];
        ob += c.sb[d];
        if (++idx[d] < c.dims[d]) break;
        oa -= c.sa[d] * c.dims[d];
        ob -= c.sb[d] * c.dims[d];
        idx[d] = 0;
      }
    }
  });
  return Status::Ok();
}

template <typename F>
QUILT_TEMPLATE_CLONES void Map(const float* __restrict x, float* __restrict y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(QUILT_NO_CLONES)
// Map on 16 lanes, for the functions whose arithmetic is long (vmath's exp, tanh, sigmoid, erf,
// log): the same operations lane by lane as Map's AVX2 copy, so the same values bit for bit.
// Taken where the CPU has AVX-512 F and VL (HasAvx512Gemm).
template <typename F>
__attribute__((target("avx2,fma,avx512f,avx512vl,prefer-vector-width=512"))) void Map512(
    const float* __restrict x, float* __restrict y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}
#define QUILT_HAS_MAP512 1
#endif

// y = (x - m) * s + b.
QUILT_CLONES void ScaleShift(const float* __restrict x, float* __restrict y, int64_t n, float m,
                             float s, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * s + b;
}

// The sum of x[0, n): eight float lanes, added up in double.
QUILT_CLONES double Sum(const float* x, int64_t n) {
  float lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += x[i + j];
  }
  double sum = 0;
  for (float l : lanes) sum += l;
  for (; i < n; ++i) sum += x[i];
  return sum;
}

// One row of softmax: max (NaN if any), then e^(x - max), summed in 8 double lanes, scaled. The
// maximum in vectors V of lanes of maxima and of NaN seen (a scalar max does not vectorize: its
// NaN rule is not the vector instruction's); its value does not depend on the order taken, only a
// zero's sign may, and e^(x - (+0)) is e^(x - (-0)). The NaN test a select on one comparison (GCC
// 12 takes the or of a comparison into a vector lane by lane on 16 lanes). The exps written
// first, then summed from y in the same eight double lanes, so that a copy on 16 lanes gives the
// 8-lane copy's values bit for bit.
template <typename V>
QUILT_ALWAYS_INLINE void SoftmaxRowOf(const float* __restrict x, float* __restrict y, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  bool nan = false;
  int64_t head = 0;
#if defined(__GNUC__)
  constexpr int kLanes = sizeof(V) / sizeof(float);
  typedef float VUnaligned __attribute__((vector_size(sizeof(V)), aligned(4), may_alias));
  V m = V{} - std::numeric_limits<float>::infinity(), seen = V{};
  for (; head + kLanes <= n; head += kLanes) {
    V v = *reinterpret_cast<const VUnaligned*>(x + head);
    m = v > m ? v : m;
    seen = v != v ? V{} + 1.0f : seen;
  }
  for (int j = 0; j < kLanes; ++j) {
    mx = std::max(mx, m[j]);
    nan |= seen[j] != 0.0f;
  }
#endif
  for (int64_t i = head; i < n; ++i) {
    mx = std::max(mx, x[i]);
    nan |= x[i] != x[i];
  }
  if (nan) mx = std::numeric_limits<float>::quiet_NaN();
  const int64_t whole = n / 8 * 8;
  for (int64_t i = 0; i < whole; ++i) y[i] = vmath::Exp(x[i] - mx);
  double lanes[8] = {};
  for (int64_t i = 0; i < whole; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += y[i + j];
  }
  double sum = 0;
  for (double l : lanes) sum += l;
  for (int64_t i = whole; i < n; ++i) {
    y[i] = vmath::Exp(x[i] - mx);
    sum += y[i];
  }
  float inv = static_cast<float>(1.0 / sum);
  for (int64_t k = 0; k < n; ++k) y[k] *= inv;
}

QUILT_CLONES void SoftmaxRow(const float* __restrict x, float* __restrict y, int64_t n) {
  SoftmaxRowOf<V8>(x, y, n);
}

#if defined(QUILT_HAS_MAP512)
// The same on 16 lanes where the CPU has AVX-512.
__attribute__((target("avx2,fma,avx512f,avx512vl,prefer-vector-width=512"))) void SoftmaxRow512(
    const float* __restrict x, float* __restrict y, int64_t n) {
  typedef float V16 __attribute__((vector_size(64)));
  SoftmaxRowOf<V16>(x, y, n);
}
#endif

// y = f(x) elementwise for float32 x, split across the threads when large; any other element
// type goes to `reference`. kWide: on 16 lanes (Map512) where the CPU has AVX-512, for vmath's
// functions.
template <bool kWide = false, typename F>
Status UnaryFloat(KernelContext& ctx, rt::KernelFn reference, F f) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kFloat32) return reference(ctx);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
#if defined(QUILT_HAS_MAP512)
  if constexpr (kWide) {
    if (HasAvx512Gemm()) {
      ctx.ParallelFor(x.NumElements(), kParallelElements,
                      [&](int64_t i0, int64_t i1) { Map512(px + i0, py + i0, i1 - i0, f); });
      return Status::Ok();
    }
  }
#endif
  ctx.ParallelFor(x.NumElements(), kParallelElements,
                  [&](int64_t i0, int64_t i1) { Map(px + i0, py + i0, i1 - i0, f); });
  return Status::Ok();
}

// The members of a fused step FusedElementwiseBlocks computes.
enum class BlockOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,  // binary
  kRelu,
  kSigmoid,
  kTanh,
  kExp,
  kErf,
  kSqrt,
  kAbs,
  kNeg
};

bool BlockOpOf(std::string_view name, BlockOp* op) {
  static constexpr std::pair<std::string_view, BlockOp> kOps[] = {
      {"add", BlockOp::kAdd},      {"subtract", BlockOp::kSub},    {"multiply", BlockOp::kMul},
      {"divide", BlockOp::kDiv},   {"maximum", BlockOp::kMax},     {"minimum", BlockOp::kMin},
      {"nn.relu", BlockOp::kRelu}, {"sigmoid", BlockOp::kSigmoid}, {"tanh", BlockOp::kTanh},
      {"exp", BlockOp::kExp},      {"erf", BlockOp::kErf},         {"sqrt", BlockOp::kSqrt},
      {"abs", BlockOp::kAbs},      {"negative", BlockOp::kNeg}};
  for (const auto& [n, o] : kOps) {
    if (n == name) {
      *op = o;
      return true;
    }
  }
  return false;
}

// f over x[0, n) into y, as UnaryFloat<kWide> runs it (16 lanes where it would).
template <bool kWide, typename F>
void MapBlock(const float* x, float* y, int64_t n, F f) {
#if defined(QUILT_HAS_MAP512)
  if constexpr (kWide) {
    if (HasAvx512Gemm()) return Map512(x, y, n, f);
  }
#endif
  Map(x, y, n, f);
}

}  // namespace

bool IsBlockOp(std::string_view op) {
  BlockOp o;
  return BlockOpOf(op, &o);
}

Status FusedElementwiseBlocks(KernelContext& ctx, std::span<const std::string_view> ops,
                              std::span<const int64_t> arity, std::span<const int64_t> args,
                              std::span<const int64_t> dtypes, bool* done) {
  *done = false;
  constexpr size_t kMaxMembers = 32;
  constexpr int kMaxInputs = 64;
  const size_t members = ops.size();
  if (members == 0 || members > kMaxMembers || arity.size() != members ||
      dtypes.size() != members || ctx.num_inputs() > kMaxInputs) {
    return Status::Ok();
  }
  // The step's inputs: float32, each of the output's shape (the broadcast of them all), a single
  // element (read for every element), or broadcast to it along some dims (gathered for each
  // block: a row's mean or scale against the rows).
  const int num_inputs = ctx.num_inputs();
  const float* in[kMaxInputs];
  enum class Kind : uint8_t { kFull, kSingle, kBroadcast };
  Kind kind[kMaxInputs];
  Shape out_shape;
  for (int k = 0; k < num_inputs; ++k) {
    const Tensor* t = ctx.input(k);
    if (!t || t->dtype != DType::kFloat32) return Status::Ok();
    in[k] = t->Data<float>();
    if (t->rank() > static_cast<int>(out_shape.size())) {
      out_shape.insert(out_shape.begin(), t->shape.size() - out_shape.size(), 1);
    }
    const size_t lead = out_shape.size() - t->shape.size();
    for (size_t d = 0; d < t->shape.size(); ++d) {
      int64_t& o = out_shape[lead + d];
      if (o == 1) {
        o = t->shape[d];
      } else if (t->shape[d] != 1 && t->shape[d] != o) {
        return Status::Ok();  // no broadcast: the members' kernels say so
      }
    }
  }
  const int rank = static_cast<int>(out_shape.size());
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  // Per broadcast input, its element strides along the output's dims (0 where it is broadcast).
  constexpr int kMaxRank = 8;
  if (rank > kMaxRank) return Status::Ok();
  int64_t strides[kMaxInputs][kMaxRank];
  int broadcasts = 0, slot[kMaxInputs];
  bool any_full = false;
  for (int k = 0; k < num_inputs; ++k) {
    const Tensor* t = ctx.input(k);
    const int64_t count = t->NumElements();
    kind[k] = count == total ? Kind::kFull : count == 1 ? Kind::kSingle : Kind::kBroadcast;
    any_full |= kind[k] == Kind::kFull;
    if (kind[k] != Kind::kBroadcast) continue;
    slot[k] = broadcasts++;
    const int lead = rank - t->rank();
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t dim = d >= lead ? t->shape[static_cast<size_t>(d - lead)] : 1;
      strides[k][d] = dim == 1 ? 0 : step;
      step *= dim;
    }
  }
  if (!any_full) return Status::Ok();  // every input smaller: the members' own kernels
  // The members: their ops and operands (k >= 0 the step's input k, k < 0 member -k - 1's
  // block); a unary op reads a whole block, never one element.
  struct Member {
    BlockOp op;
    int64_t a, b;
  };
  Member m[kMaxMembers];
  size_t next = 0;
  for (size_t i = 0; i < members; ++i) {
    if (dtypes[i] != static_cast<int64_t>(DType::kFloat32) || !BlockOpOf(ops[i], &m[i].op)) {
      return Status::Ok();
    }
    const int64_t want = m[i].op < BlockOp::kRelu ? 2 : 1;
    if (arity[i] != want || next + static_cast<size_t>(want) > args.size()) return Status::Ok();
    int64_t operand[2] = {0, 0};
    for (int64_t k = 0; k < want; ++k) {
      operand[k] = args[next++];
      if (operand[k] >= num_inputs ||
          (operand[k] < 0 && -operand[k] - 1 >= static_cast<int64_t>(i))) {
        return Status::Ok();
      }
    }
    if (want == 1 && operand[0] >= 0 && kind[operand[0]] != Kind::kFull) return Status::Ok();
    m[i].a = operand[0];
    m[i].b = operand[1];
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, out_shape, &y));
  *done = true;
  float* py = y->MutableData<float>();
  constexpr int64_t kBlock = 512;
  const int64_t blocks = (total + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, kParallelElements / kBlock);
  const int64_t row = rank > 0 ? out_shape.back() : 1;
  ctx.ParallelFor(blocks, grain, [&](int64_t b0, int64_t b1) {
    // Each member's block but the last (which writes y), then each broadcast input's, in this
    // thread's own memory.
    thread_local std::vector<float> scratch;
    const size_t floats = (members + static_cast<size_t>(broadcasts)) * kBlock;
    if (scratch.size() < floats) scratch.resize(floats);
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t i0 = blk * kBlock, n = std::min(kBlock, total - i0);
      // Each broadcast input's elements for the block, a run of the output's last dim at a
      // time: a copy where the input runs along it, its one value where it is broadcast.
      for (int k = 0; k < num_inputs; ++k) {
        if (kind[k] != Kind::kBroadcast) continue;
        float* to = scratch.data() + (members + static_cast<size_t>(slot[k])) * kBlock;
        for (int64_t i = i0; i < i0 + n;) {
          int64_t at = 0, rest = i;
          for (int d = rank - 1; d >= 0; --d) {
            const int64_t dim = out_shape[static_cast<size_t>(d)];
            at += rest % dim * strides[k][d];
            rest /= dim;
          }
          const int64_t run = std::min(row - i % row, i0 + n - i);
          if (strides[k][rank - 1] == 0) {
            std::fill(to + (i - i0), to + (i - i0) + run, in[k][at]);
          } else {
            std::memcpy(to + (i - i0), in[k] + at, static_cast<size_t>(run) * sizeof(float));
          }
          i += run;
        }
      }
      auto operand = [&](int64_t k, int64_t* stride) -> const float* {
        if (k < 0) {
          *stride = 1;
          return scratch.data() + (-k - 1) * kBlock;
        }
        if (kind[k] == Kind::kBroadcast) {
          *stride = 1;
          return scratch.data() + (members + static_cast<size_t>(slot[k])) * kBlock;
        }
        *stride = kind[k] == Kind::kSingle ? 0 : 1;
        return in[k] + (kind[k] == Kind::kSingle ? 0 : i0);
      };
      for (size_t i = 0; i < members; ++i) {
        float* out = i + 1 == members ? py + i0 : scratch.data() + i * kBlock;
        int64_t sa = 0, sb = 0;
        const float* a = operand(m[i].a, &sa);
        const float* b = m[i].op < BlockOp::kRelu ? operand(m[i].b, &sb) : nullptr;
        switch (m[i].op) {
          case BlockOp::kAdd:
            Row<Add>(a, sa, b, sb, out, n);
            break;
          case BlockOp::kSub:
            Row<Sub>(a, sa, b, sb, out, n);
            break;
          case BlockOp::kMul:
            Row<Mul>(a, sa, b, sb, out, n);
            break;
          case BlockOp::kDiv:
            Row<Div>(a, sa, b, sb, out, n);
            break;
          case BlockOp::kMax:
            Row<Max>(a, sa, b, sb, out, n);
            break;
          case BlockOp::kMin:
            Row<Min>(a, sa, b, sb, out, n);
            break;
          case BlockOp::kRelu:
            MapBlock<false>(a, out, n, [](float v) { return v < 0 ? 0.0f : v; });
            break;
          case BlockOp::kSigmoid:
            MapBlock<true>(a, out, n, [](float v) { return vmath::Sigmoid(v); });
            break;
          case BlockOp::kTanh:
            MapBlock<true>(a, out, n, [](float v) { return vmath::Tanh(v); });
            break;
          case BlockOp::kExp:
            MapBlock<true>(a, out, n, [](float v) { return vmath::Exp(v); });
            break;
          case BlockOp::kErf:
            MapBlock<true>(a, out, n, [](float v) { return vmath::Erf(v); });
            break;
          case BlockOp::kSqrt:
            MapBlock<false>(a, out, n, [](float v) { return std::sqrt(v); });
            break;
          case BlockOp::kAbs:
            MapBlock<false>(a, out, n, [](float v) { return std::fabs(v); });
            break;
          case BlockOp::kNeg:
            MapBlock<false>(a, out, n, [](float v) { return -v; });
            break;
        }
      }
    }
  });
  return Status::Ok();
}

// int32 operands (a quantized conv's bias added to its sums) take the int32 form.
Status AddFast(KernelContext& ctx) {
  return ctx.input(0)->dtype == DType::kInt32 ? BinaryFloat<AddInt, int32_t>(ctx, AddReference)
                                              : BinaryFloat<Add>(ctx, AddReference);
}
Status SubtractFast(KernelContext& ctx) {
  return ctx.input(0)->dtype == DType::kInt32 ? BinaryFloat<SubInt, int32_t>(ctx, SubtractReference)
                                              : BinaryFloat<Sub>(ctx, SubtractReference);
}
Status MultiplyFast(KernelContext& ctx) {
  return ctx.input(0)->dtype == DType::kInt32 ? BinaryFloat<MulInt, int32_t>(ctx, MultiplyReference)
                                              : BinaryFloat<Mul>(ctx, MultiplyReference);
}
Status DivideFast(KernelContext& ctx) { return BinaryFloat<Div>(ctx, DivideReference); }

Status ExpFast(KernelContext& ctx) {
  return UnaryFloat<true>(ctx, ExpReference, [](float v) { return vmath::Exp(v); });
}
Status TanhFast(KernelContext& ctx) {
  return UnaryFloat<true>(ctx, TanhReference, [](float v) { return vmath::Tanh(v); });
}
Status SigmoidFast(KernelContext& ctx) {
  return UnaryFloat<true>(ctx, SigmoidReference, [](float v) { return vmath::Sigmoid(v); });
}
Status ErfFast(KernelContext& ctx) {
  return UnaryFloat<true>(ctx, ErfReference, [](float v) { return vmath::Erf(v); });
}

Status LogFast(KernelContext& ctx) {
  return UnaryFloat<true>(ctx, LogReference, [](float v) { return vmath::Log(v); });
}
Status SqrtFast(KernelContext& ctx) {
  return UnaryFloat(ctx, SqrtReference, [](float v) { return std::sqrt(v); });
}
Status FloorFast(KernelContext& ctx) {
  return UnaryFloat(ctx, FloorReference, [](float v) { return std::floor(v); });
}
Status CeilFast(KernelContext& ctx) {
  return UnaryFloat(ctx, CeilReference, [](float v) { return std::ceil(v); });
}
// Half to even: the default rounding mode's.
Status RoundFast(KernelContext& ctx) {
  return UnaryFloat(ctx, RoundReference, [](float v) { return std::nearbyint(v); });
}
Status ReciprocalFast(KernelContext& ctx) {
  return UnaryFloat(ctx, ReciprocalReference, [](float v) { return 1.0f / v; });
}
Status AbsFast(KernelContext& ctx) {
  return UnaryFloat(ctx, AbsReference, [](float v) { return std::fabs(v); });
}
Status NegativeFast(KernelContext& ctx) {
  return UnaryFloat(ctx, NegativeReference, [](float v) { return -v; });
}

// A comparison on the float32 or int32 rows; other types to the reference.
template <typename Op>
Status CompareFast(KernelContext& ctx, rt::KernelFn reference) {
  return ctx.input(0)->dtype == DType::kInt32 ? BinaryFloat<Op, int32_t, bool>(ctx, reference)
                                              : BinaryFloat<Op, float, bool>(ctx, reference);
}
Status EqualFast(KernelContext& ctx) { return CompareFast<EqualOp>(ctx, EqualReference); }
Status LessFast(KernelContext& ctx) { return CompareFast<LessOp>(ctx, LessReference); }
Status GreaterFast(KernelContext& ctx) { return CompareFast<GreaterOp>(ctx, GreaterReference); }

Status MaximumFast(KernelContext& ctx) { return BinaryFloat<Max>(ctx, MaximumReference); }
Status MinimumFast(KernelContext& ctx) { return BinaryFloat<Min>(ctx, MinimumReference); }

Status PowerFast(KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype == DType::kFloat32 && b.dtype == DType::kFloat32 && b.NumElements() == 1 &&
      b.Data<float>()[0] == 2.0f && static_cast<size_t>(b.rank()) <= a.shape.size()) {
    bool broadcast_free = true;
    for (int64_t d : b.shape) broadcast_free &= d == 1;
    if (broadcast_free) {
      return UnaryFloat(ctx, PowerReference, [](float v) { return v * v; });
    }
  }
  return BinaryFloat<Pow>(ctx, PowerReference);
}

// As the reference: bounds rounded to float, absent ones infinite, NaN kept.
Status ClipFast(KernelContext& ctx) {
  const rt::AttrView& attrs = ctx.attrs();
  float inf = std::numeric_limits<float>::infinity();
  float lo = attrs.Has("min") ? static_cast<float>(attrs.Float("min")) : -inf;
  float hi = attrs.Has("max") ? static_cast<float>(attrs.Float("max")) : inf;
  return UnaryFloat(ctx, ClipReference, [lo, hi](float v) {
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  });
}

template <RowSum kWhat>
QUILT_TEMPLATE_CLONES double SumRow(const float* x, int64_t n) {
  double lanes[8] = {};
  int64_t i = 0;
  auto term = [](float v) {
    double d = v;
    if constexpr (kWhat == RowSum::kSquares) return d * d;
    if constexpr (kWhat == RowSum::kMagnitudes) return d < 0 ? -d : d;
    return d;
  };
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += term(x[i + j]);
  }
  double sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
               ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  for (; i < n; ++i) sum += term(x[i]);
  return sum;
}

void SumRows(const float* x, int64_t rows, int64_t n, RowSum what, double* out,
             rt::ThreadPool* pool) {
  int64_t grain = std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, n));
  rt::ParallelFor(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = x + r * n;
      out[r] = what == RowSum::kSquares      ? SumRow<RowSum::kSquares>(row, n)
               : what == RowSum::kMagnitudes ? SumRow<RowSum::kMagnitudes>(row, n)
                                             : SumRow<RowSum::kPlain>(row, n);
    }
  });
}

template <RowSum kWhat>
QUILT_TEMPLATE_CLONES void SumLanes(const float* __restrict x, int64_t len, int64_t inner,
                                    double* __restrict out) {
  for (int64_t i = 0; i < inner; ++i) out[i] = 0;
  for (int64_t k = 0; k < len; ++k) {
    const float* row = x + k * inner;
    for (int64_t i = 0; i < inner; ++i) {
      double d = row[i];
      if constexpr (kWhat == RowSum::kSquares) d = d * d;
      if constexpr (kWhat == RowSum::kMagnitudes) d = d < 0 ? -d : d;
      out[i] += d;
    }
  }
}

void SumAcross(const float* x, int64_t outer, int64_t len, int64_t inner, RowSum what, double* out,
               rt::ThreadPool* pool) {
  int64_t grain = std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, len * inner));
  rt::ParallelFor(pool, outer, grain, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* block = x + o * len * inner;
      double* lanes = out + o * inner;
      if (what == RowSum::kSquares) {
        SumLanes<RowSum::kSquares>(block, len, inner, lanes);
      } else if (what == RowSum::kMagnitudes) {
        SumLanes<RowSum::kMagnitudes>(block, len, inner, lanes);
      } else {
        SumLanes<RowSum::kPlain>(block, len, inner, lanes);
      }
    }
  });
}

// ONNX DynamicQuantizeLinear's uint8 form (declared in util.h), here to be vectorized: a NaN
// leaves the range as it is (std::min and std::max keep their first operand against NaN, as the
// lanes' compare-and-select does), and quantizes to 0.
QUILT_CLONES void MinMaxFromZero(const float* x, int64_t n, float* lo_out, float* hi_out) {
  float lo = 0, hi = 0;
  int64_t i = 0;
#if defined(__GNUC__)
  V8 vlo = {}, vhi = {};
  for (; i + 8 <= n; i += 8) {
    V8 v;
    LoadV(&v, x + i);
    vlo = v < vlo ? v : vlo;
    vhi = v > vhi ? v : vhi;
  }
  for (int l = 0; l < 8; ++l) {
    lo = std::min(lo, vlo[l]);
    hi = std::max(hi, vhi[l]);
  }
#endif
  for (; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *lo_out = lo;
  *hi_out = hi;
}

QUILT_CLONES void QuantizeU8(const float* x, int64_t n, float s, float zp, uint8_t* q) {
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / s) + zp;
    v = v == v ? v : 0.0f;  // NaN
    q[i] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, v)));
  }
}

void DynamicQuantizeU8(const float* x, int64_t n, uint8_t* q, float* scale, uint8_t* zero_point,
                       rt::ThreadPool* pool) {
  float lo = 0, hi = 0;
  constexpr int64_t kChunk = int64_t{1} << 15;
  int64_t chunks = pool ? std::min<int64_t>((n + kChunk - 1) / kChunk, pool->threads()) : 1;
  if (chunks > 1) {
    // Each thread's slice, then the slices' ranges (the same as one pass: min and max do not
    // depend on the order).
    std::vector<float> los(static_cast<size_t>(chunks)), his(static_cast<size_t>(chunks));
    int64_t per = (n + chunks - 1) / chunks;
    rt::ParallelFor(pool, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        int64_t b = c * per, e = std::min(n, b + per);
        MinMaxFromZero(x + b, std::max<int64_t>(0, e - b), &los[c], &his[c]);
      }
    });
    for (int64_t c = 0; c < chunks; ++c) {
      lo = std::min(lo, los[c]);
      hi = std::max(hi, his[c]);
    }
  } else {
    MinMaxFromZero(x, n, &lo, &hi);
  }
  float s = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  float zp = std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / s)));
  rt::ParallelFor(pool, n, kChunk,
                  [&](int64_t b, int64_t e) { QuantizeU8(x + b, e - b, s, zp, q + b); });
  *scale = s;
  *zero_point = static_cast<uint8_t>(zp);
}

namespace nn {

// NaN stays NaN, -0 stays -0, as in the reference.
Status ReluFast(KernelContext& ctx) {
  return UnaryFloat(ctx, ReluReference, [](float v) { return v < 0 ? 0.0f : v; });
}

// Rows of `inner` elements of one channel each: y = x < 0 ? x * slope : x (NaN stays NaN), as
// the reference, which also takes every other case (and its errors).
Status PReluFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& alpha = *ctx.input(1);
  int64_t axis = ctx.attrs().Int("axis", 1);
  if (x.dtype != DType::kFloat32 || alpha.dtype != DType::kFloat32 || alpha.rank() > 1 ||
      !NormalizeAxis(&axis, x.rank())) {
    return PReluReference(ctx);
  }
  int64_t len = x.shape[axis], na = alpha.NumElements();
  if (na != len && na != 1) return PReluReference(ctx);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, x.shape, &y));
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.shape[d];
  int64_t rows = inner == 0 ? 0 : x.NumElements() / inner;
  const float* px = x.Data<float>();
  const float* pa = alpha.Data<float>();
  float* py = y->MutableData<float>();
  int64_t grain = std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, inner));
  ctx.ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float a = pa[na == 1 ? 0 : r % len];
      Map(px + r * inner, py + r * inner, inner, [a](float v) { return v < 0 ? v * a : v; });
    }
  });
  return Status::Ok();
}

// The reference's formulas in float (hard_swish, hard_sigmoid, leakyrelu: the same values).
Status HardSwishFast(KernelContext& ctx) {
  return UnaryFloat(ctx, HardSwishReference, [](float x) {
    float v = x / 6.0f + 0.5f;
    return x * std::max(0.0f, std::min(1.0f, v));
  });
}

Status HardSigmoidFast(KernelContext& ctx) {
  float alpha = static_cast<float>(ctx.attrs().Float("alpha", 0.2));
  float beta = static_cast<float>(ctx.attrs().Float("beta", 0.5));
  return UnaryFloat(ctx, HardSigmoidReference, [alpha, beta](float x) {
    float v = alpha * x + beta;
    return std::max(0.0f, std::min(1.0f, v));
  });
}

Status LeakyReluFast(KernelContext& ctx) {
  float alpha = static_cast<float>(ctx.attrs().Float("alpha", 0.01));
  return UnaryFloat(ctx, LeakyReluReference, [alpha](float x) { return x < 0 ? alpha * x : x; });
}

Status SiluFast(KernelContext& ctx) {
  return UnaryFloat<true>(ctx, SiluReference, [](float x) { return x / (1.0f + vmath::Exp(-x)); });
}

Status GeluFast(KernelContext& ctx) {
  return UnaryFloat<true>(ctx, GeluReference, [](float x) {
    return 0.5f * x * (1.0f + vmath::Erf(x * 0.707106781186547524f));
  });
}

// Along the last axis: each row's max, e^(x - max) through vmath, their sum in double lanes,
// then one multiply by its inverse. Other axes (and dtypes): the reference.
// Softmax along an axis of `len` rows of `inner` contiguous lanes: per lane, as SoftmaxRow (the
// maximum, NaN if any; e^(x - max) summed in double; scaled by the sum's inverse), every step a
// loop along the lanes. `mx` and `sum` hold `inner` values. Its loops, compiled into each copy
// below: every lane's values are the same at any vector width.
QUILT_ALWAYS_INLINE void SoftmaxAcrossLanes(const float* __restrict x, float* __restrict y,
                                            int64_t len, int64_t inner, float* __restrict mx,
                                            double* __restrict sum) {
  for (int64_t i = 0; i < inner; ++i) {
    mx[i] = -std::numeric_limits<float>::infinity();
    sum[i] = 0;
  }
  for (int64_t k = 0; k < len; ++k) {
    const float* row = x + k * inner;
    for (int64_t i = 0; i < inner; ++i) {
      float v = row[i];
      bool take = (v > mx[i]) | (v != v);
      mx[i] = take && mx[i] == mx[i] ? v : mx[i];  // NaN, once there, stays
    }
  }
  for (int64_t k = 0; k < len; ++k) {
    const float* row = x + k * inner;
    float* out = y + k * inner;
    for (int64_t i = 0; i < inner; ++i) {
      float e = vmath::Exp(row[i] - mx[i]);
      out[i] = e;
      sum[i] += e;
    }
  }
  for (int64_t i = 0; i < inner; ++i) mx[i] = static_cast<float>(1.0 / sum[i]);  // the inverses
  for (int64_t k = 0; k < len; ++k) {
    float* out = y + k * inner;
    for (int64_t i = 0; i < inner; ++i) out[i] *= mx[i];
  }
}

QUILT_CLONES void SoftmaxAcross(const float* __restrict x, float* __restrict y, int64_t len,
                                int64_t inner, float* __restrict mx, double* __restrict sum) {
  SoftmaxAcrossLanes(x, y, len, inner, mx, sum);
}

#if defined(QUILT_HAS_MAP512)
// The same on 16 lanes where the CPU has AVX-512.
__attribute__((target("avx2,fma,avx512f,avx512vl,prefer-vector-width=512"))) void SoftmaxAcross512(
    const float* __restrict x, float* __restrict y, int64_t len, int64_t inner,
    float* __restrict mx, double* __restrict sum) {
  SoftmaxAcrossLanes(x, y, len, inner, mx, sum);
}
#endif

Status SoftmaxFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int64_t axis = ctx.attrs().Int("axis", -1);
  if (x.dtype != DType::kFloat32 || x.rank() == 0 || !NormalizeAxis(&axis, x.rank())) {
    return SoftmaxReference(ctx);
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kFloat32, x.shape, &y));
  if (axis != x.rank() - 1) {
    // Along an inner axis: the same, each of the `inner` positions after the axis a lane.
    int64_t len = x.shape[axis], inner = 1;
    for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.shape[d];
    if (len == 0 || y->NumElements() == 0) return Status::Ok();
    int64_t outer = y->NumElements() / (len * inner);
    const float* px = x.Data<float>();
    float* py = y->MutableData<float>();
    auto across = SoftmaxAcross;
#if defined(QUILT_HAS_MAP512)
    if (HasAvx512Gemm()) across = SoftmaxAcross512;
#endif
    ctx.ParallelFor(outer, std::max<int64_t>(1, kParallelElements / (len * inner)),
                    [&](int64_t o0, int64_t o1) {
                      // This worker's, kept from run to run.
                      thread_local std::vector<float> kept_mx;
                      thread_local std::vector<double> kept_sum;
                      std::vector<float>& mx = kept_mx;
                      std::vector<double>& sum = kept_sum;
                      mx.resize(static_cast<size_t>(inner));
                      sum.resize(static_cast<size_t>(inner));
                      for (int64_t o = o0; o < o1; ++o) {
                        across(px + o * len * inner, py + o * len * inner, len, inner, mx.data(),
                               sum.data());
                      }
                    });
    return Status::Ok();
  }
  int64_t len = x.shape.back();
  if (len == 0 || y->NumElements() == 0) return Status::Ok();
  int64_t rows = y->NumElements() / len;
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  if (len < 8) {
    // Rows shorter than a vector (a detector's two classes per cell): 16 rows at a time, each a
    // lane of SoftmaxAcross on a copy of their values by column. Per row, what SoftmaxRow
    // computes (below 8 values it sums them in order, in double, as the lanes do) without its
    // per-row reductions of a vector: mtcnn-pnet's 3,481 rows of 2, 126 -> 23 us.
    constexpr int64_t kRows = 16;
    auto across = SoftmaxAcross;
#if defined(QUILT_HAS_MAP512)
    if (HasAvx512Gemm()) across = SoftmaxAcross512;
#endif
    int64_t blocks = (rows + kRows - 1) / kRows;
    ctx.ParallelFor(blocks, std::max<int64_t>(1, kParallelElements / (kRows * len)),
                    [&](int64_t b0, int64_t b1) {
                      float in[8 * kRows], out[8 * kRows], mx[kRows];
                      double sum[kRows];
                      for (int64_t b = b0; b < b1; ++b) {
                        const int64_t r0 = b * kRows, count = std::min(kRows, rows - r0);
                        const float* xb = px + r0 * len;
                        float* yb = py + r0 * len;
                        for (int64_t r = 0; r < count; ++r) {
                          for (int64_t k = 0; k < len; ++k) in[k * count + r] = xb[r * len + k];
                        }
                        across(in, out, len, count, mx, sum);
                        for (int64_t r = 0; r < count; ++r) {
                          for (int64_t k = 0; k < len; ++k) yb[r * len + k] = out[k * count + r];
                        }
                      }
                    });
    return Status::Ok();
  }
  void (*row)(const float*, float*, int64_t) = SoftmaxRow;
#if defined(QUILT_HAS_MAP512)
  if (HasAvx512Gemm()) row = SoftmaxRow512;
#endif
  ctx.ParallelFor(rows, std::max<int64_t>(1, kParallelElements / len), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) row(px + r * len, py + r * len, len);
  });
  return Status::Ok();
}

// Adaptive average pooling to one cell per plane (global average pooling); other output sizes go
// to the reference.
Status AdaptiveAvgPoolFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  bool global = x.dtype == DType::kFloat32 && x.rank() >= 3 && x.rank() <= 5;
  if (global && ctx.attrs().Has("output_size")) {
    for (int64_t s : ctx.attrs().Ints("output_size")) global = global && s == 1;
    global = global && ctx.attrs().Ints("output_size").size() == x.shape.size() - 2;
  } else {
    global = global && x.NumElements() > 0 && x.NumElements() == x.shape[0] * x.shape[1];
  }
  if (!global) return AdaptiveAvgPool(ctx);
  Shape shape = {x.shape[0], x.shape[1]};
  shape.resize(x.shape.size(), 1);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, shape, &y));
  int64_t planes = x.shape[0] * x.shape[1];
  int64_t size = planes == 0 ? 0 : x.NumElements() / planes;
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  int64_t grain = std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, size));
  ctx.ParallelFor(planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      double sum = Sum(px + p * size, size);
      py[p] = size > 0 ? static_cast<float>(sum / static_cast<double>(size)) : 0.0f;
    }
  });
  return Status::Ok();
}

// y = (x - mean) * (gamma / sqrt(var + eps)) + beta per channel, the factor computed in double.
Status BatchNormFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  bool floats = x.dtype == DType::kFloat32;
  for (int i = 1; i <= 4; ++i) {
    const Tensor* p = ctx.input(i);
    floats = floats && p && p->dtype == DType::kFloat32;
  }
  int64_t axis = ctx.attrs().Int("axis", 1);
  if (!floats || !NormalizeAxis(&axis, x.rank())) return BatchNorm(ctx);
  int64_t c = x.shape[axis];
  for (int i = 1; i <= 4; ++i) {
    if (ctx.input(i)->rank() != 1 || ctx.input(i)->shape[0] != c) return BatchNorm(ctx);
  }
  double eps = ctx.attrs().Float("epsilon", 1e-5);
  const float* gamma = ctx.input(1)->Data<float>();
  const float* beta = ctx.input(2)->Data<float>();
  const float* mean = ctx.input(3)->Data<float>();
  const float* var = ctx.input(4)->Data<float>();
  thread_local std::vector<float> kept_scale;  // this thread's; the workers read it by reference
  std::vector<float>& scale = kept_scale;
  scale.resize(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[ch] = static_cast<float>(static_cast<double>(gamma[ch]) /
                                   std::sqrt(static_cast<double>(var[ch]) + eps));
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.shape[d];
  int64_t rows = x.NumElements() / std::max<int64_t>(1, inner);  // (outer, channel) pairs
  if (inner == 0 || rows == 0) return Status::Ok();
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  int64_t grain = std::max<int64_t>(1, kParallelElements / inner);
  ctx.ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t ch = r % c;
      ScaleShift(px + r * inner, py + r * inner, inner, mean[ch], scale[ch], beta[ch]);
    }
  });
  return Status::Ok();
}

}  // namespace nn
}  // namespace quilt::cpu
