// Resize's taps, axis by axis, as ONNX defines them: where each output position of an axis reads
// the input (its neighbours and their weights, or the extrapolation value). The CPU kernel
// (image.cc) computes them at run time; the OpenCL emitter at compile time, into constant tables,
// so both devices resize alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/src/inline_vector.h"
#include "runtime/src/status.h"

namespace quilt::cpu {

struct ResizeParams {
  std::string mode, ctm, nearest_mode;  // ctm: coordinate_transformation_mode
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
};

// One output position of one axis: input indices and weights, or the extrapolation value.
struct AxisTaps {
  bool extrapolate = false;
  // Inline up to 4 taps (cubic's): the kernel plans them at every run without allocating.
  rt::InlineVector<int64_t, 4> index;
  rt::InlineVector<double, 4> weight;
};

// The taps of output position x of an axis of `in` elements resized to `out` with `scale` (and,
// for tf_crop_and_resize, the roi of the axis); an error for a mode ONNX does not define, a
// coordinate that is not finite, or an antialiasing filter too wide to compute.
rt::Status ResizeTaps(const ResizeParams& p, int64_t in, int64_t out, double scale,
                      double roi_start, double roi_end, int64_t x, AxisTaps* taps);

}  // namespace quilt::cpu
