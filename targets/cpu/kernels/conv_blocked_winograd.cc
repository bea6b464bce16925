// Winograd F(2x2, 3x3) and F(4x4, 3x3) on channel-blocked data (conv_blocked.h), for the blocked
// kernel's dense 3x3 convs of unit strides: the transforms of conv_fast.cc's Winograd with a lane
// per channel, the products as pointwise blocked convs through the dense tiles
// (conv_blocked_internal.h).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "targets/cpu/kernels/conv_blocked_internal.h"

namespace quilt::cpu::nn::blocked {
namespace {

// ---- Winograd on blocked data -----------------------------------------------------------------
//
// The transforms of conv_fast.cc's Winograd with a lane per channel: each kT x kT input tile of a
// block of 16 channels (kT * kT vectors) becomes its kE elements V_e = (B^T d B)_e, each stored
// as a pixel of a blocked "image" of one row of tiles per element; the kE products M_e = U_e V_e
// are pointwise blocked convolutions of those images (RunItems, the dense tiles above), and each
// tile's elements M_e of a block of output channels become its kM x kM outputs (A^T m A), the
// epilogue applied as they are stored. No transposes: every load and store is a vector of 16
// channels.
//
// F(2x2, 3x3): 16 products for 4 outputs, 4 an output; F(4x4, 3x3): 36 for 16, 2.25 an output,
// and the input's transform a third fewer loads an output, for larger rounding (the filter's
// transform is made in double). Its B, G and A^T are those of the points 0, 1, -1, 1/2, -2 and
// infinity (a set that x -> -1/x maps to itself), not the usual 0, +-1, +-2: their products'
// magnitudes, which the rounding follows, are smaller. In the reference test (conv_blocked_test)
// the worst error of a plain conv, relative to sum |x| |w|, went from 1.5e-6 to 6.9e-7, for 7
// more operations in each six values' input transform; F(2x2)'s is 1.5e-7.
template <int kM>
struct Wino {
  static constexpr int kT = kM + 2, kE = kT * kT;
};

// U = G g G^T of F(4x4, 3x3) for one 3x3 filter (tap t at g[t * tap_stride]), in double, element
// (i, j) at u[i * 6 + j]. G's rows carry the powers of two taken out of WinoBt6's and WinoAt6's
// (B^T's rows but the fourth halved, A^T's fourth column divided by 8), so those stay small whole
// numbers; scaling by a power of two rounds nothing.
void WinogradFilter4(const float* g, int64_t tap_stride, float u[36]) {
  auto g_of = [](double a, double b, double d, double(&r)[6]) {
    r[0] = a / 2;
    r[1] = (a + b + d) / 6;
    r[2] = -(a - b + d) / 6;
    r[3] = -(4 * a + 2 * b + d) / 30;
    r[4] = (a - 2 * b + 4 * d) / 30;
    r[5] = d / 2;
  };
  double gg[6][3];  // G g: rows of g combined
  for (int j = 0; j < 3; ++j) {
    double r[6];
    g_of(g[j * tap_stride], g[(3 + j) * tap_stride], g[(6 + j) * tap_stride], r);
    for (int i = 0; i < 6; ++i) gg[i][j] = r[i];
  }
  for (int i = 0; i < 6; ++i) {
    double r[6];
    g_of(gg[i][0], gg[i][1], gg[i][2], r);
    for (int j = 0; j < 6; ++j) u[i * 6 + j] = static_cast<float>(r[j]);
  }
}

// The weights' transforms: U_e (o x i) for each element, laid out as a pointwise conv's weight
// (BlockConvWeight of one tap), one element after another; F(2x2)'s at [0], F(4x4)'s at [1],
// each made when a run first takes it (the images of a session's runs may change size, and with
// them the tile).
struct BlockedWinogradWeights {
  mutable std::once_flag once[2];
  mutable std::vector<float> u[2];
};

// From w laid out by BlockConvWeight for o x i channels and 3x3 taps (blocked data).
template <int kM>
void TransformWeights(const float* w, int64_t o, int64_t i, std::vector<float>* out) {
  constexpr int kE = Wino<kM>::kE;
  out->resize(static_cast<size_t>(kE * o * i));
  const int64_t group = kBlocksPerGroup * kB16;
  for (int64_t oc = 0; oc < o; ++oc) {
    const int64_t first = oc / group * group, width = std::min(group, o - first);
    for (int64_t ic = 0; ic < i; ++ic) {
      // Tap t of (oc, ic) at g[t * width * 16] (BlockConvWeight, in blocks of 16 input channels).
      const float* g =
          w + first * i * 9 + ((ic / kB16) * 9 * kB16 + ic % kB16) * width + oc - first;
      float u[kE];
      if constexpr (kM == 2) {
        WinogradFilter(g, width * kB16, u);
      } else {
        WinogradFilter4(g, width * kB16, u);
      }
      for (int e = 0; e < kE; ++e)
        (*out)[static_cast<size_t>(e * o * i + first * i + ic * width + oc - first)] = u[e];
    }
  }
}

template <int kM>
const float* WeightsOf(const BlockedWinogradWeights& t, const float* w, int64_t o, int64_t i) {
  constexpr int k = kM == 2 ? 0 : 1;
  std::call_once(t.once[k], [&] { TransformWeights<kM>(w, o, i, &t.u[k]); });
  return t.u[k].data();
}

// The tiles of a Winograd block: tile rows [r0, r1) of the batch (row r: image r / tiles_h, tile
// row r % tiles_h), `count` tiles; element e of block b of tile t at ((e * blocks + b) * count +
// t) * 16 of v (input) and m (products).
struct WinoTiles {
  int64_t tiles_w, tiles_h, r0, r1, count;
};

// A vector of 8 or 16 lanes from p, and to p.
QUILT_ALWAYS_INLINE void LoadLanes(V8* v, const float* p) { LoadV(v, p); }
QUILT_ALWAYS_INLINE void LoadLanes(V16* v, const float* p) { Load16(v, p); }
QUILT_ALWAYS_INLINE void StoreLanes(float* p, const V8& v) { StoreV(p, v); }
QUILT_ALWAYS_INLINE void StoreLanes(float* p, const V16& v) { Store16(p, v); }

// F(2x2): B^T d down a tile's rows (d[row][col] -> r[row][col]), then (.) B across its columns;
// T: a vector of channels, or one channel's float.
template <typename T>
QUILT_ALWAYS_INLINE void WinoInputTile(const T (&d)[4][4], T (&v)[16]) {
  T r[4][4];
  for (int j = 0; j < 4; ++j) {
    r[0][j] = d[0][j] - d[2][j];
    r[1][j] = d[1][j] + d[2][j];
    r[2][j] = d[2][j] - d[1][j];
    r[3][j] = d[1][j] - d[3][j];
  }
  for (int i = 0; i < 4; ++i) {
    v[i * 4 + 0] = r[i][0] - r[i][2];
    v[i * 4 + 1] = r[i][1] + r[i][2];
    v[i * 4 + 2] = r[i][2] - r[i][1];
    v[i * 4 + 3] = r[i][1] - r[i][3];
  }
}

// F(2x2): A^T m A, a tile's 2x2 outputs y from its 16 elements m (element (i, j) at m[i * 4 + j]).
template <typename T>
QUILT_ALWAYS_INLINE void WinoOutputTile(const T (&m)[16], T (&y)[2][2]) {
  T s[2][4];
  for (int j = 0; j < 4; ++j) {  // A^T m down the columns
    s[0][j] = m[j] + m[4 + j] + m[8 + j];
    s[1][j] = m[4 + j] - m[8 + j] - m[12 + j];
  }
  for (int i = 0; i < 2; ++i) {
    y[i][0] = s[i][0] + s[i][1] + s[i][2];
    y[i][1] = s[i][1] - s[i][2] - s[i][3];
  }
}

// F(4x4): B^T of six values (a row or a column of a tile), its rows doubled but the fourth, each
// row through the differences p and q: 20 operations (13 for the points 0, +-1, +-2).
template <typename T>
QUILT_ALWAYS_INLINE void WinoBt6(const T (&d)[6], T (&v)[6]) {
  const T p = d[3] - d[1], q = d[4] - d[2], s = d[2] + d[3], t = d[3] - d[2];
  v[0] = 2.0f * (d[0] - d[2] + q) + 3.0f * p;
  v[1] = 2.0f * (p + q) + 3.0f * s;
  v[2] = 2.0f * (q - p) + 3.0f * t;
  v[3] = 2.0f * p + q;
  v[4] = 2.0f * q - p;
  v[5] = 2.0f * (d[5] - d[3] - p) + 3.0f * q;
}

// F(4x4): A^T of six values, four outputs (the column of the point 1/2 times 8).
template <typename T>
QUILT_ALWAYS_INLINE void WinoAt6(const T (&m)[6], T (&y)[4]) {
  const T s12 = m[1] + m[2], d12 = m[1] - m[2];
  y[0] = m[0] + s12 + 8.0f * m[3] + m[4];
  y[1] = d12 + 4.0f * m[3] - 2.0f * m[4];
  y[2] = s12 + 2.0f * m[3] + 4.0f * m[4];
  y[3] = d12 + m[3] - 8.0f * m[4] + m[5];
}

// F(4x4): lanes [h, h + the width of V) of one tile's 36 elements of a block, from its window's
// pixels (src[i][j]: a pixel's 16 channels) to out + e * e_stride + h: B^T across each row, then
// down each column.
template <typename V>
QUILT_ALWAYS_INLINE void WinoInput4(const float* const (&src)[6][6], int h, float* out,
                                    int64_t e_stride) {
  V r[6][6];
  for (int i = 0; i < 6; ++i) {
    V d[6];
    for (int j = 0; j < 6; ++j) LoadLanes(&d[j], src[i][j] + h);
    WinoBt6(d, r[i]);
  }
  for (int j = 0; j < 6; ++j) {
    V col[6], v[6];
    for (int i = 0; i < 6; ++i) col[i] = r[i][j];
    WinoBt6(col, v);
    for (int i = 0; i < 6; ++i) StoreLanes(out + (i * 6 + j) * e_stride + h, v[i]);
  }
}

// F(4x4): lanes [h, h + the width of V) of one tile's 4 x 4 outputs s (A^T m down each column
// of its elements at in + e * e_stride + h, then across the rows: y[i][j] at row i, column j).
template <typename V>
QUILT_ALWAYS_INLINE void WinoOutput4(const float* in, int64_t e_stride, int h, V (&y)[4][4]) {
  V s[4][6];
  for (int j = 0; j < 6; ++j) {
    V col[6], t[4];
    for (int i = 0; i < 6; ++i) LoadLanes(&col[i], in + (i * 6 + j) * e_stride + h);
    WinoAt6(col, t);
    for (int i = 0; i < 4; ++i) s[i][j] = t[i];
  }
  for (int i = 0; i < 4; ++i) WinoAt6(s[i], y[i]);
}

// Sixteen zeros: the pixels of a tile's window in the padding.
alignas(64) constexpr float kZeros[kB16] = {};

// One tile's elements of a block from its window's pixels (src[i][j]: a pixel's 16 channels) to
// out + e * e_stride. Without AVX-512 (16 registers of 8 lanes), each half of the block in turn:
// a generic 16-lane vector there is kept in memory (conv_blocked_internal.h), and with the
// transforms a channel at a time opennsfw's Winograd convs of 32 channels over 56 x 56 took 2.8
// ms each, 1.65 so.
template <bool kWide, int kM>
QUILT_ALWAYS_INLINE void WinoInputAt(const float* const (&src)[kM + 2][kM + 2], float* out,
                                     int64_t e_stride) {
  if constexpr (kM == 4) {
    if constexpr (kWide) {
      WinoInput4<V16>(src, 0, out, e_stride);
    } else {
      for (int h = 0; h < kB16; h += 8) WinoInput4<V8>(src, h, out, e_stride);
    }
  } else if constexpr (kWide) {
    V16 d[4][4], t[16];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) Load16(&d[i][j], src[i][j]);
    WinoInputTile(d, t);
    for (int e = 0; e < 16; ++e) Store16(out + e * e_stride, t[e]);
  } else {
    for (int h = 0; h < kB16; h += 8) {
      V8 d[4][4], t[16];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) LoadV(&d[i][j], src[i][j] + h);
      WinoInputTile(d, t);
      for (int e = 0; e < 16; ++e) StoreV(out + e * e_stride + h, t[e]);
    }
  }
}

// Input blocks [cb0, cb1) of the block's tiles into v.
template <bool kWide, int kM>
QUILT_ALWAYS_INLINE void WinoInputOf(const Blocked& c, const float* x, const WinoTiles& w,
                                     int64_t cb0, int64_t cb1, float* v) {
  constexpr int kT = Wino<kM>::kT;
  const int64_t plane = c.ih * c.iw * kB16, e_stride = c.ib * w.count * kB16;
  for (int64_t cb = cb0; cb < cb1; ++cb) {
    for (int64_t r = w.r0; r < w.r1; ++r) {
      const int64_t b = r / w.tiles_h, ty = r % w.tiles_h;
      const float* xp = x + (b * c.ib + cb) * plane;
      const int64_t iy0 = kM * ty - c.ph;
      const bool rows_inside = iy0 >= 0 && iy0 + kT <= c.ih;
      float* out = v + (cb * w.count + (r - w.r0) * w.tiles_w) * kB16;
      for (int64_t tx = 0; tx < w.tiles_w; ++tx) {
        const int64_t ix0 = kM * tx - c.pw;
        const float* src[kT][kT];
        if (rows_inside && ix0 >= 0 && ix0 + kT <= c.iw) {  // no pixel of the window in the padding
          for (int i = 0; i < kT; ++i)
            for (int j = 0; j < kT; ++j) src[i][j] = xp + ((iy0 + i) * c.iw + ix0 + j) * kB16;
        } else {
          for (int i = 0; i < kT; ++i) {
            for (int j = 0; j < kT; ++j) {
              const int64_t iy = iy0 + i, ix = ix0 + j;
              const bool inside = iy >= 0 && iy < c.ih && ix >= 0 && ix < c.iw;
              src[i][j] = inside ? xp + (iy * c.iw + ix) * kB16 : kZeros;
            }
          }
        }
        WinoInputAt<kWide, kM>(src, out + tx * kB16, e_stride);
      }
    }
  }
}

// Output blocks [ob0, ob1) of the block's tiles from m: A^T m A, the epilogue, into y (and its
// residual).
template <bool kWide, int kM>
QUILT_ALWAYS_INLINE void WinoOutputOf(const Blocked& c, const float* m, const WinoTiles& w,
                                      int64_t ob0, int64_t ob1, float* y, const float* res,
                                      const Epilogue& epilogue) {
  using Ep = LaneEpilogue<kWide>;
  const int64_t plane = c.oh * c.ow * kB16, e_stride = c.ob * w.count * kB16;
  alignas(Ep) unsigned char storage[sizeof(Ep)];
  Ep* lanes = reinterpret_cast<Ep*>(storage);
  for (int64_t ob = ob0; ob < ob1; ++ob) {
    const Ep* ep = nullptr;
    if (epilogue.active) ep = new (lanes) Ep(epilogue.e, ob * kB16, TakeLanes{});
    for (int64_t r = w.r0; r < w.r1; ++r) {
      const int64_t b = r / w.tiles_h, ty = r % w.tiles_h;
      const int64_t at = (b * c.ob + ob) * plane;
      const float* in = m + (ob * w.count + (r - w.r0) * w.tiles_w) * kB16;
      const int rows = static_cast<int>(std::min<int64_t>(kM, c.oh - kM * ty));
      for (int64_t tx = 0; tx < w.tiles_w; ++tx) {
        const int n = static_cast<int>(std::min<int64_t>(kM, c.ow - kM * tx));
        if constexpr (kM == 4) {
          // Each row's outputs (and residual) at yo[i] (ro[i]).
          float* yo[4] = {};
          const float* ro[4] = {};
          for (int i = 0; i < rows; ++i) {
            const int64_t o = at + ((kM * ty + i) * c.ow + kM * tx) * kB16;
            yo[i] = y + o;
            if (res) ro[i] = res + o;
          }
          if constexpr (!kWide) {
            // Each half of the block stored, with a bias, residual and bounds applied in
            // registers (StoreTile8; each output's residual read before the output is stored over
            // it), any other epilogue then on the stored rows (FinishTile, out of line), a
            // residual in y's memory (the executor's in-place output) copied aside first.
            const bool in_registers = ep && ep->BiasClampOnly();
            alignas(64) float aside[4][4 * kB16];
            if (ep && !in_registers && res && res == y) {
              for (int i = 0; i < rows; ++i) {
                std::memcpy(aside[i], ro[i], sizeof(float) * kB16 * static_cast<size_t>(n));
                ro[i] = aside[i];
              }
            }
            for (int h = 0; h < kB16; h += 8) {
              V8 t[4][4];
              WinoOutput4(in + tx * kB16, e_stride, h, t);
              const auto* half = !in_registers ? nullptr : h == 0 ? &ep->lo : &ep->hi;
              for (int i = 0; i < rows; ++i) {
                for (int j = 0; j < n; ++j) {
                  if (in_registers) {
                    if (ro[i]) {
                      V8 rv;
                      LoadV(&rv, ro[i] + j * kB16 + h);
                      half->template ApplyBiasClamp<1>(&t[i][j], &rv);
                    } else {
                      half->template ApplyBiasClamp<1>(&t[i][j]);
                    }
                  }
                  StoreV(yo[i] + j * kB16 + h, t[i][j]);
                }
              }
            }
            if (ep && !in_registers) {
              for (int i = 0; i < rows; ++i) FinishTile(*ep, yo[i], n, ro[i]);
            }
          } else {
            // The epilogue in registers, each output's residual read before the output is
            // stored over it.
            V16 t[4][4];
            WinoOutput4(in + tx * kB16, e_stride, 0, t);
            for (int i = 0; i < rows; ++i) {
              for (int j = 0; j < n; ++j) {
                if (ep) {
                  if (res) {
                    V16 rv;
                    Load16(&rv, ro[i] + j * kB16);
                    ep->template Apply<1>(&t[i][j], &rv);
                  } else {
                    ep->template Apply<1>(&t[i][j]);
                  }
                }
                Store16(yo[i] + j * kB16, t[i][j]);
              }
            }
          }
        } else if constexpr (!kWide) {
          // Each half of the block (WinoInputAt), then the tile's rows stored with their
          // epilogue (StoreTile8: a bias, residual and bounds in registers, any other on the
          // stored row, out of line).
          V8 yv[2][2][2];  // [half][row][column]
          for (int h = 0; h < 2; ++h) {
            V8 mv[16];
            for (int e = 0; e < 16; ++e) LoadV(&mv[e], in + e * e_stride + tx * kB16 + h * 8);
            WinoOutputTile(mv, yv[h]);
          }
          for (int i = 0; i < rows; ++i) {
            const int64_t o = at + ((2 * ty + i) * c.ow + 2 * tx) * kB16;
            StoreTile8<2>(yv[0][i], yv[1][i], y + o, ep, res ? res + o : nullptr, n);
          }
        } else {
          V16 mv[16], out[2][2];
          for (int e = 0; e < 16; ++e) Load16(&mv[e], in + e * e_stride + tx * kB16);
          WinoOutputTile(mv, out);
          for (int i = 0; i < rows; ++i) {
            for (int j = 0; j < n; ++j) {
              const int64_t o = at + ((2 * ty + i) * c.ow + 2 * tx + j) * kB16;
              if (ep) {
                if (res) {
                  V16 rv;
                  Load16(&rv, res + o);
                  ep->template Apply<1>(&out[i][j], &rv);
                } else {
                  ep->template Apply<1>(&out[i][j]);
                }
              }
              Store16(y + o, out[i][j]);
            }
          }
        }
      }
    }
  }
}

// What a Winograd step's phases read: the step's blocked geometry, its data, transformed weights,
// output, residual and epilogue, and the product's plan (the pointwise convs of one element).
struct WinoStep {
  const Blocked* c;
  const float *x, *u, *res;
  float* y;
  const Epilogue* epilogue;
  int64_t segments;
};

// The products in chunks of 96 tiles.
constexpr int64_t kWinoChunk = 96;

// The kE products of a block's tiles, items [i0, i1) of kE * chunks (element, then a chunk of
// 96 tiles): M_e = U_e V_e as a pointwise blocked conv of the element's row of tiles.
template <bool kWide>
QUILT_ALWAYS_INLINE void WinoProductsOf(const WinoStep& s, const WinoTiles& w, const float* v,
                                        float* m, int64_t i0, int64_t i1) {
  const Blocked& c = *s.c;
  Blocked p = c;
  p.n = 1;
  p.ih = p.oh = 1;
  p.iw = p.ow = w.count;
  p.kh = p.kw = p.sh = p.sw = p.dh = p.dw = 1;
  p.ph = p.pw = 0;
  p.pointwise = true;
  p.x_block = w.count * kB16;
  p.cb0 = 0;
  p.cb1 = c.ib;
  Epilogue none = *s.epilogue;
  none.active = false;
  const int64_t chunks = (w.count + kWinoChunk - 1) / kWinoChunk;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t e = i / chunks, col = i % chunks;
    Work k{&p,
           v + e * c.ib * w.count * kB16,
           s.u + e * c.ob * c.ib * kB16 * kB16,
           nullptr,
           m + e * c.ob * w.count * kB16,
           &none,
           kWinoChunk,
           1,
           1,
           s.segments};
    // The dense tiles' own out-of-line copies (inlined here, they were another 190 KB of the
    // library).
#if defined(QUILT_BLOCKED_AVX512)
    if constexpr (kWide) {
      RunPointwiseItems512(k, col, col + 1);
      continue;
    }
#endif
    RunItemsAny(k, col, col + 1);
  }
}

template <bool kWide, int kM>
QUILT_ALWAYS_INLINE void WinoPhaseOf(const WinoStep& s, const WinoTiles& w, int phase, float* v,
                                     float* m, int64_t i0, int64_t i1) {
  switch (phase) {
    case 0:
      WinoInputOf<kWide, kM>(*s.c, s.x, w, i0, i1, v);
      break;
    case 1:
      WinoProductsOf<kWide>(s, w, v, m, i0, i1);
      break;
    default:
      WinoOutputOf<kWide, kM>(*s.c, m, w, i0, i1, s.y, s.res, *s.epilogue);
  }
}

// A phase of F(tile x tile, 3x3).
template <bool kWide>
QUILT_ALWAYS_INLINE void WinoPhase(const WinoStep& s, const WinoTiles& w, int tile, int phase,
                                   float* v, float* m, int64_t i0, int64_t i1) {
  if (tile == 4) {
    WinoPhaseOf<kWide, 4>(s, w, phase, v, m, i0, i1);
  } else {
    WinoPhaseOf<kWide, 2>(s, w, phase, v, m, i0, i1);
  }
}

#if defined(QUILT_BLOCKED_AVX512)
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void WinoPhase512(const WinoStep& s,
                                                                       const WinoTiles& w, int tile,
                                                                       int phase, float* v,
                                                                       float* m, int64_t i0,
                                                                       int64_t i1) {
  WinoPhase<true>(s, w, tile, phase, v, m, i0, i1);
}
#endif
// Without AVX-512: an AVX2 copy, and one for the baseline (not QUILT_CLONES nor GCC's copies per
// phase: the products they call are RunItemsAny's clones). With the baseline's alone (pairs of
// SSE registers) opennsfw's Winograd convs ran 3-10% slower (32 channels over 56 x 56, 3 images:
// 1.78-1.84 ms against 1.65; 12 KB of code).
QUILT_AVX2_ONLY
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noclone))
#endif
void WinoPhaseAvx2(const WinoStep& s, const WinoTiles& w, int tile, int phase, float* v, float* m,
                   int64_t i0, int64_t i1) {
  WinoPhase<false>(s, w, tile, phase, v, m, i0, i1);
}
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noclone))
#endif
void WinoPhaseAny(const WinoStep& s, const WinoTiles& w, int tile, int phase, float* v, float* m,
                  int64_t i0, int64_t i1) {
  WinoPhase<false>(s, w, tile, phase, v, m, i0, i1);
}

// Conv c as F(tile x tile, 3x3).
void RunBlockedWinograd(KernelContext& ctx, const Blocked& c, const WinoStep& step, int tile) {
  const int64_t elements = (tile + 2) * (tile + 2);
  WinoTiles all{(c.ow + tile - 1) / tile, (c.oh + tile - 1) / tile, 0, 0, 0};
  // Blocks of tile rows across the batch's images, as conv_fast.cc's Winograd.
  const int64_t cg = c.ib * kB16, og = c.ob * kB16;
  const WinogradBlocks plan = PlanWinogradBlocks(c.n * all.tiles_h, all.tiles_w, cg, og,
                                                 ctx.threads(), static_cast<int>(elements));
  const int64_t rows_total = plan.rows, per_block = plan.per_block, blocks = plan.blocks;
  const int64_t threads = static_cast<int64_t>(ctx.threads());
  const int64_t most = per_block * all.tiles_w;
  auto phase = [&](const WinoTiles& w, int ph, float* v, float* m, int64_t i0, int64_t i1) {
#if defined(QUILT_BLOCKED_AVX512)
    if (HasAvx512Gemm()) return WinoPhase512(step, w, tile, ph, v, m, i0, i1);
#endif
    if (HasAvx2Fma()) return WinoPhaseAvx2(step, w, tile, ph, v, m, i0, i1);
    WinoPhaseAny(step, w, tile, ph, v, m, i0, i1);
  };
  auto tiles = [&](int64_t blk) {
    WinoTiles w = all;
    w.r0 = blk * per_block;
    w.r1 = std::min(rows_total, w.r0 + per_block);
    w.count = (w.r1 - w.r0) * w.tiles_w;
    return w;
  };
  auto products = [&](const WinoTiles& w) {
    return elements * ((w.count + kWinoChunk - 1) / kWinoChunk);
  };
  // Every element of the scratch is written before it is read.
  auto scratch = [&](float** v, float** m) {
    *v = Scratch(ScratchSlot::kWinogradInput, elements * cg * most);
    *m = Scratch(ScratchSlot::kWinogradProduct, elements * og * most);
  };
  if (blocks >= threads) {
    ctx.ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
      float *v, *m;
      scratch(&v, &m);
      for (int64_t blk = b0; blk < b1; ++blk) {
        WinoTiles w = tiles(blk);
        phase(w, 0, v, m, 0, c.ib);
        phase(w, 1, v, m, 0, products(w));
        phase(w, 2, v, m, 0, c.ob);
      }
    });
    return;
  }
  // Few blocks (small images): each phase of a block on the run's threads.
  float *v, *m;
  scratch(&v, &m);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    WinoTiles w = tiles(blk);
    const int64_t counts[3] = {c.ib, products(w), c.ob};
    for (int ph = 0; ph < 3; ++ph) {
      ctx.ParallelFor(counts[ph], 1, [&](int64_t i0, int64_t i1) { phase(w, ph, v, m, i0, i1); });
    }
  }
}

// Tests: the tile every Winograd step takes (2 or 4; 0: the rule's).
std::atomic<int> g_tile_for_testing{0};

}  // namespace
// Where the kernels run on 8 lanes (no AVX-512), Winograd takes every plane of 4 x 4 outputs or
// more: against the direct tiles, whose rows of a few pixels leave the multiply-adds waiting on
// each other, its products are pointwise convs over all the tiles at once. The 3x3 conv of a
// chain of 1x1, 3x3 + bias + relu, 1x1, 1x1 (ms, one thread, the median of 20 runs' profiles;
// AMD EPYC, AVX2): 512 -> 512 channels over 7 x 7, one image, 6.2 direct and 2.9 as Winograd; 3
// images 21 and 7.1; 256 at 4 x 4, one image, 0.56 and 0.27; 3 images 1.6 and 0.40; 128 at 5 x 5
// 0.14 and 0.086; 32 at 4 x 4 0.009 and 0.005; 64 at 12 x 12, 3 images, 0.51 and 0.22; at two
// threads 512 at 7 x 7 0.68 and 0.41, 512 at 4 x 4 1.15 and 1.07-1.14. Smaller planes stay
// direct: 512 at 3 x 3 1.26-1.36 against 1.39-1.41 as Winograd, at 2 x 2 0.49 and 0.70-0.88;
// 128 at 3 x 3, two threads, 0.035 and 0.057.
namespace {
bool WinogradPaysBlocked(const Blocked& c) {
  if (HasAvx512Gemm()) return WinogradPays(c.n, c.oh, c.ow);
  return c.oh >= 4 && c.ow >= 4;
}

// The output tile: F(2x2, 3x3); F(4x4, 3x3) where the step asks for it (kWinogradTile: quiltc
// --cpu-winograd-tile 4) and the plane is 16 x 16 or more, or where a test asks, on any plane.
// F(4x4) is faster on large planes: per conv, one thread, the min of 3 interleaved runs'
// profiles, F(2x2) -> F(4x4) (ms; AMD EPYC, AVX2; the points 0, +-1, +-2): nudenet-320n's 16 ->
// 16 at 80 x 80 0.36 -> 0.28, 32 -> 32 at 40 x 40 0.21-0.23 -> 0.14-0.17, 64 -> 64 at 20 x 20
// 0.16-0.19 -> 0.12-0.16 (at 10 x 10 slower: 128 -> 128 0.17-0.20 -> 0.19-0.27); ddddocr-det's 48
// -> 48 at 52 x 52 0.65-0.72 -> 0.43-0.45, 96 -> 96 at 52 x 52 2.2 -> 1.5, at 26 x 26 0.55-0.62
// -> 0.41-0.47 (192 -> 192 at 13 x 13 0.62-0.65 -> 0.69-0.71); whole models with it on planes of
// 16 x 16 or more 0.88-0.96 of their time. With the points of WinoBt6, the same convs of
// nudenet-320n and ddddocr-det (min of 4): 0.57-0.94 from 20 x 20 up, 0.73-1.13 at 13 x 13,
// 1.03-1.16 at 10 x 10. It is not the default: its rounding, up to 7e-7 of the sum of the terms'
// magnitudes (against 1.5e-7 for F(2x2)), puts a blocked package further than 1e-5 from the NCHW
// one where a sum cancels (block_layout_test's padded channels: 1.6 times that bound, F(2x2) 0.32
// of it), the bound the blocked layout keeps by default.
int WinogradTile(const Blocked& c) {
  const int forced = g_tile_for_testing.load(std::memory_order_relaxed);
  if (forced != 0) return forced;
  return c.winograd_tile == 4 && std::min(c.oh, c.ow) >= 16 ? 4 : 2;
}
}  // namespace

bool TakesWinograd(const Blocked& c, bool plain) {
  return !plain && !c.depthwise && c.kh == 3 && c.kw == 3 && c.sh == 1 && c.sw == 1 && c.dh == 1 &&
         c.dw == 1 && c.ph >= 0 && c.pw >= 0 && WinogradPaysBlocked(c);
}

void RunWinograd(KernelContext& ctx, const Blocked& c, const float* x, const float* w, int64_t o,
                 int64_t i, const float* residual, float* y, const Epilogue& epilogue) {
  // The weights' transforms made once each, kept in the step's cache.
  auto make = [&] { return std::make_shared<BlockedWinogradWeights>(); };
  std::shared_ptr<const BlockedWinogradWeights> u =
      ctx.cache() ? ctx.cache()->Get<BlockedWinogradWeights>(make) : make();
  const int tile = WinogradTile(c);
  // The products' input blocks in parts of 64 KB of a group's weights (one tap), as the
  // pointwise convs over short rows (a Winograd block is a few chunks of tiles).
  const int64_t per_block = std::min(kBlocksPerGroup, c.ob) * kB16 * kB16 * int64_t{sizeof(float)};
  WinoStep step{&c,
                x,
                tile == 4 ? WeightsOf<4>(*u, w, o, i) : WeightsOf<2>(*u, w, o, i),
                residual,
                y,
                &epilogue,
                std::clamp<int64_t>((per_block * c.ib + (64 << 10) - 1) / (64 << 10), 1, c.ib)};
  RunBlockedWinograd(ctx, c, step, tile);
}

}  // namespace quilt::cpu::nn::blocked

namespace quilt::cpu::nn {
void SetBlockedWinogradTileForTesting(int tile) {
  blocked::g_tile_for_testing.store(tile, std::memory_order_relaxed);
}
}  // namespace quilt::cpu::nn
