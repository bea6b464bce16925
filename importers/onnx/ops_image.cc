// Converters of image and detection ops: Resize, GridSample, AffineGrid, RoiAlign,
// NonMaxSuppression, ImageDecoder.
#include <cmath>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

Expected<Outputs> Resize(NodeContext& ctx) {
  ir::Attrs a;
  Expected<std::string> mode = ctx.String("mode", "nearest");
  if (!mode) return ctx.Error(mode.error().message);
  if (*mode != "nearest" && *mode != "linear" && *mode != "cubic") {
    return ctx.Error("mode must be nearest, linear or cubic, got '" + *mode + "'");
  }
  a.Set("mode", *mode);
  int scales_at = 2, sizes_at = 3;
  Expected<ir::Expr> roi = ctx.Const(ir::DataType::kFloat32, {0}, nullptr);
  if (ctx.opset() < 11) {
    // Resize-10: (X, scales), asymmetric coordinates, nearest rounds down.
    scales_at = 1;
    sizes_at = -1;
    a.Set("coordinate_transformation_mode", std::string("asymmetric"));
    a.Set("nearest_mode", std::string("floor"));
  } else {
    roi = ctx.InputOrEmpty(1, ir::DataType::kFloat32);
    for (const char* name : {"coordinate_transformation_mode", "nearest_mode"}) {
      if (!ctx.Attr(name)) continue;
      Expected<std::string> v = ctx.String(name);
      if (!v) return ctx.Error(v.error().message);
      a.Set(name, *v);
    }
    Expected<double> cubic = ctx.Float("cubic_coeff_a", -0.75);
    Expected<int64_t> exclude = ctx.Int("exclude_outside", 0);
    Expected<double> extrapolation = ctx.Float("extrapolation_value", 0.0);
    if (!cubic || !exclude || !extrapolation) return ctx.Error("bad Resize attributes");
    a.Set("cubic_coeff_a", *cubic);
    a.Set("exclude_outside", *exclude != 0);
    a.Set("extrapolation_value", *extrapolation);
  }
  if (ctx.opset() >= 18) {
    Expected<int64_t> antialias = ctx.Int("antialias", 0);
    Expected<std::string> policy = ctx.String("keep_aspect_ratio_policy", "stretch");
    if (!antialias || !policy) return ctx.Error("bad Resize attributes");
    if (*policy != "stretch" && *policy != "not_larger" && *policy != "not_smaller") {
      return ctx.Error("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller");
    }
    a.Set("antialias", *antialias != 0);
    a.Set("keep_aspect_ratio_policy", *policy);
    if (ctx.Attr("axes")) {
      Expected<std::vector<int64_t>> axes = ctx.Ints("axes");
      if (!axes) return ctx.Error(axes.error().message);
      a.Set("axes", *axes);
    }
  }
  if (!roi) return ctx.Error(roi.error().message);
  Expected<ir::Expr> scales = ctx.InputOrEmpty(scales_at, ir::DataType::kFloat32);
  Expected<ir::Expr> sizes = sizes_at < 0 ? ctx.Const(ir::DataType::kInt64, {0}, nullptr)
                                          : ctx.InputOrEmpty(sizes_at, ir::DataType::kInt64);
  if (!scales || !sizes) return ctx.Error("bad Resize inputs");
  // Sizes known at import time (a constant, or pinned) become a constant the rule can read;
  // sizes known by their dims (an exporter's Concat of Shape slices: another tensor's height and
  // width) a shape, whose symbolic values the rule reads the same way.
  if (sizes_at >= 0 && ctx.HasInput(sizes_at) && !ctx.ConstantInput(sizes_at)) {
    if (std::optional<std::vector<int64_t>> k = ctx.KnownInts(sizes_at)) {
      Expected<ir::Expr> c =
          ctx.Const(ir::DataType::kInt64, {static_cast<int64_t>(k->size())}, k->data());
      if (c) sizes = *c;
    } else if (std::optional<KnownValues> dims = ctx.Known(sizes_at)) {
      sizes = ir::MakeShapeExpr(*dims);
    }
  }
  return NodeContext::Single(ctx.Emit(OpKind::kResize, {ctx.Input(0), *roi, *scales, *sizes}, a));
}

Expected<Outputs> GridSample(NodeContext& ctx) {
  ir::Attrs a;
  // Mode names changed in opset 20: bilinear -> linear, bicubic -> cubic.
  Expected<std::string> mode = ctx.String("mode", ctx.opset() < 20 ? "bilinear" : "linear");
  Expected<std::string> padding = ctx.String("padding_mode", "zeros");
  Expected<int64_t> align = ctx.Int("align_corners", 0);
  if (!mode || !padding || !align) return ctx.Error("bad GridSample attributes");
  std::string m = *mode == "bilinear" ? "linear" : *mode == "bicubic" ? "cubic" : *mode;
  if (m != "linear" && m != "nearest" && m != "cubic")
    return ctx.Error("unknown mode '" + *mode + "'");
  if (*padding != "zeros" && *padding != "border" && *padding != "reflection") {
    return ctx.Error("unknown padding_mode '" + *padding + "'");
  }
  a.Set("mode", m);
  a.Set("padding_mode", *padding);
  a.Set("align_corners", *align != 0);
  return NodeContext::Single(ctx.Emit(OpKind::kGridSample, {ctx.Input(0), ctx.Input(1)}, a));
}

Expected<Outputs> AffineGrid(NodeContext& ctx) {
  Expected<int64_t> align = ctx.Int("align_corners", 0);
  if (!align) return ctx.Error(align.error().message);
  ir::Attrs a;
  a.Set("align_corners", *align != 0);
  ir::Expr size = ctx.Input(1);
  if (size && !ctx.ConstantInput(1)) {
    if (std::optional<std::vector<int64_t>> k = ctx.KnownInts(1)) {
      Expected<ir::Expr> c =
          ctx.Const(ir::DataType::kInt64, {static_cast<int64_t>(k->size())}, k->data());
      if (c) size = *c;
    }
  }
  return NodeContext::Single(ctx.Emit(OpKind::kAffineGrid, {ctx.Input(0), size}, a));
}

Expected<Outputs> RoiAlign(NodeContext& ctx) {
  ir::Attrs a;
  Expected<std::string> mode = ctx.String("mode", "avg");
  Expected<int64_t> h = ctx.Int("output_height", 1);
  Expected<int64_t> w = ctx.Int("output_width", 1);
  Expected<int64_t> sr = ctx.Int("sampling_ratio", 0);
  Expected<double> ss = ctx.Float("spatial_scale", 1.0);
  // Opset 16 added the attribute and fixed the default to half_pixel; RoiAlign-10 behaves as
  // output_half_pixel.
  Expected<std::string> ctm = ctx.String("coordinate_transformation_mode",
                                         ctx.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (!mode || !h || !w || !sr || !ss || !ctm) return ctx.Error("bad RoiAlign attributes");
  a.Set("mode", *mode);
  a.Set("output_height", *h);
  a.Set("output_width", *w);
  a.Set("sampling_ratio", *sr);
  a.Set("spatial_scale", *ss);
  a.Set("coordinate_transformation_mode", *ctm);
  return NodeContext::Single(
      ctx.Emit(OpKind::kRoiAlign, {ctx.Input(0), ctx.Input(1), ctx.Input(2)}, a));
}

Expected<Outputs> NonMaxSuppression(NodeContext& ctx) {
  Expected<int64_t> cpb = ctx.Int("center_point_box", 0);
  if (!cpb) return ctx.Error(cpb.error().message);
  ir::Attrs a;
  a.Set("center_point_box", *cpb);
  Expected<ir::Expr> max_boxes =
      ctx.HasInput(2) ? Expected<ir::Expr>(ctx.Input(2)) : ctx.ScalarConst(ir::DataType::kInt64, 0);
  Expected<ir::Expr> iou = ctx.HasInput(3) ? Expected<ir::Expr>(ctx.Input(3))
                                           : ctx.ScalarConst(ir::DataType::kFloat32, 0.0);
  // No score threshold: every box passes.
  Expected<ir::Expr> score = ctx.HasInput(4) ? Expected<ir::Expr>(ctx.Input(4))
                                             : ctx.ScalarConst(ir::DataType::kFloat32, -INFINITY);
  if (!max_boxes || !iou || !score) return ctx.Error("bad NonMaxSuppression inputs");
  return NodeContext::Single(ctx.Emit(OpKind::kNonMaxSuppression,
                                      {ctx.Input(0), ctx.Input(1), *max_boxes, *iou, *score}, a));
}

Expected<Outputs> ImageDecoder(NodeContext& ctx) {
  Expected<std::string> format = ctx.String("pixel_format", "RGB");
  if (!format) return ctx.Error(format.error().message);
  ir::Attrs a;
  a.Set("pixel_format", *format);
  return NodeContext::Single(ctx.Emit(OpKind::kImageDecode, {ctx.Input(0)}, a));
}

}  // namespace

const std::vector<Converter> kImageConverters = {
    {"Resize", 10, Resize},
    {"GridSample", 16, GridSample},
    {"AffineGrid", 20, AffineGrid},
    {"RoiAlign", 10, RoiAlign},
    {"NonMaxSuppression", 10, NonMaxSuppression},
    {"ImageDecoder", 20, ImageDecoder},
};

}  // namespace quilt::importers::onnx
