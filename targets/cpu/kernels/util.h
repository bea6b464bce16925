// Helpers shared by the CPU reference kernels: 16-bit float types, dispatch on element type,
// broadcasting and axis arithmetic. Reference kernels favour plain loops that are obviously
// right over speed: they are the oracle every optimized kernel is tested against.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/src/dtype.h"
#include "runtime/src/kernel.h"

namespace quilt::cpu {

using rt::DType;
using rt::KernelContext;
using rt::Shape;
using rt::Status;
using rt::Tensor;

// IEEE half and bfloat16 as storage types; arithmetic goes through float.
struct f16 {
  uint16_t bits = 0;
  f16() = default;
  explicit f16(float f) : bits(rt::FloatToHalf(f)) {}
  explicit operator float() const { return rt::HalfToFloat(bits); }
};
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float f) : bits(rt::FloatToBFloat16(f)) {}
  explicit operator float() const { return rt::BFloat16ToFloat(bits); }
};

// The type arithmetic on T is done in: float for the 16-bit floats, T itself otherwise.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, f16> || std::is_same_v<T, bf16>, float, T>;
template <typename T>
Compute<T> Load(T v) {
  return static_cast<Compute<T>>(v);
}
template <typename T, typename C>
T Store(C v) {
  return static_cast<T>(v);
}

template <typename T>
struct Tag {
  using type = T;
};

inline Status Unsupported(DType t) {
  return Status::Error("element type " + std::string(rt::DTypeName(t)) +
                       " is not supported by this kernel");
}

// f(Tag<T>{}) for the floating types float, double, float16, bfloat16.
template <typename F>
Status VisitFloat(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32:
      return f(Tag<float>{});
    case DType::kFloat64:
      return f(Tag<double>{});
    case DType::kFloat16:
      return f(Tag<f16>{});
    case DType::kBFloat16:
      return f(Tag<bf16>{});
    default:
      return Unsupported(t);
  }
}

// f(Tag<T>{}) for the 8 to 64-bit integers.
template <typename F>
Status VisitInteger(DType t, F&& f) {
  switch (t) {
    case DType::kInt8:
      return f(Tag<int8_t>{});
    case DType::kInt16:
      return f(Tag<int16_t>{});
    case DType::kInt32:
      return f(Tag<int32_t>{});
    case DType::kInt64:
      return f(Tag<int64_t>{});
    case DType::kUInt8:
      return f(Tag<uint8_t>{});
    case DType::kUInt16:
      return f(Tag<uint16_t>{});
    case DType::kUInt32:
      return f(Tag<uint32_t>{});
    case DType::kUInt64:
      return f(Tag<uint64_t>{});
    default:
      return Unsupported(t);
  }
}

// Floats and integers.
template <typename F>
Status VisitNumeric(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kFloat16:
    case DType::kBFloat16:
      return VisitFloat(t, f);
    default:
      return VisitInteger(t, f);
  }
}

// Numbers and bool (stored as one byte, 0 or 1: visited as bool).
template <typename F>
Status VisitAll(DType t, F&& f) {
  if (t == DType::kBool) return f(Tag<bool>{});
  return VisitNumeric(t, f);
}

// Numpy broadcasting of two shapes; false when they do not broadcast.
bool BroadcastShape(std::span<const int64_t> a, std::span<const int64_t> b, Shape* out);
// Element strides of `in` seen from every axis of `out` (0 where `in` is broadcast), for an
// `in` that broadcasts to `out`.
Shape BroadcastStrides(const Shape& in, const Shape& out);
// Row-major strides of a shape, in elements.
Shape Strides(const Shape& shape);

// Copies the strided view of `src` into the dense `dst`: element idx of `shape` is read from
// src + (sum of idx[k] * strides[k]) elements of `eb` bytes (strides may be negative or 0).
// Runs of the innermost dims go as one memcpy where the view is contiguous: a slice, a
// transpose or a broadcast at memory speed rather than element by element. A copy of at least
// kParallelCopyBytes runs on `pool`'s threads where one is given: the view's rows split among
// them, or a single run cut into blocks.
inline constexpr int64_t kParallelCopyBytes = int64_t{1} << 18;
void CopyStrided(const void* src, const Shape& shape, const Shape& strides, size_t eb, void* dst,
                 rt::ThreadPool* pool = nullptr);

// Calls f(out_index, in_offsets...) for every element of `out`, with each input's offset
// computed from its broadcast strides. N inputs.
template <size_t N, typename F>
void ForEachBroadcast(const Shape& out, const Shape (&strides)[N], F&& f) {
  int rank = static_cast<int>(out.size());
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0) return;
  // The last axis in a plain loop, the others on an odometer once per row.
  int64_t inner = rank > 0 ? out[rank - 1] : 1;
  int64_t step[N] = {};
  for (size_t k = 0; k < N; ++k) step[k] = rank > 0 ? strides[k][rank - 1] : 0;
  Shape idx(rank, 0);
  int64_t off[N] = {};
  for (int64_t i = 0; i < total; i += inner) {
    int64_t at[N];
    for (size_t k = 0; k < N; ++k) at[k] = off[k];
    for (int64_t j = 0; j < inner; ++j) {
      f(i + j, static_cast<const int64_t*>(at));
      for (size_t k = 0; k < N; ++k) at[k] += step[k];
    }
    for (int ax = rank - 2; ax >= 0; --ax) {
      ++idx[ax];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][ax];
      if (idx[ax] < out[ax]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][ax] * out[ax];
      idx[ax] = 0;
    }
  }
}

// An optional input the model left out: absent, or rank 1 with no elements.
bool Absent(const Tensor* t);
// A float tensor's elements as double (an error for other element types).
Status ReadFloats(const Tensor& t, std::vector<double>* out);
// Stores `v` into the float tensor `t` (rounded to its type); `t` holds v.size() elements.
void WriteFloats(Tensor* t, const std::vector<double>& v);

// ONNX DynamicQuantizeLinear of n float32 values to uint8 in float32 arithmetic: scale =
// (max(x, 0) - min(x, 0)) / 255 (1 / 255 when both are 0), zero point = saturate(round_half_even(
// -min(x, 0) / scale)), q = saturate(round_half_even(x / scale) + zero point); NaN is left out of
// the range and quantizes to 0.
// Large inputs are split across `pool`'s threads (null: this thread alone), with the same result.
void DynamicQuantizeU8(const float* x, int64_t n, uint8_t* q, float* scale, uint8_t* zero_point,
                       rt::ThreadPool* pool = nullptr);

// `axis` in [-rank, rank) made non-negative; false when out of range.
bool NormalizeAxis(int64_t* axis, int rank);

}  // namespace quilt::cpu
