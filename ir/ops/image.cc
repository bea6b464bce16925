// Struct-info rules of the ops in ir/ops/image.def.
#include <cmath>
#include <optional>

#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

int64_t ElementCount(const Expr& e) {
  std::optional<std::vector<int64_t>> s = e->struct_info->StaticShape();
  if (!s) return -1;
  int64_t n = 1;
  for (int64_t d : *s) n *= d;
  return n;
}

// A resized dim computed in double, truncated; nullopt unless it is a count of at most 2^50 (the
// runtime's element limit): NaN, infinite and huge scales or sizes are refused, never cast.
std::optional<int64_t> ResizedDim(double v) {
  if (!(v >= 0 && v <= 0x1p50)) return std::nullopt;
  return static_cast<int64_t>(v);
}

Diagnostic DimOutOfRange(int64_t axis) {
  return Error("the resized dim of axis " + std::to_string(axis) + " is out of range");
}

}  // namespace

Expected<StructInfo> InferResize(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  int ndim = (*x)->ndim;
  DataType dtype = (*x)->dtype;
  if (ndim < 0) return TensorSInfo(std::nullopt, dtype, std::nullopt, -1);
  std::vector<int64_t> axes;
  if (const auto* a = attrs.Get<std::vector<int64_t>>("axes")) {
    for (int64_t v : *a) {
      Expected<int64_t> n = NormalizeAxis(v, ndim, "axis");
      if (!n) return n.error();
      axes.push_back(*n);
    }
  } else {
    for (int i = 0; i < ndim; ++i) axes.push_back(i);
  }
  std::optional<std::vector<double>> sizes = ConstantValues(args[3]);
  std::optional<std::vector<double>> scales = ConstantValues(args[2]);
  // Sizes given as a shape (R.Shape, its values possibly symbolic: an exporter's sizes computed
  // from another tensor's dims) rather than a tensor.
  const StructInfo& sizes_info = args[3]->struct_info;
  const bool sizes_shape = sizes_info && sizes_info->kind == StructInfoKind::kShape;
  bool has_sizes = sizes_shape ? sizes_info->ndim != 0 : ElementCount(args[3]) != 0;
  bool has_scales = ElementCount(args[2]) != 0;
  if (has_sizes && has_scales) return Error("only one of 'scales' and 'sizes' may be given");
  if (!has_sizes && !has_scales) return Error("one of 'scales' and 'sizes' must be given");
  if (sizes_shape) {
    std::optional<std::vector<PrimExpr>> values = ShapeValues(args[3]);
    const std::string& policy = *attrs.Get<std::string>("keep_aspect_ratio_policy");
    if (!values || !(*x)->shape || policy != "stretch") {
      return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
    }
    if (values->size() != axes.size()) {
      return Error("sizes has " + std::to_string(values->size()) + " values for " +
                   std::to_string(axes.size()) + " axes");
    }
    std::vector<PrimExpr> out = *(*x)->shape;
    for (size_t i = 0; i < axes.size(); ++i) {
      std::optional<int64_t> v = AsInt((*values)[i]);
      if (v && !ResizedDim(static_cast<double>(*v))) return DimOutOfRange(axes[i]);
      out[axes[i]] = (*values)[i];
    }
    return TensorSInfo(out, dtype);
  }
  const std::vector<double>* given =
      has_sizes ? (sizes ? &*sizes : nullptr) : (scales ? &*scales : nullptr);
  if (!given || !(*x)->shape) return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
  if (given->size() != axes.size()) {
    return Error(std::string(has_sizes ? "sizes" : "scales") + " has " +
                 std::to_string(given->size()) + " values for " + std::to_string(axes.size()) +
                 " axes");
  }
  std::vector<PrimExpr> out = *(*x)->shape;
  const std::string& policy = *attrs.Get<std::string>("keep_aspect_ratio_policy");
  if (has_sizes && policy != "stretch") {
    // One scale for every resized axis: the smallest (not_larger) or largest (not_smaller).
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      std::optional<int64_t> in = AsInt(out[axes[i]]);
      if (!in) return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
      double s = (*given)[i] / static_cast<double>(*in);
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    for (int64_t a : axes) {
      std::optional<int64_t> d =
          ResizedDim(std::round(scale * static_cast<double>(*AsInt(out[a]))));
      if (!d) return DimOutOfRange(a);
      out[a] = IntImm(*d);
    }
    return TensorSInfo(out, dtype);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    double v = (*given)[i];
    if (v < 0) return Error("negative " + std::string(has_sizes ? "size" : "scale"));
    if (has_sizes) {
      std::optional<int64_t> d = ResizedDim(v);
      if (!d) return DimOutOfRange(axes[i]);
      out[axes[i]] = IntImm(*d);
      continue;
    }
    std::optional<int64_t> in = AsInt(out[axes[i]]);
    if (!in) {
      if (v == 1.0) continue;
      // A whole-number scale of a dim known by name: floor(d * v) is d * v exactly (a detector's
      // 2x upsampling of an image of any size keeps its dims, and what reads it its fusions).
      if (v >= 2 && v <= 1024 && v == std::floor(v)) {
        out[axes[i]] = out[axes[i]] * IntImm(static_cast<int64_t>(v));
        continue;
      }
      return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
    }
    std::optional<int64_t> d = ResizedDim(std::floor(static_cast<double>(*in) * v));
    if (!d) return DimOutOfRange(axes[i]);
    out[axes[i]] = IntImm(*d);
  }
  return TensorSInfo(out, dtype);
}

Expected<StructInfo> InferGridSample(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> grid = TensorArg(op, args, 1);
  if (!grid) return grid.error();
  if ((*x)->ndim >= 0 && (*grid)->ndim >= 0 && (*x)->ndim != (*grid)->ndim) {
    return Error("x has rank " + std::to_string((*x)->ndim) + " but grid has rank " +
                 std::to_string((*grid)->ndim));
  }
  int ndim = (*x)->ndim >= 0 ? (*x)->ndim : (*grid)->ndim;
  if (!(*x)->shape || !(*grid)->shape)
    return TensorSInfo(std::nullopt, (*x)->dtype, std::nullopt, ndim);
  // (N, C, spatial of the grid...)
  std::vector<PrimExpr> out = {(*(*x)->shape)[0], (*(*x)->shape)[1]};
  for (int i = 1; i + 1 < (*grid)->ndim; ++i) out.push_back((*(*grid)->shape)[i]);
  return TensorSInfo(out, (*x)->dtype);
}

Expected<StructInfo> InferAffineGrid(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs&) {
  Expected<const StructInfoNode*> theta = TensorArg(op, args, 0);
  if (!theta) return theta.error();
  std::optional<std::vector<double>> size = ConstantValues(args[1]);
  int64_t n = ElementCount(args[1]);
  if (n != 4 && n != 5 && n != -1)
    return Error("size must have 4 or 5 values, got " + std::to_string(n));
  if (!size)
    return TensorSInfo(std::nullopt, (*theta)->dtype, std::nullopt,
                       n < 0 ? -1 : static_cast<int>(n));
  // (N, H, W, 2) or (N, D, H, W, 3).
  std::vector<int64_t> out = {static_cast<int64_t>((*size)[0])};
  for (size_t i = 2; i < size->size(); ++i) out.push_back(static_cast<int64_t>((*size)[i]));
  out.push_back(static_cast<int64_t>(size->size()) - 2);
  return TensorSInfo(out, (*theta)->dtype);
}

Expected<StructInfo> InferRoiAlign(const OpInfo& op, const std::vector<Expr>& args,
                                   const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> rois = TensorArg(op, args, 1);
  if (!rois) return rois.error();
  if ((*x)->ndim >= 0 && (*x)->ndim != 4)
    return Error("x must have rank 4, got " + std::to_string((*x)->ndim));
  if ((*rois)->ndim >= 0 && (*rois)->ndim != 2) return Error("rois must have rank 2");
  const std::string& mode = *attrs.Get<std::string>("mode");
  if (mode != "avg" && mode != "max") return Error("mode must be avg or max, got '" + mode + "'");
  PrimExpr num = (*rois)->shape ? (*(*rois)->shape)[0] : SymVar("num_rois");
  PrimExpr c = (*x)->shape ? (*(*x)->shape)[1] : SymVar("channels");
  return TensorSInfo(std::vector<PrimExpr>{num, c, IntImm(*attrs.Get<int64_t>("output_height")),
                                           IntImm(*attrs.Get<int64_t>("output_width"))},
                     (*x)->dtype);
}

Expected<StructInfo> InferNonMaxSuppression(const OpInfo& op, const std::vector<Expr>& args,
                                            const Attrs& attrs) {
  Expected<const StructInfoNode*> boxes = TensorArg(op, args, 0);
  if (!boxes) return boxes.error();
  Expected<const StructInfoNode*> scores = TensorArg(op, args, 1);
  if (!scores) return scores.error();
  if ((*boxes)->ndim >= 0 && (*boxes)->ndim != 3) return Error("boxes must have rank 3");
  if ((*scores)->ndim >= 0 && (*scores)->ndim != 3) return Error("scores must have rank 3");
  int64_t cpb = *attrs.Get<int64_t>("center_point_box");
  if (cpb != 0 && cpb != 1) return Error("center_point_box must be 0 or 1");
  // (selected, 3): how many are selected is known only at run time.
  return TensorSInfo(std::vector<PrimExpr>{SymVar("num_selected"), IntImm(3)}, DataType::kInt64);
}

Expected<StructInfo> InferImageDecode(const OpInfo& op, const std::vector<Expr>& args,
                                      const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if ((*x)->ndim >= 0 && (*x)->ndim != 1) {
    return Error("the encoded image must be 1-D, got rank " + std::to_string((*x)->ndim));
  }
  if ((*x)->dtype != DataType::kUInt8 && (*x)->dtype != DataType::kVoid) {
    return Error("the encoded image must be uint8, got " + DtypeName((*x)->dtype));
  }
  const std::string& format = *attrs.Get<std::string>("pixel_format");
  int64_t channels = 0;
  if (format == "RGB" || format == "BGR") channels = 3;
  if (format == "Grayscale") channels = 1;
  if (channels == 0) {
    return Error("pixel_format must be RGB, BGR or Grayscale, got '" + format + "'");
  }
  // The image's size is in the encoded bytes: known only at run time.
  return TensorSInfo(std::vector<PrimExpr>{SymVar("height"), SymVar("width"), IntImm(channels)},
                     DataType::kUInt8);
}

}  // namespace quilt::ir
