// Struct-info rules of the ops in ir/ops/nn.def.
#include <algorithm>
#include <cctype>

#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

using Dims = std::vector<PrimExpr>;

std::string Str(int64_t v) { return std::to_string(v); }

// The spatial rank of a per-rank op: the digit in its name ("nn.conv2d" -> 2), else -1.
int SpatialRank(const OpInfo& op) {
  for (char c : op.name) {
    if (std::isdigit(static_cast<unsigned char>(c))) return c - '0';
  }
  return -1;
}

PrimExpr FloorDiv(PrimExpr a, PrimExpr b) { return MakeBinary(PrimKind::kFloorDiv, a, b); }

// e + c, written e - |c| for negative c.
PrimExpr AddConst(const PrimExpr& e, int64_t c) { return c < 0 ? e - IntImm(-c) : e + IntImm(c); }

StructInfo Unknown(DataType dtype, int ndim) {
  return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
}

// Argument i as a tensor of floating-point dtype (or unknown dtype).
Expected<const StructInfoNode*> FloatArg(const OpInfo& op, const std::vector<Expr>& args,
                                         size_t i) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, i);
  if (!x) return x;
  if ((*x)->dtype != DataType::kVoid && !IsFloat((*x)->dtype)) {
    return Error("argument '" + op.arg_names[i] + "' must be floating-point, got " +
                 DtypeName((*x)->dtype));
  }
  return x;
}

// Checks that a tensor has rank `ndim` (when known), naming the layout in the message.
Status CheckRank(const OpInfo& op, size_t i, const StructInfoNode& x, int ndim,
                 const std::string& layout) {
  if (x.ndim >= 0 && x.ndim != ndim) {
    return Error("argument '" + op.arg_names[i] + "' must have rank " + Str(ndim) + " " + layout +
                 ", got rank " + Str(x.ndim));
  }
  return {};
}

// Attribute `name` as n ints, or n copies of `fill` when None.
Expected<std::vector<int64_t>> IntsAttr(const Attrs& attrs, const std::string& name, size_t n,
                                        int64_t fill) {
  const auto* v = attrs.Get<std::vector<int64_t>>(name);
  if (!v) return std::vector<int64_t>(n, fill);
  if (v->size() != n) {
    return Error(name + " has " + Str(v->size()) + " values, expected " + Str(n));
  }
  return *v;
}

// The window of a conv or pool: kernel, strides, dilation, pads (begin..., end...).
struct Window {
  std::vector<int64_t> kernel, strides, dilation, padding;
  bool ceil_mode = false;
  std::string auto_pad = "NOTSET";
};

Expected<Window> ReadWindow(const Attrs& attrs, int r, std::vector<int64_t> kernel) {
  Window w;
  w.kernel = std::move(kernel);
  Expected<std::vector<int64_t>> s = IntsAttr(attrs, "strides", r, 1);
  if (!s) return s.error();
  Expected<std::vector<int64_t>> d = IntsAttr(attrs, "dilation", r, 1);
  if (!d) return d.error();
  Expected<std::vector<int64_t>> p = IntsAttr(attrs, "padding", 2 * r, 0);
  if (!p) return p.error();
  w.strides = *s;
  w.dilation = *d;
  w.padding = *p;
  if (const bool* c = attrs.Get<bool>("ceil_mode")) w.ceil_mode = *c;
  if (const std::string* a = attrs.Get<std::string>("auto_pad")) w.auto_pad = *a;
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
      w.auto_pad != "VALID") {
    return Error("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + w.auto_pad +
                 "'");
  }
  for (int i = 0; i < r; ++i) {
    if (w.strides[i] < 1) return Error("strides must be positive, got " + Str(w.strides[i]));
    if (w.dilation[i] < 1) return Error("dilation must be positive, got " + Str(w.dilation[i]));
    if (w.kernel[i] < 1 && w.kernel[i] != -1) {
      return Error("kernel size must be positive, got " + Str(w.kernel[i]));
    }
  }
  return w;
}

// Output size of spatial dim i of a sliding window over `in` (kernel -1: unknown).
Expected<PrimExpr> WindowOut(const Window& w, int i, const PrimExpr& in) {
  int r = static_cast<int>(w.kernel.size());
  int64_t s = w.strides[i];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    return FloorDiv(AddConst(in, s - 1), IntImm(s));
  }
  if (w.kernel[i] < 0) return PrimExpr();
  int64_t dk = (w.kernel[i] - 1) * w.dilation[i] + 1;
  int64_t pb = 0, pe = 0;
  if (w.auto_pad == "NOTSET") {
    pb = w.padding[i];
    pe = w.padding[r + i];
    if (pb < 0 || pe < 0) return Error("pads must be non-negative, got " + Str(std::min(pb, pe)));
  }
  PrimExpr span = AddConst(in, pb + pe - dk);
  if (std::optional<int64_t> c = AsInt(span); c && *c < 0) {
    return Error("the window (" + Str(dk) + " with dilation) is larger than the padded input (" +
                 Str(*c + dk) + ") along spatial dim " + Str(i));
  }
  if (!w.ceil_mode || w.auto_pad != "NOTSET") return FloorDiv(span, IntImm(s)) + IntImm(1);
  // Rounded up, but the last window must start inside the input or its begin pad.
  PrimExpr up = FloorDiv(AddConst(in, pb + pe - dk + s - 1), IntImm(s)) + IntImm(1);
  PrimExpr starts = FloorDiv(AddConst(in, pb - 1), IntImm(s)) + IntImm(1);
  if (PrimEqual(up, starts)) return up;
  return MakeBinary(PrimKind::kMin, up, starts);
}

// (N, channels, out...) for a window over data's spatial dims; unknown dims stay unknown.
Expected<StructInfo> WindowResult(const StructInfoNode& x, const PrimExpr& channels,
                                  const Window& w, DataType dtype) {
  int r = static_cast<int>(w.kernel.size());
  if (!x.shape) return Unknown(dtype, r + 2);
  Dims out = {(*x.shape)[0], channels};
  for (int i = 0; i < r; ++i) {
    Expected<PrimExpr> o = WindowOut(w, i, (*x.shape)[2 + i]);
    if (!o) return o.error();
    if (!*o) return Unknown(dtype, r + 2);
    out.push_back(*o);
  }
  if (!channels) return Unknown(dtype, r + 2);
  return TensorSInfo(std::move(out), dtype);
}

// Spatial kernel dims of a weight tensor (-1 where symbolic), or nullopt when unknown.
std::vector<int64_t> KernelOf(const StructInfoNode& w, int r) {
  std::vector<int64_t> k(r, -1);
  if (!w.shape) return k;
  for (int i = 0; i < r; ++i) {
    if (std::optional<int64_t> c = AsInt((*w.shape)[2 + i])) k[i] = *c;
  }
  return k;
}

PrimExpr DimOf(const StructInfoNode& x, int i) {
  return x.shape && i < static_cast<int>(x.shape->size()) ? (*x.shape)[i] : PrimExpr();
}

std::optional<int64_t> StaticDim(const StructInfoNode& x, int i) {
  PrimExpr d = DimOf(x, i);
  return d ? AsInt(d) : std::nullopt;
}

// A 1-D parameter of length `len` (when both are known; length 1 allowed when `allow_one`).
Status CheckVector(const OpInfo& op, const std::vector<Expr>& args, size_t i, const PrimExpr& len,
                   const std::string& what, bool allow_one = false) {
  Expected<const StructInfoNode*> p = TensorArg(op, args, i);
  if (!p) return p.error();
  if ((*p)->ndim >= 0 && (*p)->ndim != 1) {
    return Error("argument '" + op.arg_names[i] + "' must be 1-D (" + what + "), got rank " +
                 Str((*p)->ndim));
  }
  std::optional<int64_t> have = StaticDim(**p, 0);
  std::optional<int64_t> want = len ? AsInt(len) : std::nullopt;
  if (have && want && *have != *want && !(allow_one && *have == 1)) {
    return Error("argument '" + op.arg_names[i] + "' has " + Str(*have) + " values, expected " +
                 Str(*want) + " (" + what + ")");
  }
  return {};
}

// `axes` normalized against ndim, each once.
Expected<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int ndim) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    Expected<int64_t> n = NormalizeAxis(a, ndim, "axis");
    if (!n) return n.error();
    for (int64_t o : out) {
      if (o == *n) return Error("axis " + Str(a) + " appears twice");
    }
    out.push_back(*n);
  }
  return out;
}

// A scale or bias that must broadcast to x's trailing dims from axes[0] on.
Status CheckTrailingParam(const OpInfo& op, const std::vector<Expr>& args, size_t i,
                          const StructInfoNode& x, int64_t first_axis) {
  Expected<const StructInfoNode*> p = TensorArg(op, args, i);
  if (!p) return p.error();
  if (x.ndim < 0 || (*p)->ndim < 0) return {};
  int64_t norm_rank = x.ndim - first_axis;
  if ((*p)->ndim > norm_rank) {
    return Error("argument '" + op.arg_names[i] + "' has rank " + Str((*p)->ndim) +
                 ", more than the " + Str(norm_rank) + " normalized dims");
  }
  for (int k = 0; k < (*p)->ndim; ++k) {
    std::optional<int64_t> have = StaticDim(**p, (*p)->ndim - 1 - k);
    std::optional<int64_t> want = StaticDim(x, x.ndim - 1 - k);
    if (have && want && *have != 1 && *have != *want) {
      return Error("argument '" + op.arg_names[i] +
                   "' does not broadcast to the normalized dims: " +
                   Describe(args[i]->struct_info) + " against " + Describe(args[0]->struct_info));
    }
  }
  return {};
}

// Axes that must be the trailing dims (layer and RMS normalization); returns the first.
Expected<int64_t> TrailingAxes(const Attrs& attrs, int ndim) {
  const auto* axes = attrs.Get<std::vector<int64_t>>("axes");
  if (!axes || axes->empty()) return Error("axes must not be empty");
  if (ndim < 0) return (*axes)[0];
  Expected<std::vector<int64_t>> n = NormalizeAxes(*axes, ndim);
  if (!n) return n.error();
  std::vector<int64_t> sorted = *n;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); ++k) {
    if (sorted[k] != ndim - static_cast<int64_t>(sorted.size()) + static_cast<int64_t>(k)) {
      return Error("axes must be the trailing dims of the rank-" + Str(ndim) + " input");
    }
  }
  return sorted[0];
}

}  // namespace

Expected<StructInfo> InferPRelu(const OpInfo& op, const std::vector<Expr>& args,
                                const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> a = TensorArg(op, args, 1);
  if (!a) return a.error();
  Expected<DataType> dtype = SameDtype(**x, **a);
  if (!dtype) return dtype.error();
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), (*x)->ndim, "axis");
  if (!axis) return axis.error();
  Status ok = CheckVector(op, args, 1, DimOf(**x, static_cast<int>(*axis)),
                          "one per element along axis " + Str(*axis), true);
  if (!ok) return ok.error();
  return SameShape(**x, *dtype);
}

Expected<StructInfo> InferConv(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  int r = SpatialRank(op);
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> w = TensorArg(op, args, 1);
  if (!w) return w.error();
  Expected<DataType> dtype = SameDtype(**x, **w);
  if (!dtype) return dtype.error();
  if (Status s = CheckRank(op, 0, **x, r + 2, "(N, C, spatial...)"); !s) return s.error();
  if (Status s = CheckRank(op, 1, **w, r + 2, "(O, C / groups, kernel...)"); !s) return s.error();
  int64_t groups = *attrs.Get<int64_t>("groups");
  if (groups < 1) return Error("groups must be positive, got " + Str(groups));
  std::optional<int64_t> c = StaticDim(**x, 1), wc = StaticDim(**w, 1), o = StaticDim(**w, 0);
  if (c && *c % groups != 0) {
    return Error("group " + Str(groups) + " does not divide " + Str(*c) + " input channels");
  }
  if (o && *o % groups != 0) {
    return Error("group " + Str(groups) + " does not divide " + Str(*o) + " output channels");
  }
  if (c && wc && *wc * groups != *c) {
    return Error("the weight has " + Str(*wc) + " input channels per group, but the data has " +
                 Str(*c) + " channels in " + Str(groups) + " group(s)");
  }
  Expected<Window> win = ReadWindow(attrs, r, KernelOf(**w, r));
  if (!win) return win.error();
  return WindowResult(**x, DimOf(**w, 0), *win, *dtype);
}

Expected<StructInfo> InferConvTranspose(const OpInfo& op, const std::vector<Expr>& args,
                                        const Attrs& attrs) {
  int r = SpatialRank(op);
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> w = TensorArg(op, args, 1);
  if (!w) return w.error();
  Expected<DataType> dtype = SameDtype(**x, **w);
  if (!dtype) return dtype.error();
  if (Status s = CheckRank(op, 0, **x, r + 2, "(N, C, spatial...)"); !s) return s.error();
  if (Status s = CheckRank(op, 1, **w, r + 2, "(C, O / groups, kernel...)"); !s) return s.error();
  int64_t groups = *attrs.Get<int64_t>("groups");
  if (groups < 1) return Error("groups must be positive, got " + Str(groups));
  std::optional<int64_t> c = StaticDim(**x, 1), wc = StaticDim(**w, 0);
  if (c && *c % groups != 0) {
    return Error("group " + Str(groups) + " does not divide " + Str(*c) + " input channels");
  }
  if (c && wc && *wc != *c) {
    return Error("the weight has " + Str(*wc) + " input channels, but the data has " + Str(*c));
  }
  Expected<Window> win = ReadWindow(attrs, r, KernelOf(**w, r));
  if (!win) return win.error();
  Expected<std::vector<int64_t>> op_pad = IntsAttr(attrs, "output_padding", r, 0);
  if (!op_pad) return op_pad.error();
  PrimExpr channels = DimOf(**w, 1);
  if (!(*x)->shape || !channels) return Unknown(*dtype, r + 2);
  Dims out = {(*(*x)->shape)[0], channels * IntImm(groups)};
  for (int i = 0; i < r; ++i) {
    if (win->kernel[i] < 0) return Unknown(*dtype, r + 2);
    int64_t dk = (win->kernel[i] - 1) * win->dilation[i] + 1;
    int64_t extra = dk + (*op_pad)[i] - win->padding[i] - win->padding[r + i];
    PrimExpr o = AddConst(((*(*x)->shape)[2 + i] - IntImm(1)) * IntImm(win->strides[i]), extra);
    if (std::optional<int64_t> v = AsInt(o); v && *v < 1) {
      return Error("output size " + Str(*v) + " along spatial dim " + Str(i) + " is not positive");
    }
    out.push_back(o);
  }
  return TensorSInfo(std::move(out), *dtype);
}

Expected<StructInfo> InferPool(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  int r = SpatialRank(op);
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if (Status s = CheckRank(op, 0, **x, r + 2, "(N, C, spatial...)"); !s) return s.error();
  bool is_max = op.name.find("max_pool") != std::string::npos;
  DataType dt = (*x)->dtype;
  if (dt != DataType::kVoid && !IsFloat(dt) && !(is_max && IsInteger(dt))) {
    return Error("expects " + std::string(is_max ? "numeric" : "floating-point") +
                 " tensors, got " + DtypeName(dt));
  }
  Expected<std::vector<int64_t>> k = IntsAttr(attrs, "pool_size", r, 1);
  if (!k) return k.error();
  Expected<Window> win = ReadWindow(attrs, r, *k);
  if (!win) return win.error();
  return WindowResult(**x, DimOf(**x, 1), *win, dt);
}

Expected<StructInfo> InferPoolWithIndices(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs& attrs) {
  Expected<StructInfo> v = InferPool(op, args, attrs);
  if (!v) return v;
  int64_t order = *attrs.Get<int64_t>("storage_order");
  if (order != 0 && order != 1) return Error("storage_order must be 0 or 1, got " + Str(order));
  return TupleSInfo({*v, SameShape(**v, DataType::kInt64)});
}

Expected<StructInfo> InferAdaptivePool(const OpInfo& op, const std::vector<Expr>& args,
                                       const Attrs& attrs) {
  int r = SpatialRank(op);
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if (Status s = CheckRank(op, 0, **x, r + 2, "(N, C, spatial...)"); !s) return s.error();
  const auto* size = attrs.Get<std::vector<int64_t>>("output_size");
  if (!size) return SameShape(**x, (*x)->dtype);
  if (static_cast<int>(size->size()) != r) {
    return Error("output_size has " + Str(size->size()) + " values, expected " + Str(r));
  }
  for (int64_t s : *size) {
    if (s < 1) return Error("output_size must be positive, got " + Str(s));
  }
  if (!(*x)->shape) return Unknown((*x)->dtype, r + 2);
  Dims out = {(*(*x)->shape)[0], (*(*x)->shape)[1]};
  for (int64_t s : *size) out.push_back(IntImm(s));
  return TensorSInfo(std::move(out), (*x)->dtype);
}

Expected<StructInfo> InferMaxUnpool(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  int r = SpatialRank(op);
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  Expected<const StructInfoNode*> idx = TensorArg(op, args, 1);
  if (!idx) return idx.error();
  if (Status s = CheckRank(op, 0, **x, r + 2, "(N, C, spatial...)"); !s) return s.error();
  if ((*idx)->dtype != DataType::kVoid && (*idx)->dtype != DataType::kInt64) {
    return Error("indices must be int64, got " + DtypeName((*idx)->dtype));
  }
  Expected<std::vector<int64_t>> k = IntsAttr(attrs, "pool_size", r, 1);
  if (!k) return k.error();
  Expected<Window> win = ReadWindow(attrs, r, *k);
  if (!win) return win.error();
  DataType dt = (*x)->dtype;
  if (const auto* size = attrs.Get<std::vector<int64_t>>("output_size")) {
    if (static_cast<int>(size->size()) != r + 2 && static_cast<int>(size->size()) != r) {
      return Error("output_size has " + Str(size->size()) + " values, expected " + Str(r + 2));
    }
    if (!(*x)->shape && static_cast<int>(size->size()) == r) return Unknown(dt, r + 2);
    Dims out;
    if (static_cast<int>(size->size()) == r) {
      out = {(*(*x)->shape)[0], (*(*x)->shape)[1]};
    }
    for (int64_t s : *size) out.push_back(IntImm(s));
    return TensorSInfo(std::move(out), dt);
  }
  if (!(*x)->shape) return Unknown(dt, r + 2);
  Dims out = {(*(*x)->shape)[0], (*(*x)->shape)[1]};
  for (int i = 0; i < r; ++i) {
    int64_t extra = win->kernel[i] - win->padding[i] - win->padding[r + i];
    out.push_back(AddConst(((*(*x)->shape)[2 + i] - IntImm(1)) * IntImm(win->strides[i]), extra));
  }
  return TensorSInfo(std::move(out), dt);
}

Expected<StructInfo> InferCol2Im(const OpInfo& op, const std::vector<Expr>& args,
                                 const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if (Status s = CheckRank(op, 0, **x, 3, "(N, C * prod(block_shape), L)"); !s) return s.error();
  const std::vector<int64_t>& image = *attrs.Get<std::vector<int64_t>>("image_shape");
  const std::vector<int64_t>& block = *attrs.Get<std::vector<int64_t>>("block_shape");
  int r = static_cast<int>(image.size());
  if (r == 0 || block.size() != image.size()) {
    return Error("image_shape and block_shape must have the same, non-zero length (got " +
                 Str(image.size()) + " and " + Str(block.size()) + ")");
  }
  Expected<Window> win = ReadWindow(attrs, r, block);
  if (!win) return win.error();
  int64_t block_size = 1, blocks = 1;
  for (int i = 0; i < r; ++i) {
    if (image[i] < 1) return Error("image_shape must be positive, got " + Str(image[i]));
    block_size *= block[i];
    Expected<PrimExpr> n = WindowOut(*win, i, IntImm(image[i]));
    if (!n) return n.error();
    blocks *= *AsInt(*n);
  }
  DataType dt = (*x)->dtype;
  if (!(*x)->shape) return Unknown(dt, r + 2);
  std::optional<int64_t> cb = StaticDim(**x, 1), l = StaticDim(**x, 2);
  if (cb && *cb % block_size != 0) {
    return Error("the block size " + Str(block_size) + " does not divide the " + Str(*cb) +
                 " values of dim 1");
  }
  if (l && *l != blocks) {
    return Error("the input has " + Str(*l) + " blocks, but image_shape and block_shape give " +
                 Str(blocks));
  }
  Dims out = {(*(*x)->shape)[0], FloorDiv((*(*x)->shape)[1], IntImm(block_size))};
  for (int64_t d : image) out.push_back(IntImm(d));
  return TensorSInfo(std::move(out), dt);
}

namespace {

Expected<StructInfo> SpaceDepth(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs,
                                bool to_space) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if (Status s = CheckRank(op, 0, **x, 4, "(N, C, H, W)"); !s) return s.error();
  int64_t b = *attrs.Get<int64_t>("block_size");
  if (b < 1) return Error("block_size must be positive, got " + Str(b));
  const std::string& mode = *attrs.Get<std::string>("mode");
  if (mode != "DCR" && mode != "CRD") return Error("mode must be DCR or CRD, got '" + mode + "'");
  DataType dt = (*x)->dtype;
  if (!(*x)->shape) return Unknown(dt, 4);
  const Dims& s = *(*x)->shape;
  PrimExpr bb = IntImm(b), b2 = IntImm(b * b);
  if (to_space) {
    if (std::optional<int64_t> c = AsInt(s[1]); c && *c % (b * b) != 0) {
      return Error("block_size^2 = " + Str(b * b) + " does not divide " + Str(*c) + " channels");
    }
    return TensorSInfo(Dims{s[0], FloorDiv(s[1], b2), s[2] * bb, s[3] * bb}, dt);
  }
  for (int i : {2, 3}) {
    if (std::optional<int64_t> d = AsInt(s[i]); d && *d % b != 0) {
      return Error("block_size " + Str(b) + " does not divide dim " + Str(i) + " (" + Str(*d) +
                   ")");
    }
  }
  return TensorSInfo(Dims{s[0], s[1] * b2, FloorDiv(s[2], bb), FloorDiv(s[3], bb)}, dt);
}

}  // namespace

Expected<StructInfo> InferDepthToSpace(const OpInfo& op, const std::vector<Expr>& args,
                                       const Attrs& attrs) {
  return SpaceDepth(op, args, attrs, true);
}

Expected<StructInfo> InferSpaceToDepth(const OpInfo& op, const std::vector<Expr>& args,
                                       const Attrs& attrs) {
  return SpaceDepth(op, args, attrs, false);
}

Expected<StructInfo> InferBatchNorm(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), (*x)->ndim, "axis");
  if (!axis) return axis.error();
  PrimExpr c = DimOf(**x, static_cast<int>(*axis));
  for (size_t i = 1; i < 5; ++i) {
    if (Expected<const StructInfoNode*> p = FloatArg(op, args, i); !p) return p.error();
    if (Status s = CheckVector(op, args, i, c, "one per channel"); !s) return s.error();
  }
  return TupleSInfo({SameShape(**x, (*x)->dtype), args[3]->struct_info, args[4]->struct_info});
}

Expected<StructInfo> InferInstanceNorm(const OpInfo& op, const std::vector<Expr>& args,
                                       const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  Expected<int64_t> axis =
      NormalizeAxis(*attrs.Get<int64_t>("channel_axis"), (*x)->ndim, "channel_axis");
  if (!axis) return axis.error();
  if (const auto* axes = attrs.Get<std::vector<int64_t>>("axes")) {
    Expected<std::vector<int64_t>> n = NormalizeAxes(*axes, (*x)->ndim);
    if (!n) return n.error();
  }
  PrimExpr c = DimOf(**x, static_cast<int>(*axis));
  for (size_t i = 1; i < 3; ++i) {
    if (Status s = CheckVector(op, args, i, c, "one per channel"); !s) return s.error();
  }
  return SameShape(**x, (*x)->dtype);
}

Expected<StructInfo> InferLayerNorm(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  Expected<int64_t> first = TrailingAxes(attrs, (*x)->ndim);
  if (!first) return first.error();
  for (size_t i = 1; i < args.size(); ++i) {
    if (Status s = CheckTrailingParam(op, args, i, **x, *first); !s) return s.error();
  }
  return SameShape(**x, (*x)->dtype);
}

Expected<StructInfo> InferRmsNorm(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  return InferLayerNorm(op, args, attrs);
}

Expected<StructInfo> InferLayerNormStats(const OpInfo& op, const std::vector<Expr>& args,
                                         const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  DataType dt = *attrs.Get<DataType>("dtype");
  if (!IsFloat(dt)) return Error("dtype must be floating-point, got " + DtypeName(dt));
  const auto& axes = *attrs.Get<std::vector<int64_t>>("axes");
  StructInfo s;
  if ((*x)->ndim < 0) {
    s = Unknown(dt, -1);
  } else {
    Expected<std::vector<int64_t>> n = NormalizeAxes(axes, (*x)->ndim);
    if (!n) return n.error();
    if (!(*x)->shape) {
      s = Unknown(dt, (*x)->ndim);
    } else {
      Dims out = *(*x)->shape;
      for (int64_t a : *n) out[a] = IntImm(1);
      s = TensorSInfo(std::move(out), dt);
    }
  }
  return TupleSInfo({s, s});
}

Expected<StructInfo> InferGroupNorm(const OpInfo& op, const std::vector<Expr>& args,
                                    const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  Expected<int64_t> axis =
      NormalizeAxis(*attrs.Get<int64_t>("channel_axis"), (*x)->ndim, "channel_axis");
  if (!axis) return axis.error();
  int64_t groups = *attrs.Get<int64_t>("num_groups");
  if (groups < 1) return Error("num_groups must be positive, got " + Str(groups));
  if (const auto* axes = attrs.Get<std::vector<int64_t>>("axes")) {
    Expected<std::vector<int64_t>> n = NormalizeAxes(*axes, (*x)->ndim);
    if (!n) return n.error();
  }
  std::optional<int64_t> c = StaticDim(**x, static_cast<int>(*axis));
  if (c && *c % groups != 0) {
    return Error("num_groups " + Str(groups) + " does not divide " + Str(*c) + " channels");
  }
  PrimExpr cd = DimOf(**x, static_cast<int>(*axis));
  for (size_t i = 1; i < 3; ++i) {
    if (Status s = CheckVector(op, args, i, cd, "one per channel"); !s) return s.error();
  }
  return SameShape(**x, (*x)->dtype);
}

Expected<StructInfo> InferMeanVarianceNorm(const OpInfo& op, const std::vector<Expr>& args,
                                           const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  Expected<std::vector<int64_t>> n =
      NormalizeAxes(*attrs.Get<std::vector<int64_t>>("axes"), (*x)->ndim);
  if (!n) return n.error();
  return SameShape(**x, (*x)->dtype);
}

Expected<StructInfo> InferLrn(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  int64_t size = *attrs.Get<int64_t>("size");
  if (size < 1) return Error("size must be positive, got " + Str(size));
  Expected<int64_t> axis = NormalizeAxis(*attrs.Get<int64_t>("axis"), (*x)->ndim, "axis");
  if (!axis) return axis.error();
  return SameShape(**x, (*x)->dtype);
}

Expected<StructInfo> InferDropout(const OpInfo& op, const std::vector<Expr>& args,
                                  const Attrs& attrs) {
  Expected<const StructInfoNode*> x = FloatArg(op, args, 0);
  if (!x) return x.error();
  double rate = *attrs.Get<double>("rate");
  if (!(rate >= 0 && rate < 1)) return Error("rate must be in [0, 1), got " + std::to_string(rate));
  StructInfo s = SameShape(**x, (*x)->dtype);
  return TupleSInfo({s, s});
}

Expected<StructInfo> InferTfIdfVectorizer(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType t = (*x)->dtype;
  if (t != DataType::kInt32 && t != DataType::kInt64 && t != DataType::kVoid) {
    return Error("the tokens must be int32 or int64, got " + DtypeName(t));
  }
  if ((*x)->ndim > 2) {
    return Error("the tokens must have rank 1 or 2, got rank " + Str((*x)->ndim));
  }
  const std::string& mode = *attrs.Get<std::string>("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") {
    return Error("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  }
  int64_t lo = *attrs.Get<int64_t>("min_gram_length");
  int64_t hi = *attrs.Get<int64_t>("max_gram_length");
  if (lo < 1 || hi < lo) {
    return Error("the n-gram lengths must satisfy 1 <= min_gram_length <= max_gram_length, got " +
                 Str(lo) + " and " + Str(hi));
  }
  if (*attrs.Get<int64_t>("max_skip_count") < 0) return Error("max_skip_count must be >= 0");
  const auto& counts = *attrs.Get<std::vector<int64_t>>("ngram_counts");
  const auto& indexes = *attrs.Get<std::vector<int64_t>>("ngram_indexes");
  const auto& pool = *attrs.Get<std::vector<int64_t>>("pool_int64s");
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0 || counts[i] > static_cast<int64_t>(pool.size()) ||
        (i > 0 && counts[i] < counts[i - 1])) {
      return Error("ngram_counts must be ascending offsets into pool_int64s");
    }
  }
  if (indexes.empty()) return Error("ngram_indexes must not be empty");
  int64_t size = 0;
  for (int64_t v : indexes) {
    if (v < 0) return Error("ngram_indexes must be non-negative, got " + Str(v));
    size = std::max(size, v + 1);
  }
  if (const auto* w = attrs.Get<std::vector<double>>("weights"); w && w->size() != indexes.size()) {
    return Error("weights has " + Str(static_cast<int64_t>(w->size())) + " values for " +
                 Str(static_cast<int64_t>(indexes.size())) + " ngram_indexes");
  }
  if ((*x)->ndim < 0) return TensorSInfo(std::nullopt, DataType::kFloat32, std::nullopt, -1);
  if ((*x)->ndim <= 1) return TensorSInfo(std::vector<int64_t>{size}, DataType::kFloat32);
  PrimExpr rows = (*x)->shape ? (*(*x)->shape)[0] : SymVar("rows");
  return TensorSInfo(std::vector<PrimExpr>{rows, IntImm(size)}, DataType::kFloat32);
}

}  // namespace quilt::ir
