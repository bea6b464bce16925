#include "targets/cpu/kernels/util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QUILT_TRANSPOSE_AVX2 1
#endif

namespace quilt::cpu {

bool BroadcastShape(std::span<const int64_t> a, std::span<const int64_t> b, Shape* out) {
  size_t rank = std::max(a.size(), b.size());
  auto dim = [&](size_t i, int64_t* d) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    *d = da == 1 ? db : da;
    return da == db || da == 1 || db == 1;
  };
  if (!out->empty() && (out->data() == a.data() || out->data() == b.data())) {
    Shape r(rank);
    for (size_t i = 0; i < rank; ++i) {
      if (!dim(i, &r[i])) return false;
    }
    *out = std::move(r);
    return true;
  }
  // Into out's own memory (a kernel's shape kept from run to run allocates nothing).
  int64_t d;
  for (size_t i = 0; i < rank; ++i) {
    if (!dim(i, &d)) return false;
  }
  out->resize(rank);
  for (size_t i = 0; i < rank; ++i) dim(i, &(*out)[i]);
  return true;
}

Shape Strides(const Shape& shape) {
  Shape s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

namespace {

// `n` elements of EB bytes from src, `stride` elements apart, to dense dst.
template <size_t EB>
void CopyRow(const uint8_t* src, int64_t stride, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * EB, src + i * stride * EB, EB);
}

// `n` elements `stride` apart from s to dense d.
void CopyRun(const uint8_t* s, int64_t stride, int64_t n, size_t eb, uint8_t* d) {
  if (stride == 1) {
    std::memcpy(d, s, static_cast<size_t>(n) * eb);
    return;
  }
  switch (eb) {
    case 1:
      return CopyRow<1>(s, stride, n, d);
    case 2:
      return CopyRow<2>(s, stride, n, d);
    case 4:
      return CopyRow<4>(s, stride, n, d);
    case 8:
      return CopyRow<8>(s, stride, n, d);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(d + i * eb, s + i * stride * static_cast<int64_t>(eb), eb);
      }
  }
}

// A transpose: rows [r0, r1) of planes whose last two dims swap, the plane's a rows of b
// elements, element (i, j) of the output from src[i + j * sb] (the rows contiguous in the
// source, the columns sb apart). In tiles of 8 x 8, whose 8 source runs of 8 stay in L1 while
// each output row of the tile is written: element by element, the gather crossed a new line of
// the source for every element of an output row.
#if defined(QUILT_TRANSPOSE_AVX2)
// One 8 x 8 tile of 4-byte elements: source runs j (8 contiguous elements each, sb apart) become
// output rows i (8 elements each, b apart), moved as bits by unpacks, shuffles and lane swaps.
__attribute__((target("avx2"))) void Transpose8x8(const uint8_t* src, int64_t sb, uint8_t* dst,
                                                  int64_t b) {
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  __m256 r[8], t[8], u[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(s + j * sb);
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    u[j] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(d + i * b, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(d + (i + 4) * b, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}

// Asked here rather than through simd.h's HasAvx2Fma, which answers yes in builds without
// function clones whatever the CPU: Transpose8x8 is compiled for AVX2 in every build.
bool HasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
  }();
  return has;
}
#endif

// Where plane r of a transpose's planes (every dim but the last two, in order) starts in the
// source, in elements.
int64_t PlaneOffset(const std::vector<int64_t>& dims, const std::vector<int64_t>& st, int64_t r) {
  int64_t off = 0;
  for (int64_t q = r, ax = static_cast<int64_t>(dims.size()) - 3; ax >= 0; --ax) {
    off += q % dims[static_cast<size_t>(ax)] * st[static_cast<size_t>(ax)];
    q /= dims[static_cast<size_t>(ax)];
  }
  return off;
}

template <typename T>
void TransposePlanes(const uint8_t* s, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& st, int64_t r0, int64_t r1, uint8_t* d) {
  constexpr int64_t kTile = 8;
  const size_t outer_rank = dims.size() - 2;
  const int64_t a = dims[outer_rank], b = dims[outer_rank + 1], sb = st[outer_rank + 1];
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* src = s + PlaneOffset(dims, st, r) * static_cast<int64_t>(sizeof(T));
    uint8_t* dst = d + r * a * b * static_cast<int64_t>(sizeof(T));
    // Element (i, j), copied as bytes (no alignment assumed; each a single move).
    auto copy = [&](int64_t i, int64_t j) {
      T v;
      std::memcpy(&v, src + (i + j * sb) * static_cast<int64_t>(sizeof(T)), sizeof(T));
      std::memcpy(dst + (i * b + j) * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
    };
#if defined(QUILT_TRANSPOSE_AVX2)
    const bool simd = sizeof(T) == 4 && HasAvx2();
#endif
    for (int64_t i0 = 0; i0 < a; i0 += kTile) {
      const int64_t i1 = std::min(a, i0 + kTile);
      for (int64_t j0 = 0; j0 < b; j0 += kTile) {
        const int64_t j1 = std::min(b, j0 + kTile);
#if defined(QUILT_TRANSPOSE_AVX2)
        if (simd && i1 - i0 == kTile && j1 - j0 == kTile) {
          Transpose8x8(src + (i0 + j0 * sb) * 4, sb, dst + (i0 * b + j0) * 4, b);
          continue;
        }
#endif
        if (i1 - i0 == kTile && j1 - j0 == kTile) {
          for (int64_t i = i0; i < i0 + kTile; ++i) {
            for (int64_t j = j0; j < j0 + kTile; ++j) copy(i, j);
          }
        } else {
          for (int64_t i = i0; i < i1; ++i) {
            for (int64_t j = j0; j < j1; ++j) copy(i, j);
          }
        }
      }
    }
  }
}

// Planes [r0, r1) of the same transpose where the output's rows are short (kB of 2 to 7
// elements: NCHW data of a few channels made NHWC, a detector's box offsets): row i of a plane
// gathers its kB elements from i + j * sb, the kB source rows each read in order. (Row by row
// through CopyRows, each row of four elements cost 1.5 ns an element: an NCHW map of 4 channels
// at 59 x 59 took 21 us.)
template <typename T, int kB>
void TransposeShortRowsOf(const uint8_t* s, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& st, int64_t r0, int64_t r1, uint8_t* d) {
  const size_t outer_rank = dims.size() - 2;
  const int64_t a = dims[outer_rank], sb = st[outer_rank + 1];
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* src = s + PlaneOffset(dims, st, r) * static_cast<int64_t>(sizeof(T));
    uint8_t* dst = d + r * a * kB * static_cast<int64_t>(sizeof(T));
    // Each element moved on its own (gathered into a row on the stack and stored whole, the
    // row's wide load waited on its narrow stores: 2 ns an element).
    for (int64_t i = 0; i < a; ++i) {
      for (int j = 0; j < kB; ++j) {
        T v;
        std::memcpy(&v, src + (i + j * sb) * static_cast<int64_t>(sizeof(T)), sizeof(T));
        std::memcpy(dst + (i * kB + j) * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
      }
    }
  }
}

// Planes [r0, r1) of a transpose of the last two dims: output rows of 2 to 7 elements by
// TransposeShortRowsOf, longer ones in tiles (TransposePlanes).
template <typename T>
void TransposeLastTwo(const uint8_t* s, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& st, int64_t r0, int64_t r1, uint8_t* d) {
  switch (dims.back()) {
    case 2:
      return TransposeShortRowsOf<T, 2>(s, dims, st, r0, r1, d);
    case 3:
      return TransposeShortRowsOf<T, 3>(s, dims, st, r0, r1, d);
    case 4:
      return TransposeShortRowsOf<T, 4>(s, dims, st, r0, r1, d);
    case 5:
      return TransposeShortRowsOf<T, 5>(s, dims, st, r0, r1, d);
    case 6:
      return TransposeShortRowsOf<T, 6>(s, dims, st, r0, r1, d);
    case 7:
      return TransposeShortRowsOf<T, 7>(s, dims, st, r0, r1, d);
    default:
      return TransposePlanes<T>(s, dims, st, r0, r1, d);
  }
}

// Rows [r0, r1) of a merged view (every dim but the last a row index, in order): each row's
// elements from s at its offset, written one row after another from d.
void CopyRows(const uint8_t* s, const std::vector<int64_t>& dims, const std::vector<int64_t>& st,
              size_t eb, int64_t r0, int64_t r1, uint8_t* d) {
  int outer_rank = static_cast<int>(dims.size()) - 1;
  int64_t inner = dims.back(), inner_stride = st.back();
  size_t row_bytes = static_cast<size_t>(inner) * eb;
  // Row r0's index along each outer dim, and its offset (this thread's, kept from call to call:
  // no allocation in a run's steady state).
  thread_local std::vector<int64_t> idx;
  idx.assign(static_cast<size_t>(outer_rank), 0);
  int64_t off = 0;
  for (int64_t r = r0, ax = outer_rank - 1; ax >= 0; --ax) {
    idx[static_cast<size_t>(ax)] = r % dims[static_cast<size_t>(ax)];
    r /= dims[static_cast<size_t>(ax)];
    off += idx[static_cast<size_t>(ax)] * st[static_cast<size_t>(ax)];
  }
  d += static_cast<size_t>(r0) * row_bytes;
  // Short contiguous rows (a slice of a few columns) copied inline, 16 bytes at a time and then
  // the rest: a call to memcpy per row of 16 bytes cost more than the copy (silero-vad's slices
  // of 80 x 129 rows of 4 floats).
  const bool short_rows = inner_stride == 1 && row_bytes <= 64;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* from = s + off * static_cast<int64_t>(eb);
    if (short_rows) {
      size_t b = 0;
      for (; b + 16 <= row_bytes; b += 16) std::memcpy(d + b, from + b, 16);
      if (b + 8 <= row_bytes) {
        std::memcpy(d + b, from + b, 8);
        b += 8;
      }
      for (; b < row_bytes; ++b) d[b] = from[b];
    } else {
      CopyRun(from, inner_stride, inner, eb, d);
    }
    d += row_bytes;
    for (int ax = outer_rank - 1; ax >= 0; --ax) {
      off += st[static_cast<size_t>(ax)];
      if (++idx[static_cast<size_t>(ax)] < dims[static_cast<size_t>(ax)]) break;
      off -= st[static_cast<size_t>(ax)] * dims[static_cast<size_t>(ax)];
      idx[static_cast<size_t>(ax)] = 0;
    }
  }
}

}  // namespace

void CopyStrided(const void* src, const Shape& shape, const Shape& strides, size_t eb, void* dst,
                 rt::ThreadPool* pool) {
  // Dims of one dropped; a dim merged into the one inside it where the two are contiguous. (This
  // thread's, kept from call to call; the pool's threads read the caller's through these
  // references: a thread_local named in a lambda would be the running thread's own.)
  thread_local std::vector<int64_t> kept_dims, kept_st;
  std::vector<int64_t>& dims = kept_dims;
  std::vector<int64_t>& st = kept_st;
  dims.clear();
  st.clear();
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0) return;
    if (shape[k] == 1) continue;
    if (!dims.empty() && st.back() == strides[k] * shape[k]) {
      dims.back() *= shape[k];
      st.back() = strides[k];
      continue;
    }
    dims.push_back(shape[k]);
    st.push_back(strides[k]);
  }
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  if (dims.empty()) {
    std::memcpy(d, s, eb);
    return;
  }
  // A transpose of the last two dims (the last strided, the one before it contiguous in the
  // source), elements of 1 to 8 bytes: plane by plane in tiles, the planes split among the
  // threads where large.
  // Or, output rows of 2 to 7 elements, row by row with each element gathered (short rows).
  const size_t r = dims.size();
  if (r >= 2 && st[r - 2] == 1 && st[r - 1] > 1 && dims[r - 2] >= 8 && dims[r - 1] >= 2 &&
      (eb == 1 || eb == 2 || eb == 4 || eb == 8)) {
    int64_t planes = 1;
    for (size_t k = 0; k + 2 < r; ++k) planes *= dims[k];
    const int64_t plane_bytes = dims[r - 2] * dims[r - 1] * static_cast<int64_t>(eb);
    auto run = [&](int64_t p0, int64_t p1) {
      switch (eb) {
        case 1:
          return TransposeLastTwo<uint8_t>(s, dims, st, p0, p1, d);
        case 2:
          return TransposeLastTwo<uint16_t>(s, dims, st, p0, p1, d);
        case 4:
          return TransposeLastTwo<uint32_t>(s, dims, st, p0, p1, d);
        default:
          return TransposeLastTwo<uint64_t>(s, dims, st, p0, p1, d);
      }
    };
    if (pool && pool->threads() > 1 && planes > 1 && planes * plane_bytes >= kParallelCopyBytes) {
      rt::ParallelFor(pool, planes, std::max<int64_t>(1, (int64_t{1} << 16) / plane_bytes), run);
    } else {
      run(0, planes);
    }
    return;
  }
  int64_t rows = 1;
  for (size_t k = 0; k + 1 < dims.size(); ++k) rows *= dims[k];
  const int64_t inner = dims.back(), inner_stride = st.back();
  // A large copy on the pool's threads: memory-bound, and two cores move more bytes than one.
  // The rows split among them, or a single run cut into blocks of 64 KB. The same bytes land in
  // the same places either way.
  if (pool && pool->threads() > 1 &&
      rows * inner * static_cast<int64_t>(eb) >= kParallelCopyBytes) {
    constexpr int64_t kBlockBytes = int64_t{1} << 16;
    if (rows > 1) {
      int64_t grain = std::max<int64_t>(1, kBlockBytes / (inner * static_cast<int64_t>(eb)));
      rt::ParallelFor(pool, rows, grain,
                      [&](int64_t r0, int64_t r1) { CopyRows(s, dims, st, eb, r0, r1, d); });
      return;
    }
    const int64_t per = std::max<int64_t>(1, kBlockBytes / static_cast<int64_t>(eb));
    rt::ParallelFor(pool, (inner + per - 1) / per, 1, [&](int64_t b0, int64_t b1) {
      int64_t e0 = b0 * per, e1 = std::min(inner, b1 * per);
      CopyRun(s + e0 * inner_stride * static_cast<int64_t>(eb), inner_stride, e1 - e0, eb,
              d + static_cast<size_t>(e0) * eb);
    });
    return;
  }
  CopyRows(s, dims, st, eb, 0, rows, d);
}

Shape BroadcastStrides(const Shape& in, const Shape& out) {
  Shape s(out.size(), 0);
  Shape own = Strides(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[lead + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

bool Absent(const Tensor* t) { return !t || (t->rank() == 1 && t->shape[0] == 0); }

Status ReadFloats(const Tensor& t, std::vector<double>* out) {
  return VisitFloat(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    int64_t n = t.NumElements();
    out->resize(n);
    for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(Load(t.Data<T>()[i]));
    return Status::Ok();
  });
}

void WriteFloats(Tensor* t, const std::vector<double>& v) {
  (void)VisitFloat(t->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) {
      t->MutableData<T>()[i] = Store<T>(static_cast<Compute<T>>(v[i]));
    }
    return Status::Ok();
  });
}

bool NormalizeAxis(int64_t* axis, int rank) {
  if (*axis < -rank || *axis >= rank) return false;
  if (*axis < 0) *axis += rank;
  return true;
}

}  // namespace quilt::cpu
