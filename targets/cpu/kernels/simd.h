// Eight floats as one value, for the fast CPU kernels: the compiler's generic vectors (GCC and
// Clang), plain arithmetic that becomes whatever SIMD the target has, or scalar code; a plain
// struct elsewhere. QUILT_CLONES marks a hot function to be compiled twice on x86-64, for AVX2 +
// FMA and for the baseline, the copy chosen at load time from the CPU's features.
#pragma once

#include <cstdint>
#include <cstring>

namespace quilt::cpu {

#if defined(__GNUC__)
typedef float V8 __attribute__((vector_size(32)));
// The same vector at any float's alignment, for loads from packed panels and rows.
typedef float V8Unaligned __attribute__((vector_size(32), aligned(4), may_alias));
#define QUILT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
struct V8 {
  float v[8] = {};
  V8& operator+=(const V8& o) {
    for (int i = 0; i < 8; ++i) v[i] += o.v[i];
    return *this;
  }
  friend V8 operator*(float s, const V8& o) {
    V8 r;
    for (int i = 0; i < 8; ++i) r.v[i] = s * o.v[i];
    return r;
  }
  friend V8 operator*(const V8& a, const V8& b) {
    V8 r;
    for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] * b.v[i];
    return r;
  }
};
#define QUILT_ALWAYS_INLINE inline
#endif

// Not under ThreadSanitizer: the clones' resolver runs while the dynamic loader relocates the
// program, before TSan's runtime is set up, and TSan's hook at its entry then crashes it.
#if defined(__SANITIZE_THREAD__)
#define QUILT_NO_CLONES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QUILT_NO_CLONES 1
#endif
#endif
// Nor where the build's own baseline has AVX2 and FMA (-march=x86-64-v3, or native on such a
// CPU): the baseline copy would be the AVX2 one again, and the library then runs only on such
// CPUs anyway.
#if defined(__AVX2__) && defined(__FMA__)
#define QUILT_BASELINE_HAS_AVX2_FMA 1
#endif
#if defined(__x86_64__) && defined(__has_attribute) && !defined(QUILT_NO_CLONES) && \
    !defined(QUILT_BASELINE_HAS_AVX2_FMA)
#if __has_attribute(target_clones)
#define QUILT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
#endif
#ifndef QUILT_CLONES
#define QUILT_CLONES
#endif
// A hot function compiled for AVX2 + FMA alone, with no baseline copy: for a fast path whose
// baseline copy would only add size. Its caller takes it only where HasAvx2Fma(), and a general
// kernel elsewhere.
#if defined(__x86_64__) && defined(__has_attribute) && !defined(QUILT_NO_CLONES) && \
    !defined(QUILT_BASELINE_HAS_AVX2_FMA)
#define QUILT_AVX2_ONLY __attribute__((target("arch=x86-64-v3")))
inline bool HasAvx2Fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}
#else
#define QUILT_AVX2_ONLY
inline bool HasAvx2Fma() { return true; }
#endif
// The same for a function template: clang does not clone templates ("multiversioned functions do
// not yet support function templates"), so with clang they are compiled for the baseline only.
#if defined(__clang__)
#define QUILT_TEMPLATE_CLONES
#else
#define QUILT_TEMPLATE_CLONES QUILT_CLONES
#endif

// The bits of lanes [0, n) of a vector of `lanes` (n clamped to [0, lanes], lanes at most 16):
// the mask of an AVX-512 load or store of a vector's first n lanes.
constexpr uint32_t FirstLanesBits(int64_t n, int64_t lanes = 16) {
  return n <= 0 ? 0u : n >= lanes ? (1u << lanes) - 1u : (1u << n) - 1u;
}

// Loads and stores at any alignment. (By pointer: a vector return value would change the ABI
// between the clones.)
#if defined(__GNUC__)
QUILT_ALWAYS_INLINE void LoadV(V8* v, const float* p) {
  *v = *reinterpret_cast<const V8Unaligned*>(p);
}
QUILT_ALWAYS_INLINE void StoreV(float* p, const V8& v) { *reinterpret_cast<V8Unaligned*>(p) = v; }
#else
inline void LoadV(V8* v, const float* p) { std::memcpy(v, p, sizeof *v); }
inline void StoreV(float* p, const V8& v) { std::memcpy(p, &v, sizeof v); }
#endif

// dst[0, n) = src[0, n) for the short rows of small images (src and dst apart): whole vectors,
// the last one overlapping the one before, or pieces of 4, 2 and 1. Inline, with no loop a
// compiler would turn into a call to memmove, whose fixed cost is most of a row of a few floats.
QUILT_ALWAYS_INLINE void CopyShort(const float* src, int64_t n, float* dst) {
  if (n >= 8) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      V8 v;
      LoadV(&v, src + i);
      StoreV(dst + i, v);
    }
    if (i < n) {
      V8 v;
      LoadV(&v, src + n - 8);
      StoreV(dst + n - 8, v);
    }
    return;
  }
  int64_t i = 0;
  if (n & 4) {
    std::memcpy(dst, src, 4 * sizeof(float));
    i = 4;
  }
  if (n & 2) {
    std::memcpy(dst + i, src + i, 2 * sizeof(float));
    i += 2;
  }
  if (n & 1) dst[i] = src[i];
}

// dst[0, n) = 0, as CopyShort writes: inline, never a call to memset.
QUILT_ALWAYS_INLINE void ZeroShort(int64_t n, float* dst) {
  const V8 zero = V8{};
  if (n >= 8) {
    for (int64_t i = 0; i + 8 <= n; i += 8) StoreV(dst + i, zero);
    StoreV(dst + n - 8, zero);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
}

}  // namespace quilt::cpu
