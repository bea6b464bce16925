// Converters of the quantize category: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// QLinearMatMul, MatMulInteger, ConvInteger and QLinearConv. An absent zero point is a zero scalar
// of the quantized dtype (the same result); an absent QLinearConv bias is a zero int32 scalar.
#include <cmath>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

Expected<ir::Expr> Zero(NodeContext& ctx, ir::DataType dtype) {
  uint64_t zero = 0;
  return ctx.Const(dtype, {}, &zero);
}

// The ONNX `output_dtype`-style attribute as a dtype, or nullopt when absent or 0.
Expected<std::optional<ir::DataType>> DtypeAttr(NodeContext& ctx, const std::string& name) {
  Expected<int64_t> v = ctx.Int(name, 0);
  if (!v) return ctx.Error(v.error().message);
  if (*v == 0) return std::optional<ir::DataType>();
  if (*v < 1 || *v > ir::kLastDataType || *v == static_cast<int>(ir::DataType::kString)) {
    return ctx.Error("attribute '" + name + "' = " + std::to_string(*v) +
                     " is not a supported type");
  }
  return std::optional<ir::DataType>(static_cast<ir::DataType>(*v));
}

// axis (opset 13+, default 1) and block_size (opset 21+).
Status AxisAttrs(NodeContext& ctx, ir::Attrs* a) {
  Expected<int64_t> axis = ctx.Int("axis", 1);
  Expected<int64_t> block = ctx.Int("block_size", 0);
  if (!axis || !block) return ctx.Error(!axis ? axis.error().message : block.error().message);
  a->Set("axis", ctx.opset() >= 13 ? *axis : int64_t{1});
  a->Set("block_size", ctx.opset() >= 21 ? *block : int64_t{0});
  return {};
}

Expected<Outputs> QuantizeLinear(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0), scale = ctx.Input(1), zp = ctx.Input(2);
  if (!x || !scale) return ctx.Error("needs inputs x and y_scale");
  ir::Attrs a;
  if (Status s = AxisAttrs(ctx, &a); !s) return s.error();
  Expected<std::optional<ir::DataType>> out_attr = DtypeAttr(ctx, "output_dtype");
  if (!out_attr) return out_attr.error();
  ir::DataType out = ir::DataType::kUInt8;
  if (*out_attr) {
    out = **out_attr;
    if (zp && zp->struct_info->dtype != ir::DataType::kVoid && zp->struct_info->dtype != out) {
      return ctx.Error("output_dtype " + std::string(ir::DataTypeName(out)) +
                       " differs from the zero point's " +
                       std::string(ir::DataTypeName(zp->struct_info->dtype)));
    }
  } else if (zp) {
    out = zp->struct_info->dtype;
  }
  a.Set("out_dtype", out);
  Expected<int64_t> saturate = ctx.Int("saturate", 1);
  if (!saturate) return ctx.Error(saturate.error().message);
  a.Set("saturate", *saturate != 0);
  Expected<std::optional<ir::DataType>> precision = DtypeAttr(ctx, "precision");
  if (!precision) return precision.error();
  if (*precision) a.Set("precision", **precision);
  if (!zp) {
    Expected<ir::Expr> z = Zero(ctx, out);
    if (!z) return z.error();
    zp = *z;
  }
  return NodeContext::Single(ctx.Emit(OpKind::kQuantize, {x, scale, zp}, a));
}

Expected<Outputs> DequantizeLinear(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0), scale = ctx.Input(1), zp = ctx.Input(2);
  if (!x || !scale) return ctx.Error("needs inputs x and x_scale");
  ir::Attrs a;
  if (Status s = AxisAttrs(ctx, &a); !s) return s.error();
  Expected<std::optional<ir::DataType>> out_attr = DtypeAttr(ctx, "output_dtype");
  if (!out_attr) return out_attr.error();
  a.Set("out_dtype", *out_attr ? **out_attr : scale->struct_info->dtype);
  if (!zp) {
    if (x->struct_info->dtype == ir::DataType::kVoid) {
      return ctx.Error("without a zero point the data's dtype must be known");
    }
    Expected<ir::Expr> z = Zero(ctx, x->struct_info->dtype);
    if (!z) return z.error();
    zp = *z;
  }
  return NodeContext::Single(ctx.Emit(OpKind::kDequantize, {x, scale, zp}, a));
}

// Binds each field of a tuple-valued call to the node's outputs.
Expected<Outputs> SplitOutputs(NodeContext& ctx, Expected<ir::Expr> tuple, int n) {
  if (!tuple) return tuple.error();
  Outputs outs;
  for (int i = 0; i < n; ++i) {
    Expected<ir::Expr> item = ir::MakeTupleGetItem(*tuple, i);
    if (!item) return ctx.Error(item.error().message);
    outs.push_back(ctx.Bind(*item, i));
  }
  return outs;
}

Expected<Outputs> DynamicQuantizeLinear(NodeContext& ctx) {
  return SplitOutputs(ctx, ctx.Emit(OpKind::kDynamicQuantize, {ctx.Input(0)}), 3);
}

Expected<Outputs> QLinearMatMul(NodeContext& ctx) {
  std::vector<ir::Expr> args;
  for (int i = 0; i < 8; ++i) {
    if (!ctx.HasInput(i)) return ctx.Error("input " + std::to_string(i) + " is required");
    args.push_back(ctx.Input(i));
  }
  return NodeContext::Single(ctx.Emit(OpKind::kQLinearMatmul, args));
}

// strides, padding (begins then ends; auto_pad resolved) and dilation of a convolution of `x` by
// the weight `w`, and groups.
Status ConvAttrs(NodeContext& ctx, const ir::Expr& x, const ir::Expr& w, ir::Attrs* a) {
  int ndim = w->struct_info->ndim >= 0 ? w->struct_info->ndim : x->struct_info->ndim;
  if (ndim < 3) return ctx.Error("the rank of the weight must be known and >= 3");
  size_t k = static_cast<size_t>(ndim - 2);
  Expected<std::vector<int64_t>> strides = ctx.Ints("strides", std::vector<int64_t>(k, 1));
  Expected<std::vector<int64_t>> dilations = ctx.Ints("dilations", std::vector<int64_t>(k, 1));
  Expected<std::vector<int64_t>> pads = ctx.Ints("pads", std::vector<int64_t>(2 * k, 0));
  Expected<int64_t> group = ctx.Int("group", 1);
  Expected<std::string> auto_pad = ctx.String("auto_pad", "NOTSET");
  if (!strides) return ctx.Error(strides.error().message);
  if (!dilations) return ctx.Error(dilations.error().message);
  if (!pads) return ctx.Error(pads.error().message);
  if (!group) return ctx.Error(group.error().message);
  if (!auto_pad) return ctx.Error(auto_pad.error().message);
  if (strides->size() != k || dilations->size() != k || pads->size() != 2 * k) {
    return ctx.Error("strides, dilations and pads need " + std::to_string(k) + ", " +
                     std::to_string(k) + " and " + std::to_string(2 * k) + " entries");
  }
  std::vector<int64_t> kernel;
  if (ctx.Attr("kernel_shape")) {
    Expected<std::vector<int64_t>> ks = ctx.Ints("kernel_shape");
    if (!ks) return ctx.Error(ks.error().message);
    kernel = *ks;
  } else if (w->struct_info->shape) {
    for (size_t i = 0; i < k; ++i) {
      std::optional<int64_t> d = ir::AsInt((*w->struct_info->shape)[2 + i]);
      kernel.push_back(d ? *d : -1);
    }
  }
  if (*auto_pad == "VALID") {
    pads->assign(2 * k, 0);
  } else if (*auto_pad == "SAME_UPPER" || *auto_pad == "SAME_LOWER") {
    const ir::StructInfo& s = x->struct_info;
    for (size_t i = 0; i < k; ++i) {
      std::optional<int64_t> in = s->shape ? ir::AsInt((*s->shape)[2 + i]) : std::nullopt;
      if (!in || kernel.size() != k || kernel[i] < 0) {
        return ctx.Error("auto_pad " + *auto_pad + " needs static spatial and kernel dims");
      }
      int64_t st = (*strides)[i];
      int64_t out = (*in + st - 1) / st;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * st + ((kernel[i] - 1) * (*dilations)[i] + 1) - *in);
      int64_t small = total / 2, big = total - small;
      (*pads)[i] = *auto_pad == "SAME_UPPER" ? small : big;
      (*pads)[k + i] = *auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (*auto_pad != "NOTSET") {
    return ctx.Error("unknown auto_pad '" + *auto_pad + "'");
  }
  if (kernel.size() == k && w->struct_info->shape) {
    for (size_t i = 0; i < k; ++i) {
      std::optional<int64_t> d = ir::AsInt((*w->struct_info->shape)[2 + i]);
      if (d && kernel[i] != *d) {
        return ctx.Error("kernel_shape[" + std::to_string(i) + "] = " + std::to_string(kernel[i]) +
                         " but the weight has " + std::to_string(*d));
      }
    }
  }
  a->Set("strides", *strides);
  a->Set("padding", *pads);
  a->Set("dilation", *dilations);
  a->Set("groups", *group);
  return {};
}

// MatMulInteger's and ConvInteger's inputs 2 and 3, the zero points of inputs 0 and 1 (args),
// appended to args: as given, or zeros of their data's type.
Status AppendZeroPoints(NodeContext& ctx, std::vector<ir::Expr>* args) {
  for (int i : {2, 3}) {
    if (ctx.HasInput(i)) {
      args->push_back(ctx.Input(i));
      continue;
    }
    Expected<ir::Expr> z = Zero(ctx, (*args)[i - 2]->struct_info->dtype);
    if (!z) return z.error();
    args->push_back(*z);
  }
  return {};
}

Expected<Outputs> MatMulInteger(NodeContext& ctx) {
  if (!ctx.HasInput(0) || !ctx.HasInput(1)) return ctx.Error("needs inputs A and B");
  std::vector<ir::Expr> args = {ctx.Input(0), ctx.Input(1)};
  if (Status s = AppendZeroPoints(ctx, &args); !s) return s.error();
  return NodeContext::Single(ctx.Emit(OpKind::kMatmulInteger, args));
}

Expected<Outputs> ConvInteger(NodeContext& ctx) {
  ir::Expr x = ctx.Input(0), w = ctx.Input(1);
  if (!x || !w) return ctx.Error("needs inputs x and w");
  ir::Attrs a;
  if (Status s = ConvAttrs(ctx, x, w, &a); !s) return s.error();
  std::vector<ir::Expr> args = {x, w};
  if (Status s = AppendZeroPoints(ctx, &args); !s) return s.error();
  return NodeContext::Single(ctx.Emit(OpKind::kConvInteger, args, a));
}

Expected<Outputs> QLinearConv(NodeContext& ctx) {
  std::vector<ir::Expr> args;
  for (int i = 0; i < 8; ++i) {
    if (!ctx.HasInput(i)) return ctx.Error("input " + std::to_string(i) + " is required");
    args.push_back(ctx.Input(i));
  }
  if (ctx.HasInput(8)) {
    args.push_back(ctx.Input(8));
  } else {
    Expected<ir::Expr> z = Zero(ctx, ir::DataType::kInt32);
    if (!z) return z.error();
    args.push_back(*z);
  }
  ir::Attrs a;
  if (Status s = ConvAttrs(ctx, args[0], args[3], &a); !s) return s.error();
  return NodeContext::Single(ctx.Emit(OpKind::kQLinearConv, args, a));
}

}  // namespace

const std::vector<Converter> kQuantizeConverters = {
    {"QuantizeLinear", 10, QuantizeLinear},
    {"DequantizeLinear", 10, DequantizeLinear},
    {"DynamicQuantizeLinear", 11, DynamicQuantizeLinear},
    {"QLinearMatMul", 10, QLinearMatMul},
    {"MatMulInteger", 10, MatMulInteger},
    {"ConvInteger", 10, ConvInteger},
    {"QLinearConv", 10, QLinearConv},
};

}  // namespace quilt::importers::onnx
