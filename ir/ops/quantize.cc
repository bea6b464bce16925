// Struct-info rules of the ops in ir/ops/quantize.def.
#include "ir/builder.h"
#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

bool IsFloat8(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ ||
         t == DataType::kFloat8E5M2 || t == DataType::kFloat8E5M2FNUZ;
}

// Element types a tensor can be quantized to.
bool IsQuantizedType(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kInt2:
    case DataType::kUInt2:
    case DataType::kFloat4E2M1:
      return true;
    default:
      return IsFloat8(t);
  }
}

bool Known(DataType t) { return t != DataType::kVoid; }

std::string Dim(const PrimExpr& d) { return ToString(d); }

// Checks the scale (args[s]) and zero point (args[z]) against the data (args[x]).
Status CheckQuantParams(const OpInfo& op, const std::vector<Expr>& args, size_t x, size_t s,
                        size_t z, int64_t axis, int64_t block_size) {
  Expected<const StructInfoNode*> data = TensorArg(op, args, x);
  if (!data) return data.error();
  Expected<const StructInfoNode*> scale = TensorArg(op, args, s);
  if (!scale) return scale.error();
  Expected<const StructInfoNode*> zp = TensorArg(op, args, z);
  if (!zp) return zp.error();
  const StructInfoNode& d = **data;
  const StructInfoNode& sc = **scale;
  const std::string& sname = op.arg_names[s];
  if (block_size < 0) return Error("block_size must be >= 0, got " + std::to_string(block_size));
  // Zero point: a scalar, one element, or the scale's shape.
  const StructInfoNode& q = **zp;
  bool single = q.ndim == 1 && q.shape && AsInt((*q.shape)[0]) == 1;
  if (q.ndim > 0 && sc.ndim >= 0 && !single) {
    if (q.ndim != sc.ndim) {
      return Error("'" + op.arg_names[z] + "' has rank " + std::to_string(q.ndim) + ", '" + sname +
                   "' rank " + std::to_string(sc.ndim));
    }
    if (q.shape && sc.shape) {
      for (int i = 0; i < q.ndim; ++i) {
        std::optional<int64_t> a = AsInt((*q.shape)[i]), b = AsInt((*sc.shape)[i]);
        if (a && b && *a != *b) {
          return Error("'" + op.arg_names[z] + "' and '" + sname + "' differ in dimension " +
                       std::to_string(i) + ": " + std::to_string(*a) + " and " +
                       std::to_string(*b));
        }
      }
    }
  }
  if (sc.ndim < 0 || d.ndim < 0) return {};
  std::optional<int64_t> one = sc.shape && sc.ndim == 1 ? AsInt((*sc.shape)[0]) : std::nullopt;
  bool per_tensor = sc.ndim == 0 || (sc.ndim == 1 && one == 1 && block_size == 0);
  if (per_tensor) {
    if (block_size > 0) return Error("blocked quantization needs a scale of the data's rank");
    return {};
  }
  Expected<int64_t> a = NormalizeAxis(axis, d.ndim, "axis");
  if (!a) return a.error();
  if (block_size == 0) {
    if (sc.ndim != 1) {
      return Error("'" + sname + "' must be a scalar or 1-D for per-axis quantization, got rank " +
                   std::to_string(sc.ndim));
    }
    if (d.shape && sc.shape) {
      std::optional<int64_t> n = AsInt((*d.shape)[*a]), m = AsInt((*sc.shape)[0]);
      if (n && m && *n != *m) {
        return Error("'" + sname + "' has " + std::to_string(*m) + " elements for axis " +
                     std::to_string(*a) + " of size " + std::to_string(*n));
      }
    }
    return {};
  }
  if (sc.ndim != d.ndim) {
    return Error("blocked quantization needs '" + sname + "' of rank " + std::to_string(d.ndim) +
                 ", got rank " + std::to_string(sc.ndim));
  }
  if (!d.shape || !sc.shape) return {};
  for (int i = 0; i < d.ndim; ++i) {
    std::optional<int64_t> n = AsInt((*d.shape)[i]), m = AsInt((*sc.shape)[i]);
    if (!n || !m) continue;
    int64_t want = i == *a ? (*n + block_size - 1) / block_size : *n;
    if (*m != want) {
      return Error("'" + sname + "' dimension " + std::to_string(i) + " is " + std::to_string(*m) +
                   ", expected " + std::to_string(want) + " for data dimension " +
                   Dim((*d.shape)[i]) +
                   (i == *a ? " in blocks of " + std::to_string(block_size) : std::string()));
    }
  }
  return {};
}

// Output shape of a convolution of data NC[D...] with weight OI[K...].
Expected<StructInfo> ConvShape(const StructInfoNode& x, const StructInfoNode& w, const Attrs& attrs,
                               DataType dtype) {
  const auto& strides = *attrs.Get<std::vector<int64_t>>("strides");
  const auto& padding = *attrs.Get<std::vector<int64_t>>("padding");
  const auto& dilation = *attrs.Get<std::vector<int64_t>>("dilation");
  int64_t groups = *attrs.Get<int64_t>("groups");
  int ndim = x.ndim >= 0 ? x.ndim : w.ndim;
  if (ndim < 0) return TensorSInfo(std::nullopt, dtype, std::nullopt, -1);
  if (ndim < 3)
    return Error("expects data of rank >= 3 (N, C, spatial...), got rank " + std::to_string(ndim));
  if (x.ndim >= 0 && w.ndim >= 0 && x.ndim != w.ndim) {
    return Error("data has rank " + std::to_string(x.ndim) + ", weight rank " +
                 std::to_string(w.ndim));
  }
  size_t k = static_cast<size_t>(ndim - 2);
  if (strides.size() != k || dilation.size() != k || padding.size() != 2 * k) {
    return Error("strides, dilation and padding need " + std::to_string(k) + ", " +
                 std::to_string(k) + " and " + std::to_string(2 * k) + " entries");
  }
  if (groups < 1) return Error("groups must be >= 1, got " + std::to_string(groups));
  for (size_t i = 0; i < k; ++i) {
    if (strides[i] < 1 || dilation[i] < 1) return Error("strides and dilation must be >= 1");
  }
  if (!x.shape || !w.shape) return TensorSInfo(std::nullopt, dtype, std::nullopt, ndim);
  const std::vector<PrimExpr>& xs = *x.shape;
  const std::vector<PrimExpr>& ws = *w.shape;
  std::optional<int64_t> c = AsInt(xs[1]), wc = AsInt(ws[1]), m = AsInt(ws[0]);
  if (c && wc && *c != *wc * groups) {
    return Error("data has " + std::to_string(*c) + " channels, weight expects " +
                 std::to_string(*wc) + " x " + std::to_string(groups) + " groups");
  }
  if (m && *m % groups != 0) {
    return Error(std::to_string(*m) + " output channels do not split into " +
                 std::to_string(groups) + " groups");
  }
  std::vector<PrimExpr> out = {xs[0], ws[0]};
  for (size_t i = 0; i < k; ++i) {
    int64_t pad = padding[i] + padding[k + i];
    PrimExpr span = (ws[2 + i] - IntImm(1)) * IntImm(dilation[i]) + IntImm(1);
    std::optional<int64_t> ci = AsInt(xs[2 + i]), cs = AsInt(span);
    if (ci && cs && *ci + pad < *cs) {
      return Error("spatial dimension " + std::to_string(i) + " (" + std::to_string(*ci + pad) +
                   " padded) is smaller than the dilated kernel (" + std::to_string(*cs) + ")");
    }
    // (in + pad - span) // stride + 1, with the constants folded together.
    PrimExpr num = cs ? xs[2 + i] + IntImm(pad - *cs) : xs[2 + i] + IntImm(pad) - span;
    if (strides[i] == 1) {
      out.push_back(cs ? xs[2 + i] + IntImm(pad - *cs + 1) : num + IntImm(1));
    } else {
      out.push_back(MakeBinary(PrimKind::kFloorDiv, num, IntImm(strides[i])) + IntImm(1));
    }
  }
  return TensorSInfo(std::move(out), dtype);
}

// The quantized inputs of QLinearMatMul / ConvInteger / QLinearConv: integer (or float8) data
// whose zero point has its dtype.
Status CheckQuantized(const OpInfo& op, const std::vector<Expr>& args, size_t x, size_t zp) {
  Expected<const StructInfoNode*> a = TensorArg(op, args, x);
  if (!a) return a.error();
  Expected<const StructInfoNode*> z = TensorArg(op, args, zp);
  if (!z) return z.error();
  DataType t = (*a)->dtype;
  if (Known(t) && !IsQuantizedType(t)) {
    return Error("'" + op.arg_names[x] + "' must be quantized (8-bit), got " + DtypeName(t));
  }
  if (Known(t) && Known((*z)->dtype) && (*z)->dtype != t) {
    return Error("'" + op.arg_names[zp] + "' is " + DtypeName((*z)->dtype) + ", '" +
                 op.arg_names[x] + "' is " + DtypeName(t));
  }
  if ((*z)->ndim > 1) {
    return Error("'" + op.arg_names[zp] + "' must be a scalar or 1-D, got rank " +
                 std::to_string((*z)->ndim));
  }
  return {};
}

Status CheckScale(const OpInfo& op, const std::vector<Expr>& args, size_t s) {
  Expected<const StructInfoNode*> a = TensorArg(op, args, s);
  if (!a) return a.error();
  DataType t = (*a)->dtype;
  if (Known(t) && !IsFloat(t)) {
    return Error("'" + op.arg_names[s] + "' must be floating-point, got " + DtypeName(t));
  }
  if ((*a)->ndim > 1) {
    return Error("'" + op.arg_names[s] + "' must be a scalar or 1-D, got rank " +
                 std::to_string((*a)->ndim));
  }
  return {};
}

// A variable with `x`'s shape and an unknown dtype (to reuse matmul's shape rule across dtypes).
Expr Untyped(const Expr& x, const std::string& name) {
  return MakeVar(name, TensorSInfo(x->struct_info->shape, DataType::kVoid, std::nullopt,
                                   x->struct_info->ndim));
}

}  // namespace

Expected<StructInfo> InferQuantize(const OpInfo& op, const std::vector<Expr>& args,
                                   const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType out = *attrs.Get<DataType>("out_dtype");
  if (!IsQuantizedType(out)) return Error("cannot quantize to " + DtypeName(out));
  DataType t = (*x)->dtype;
  if (Known(t) && !IsFloat(t) && t != DataType::kInt32) {
    return Error("expects floating-point or int32 data, got " + DtypeName(t));
  }
  Status s = CheckQuantParams(op, args, 0, 1, 2, *attrs.Get<int64_t>("axis"),
                              *attrs.Get<int64_t>("block_size"));
  if (!s) return s.error();
  DataType st = args[1]->struct_info->dtype;
  if (Known(st) && !IsFloat(st) && st != DataType::kInt32) {
    return Error("'scale' must be floating-point or int32, got " + DtypeName(st));
  }
  DataType zt = args[2]->struct_info->dtype;
  if (Known(zt) && zt != out) {
    return Error("'zero_point' is " + DtypeName(zt) + " but out_dtype is " + DtypeName(out));
  }
  return SameShape(**x, out);
}

Expected<StructInfo> InferDequantize(const OpInfo& op, const std::vector<Expr>& args,
                                     const Attrs& attrs) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType out = *attrs.Get<DataType>("out_dtype");
  if (!IsFloat(out) || IsFloat8(out)) return Error("cannot dequantize to " + DtypeName(out));
  DataType t = (*x)->dtype;
  if (Known(t) && !IsQuantizedType(t) && t != DataType::kInt32) {
    return Error("expects quantized data, got " + DtypeName(t));
  }
  Status s = CheckQuantParams(op, args, 0, 1, 2, *attrs.Get<int64_t>("axis"),
                              *attrs.Get<int64_t>("block_size"));
  if (!s) return s.error();
  DataType st = args[1]->struct_info->dtype;
  if (Known(st) && !IsFloat(st))
    return Error("'scale' must be floating-point, got " + DtypeName(st));
  DataType zt = args[2]->struct_info->dtype;
  if (Known(zt) && Known(t) && zt != t) {
    return Error("'zero_point' is " + DtypeName(zt) + " but the data is " + DtypeName(t));
  }
  return SameShape(**x, out);
}

Expected<StructInfo> InferDynamicQuantize(const OpInfo& op, const std::vector<Expr>& args,
                                          const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  if (Known((*x)->dtype) && (*x)->dtype != DataType::kFloat32) {
    return Error("expects float32 data, got " + DtypeName((*x)->dtype));
  }
  return TupleSInfo({SameShape(**x, DataType::kUInt8),
                     TensorSInfo(std::vector<PrimExpr>{}, DataType::kFloat32),
                     TensorSInfo(std::vector<PrimExpr>{}, DataType::kUInt8)});
}

Expected<StructInfo> InferQLinearMatmul(const OpInfo& op, const std::vector<Expr>& args,
                                        const Attrs&) {
  for (auto [x, zp] : {std::pair<size_t, size_t>{0, 2}, {3, 5}, {7, 7}}) {
    Status s = CheckQuantized(op, args, x, zp);
    if (!s) return s.error();
  }
  for (size_t s : {1, 4, 6}) {
    Status st = CheckScale(op, args, s);
    if (!st) return st.error();
  }
  OpInfo mm = GetOp(OpKind::kMatmul);
  mm.arg_names = {op.arg_names[0], op.arg_names[3]};
  Attrs a;
  a.Set("out_dtype", args[7]->struct_info->dtype);
  return InferMatmul(mm, {Untyped(args[0], "a"), Untyped(args[3], "b")}, a);
}

Expected<StructInfo> InferMatmulInteger(const OpInfo& op, const std::vector<Expr>& args,
                                        const Attrs&) {
  for (auto [x, zp] : {std::pair<size_t, size_t>{0, 2}, {1, 3}}) {
    Status s = CheckQuantized(op, args, x, zp);
    if (!s) return s.error();
  }
  OpInfo mm = GetOp(OpKind::kMatmul);
  mm.arg_names = {op.arg_names[0], op.arg_names[1]};
  Attrs a;
  a.Set("out_dtype", DataType::kInt32);
  return InferMatmul(mm, {Untyped(args[0], "a"), Untyped(args[1], "b")}, a);
}

Expected<StructInfo> InferConvInteger(const OpInfo& op, const std::vector<Expr>& args,
                                      const Attrs& attrs) {
  for (auto [x, zp] : {std::pair<size_t, size_t>{0, 2}, {1, 3}}) {
    Status s = CheckQuantized(op, args, x, zp);
    if (!s) return s.error();
  }
  return ConvShape(*args[0]->struct_info, *args[1]->struct_info, attrs, DataType::kInt32);
}

Expected<StructInfo> InferQLinearConv(const OpInfo& op, const std::vector<Expr>& args,
                                      const Attrs& attrs) {
  for (auto [x, zp] : {std::pair<size_t, size_t>{0, 2}, {3, 5}, {7, 7}}) {
    Status s = CheckQuantized(op, args, x, zp);
    if (!s) return s.error();
  }
  for (size_t s : {1, 4, 6}) {
    Status st = CheckScale(op, args, s);
    if (!st) return st.error();
  }
  Expected<const StructInfoNode*> bias = TensorArg(op, args, 8);
  if (!bias) return bias.error();
  if (Known((*bias)->dtype) && (*bias)->dtype != DataType::kInt32) {
    return Error("'bias' must be int32, got " + DtypeName((*bias)->dtype));
  }
  if ((*bias)->ndim > 1)
    return Error("'bias' must be a scalar or 1-D, got rank " + std::to_string((*bias)->ndim));
  return ConvShape(*args[0]->struct_info, *args[3]->struct_info, attrs,
                   args[7]->struct_info->dtype);
}

}  // namespace quilt::ir
