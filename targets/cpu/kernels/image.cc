// Image and detection ops: resize, grid sample, affine grid, ROI align, non-max suppression.
//
// Resize follows ONNX's definition axis by axis: each output coordinate maps to an input
// coordinate (coordinate_transformation_mode), a small set of neighbours and their weights
// (nearest, linear or cubic, optionally antialiased); the n-d result is the sum over every
// combination of the per-axis neighbours of the product of their weights.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "targets/cpu/kernels/manip_util.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

using namespace manip;  // NOLINT

// ---- resize ----------------------------------------------------------------------------------

struct ResizeParams {
  std::string mode, ctm, nearest_mode;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
};

// One output position of one axis: input indices and weights, or the extrapolation value.
struct AxisTaps {
  bool extrapolate = false;
  std::vector<int64_t> index;
  std::vector<double> weight;
};

std::vector<double> Coefficients(const ResizeParams& p, double ratio, double scale) {
  if (p.mode == "nearest") {
    if (ratio == 1.0) return {0, 1};
    const std::string& m = p.nearest_mode;
    if (m == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (m == "floor") return {1, 0};
    if (m == "ceil") return {0, 1};
    return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};  // round_prefer_floor
  }
  double a = p.cubic_a;
  if (p.mode == "linear") {
    if (!p.antialias) return {1 - ratio, ratio};
    double s = std::min(scale, 1.0);
    int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1);
    int64_t footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      double v = std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * s), 0.0, 1.0);
      c.push_back(v);
      sum += v;
    }
    for (double& v : c) v /= sum;
    return c;
  }
  // cubic
  if (!p.antialias) {
    double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
            ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
            ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a};
  }
  double s = std::min(scale, 1.0);
  int64_t start = static_cast<int64_t>(std::floor(-2 / s) + 1);
  int64_t end = 2 - start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    double x = std::abs(s * (static_cast<double>(i) - ratio));
    double v = x <= 1  ? ((a + 2) * x - (a + 3)) * x * x + 1
               : x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
                       : 0.0;
    c.push_back(v);
    sum += v;
  }
  for (double& v : c) v /= sum;
  return c;
}

// The taps of output position x of an axis of `in` elements resized to `out` with `scale`.
Status ResizeTaps(const ResizeParams& p, int64_t in, int64_t out, double scale, double roi_start,
                  double roi_end, int64_t x, AxisTaps* taps) {
  double xd = static_cast<double>(x), ind = static_cast<double>(in);
  double out_w = scale * ind;  // the real-valued output length, as ONNX defines it
  double xo;
  const std::string& m = p.ctm;
  if (m == "align_corners") {
    xo = out_w == 1 ? 0.0 : xd * (ind - 1) / (out_w - 1);
  } else if (m == "asymmetric") {
    xo = xd / scale;
  } else if (m == "tf_crop_and_resize") {
    xo = out_w == 1 ? (roi_end - roi_start) * (ind - 1) / 2
                    : xd * (roi_end - roi_start) * (ind - 1) / (out_w - 1);
    xo += roi_start * (ind - 1);
    if (xo < 0 || xo > ind - 1) {
      taps->extrapolate = true;
      return Status::Ok();
    }
  } else if (m == "pytorch_half_pixel") {
    xo = out_w == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
  } else if (m == "half_pixel") {
    xo = (xd + 0.5) / scale - 0.5;
  } else if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / out_w;
    double offset = ind / 2 * (1 - adjustment);
    xo = offset + (xd + 0.5) / scale - 0.5;
  } else {
    return Status::Error("unknown coordinate_transformation_mode '" + m + "'");
  }
  if (!std::isfinite(xo)) return Status::Error("a resize coordinate is not finite");
  double ratio = xo == std::floor(xo) ? 1.0 : xo - std::floor(xo);
  std::vector<double> coeffs = Coefficients(p, ratio, scale);
  int64_t n = static_cast<int64_t>(coeffs.size());
  // The n nearest indices to xo in the input padded by ceil(n / 2) edge values on each side,
  // ties to the lower index.
  int64_t pad = (n + 1) / 2, limit = in + 2 * pad;
  double xp = std::clamp(xo + static_cast<double>(pad), -1.0, static_cast<double>(limit));
  int64_t c = std::clamp<int64_t>(static_cast<int64_t>(std::floor(xp)), 0, limit - 1);
  std::vector<int64_t> cand;
  for (int64_t i = std::max<int64_t>(0, c - n); i <= std::min(limit - 1, c + n); ++i) {
    cand.push_back(i);
  }
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) {
    return std::abs(xp - static_cast<double>(a)) < std::abs(xp - static_cast<double>(b));
  });
  if (static_cast<int64_t>(cand.size()) < n) return Status::Error("too few resize neighbours");
  cand.resize(n);
  std::sort(cand.begin(), cand.end());
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t orig = cand[i] - pad;
    if (p.exclude_outside && (orig < 0 || orig >= in)) coeffs[i] = 0;
    sum += coeffs[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    double w = p.exclude_outside && sum != 0 ? coeffs[i] / sum : coeffs[i];
    if (w == 0) continue;
    taps->index.push_back(std::clamp<int64_t>(cand[i] - pad, 0, in - 1));
    taps->weight.push_back(w);
  }
  if (taps->index.empty()) {  // every weight zero: one tap of weight zero
    taps->index.push_back(std::clamp<int64_t>(cand[0] - pad, 0, in - 1));
    taps->weight.push_back(0);
  }
  return Status::Ok();
}

Status Resize(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const rt::AttrView& at = ctx.attrs();
  int rank = x.rank();
  ResizeParams p;
  p.mode = std::string(at.Str("mode", "nearest"));
  p.ctm = std::string(at.Str("coordinate_transformation_mode", "half_pixel"));
  p.nearest_mode = std::string(at.Str("nearest_mode", "round_prefer_floor"));
  p.cubic_a = at.Float("cubic_coeff_a", -0.75);
  p.exclude_outside = at.Bool("exclude_outside", false);
  p.antialias = at.Bool("antialias", false);
  double extrapolation = at.Float("extrapolation_value", 0.0);
  std::string policy(at.Str("keep_aspect_ratio_policy", "stretch"));
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") {
    return Status::Error("unknown resize mode '" + p.mode + "'");
  }
  std::vector<int64_t> axes;
  if (at.Has("axes")) {
    for (int64_t a : at.Ints("axes")) {
      int64_t n = a;
      if (!NormalizeAxis(&n, rank)) return AxisError(a, rank);
      axes.push_back(n);
    }
  } else {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  const Tensor* roi = ctx.input(1);
  const Tensor* scales_t = ctx.input(2);
  const Tensor* sizes_t = ctx.input(3);
  bool has_scales = scales_t && scales_t->NumElements() > 0;
  bool has_sizes = sizes_t && sizes_t->NumElements() > 0;
  if (has_scales == has_sizes)
    return Status::Error("exactly one of scales and sizes must be given");
  size_t naxes = axes.size();
  std::vector<double> scale(rank, 1.0);
  Shape out = x.shape;
  if (has_sizes) {
    std::vector<int64_t> sizes;
    QUILT_RETURN_IF_ERROR(ReadVector(sizes_t, "sizes", &sizes));
    if (sizes.size() != naxes) return Status::Error("sizes must hold one value per axis");
    for (size_t i = 0; i < naxes; ++i) {
      if (sizes[i] < 0 || sizes[i] > (int64_t{1} << 32)) return Status::Error("invalid size");
      if (x.shape[axes[i]] == 0) return Status::Error("cannot resize an empty axis");
      scale[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(x.shape[axes[i]]);
      out[axes[i]] = sizes[i];
    }
    if (policy != "stretch") {
      if (policy != "not_larger" && policy != "not_smaller") {
        return Status::Error("unknown keep_aspect_ratio_policy '" + policy + "'");
      }
      double s = policy == "not_larger" ? INFINITY : 0;
      for (int64_t a : axes)
        s = policy == "not_larger" ? std::min(s, scale[a]) : std::max(s, scale[a]);
      for (int64_t a : axes) {
        scale[a] = s;
        out[a] = static_cast<int64_t>(s * static_cast<double>(x.shape[a]) + 0.5);
      }
    }
  } else {
    if (static_cast<size_t>(scales_t->NumElements()) != naxes) {
      return Status::Error("scales must hold one value per axis");
    }
    for (size_t i = 0; i < naxes; ++i) {
      double s;
      QUILT_RETURN_IF_ERROR(ReadDouble(scales_t, static_cast<int64_t>(i), "scales", &s));
      double len = std::floor(static_cast<double>(x.shape[axes[i]]) * s);
      if (!(s > 0) || !(len < 4294967296.0)) return Status::Error("invalid scale");
      scale[axes[i]] = s;
      out[axes[i]] = static_cast<int64_t>(len);
    }
  }
  std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
  if (p.ctm == "tf_crop_and_resize") {
    int64_t n = roi ? roi->NumElements() : 0;
    if (n != static_cast<int64_t>(2 * naxes)) {
      return Status::Error("roi must hold 2 values per axis for tf_crop_and_resize");
    }
    for (size_t i = 0; i < naxes; ++i) {
      QUILT_RETURN_IF_ERROR(ReadDouble(roi, static_cast<int64_t>(i), "roi", &roi_start[axes[i]]));
      QUILT_RETURN_IF_ERROR(
          ReadDouble(roi, static_cast<int64_t>(i + naxes), "roi", &roi_end[axes[i]]));
    }
  }
  for (int a = 0; a < rank; ++a) {
    if (x.shape[a] == 0 && out[a] > 0) return Status::Error("cannot resize an empty axis");
  }
  // The taps of every output position of every axis.
  std::vector<std::vector<AxisTaps>> taps(rank);
  for (int a = 0; a < rank; ++a) {
    taps[a].resize(out[a]);
    for (int64_t o = 0; o < out[a]; ++o) {
      QUILT_RETURN_IF_ERROR(
          ResizeTaps(p, x.shape[a], out[a], scale[a], roi_start[a], roi_end[a], o, &taps[a][o]));
    }
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  std::vector<int64_t> strides = Strides(x.shape);
  return VisitNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    std::vector<const AxisTaps*> t(rank);
    std::vector<size_t> k(rank);
    ForEachIndex(out, [&](int64_t i, const std::vector<int64_t>& idx) {
      bool extrapolate = false;
      for (int a = 0; a < rank; ++a) {
        t[a] = &taps[a][idx[a]];
        extrapolate |= t[a]->extrapolate;
      }
      if (extrapolate) {
        py[i] = SaturateCast<T>(extrapolation);
        return;
      }
      // Sum over every combination of taps (an odometer over k).
      double sum = 0;
      std::fill(k.begin(), k.end(), 0);
      while (true) {
        double w = 1;
        int64_t off = 0;
        for (int a = 0; a < rank; ++a) {
          w *= t[a]->weight[k[a]];
          off += t[a]->index[k[a]] * strides[a];
        }
        sum += w * static_cast<double>(Load(px[off]));
        int a = rank - 1;
        for (; a >= 0; --a) {
          if (++k[a] < t[a]->index.size()) break;
          k[a] = 0;
        }
        if (a < 0) break;
      }
      py[i] = SaturateCast<T>(sum);
    });
    return Status::Ok();
  });
}

// Kernels of this family, by op name (see ir/ops/image.def for each op's arguments and attributes).
constexpr rt::KernelEntry kKernels[] = {
    {"image.resize", Resize},
};

}  // namespace

std::span<const rt::KernelEntry> ImageKernels() { return kKernels; }

}  // namespace quilt::cpu
