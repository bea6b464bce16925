#include "targets/opencl/elementwise.h"

#include <cstdio>
#include <limits>

#include "targets/opencl/ops.h"

namespace quilt::targets::opencl {
namespace {

double FloatAttr(const ir::Attrs& attrs, std::string_view name, double fallback) {
  if (const double* d = attrs.Get<double>(name)) return *d;
  if (const int64_t* i = attrs.Get<int64_t>(name)) return static_cast<double>(*i);
  return fallback;
}

}  // namespace

std::string FloatLiteral(double v) {
  if (v != v) return "NAN";
  if (v == std::numeric_limits<double>::infinity()) return "INFINITY";
  if (v == -std::numeric_limits<double>::infinity()) return "(-INFINITY)";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9gf", static_cast<float>(v));
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s.insert(s.size() - 1, ".0");
  return "(" + s + ")";
}

std::optional<std::string> FloatExpr(std::string_view op, const ir::Attrs& attrs,
                                     const std::vector<std::string>& args) {
  if (args.size() == 2) {
    const std::string& a = args[0];
    const std::string& b = args[1];
    if (op == "add") return "(" + a + " + " + b + ")";
    if (op == "subtract") return "(" + a + " - " + b + ")";
    if (op == "multiply") return "(" + a + " * " + b + ")";
    if (op == "divide") return "(" + a + " / " + b + ")";
    if (op == "power") return "q_pow(" + a + ", " + b + ")";
    if (op == "maximum") return "q_max(" + a + ", " + b + ")";
    if (op == "minimum") return "q_min(" + a + ", " + b + ")";
    if (op == "nn.swiglu") {
      return "q_swiglu(" + a + ", " + b + ", " + FloatLiteral(FloatAttr(attrs, "alpha", 1.0)) + ")";
    }
    return std::nullopt;
  }
  if (args.size() != 1) return std::nullopt;
  const std::string& x = args[0];
  if (op == "nn.relu") return "q_relu(" + x + ")";
  if (op == "exp") return "exp(" + x + ")";
  if (op == "log") return "log(" + x + ")";
  if (op == "sqrt") return "sqrt(" + x + ")";
  if (op == "rsqrt") return "(1.0f / sqrt(" + x + "))";
  if (op == "abs") return "fabs(" + x + ")";
  if (op == "negative") return "(-" + x + ")";
  if (op == "tanh") return "tanh(" + x + ")";
  if (op == "sigmoid") return "(1.0f / (1.0f + exp(-" + x + ")))";
  if (op == "erf") return "erf(" + x + ")";
  if (op == "sin") return "sin(" + x + ")";
  if (op == "cos") return "cos(" + x + ")";
  if (op == "tan") return "tan(" + x + ")";
  if (op == "floor") return "floor(" + x + ")";
  if (op == "ceil") return "ceil(" + x + ")";
  if (op == "round") return "rint(" + x + ")";
  if (op == "reciprocal") return "(1.0f / " + x + ")";
  if (op == "sign") return "q_sign(" + x + ")";
  if (op == "nn.gelu") return "q_gelu(" + x + ")";
  if (op == "nn.hard_swish") return "q_hard_swish(" + x + ")";
  if (op == "nn.leakyrelu") {
    return "q_leaky_relu(" + x + ", " + FloatLiteral(FloatAttr(attrs, "alpha", 0.01)) + ")";
  }
  if (op == "nn.hard_sigmoid") {
    return "q_hard_sigmoid(" + x + ", " + FloatLiteral(FloatAttr(attrs, "alpha", 0.2)) + ", " +
           FloatLiteral(FloatAttr(attrs, "beta", 0.5)) + ")";
  }
  if (op == "asin") return "asin(" + x + ")";
  if (op == "acos") return "acos(" + x + ")";
  if (op == "atan") return "atan(" + x + ")";
  if (op == "sinh") return "sinh(" + x + ")";
  if (op == "cosh") return "cosh(" + x + ")";
  if (op == "asinh") return "asinh(" + x + ")";
  if (op == "acosh") return "acosh(" + x + ")";
  if (op == "atanh") return "atanh(" + x + ")";
  if (op == "nn.softsign") return "(" + x + " / (1.0f + fabs(" + x + ")))";
  if (op == "nn.gelu_tanh") return "q_gelu_tanh(" + x + ")";
  if (op == "nn.mish") return "q_mish(" + x + ")";
  if (op == "nn.silu") return "q_silu(" + x + ")";
  if (op == "nn.elu")
    return "q_elu(" + x + ", " + FloatLiteral(FloatAttr(attrs, "alpha", 1.0)) + ")";
  if (op == "nn.celu")
    return "q_celu(" + x + ", " + FloatLiteral(FloatAttr(attrs, "alpha", 1.0)) + ")";
  if (op == "nn.selu") {
    return "q_selu(" + x + ", " + FloatLiteral(FloatAttr(attrs, "alpha", 1.6732632)) + ", " +
           FloatLiteral(FloatAttr(attrs, "gamma", 1.050701)) + ")";
  }
  if (op == "nn.thresholded_relu") {
    return "q_thresholded_relu(" + x + ", " + FloatLiteral(FloatAttr(attrs, "alpha", 1.0)) + ")";
  }
  if (op == "nn.shrink") {
    return "q_shrink(" + x + ", " + FloatLiteral(FloatAttr(attrs, "bias", 0.0)) + ", " +
           FloatLiteral(FloatAttr(attrs, "lambd", 0.5)) + ")";
  }
  if (op == "nn.softplus") {
    // Without a threshold every element takes the log1p form (a threshold of +inf).
    double threshold = FloatAttr(attrs, "threshold", std::numeric_limits<double>::infinity());
    return "q_softplus(" + x + ", " + FloatLiteral(FloatAttr(attrs, "beta", 1.0)) + ", " +
           FloatLiteral(threshold) + ")";
  }
  if (op == "clip") {
    // min > max makes every element max (ONNX): min first, then max.
    double lo = FloatAttr(attrs, "min", -std::numeric_limits<double>::infinity());
    double hi = FloatAttr(attrs, "max", std::numeric_limits<double>::infinity());
    return "q_clip(" + x + ", " + FloatLiteral(lo) + ", " + FloatLiteral(hi) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> ClType(ir::DataType t) {
  switch (t) {
    case ir::DataType::kFloat32:
      return "float";
    case ir::DataType::kInt32:
      return "int";
    case ir::DataType::kInt64:
      return "long";
    case ir::DataType::kBool:
      return "uchar";
    case ir::DataType::kFloat16:
      return "ushort";  // the bits: read and written through vload_half / vstore_half_rte
    default:
      return std::nullopt;
  }
}

std::optional<std::string> TypedExpr(std::string_view op, const ir::Attrs& attrs,
                                     const std::vector<std::string>& args,
                                     const std::vector<ir::DataType>& given,
                                     ir::DataType given_out) {
  using ir::DataType;
  if (args.size() != given.size() || args.empty() || !ClType(given_out)) return std::nullopt;
  for (DataType t : given) {
    if (!ClType(t)) return std::nullopt;
  }
  // A float16 operand is a float here (read through vload_half), and a float16 result the float
  // its writer rounds (vstore_half_rte): the arithmetic of float32, as the CPU's.
  auto as_float = [](DataType t) { return t == DataType::kFloat16 ? DataType::kFloat32 : t; };
  std::vector<DataType> types;
  for (DataType t : given) types.push_back(as_float(t));
  const DataType out = as_float(given_out);
  bool same = true;
  for (DataType t : types) same &= t == types[0];
  DataType t0 = types[0];
  const std::string& a = args[0];
  if (op == "astype") {
    if (args.size() != 1) return std::nullopt;
    std::string to = *ClType(out);
    if (t0 == out) return a;
    if (out == DataType::kBool) return "(uchar)(" + a + " != 0)";
    // NaN becomes 0 as on the CPU. OpenCL's saturating conversion says so too, but NVIDIA's
    // driver gives INT64_MIN, so it is not left to the driver.
    if (t0 == DataType::kFloat32) {
      return "(" + to + ")(isnan(" + a + ") ? 0L : convert_long_sat_rtz(" + a + "))";
    }
    return "(" + to + ")(" + a + ")";
  }
  if (op == "broadcast_to") return args.size() == 1 && t0 == out ? std::optional(a) : std::nullopt;
  if (op == "where") {
    if (args.size() != 3 || t0 != DataType::kBool || types[1] != out || types[2] != out) {
      return std::nullopt;
    }
    return "(" + a + " ? " + args[1] + " : " + args[2] + ")";
  }
  if (!same) return std::nullopt;
  if (args.size() == 2) {
    const std::string& b = args[1];
    const char* cmp = op == "equal"           ? "=="
                      : op == "not_equal"     ? "!="
                      : op == "less"          ? "<"
                      : op == "less_equal"    ? "<="
                      : op == "greater"       ? ">"
                      : op == "greater_equal" ? ">="
                                              : nullptr;
    if (cmp) {
      if (out != DataType::kBool) return std::nullopt;
      return "(uchar)(" + a + " " + cmp + " " + b + ")";
    }
    if (t0 == DataType::kBool && out == DataType::kBool) {
      if (op == "logical_and") return "(uchar)(" + a + " && " + b + ")";
      if (op == "logical_or") return "(uchar)(" + a + " || " + b + ")";
      if (op == "logical_xor") return "(uchar)((" + a + " != 0) != (" + b + " != 0))";
      return std::nullopt;
    }
  }
  if (op == "isnan" || op == "isinf") {
    if (args.size() != 1 || t0 != DataType::kFloat32 || out != DataType::kBool) return std::nullopt;
    if (op == "isnan") return "(uchar)isnan(" + a + ")";
    const bool* neg_attr = attrs.Get<bool>("detect_negative");
    const bool* pos_attr = attrs.Get<bool>("detect_positive");
    bool neg = !neg_attr || *neg_attr, pos = !pos_attr || *pos_attr;
    if (neg && pos) return "(uchar)isinf(" + a + ")";
    if (!neg && !pos) return std::string("(uchar)0");
    return "(uchar)(isinf(" + a + ") && " + a + (neg ? " < " : " > ") + "0.0f)";
  }
  if (op == "logical_not") {
    if (t0 != DataType::kBool || out != DataType::kBool) return std::nullopt;
    return "(uchar)(!" + a + ")";
  }
  if (t0 != out || t0 == DataType::kBool) return std::nullopt;
  if (t0 == DataType::kFloat32) {
    if (args.size() == 2 && op == "floor_mod")
      return "q_floor_mod_float(" + a + ", " + args[1] + ")";
    if (args.size() == 2 && op == "mod") return "fmod(" + a + ", " + args[1] + ")";
    return FloatExpr(op, attrs, args);
  }
  // int32 / int64: wrapping arithmetic through the unsigned type.
  std::string t = *ClType(t0), u = "u" + t;
  if (args.size() == 1) {
    if (op == "negative") return "(" + t + ")(0 - (" + u + ")" + a + ")";
    if (op == "abs") return "(" + a + " < 0 ? (" + t + ")(0 - (" + u + ")" + a + ") : " + a + ")";
    return std::nullopt;
  }
  if (args.size() != 2) return std::nullopt;
  const std::string& b = args[1];
  if (op == "add") return "(" + t + ")((" + u + ")" + a + " + (" + u + ")" + b + ")";
  if (op == "subtract") return "(" + t + ")((" + u + ")" + a + " - (" + u + ")" + b + ")";
  if (op == "multiply") return "(" + t + ")((" + u + ")" + a + " * (" + u + ")" + b + ")";
  if (op == "divide") return "q_div_" + t + "(" + a + ", " + b + ")";
  if (op == "floor_mod") return "q_floor_mod_" + t + "(" + a + ", " + b + ")";
  if (op == "mod") return "q_mod_" + t + "(" + a + ", " + b + ")";
  if (op == "maximum") return "(" + a + " < " + b + " ? " + b + " : " + a + ")";
  if (op == "minimum") return "(" + b + " < " + a + " ? " + b + " : " + a + ")";
  return std::nullopt;
}

std::optional<Family> FamilyOf(std::string_view op) {
  if (op == "reshape" || op == "squeeze" || op == "expand_dims") return Family::kIdentity;
  if (op == "sum" || op == "mean" || op == "max" || op == "min" || op == "prod" ||
      op == "reduce_l1" || op == "reduce_l2" || op == "reduce_log_sum" ||
      op == "reduce_log_sum_exp" || op == "reduce_sum_square") {
    return Family::kReduce;
  }
  if (op == "nn.layer_norm" || op == "nn.layer_norm_stats" || op == "nn.rms_norm" ||
      op == "nn.instance_norm" || op == "nn.group_norm" || op == "nn.mean_variance_norm") {
    return Family::kNorm;
  }
  if (op == "nn.prelu") return Family::kPRelu;
  if (op == "permute_dims") return Family::kPermute;
  if (op == "concat") return Family::kConcat;
  if (op == "split") return Family::kSplit;
  if (op == "strided_slice") return Family::kSlice;
  if (op == "take") return Family::kTake;
  if (op == "gather_nd") return Family::kGatherNd;
  if (op == "nn.pad") return Family::kPad;
  if (op == "nn.attention") return Family::kAttention;
  if (op == "nn.causal_conv_with_state") return Family::kCausalConv;
  if (op == "nn.rotary_embedding") return Family::kRotary;
  if (op == "image.resize") return Family::kResize;
  if (op == "image.grid_sample") return Family::kGridSample;
  if (op == "nn.softmax" || op == "nn.log_softmax" || op == "nn.hardmax" ||
      op == "nn.lp_normalize") {
    return Family::kSoftmax;
  }
  if (op == "nn.depth_to_space" || op == "nn.space_to_depth") return Family::kSpaceDepth;
  if (op == "matmul") return Family::kMatmul;
  if (op == "nn.conv2d") return Family::kConv2d;
  if (op == "nn.conv1d" || op == "nn.conv3d") return Family::kConv;
  if (op == "nn.conv1d_transpose" || op == "nn.conv2d_transpose" || op == "nn.conv3d_transpose") {
    return Family::kConvTranspose;
  }
  if (op == "nn.max_pool2d" || op == "nn.avg_pool2d") return Family::kPool2d;
  if (op == "nn.max_pool1d" || op == "nn.max_pool3d" || op == "nn.avg_pool1d" ||
      op == "nn.avg_pool3d" || op == "nn.lp_pool1d" || op == "nn.lp_pool2d" ||
      op == "nn.lp_pool3d") {
    return Family::kPool;
  }
  if (op == "nn.adaptive_avg_pool2d") return Family::kGlobalPool;
  if (op == "nn.adaptive_avg_pool1d" || op == "nn.adaptive_avg_pool3d" ||
      op == "nn.adaptive_max_pool1d" || op == "nn.adaptive_max_pool2d" ||
      op == "nn.adaptive_max_pool3d") {
    return Family::kAdaptivePool;
  }
  if (op == "nn.batch_norm") return Family::kBatchNorm;
  if (op == "broadcast_to") return Family::kBroadcastTo;
  if (op == "full") return Family::kFull;
  if (op == "arange") return Family::kArange;
  ir::Attrs none;
  if (FloatExpr(op, none, {"a"}) || FloatExpr(op, none, {"a", "b"})) return Family::kElementwise;
  using ir::DataType;
  const DataType i64 = DataType::kInt64, b8 = DataType::kBool;
  if (TypedExpr(op, none, {"a"}, {i64}, i64) || TypedExpr(op, none, {"a", "b"}, {i64, i64}, i64) ||
      TypedExpr(op, none, {"a", "b"}, {i64, i64}, b8) ||
      TypedExpr(op, none, {"a", "b"}, {b8, b8}, b8) || TypedExpr(op, none, {"a"}, {b8}, b8) ||
      TypedExpr(op, none, {"a", "b", "c"}, {b8, i64, i64}, i64) ||
      TypedExpr(op, none, {"a"}, {i64}, DataType::kFloat32) ||
      TypedExpr(op, none, {"a"}, {DataType::kFloat32}, b8)) {
    return Family::kElementwise;
  }
  return std::nullopt;
}

InputUse InputUseOf(Family family, size_t k) {
  switch (family) {
    case Family::kSoftmax:
    case Family::kPool2d:
    case Family::kPool:
    case Family::kAdaptivePool:
    case Family::kGlobalPool:
    case Family::kReduce:
    case Family::kResize:  // roi, scales and sizes: constants, read when compiling
      return k == 0 ? InputUse::kFloat : InputUse::kUnread;
    case Family::kIdentity:
    case Family::kPermute:
    case Family::kSplit:
    case Family::kSlice:
    case Family::kBroadcastTo:
    case Family::kSpaceDepth:
      return k == 0 ? InputUse::kAny : InputUse::kUnread;
    case Family::kFull:  // the shape, then the value
      return k == 1 ? InputUse::kAny : InputUse::kUnread;
    case Family::kArange:  // start, end, step as int64 scalars
      return InputUse::kIndex;
    case Family::kTake:
    case Family::kGatherNd:
      return k == 0 ? InputUse::kAny : k == 1 ? InputUse::kIndex : InputUse::kUnread;
    case Family::kElementwise:
    case Family::kConcat:
    case Family::kPad:  // the data, then the value of constant padding
      return InputUse::kAny;
    case Family::kAttention:  // nonpad_kv_seqlen (input 6) is int64
      return k == 6 ? InputUse::kIndex : InputUse::kFloat;
    case Family::kRotary:  // position_ids (input 3) are int64
      return k == 3 ? InputUse::kIndex : InputUse::kFloat;
    case Family::kMatmul:
    case Family::kGridSample:
    case Family::kCausalConv:
    case Family::kConv2d:
    case Family::kConv:
    case Family::kConvTranspose:
    case Family::kBatchNorm:
    case Family::kPRelu:
    case Family::kNorm:
      return InputUse::kFloat;
  }
  return InputUse::kFloat;
}

bool TakesFloat16(Family family) {
  // Every family whose data is float takes it as float16 too; the others take float16 as one of
  // their types (InputUse::kAny).
  return !AnyTypeOut(family);
}

bool AnyTypeOut(Family family) {
  switch (family) {
    case Family::kElementwise:
    case Family::kIdentity:
    case Family::kPermute:
    case Family::kConcat:
    case Family::kSplit:
    case Family::kSlice:
    case Family::kTake:
    case Family::kGatherNd:
    case Family::kBroadcastTo:
    case Family::kFull:
    case Family::kArange:
    case Family::kSpaceDepth:
    case Family::kPad:
      return true;
    case Family::kSoftmax:
    case Family::kMatmul:
    case Family::kConv2d:
    case Family::kConv:
    case Family::kConvTranspose:
    case Family::kPool2d:
    case Family::kPool:
    case Family::kAdaptivePool:
    case Family::kGlobalPool:
    case Family::kBatchNorm:
    case Family::kPRelu:
    case Family::kReduce:
    case Family::kNorm:
    case Family::kAttention:
    case Family::kResize:
    case Family::kGridSample:
    case Family::kCausalConv:
    case Family::kRotary:
      return false;
  }
  return false;
}

}  // namespace quilt::targets::opencl
