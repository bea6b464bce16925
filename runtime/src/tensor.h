// Tensor: a typed, shaped view of memory. The runtime owns the memory of every tensor a kernel
// sees (inputs borrowed from the caller or the package, outputs in the run's workspace); a
// Tensor never frees anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/src/dtype.h"
#include "runtime/src/inline_vector.h"

namespace quilt::rt {

// A shape's dims, inline up to rank 8 (no allocation where kernels copy or derive one).
using Shape = InlineVector<int64_t, 8>;

// The bytes of a tensor of `dtype` and `shape`, or nullopt when a dim is negative or the size
// overflows 64 bits.
// The most elements a tensor may have.
inline constexpr int64_t kMaxElements = int64_t{1} << 50;

// Whether the runtime holds a tensor of this shape: every dim in [0, 2^50] and the product of the
// non-zero dims at most 2^50. An empty tensor's other dims are bounded too, so that strides and
// offsets computed from any of its dims fit in 64 bits whatever the order of the dims.
inline bool ShapeFits(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements) return false;
    if (d != 0) {
      if (n > kMaxElements / d) return false;
      n *= d;
    }
  }
  return true;
}

// The byte size of a tensor of this dtype and shape; nullopt when the shape does not fit
// (ShapeFits).
inline std::optional<size_t> CheckedByteSize(DType dtype, const Shape& shape) {
  if (!ShapeFits(shape)) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  int64_t bits = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(DTypeBits(dtype)), &bits) ||
      bits > INT64_MAX - 7) {
    return std::nullopt;
  }
  return static_cast<size_t>((bits + 7) / 8);
}

// The alignment the kernels need of a tensor's data: its element's size, at most 8 bytes.
inline size_t DTypeAlignment(DType dtype) {
  int bytes = DTypeBits(dtype) / 8;
  return bytes >= 8 ? 8 : bytes >= 4 ? 4 : bytes >= 2 ? 2 : 1;
}

struct Tensor {
  DType dtype = DType::kVoid;
  Shape shape;
  void* data = nullptr;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t ByteSize() const { return DTypeBytes(dtype, NumElements()); }
  template <typename T>
  const T* Data() const {
    return static_cast<const T*>(data);
  }
  template <typename T>
  T* MutableData() const {
    return static_cast<T*>(data);
  }
};

// "(2, 3)" for messages.
std::string ShapeString(const Shape& shape);

}  // namespace quilt::rt
