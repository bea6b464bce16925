// Image and detection ops: resize, grid sample, affine grid, ROI align, non-max suppression.
//
// Resize follows ONNX's definition axis by axis: each output coordinate maps to an input
// coordinate (coordinate_transformation_mode), a small set of neighbours and their weights
// (nearest, linear or cubic, optionally antialiased); the n-d result is the sum over every
// combination of the per-axis neighbours of the product of their weights.
#include "targets/cpu/kernels/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "targets/cpu/kernels/conv_blocked.h"
#include "targets/cpu/kernels/manip_util.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/resize_taps.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

using namespace manip;  // NOLINT

// ---- resize ----------------------------------------------------------------------------------

// A position's coefficients: 2 or 4, more with antialiasing (inline up to 8).
using Coeffs = rt::InlineVector<double, 8>;

Coeffs Coefficients(const ResizeParams& p, double ratio, double scale) {
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
    Coeffs c;
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
  Coeffs c;
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

}  // namespace

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
  if (p.antialias && p.mode != "nearest" && scale < 1e-4) {
    return Status::Error("the antialiasing filter of a scale below 1e-4 is too wide");
  }
  Coeffs coeffs = Coefficients(p, ratio, scale);
  int64_t n = static_cast<int64_t>(coeffs.size());
  // The n nearest indices to xo in the input padded by ceil(n / 2) edge values on each side,
  // ties to the lower index.
  int64_t pad = (n + 1) / 2, limit = in + 2 * pad;
  double xp = std::clamp(xo + static_cast<double>(pad), -1.0, static_cast<double>(limit));
  int64_t c = std::clamp<int64_t>(static_cast<int64_t>(std::floor(xp)), 0, limit - 1);
  rt::InlineVector<int64_t, 16> cand;
  for (int64_t i = std::max<int64_t>(0, c - n); i <= std::min(limit - 1, c + n); ++i) {
    cand.push_back(i);
  }
  // Nearest first, ties in index order: a stable insertion sort (std::stable_sort takes a buffer
  // from the heap, for at most 2n + 1 candidates).
  for (size_t i = 1; i < cand.size(); ++i) {
    int64_t v = cand[i];
    double dv = std::abs(xp - static_cast<double>(v));
    size_t j = i;
    for (; j > 0 && dv < std::abs(xp - static_cast<double>(cand[j - 1])); --j)
      cand[j] = cand[j - 1];
    cand[j] = v;
  }
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

namespace {

// Float32 planes whose leading axes are unchanged: rows of the output from one or a few input rows,
// each output row computed once (nearest upsampling repeats the row above: copied), in parallel.
// The sums are the reference's, in its order and in double: the same values, bit for bit. False
// when a leading axis is resized (the general walk then runs).
// `column`: memory for each output column's input column, the caller's (kept between runs).
bool ResizeFloatPlanes(const float* x, const Shape& in, const Shape& out,
                       const std::vector<std::vector<AxisTaps>>& taps, double extrapolation,
                       float* y, KernelContext& ctx, std::vector<int64_t>& column) {
  int rank = static_cast<int>(in.size());
  if (rank < 2) return false;
  int64_t planes = 1;
  for (int a = 0; a + 2 < rank; ++a) {
    for (int64_t o = 0; o < out[a]; ++o) {
      const AxisTaps& t = taps[a][o];
      if (t.extrapolate || t.index.size() != 1 || t.index[0] != o || t.weight[0] != 1.0) {
        return false;
      }
    }
    planes *= out[a];
  }
  int64_t ih = in[rank - 2], iw = in[rank - 1], oh = out[rank - 2], ow = out[rank - 1];
  const std::vector<AxisTaps>& ty = taps[rank - 2];
  const std::vector<AxisTaps>& tx = taps[rank - 1];
  bool x_single = true;  // every column reads one input element with weight 1, or extrapolates
  for (const AxisTaps& t : tx) {
    x_single &= t.extrapolate || (t.index.size() == 1 && t.weight[0] == 1.0);
  }
  float fill = static_cast<float>(extrapolation);
  // With one tap per column, each column's input column (-1: extrapolated), read from one flat
  // array rather than through each column's taps.
  column.clear();
  // Columns that repeat each input column `repeat` times in order (nearest upsampling by a whole
  // number): copied as runs.
  int64_t repeat = 0;
  if (x_single) {
    column.resize(static_cast<size_t>(ow));
    for (int64_t ox = 0; ox < ow; ++ox) column[ox] = tx[ox].extrapolate ? -1 : tx[ox].index[0];
    if (iw > 0 && ow % iw == 0) {
      repeat = ow / iw;
      for (int64_t ox = 0; ox < ow && repeat; ++ox) {
        if (column[ox] != ox / repeat) repeat = 0;
      }
    }
  }
  auto same_taps = [](const AxisTaps& a, const AxisTaps& b) {
    return a.extrapolate == b.extrapolate && a.index == b.index && a.weight == b.weight;
  };
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, ow));
  ctx.ParallelFor(planes * oh, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t plane = r / oh, oy = r % oh;
      float* row = y + r * ow;
      const AxisTaps& t = ty[oy];
      if (t.extrapolate) {
        std::fill(row, row + ow, fill);
        continue;
      }
      if (r > r0 && oy > 0 && same_taps(t, ty[oy - 1])) {
        std::memcpy(row, row - ow, static_cast<size_t>(ow) * sizeof(float));
        continue;
      }
      const float* src = x + plane * ih * iw;
      if (x_single && t.index.size() == 1 && t.weight[0] == 1.0) {
        const float* s = src + t.index[0] * iw;
        if (repeat == 2) {
          for (int64_t ix = 0; ix < iw; ++ix) row[2 * ix] = row[2 * ix + 1] = s[ix];
        } else if (repeat > 0) {
          for (int64_t ix = 0; ix < iw; ++ix)
            std::fill(row + ix * repeat, row + (ix + 1) * repeat, s[ix]);
        } else {
          const int64_t* c = column.data();
          for (int64_t ox = 0; ox < ow; ++ox) row[ox] = c[ox] < 0 ? fill : s[c[ox]];
        }
        continue;
      }
      for (int64_t ox = 0; ox < ow; ++ox) {
        const AxisTaps& u = tx[ox];
        if (u.extrapolate) {
          row[ox] = fill;
          continue;
        }
        double sum = 0;
        for (size_t ky = 0; ky < t.index.size(); ++ky) {
          const float* s = src + t.index[ky] * iw;
          for (size_t kx = 0; kx < u.index.size(); ++kx) {
            double w = 1.0 * t.weight[ky] * u.weight[kx];
            sum += w * static_cast<double>(s[u.index[kx]]);
          }
        }
        row[ox] = static_cast<float>(sum);
      }
    }
  });
  return true;
}

// A resize's output shape and what its taps are computed from, for data of shape `in`.
struct ResizePlan {
  ResizeParams p;
  Shape out;
  rt::InlineVector<double, 8> scale, roi_start, roi_end;
  double extrapolation = 0.0;
};

// What a resize plans at every run, in memory the running thread keeps between runs (a resize
// plans no more than its output): the plan, every axis's taps, and each output column's input
// column where every column reads one. Taken by reference on the calling thread, so that the
// workers' lambdas read it, not their own.
struct ResizeWork {
  ResizePlan plan;
  std::vector<std::vector<AxisTaps>> taps;
  std::vector<int64_t> column;
};

ResizeWork& ThisThreadsResizeWork() {
  thread_local ResizeWork work;
  return work;
}

Status PlanResize(KernelContext& ctx, const Shape& in, ResizePlan* plan) {
  const int rank = static_cast<int>(in.size());
  const rt::AttrView& at = ctx.attrs();
  ResizeParams& p = plan->p;
  // Assigned in place: a plan the caller keeps between runs keeps its strings' memory.
  p.mode.assign(at.Str("mode", "nearest"));
  p.ctm.assign(at.Str("coordinate_transformation_mode", "half_pixel"));
  p.nearest_mode.assign(at.Str("nearest_mode", "round_prefer_floor"));
  p.cubic_a = at.Float("cubic_coeff_a", -0.75);
  p.exclude_outside = at.Bool("exclude_outside", false);
  p.antialias = at.Bool("antialias", false);
  plan->extrapolation = at.Float("extrapolation_value", 0.0);
  std::string policy(at.Str("keep_aspect_ratio_policy", "stretch"));
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") {
    return Status::Error("unknown resize mode '" + p.mode + "'");
  }
  Shape axes;
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
  auto& scale = plan->scale;
  scale.assign(static_cast<size_t>(rank), 1.0);
  Shape& out = plan->out;
  out = in;
  if (has_sizes) {
    Shape sizes;
    QUILT_RETURN_IF_ERROR(ReadVector(sizes_t, "sizes", &sizes));
    if (sizes.size() != naxes) return Status::Error("sizes must hold one value per axis");
    for (size_t i = 0; i < naxes; ++i) {
      if (sizes[i] < 0 || sizes[i] > (int64_t{1} << 32)) return Status::Error("invalid size");
      if (in[axes[i]] == 0) return Status::Error("cannot resize an empty axis");
      scale[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
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
        out[a] = static_cast<int64_t>(s * static_cast<double>(in[a]) + 0.5);
      }
    }
  } else {
    if (static_cast<size_t>(scales_t->NumElements()) != naxes) {
      return Status::Error("scales must hold one value per axis");
    }
    for (size_t i = 0; i < naxes; ++i) {
      double s;
      QUILT_RETURN_IF_ERROR(ReadDouble(scales_t, static_cast<int64_t>(i), "scales", &s));
      double len = std::floor(static_cast<double>(in[axes[i]]) * s);
      if (!(s > 0) || !(len < 4294967296.0)) return Status::Error("invalid scale");
      scale[axes[i]] = s;
      out[axes[i]] = static_cast<int64_t>(len);
    }
  }
  auto &roi_start = plan->roi_start, &roi_end = plan->roi_end;
  roi_start.assign(static_cast<size_t>(rank), 0.0);
  roi_end.assign(static_cast<size_t>(rank), 1.0);
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
    if (in[a] == 0 && out[a] > 0) return Status::Error("cannot resize an empty axis");
  }
  return Status::Ok();
}

// The taps of every output position of the axes from `first` on (those before left empty).
Status PlanTaps(const ResizePlan& plan, const Shape& in, size_t first,
                std::vector<std::vector<AxisTaps>>* taps) {
  const size_t rank = in.size();
  // Cleared and refilled, so that a vector the caller keeps between runs keeps its memory.
  taps->resize(rank);
  for (size_t a = 0; a < rank; ++a) (*taps)[a].clear();
  for (size_t a = first; a < rank; ++a) {
    (*taps)[a].resize(static_cast<size_t>(plan.out[a]));
    for (int64_t o = 0; o < plan.out[a]; ++o) {
      QUILT_RETURN_IF_ERROR(ResizeTaps(plan.p, in[a], plan.out[a], plan.scale[a], plan.roi_start[a],
                                       plan.roi_end[a], o, &(*taps)[a][static_cast<size_t>(o)]));
    }
  }
  return Status::Ok();
}

Status ResizeImpl(KernelContext& ctx, bool fast) {
  const Tensor& x = *ctx.input(0);
  const int rank = x.rank();
  ResizeWork& work = ThisThreadsResizeWork();
  ResizePlan& plan = work.plan;
  QUILT_RETURN_IF_ERROR(PlanResize(ctx, x.shape, &plan));
  const Shape& out = plan.out;
  const double extrapolation = plan.extrapolation;
  // The output first: the run's limits bound it, and so the taps below (one per position of an
  // axis, never more than the output's elements); an empty output needs none, whatever the other
  // axes' sizes.
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  if (y->NumElements() == 0) return Status::Ok();
  std::vector<std::vector<AxisTaps>>& taps = work.taps;
  QUILT_RETURN_IF_ERROR(PlanTaps(plan, x.shape, 0, &taps));
  if (fast && x.dtype == DType::kFloat32 &&
      ResizeFloatPlanes(x.Data<float>(), x.shape, out, taps, extrapolation, y->MutableData<float>(),
                        ctx, work.column)) {
    return Status::Ok();
  }
  Shape strides = Strides(x.shape);
  return VisitNumeric(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    std::vector<const AxisTaps*> t(rank);
    std::vector<size_t> k(rank);
    ForEachIndex(out, [&](int64_t i, const Shape& idx) {
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

// Output row oy of one block of blocked data (x the block's plane of iw-pixel rows, y the row's
// ow pixels), each pixel's 16 lanes as the plane path sums one element: the products of the
// taps' weights, in double, row taps outer. `column`, where not empty: each output column's one
// input column read with weight 1 (-1: extrapolated), for a row tap of the same kind. (Baseline
// code, as the plane path: a copy for a CPU with FMA would fuse the sums' multiply-adds and round
// them otherwise.)
void ResizeBlockedRow(const float* x, int64_t iw, const AxisTaps& t,
                      const std::vector<AxisTaps>& tx, const std::vector<int64_t>& column,
                      float fill, float* y) {
  constexpr int kLanes = 16;
  const int64_t ow = static_cast<int64_t>(tx.size());
  if (!column.empty() && !t.extrapolate && t.index.size() == 1 && t.weight[0] == 1.0) {
    const float* row = x + t.index[0] * iw * kLanes;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t c = column[static_cast<size_t>(ox)];
      float* out = y + ox * kLanes;
      if (c < 0) {
        for (int l = 0; l < kLanes; ++l) out[l] = fill;
      } else {
        std::memcpy(out, row + c * kLanes, sizeof(float) * kLanes);
      }
    }
    return;
  }
  for (int64_t ox = 0; ox < ow; ++ox) {
    const AxisTaps& u = tx[static_cast<size_t>(ox)];
    float* out = y + ox * kLanes;
    if (t.extrapolate || u.extrapolate) {
      for (int l = 0; l < kLanes; ++l) out[l] = fill;
      continue;
    }
    double sum[kLanes] = {};
    for (size_t ky = 0; ky < t.index.size(); ++ky) {
      for (size_t kx = 0; kx < u.index.size(); ++kx) {
        const double w = 1.0 * t.weight[ky] * u.weight[kx];
        const float* v = x + (t.index[ky] * iw + u.index[kx]) * kLanes;
        for (int l = 0; l < kLanes; ++l) sum[l] += w * static_cast<double>(v[l]);
      }
    }
    for (int l = 0; l < kLanes; ++l) out[l] = static_cast<float>(sum[l]);
  }
}

}  // namespace

Status ResizeReference(KernelContext& ctx) { return ResizeImpl(ctx, false); }
Status Resize(KernelContext& ctx) { return ResizeImpl(ctx, true); }

Status ResizeBlocked(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dtype != DType::kFloat32 || x.rank() != 5 || x.shape[4] != 16) {
    return Status::Error("data " + rt::ShapeString(x.shape) +
                         " is not a float32 (N, C / 16, H, W, 16) tensor");
  }
  // The resize of the data's NCHW view: its inputs and attributes say it, for 4 axes; its
  // channels the attribute channels where the last block is padded (its padding lanes resized as
  // the others).
  int64_t channels = 0;
  QUILT_RETURN_IF_ERROR(nn::BlockedChannels(ctx.attrs(), x, &channels));
  const Shape nchw = {x.shape[0], channels, x.shape[2], x.shape[3]};
  ResizeWork& work = ThisThreadsResizeWork();
  ResizePlan& plan = work.plan;
  QUILT_RETURN_IF_ERROR(PlanResize(ctx, nchw, &plan));
  if (plan.out[0] != nchw[0] || plan.out[1] != nchw[1]) {
    return Status::Error("a resize of blocked data " + rt::ShapeString(x.shape) +
                         " keeps its batch and channels; this one makes " +
                         rt::ShapeString(plan.out));
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(
      0, DType::kFloat32, Shape{x.shape[0], x.shape[1], plan.out[2], plan.out[3], 16}, &y));
  if (y->NumElements() == 0) return Status::Ok();
  std::vector<std::vector<AxisTaps>>& taps = work.taps;
  // The height's and width's (the batch and channels are kept, checked above).
  QUILT_RETURN_IF_ERROR(PlanTaps(plan, nchw, 2, &taps));
  const int64_t blocks = x.shape[0] * x.shape[1], ih = x.shape[2], iw = x.shape[3];
  const int64_t oh = plan.out[2], ow = plan.out[3];
  const float* px = x.Data<float>();
  float* py = y->MutableData<float>();
  const float fill = static_cast<float>(plan.extrapolation);
  // Each output column's input column where every one reads one with weight 1 (nearest).
  std::vector<int64_t>& column = work.column;
  column.clear();
  bool single = true;
  for (const AxisTaps& u : taps[3])
    single &= u.extrapolate || (u.index.size() == 1 && u.weight[0] == 1.0);
  if (single) {
    for (const AxisTaps& u : taps[3]) column.push_back(u.extrapolate ? -1 : u.index[0]);
  }
  const std::vector<AxisTaps>& ty = taps[2];
  auto same = [](const AxisTaps& a, const AxisTaps& b) {
    return a.extrapolate == b.extrapolate && a.index == b.index && a.weight == b.weight;
  };
  ctx.ParallelFor(blocks * oh, std::max<int64_t>(1, 1024 / std::max<int64_t>(1, ow)),
                  [&](int64_t r0, int64_t r1) {
                    for (int64_t r = r0; r < r1; ++r) {
                      const int64_t b = r / oh, oy = r % oh;
                      float* row = py + r * ow * 16;
                      // A row of the same taps as the one before it (nearest upsampling): copied.
                      if (r > r0 && oy > 0 &&
                          same(ty[static_cast<size_t>(oy)], ty[static_cast<size_t>(oy - 1)])) {
                        std::memcpy(row, row - ow * 16,
                                    static_cast<size_t>(ow) * 16 * sizeof(float));
                        continue;
                      }
                      ResizeBlockedRow(px + b * ih * iw * 16, iw, ty[static_cast<size_t>(oy)],
                                       taps[3], column, fill, row);
                    }
                  });
  return Status::Ok();
}

namespace {

// ---- grid_sample
// ---------------------------------------------------------------------------------

// Reflects x into [lo, hi] by the nearer border until it is inside.
double Reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    double n = std::floor(dx / range);
    double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double n = std::floor(dx / range);
    double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

// Keys cubic convolution weights (a = -0.75) of the 4 taps around a point at distance t in
// [0, 1) from the second tap.
void CubicWeights(double t, double a, double w[4]) {
  double t1 = t + 1, q = 1 - t, q1 = 2 - t;
  w[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * q - (a + 3)) * q * q + 1;
  w[3] = ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a;
}

Status GridSample(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& grid = *ctx.input(1);
  int rank = x.rank();
  if (rank < 3) return Status::Error("x must have rank >= 3 (N, C, spatial...)");
  int nd = rank - 2;
  if (grid.rank() != rank || grid.shape[0] != x.shape[0] || grid.shape.back() != nd) {
    return Status::Error("grid has shape " + rt::ShapeString(grid.shape) + ", expected (" +
                         std::to_string(x.shape[0]) + ", spatial..., " + std::to_string(nd) + ")");
  }
  std::string mode(ctx.attrs().Str("mode", "linear"));
  std::string padding(ctx.attrs().Str("padding_mode", "zeros"));
  bool align = ctx.attrs().Bool("align_corners", false);
  if (mode != "linear" && mode != "nearest" && mode != "cubic") {
    return Status::Error("unknown mode '" + mode + "'");
  }
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return Status::Error("unknown padding_mode '" + padding + "'");
  }
  int64_t batch = x.shape[0], channels = x.shape[1];
  Shape out = {batch, channels};
  for (int i = 1; i <= nd; ++i) out.push_back(grid.shape[i]);
  Shape spatial_out(out.begin() + 2, out.end());
  Shape dims(x.shape.begin() + 2, x.shape.end());
  int64_t points = Product(spatial_out), plane = Product(dims);
  std::vector<double> g(grid.NumElements());
  for (int64_t i = 0; i < grid.NumElements(); ++i) {
    QUILT_RETURN_IF_ERROR(ReadDouble(&grid, i, "grid", &g[i]));
  }
  Shape strides = Strides(dims);
  std::vector<double> lo(nd), hi(nd);
  for (int d = 0; d < nd; ++d) {
    double len = static_cast<double>(dims[d]);
    lo[d] = align ? 0.0 : -0.5;
    hi[d] = align ? len - 1 : len - 0.5;
  }
  // An integer index of axis d after padding: -1 for a zero.
  auto pixel_index = [&](int d, int64_t i) -> int64_t {
    if (i >= 0 && i < dims[d]) return i;
    if (padding == "zeros") return -1;
    if (padding == "border") return std::clamp<int64_t>(i, 0, dims[d] - 1);
    double r = Reflect(static_cast<double>(i), lo[d], hi[d]);
    return std::clamp<int64_t>(static_cast<int64_t>(r), 0, dims[d] - 1);
  };
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, out, &y));
  if (Product(out) == 0) return Status::Ok();
  if (plane == 0) return Status::Error("cannot sample an empty image");
  return VisitNumeric(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    std::vector<std::vector<int64_t>> idx(nd);
    std::vector<std::vector<double>> w(nd);
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t p = 0; p < points; ++p) {
        // The grid holds (x, y[, z]): the innermost axis first.
        const double* gp = &g[(n * points + p) * nd];
        for (int d = 0; d < nd; ++d) {
          double v = gp[nd - 1 - d];
          double len = static_cast<double>(dims[d]);
          double c = align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
          if (!std::isfinite(c)) return Status::Error("a grid coordinate is not finite");
          c = std::clamp(c, -1e9, 1e9);
          if (mode == "nearest") c = std::nearbyint(c);  // half to even, as the tests expect
          if (c < lo[d] || c > hi[d]) {
            if (padding == "border") c = std::clamp(c, 0.0, len - 1);
            if (padding == "reflection") c = Reflect(c, lo[d], hi[d]);
          }
          idx[d].clear();
          w[d].clear();
          if (mode == "nearest") {
            idx[d].push_back(pixel_index(d, static_cast<int64_t>(c)));
            w[d].push_back(1.0);
          } else if (mode == "linear") {
            double f = std::floor(c);
            auto i0 = static_cast<int64_t>(f);
            idx[d] = {pixel_index(d, i0), pixel_index(d, i0 + 1)};
            w[d] = {1 - (c - f), c - f};
          } else {
            double f = std::floor(c);
            auto i0 = static_cast<int64_t>(f);
            double cw[4];
            CubicWeights(c - f, -0.75, cw);
            for (int k = 0; k < 4; ++k) {
              idx[d].push_back(pixel_index(d, i0 - 1 + k));
              w[d].push_back(cw[k]);
            }
          }
        }
        for (int64_t ch = 0; ch < channels; ++ch) {
          const T* img = px + (n * channels + ch) * plane;
          double sum = 0;
          std::vector<size_t> k(nd, 0);
          while (true) {
            double weight = 1;
            int64_t off = 0;
            bool zero = false;
            for (int d = 0; d < nd; ++d) {
              weight *= w[d][k[d]];
              if (idx[d][k[d]] < 0) zero = true;
              off += idx[d][k[d]] * strides[d];
            }
            if (!zero) sum += weight * static_cast<double>(Load(img[off]));
            int d = nd - 1;
            for (; d >= 0; --d) {
              if (++k[d] < idx[d].size()) break;
              k[d] = 0;
            }
            if (d < 0) break;
          }
          py[(n * channels + ch) * points + p] = SaturateCast<T>(sum);
        }
      }
    }
    return Status::Ok();
  });
}

// ---- affine_grid
// ---------------------------------------------------------------------------------

Status AffineGrid(KernelContext& ctx) {
  const Tensor& theta = *ctx.input(0);
  std::vector<int64_t> size;
  QUILT_RETURN_IF_ERROR(ReadVector(ctx.input(1), "size", &size));
  bool align = ctx.attrs().Bool("align_corners", false);
  if (size.size() != 4 && size.size() != 5) return Status::Error("size must hold 4 or 5 values");
  int nd = static_cast<int>(size.size()) - 2;
  int64_t batch = size[0];
  for (int64_t v : size) {
    if (v < 0) return Status::Error("size must be non-negative");
  }
  if (theta.rank() != 3 || theta.shape[0] != batch || theta.shape[1] != nd ||
      theta.shape[2] != nd + 1) {
    return Status::Error("theta has shape " + rt::ShapeString(theta.shape) + ", expected (" +
                         std::to_string(batch) + ", " + std::to_string(nd) + ", " +
                         std::to_string(nd + 1) + ")");
  }
  Shape spatial(size.begin() + 2, size.end());  // (D,) H, W
  Shape out = {batch};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(nd);
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, theta.dtype, out, &y));
  // The normalized coordinate of position i of an axis of length len.
  auto base = [&](int64_t i, int64_t len) {
    double l = static_cast<double>(len), v = static_cast<double>(i);
    if (align) return len == 1 ? -1.0 : -1 + 2 * v / (l - 1);
    return (2 * v + 1) / l - 1;
  };
  return VisitFloat(theta.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* th = theta.Data<T>();
    T* py = y->MutableData<T>();
    int64_t points = Product(spatial);
    for (int64_t n = 0; n < batch; ++n) {
      const T* m = th + n * nd * (nd + 1);
      ForEachIndex(spatial, [&](int64_t p, const Shape& at) {
        // (x, y[, z], 1): the innermost axis first.
        std::vector<double> v(nd + 1, 1.0);
        for (int d = 0; d < nd; ++d) v[d] = base(at[nd - 1 - d], spatial[nd - 1 - d]);
        for (int r = 0; r < nd; ++r) {
          double s = 0;
          for (int c = 0; c <= nd; ++c) s += static_cast<double>(Load(m[r * (nd + 1) + c])) * v[c];
          py[(n * points + p) * nd + r] = Store<T>(static_cast<Compute<T>>(s));
        }
      });
    }
    return Status::Ok();
  });
}

// ---- roi_align
// -------------------------------------------------------------------------------------

Status RoiAlign(KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& rois = *ctx.input(1);
  const Tensor& batch_indices = *ctx.input(2);
  const rt::AttrView& at = ctx.attrs();
  std::string mode(at.Str("mode", "avg"));
  int64_t ph_n = at.Int("output_height", 1), pw_n = at.Int("output_width", 1);
  int64_t sampling = at.Int("sampling_ratio", 0);
  double spatial_scale = at.Float("spatial_scale", 1.0);
  std::string ctm(at.Str("coordinate_transformation_mode", "half_pixel"));
  if (x.rank() != 4) return Status::Error("x must have rank 4");
  if (rois.rank() != 2 || rois.shape[1] != 4) return Status::Error("rois must have shape (n, 4)");
  int64_t num = rois.shape[0];
  std::vector<int64_t> bidx;
  QUILT_RETURN_IF_ERROR(ReadVector(&batch_indices, "batch_indices", &bidx));
  if (static_cast<int64_t>(bidx.size()) != num) {
    return Status::Error("batch_indices must hold one value per roi");
  }
  if (mode != "avg" && mode != "max") return Status::Error("unknown mode '" + mode + "'");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return Status::Error("unknown coordinate_transformation_mode '" + ctm + "'");
  }
  if (ph_n < 1 || pw_n < 1 || sampling < 0) {
    return Status::Error("output sizes must be positive and sampling_ratio non-negative");
  }
  int64_t channels = x.shape[1], height = x.shape[2], width = x.shape[3];
  for (int64_t b : bidx) {
    if (b < 0 || b >= x.shape[0]) {
      return Status::Error("batch index " + std::to_string(b) + " is out of range");
    }
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, {num, channels, ph_n, pw_n}, &y));
  double offset = ctm == "half_pixel" ? 0.5 : 0.0;
  return VisitFloat(x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = x.Data<T>();
    T* py = y->MutableData<T>();
    for (int64_t r = 0; r < num; ++r) {
      double box[4];
      for (int k = 0; k < 4; ++k)
        QUILT_RETURN_IF_ERROR(ReadDouble(&rois, r * 4 + k, "rois", &box[k]));
      double sw = box[0] * spatial_scale - offset, sh = box[1] * spatial_scale - offset;
      double ew = box[2] * spatial_scale - offset, eh = box[3] * spatial_scale - offset;
      double rw = ew - sw, rh = eh - sh;
      if (ctm == "output_half_pixel") {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      if (!std::isfinite(rw) || !std::isfinite(rh)) return Status::Error("a roi is not finite");
      double bin_h = rh / static_cast<double>(ph_n), bin_w = rw / static_cast<double>(pw_n);
      double gh = sampling > 0 ? static_cast<double>(sampling) : std::ceil(bin_h);
      double gw = sampling > 0 ? static_cast<double>(sampling) : std::ceil(bin_w);
      if (gh > 4096 || gw > 4096) return Status::Error("a roi needs too many samples");
      int64_t grid_h = std::max<int64_t>(0, static_cast<int64_t>(gh));
      int64_t grid_w = std::max<int64_t>(0, static_cast<int64_t>(gw));
      double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
      const T* img_b = px + bidx[r] * channels * height * width;
      for (int64_t c = 0; c < channels; ++c) {
        const T* img = img_b + c * height * width;
        for (int64_t ph = 0; ph < ph_n; ++ph) {
          for (int64_t pw = 0; pw < pw_n; ++pw) {
            double acc = 0;
            bool first = true;
            for (int64_t iy = 0; iy < grid_h; ++iy) {
              double yy = sh + static_cast<double>(ph) * bin_h +
                          (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                double xx = sw + static_cast<double>(pw) * bin_w +
                            (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
                double v[4] = {0, 0, 0, 0};
                if (!(yy < -1.0 || yy > static_cast<double>(height) || xx < -1.0 ||
                      xx > static_cast<double>(width)) &&
                    height > 0 && width > 0) {
                  double yc = std::max(yy, 0.0), xc = std::max(xx, 0.0);
                  auto y_lo = static_cast<int64_t>(yc), x_lo = static_cast<int64_t>(xc);
                  int64_t y_hi = y_lo + 1, x_hi = x_lo + 1;
                  if (y_lo >= height - 1) {
                    y_lo = y_hi = height - 1;
                    yc = static_cast<double>(y_lo);
                  }
                  if (x_lo >= width - 1) {
                    x_lo = x_hi = width - 1;
                    xc = static_cast<double>(x_lo);
                  }
                  double ly = yc - static_cast<double>(y_lo), lx = xc - static_cast<double>(x_lo);
                  double hy = 1 - ly, hx = 1 - lx;
                  auto at_px = [&](int64_t yi, int64_t xi) {
                    return static_cast<double>(Load(img[yi * width + xi]));
                  };
                  v[0] = hy * hx * at_px(y_lo, x_lo);
                  v[1] = hy * lx * at_px(y_lo, x_hi);
                  v[2] = ly * hx * at_px(y_hi, x_lo);
                  v[3] = ly * lx * at_px(y_hi, x_hi);
                }
                if (mode == "avg") {
                  acc += v[0] + v[1] + v[2] + v[3];
                } else {
                  double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                  acc = first ? m : std::max(acc, m);
                }
                first = false;
              }
            }
            double result = mode == "avg" ? acc / count : acc;
            py[((r * channels + c) * ph_n + ph) * pw_n + pw] =
                Store<T>(static_cast<Compute<T>>(result));
          }
        }
      }
    }
    return Status::Ok();
  });
}

// ---- non_max_suppression -----------------------------------------------------------------------

Status NonMaxSuppression(KernelContext& ctx) {
  const Tensor& boxes = *ctx.input(0);
  const Tensor& scores = *ctx.input(1);
  int64_t center = ctx.attrs().Int("center_point_box", 0);
  if (boxes.rank() != 3 || boxes.shape[2] != 4) {
    return Status::Error("boxes must have shape (batches, boxes, 4)");
  }
  if (scores.rank() != 3 || scores.shape[0] != boxes.shape[0] ||
      scores.shape[2] != boxes.shape[1]) {
    return Status::Error("scores must have shape (batches, classes, boxes)");
  }
  double max_out_d = 0, iou_threshold = 0, score_threshold = 0;
  const Tensor* mo = ctx.input(2);
  if (mo && mo->NumElements() > 0) {
    QUILT_RETURN_IF_ERROR(ReadScalar(mo, "max_output_boxes_per_class", &max_out_d));
  }
  if (ctx.input(3) && ctx.input(3)->NumElements() > 0) {
    QUILT_RETURN_IF_ERROR(ReadScalar(ctx.input(3), "iou_threshold", &iou_threshold));
  }
  bool has_score_threshold = ctx.input(4) && ctx.input(4)->NumElements() > 0;
  if (has_score_threshold) {
    QUILT_RETURN_IF_ERROR(ReadScalar(ctx.input(4), "score_threshold", &score_threshold));
  }
  int64_t max_out = 0;
  if (!DoubleToInt(max_out_d, &max_out)) max_out = max_out_d > 0 ? INT64_MAX : 0;
  int64_t batches = boxes.shape[0], num = boxes.shape[1], classes = scores.shape[1];
  std::vector<double> b(boxes.NumElements()), s(scores.NumElements());
  for (size_t i = 0; i < b.size(); ++i) {
    QUILT_RETURN_IF_ERROR(ReadDouble(&boxes, static_cast<int64_t>(i), "boxes", &b[i]));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    QUILT_RETURN_IF_ERROR(ReadDouble(&scores, static_cast<int64_t>(i), "scores", &s[i]));
  }
  // Corners (y1, x1, y2, x2), each pair ordered.
  std::vector<double> corners(b.size());
  for (int64_t i = 0; i < batches * num; ++i) {
    const double* p = &b[i * 4];
    double y1, x1, y2, x2;
    if (center) {
      x1 = p[0] - p[2] / 2;
      x2 = p[0] + p[2] / 2;
      y1 = p[1] - p[3] / 2;
      y2 = p[1] + p[3] / 2;
    } else {
      y1 = p[0];
      x1 = p[1];
      y2 = p[2];
      x2 = p[3];
    }
    double* c = &corners[i * 4];
    c[0] = std::min(y1, y2);
    c[1] = std::min(x1, x2);
    c[2] = std::max(y1, y2);
    c[3] = std::max(x1, x2);
  }
  auto suppress = [&](const double* a, const double* c) {
    double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_c = (c[2] - c[0]) * (c[3] - c[1]);
    if (area_a <= 0 || area_c <= 0) return false;
    double ih = std::min(a[2], c[2]) - std::max(a[0], c[0]);
    double iw = std::min(a[3], c[3]) - std::max(a[1], c[1]);
    if (ih <= 0 || iw <= 0) return false;
    double inter = ih * iw, uni = area_a + area_c - inter;
    if (uni <= 0) return false;
    return inter / uni > iou_threshold;
  };
  std::vector<int64_t> selected;  // (batch, class, box) triples
  for (int64_t bt = 0; bt < batches; ++bt) {
    for (int64_t cl = 0; cl < classes; ++cl) {
      const double* sc = &s[(bt * classes + cl) * num];
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < num; ++i) {
        if (!has_score_threshold || sc[i] > score_threshold) cand.push_back(i);
      }
      std::stable_sort(cand.begin(), cand.end(),
                       [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool drop = false;
        for (int64_t k : kept) {
          if (suppress(&corners[(bt * num + k) * 4], &corners[(bt * num + i) * 4])) {
            drop = true;
            break;
          }
        }
        if (drop) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {bt, cl, i});
      }
    }
  }
  Tensor* y;
  QUILT_RETURN_IF_ERROR(
      ctx.Output(0, DType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3}, &y));
  CopyBytes(y->data, selected.data(), sizeof(int64_t) * selected.size());
  return Status::Ok();
}

// Kernels of this family, by op name (see ir/ops/image.def for each op's arguments and attributes).
constexpr rt::KernelEntry kKernels[] = {
    Kernel("image.resize", Resize),
    Kernel(nn::kResizeNchw16c, ResizeBlocked),
    Kernel("image.grid_sample", GridSample),
    Kernel("image.affine_grid", AffineGrid),
    Kernel("vision.roi_align", RoiAlign),
    Kernel("vision.non_max_suppression", NonMaxSuppression),
};

}  // namespace

std::span<const rt::KernelEntry> ImageKernels() { return kKernels; }

}  // namespace quilt::cpu
