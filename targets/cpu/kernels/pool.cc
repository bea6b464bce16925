// Pooling kernels of the conv family: max (with indices), average, Lp, adaptive average and max,
// max unpooling. Windows come from MakeWindow (conv.cc); padded cells never take part in a max
// or an Lp sum, and count in an average only with count_include_pad.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu::nn {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

Status CheckPoolInput(const Tensor& x) {
  if (x.rank() < 3 || x.rank() > 2 + kMaxSpatial) {
    return Status::Error("data must have rank 3 to 5, got shape " + rt::ShapeString(x.shape));
  }
  return Status::Ok();
}

}  // namespace

Status PoolWindow(const KernelContext& ctx, const Tensor& x, Window* w) {
  QUILT_RETURN_IF_ERROR(CheckPoolInput(x));
  size_t r = static_cast<size_t>(x.rank() - 2);
  Shape kernel;
  QUILT_RETURN_IF_ERROR(IntsAttr(ctx.attrs(), "pool_size", r, 1, &kernel));
  Shape in(x.shape.begin() + 2, x.shape.end());
  return MakeWindow(ctx.attrs(), in, kernel, w);
}

namespace {

Shape OutShape(const Tensor& x, const Window& w) {
  Shape s = {x.shape[0], x.shape[1]};
  for (int i = 0; i < w.rank; ++i) s.push_back(w.out[i]);
  return s;
}

// Calls f(plane, out_index, cells) for every output cell of every (n, c) plane, where `cells`
// lists the (spatial index into the plane) of each window cell inside the input, and
// `padded_count` the number of window cells inside the input or its explicit padding.
template <typename F>
void ForEachWindow(const Window& w, int64_t planes, F&& f) {
  std::vector<int64_t> cells;
  cells.reserve(static_cast<size_t>(w.KernelSize()));
  int64_t yi = 0;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          cells.clear();
          int64_t padded_count = 1;
          const int64_t o[kMaxSpatial] = {o0, o1, o2};
          for (int d = 0; d < kMaxSpatial; ++d) {
            int64_t cnt = 0;
            for (int64_t k = 0; k < w.kernel[d]; ++k) {
              int64_t i = o[d] * w.stride[d] - w.pad_begin[d] + k * w.dilation[d];
              if (i >= -w.pad_begin[d] && i < w.in[d] + w.pad_end[d]) ++cnt;
            }
            padded_count *= cnt;
          }
          for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
            int64_t i0 = o0 * w.stride[0] - w.pad_begin[0] + k0 * w.dilation[0];
            if (i0 < 0 || i0 >= w.in[0]) continue;
            for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
              int64_t i1 = o1 * w.stride[1] - w.pad_begin[1] + k1 * w.dilation[1];
              if (i1 < 0 || i1 >= w.in[1]) continue;
              for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
                int64_t i2 = o2 * w.stride[2] - w.pad_begin[2] + k2 * w.dilation[2];
                if (i2 < 0 || i2 >= w.in[2]) continue;
                cells.push_back((i0 * w.in[1] + i1) * w.in[2] + i2);
              }
            }
          }
          f(p, yi++, cells, padded_count);
        }
      }
    }
  }
}

// The lowest value of a compute type (-inf for floats).
template <typename C>
C Lowest() {
  if constexpr (std::numeric_limits<C>::has_infinity) {
    return -std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::lowest();
  }
}

template <bool kWithIndices>
Status MaxPoolImpl(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Window w;
  QUILT_RETURN_IF_ERROR(PoolWindow(ctx, x, &w));
  int64_t order = ctx.attrs().Int("storage_order", 0);
  if (order != 0 && order != 1) {
    return Status::Error("storage_order must be 0 or 1, got " + Str(order));
  }
  Shape shape = OutShape(x, w);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, shape, &y));
  int64_t* pi = nullptr;
  if (kWithIndices) {
    Tensor* idx;
    QUILT_RETURN_IF_ERROR(ctx.Output(1, DType::kInt64, shape, &idx));
    pi = idx->MutableData<int64_t>();
  }
  int64_t planes = x.shape[0] * x.shape[1];
  return VisitNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    ForEachWindow(w, planes,
                  [&](int64_t p, int64_t yi, const std::vector<int64_t>& cells, int64_t) {
                    const T* plane = px + p * w.InSize();
                    C best = Lowest<C>();
                    int64_t at = -1;
                    for (int64_t cell : cells) {
                      C v = Load(plane[cell]);
                      if (at < 0 || v > best) {
                        best = v;
                        at = cell;
                      }
                    }
                    py[yi] = Store<T>(best);
                    if (kWithIndices) {
                      int64_t spatial = std::max<int64_t>(at, 0);
                      if (order == 1) {
                        // Column-major over the spatial dims.
                        int64_t i2 = spatial % w.in[2], i1 = spatial / w.in[2] % w.in[1];
                        int64_t i0 = spatial / (w.in[1] * w.in[2]);
                        int64_t dims[kMaxSpatial] = {i0, i1, i2};
                        spatial = 0;
                        int64_t stride = 1;
                        for (int d = 0; d < w.rank; ++d) {
                          spatial += dims[d] * stride;
                          stride *= w.in[d];
                        }
                      }
                      pi[yi] = p * w.InSize() + spatial;
                    }
                  });
    return Status::Ok();
  });
}

}  // namespace

Status MaxPool(KernelContext& ctx) { return MaxPoolImpl<false>(ctx); }
Status MaxPoolWithIndices(KernelContext& ctx) { return MaxPoolImpl<true>(ctx); }

Status AvgPool(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Window w;
  QUILT_RETURN_IF_ERROR(PoolWindow(ctx, x, &w));
  bool include_pad = ctx.attrs().Bool("count_include_pad", false);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, OutShape(x, w), &y));
  int64_t planes = x.shape[0] * x.shape[1];
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    ForEachWindow(
        w, planes,
        [&](int64_t p, int64_t yi, const std::vector<int64_t>& cells, int64_t padded_count) {
          const T* plane = px + p * w.InSize();
          double sum = 0;
          for (int64_t cell : cells) sum += static_cast<double>(Load(plane[cell]));
          int64_t count = include_pad ? padded_count : static_cast<int64_t>(cells.size());
          double v = count > 0 ? sum / static_cast<double>(count) : 0.0;
          py[yi] = Store<T>(static_cast<Compute<T>>(v));
        });
    return Status::Ok();
  });
}

Status LpPool(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Window w;
  QUILT_RETURN_IF_ERROR(PoolWindow(ctx, x, &w));
  double pw = ctx.attrs().Float("p", 2.0);
  if (!(pw > 0)) return Status::Error("p must be positive");
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, OutShape(x, w), &y));
  int64_t planes = x.shape[0] * x.shape[1];
  return VisitFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    ForEachWindow(w, planes,
                  [&](int64_t p, int64_t yi, const std::vector<int64_t>& cells, int64_t) {
                    const T* plane = px + p * w.InSize();
                    double sum = 0;
                    for (int64_t cell : cells) {
                      sum += std::pow(std::abs(static_cast<double>(Load(plane[cell]))), pw);
                    }
                    py[yi] = Store<T>(static_cast<Compute<T>>(std::pow(sum, 1.0 / pw)));
                  });
    return Status::Ok();
  });
}

namespace {

// Adaptive pooling: output cell i of n over an input of m covers
// [floor(i * m / n), ceil((i + 1) * m / n)).
// The window of an adaptive pool of x (output_size), and its output.
Status AdaptiveWindow(KernelContext& ctx, const Tensor& x, Window* w, Tensor** y) {
  QUILT_RETURN_IF_ERROR(CheckPoolInput(x));
  size_t r = static_cast<size_t>(x.rank() - 2);
  Shape in(x.shape.begin() + 2, x.shape.end()), size;
  QUILT_RETURN_IF_ERROR(IntsAttr(ctx.attrs(), "output_size", r, -1, &size));
  w->rank = static_cast<int>(r);
  for (size_t i = 0; i < r; ++i) {
    w->in[i] = in[i];
    w->out[i] = size[i] == -1 ? in[i] : size[i];
    if (w->out[i] < 1) return Status::Error("output_size must be positive, got " + Str(size[i]));
  }
  return ctx.Output(0, x.dtype, OutShape(x, *w), y);
}

// Output cell i of n over an input of m: [AdaptiveBegin, AdaptiveEnd).
int64_t AdaptiveBegin(int64_t i, int64_t m, int64_t n) { return i * m / n; }
int64_t AdaptiveEnd(int64_t i, int64_t m, int64_t n) { return ((i + 1) * m + n - 1) / n; }

template <bool kMax>
Status AdaptivePool(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Window w;
  Tensor* y;
  QUILT_RETURN_IF_ERROR(AdaptiveWindow(ctx, x, &w, &y));
  int64_t planes = x.shape[0] * x.shape[1];
  auto begin = [&](int d, int64_t i) { return AdaptiveBegin(i, w.in[d], w.out[d]); };
  auto end = [&](int d, int64_t i) { return AdaptiveEnd(i, w.in[d], w.out[d]); };
  auto body = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    int64_t yi = 0;
    for (int64_t p = 0; p < planes; ++p) {
      const T* plane = px + p * w.InSize();
      for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
        for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
          for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
            double sum = 0;
            int64_t count = 0;
            C best = Lowest<C>();
            for (int64_t i0 = begin(0, o0); i0 < end(0, o0); ++i0) {
              for (int64_t i1 = begin(1, o1); i1 < end(1, o1); ++i1) {
                for (int64_t i2 = begin(2, o2); i2 < end(2, o2); ++i2) {
                  C v = Load(plane[(i0 * w.in[1] + i1) * w.in[2] + i2]);
                  if (count == 0 || v > best) best = v;
                  sum += static_cast<double>(v);
                  ++count;
                }
              }
            }
            if constexpr (kMax) {
              py[yi++] = Store<T>(best);
            } else {
              double v = count > 0 ? sum / static_cast<double>(count) : 0.0;
              py[yi++] = Store<T>(static_cast<C>(v));
            }
          }
        }
      }
    }
    return Status::Ok();
  };
  if constexpr (kMax) {
    return VisitNumeric(x.dtype, body);
  } else {
    return VisitFloat(x.dtype, body);
  }
}

// The maximum of x[0, n) and m, NaN cells passed over (m is not NaN): eight running maxima, each
// taking a cell only when greater.
float MaxNotNaN(const float* x, int64_t n, float m) {
  float lanes[8];
  std::fill(lanes, lanes + 8, m);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (float l : lanes) m = l > m ? l : m;
  return m;
}

}  // namespace

Status AdaptiveAvgPool(KernelContext& ctx) { return AdaptivePool<false>(ctx); }
Status AdaptiveMaxPool(KernelContext& ctx) { return AdaptivePool<true>(ctx); }

// The reference walks each window from its first cell and takes a later one only when greater:
// its result is the first cell when that is NaN, else the first cell equal to the greatest of
// those not NaN (0 and -0 are equal: which of them comes first is found by a second walk, only
// when the greatest is zero). So the greatest is found row by row with vector maxima.
Status AdaptiveMaxPoolFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  // No cells (a dim of 0): every window is empty, and the reference says what that gives.
  if (x.dtype != DType::kFloat32 || x.NumElements() == 0) return AdaptivePool<true>(ctx);
  Window w;
  Tensor* y;
  QUILT_RETURN_IF_ERROR(AdaptiveWindow(ctx, x, &w, &y));
  // The window's dims aligned right (leading 1s), so that dim 2 is the contiguous one.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  for (int d = 0; d < w.rank; ++d) {
    in[3 - w.rank + d] = w.in[d];
    out[3 - w.rank + d] = w.out[d];
  }
  int64_t planes = x.shape[0] * x.shape[1], in_size = in[0] * in[1] * in[2];
  int64_t out_size = out[0] * out[1] * out[2];
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  int64_t grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, in_size));
  ctx.ParallelFor(planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* plane = px + p * in_size;
      float* yp = py + p * out_size;
      for (int64_t o0 = 0; o0 < out[0]; ++o0) {
        int64_t b0 = AdaptiveBegin(o0, in[0], out[0]), e0 = AdaptiveEnd(o0, in[0], out[0]);
        for (int64_t o1 = 0; o1 < out[1]; ++o1) {
          int64_t b1 = AdaptiveBegin(o1, in[1], out[1]), e1 = AdaptiveEnd(o1, in[1], out[1]);
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            int64_t b2 = AdaptiveBegin(o2, in[2], out[2]), n = AdaptiveEnd(o2, in[2], out[2]) - b2;
            auto row = [&](int64_t i0, int64_t i1) {
              return plane + (i0 * in[1] + i1) * in[2] + b2;
            };
            // The first cell equal to zero, in the walk's order.
            auto first_zero = [&] {
              for (int64_t i0 = b0; i0 < e0; ++i0) {
                for (int64_t i1 = b1; i1 < e1; ++i1) {
                  const float* r = row(i0, i1);
                  const float* z = std::find(r, r + n, 0.0f);
                  if (z != r + n) return *z;
                }
              }
              return 0.0f;
            };
            float m = row(b0, b1)[0];
            if (!std::isnan(m)) {
              for (int64_t i0 = b0; i0 < e0; ++i0) {
                for (int64_t i1 = b1; i1 < e1; ++i1) m = MaxNotNaN(row(i0, i1), n, m);
              }
              if (m == 0.0f) m = first_zero();
            }
            yp[(o0 * out[1] + o1) * out[2] + o2] = m;
          }
        }
      }
    }
  });
  return Status::Ok();
}

// ONNX MaxUnpool: data[i] is written at flat index indices[i] of a result of the default shape
// (N, C, (in - 1) * stride + pool_size - pad_begin - pad_end); with output_size, that result
// sits at the start of every dim of a zero output of that size (which must not be smaller).
Status MaxUnpool(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& ind = *ctx.input(1);
  QUILT_RETURN_IF_ERROR(CheckPoolInput(x));
  if (ind.dtype != DType::kInt64) return Status::Error("indices must be int64");
  if (ind.shape != x.shape) {
    return Status::Error("indices have shape " + rt::ShapeString(ind.shape) + ", data " +
                         rt::ShapeString(x.shape));
  }
  int bits = rt::DTypeBits(x.dtype);
  if (bits == 0 || bits % 8 != 0) return Unsupported(x.dtype);
  size_t es = static_cast<size_t>(bits / 8);
  size_t r = static_cast<size_t>(x.rank() - 2);
  const rt::AttrView& a = ctx.attrs();
  bool sized = a.Has("output_size");
  Shape kernel, strides, padding;
  QUILT_RETURN_IF_ERROR(IntsAttr(a, "pool_size", r, 1, &kernel));
  QUILT_RETURN_IF_ERROR(IntsAttr(a, "strides", r, 1, &strides));
  QUILT_RETURN_IF_ERROR(IntsAttr(a, "padding", 2 * r, 0, &padding));
  Shape inferred = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < r; ++i) {
    int64_t d;
    if (__builtin_mul_overflow(x.shape[2 + i] - 1, strides[i], &d) ||
        __builtin_add_overflow(d, kernel[i], &d) || __builtin_sub_overflow(d, padding[i], &d) ||
        __builtin_sub_overflow(d, padding[r + i], &d)) {
      return Status::Error("the unpooled size of spatial dim " + Str(static_cast<int64_t>(i)) +
                           " overflows");
    }
    if (d < 0) return Status::Error("the unpooled size " + Str(d) + " is negative");
    inferred.push_back(d);
  }
  Shape shape = inferred;
  if (sized) {
    Shape size = a.Ints("output_size");
    if (size.size() != r && size.size() != r + 2) {
      return Status::Error("output_size has " + Str(static_cast<int64_t>(size.size())) +
                           " values, expected " + Str(static_cast<int64_t>(r + 2)));
    }
    for (size_t i = 0; i < size.size(); ++i) shape[i + (r + 2 - size.size())] = size[i];
    for (size_t d = 0; d < r + 2; ++d) {
      if (shape[d] < inferred[d]) {
        return Status::Error("output_size " + rt::ShapeString(shape) +
                             " is smaller than the unpooled shape " + rt::ShapeString(inferred));
      }
    }
  }
  // The output first: its size passes the run's limits, and the unpooled result, no larger in
  // any dim, is no larger than it.
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, shape, &y));
  int64_t total = 1;
  for (int64_t d : inferred) total *= d;
  std::vector<uint8_t> flat(static_cast<size_t>(total) * es, 0);
  const int64_t* pi = ind.Data<int64_t>();
  const auto* src = static_cast<const uint8_t*>(x.data);
  int64_t n = x.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (pi[i] < 0 || pi[i] >= total) {
      return Status::Error("index " + Str(pi[i]) + " is out of range for an unpooled result of " +
                           Str(total) + " elements");
    }
    std::memcpy(flat.data() + es * pi[i], src + es * i, es);
  }
  auto* dst = static_cast<uint8_t*>(y->data);
  if (y->ByteSize()) std::memset(dst, 0, y->ByteSize());
  // Copy the inferred-shape result into the corner of the output, element by element.
  Shape out_strides = Strides(shape);
  std::vector<int64_t> idx(r + 2, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < r + 2; ++d) off += idx[d] * out_strides[d];
    std::memcpy(dst + es * off, flat.data() + es * i, es);
    for (size_t d = r + 2; d-- > 0;) {
      if (++idx[d] < inferred[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace quilt::cpu::nn
