// The OpenCL kernels of image.grid_sample (last) and of image.resize, for shapes and scales the
// compiler knows: every mode of targets/cpu/kernels/image.cc (nearest with each rounding, linear,
// cubic, antialiasing, exclude_outside, every coordinate transformation, tf_crop_and_resize's
// extrapolation).
//  1. At compile time, per axis and output position, the taps (input index and weight) are
//     computed by the CPU kernel's own code (targets/cpu/kernels/resize_taps.h), and baked into
//     the kernel as constant tables; a position that extrapolates has index -1.
//  2. One work-item per output element sums over every combination of its axes' taps the product
//     of their weights times the input element, as the CPU does (in float).
// Scales, sizes and roi must be constants; a resize whose sizes only the run knows stays on
// another device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/src/float_convert.h"
#include "targets/cpu/kernels/resize_taps.h"
#include "targets/opencl/emit_util.h"

namespace quilt::compiler::opencl {
namespace {

using cpu::AxisTaps;
using cpu::ResizeParams;

// The elements of a constant value as doubles (float32, float16, float64, int32 or int64), or
// false.
bool ConstantDoubles(const PackageSpec& spec, const GraphSpec& g, int v, std::vector<double>* out) {
  if (v < 0) return false;
  const ValueSpec& value = g.values[static_cast<size_t>(v)];
  if (value.kind != pkg::ValueKind::Constant || value.buffer < 0) return false;
  const std::vector<uint8_t>& bytes = *spec.buffers[static_cast<size_t>(value.buffer)];
  int64_t n = 1;
  for (int d : value.dims) {
    std::optional<int64_t> s = StaticDim(g, d);
    if (!s) return false;
    n *= *s;
  }
  size_t width = value.dtype == 10                       ? 2
                 : value.dtype == 1 || value.dtype == 6  ? 4
                 : value.dtype == 7 || value.dtype == 11 ? 8
                                                         : 0;
  if (width == 0 || bytes.size() < static_cast<size_t>(n) * width) return false;
  out->resize(static_cast<size_t>(n));
  for (size_t i = 0; i < out->size(); ++i) {
    const uint8_t* p = bytes.data() + i * width;
    if (value.dtype == 10) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      (*out)[i] = numeric::HalfToFloat(h);
    } else if (value.dtype == 1) {
      float f;
      std::memcpy(&f, p, 4);
      (*out)[i] = f;
    } else if (value.dtype == 11) {
      std::memcpy(&(*out)[i], p, 8);
    } else if (value.dtype == 6) {
      int32_t x;
      std::memcpy(&x, p, 4);
      (*out)[i] = x;
    } else {
      int64_t x;
      std::memcpy(&x, p, 8);
      (*out)[i] = static_cast<double>(x);
    }
  }
  return true;
}

}  // namespace

Status EmitResize(const PackageSpec& spec, GraphSpec& g, StepSpec& step, const std::string& name,
                  std::string* code) {
  KernelText k(g, step);
  std::string where = Where(step);
  if (step.inputs.size() < 4) return Error(where + ": x, roi, scales and sizes expected");
  const std::vector<int>& xd = k.In(0).dims;
  const std::vector<int>& od = k.Out().dims;
  size_t rank = xd.size();
  std::vector<int64_t> in(rank), out(rank);
  for (size_t a = 0; a < rank; ++a) {
    std::optional<int64_t> i = StaticDim(g, xd[a]), o = StaticDim(g, od[a]);
    if (!i || !o) return Error(where + ": OpenCL resizes tensors of static shape only");
    in[a] = *i;
    out[a] = *o;
  }
  auto str = [&](const char* attr, const char* fallback) {
    const std::string* s = step.attrs.Get<std::string>(attr);
    return s ? *s : std::string(fallback);
  };
  ResizeParams p;
  p.mode = str("mode", "nearest");
  p.ctm = str("coordinate_transformation_mode", "half_pixel");
  p.nearest_mode = str("nearest_mode", "round_prefer_floor");
  if (const double* a = step.attrs.Get<double>("cubic_coeff_a")) p.cubic_a = *a;
  if (const bool* e = step.attrs.Get<bool>("exclude_outside")) p.exclude_outside = *e;
  if (const bool* a = step.attrs.Get<bool>("antialias")) p.antialias = *a;
  const double* extrapolation_attr = step.attrs.Get<double>("extrapolation_value");
  double extrapolation = extrapolation_attr ? *extrapolation_attr : 0.0;
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") {
    return Error(where + ": resize mode '" + p.mode + "'");
  }
  std::vector<int64_t> axes;
  if (const auto* list = step.attrs.Get<std::vector<int64_t>>("axes")) {
    for (int64_t a : *list) {
      QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(rank), &a));
      axes.push_back(a);
    }
  } else {
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  std::vector<double> roi, scales, sizes;
  if (!ConstantDoubles(spec, g, step.inputs[1], &roi) ||
      !ConstantDoubles(spec, g, step.inputs[2], &scales) ||
      !ConstantDoubles(spec, g, step.inputs[3], &sizes)) {
    return Error(where + ": OpenCL resizes with constant roi, scales and sizes only");
  }
  // The scale of each axis, as the CPU kernel derives it (the output shape is the compiler's).
  std::vector<double> scale(rank, 1.0);
  std::string policy = str("keep_aspect_ratio_policy", "stretch");
  if (!sizes.empty()) {
    if (sizes.size() != axes.size()) return Error(where + ": sizes must hold one value per axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = static_cast<size_t>(axes[i]);
      if (in[a] == 0) return Error(where + ": cannot resize an empty axis");
      scale[a] = sizes[i] / static_cast<double>(in[a]);
    }
    if (policy != "stretch") {
      double s = policy == "not_larger" ? INFINITY : 0;
      for (int64_t a : axes) {
        double v = scale[static_cast<size_t>(a)];
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (int64_t a : axes) scale[static_cast<size_t>(a)] = s;
    }
  } else {
    if (scales.size() != axes.size()) return Error(where + ": scales must hold one value per axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      // The CPU reads float32 scales as float: the same double here.
      scale[static_cast<size_t>(axes[i])] = scales[i];
    }
  }
  std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
  if (p.ctm == "tf_crop_and_resize") {
    if (roi.size() != 2 * axes.size()) return Error(where + ": roi must hold 2 values per axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      roi_start[static_cast<size_t>(axes[i])] = roi[i];
      roi_end[static_cast<size_t>(axes[i])] = roi[i + axes.size()];
    }
  }
  // Per axis: the taps of each output position, padded to the axis's most taps (index -1, weight
  // 0: a term with such a tap is skipped, not 0 times the element, which is NaN for an infinite
  // one; the first tap is -1 where the position extrapolates); an
  // axis whose taps are the output position itself with weight 1 (the batch and channels, say)
  // needs no table. Every size is static: coordinates come from divisions by constants, and the
  // taps are written out, with no loop, so that drivers that vectorize across work-items (PoCL)
  // can.
  std::string tables, body = "  long t = get_global_id(0);\n  if (t >= n) return;\n";
  k.Long("n", Product(g, od, 0));
  std::vector<size_t> width(rank, 1);
  std::vector<bool> identity(rank, false), padded(rank, false);
  for (size_t a = 0; a < rank; ++a) {
    if (in[a] == 0 && out[a] > 0) return Error(where + ": cannot resize an empty axis");
    std::vector<AxisTaps> taps(static_cast<size_t>(out[a]));
    bool same = in[a] == out[a];
    for (int64_t o = 0; o < out[a]; ++o) {
      AxisTaps& tp = taps[static_cast<size_t>(o)];
      rt::Status st = cpu::ResizeTaps(p, in[a], out[a], scale[a], roi_start[a], roi_end[a], o, &tp);
      if (!st.ok()) return Error(where + ": " + st.message());
      width[a] = std::max(width[a], tp.index.size());
      same = same && !tp.extrapolate && tp.index.size() == 1 && tp.index[0] == o &&
             tp.weight[0] == 1.0;
    }
    identity[a] = same;
    if (same) continue;
    std::string as = std::to_string(a), idx, wts;
    for (const AxisTaps& tp : taps) {
      for (size_t j = 0; j < width[a]; ++j) {
        bool have = !tp.extrapolate && j < tp.index.size();
        idx += (idx.empty() ? "" : ", ") + Int(tp.extrapolate || !have ? -1 : tp.index[j]);
        padded[a] = padded[a] || (!tp.extrapolate && !have);
        wts += (wts.empty() ? "" : ", ") + FloatLiteral(have ? tp.weight[j] : 0.0);
      }
    }
    if (taps.empty()) idx = "0L", wts = "0.0f";
    tables += "__constant long " + name + "_i" + as + "[] = {" + idx + "};\n";
    tables += "__constant float " + name + "_w" + as + "[] = {" + wts + "};\n";
  }
  // The output coordinates, by constants.
  if (rank) body += "  long r = t;\n";
  for (size_t a = rank; a-- > 0;) {
    std::string as = std::to_string(a);
    if (a == 0) {
      body += "  long c0 = r;\n";
    } else {
      body += "  long c" + as + " = r % " + Int(out[a]) + ";\n  r /= " + Int(out[a]) + ";\n";
    }
  }
  // Strides of the input, the extrapolation check, then every combination of taps.
  std::vector<int64_t> stride(rank, 1);
  for (size_t a = rank; a-- > 1;) stride[a - 1] = stride[a] * in[a];
  std::string base = "0";
  std::vector<size_t> tapped;
  for (size_t a = 0; a < rank; ++a) {
    std::string as = std::to_string(a);
    if (identity[a]) {
      base += " + c" + as + " * " + Int(stride[a]);
      continue;
    }
    tapped.push_back(a);
    body += "  long b" + as + " = c" + as + " * " + Int(static_cast<int64_t>(width[a])) + ";\n";
    body += "  if (" + name + "_i" + as + "[b" + as + "] < 0) {\n    " +
            k.Write(0, "t", FloatLiteral(extrapolation)) + ";\n    return;\n  }\n";
  }
  const bool half = IsHalf(k.In(0));
  body +=
      "  __global const " + Pointee(half) + "* xb = x0 + (" + base + ");\n  float acc = 0.0f;\n";
  size_t terms = 1;
  for (size_t a : tapped) terms *= width[a];
  if (terms > 64) {
    // Wide windows (antialiased downscales): loops, not thousands of lines.
    std::string indent = "  ", offset = "0", product = "1.0f";
    for (size_t a : tapped) {
      std::string as = std::to_string(a), at = "b" + as + " + k" + as;
      body += indent + "for (long k" + as + " = 0; k" + as + " < " +
              Int(static_cast<int64_t>(width[a])) + "; ++k" + as + ") {\n";
      indent += "  ";
      if (padded[a]) body += indent + "if (" + name + "_i" + as + "[" + at + "] < 0) continue;\n";
      offset += " + " + name + "_i" + as + "[" + at + "] * " + Int(stride[a]);
      product += " * " + name + "_w" + as + "[" + at + "]";
    }
    body += indent + "acc += " + product + " * " + LoadFloat(half, "xb", offset) + ";\n";
    for (size_t i = 0; i < tapped.size(); ++i) {
      indent.resize(indent.size() - 2);
      body += indent + "}\n";
    }
    body += "  " + k.Write(0, "t", "acc") + ";\n";
    *code += "\n" + tables;
    k.Finish(name, body, kLocalSize, code);
    return {};
  }
  std::vector<size_t> k_of(tapped.size(), 0);
  while (true) {
    std::string offset = "0", product = "1.0f", real;
    for (size_t i = 0; i < tapped.size(); ++i) {
      std::string as = std::to_string(tapped[i]);
      std::string at = "b" + as + " + " + std::to_string(k_of[i]);
      offset += " + " + name + "_i" + as + "[" + at + "] * " + Int(stride[tapped[i]]);
      product += " * " + name + "_w" + as + "[" + at + "]";
      // A position's first tap is always real.
      if (padded[tapped[i]] && k_of[i] > 0) {
        real += (real.empty() ? "" : " && ") + name + "_i" + as + "[" + at + "] >= 0";
      }
    }
    body += "  " + (real.empty() ? "" : "if (" + real + ") ") + "acc += " + product + " * " +
            LoadFloat(half, "xb", offset) + ";\n";
    size_t i = 0;
    for (; i < tapped.size(); ++i) {
      if (++k_of[i] < width[tapped[i]]) break;
      k_of[i] = 0;
    }
    if (i == tapped.size()) break;
  }
  body += "  " + k.Write(0, "t", "acc") + ";\n";
  *code += "\n" + tables;
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// image.grid_sample (1-D to 3-D), as targets/cpu/kernels/image.cc computes it (in float): one
// work-item per output element finds, per spatial axis, the taps of its grid coordinate (nearest:
// rounded half to even; linear: 2; cubic: 4, Keys a = -0.75) after the padding mode, then sums
// weight times pixel over every combination (a zero-padded tap adds nothing).
Status EmitGridSample(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  std::string where = Where(step);
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& y = k.Out().dims;
  if (x.size() < 3 || x.size() > 5 || y.size() != x.size()) {
    return Error(where + ": data of 1 to 3 spatial dims expected");
  }
  size_t nd = x.size() - 2;
  auto str = [&](const char* attr, const char* fallback) {
    const std::string* s = step.attrs.Get<std::string>(attr);
    return s ? *s : std::string(fallback);
  };
  std::string mode = str("mode", "linear"), padding = str("padding_mode", "zeros");
  const bool* align_attr = step.attrs.Get<bool>("align_corners");
  bool align = align_attr && *align_attr;
  if (mode != "linear" && mode != "nearest" && mode != "cubic") {
    return Error(where + ": mode '" + mode + "'");
  }
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return Error(where + ": padding_mode '" + padding + "'");
  }
  std::vector<int> spatial(y.begin() + 2, y.end()), image(x.begin() + 2, x.end());
  k.Long("total", Product(g, y, 0));
  k.Long("points", Product(g, spatial, 0));
  k.Long("C", x[1]);
  PassDims(k, "L", image);
  std::string body = R"(  long t = get_global_id(0);
  if (t >= total) return;
  long p = t % points, ch = t / points % C, n = t / points / C;
)";
  const bool half = IsHalf(k.In(0));
  body += "  __global const " + Pointee(half) + "* gp = x1 + (n * points + p) * " +
          Int(static_cast<int64_t>(nd)) + ";\n";
  body += "  long ix[3][4];\n  float wx[3][4];\n";
  int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  for (size_t d = 0; d < nd; ++d) {
    std::string ds = std::to_string(d), len = "dL" + ds;
    body += "  {\n    float v = " + LoadFloat(half, "gp", std::to_string(nd - 1 - d)) +
            ", len = (float)" + len + ";\n";
    body += align ? "    float c = (v + 1.0f) / 2.0f * (len - 1.0f);\n"
                  : "    float c = ((v + 1.0f) * len - 1.0f) / 2.0f;\n";
    body += "    c = clamp(c, -1e9f, 1e9f);\n";
    if (mode == "nearest") body += "    c = rint(c);\n";
    body += std::string("    float lo = ") + (align ? "0.0f" : "-0.5f") +
            ", hi = " + (align ? "len - 1.0f" : "len - 0.5f") + ";\n";
    if (padding == "border") {
      body += "    if (c < lo || c > hi) c = clamp(c, 0.0f, len - 1.0f);\n";
    } else if (padding == "reflection") {
      body += "    if (c < lo || c > hi) c = q_reflect(c, lo, hi);\n";
    }
    if (mode == "nearest") {
      body += "    long i0 = (long)c;\n    wx[" + ds + "][0] = 1.0f;\n";
    } else if (mode == "linear") {
      body += "    float f = floor(c);\n    long i0 = (long)f;\n    wx[" + ds +
              "][0] = 1.0f - (c - f);\n    wx[" + ds + "][1] = c - f;\n";
    } else {
      body += R"(    float f = floor(c), r = c - f, r1 = r + 1.0f, q = 1.0f - r, q1 = 2.0f - r;
    const float a = -0.75f;
    long i0 = (long)f - 1;
)";
      body += "    wx[" + ds + "][0] = ((a * r1 - 5.0f * a) * r1 + 8.0f * a) * r1 - 4.0f * a;\n";
      body += "    wx[" + ds + "][1] = ((a + 2.0f) * r - (a + 3.0f)) * r * r + 1.0f;\n";
      body += "    wx[" + ds + "][2] = ((a + 2.0f) * q - (a + 3.0f)) * q * q + 1.0f;\n";
      body += "    wx[" + ds + "][3] = ((a * q1 - 5.0f * a) * q1 + 8.0f * a) * q1 - 4.0f * a;\n";
    }
    // Each tap's index after the padding mode: -1 for a zero.
    body +=
        "    for (int j = 0; j < " + std::to_string(taps) + "; ++j) {\n      long i = i0 + j;\n";
    body += "      if (i < 0 || i >= " + len + ") {\n";
    if (padding == "zeros") {
      body += "        i = -1;\n";
    } else if (padding == "border") {
      body += "        i = clamp(i, 0L, " + len + " - 1);\n";
    } else {
      body += "        i = clamp((long)q_reflect((float)i, lo, hi), 0L, " + len + " - 1);\n";
    }
    body += "      }\n      ix[" + ds + "][j] = i;\n    }\n  }\n";
  }
  // The image's strides, then every combination of taps.
  std::string stride = "1";
  std::vector<std::string> strides(nd);
  for (size_t d = nd; d-- > 0;) {
    strides[d] = stride;
    stride = "(" + stride + " * dL" + std::to_string(d) + ")";
  }
  body += "  __global const " + Pointee(half) + "* img = x0 + (n * C + ch) * " + stride + ";\n";
  body += "  float sum = 0.0f;\n";
  std::string indent = "  ", offset, weight, valid;
  for (size_t d = 0; d < nd; ++d) {
    std::string ds = std::to_string(d), j = "j" + ds;
    body += indent + "for (int " + j + " = 0; " + j + " < " + std::to_string(taps) + "; ++" + j +
            ") {\n";
    indent += "  ";
    offset += (d ? " + " : "") + ("ix[" + ds + "][" + j + "] * " + strides[d]);
    weight += (d ? " * " : "") + ("wx[" + ds + "][" + j + "]");
    valid += (d ? " && " : "") + ("ix[" + ds + "][" + j + "] >= 0");
  }
  body += indent + "if (" + valid + ") sum += " + weight + " * " + LoadFloat(half, "img", offset) +
          ";\n";
  for (size_t d = nd; d-- > 0;) {
    indent.resize(indent.size() - 2);
    body += indent + "}\n";
  }
  body += "  " + k.Write(0, "t", "sum") + ";\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

}  // namespace quilt::compiler::opencl
