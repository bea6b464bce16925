// The window walk the fast convolution and pooling kernels share (conv_fast.cc, pool_fast.cc):
// a window's spatial dims right-aligned in 3, and the output positions whose input lies inside.
// Internal to the CPU kernels.
#pragma once

#include <algorithm>
#include <cstdint>

#include "targets/cpu/kernels/nn_internal.h"

namespace quilt::cpu::nn {

// A window with its spatial dims right-aligned in 3 (a 1-d convolution is seen as 1 x 1 x L), so
// the last dim is always the one contiguous in memory.
struct Geo {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3];
  int64_t InSize() const { return in[0] * in[1] * in[2]; }
  int64_t OutSize() const { return out[0] * out[1] * out[2]; }
  int64_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
  // Each output position reads the input position of the same index: a 1x1 kernel, unit
  // strides, no leading pad, and as many outputs as inputs (no trailing pad either).
  bool Pointwise() const {
    for (int d = 0; d < 3; ++d) {
      if (kernel[d] != 1 || stride[d] != 1 || pad[d] != 0 || out[d] != in[d]) return false;
    }
    return true;
  }
};

// Dims where one output reads one input through one tap (in, out and kernel 1, no leading pad)
// are dropped first: a (5, 1) kernel over an (L, 1) image is a 1-d convolution over L, whose
// last dim is the long one.
inline Geo RightAligned(const Window& w) {
  int keep[kMaxSpatial], rank = 0;
  for (int s = 0; s < w.rank; ++s) {
    if (w.in[s] == 1 && w.out[s] == 1 && w.kernel[s] == 1 && w.pad_begin[s] == 0) continue;
    keep[rank++] = s;
  }
  Geo g;
  int shift = kMaxSpatial - rank;
  for (int d = 0; d < kMaxSpatial; ++d) {
    bool real = d >= shift;
    int s = real ? keep[d - shift] : 0;
    g.in[d] = real ? w.in[s] : 1;
    g.out[d] = real ? w.out[s] : 1;
    g.kernel[d] = real ? w.kernel[s] : 1;
    g.stride[d] = real ? w.stride[s] : 1;
    g.dilation[d] = real ? w.dilation[s] : 1;
    g.pad[d] = real ? w.pad_begin[s] : 0;
  }
  return g;
}

// The output positions o in [0, out) whose input o * stride + offset lies in [0, in).
inline void InsideRange(int64_t offset, int64_t stride, int64_t in, int64_t out, int64_t* lo,
                        int64_t* hi) {
  // o * stride + offset >= 0  <=>  o >= ceil(-offset / stride)
  int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // o * stride + offset <= in - 1  <=>  o <= floor((in - 1 - offset) / stride)
  int64_t last = in - 1 - offset < 0 ? -1 : (in - 1 - offset) / stride;
  *lo = std::min(first, out);
  *hi = std::clamp<int64_t>(last + 1, *lo, out);
}

// The taps k in [*first, *last] of a window dim whose input index o * stride - pad + k * dilation
// lies in [0, in) (first > last when none).
inline void ValidTaps(int64_t o, int64_t stride, int64_t pad, int64_t dilation, int64_t kernel,
                      int64_t in, int64_t* first, int64_t* last) {
  int64_t base = o * stride - pad;
  *first = 0;
  while (*first < kernel && base + *first * dilation < 0) ++*first;
  *last = kernel - 1;
  while (*last >= *first && base + *last * dilation >= in) --*last;
}

// Calls row(i0, i1, k0, k1) for each row of taps (k0, k1) of output row (o0, o1) whose input row
// (i0, i1) lies inside the input, in the window's order.
template <typename F>
inline void ForEachInsideRow(const Geo& g, int64_t o0, int64_t o1, F&& row) {
  for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
    int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
    if (i0 < 0 || i0 >= g.in[0]) continue;
    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
      int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
      if (i1 < 0 || i1 >= g.in[1]) continue;
      row(i0, i1, k0, k1);
    }
  }
}

}  // namespace quilt::cpu::nn
