// Helpers shared by the layout, indexing and image kernels (manip.cc, index.cc, image.cc): element
// bytes, integer arguments, scalars and index iteration. Private to those files.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "targets/cpu/kernels/util.h"

namespace quilt::cpu::manip {

// Bytes of one element for whole-byte types; an error for strings and sub-byte types.
inline Status ElementBytes(DType t, size_t* bytes) {
  int bits = rt::DTypeBits(t);
  if (bits <= 0 || bits % 8 != 0) return Unsupported(t);
  *bytes = static_cast<size_t>(bits / 8);
  return Status::Ok();
}

// Nothing to copy where dst is src: a part the memory plan put in its whole's memory (lower.cc).
inline void CopyBytes(void* dst, const void* src, size_t n) {
  if (n && dst != src) std::memcpy(dst, src, n);
}

inline int64_t Product(const Shape& s, size_t begin = 0, size_t end = SIZE_MAX) {
  int64_t n = 1;
  for (size_t i = begin; i < s.size() && i < end; ++i) n *= s[i];
  return n;
}

// The elements of an integer tensor (int8..int64, uint8..uint64) as int64, into a std::vector
// or a Shape (no allocation for the few values of a shape tensor). `what` names the tensor in a
// message.
template <class Ints>
Status ReadInts(const Tensor* t, std::string_view what, Ints* out) {
  out->clear();
  if (!t) return Status::Error(std::string(what) + " is missing");
  int64_t n = t->NumElements();
  if (t->dtype == DType::kInt64) {
    out->resize(static_cast<size_t>(n));
    CopyBytes(out->data(), t->data, sizeof(int64_t) * n);
    return Status::Ok();
  }
  Status s = VisitInteger(t->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t->Data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, uint64_t>) {
        if (p[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return Status::Error(std::string(what) + " holds a value too large for int64");
        }
      }
      out->push_back(static_cast<int64_t>(p[i]));
    }
    return Status::Ok();
  });
  if (!s.ok()) return Status::Error(std::string(what) + ": " + s.message());
  return s;
}

// A 1-D (or 0-D) integer tensor as values.
template <class Ints>
Status ReadVector(const Tensor* t, std::string_view what, Ints* out) {
  if (t && t->rank() > 1) {
    return Status::Error(std::string(what) + " must be 1-D, got rank " + std::to_string(t->rank()));
  }
  return ReadInts(t, what, out);
}

// Element i of a numeric or bool tensor as double.
inline Status ReadDouble(const Tensor* t, int64_t i, const std::string& what, double* out) {
  if (!t || i >= t->NumElements())
    return Status::Error(what + " has no element " + std::to_string(i));
  return VisitAll(t->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *out = static_cast<double>(Load(t->Data<T>()[i]));
    return Status::Ok();
  });
}

// The single element of a scalar (or one-element) tensor as double.
inline Status ReadScalar(const Tensor* t, const std::string& what, double* out) {
  if (!t) return Status::Error(what + " is missing");
  if (t->NumElements() != 1) {
    return Status::Error(what + " must hold one value, got shape " + rt::ShapeString(t->shape));
  }
  return ReadDouble(t, 0, what, out);
}

// A double as int64 when it is a finite value in range (truncated); false otherwise.
inline bool DoubleToInt(double v, int64_t* out) {
  if (!std::isfinite(v) || v >= 9.2233720368547758e18 || v < -9.2233720368547758e18) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// Converts a double to T with saturation for integers (NaN gives 0): no overflowing casts.
template <typename T>
T SaturateCast(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) {
      return std::numeric_limits<T>::min();
    }
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(v);
  } else {
    return Store<T>(static_cast<Compute<T>>(v));
  }
}

// Calls f(linear, index) for every index of `shape` in row-major order.
template <typename F>
void ForEachIndex(const Shape& shape, F&& f) {
  int64_t total = Product(shape);
  if (total == 0) return;
  int rank = static_cast<int>(shape.size());
  Shape idx(static_cast<size_t>(rank), 0);  // inline up to rank 8
  for (int64_t i = 0; i < total; ++i) {
    f(i, idx);
    for (int ax = rank - 1; ax >= 0; --ax) {
      if (++idx[ax] < shape[ax]) break;
      idx[ax] = 0;
    }
  }
}

inline Status AxisError(int64_t axis, int rank) {
  return Status::Error("axis " + std::to_string(axis) + " is out of range for rank " +
                       std::to_string(rank));
}

}  // namespace quilt::cpu::manip
