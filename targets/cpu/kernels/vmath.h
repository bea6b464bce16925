// exp, log, tanh, sigmoid and erf of float32, written so that a loop over them vectorizes:
// arithmetic, bit casts, min / max and selects, no library calls (the files that loop over them are
// built with -fno-trapping-math, without which GCC will not turn a select into vector code). Each
// is within a few ulp of the correctly rounded value (exp, sigmoid: relative; tanh, erf: a few ulp
// relative, or 3e-7 absolute near 0 for erf), keeps NaN, and gives the limits at the infinities;
// tests/runtime/fast_kernels_test.cc measures them against double precision.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "targets/cpu/kernels/simd.h"

namespace quilt::cpu::vmath {

// x unchanged when NaN (std::min / std::max return their first argument then).
QUILT_ALWAYS_INLINE float Clamp(float x, float lo, float hi) {
  return std::min(std::max(x, lo), hi);
}

// v * 2^k for k in [-252, 254], in two steps of normal powers of two, so that the result is
// subnormal or infinite exactly where v * 2^k is.
QUILT_ALWAYS_INLINE float Scale(float v, int32_t k) {
  int32_t a = k >> 1, b = k - a;
  return v * std::bit_cast<float>(static_cast<uint32_t>(a + 127) << 23) *
         std::bit_cast<float>(static_cast<uint32_t>(b + 127) << 23);
}

// e^x: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so r is exact to float), e^r by a
// polynomial (Cephes' expf coefficients), times 2^n. Past 88.73 it is inf, below -104 zero. NaN
// stays NaN through the arithmetic.
QUILT_ALWAYS_INLINE float Exp(float x) {
  float c = Clamp(x, -104.0f, 88.8f);
  // n rounded to nearest by adding 1.5 * 2^23 (|c log2 e| < 2^22), which leaves n in the low
  // bits of the sum: no float-to-int conversion (undefined for NaN).
  float t = c * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  int32_t k = static_cast<int32_t>(std::bit_cast<uint32_t>(t) - 0x4B400000u);
  float r = c - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return Scale(p * r * r + r + 1.0f, k);
}

// log x: x = m 2^e with m in [sqrt(1/2), sqrt(2)) (a subnormal scaled by 2^23 first), log m by a
// polynomial in m - 1 (Cephes' logf coefficients), plus e ln 2 in two parts. log 0 is -inf, of
// a negative number NaN, of inf inf; NaN stays NaN.
QUILT_ALWAYS_INLINE float Log(float x) {
  bool subnormal = x < 1.17549435e-38f;  // (and 0 and the negatives, replaced at the end)
  uint32_t b = std::bit_cast<uint32_t>(subnormal ? x * 8388608.0f : x);
  int32_t e = static_cast<int32_t>((b >> 23) & 0xffu) - 126 - (subnormal ? 23 : 0);
  float m = std::bit_cast<float>((b & 0x007fffffu) | 0x3f000000u);  // in [0.5, 1)
  bool low = m < 0.707106781186547524f;
  float f = low ? m + m - 1.0f : m - 1.0f;
  float fe = static_cast<float>(low ? e - 1 : e);
  float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  y = y - 2.12194440e-4f * fe;
  y = y - 0.5f * z;
  float r = f + y + 0.693359375f * fe;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  r = x == kInf ? kInf : r;
  r = x == 0.0f ? -kInf : r;
  r = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : r;
  return x != x ? x : r;
}

// tanh: an odd polynomial below 0.625 (Cephes' tanhf coefficients), 1 - 2 / (e^2|x| + 1) above,
// the sign put back.
QUILT_ALWAYS_INLINE float Tanh(float x) {
  float a = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = x + x * z * p;
  float big = 1.0f - 2.0f / (Exp(2.0f * a) + 1.0f);
  big = std::bit_cast<float>(std::bit_cast<uint32_t>(big) |
                             (std::bit_cast<uint32_t>(x) & 0x80000000u));
  return a < 0.625f ? small : big;  // NaN: big, which is NaN
}

// 1 / (1 + e^-x), as e^x / (1 + e^x) for negative x (so that it reaches the subnormals rather
// than 0 where e^-x overflows).
QUILT_ALWAYS_INLINE float Sigmoid(float x) {
  float e = Exp(-std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu));
  float d = 1.0f / (1.0f + e);
  float negative = e * d;
  return x < 0.0f ? negative : d;  // NaN: d, NaN
}

#if defined(__GNUC__)
// Exp and Sigmoid in place on a vector of floats (the compiler's generic vectors, V8 or V16; by
// reference, and bit casts by the builtin: a vector wider than the baseline's may not cross a
// call), lane by lane with the same operations in the same order, so that a kernel holding its
// values in registers gets what a loop over the scalar functions gets, bit for bit.
// kNonPositive: x is known to be 0 or less, or NaN (a sigmoid's -|x|), so its clamp from above,
// which would keep it as it is, is left out.
template <typename V, bool kNonPositive = false>
QUILT_ALWAYS_INLINE void ExpOf(V& x) {
  typedef int32_t I __attribute__((vector_size(sizeof(V))));
  V c = x < -104.0f ? V{} - 104.0f : x;  // Clamp: std::max, then std::min
  if constexpr (!kNonPositive) c = 88.8f < c ? V{} + 88.8f : c;
  V t = c * 1.44269504088896341f + 12582912.0f;
  V n = t - 12582912.0f;
  I k = __builtin_bit_cast(I, t) - 0x4B400000;
  V r = c - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  // Scale: times 2^a, then 2^b.
  I a = k >> 1, b = k - a;
  x = (p * r * r + r + 1.0f) * __builtin_bit_cast(V, (a + 127) << 23) *
      __builtin_bit_cast(V, (b + 127) << 23);
}

template <typename V>
QUILT_ALWAYS_INLINE void SigmoidOf(V& x) {
  typedef int32_t I __attribute__((vector_size(sizeof(V))));
  // -|x|: the sign bit set (one op where the magnitude's and then its negation's were two).
  V e = __builtin_bit_cast(V, __builtin_bit_cast(I, x) | std::numeric_limits<int32_t>::min());
  ExpOf<V, true>(e);
  V d = 1.0f / (1.0f + e);
  V negative = e * d;
  x = x < 0.0f ? negative : d;
}
#endif

// erf: below 1, x P(x^2); from 1 to 3.92, 1 - e^(-x^2) Q(1 / x); past it 1 (erfc < 5e-9); the
// sign put back. P and Q are least-squares fits in double (numpy.polyfit, degrees 6 and 8) of
// erf(x) / x on [0, 1] and of erfc(x) e^(x^2) on [1, 3.92]: in float, within 3e-7 relative
// below 1 and 1e-7 absolute above.
QUILT_ALWAYS_INLINE float Erf(float x) {
  float a = std::min(std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu), 3.92f);
  float t = a * a;
  float p = 8.006950542e-05f;
  p = p * t - 8.053771110e-04f;
  p = p * t + 5.192959798e-03f;
  p = p * t - 2.685607041e-02f;
  p = p * t + 1.128363465e-01f;
  p = p * t - 3.761262977e-01f;
  p = p * t + 1.128379166e+00f;
  float small = a * p;
  float u = 1.0f / std::max(a, 1.0f);
  float q = -9.140667731e-03f;
  q = q * u + 2.634650428e-02f;
  q = q * u + 2.992958246e-02f;
  q = q * u - 2.510562846e-01f;
  q = q * u + 5.048976114e-01f;
  q = q * u - 4.757929148e-01f;
  q = q * u + 4.328325696e-02f;
  q = q * u + 5.588316319e-01f;
  q = q * u + 2.847995342e-04f;
  float big = 1.0f - Exp(-t) * q;
  big = a >= 3.92f ? 1.0f : big;
  float r = a < 1.0f ? small : big;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(r) |
                              (std::bit_cast<uint32_t>(x) & 0x80000000u));
}

// The activations a fused epilogue computes through these functions, each as its own kernels
// compute it: kSilu v * Sigmoid(v) (the sigmoid and multiply kernels' values), kSigmoid
// Sigmoid(v); and their names as a conv's or matmul's attribute activation gives them ("silu",
// "sigmoid"; kNone for any other). (Not GELU: computing erf in the GEMM's epilogue cost more than
// the nn.gelu step it spared, targets/README.md.)
enum class Smooth : uint8_t { kNone, kSilu, kSigmoid };

inline Smooth SmoothNamed(std::string_view name) {
  if (name == "silu") return Smooth::kSilu;
  if (name == "sigmoid") return Smooth::kSigmoid;
  return Smooth::kNone;
}

#if defined(__GNUC__)
// f on vectors v[0, kN), in place, lane by lane as the scalar functions: a loop per function, no
// branch per vector.
template <int kN, typename V>
QUILT_ALWAYS_INLINE void Of(Smooth f, V* v) {
  if (f == Smooth::kSilu) {
    for (int i = 0; i < kN; ++i) {
      V s = v[i];
      SigmoidOf(s);
      v[i] = v[i] * s;
    }
  } else if (f == Smooth::kSigmoid) {
    for (int i = 0; i < kN; ++i) SigmoidOf(v[i]);
  }
}
#endif

// f of v in double with the C library's exp: the reference kernels' values.
inline double OfInDouble(Smooth f, double v) {
  switch (f) {
    case Smooth::kSilu:
      return v / (1 + std::exp(-v));
    case Smooth::kSigmoid:
      return 1 / (1 + std::exp(-v));
    case Smooth::kNone:
      break;
  }
  return v;
}

}  // namespace quilt::cpu::vmath
