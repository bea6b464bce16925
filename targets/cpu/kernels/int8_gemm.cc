// The 8-bit GEMM of int8_gemm.h: with VNNI tiles of up to 8 rows by 32 columns (two panels), each
// row's four bytes broadcast against a panel's 16 x 4 bytes by one vpdpbusd per panel; without
// it, on AVX2, tiles of 2 rows by one panel on 16-bit pairs (TileAvx2).
#include "targets/cpu/kernels/int8_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define QUILT_HAS_VNNI_CODE 1
#define QUILT_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#endif

namespace quilt::cpu {
namespace {

std::atomic<bool> g_allowed{true}, g_vnni_allowed{true};

// 16 bytes from each of four rows (null: zeros) as 16 groups of their four bytes, each group one
// column: one panel's k4 step.
void Interleave4(const uint8_t* const r[4], int64_t col, int64_t cols, uint8_t flip, uint8_t* out) {
#if defined(__SSE2__)
  if (cols == 16) {
    __m128i v[4];
    __m128i f = _mm_set1_epi8(static_cast<char>(flip));
    for (int e = 0; e < 4; ++e) {
      v[e] = r[e] ? _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[e] + col)), f)
                  : _mm_setzero_si128();
    }
    __m128i ab_lo = _mm_unpacklo_epi8(v[0], v[1]), ab_hi = _mm_unpackhi_epi8(v[0], v[1]);
    __m128i cd_lo = _mm_unpacklo_epi8(v[2], v[3]), cd_hi = _mm_unpackhi_epi8(v[2], v[3]);
    auto* o = reinterpret_cast<__m128i*>(out);
    _mm_storeu_si128(o + 0, _mm_unpacklo_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
    return;
  }
#endif
  for (int64_t j = 0; j < 16; ++j) {
    for (int e = 0; e < 4; ++e) {
      out[j * 4 + e] = r[e] && j < cols ? static_cast<uint8_t>(r[e][col + j] ^ flip) : 0;
    }
  }
}

#if defined(QUILT_HAS_VNNI_CODE)

// Step q (four bytes of each row) of Tile into `acc`.
template <int kRows, bool kRowsUnsigned>
QUILT_VNNI inline __attribute__((always_inline)) void TileStep(const uint8_t* rows, int64_t stride,
                                                               const uint8_t* p0, const uint8_t* p1,
                                                               int64_t q,
                                                               __m512i (&acc)[kRows][2]) {
  __m512i b0 = _mm512_loadu_si512(p0 + q * 64);
  __m512i b1 = _mm512_loadu_si512(p1 + q * 64);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    int32_t word;
    std::memcpy(&word, rows + r * stride + q * 4, 4);
    __m512i a = _mm512_set1_epi32(word);
    if constexpr (kRowsUnsigned) {
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], a, b1);
    } else {
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b0, a);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b1, a);
    }
  }
}

// c (mr rows, `cols` <= 32 columns) = rows x the two panels p0 and p1 (p1 right after p0). One
// or two rows keep their sums in sets over alternate steps of four bytes, added at the end (the
// same integers): each dot-product instruction waits on the one before in its accumulator, and
// a single row's two chains left the units idle (a quantized LSTM's step over a batch of one).
template <int kRows, bool kRowsUnsigned>
QUILT_VNNI void Tile(const uint8_t* rows, int64_t stride, const uint8_t* p0, const uint8_t* p1,
                     int64_t k4, int32_t* c, int64_t ldc, int64_t cols) {
  constexpr int kSets = kRows == 1 ? 4 : kRows == 2 ? 2 : 1;
  __m512i sets[kSets][kRows][2];
  for (auto& set : sets) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) set[r][0] = set[r][1] = _mm512_setzero_si512();
  }
  int64_t q = 0;
  for (; q + kSets <= k4; q += kSets) {
#pragma GCC unroll 4
    for (int e = 0; e < kSets; ++e) {
      TileStep<kRows, kRowsUnsigned>(rows, stride, p0, p1, q + e, sets[e]);
    }
  }
  for (; q < k4; ++q) TileStep<kRows, kRowsUnsigned>(rows, stride, p0, p1, q, sets[0]);
  auto& acc = sets[0];
  for (int e = 1; e < kSets; ++e) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      acc[r][0] = _mm512_add_epi32(acc[r][0], sets[e][r][0]);
      acc[r][1] = _mm512_add_epi32(acc[r][1], sets[e][r][1]);
    }
  }
  auto mask = [](int64_t left) -> __mmask16 {
    return left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
  };
  __mmask16 m0 = mask(cols), m1 = mask(cols - 16);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    _mm512_mask_storeu_epi32(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_epi32(c + r * ldc + 16, m1, acc[r][1]);
  }
}

using TileFn = void (*)(const uint8_t*, int64_t, const uint8_t*, const uint8_t*, int64_t, int32_t*,
                        int64_t, int64_t);

template <bool kRowsUnsigned>
TileFn TileFor(int64_t rows) {
  switch (rows) {
    case 1:
      return Tile<1, kRowsUnsigned>;
    case 2:
      return Tile<2, kRowsUnsigned>;
    case 3:
      return Tile<3, kRowsUnsigned>;
    case 4:
      return Tile<4, kRowsUnsigned>;
    case 5:
      return Tile<5, kRowsUnsigned>;
    case 6:
      return Tile<6, kRowsUnsigned>;
    case 7:
      return Tile<7, kRowsUnsigned>;
    default:
      return Tile<8, kRowsUnsigned>;
  }
}

bool HasVnni() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }();
  return has && g_vnni_allowed.load(std::memory_order_relaxed);
}

// Without VNNI, on AVX2: the same products exactly, on 16-bit pairs. A panel's k4 step (16 columns
// of four bytes) is read as four vectors of four columns' bytes widened to int16, a row's four
// bytes (widened once per call) broadcast to each column's four; vpmaddwd sums each pair of
// products (at most 2 x 255 x 128: exact) into an int32 lane, two lanes a column, added at the
// end. (vpmaddubsw, four times the products an instruction, saturates its sums of two at 16 bits:
// not exact.)
#define QUILT_AVX2_INT8 __attribute__((target("avx2")))

// Four bytes from each row widened to int16 (signed or not), [row][k4][4].
void WidenRows(const uint8_t* rows, int64_t m, int64_t stride, int64_t k4, bool is_unsigned,
               int16_t* out) {
  for (int64_t i = 0; i < m; ++i) {
    const uint8_t* r = rows + i * stride;
    int16_t* o = out + i * k4 * 4;
    if (is_unsigned) {
      for (int64_t p = 0; p < k4 * 4; ++p) o[p] = r[p];
    } else {
      for (int64_t p = 0; p < k4 * 4; ++p) o[p] = static_cast<int8_t>(r[p]);
    }
  }
}

// c (kRows rows, `cols` <= 16 columns) = the widened rows x one panel.
template <int kRows, bool kRowsUnsigned>
QUILT_AVX2_INT8 void TileAvx2(const int16_t* rows16, int64_t k4, const uint8_t* panel, int32_t* c,
                              int64_t ldc, int64_t cols) {
  // (Generic vectors, added with +=: GCC 12 moved each _mm256_add_epi32's sum back into its
  // accumulator's register, 9 moves and a spill a step.)
  typedef int32_t V8i __attribute__((vector_size(32)));
  V8i acc[kRows][4];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int e = 0; e < 4; ++e) acc[r][e] = V8i{};
  }
  for (int64_t q = 0; q < k4; ++q) {
    __m256i b[4];
#pragma GCC unroll 4
    for (int e = 0; e < 4; ++e) {
      const __m128i raw =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + q * 64 + e * 16));
      // The panel's bytes are signed where the rows' are not.
      b[e] = kRowsUnsigned ? _mm256_cvtepi8_epi16(raw) : _mm256_cvtepu8_epi16(raw);
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      int64_t word;
      std::memcpy(&word, rows16 + (r * k4 + q) * 4, 8);
      const __m256i a = _mm256_set1_epi64x(word);
#pragma GCC unroll 4
      for (int e = 0; e < 4; ++e) acc[r][e] += reinterpret_cast<V8i>(_mm256_madd_epi16(b[e], a));
    }
  }
  // Lanes (2j, 2j + 1) of acc[r][e] hold column 4e + j's two halves: pairs added across two
  // vectors (within 128-bit halves), then the columns put in order.
  const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    __m256i v[4];
    for (int e = 0; e < 4; ++e) v[e] = reinterpret_cast<__m256i>(acc[r][e]);
    __m256i lo = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(v[0], v[1]), order);
    __m256i hi = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(v[2], v[3]), order);
    int32_t* out = c + r * ldc;
    if (cols >= 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), hi);
    } else {
      alignas(32) int32_t all[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(all), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(all + 8), hi);
      std::memcpy(out, all, static_cast<size_t>(cols) * sizeof(int32_t));
    }
  }
}

bool HasAvx2Int8() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
  }();
  return has;
}

QUILT_AVX2_INT8 void Int8GemmAvx2(const uint8_t* rows, int64_t m, int64_t row_stride,
                                  const Int8Panels& panels, bool rows_unsigned, int32_t* c,
                                  int64_t ldc, rt::ThreadPool* pool) {
  const int64_t n = panels.n, k4 = panels.k4(), count = panels.panels();
  thread_local std::vector<int16_t> kept_rows16;  // this thread's, kept from call to call
  std::vector<int16_t>& rows16 = kept_rows16;
  rows16.resize(static_cast<size_t>(m * k4 * 4));
  WidenRows(rows, m, row_stride, k4, rows_unsigned, rows16.data());
  const int16_t* w = rows16.data();
  // Tiles of two rows: with three (12 accumulators, the panel's 4 vectors, a row's broadcast and
  // a product past 16 registers) ddddocr-old's convs and matmul ran 20% slower.
  const int64_t pairs = (m + 1) / 2;
  // Tiles in panel order: a panel's row pairs one after another, the panel read from cache after
  // the first.
  rt::ParallelFor(pool, count * pairs, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p = t / pairs, i0 = (t % pairs) * 2;
      const int64_t cols = std::min<int64_t>(16, n - p * 16);
      int32_t* out = c + i0 * ldc + p * 16;
      const int16_t* r = w + i0 * k4 * 4;
      if (i0 + 2 <= m) {
        rows_unsigned ? TileAvx2<2, true>(r, k4, panels.panel(p), out, ldc, cols)
                      : TileAvx2<2, false>(r, k4, panels.panel(p), out, ldc, cols);
      } else {
        rows_unsigned ? TileAvx2<1, true>(r, k4, panels.panel(p), out, ldc, cols)
                      : TileAvx2<1, false>(r, k4, panels.panel(p), out, ldc, cols);
      }
    }
  });
}

#endif

// Per-thread buffers kept from run to run (they only grow): an 8-bit convolution's window
// matrix, its packed panels and its products.
struct ConvScratch {
  std::vector<uint8_t> cols;
  Int8Panels panels;
  std::vector<int32_t> prod;
  std::vector<int64_t> col_sums;
};

ConvScratch& ThreadConvScratch() {
  thread_local ConvScratch scratch;
  return scratch;
}

void XorCopy(uint8_t* __restrict dst, const uint8_t* __restrict src, int64_t n, uint8_t flip) {
  if (flip == 0) {
    std::memcpy(dst, src, static_cast<size_t>(n));
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] ^ flip;
}

// Output positions [j0, j1) of a convolution's input windows as a k x (j1 - j0) byte matrix
// (k = channels x taps; row stride j1 - j0): `flip` adds 128 to each byte, positions in the
// padding read `pad`.
void Im2ColBytes(const uint8_t* x, int64_t channels, const Int8ConvGeometry& g, uint8_t flip,
                 uint8_t pad, int64_t j0, int64_t j1, uint8_t* cols) {
  int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
  int64_t in_size = g.in[0] * g.in[1] * g.in[2], width = j1 - j0;
  for (int64_t r = 0; r < channels * taps; ++r) {
    int64_t ci = r / taps, t = r % taps;
    int64_t k2 = t % g.kernel[2], k1 = t / g.kernel[2] % g.kernel[1],
            k0 = t / (g.kernel[2] * g.kernel[1]);
    const uint8_t* xc = x + ci * in_size;
    uint8_t* dst = cols + r * width;
    // The positions o2 whose input column lies inside: [lo, hi).
    int64_t off2 = k2 * g.dilation[2] - g.pad[2], s2 = g.stride[2];
    int64_t lo = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;
    int64_t hi = g.in[2] - off2 <= 0 ? 0 : (g.in[2] - off2 + s2 - 1) / s2;
    lo = std::min(lo, g.out[2]);
    hi = std::max(lo, std::min(hi, g.out[2]));
    // Runs of one output row at a time.
    for (int64_t j = j0; j < j1;) {
      int64_t o2 = j % g.out[2], row = j / g.out[2];
      int64_t o1 = row % g.out[1], o0 = row / g.out[1];
      int64_t end = std::min(g.out[2], o2 + (j1 - j));
      int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
      int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
      uint8_t* d = dst + (j - j0) - o2;  // d[o2'] for o2' in [o2, end)
      if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1]) {
        std::memset(d + o2, pad, static_cast<size_t>(end - o2));
      } else {
        const uint8_t* src = xc + (i0 * g.in[1] + i1) * g.in[2] + off2;
        int64_t a = std::clamp(lo, o2, end), b = std::clamp(hi, a, end);
        std::memset(d + o2, pad, static_cast<size_t>(a - o2));
        if (s2 == 1) {
          XorCopy(d + a, src + a, b - a, flip);
        } else {
          for (int64_t q = a; q < b; ++q) d[q] = src[q * s2] ^ flip;
        }
        std::memset(d + b, pad, static_cast<size_t>(end - b));
      }
      j += end - o2;
    }
  }
}

}  // namespace

bool HasInt8Dot() {
#if defined(QUILT_HAS_VNNI_CODE)
  return (HasVnni() || HasAvx2Int8()) && g_allowed.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void SetInt8DotAllowedForTesting(bool allowed) { g_allowed.store(allowed); }
void SetInt8VnniAllowedForTesting(bool allowed) { g_vnni_allowed.store(allowed); }
bool Int8GemmOnVnni() {
#if defined(QUILT_HAS_VNNI_CODE)
  return HasVnni();
#else
  return false;
#endif
}

void Int8Panels::Resize(int64_t rows, int64_t cols) {
  k = rows;
  n = cols;
  // An even number of panels: the tiles read two at a time.
  int64_t panels_even = (panels() + 1) / 2 * 2;
  bytes.resize(static_cast<size_t>(panels_even * k4() * 64));
}

void PackInt8Panels(const uint8_t* src, int64_t k, int64_t n, int64_t ld, bool flip,
                    Int8Panels* out, rt::ThreadPool* pool) {
  out->Resize(k, n);
  uint8_t f = flip ? 0x80 : 0;
  int64_t k4 = out->k4(), panels = out->panels();
  // The padding panel of an odd count stays zero.
  if (panels % 2 == 1) std::fill_n(out->panel(panels), k4 * 64, uint8_t{0});
  rt::ParallelFor(
      pool, k4, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
          const uint8_t* r[4];
          for (int e = 0; e < 4; ++e) {
            r[e] = 4 * q + e < k ? src + (4 * q + e) * ld : nullptr;
          }
          for (int64_t p = 0; p < panels; ++p) {
            Interleave4(r, p * 16, std::min<int64_t>(16, n - p * 16), f, out->panel(p) + q * 64);
          }
        }
      });
}

void PackInt8Rows(const uint8_t* src, int64_t m, int64_t k, int64_t ld, bool flip, Int8Rows* out) {
  out->m = m;
  out->k = k;
  int64_t s = out->stride();
  out->bytes.assign(static_cast<size_t>(m * s), 0);
  uint8_t f = flip ? 0x80 : 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) out->bytes[i * s + p] = src[i * ld + p] ^ f;
  }
}

void Int8Gemm(const uint8_t* rows, int64_t m, int64_t row_stride, const Int8Panels& panels,
              bool rows_unsigned, int32_t* c, int64_t ldc, rt::ThreadPool* pool) {
#if defined(QUILT_HAS_VNNI_CODE)
  int64_t n = panels.n, k4 = panels.k4();
  if (m == 0 || n == 0) return;
  if (!HasVnni()) return Int8GemmAvx2(rows, m, row_stride, panels, rows_unsigned, c, ldc, pool);
  int64_t pairs = (panels.panels() + 1) / 2, blocks = (m + 7) / 8;
  // Tiles in column-pair order: the row blocks of a pair of panels one after another, the pair
  // read from cache after the first.
  rt::ParallelFor(pool, pairs * blocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t pair = t / blocks, i0 = (t % blocks) * 8;
      int64_t mr = std::min<int64_t>(8, m - i0);
      TileFn fn = rows_unsigned ? TileFor<true>(mr) : TileFor<false>(mr);
      fn(rows + i0 * row_stride, row_stride, panels.panel(2 * pair), panels.panel(2 * pair + 1), k4,
         c + i0 * ldc + pair * 32, ldc, n - pair * 32);
    }
  });
#else
  (void)rows, (void)m, (void)row_stride, (void)panels, (void)rows_unsigned, (void)c, (void)ldc,
      (void)pool;
#endif
}

void Int8ConvSums(const uint8_t* x, bool x_flip, int64_t x_zero, int64_t n, int64_t c,
                  int64_t groups, const Int8ConvGeometry& g, const Int8ConvWeights& w,
                  int32_t* out32, int64_t* out64, rt::ThreadPool* pool) {
  int64_t in_size = g.in[0] * g.in[1] * g.in[2], p = g.out[0] * g.out[1] * g.out[2];
  int64_t cg = c / groups, og = w.rows.m / groups, taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
  int64_t k = cg * taps;
  if (p == 0) return;
  // A 1x1 window with stride 1 and no padding: the image is the matrix.
  bool direct = taps == 1 && !g.padded && g.stride[0] == 1 && g.stride[1] == 1 && g.stride[2] == 1;
  // Tasks of (image, group, chunk of output positions): each writes its chunk's window matrix
  // (near 96 KiB), packs it, multiplies and stores its outputs, the matrix still in cache, with
  // no wait between the steps.
  int64_t chunk =
      std::clamp<int64_t>((96 << 10) / std::max<int64_t>(k, 1) / 32 * 32, 32, (p + 31) / 32 * 32);
  int64_t chunks = (p + chunk - 1) / chunk;
  rt::ParallelFor(pool, n * groups * chunks, 1, [&](int64_t t0, int64_t t1) {
    ConvScratch& s = ThreadConvScratch();
    for (int64_t t = t0; t < t1; ++t) {
      int64_t b = t / (groups * chunks), grp = t / chunks % groups, j0 = t % chunks * chunk;
      int64_t width = std::min(chunk, p - j0);
      const uint8_t* xg = x + (b * c + grp * cg) * in_size;
      if (direct) {
        PackInt8Panels(xg + j0, k, width, p, x_flip, &s.panels, nullptr);
      } else {
        if (s.cols.size() < static_cast<size_t>(k * width)) {
          s.cols.resize(static_cast<size_t>(k * width));
        }
        Im2ColBytes(xg, cg, g, x_flip ? 0x80 : 0, static_cast<uint8_t>(x_zero), j0, j0 + width,
                    s.cols.data());
        PackInt8Panels(s.cols.data(), k, width, width, false, &s.panels, nullptr);
      }
      if (s.prod.size() < static_cast<size_t>(og * width)) {
        s.prod.resize(static_cast<size_t>(og * width));
      }
      Int8Gemm(w.rows.row(grp * og), og, w.rows.stride(), s.panels, false, s.prod.data(), width,
               nullptr);
      if (!w.zero_zp) Int8ColumnSums(s.panels, true, &s.col_sums);
      const int64_t* cs = s.col_sums.data();
      // sum (x - xz)(w - wz) = sum x w - xz sum w - wz sum x + k xz wz, per out channel.
      for (int64_t i = 0; i < og; ++i) {
        int64_t m = grp * og + i, zp = w.zp[m];
        int64_t base = k * x_zero * zp - x_zero * w.sums[m];
        const int32_t* pr = s.prod.data() + i * width;
        int64_t at = (b * w.rows.m + m) * p + j0;
        if (out32) {
          // Low 32 bits: the product's int32 plus base's, wrapping.
          uint32_t b32 = static_cast<uint32_t>(base);
          int32_t* o = out32 + at;
          if (zp == 0) {
            for (int64_t j = 0; j < width; ++j) {
              o[j] = static_cast<int32_t>(static_cast<uint32_t>(pr[j]) + b32);
            }
          } else {
            for (int64_t j = 0; j < width; ++j) {
              o[j] = static_cast<int32_t>(static_cast<uint32_t>(pr[j]) + b32 -
                                          static_cast<uint32_t>(zp * cs[j]));
            }
          }
        } else {
          int64_t* o = out64 + at;
          for (int64_t j = 0; j < width; ++j) o[j] = pr[j] + base - (zp != 0 ? zp * cs[j] : 0);
        }
      }
    }
  });
}

void Int8RowSums(const Int8Rows& rows, bool is_unsigned, std::vector<int64_t>* out) {
  out->assign(static_cast<size_t>(rows.m), 0);
  for (int64_t i = 0; i < rows.m; ++i) {
    const uint8_t* r = rows.row(i);
    int64_t s = 0;
    for (int64_t p = 0; p < rows.k; ++p) s += is_unsigned ? r[p] : static_cast<int8_t>(r[p]);
    (*out)[i] = s;
  }
}

void Int8ColumnSums(const Int8Panels& panels, bool is_unsigned, std::vector<int64_t>* out) {
  out->assign(static_cast<size_t>(panels.n), 0);
  for (int64_t p = 0; p < panels.panels(); ++p) {
    const uint8_t* b = panels.panel(p);
    int64_t cols = std::min<int64_t>(16, panels.n - p * 16);
    for (int64_t q = 0; q < panels.k4(); ++q) {
      for (int64_t j = 0; j < cols; ++j) {
        int64_t s = 0;
        for (int e = 0; e < 4; ++e) {
          uint8_t v = b[q * 64 + j * 4 + e];
          s += is_unsigned ? v : static_cast<int8_t>(v);
        }
        (*out)[p * 16 + j] += s;
      }
    }
  }
}

}  // namespace quilt::cpu
