// Layout and shape ops: reshape, transpose, concat, expand/squeeze, shapes as values, broadcast,
// fill, arange, eye, slice, pad, split, tile, triu/tril, reverse_sequence, bitcast. The indexing
// ops are in index.cc.
//
// Most of these only move data: they work on element bytes, so one definition covers every
// whole-byte element type (sub-byte types are refused unless the op copies the whole buffer).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>

#include "targets/cpu/kernels/manip_util.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

using namespace manip;  // NOLINT

// Output 0 with the bytes of input 0 and a new shape.
Status CopyWithShape(KernelContext& ctx, const Tensor& x, const Shape& shape) {
  if (Product(shape) != x.NumElements()) {
    return Status::Error("cannot give " + std::to_string(x.NumElements()) + " elements the shape " +
                         rt::ShapeString(shape));
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, shape, &y));
  if (y->data != x.data) CopyBytes(y->data, x.data, x.ByteSize());  // in place: nothing to copy
  return Status::Ok();
}

// ---- reshape, expand_dims, squeeze, bitcast -------------------------------------------------

Status Reshape(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  thread_local std::vector<int64_t> dims;  // kept from step to step: no allocation in a run
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(1), "shape", &dims));
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer_at >= 0) return Status::Error("more than one -1 in the new shape");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (dims[i] < 0) return Status::Error("negative dimension " + std::to_string(dims[i]));
    if (dims[i] != 0 && known > std::numeric_limits<int64_t>::max() / dims[i]) {
      return Status::Error("the new shape is too large");
    }
    known *= dims[i];
  }
  int64_t total = x.NumElements();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return Status::Error("cannot reshape " + std::to_string(total) + " elements with -1 and " +
                           std::to_string(known) + " others");
    }
    dims[infer_at] = total / known;
  }
  return CopyWithShape(ctx, x, dims);
}

Status ExpandDims(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  std::span<const int64_t> axes = ctx.attrs().IntsView("axis");
  int out_rank = x.rank() + static_cast<int>(axes.size());
  // This thread's, kept from step to step (as the output's shape): no allocation in a run.
  thread_local std::vector<char> is_new;
  is_new.assign(static_cast<size_t>(out_rank), 0);
  for (int64_t a : axes) {
    int64_t n = a;
    if (!NormalizeAxis(&n, out_rank)) return AxisError(a, out_rank);
    if (is_new[n]) return Status::Error("axis " + std::to_string(a) + " appears twice");
    is_new[n] = 1;
  }
  thread_local Shape out;
  out.clear();
  int j = 0;
  for (int i = 0; i < out_rank; ++i) out.push_back(is_new[i] ? 1 : x.shape[j++]);
  return CopyWithShape(ctx, x, out);
}

Status Squeeze(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  // This thread's, kept from step to step (as the output's shape): no allocation in a run.
  thread_local std::vector<char> drop;
  drop.assign(static_cast<size_t>(x.rank()), 0);
  if (ctx.attrs().Has("axis")) {
    for (int64_t a : ctx.attrs().IntsView("axis")) {
      int64_t n = a;
      if (!NormalizeAxis(&n, x.rank())) return AxisError(a, x.rank());
      if (x.shape[n] != 1) {
        return Status::Error("cannot squeeze axis " + std::to_string(a) + " of size " +
                             std::to_string(x.shape[n]));
      }
      drop[n] = 1;
    }
  } else {
    for (int i = 0; i < x.rank(); ++i) drop[i] = x.shape[i] == 1;
  }
  thread_local Shape out;
  out.clear();
  for (int i = 0; i < x.rank(); ++i) {
    if (!drop[i]) out.push_back(x.shape[i]);
  }
  return CopyWithShape(ctx, x, out);
}

Status Bitcast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  DType to = ctx.attrs().Dtype("dtype");
  if (rt::DTypeBits(to) != rt::DTypeBits(x.dtype) || rt::DTypeBits(to) == 0) {
    return Status::Error("cannot bitcast " + std::string(rt::DTypeName(x.dtype)) + " to " +
                         std::string(rt::DTypeName(to)));
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, to, x.shape, &y));
  CopyBytes(y->data, x.data, x.ByteSize());
  return Status::Ok();
}

// ---- permute_dims, concat, tile ---------------------------------------------------------------

Status PermuteDims(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int rank = x.rank();
  Shape perm(rank);
  if (ctx.attrs().Has("axes")) {
    Shape axes = ctx.attrs().Ints("axes");
    if (static_cast<int>(axes.size()) != rank) {
      return Status::Error("axes has " + std::to_string(axes.size()) + " entries for rank " +
                           std::to_string(rank));
    }
    rt::InlineVector<bool, 8> seen(rank, false);
    for (int i = 0; i < rank; ++i) {
      int64_t a = axes[i];
      if (!NormalizeAxis(&a, rank)) return AxisError(axes[i], rank);
      if (seen[a]) return Status::Error("axis " + std::to_string(axes[i]) + " appears twice");
      seen[a] = true;
      perm[i] = a;
    }
  } else {
    for (int i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Shape out(rank);
  for (int i = 0; i < rank; ++i) out[i] = x.shape[perm[i]];
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  Shape in_strides = Strides(x.shape), strides(rank);
  for (int k = 0; k < rank; ++k) strides[k] = in_strides[perm[k]];
  CopyStrided(x.data, out, strides, eb, y->data, ctx.thread_pool());
  return Status::Ok();
}

// dst[o * row + i] = src[o * chunk + i] for i < chunk, o < outer: the pieces of one concat input
// (elements of 4 or 8 bytes, as unsigned integers: the bits are copied).
template <typename T>
void CopyPieces(const T* src, int64_t chunk, int64_t outer, int64_t row, T* dst) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < chunk; ++i) dst[o * row + i] = src[o * chunk + i];
  }
}

Status Concat(KernelContext& ctx) {
  int begin = ctx.ArgBegin(0), count = ctx.ArgSize(0);
  if (count < 1) return Status::Error("concat needs at least one tensor");
  const Tensor& first = *ctx.input(begin);
  int rank = first.rank();
  int64_t axis = ctx.attrs().Int("axis", 0);
  if (!NormalizeAxis(&axis, rank)) return AxisError(axis, rank);
  Shape out = first.shape;
  out[axis] = 0;
  for (int t = 0; t < count; ++t) {
    const Tensor* p = ctx.input(begin + t);
    if (!p) return Status::Error("tensor " + std::to_string(t) + " is missing");
    if (p->dtype != first.dtype) return Status::Error("the tensors have different element types");
    if (p->rank() != rank) return Status::Error("the tensors have different ranks");
    for (int d = 0; d < rank; ++d) {
      if (d != axis && p->shape[d] != first.shape[d]) {
        return Status::Error("tensor " + std::to_string(t) + " has shape " +
                             rt::ShapeString(p->shape) + ", which differs from " +
                             rt::ShapeString(first.shape) + " outside axis " +
                             std::to_string(axis));
      }
    }
    out[axis] += p->shape[axis];
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(first.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, first.dtype, out, &y));
  int64_t outer = Product(out, 0, axis), inner = Product(out, axis + 1);
  auto* dst = static_cast<uint8_t*>(y->data);
  int64_t row = out[axis] * inner;  // elements of one outer step of the output
  // A large concat on the step's threads: a copy is memory-bound, and two cores move more bytes
  // than one. Many outer steps (of pieces of some size) are split among the threads here; a few
  // large pieces each go to CopyStrided, which splits a long run into blocks. The same bytes land
  // in the same places either way.
  const bool parallel =
      ctx.threads() > 1 && y->NumElements() * static_cast<int64_t>(eb) >= kParallelCopyBytes;
  const bool many_steps = outer >= 4 * ctx.threads();
  if (parallel && many_steps) {
    bool pieces_of_some_size = true;
    for (int t = 0; t < count; ++t) {
      pieces_of_some_size &=
          ctx.input(begin + t)->shape[axis] * inner * static_cast<int64_t>(eb) > 32;
    }
    if (pieces_of_some_size) {
      int64_t grain = std::max<int64_t>(1, kParallelCopyBytes / std::max<int64_t>(1, row * eb));
      ctx.ParallelFor(outer, grain, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          int64_t at = 0;
          for (int t = 0; t < count; ++t) {
            const Tensor& p = *ctx.input(begin + t);
            int64_t chunk = p.shape[axis] * inner;
            CopyBytes(dst + (o * row + at * inner) * eb,
                      static_cast<const uint8_t*>(p.data) + o * chunk * eb, chunk * eb);
            at += p.shape[axis];
          }
        }
      });
      return Status::Ok();
    }
  }
  int64_t at = 0;  // where the current tensor starts along the axis
  for (int t = 0; t < count; ++t) {
    const Tensor& p = *ctx.input(begin + t);
    int64_t chunk = p.shape[axis] * inner;
    const auto* src = static_cast<const uint8_t*>(p.data);
    if (outer == 1 && src == dst + at * inner * static_cast<int64_t>(eb)) {
      at += p.shape[axis];  // made in its place in the result (the memory plan, lower.cc)
      continue;
    }
    if (chunk * static_cast<int64_t>(eb) <= 32 && (eb == 4 || eb == 8)) {
      // Pieces of a few elements (a stack along a new last axis): element copies, not a
      // memcpy call per piece.
      if (eb == 4) {
        CopyPieces(reinterpret_cast<const uint32_t*>(src), chunk, outer, row,
                   reinterpret_cast<uint32_t*>(dst) + at * inner);
      } else {
        CopyPieces(reinterpret_cast<const uint64_t*>(src), chunk, outer, row,
                   reinterpret_cast<uint64_t*>(dst) + at * inner);
      }
    } else {
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t* to = dst + (o * row + at * inner) * eb;
        if (parallel && !many_steps) {
          CopyStrided(src + o * chunk * eb, {chunk}, {1}, eb, to, ctx.thread_pool());
        } else {
          CopyBytes(to, src + o * chunk * eb, chunk * eb);
        }
      }
    }
    at += p.shape[axis];
  }
  return Status::Ok();
}

Status TileImpl(KernelContext& ctx, std::span<const int64_t> r) {
  const Tensor& x = *ctx.input(0);
  if (static_cast<int>(r.size()) != x.rank()) {
    return Status::Error("repeats has " + std::to_string(r.size()) + " values for rank " +
                         std::to_string(x.rank()));
  }
  Shape out(x.rank());
  for (int i = 0; i < x.rank(); ++i) {
    if (r[i] < 0) return Status::Error("repeats must be non-negative");
    if (r[i] != 0 && x.shape[i] > std::numeric_limits<int64_t>::max() / r[i]) {
      return Status::Error("the tiled shape is too large");
    }
    out[i] = x.shape[i] * r[i];
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  Shape strides = Strides(x.shape);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  ForEachIndex(out, [&](int64_t i, const Shape& idx) {
    int64_t off = 0;
    for (int k = 0; k < x.rank(); ++k) off += (idx[k] % x.shape[k]) * strides[k];
    std::memcpy(dst + i * eb, src + off * eb, eb);
  });
  return Status::Ok();
}

Status Tile(KernelContext& ctx) { return TileImpl(ctx, ctx.attrs().Ints("repeats")); }

Status DynamicTile(KernelContext& ctx) {
  Shape r;
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(1), "repeats", &r));
  return TileImpl(ctx, r);
}

// ---- shapes as values ---------------------------------------------------------------------------

Status ShapeOf(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kInt64, {x.rank()}, &y));
  CopyBytes(y->data, x.shape.data(), sizeof(int64_t) * x.shape.size());
  return Status::Ok();
}

// shape_to_tensor and tensor_to_shape: both sides are 1-D int64 tensors at run time.
Status ShapeCopy(KernelContext& ctx) {
  Shape v;
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(0), "shape", &v));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kInt64, {static_cast<int64_t>(v.size())}, &y));
  CopyBytes(y->data, v.data(), sizeof(int64_t) * v.size());
  return Status::Ok();
}

Status SizeOf(KernelContext& ctx) {
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kInt64, {}, &y));
  *y->MutableData<int64_t>() = ctx.input(0)->NumElements();
  return Status::Ok();
}

// ---- broadcast_to, full, arange, eye_like ----------------------------------------------------

// ONNX Expand's bidirectional broadcasting (a superset of broadcasting x to the shape).
Status BroadcastTo(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Shape target;
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(1), "shape", &target));
  for (int64_t d : target) {
    if (d < 0) return Status::Error("negative dimension " + std::to_string(d) + " in the shape");
  }
  Shape out;
  if (!BroadcastShape(x.shape, target, &out)) {
    return Status::Error("cannot broadcast " + rt::ShapeString(x.shape) + " to " +
                         rt::ShapeString(target));
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  const Shape strides[1] = {BroadcastStrides(x.shape, out)};
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  ForEachBroadcast(out, strides, [&](int64_t i, const int64_t* off) {
    std::memcpy(dst + i * eb, src + off[0] * eb, eb);
  });
  return Status::Ok();
}

// Fills `n` elements of `y` with the value of the one-element tensor `v` converted to y's type.
Status FillWith(Tensor* y, const Tensor& v, int64_t n) {
  if (n == 0) return Status::Ok();
  if (v.NumElements() != 1) return Status::Error("the fill value must hold one element");
  if (v.dtype == y->dtype) {
    size_t eb = 0;
    QUILT_RETURN_IF_ERROR(ElementBytes(v.dtype, &eb));
    auto* dst = static_cast<uint8_t*>(y->data);
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * eb, v.data, eb);
    return Status::Ok();
  }
  double value;
  QUILT_RETURN_IF_ERROR(ReadScalar(&v, "fill_value", &value));
  return VisitAll(y->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T c = SaturateCast<T>(value);
    T* p = y->MutableData<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = c;
    return Status::Ok();
  });
}

Status Full(KernelContext& ctx) {
  Shape shape;
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(0), "shape", &shape));
  for (int64_t d : shape) {
    if (d < 0) return Status::Error("negative dimension " + std::to_string(d));
  }
  const Tensor& v = *ctx.input(1);
  DType dtype = ctx.attrs().Dtype("dtype", v.dtype);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, shape, &y));
  return FillWith(y, v, y->NumElements());
}

// A branch that cannot run for the model's shapes (kept so that the other branch compiles).
Status Fail(KernelContext& ctx) { return Status::Error(std::string(ctx.attrs().Str("message"))); }

Status Arange(KernelContext& ctx) {
  DType dtype = ctx.attrs().Dtype("dtype");
  if (dtype == DType::kVoid) dtype = ctx.output_dtype(0);
  const char* names[3] = {"start", "end", "step"};
  double v[3];
  for (int i = 0; i < 3; ++i) QUILT_RETURN_IF_ERROR(ReadScalar(ctx.input(i), names[i], &v[i]));
  bool integral = dtype != DType::kFloat32 && dtype != DType::kFloat64 &&
                  dtype != DType::kFloat16 && dtype != DType::kBFloat16;
  int64_t n = 0;
  if (integral) {
    // Exact integer arithmetic on the values as int64.
    int64_t s[3];
    for (int i = 0; i < 3; ++i) {
      if (!DoubleToInt(v[i], &s[i])) return Status::Error(std::string(names[i]) + " is invalid");
    }
    if (s[2] == 0) return Status::Error("step must not be zero");
    __int128 diff = static_cast<__int128>(s[1]) - s[0];
    __int128 len = 0;
    if ((diff > 0 && s[2] > 0) || (diff < 0 && s[2] < 0)) {
      __int128 step = s[2] > 0 ? s[2] : -static_cast<__int128>(s[2]);
      __int128 d = diff > 0 ? diff : -diff;
      len = (d + step - 1) / step;
    }
    if (len > (int64_t{1} << 40)) return Status::Error("the range is too long");
    n = static_cast<int64_t>(len);
    Tensor* y;
    QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, {n}, &y));
    return VisitInteger(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = y->MutableData<T>();
      for (int64_t i = 0; i < n; ++i) {
        p[i] = static_cast<T>(static_cast<uint64_t>(s[0]) +
                              static_cast<uint64_t>(i) * static_cast<uint64_t>(s[2]));
      }
      return Status::Ok();
    });
  }
  if (v[2] == 0) return Status::Error("step must not be zero");
  double count = std::ceil((v[1] - v[0]) / v[2]);
  if (std::isnan(count)) return Status::Error("the range is not finite");
  if (count > static_cast<double>(int64_t{1} << 40)) return Status::Error("the range is too long");
  n = count > 0 ? static_cast<int64_t>(count) : 0;
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, {n}, &y));
  return VisitFloat(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    T* p = y->MutableData<T>();
    C start = static_cast<C>(v[0]), step = static_cast<C>(v[2]);
    for (int64_t i = 0; i < n; ++i) p[i] = Store<T>(start + static_cast<C>(i) * step);
    return Status::Ok();
  });
}

Status EyeLike(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() != 2) return Status::Error("expects a 2-D tensor");
  DType dtype = ctx.attrs().Dtype("dtype", x.dtype);
  int64_t k = ctx.attrs().Int("k", 0);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, dtype, x.shape, &y));
  return VisitAll(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = y->MutableData<T>();
    int64_t rows = x.shape[0], cols = x.shape[1];
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) p[i * cols + j] = SaturateCast<T>(j - i == k ? 1 : 0);
    }
    return Status::Ok();
  });
}

// ---- slicing ---------------------------------------------------------------------------------

// ONNX Slice of one axis of size `dim`: the first index and the length, with ONNX's clamping.
void SliceAxis(int64_t dim, int64_t begin, int64_t end, int64_t step, int64_t* first,
               int64_t* len) {
  if (dim == 0) {
    *first = 0;
    *len = 0;
    return;
  }
  if (begin < 0) begin += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    begin = std::clamp<int64_t>(begin, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    *len = end > begin ? (end - begin - 1) / step + 1 : 0;
  } else {
    begin = std::clamp<int64_t>(begin, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // -step without overflow: step is at least INT64_MIN.
    uint64_t s = static_cast<uint64_t>(-(step + 1)) + 1;
    *len = begin > end ? static_cast<int64_t>(static_cast<uint64_t>(begin - end - 1) / s) + 1 : 0;
  }
  *first = begin;
}

Status SliceImpl(KernelContext& ctx, std::span<const int64_t> axes, std::span<const int64_t> begin,
                 std::span<const int64_t> end, std::span<const int64_t> strides) {
  const Tensor& x = *ctx.input(0);
  int rank = x.rank();
  if (begin.size() != axes.size() || end.size() != axes.size() || strides.size() != axes.size()) {
    return Status::Error("begin, end and strides must hold one value per axis (" +
                         std::to_string(axes.size()) + ")");
  }
  // This thread's, kept from step to step: no allocation in a run's steady state.
  thread_local std::vector<int64_t> first, step, view;
  thread_local Shape out;
  thread_local std::vector<char> seen;
  first.assign(static_cast<size_t>(rank), 0);
  step.assign(static_cast<size_t>(rank), 1);
  out.assign(x.shape.begin(), x.shape.end());
  seen.assign(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (!NormalizeAxis(&a, rank)) return AxisError(axes[i], rank);
    if (seen[a]) return Status::Error("axis " + std::to_string(axes[i]) + " appears twice");
    seen[a] = 1;
    if (strides[i] == 0) return Status::Error("a slice step must not be zero");
    SliceAxis(x.shape[a], begin[i], end[i], strides[i], &first[a], &out[a]);
    step[a] = strides[i];
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  if (y->NumElements() == 0) return Status::Ok();
  view.assign(static_cast<size_t>(rank), 0);
  int64_t base = 0, in_stride = 1;
  for (int k = rank - 1; k >= 0; in_stride *= x.shape[k], --k) {
    base += first[k] * in_stride;
    // An axis of one output element reads no second one, whatever its step (which may be near
    // 2^63); with two or more, |step| is below the dim and the product below the input's size.
    view[k] = out[k] > 1 ? step[k] * in_stride : 0;
  }
  CopyStrided(static_cast<const uint8_t*>(x.data) + base * static_cast<int64_t>(eb), out, view, eb,
              y->data, ctx.thread_pool());
  return Status::Ok();
}

Status StridedSlice(KernelContext& ctx) {
  const rt::AttrView& a = ctx.attrs();
  return SliceImpl(ctx, a.IntsView("axes"), a.IntsView("begin"), a.IntsView("end"),
                   a.IntsView("strides"));
}

Status DynamicStridedSlice(KernelContext& ctx) {
  Shape v[3];
  const char* names[3] = {"begin", "end", "strides"};
  for (int i = 0; i < 3; ++i) QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(i + 1), names[i], &v[i]));
  return SliceImpl(ctx, ctx.attrs().IntsView("axes"), v[0], v[1], v[2]);
}

// ---- padding ---------------------------------------------------------------------------------

// The source index along an axis of size n for output position i - before; -1 for the pad value.
enum class PadMode { kConstant, kEdge, kReflect, kWrap };

int64_t PadSource(int64_t p, int64_t n, PadMode mode) {
  if (p >= 0 && p < n) return p;
  if (mode == PadMode::kConstant) return -1;
  if (mode == PadMode::kEdge) return p < 0 ? 0 : n - 1;
  if (mode == PadMode::kWrap) return ((p % n) + n) % n;
  // reflect: mirror without repeating the edge, period 2 (n - 1).
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1);
  int64_t m = ((p % period) + period) % period;
  return m < n ? m : period - m;
}

Status PadImpl(KernelContext& ctx, std::span<const int64_t> width, std::string_view mode) {
  const Tensor& x = *ctx.input(0);
  const Tensor& value = *ctx.input(1);
  int rank = x.rank();
  if (static_cast<int>(width.size()) != 2 * rank) {
    return Status::Error("pad_width has " + std::to_string(width.size()) + " values for rank " +
                         std::to_string(rank));
  }
  PadMode pm;
  if (mode == "constant") {
    pm = PadMode::kConstant;
  } else if (mode == "edge") {
    pm = PadMode::kEdge;
  } else if (mode == "reflect") {
    pm = PadMode::kReflect;
  } else if (mode == "wrap") {
    pm = PadMode::kWrap;
  } else {
    return Status::Error("unknown pad mode '" + std::string(mode) + "'");
  }
  Shape out(rank);
  for (int i = 0; i < rank; ++i) {
    int64_t b = width[2 * i], e = width[2 * i + 1];
    const int64_t kLimit = int64_t{1} << 40;
    if (b > kLimit || e > kLimit || b < -kLimit || e < -kLimit) {
      return Status::Error("padding of axis " + std::to_string(i) + " is too large");
    }
    out[i] = x.shape[i] + b + e;
    if (out[i] < 0) {
      return Status::Error("padding axis " + std::to_string(i) + " by " + std::to_string(b) +
                           " and " + std::to_string(e) + " gives a negative size");
    }
    if (mode != "constant" && x.shape[i] == 0 && out[i] > 0) {
      return Status::Error("cannot pad an empty axis in " + std::string(mode) + " mode");
    }
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  if (mode == "constant") {
    if (value.dtype != x.dtype) return Status::Error("pad_value has a different element type");
    if (value.NumElements() != 1) return Status::Error("pad_value must hold one element");
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  if (y->NumElements() == 0) return Status::Ok();
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  const auto* fill = static_cast<const uint8_t*>(value.data);
  if (rank == 0) {
    std::memcpy(dst, src, eb);
    return Status::Ok();
  }
  // Constant padding: trailing axes that are not padded are one with the axis before them (its
  // padding whole rows of them), so that the rows below are long. (Another mode reads its
  // padding from inside the axis: there an axis stays itself.)
  Shape in_shape = x.shape, out_shape = out;
  Shape pads(width.begin(), width.end());
  while (pm == PadMode::kConstant && in_shape.size() > 1 && pads[pads.size() - 2] == 0 &&
         pads.back() == 0) {
    int64_t inner = in_shape.back();
    in_shape.pop_back();
    out_shape.pop_back();
    pads.resize(pads.size() - 2);
    in_shape.back() *= inner;
    out_shape.back() *= inner;
    pads[pads.size() - 2] *= inner;
    pads.back() *= inner;
  }
  // Row by row along the last axis: the source row from the outer indices (none: the row is
  // all padding), then the columns that read inside it as one copy, the others one by one.
  Shape strides = Strides(in_shape);
  const int last = static_cast<int>(in_shape.size()) - 1;
  const int64_t n = in_shape[last], cols = out_shape[last], b = pads[2 * last];
  const int64_t in_lo = std::clamp<int64_t>(b, 0, cols),
                in_hi = std::clamp<int64_t>(b + n, in_lo, cols);
  const int64_t e = static_cast<int64_t>(eb);  // element bytes, for offsets
  // The source column of each padded column, the same in every row (-1: the pad value), worked
  // out once rather than per row and column (a reflect pad of 80 x 832 samples spent 0.16 ms
  // in PadSource's divisions).
  thread_local std::vector<int64_t> kept_source;  // this thread's, kept from run to run
  std::vector<int64_t>& source = kept_source;
  source.resize(static_cast<size_t>(cols - (in_hi - in_lo)));
  {
    size_t i = 0;
    for (int64_t j = 0; j < in_lo; ++j) source[i++] = PadSource(j - b, n, pm);
    for (int64_t j = in_hi; j < cols; ++j) source[i++] = PadSource(j - b, n, pm);
  }
  // The padded columns of one row (row null: all of it padding, the pad value), each element a
  // move of a size known when compiling where the dtype's is 4 or 8 bytes (kBytes 0: eb).
  auto edges = [&](const uint8_t* row, uint8_t* to) {
    auto put = [&](auto tag) {
      constexpr size_t kBytes = decltype(tag)::value;
      const size_t bytes = kBytes ? kBytes : eb;
      size_t i = 0;
      auto one = [&](int64_t j) {
        int64_t p = row ? source[i] : -1;
        ++i;
        std::memcpy(to + j * e, p < 0 ? fill : row + p * e, bytes);
      };
      for (int64_t j = 0; j < in_lo; ++j) one(j);
      for (int64_t j = in_hi; j < cols; ++j) one(j);
    };
    if (eb == 4) return put(std::integral_constant<size_t, 4>{});
    if (eb == 8) return put(std::integral_constant<size_t, 8>{});
    put(std::integral_constant<size_t, 0>{});
  };
  Shape idx(static_cast<size_t>(last), 0);
  for (;;) {
    const uint8_t* row = src;
    for (int k = 0; k < last && row; ++k) {
      int64_t p = PadSource(idx[k] - pads[2 * k], in_shape[k], pm);
      row = p < 0 ? nullptr : row + p * strides[k] * e;
    }
    edges(row, dst);
    if (row && in_hi > in_lo) {
      std::memcpy(dst + in_lo * e, row + (in_lo - b) * e, static_cast<size_t>(in_hi - in_lo) * eb);
    } else {
      for (int64_t j = in_lo; j < in_hi; ++j) std::memcpy(dst + j * e, fill, eb);
    }
    dst += cols * e;
    int k = last - 1;
    for (; k >= 0 && ++idx[k] == out_shape[k]; --k) idx[k] = 0;
    if (k < 0) return Status::Ok();
  }
}

Status Pad(KernelContext& ctx) {
  return PadImpl(ctx, ctx.attrs().Ints("pad_width"), ctx.attrs().Str("pad_mode", "constant"));
}

Status DynamicPad(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Shape pads;
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(2), "pads", &pads));
  Shape axes = ctx.attrs().Ints("axes");
  if (pads.size() != 2 * axes.size()) {
    return Status::Error("pads has " + std::to_string(pads.size()) + " values for " +
                         std::to_string(axes.size()) + " axes");
  }
  Shape width(static_cast<size_t>(2 * x.rank()), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (!NormalizeAxis(&a, x.rank())) return AxisError(axes[i], x.rank());
    width[2 * a] = pads[i];
    width[2 * a + 1] = pads[i + axes.size()];
  }
  return PadImpl(ctx, width, ctx.attrs().Str("pad_mode", "constant"));
}

// ---- split -----------------------------------------------------------------------------------

Status Split(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int64_t axis = ctx.attrs().Int("axis", 0);
  if (!NormalizeAxis(&axis, x.rank())) return AxisError(axis, x.rank());
  int64_t dim = x.shape[axis];
  Shape idx = ctx.attrs().Ints("indices_or_sections");
  int64_t sections = ctx.attrs().Int("sections", 0);
  Shape sizes;  // inline up to 8 parts
  // Each part is an output: a count of parts past them is refused before it is listed.
  int64_t parts = sections > 0 ? sections : static_cast<int64_t>(idx.size()) + 1;
  if (parts > ctx.num_outputs()) {
    return Status::Error("the split gives " + std::to_string(parts) + " parts for " +
                         std::to_string(ctx.num_outputs()) + " outputs");
  }
  if (sections > 0) {
    int64_t chunk = (dim + sections - 1) / sections;
    for (int64_t i = 0; i < sections; ++i) {
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
    }
  } else {
    int64_t prev = 0;
    for (int64_t v : idx) {
      if (v < prev || v > dim) {
        return Status::Error("split index " + std::to_string(v) +
                             " is not ascending or past the size " + std::to_string(dim));
      }
      sizes.push_back(v - prev);
      prev = v;
    }
    sizes.push_back(dim - prev);
  }
  if (static_cast<int>(sizes.size()) != ctx.num_outputs()) {
    return Status::Error("the split gives " + std::to_string(sizes.size()) + " parts for " +
                         std::to_string(ctx.num_outputs()) + " outputs");
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  int64_t outer = Product(x.shape, 0, axis), inner = Product(x.shape, axis + 1);
  const auto* src = static_cast<const uint8_t*>(x.data);
  int64_t at = 0;
  for (size_t p = 0; p < sizes.size(); ++p) {
    Shape s = x.shape;
    s[axis] = sizes[p];
    Tensor* y;
    QUILT_RETURN_IF_ERROR(ctx.Output(static_cast<int>(p), x.dtype, s, &y));
    auto* dst = static_cast<uint8_t*>(y->data);
    int64_t chunk = sizes[p] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      CopyBytes(dst + o * chunk * eb, src + (o * dim + at) * inner * eb, chunk * eb);
    }
    at += sizes[p];
  }
  return Status::Ok();
}

// ---- triu, tril, reverse_sequence ------------------------------------------------------------

template <bool kUpper>
Status Trilu(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() < 2) return Status::Error("expects a tensor of rank >= 2");
  int64_t k = ctx.attrs().Int("k", 0);
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  int64_t batch = Product(x.shape, 0, x.rank() - 2);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        int64_t off = ((b * rows + i) * cols + j) * static_cast<int64_t>(eb);
        bool keep = kUpper ? j - i >= k : j - i <= k;
        if (keep) {
          std::memcpy(dst + off, src + off, eb);
        } else {
          std::memset(dst + off, 0, eb);
        }
      }
    }
  }
  return Status::Ok();
}

Status ReverseSequence(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  int rank = x.rank();
  if (rank < 2) return Status::Error("expects a tensor of rank >= 2");
  int64_t t_axis = ctx.attrs().Int("seq_axis", 0), b_axis = ctx.attrs().Int("batch_axis", 1);
  if (!NormalizeAxis(&t_axis, rank)) return AxisError(t_axis, rank);
  if (!NormalizeAxis(&b_axis, rank)) return AxisError(b_axis, rank);
  if (t_axis == b_axis) return Status::Error("seq_axis and batch_axis must differ");
  std::vector<int64_t> lens;
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(1), "seq_lengths", &lens));
  if (static_cast<int64_t>(lens.size()) != x.shape[b_axis]) {
    return Status::Error("seq_lengths has " + std::to_string(lens.size()) +
                         " values for a batch of " + std::to_string(x.shape[b_axis]));
  }
  for (int64_t l : lens) {
    if (l < 0 || l > x.shape[t_axis]) {
      return Status::Error("sequence length " + std::to_string(l) + " is outside [0, " +
                           std::to_string(x.shape[t_axis]) + "]");
    }
  }
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  Shape strides = Strides(x.shape);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  ForEachIndex(x.shape, [&](int64_t i, const Shape& idx) {
    int64_t t = idx[t_axis], len = lens[idx[b_axis]];
    int64_t off = i;
    if (t < len) off += (len - 1 - 2 * t) * strides[t_axis];
    std::memcpy(dst + i * eb, src + off * eb, eb);
  });
  return Status::Ok();
}

// Kernels of this family, by op name (see ir/ops/manip.def for each op's arguments and attributes).
constexpr rt::KernelEntry kKernels[] = {
    Kernel("reshape", Reshape),
    Kernel("permute_dims", PermuteDims),
    Kernel("concat", Concat),
    Kernel("expand_dims", ExpandDims),
    Kernel("squeeze", Squeeze),
    Kernel("shape_of", ShapeOf),
    Kernel("shape_to_tensor", ShapeCopy),
    Kernel("tensor_to_shape", ShapeCopy),
    Kernel("broadcast_to", BroadcastTo),
    Kernel("full", Full),
    Kernel("fail", Fail),
    Kernel("arange", Arange),
    Kernel("eye_like", EyeLike),
    Kernel("size", SizeOf),
    Kernel("strided_slice", StridedSlice),
    Kernel("dynamic_strided_slice", DynamicStridedSlice),
    Kernel("nn.pad", Pad),
    Kernel("dynamic_pad", DynamicPad),
    Kernel("split", Split),
    Kernel("tile", Tile),
    Kernel("dynamic_tile", DynamicTile),
    Kernel("triu", Trilu<true>),
    Kernel("tril", Trilu<false>),
    Kernel("reverse_sequence", ReverseSequence),
    Kernel("bitcast", Bitcast),
};

}  // namespace

std::span<const rt::KernelEntry> ManipKernels() { return kKernels; }

}  // namespace quilt::cpu
