// Indexing ops: take (gather), gather_elements, gather_nd, scatter_elements, scatter_nd, one_hot,
// nonzero, compress, unique, topk. Every index read from a tensor is checked before use.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "targets/cpu/kernels/manip_util.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

using namespace manip;  // NOLINT

// An index into an axis of size n: negative counts from the end; an error outside [-n, n).
Status NormalizeIndex(int64_t v, int64_t n, int64_t* out) {
  if (v < -n || v >= n) {
    return Status::Error("index " + std::to_string(v) + " is out of bounds for an axis of size " +
                         std::to_string(n));
  }
  *out = v < 0 ? v + n : v;
  return Status::Ok();
}

// ---- take, gather_elements, gather_nd ---------------------------------------------------------

Status Take(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& ind = *ctx.input(1);
  if (x.rank() == 0) return Status::Error("cannot take from a scalar");
  int64_t axis = ctx.attrs().Int("axis", 0);
  if (!NormalizeAxis(&axis, x.rank())) return AxisError(axis, x.rank());
  std::string mode(ctx.attrs().Str("mode", "fast"));
  // This thread's, kept from run to run (the workers read it through the reference).
  thread_local std::vector<int64_t> kept_idx1;
  std::vector<int64_t>& idx = kept_idx1;
  QUILT_RETURN_IF_ERROR(ReadInts(&ind, "indices", &idx));
  int64_t n = x.shape[axis];
  for (int64_t& i : idx) {
    if (mode == "clip") {
      if (n == 0) return Status::Error("cannot take from an empty axis");
      i = std::clamp<int64_t>(i, 0, n - 1);
    } else if (mode == "wrap") {
      if (n == 0) return Status::Error("cannot take from an empty axis");
      i = ((i % n) + n) % n;
    } else if (i < -n || i >= n) {
      return Status::Error("index " + std::to_string(i) + " is out of bounds for axis " +
                           std::to_string(axis) + " of size " + std::to_string(n));
    } else if (i < 0) {
      i += n;
    }
  }
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ind.shape.begin(), ind.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  int64_t outer = Product(x.shape, 0, axis), inner = Product(x.shape, axis + 1);
  int64_t m = static_cast<int64_t>(idx.size());
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < m; ++j) {
      CopyBytes(dst + ((o * m + j) * inner) * eb, src + ((o * n + idx[j]) * inner) * eb,
                inner * eb);
    }
  }
  return Status::Ok();
}

Status GatherElements(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& ind = *ctx.input(1);
  int rank = x.rank();
  if (ind.rank() != rank) return Status::Error("data and indices must have the same rank");
  int64_t axis = ctx.attrs().Int("axis", 0);
  if (!NormalizeAxis(&axis, rank)) return AxisError(axis, rank);
  for (int d = 0; d < rank; ++d) {
    if (d != axis && ind.shape[d] > x.shape[d]) {
      return Status::Error("indices has shape " + rt::ShapeString(ind.shape) +
                           ", larger than data " + rt::ShapeString(x.shape) + " on axis " +
                           std::to_string(d));
    }
  }
  // This thread's, kept from run to run (the workers read it through the reference).
  thread_local std::vector<int64_t> kept_idx2;
  std::vector<int64_t>& idx = kept_idx2;
  QUILT_RETURN_IF_ERROR(ReadInts(&ind, "indices", &idx));
  for (int64_t& i : idx) QUILT_RETURN_IF_ERROR(NormalizeIndex(i, x.shape[axis], &i));
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, ind.shape, &y));
  Shape strides = Strides(x.shape);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  ForEachIndex(ind.shape, [&](int64_t i, const Shape& at) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) off += (d == axis ? idx[i] : at[d]) * strides[d];
    std::memcpy(dst + i * eb, src + off * eb, eb);
  });
  return Status::Ok();
}

// Checks the shapes of gather_nd / scatter_nd: indices (..., k) into data of rank r with b batch
// dims. Sets the element offsets (within a batch of data) of every index tuple.
Status NdOffsets(const Tensor& x, const Tensor& ind, int64_t b, std::vector<int64_t>* offsets,
                 int64_t* k_out) {
  int r = x.rank(), q = ind.rank();
  if (q < 1) return Status::Error("indices must have rank >= 1");
  int64_t k = ind.shape.back();
  if (b < 0 || b >= std::min(r, q) || k < 1 || b + k > r) {
    return Status::Error("indices.shape[-1] = " + std::to_string(k) + " with batch_dims " +
                         std::to_string(b) + " does not fit data of rank " + std::to_string(r));
  }
  for (int64_t d = 0; d < b; ++d) {
    if (x.shape[d] != ind.shape[d]) {
      return Status::Error("the batch dims of data " + rt::ShapeString(x.shape) + " and indices " +
                           rt::ShapeString(ind.shape) + " differ");
    }
  }
  // This thread's, kept from run to run (the workers read it through the reference).
  thread_local std::vector<int64_t> kept_idx3;
  std::vector<int64_t>& idx = kept_idx3;
  QUILT_RETURN_IF_ERROR(ReadInts(&ind, "indices", &idx));
  Shape slice(x.shape.begin() + b, x.shape.end());
  Shape strides = Strides(slice);
  int64_t tuples = static_cast<int64_t>(idx.size()) / k;
  offsets->assign(tuples, 0);
  for (int64_t t = 0; t < tuples; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = 0;  // set by NormalizeIndex; GCC at -O3 cannot always see it
      QUILT_RETURN_IF_ERROR(NormalizeIndex(idx[t * k + j], slice[j], &v));
      (*offsets)[t] += v * strides[j];
    }
  }
  *k_out = k;
  return Status::Ok();
}

Status GatherND(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& ind = *ctx.input(1);
  int64_t b = ctx.attrs().Int("batch_dims", 0);
  std::vector<int64_t> offsets;
  int64_t k = 0;
  QUILT_RETURN_IF_ERROR(NdOffsets(x, ind, b, &offsets, &k));
  Shape out(ind.shape.begin(), ind.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + k, x.shape.end());
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  int64_t batches = Product(x.shape, 0, b);
  int64_t per_batch = batches ? static_cast<int64_t>(offsets.size()) / batches : 0;
  int64_t slice = Product(x.shape, b + k), batch_size = Product(x.shape, b);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  for (int64_t t = 0; t < static_cast<int64_t>(offsets.size()); ++t) {
    int64_t batch = per_batch ? t / per_batch : 0;
    CopyBytes(dst + t * slice * eb, src + (batch * batch_size + offsets[t]) * eb, slice * eb);
  }
  return Status::Ok();
}

// ---- scatter_elements, scatter_nd -------------------------------------------------------------

enum class Reduction { kUpdate, kAdd, kMul, kMax, kMin };

Status ParseReduction(std::string_view s, Reduction* r) {
  if (s == "update" || s == "none") {
    *r = Reduction::kUpdate;
  } else if (s == "add") {
    *r = Reduction::kAdd;
  } else if (s == "mul") {
    *r = Reduction::kMul;
  } else if (s == "max") {
    *r = Reduction::kMax;
  } else if (s == "min") {
    *r = Reduction::kMin;
  } else {
    return Status::Error("unknown reduction '" + std::string(s) + "'");
  }
  return Status::Ok();
}

// a (op) b, integers wrapping around instead of overflowing.
template <typename T>
T Combine(Reduction r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (r) {
      case Reduction::kAdd:
      case Reduction::kMax:
        return a || b;
      case Reduction::kMul:
      case Reduction::kMin:
        return a && b;
      default:
        return b;
    }
  } else {
    using C = Compute<T>;
    C x = Load(a), y = Load(b);
    switch (r) {
      case Reduction::kAdd:
        if constexpr (std::is_integral_v<C>) {
          return static_cast<T>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
        } else {
          return Store<T>(x + y);
        }
      case Reduction::kMul:
        if constexpr (std::is_integral_v<C>) {
          return static_cast<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
        } else {
          return Store<T>(x * y);
        }
      case Reduction::kMax:
        return y > x ? b : a;
      case Reduction::kMin:
        return y < x ? b : a;
      default:
        return b;
    }
  }
}

// Copies data to output 0 and calls apply(dst, src_updates) on it.
template <typename F>
Status ScatterCommon(KernelContext& ctx, const Tensor& x, const Tensor& upd, Reduction red,
                     F&& pairs) {
  if (upd.dtype != x.dtype) return Status::Error("updates has a different element type");
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
  CopyBytes(y->data, x.data, x.ByteSize());
  if (red == Reduction::kUpdate) {
    size_t eb = 0;
    QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
    auto* dst = static_cast<uint8_t*>(y->data);
    const auto* src = static_cast<const uint8_t*>(upd.data);
    pairs([&](int64_t d, int64_t s, int64_t count) {
      CopyBytes(dst + d * eb, src + s * eb, count * eb);
    });
    return Status::Ok();
  }
  return VisitAll(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = y->MutableData<T>();
    const T* src = upd.Data<T>();
    pairs([&](int64_t d, int64_t s, int64_t count) {
      for (int64_t i = 0; i < count; ++i) dst[d + i] = Combine<T>(red, dst[d + i], src[s + i]);
    });
    return Status::Ok();
  });
}

Status ScatterElements(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& ind = *ctx.input(1);
  const Tensor& upd = *ctx.input(2);
  int rank = x.rank();
  Reduction red = Reduction::kUpdate;  // set by ParseReduction
  QUILT_RETURN_IF_ERROR(ParseReduction(ctx.attrs().Str("reduction", "update"), &red));
  if (ind.rank() != rank || upd.shape != ind.shape) {
    return Status::Error("indices " + rt::ShapeString(ind.shape) + " and updates " +
                         rt::ShapeString(upd.shape) + " must have one shape of the rank of data");
  }
  int64_t axis = ctx.attrs().Int("axis", 0);
  if (!NormalizeAxis(&axis, rank)) return AxisError(axis, rank);
  for (int d = 0; d < rank; ++d) {
    if (d != axis && ind.shape[d] > x.shape[d]) {
      return Status::Error("indices has shape " + rt::ShapeString(ind.shape) +
                           ", larger than data " + rt::ShapeString(x.shape));
    }
  }
  // This thread's, kept from run to run (the workers read it through the reference).
  thread_local std::vector<int64_t> kept_idx4;
  std::vector<int64_t>& idx = kept_idx4;
  QUILT_RETURN_IF_ERROR(ReadInts(&ind, "indices", &idx));
  for (int64_t& i : idx) QUILT_RETURN_IF_ERROR(NormalizeIndex(i, x.shape[axis], &i));
  Shape strides = Strides(x.shape);
  return ScatterCommon(ctx, x, upd, red, [&](auto&& apply) {
    ForEachIndex(ind.shape, [&](int64_t i, const Shape& at) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) off += (d == axis ? idx[i] : at[d]) * strides[d];
      apply(off, i, 1);
    });
  });
}

Status ScatterND(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& ind = *ctx.input(1);
  const Tensor& upd = *ctx.input(2);
  Reduction red = Reduction::kUpdate;  // set by ParseReduction
  QUILT_RETURN_IF_ERROR(ParseReduction(ctx.attrs().Str("reduction", "update"), &red));
  if (ind.rank() < 1) return Status::Error("indices must have rank >= 1");
  int64_t k = ind.shape.back();
  if (k < 1 || k > x.rank()) {
    return Status::Error("indices.shape[-1] = " + std::to_string(k) +
                         " does not fit data of rank " + std::to_string(x.rank()));
  }
  std::vector<int64_t> offsets;
  QUILT_RETURN_IF_ERROR(NdOffsets(x, ind, 0, &offsets, &k));
  Shape want(ind.shape.begin(), ind.shape.end() - 1);
  want.insert(want.end(), x.shape.begin() + k, x.shape.end());
  if (upd.shape != want) {
    return Status::Error("updates has shape " + rt::ShapeString(upd.shape) + ", expected " +
                         rt::ShapeString(want));
  }
  int64_t slice = Product(x.shape, k);
  return ScatterCommon(ctx, x, upd, red, [&](auto&& apply) {
    for (size_t t = 0; t < offsets.size(); ++t) {
      apply(offsets[t], static_cast<int64_t>(t) * slice, slice);
    }
  });
}

// ---- one_hot
// -------------------------------------------------------------------------------------

Status OneHot(KernelContext& ctx) {
  const Tensor& ind = *ctx.input(0);
  const Tensor& values = *ctx.input(2);
  double depth_v;
  QUILT_RETURN_IF_ERROR(ReadScalar(ctx.input(1), "depth", &depth_v));
  int64_t depth;
  if (!DoubleToInt(depth_v, &depth) || depth < 1 || depth > (int64_t{1} << 40)) {
    return Status::Error("depth must be a positive integer");
  }
  if (values.NumElements() != 2) {
    return Status::Error("values must hold two elements [off_value, on_value]");
  }
  int out_rank = ind.rank() + 1;
  int64_t axis = ctx.attrs().Int("axis", -1);
  if (!NormalizeAxis(&axis, out_rank)) return AxisError(axis, out_rank);
  Shape out = ind.shape;
  out.insert(out.begin() + axis, depth);
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(values.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, values.dtype, out, &y));
  int64_t outer = Product(ind.shape, 0, axis), inner = Product(ind.shape, axis);
  const auto* off_v = static_cast<const uint8_t*>(values.data);
  const auto* on_v = off_v + eb;
  auto* dst = static_cast<uint8_t*>(y->data);
  // Every element the off value first: one copy, then copies of what is written so far, doubling.
  size_t total = static_cast<size_t>(y->NumElements()) * eb;
  if (total > 0) {
    std::memcpy(dst, off_v, eb);
    for (size_t done = eb; done < total; done *= 2) {
      std::memcpy(dst + done, dst, std::min(done, total - done));
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double v;
      QUILT_RETURN_IF_ERROR(ReadDouble(&ind, o * inner + i, "indices", &v));
      v = std::trunc(v);
      if (!(v >= -static_cast<double>(depth) && v < static_cast<double>(depth))) continue;
      int64_t at = static_cast<int64_t>(v);
      if (at < 0) at += depth;
      std::memcpy(dst + ((o * depth + at) * inner + i) * eb, on_v, eb);
    }
  }
  return Status::Ok();
}

// ---- nonzero, compress -----------------------------------------------------------------------

// Whether element i of x is not zero.
Status NonzeroMask(const Tensor& x, std::vector<bool>* mask) {
  int64_t n = x.NumElements();
  mask->assign(n, false);
  return VisitAll(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.Data<T>();
    for (int64_t i = 0; i < n; ++i) (*mask)[i] = !(Load(p[i]) == 0);
    return Status::Ok();
  });
}

Status Nonzero(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  std::vector<bool> mask;
  QUILT_RETURN_IF_ERROR(NonzeroMask(x, &mask));
  int64_t count = std::count(mask.begin(), mask.end(), true);
  int rows = std::max(1, x.rank());
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, DType::kInt64, {rows, count}, &y));
  int64_t* p = y->MutableData<int64_t>();
  int64_t col = 0;
  Shape shape = x.rank() == 0 ? Shape{1} : x.shape;
  ForEachIndex(shape, [&](int64_t i, const Shape& at) {
    if (!mask[i]) return;
    for (int r = 0; r < rows; ++r) p[r * count + col] = x.rank() == 0 ? 0 : at[r];
    ++col;
  });
  return Status::Ok();
}

Status Compress(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& cond = *ctx.input(1);
  if (cond.rank() != 1) return Status::Error("condition must be 1-D");
  std::vector<bool> keep;
  QUILT_RETURN_IF_ERROR(NonzeroMask(cond, &keep));
  bool has_axis = ctx.attrs().Has("axis");
  int64_t axis = ctx.attrs().Int("axis", 0);
  Shape shape = x.shape;
  if (!has_axis) {
    shape = {x.NumElements()};
    axis = 0;
  } else if (!NormalizeAxis(&axis, x.rank())) {
    return AxisError(axis, x.rank());
  }
  int64_t dim = shape[axis];
  for (size_t i = dim; i < keep.size(); ++i) {
    if (keep[i]) return Status::Error("condition selects past the end of the axis");
  }
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < dim && i < static_cast<int64_t>(keep.size()); ++i) {
    if (keep[i]) picked.push_back(i);
  }
  Shape out = shape;
  out[axis] = static_cast<int64_t>(picked.size());
  size_t eb = 0;
  QUILT_RETURN_IF_ERROR(ElementBytes(x.dtype, &eb));
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  int64_t outer = Product(shape, 0, axis), inner = Product(shape, axis + 1);
  int64_t m = static_cast<int64_t>(picked.size());
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y->data);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < m; ++j) {
      CopyBytes(dst + (o * m + j) * inner * eb, src + (o * dim + picked[j]) * inner * eb,
                inner * eb);
    }
  }
  return Status::Ok();
}

// ---- unique ----------------------------------------------------------------------------------

// A total order on values: NaN after everything, NaNs equal.
template <typename C>
int CompareValues(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

Status Unique(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  bool sorted = ctx.attrs().Bool("sorted", true);
  Shape shape = x.shape;
  int64_t axis = 0;
  if (ctx.attrs().Has("axis")) {
    axis = ctx.attrs().Int("axis");
    if (!NormalizeAxis(&axis, x.rank())) return AxisError(axis, x.rank());
  } else {
    shape = {x.NumElements()};
  }
  int64_t n = shape[axis];
  int64_t outer = Product(shape, 0, axis), inner = Product(shape, axis + 1);
  return VisitAll(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, bool>, bool, Compute<T>>;
    const T* p = x.Data<T>();
    // Compares slices a and b along the axis.
    auto cmp = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          int c = CompareValues<C>(static_cast<C>(Load(p[(o * n + a) * inner + i])),
                                   static_cast<C>(Load(p[(o * n + b) * inner + i])));
          if (c) return c;
        }
      }
      return 0;
    };
    // Unique slices in order of first occurrence.
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    std::vector<int64_t> group_of(n);  // index of the group in `order`-sorted unique list
    std::vector<int64_t> firsts, counts;
    for (int64_t j = 0; j < n; ++j) {
      if (j == 0 || cmp(order[j - 1], order[j]) != 0) {
        firsts.push_back(order[j]);
        counts.push_back(0);
      }
      group_of[order[j]] = static_cast<int64_t>(firsts.size()) - 1;
      ++counts.back();
    }
    int64_t m = static_cast<int64_t>(firsts.size());
    // rank[g]: where group g goes in the output.
    std::vector<int64_t> rank(m);
    std::iota(rank.begin(), rank.end(), 0);
    if (!sorted) {
      std::vector<int64_t> by_first(m);
      std::iota(by_first.begin(), by_first.end(), 0);
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
      for (int64_t r = 0; r < m; ++r) rank[by_first[r]] = r;
    }
    std::vector<int64_t> out_first(m), out_count(m), inverse(n);
    for (int64_t g = 0; g < m; ++g) {
      out_first[rank[g]] = firsts[g];
      out_count[rank[g]] = counts[g];
    }
    for (int64_t j = 0; j < n; ++j) inverse[j] = rank[group_of[j]];
    Shape yshape = shape;
    yshape[axis] = m;
    for (int o = 0; o < ctx.num_outputs() && o < 4; ++o) {
      Tensor* y;
      if (o == 0) {
        QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, yshape, &y));
        T* q = y->MutableData<T>();
        for (int64_t a = 0; a < outer; ++a) {
          for (int64_t g = 0; g < m; ++g) {
            for (int64_t i = 0; i < inner; ++i) {
              q[(a * m + g) * inner + i] = p[(a * n + out_first[g]) * inner + i];
            }
          }
        }
        continue;
      }
      const std::vector<int64_t>& v = o == 1 ? out_first : o == 2 ? inverse : out_count;
      QUILT_RETURN_IF_ERROR(ctx.Output(o, DType::kInt64, {static_cast<int64_t>(v.size())}, &y));
      CopyBytes(y->data, v.data(), sizeof(int64_t) * v.size());
    }
    return Status::Ok();
  });
}

// ---- topk ------------------------------------------------------------------------------------

Status Topk(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.rank() == 0) return Status::Error("expects a tensor of rank >= 1");
  int64_t k = ctx.attrs().Int("k", 0);
  int64_t axis = ctx.attrs().Int("axis", -1);
  bool largest = ctx.attrs().Bool("largest", true);
  DType index_dtype = ctx.attrs().Dtype("dtype", DType::kInt64);
  if (!NormalizeAxis(&axis, x.rank())) return AxisError(axis, x.rank());
  int64_t n = x.shape[axis];
  if (k < 0 || k > n) {
    return Status::Error("k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "]");
  }
  if (index_dtype != DType::kInt64 && index_dtype != DType::kInt32) {
    return Status::Error("the index type must be int32 or int64");
  }
  Shape out = x.shape;
  out[axis] = k;
  Tensor *values, *indices;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &values));
  QUILT_RETURN_IF_ERROR(ctx.Output(1, index_dtype, out, &indices));
  int64_t outer = Product(x.shape, 0, axis), inner = Product(x.shape, axis + 1);
  return VisitNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T* p = x.Data<T>();
    T* pv = values->MutableData<T>();
    std::vector<int64_t> order(n);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return Load(p[(o * n + j) * inner + i]); };
        std::iota(order.begin(), order.end(), 0);
        // Stable: equal values keep the lower index first. NaN counts as the largest value.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          int c = CompareValues<C>(at(a), at(b));
          return largest ? c > 0 : c < 0;
        });
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = (o * k + j) * inner + i;
          pv[dst] = p[(o * n + order[j]) * inner + i];
          if (index_dtype == DType::kInt64) {
            indices->MutableData<int64_t>()[dst] = order[j];
          } else {
            indices->MutableData<int32_t>()[dst] = static_cast<int32_t>(order[j]);
          }
        }
      }
    }
    return Status::Ok();
  });
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel("take", Take),
    Kernel("gather_elements", GatherElements),
    Kernel("gather_nd", GatherND),
    Kernel("scatter_elements", ScatterElements),
    Kernel("scatter_nd", ScatterND),
    Kernel("one_hot", OneHot),
    Kernel("nonzero", Nonzero),
    Kernel("compress", Compress),
    Kernel("unique", Unique),
    Kernel("topk", Topk),
};

}  // namespace

std::span<const rt::KernelEntry> IndexKernels() { return kKernels; }

}  // namespace quilt::cpu
