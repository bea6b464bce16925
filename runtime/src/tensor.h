// Tensor: a typed, shaped view of memory. The runtime owns the memory of every tensor a kernel
// sees (inputs borrowed from the caller or the package, outputs in the run's workspace); a
// Tensor never frees anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/src/dtype.h"

namespace quilt::rt {

using Shape = std::vector<int64_t>;

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
