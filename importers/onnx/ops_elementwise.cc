// Converters of elementwise ops: arithmetic, comparison, logic, unary math, Cast, Clip, Where,
// and the variadic Max/Min/Sum/Mean. Their known values (shape computations) are computed by
// known_values.cc.
#include <cstring>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

template <OpKind kOp>
Expected<Outputs> Binary(NodeContext& ctx) {
  return NodeContext::Single(ctx.Emit(kOp, {ctx.Input(0), ctx.Input(1)}));
}

template <OpKind kOp>
Expected<Outputs> Unary(NodeContext& ctx) {
  return NodeContext::Single(ctx.Emit(kOp, {ctx.Input(0)}));
}

Expected<Outputs> Pow(NodeContext& ctx) {
  ir::Expr base = ctx.Input(0), exponent = ctx.Input(1);
  if (!base || !exponent) return ctx.Error("Pow needs two inputs");
  // The exponent may have another type (opset 12+); the result has the base's.
  ir::DataType bt = base->struct_info->dtype, et = exponent->struct_info->dtype;
  if (bt != et && bt != ir::DataType::kVoid && et != ir::DataType::kVoid) {
    ir::Attrs a;
    a.Set("dtype", bt);
    Expected<ir::Expr> cast = ctx.Emit(OpKind::kAstype, {exponent}, a);
    if (!cast) return cast.error();
    exponent = *cast;
  }
  return NodeContext::Single(ctx.Emit(OpKind::kPower, {base, exponent}));
}

// Max, Min, Sum, Mean: a chain of binary ops over every input.
template <OpKind kOp, bool kMean = false>
Expected<Outputs> Variadic(NodeContext& ctx) {
  if (ctx.NumInputs() == 0 || !ctx.Input(0)) return ctx.Error("needs at least one input");
  ir::Expr acc = ctx.Input(0);
  for (int i = 1; i < ctx.NumInputs(); ++i) {
    Expected<ir::Expr> e = ctx.Emit(kOp, {acc, ctx.Input(i)});
    if (!e) return e.error();
    acc = *e;
  }
  if (kMean && ctx.NumInputs() > 1) {
    Expected<ir::Expr> n = ctx.ScalarConst(acc->struct_info->dtype, ctx.NumInputs());
    if (!n) return ctx.Error(n.error().message);
    Expected<ir::Expr> e = ctx.Emit(OpKind::kDivide, {acc, *n});
    if (!e) return e.error();
    acc = *e;
  }
  if (acc == ctx.Input(0)) acc = ctx.Bind(acc);
  return Outputs{acc};
}

Expected<Outputs> Cast(NodeContext& ctx) {
  Expected<int64_t> to = ctx.Int("to");
  if (!to) return ctx.Error(to.error().message);
  if (*to < 1 || *to > ir::kLastDataType || *to == static_cast<int>(ir::DataType::kString)) {
    return ctx.Error("attribute 'to' = " + std::to_string(*to) + " is not a supported type");
  }
  Expected<int64_t> saturate = ctx.Int("saturate", 1);
  if (!saturate) return ctx.Error(saturate.error().message);
  // A cast to the type the input already has is the input itself, as an Identity (exporters
  // write them: silero-vad's STFT casts its float32 halves to float32), not a step of its own.
  ir::Expr x = ctx.Input(0);
  if (x && x->struct_info && x->struct_info->dtype == static_cast<ir::DataType>(*to)) {
    return Outputs{x};
  }
  ir::Attrs a;
  a.Set("dtype", static_cast<ir::DataType>(*to));
  a.Set("saturate", *saturate != 0);
  Expected<ir::Expr> e = ctx.Emit(OpKind::kAstype, {ctx.Input(0)}, a);
  if (!e) return e.error();
  return Outputs{*e};
}

Expected<Outputs> Mod(NodeContext& ctx) {
  Expected<int64_t> fmod = ctx.Int("fmod", 0);
  if (!fmod) return ctx.Error(fmod.error().message);
  return NodeContext::Single(
      ctx.Emit(*fmod ? OpKind::kMod : OpKind::kFloorMod, {ctx.Input(0), ctx.Input(1)}));
}

Expected<Outputs> BitShift(NodeContext& ctx) {
  Expected<std::string> dir = ctx.String("direction");
  if (!dir) return ctx.Error(dir.error().message);
  if (*dir != "LEFT" && *dir != "RIGHT") {
    return ctx.Error("attribute 'direction' must be LEFT or RIGHT, got '" + *dir + "'");
  }
  return NodeContext::Single(ctx.Emit(*dir == "LEFT" ? OpKind::kLeftShift : OpKind::kRightShift,
                                      {ctx.Input(0), ctx.Input(1)}));
}

Expected<Outputs> IsInf(NodeContext& ctx) {
  Expected<int64_t> neg = ctx.Int("detect_negative", 1);
  Expected<int64_t> pos = ctx.Int("detect_positive", 1);
  if (!neg || !pos) return ctx.Error(!neg ? neg.error().message : pos.error().message);
  ir::Attrs a;
  a.Set("detect_negative", *neg != 0);
  a.Set("detect_positive", *pos != 0);
  return NodeContext::Single(ctx.Emit(OpKind::kIsInf, {ctx.Input(0)}, a));
}

// Clip: min and max are attributes before opset 11, optional scalar inputs since. Constant
// bounds become attributes; bounds computed at run time become maximum/minimum.
Expected<Outputs> Clip(NodeContext& ctx) {
  ir::Attrs a;
  ir::Expr x = ctx.Input(0);
  if (!x) return ctx.Error("Clip needs an input");
  std::vector<std::pair<int, OpKind>> runtime;
  if (ctx.opset() < 11) {
    Expected<double> lo = ctx.Float("min", -3.402823466e38);
    Expected<double> hi = ctx.Float("max", 3.402823466e38);
    if (!lo || !hi) return ctx.Error(!lo ? lo.error().message : hi.error().message);
    a.Set("min", *lo);
    a.Set("max", *hi);
  } else {
    for (int i : {1, 2}) {
      if (!ctx.HasInput(i)) continue;
      const char* name = i == 1 ? "min" : "max";
      std::optional<std::vector<double>> f = ctx.ConstantFloats(i);
      std::optional<std::vector<int64_t>> n = ctx.KnownInts(i);
      if (f && f->size() == 1) {
        a.Set(name, (*f)[0]);
      } else if (n && n->size() == 1 && ir::IsInteger(x->struct_info->dtype)) {
        a.Set(name, static_cast<double>((*n)[0]));
      } else {
        runtime.emplace_back(i, i == 1 ? OpKind::kMaximum : OpKind::kMinimum);
      }
    }
  }
  Expected<ir::Expr> e = ctx.Emit(OpKind::kClip, {x}, a);
  if (!e) return e.error();
  for (auto [i, op] : runtime) {
    e = ctx.Emit(op, {*e, ctx.Input(i)});
    if (!e) return e.error();
  }
  return Outputs{*e};
}

Expected<Outputs> Where(NodeContext& ctx) {
  return NodeContext::Single(ctx.Emit(OpKind::kWhere, {ctx.Input(0), ctx.Input(1), ctx.Input(2)}));
}

}  // namespace

const std::vector<Converter> kElementwiseConverters = {
    {"Add", 7, Binary<OpKind::kAdd>},
    {"Sub", 7, Binary<OpKind::kSubtract>},
    {"Mul", 7, Binary<OpKind::kMultiply>},
    {"Div", 7, Binary<OpKind::kDivide>},
    {"Pow", 7, Pow},
    {"Mod", 10, Mod},
    {"BitShift", 11, BitShift},
    {"Equal", 7, Binary<OpKind::kEqual>},
    {"Less", 7, Binary<OpKind::kLess>},
    {"LessOrEqual", 12, Binary<OpKind::kLessEqual>},
    {"Greater", 7, Binary<OpKind::kGreater>},
    {"GreaterOrEqual", 12, Binary<OpKind::kGreaterEqual>},
    {"And", 7, Binary<OpKind::kLogicalAnd>},
    {"Or", 7, Binary<OpKind::kLogicalOr>},
    {"Xor", 7, Binary<OpKind::kLogicalXor>},
    {"Not", 1, Unary<OpKind::kLogicalNot>},
    {"BitwiseAnd", 18, Binary<OpKind::kBitwiseAnd>},
    {"BitwiseOr", 18, Binary<OpKind::kBitwiseOr>},
    {"BitwiseXor", 18, Binary<OpKind::kBitwiseXor>},
    {"BitwiseNot", 18, Unary<OpKind::kBitwiseNot>},
    {"Max", 8, Variadic<OpKind::kMaximum>},
    {"Min", 8, Variadic<OpKind::kMinimum>},
    {"Sum", 8, Variadic<OpKind::kAdd>},
    {"Mean", 8, Variadic<OpKind::kAdd, true>},
    {"Exp", 6, Unary<OpKind::kExp>},
    {"Log", 6, Unary<OpKind::kLog>},
    {"Sqrt", 6, Unary<OpKind::kSqrt>},
    {"Abs", 6, Unary<OpKind::kAbs>},
    {"Neg", 6, Unary<OpKind::kNegative>},
    {"Tanh", 6, Unary<OpKind::kTanh>},
    {"Sigmoid", 6, Unary<OpKind::kSigmoid>},
    {"Erf", 9, Unary<OpKind::kErf>},
    {"Sin", 7, Unary<OpKind::kSin>},
    {"Cos", 7, Unary<OpKind::kCos>},
    {"Tan", 7, Unary<OpKind::kTan>},
    {"Asin", 7, Unary<OpKind::kAsin>},
    {"Acos", 7, Unary<OpKind::kAcos>},
    {"Atan", 7, Unary<OpKind::kAtan>},
    {"Sinh", 9, Unary<OpKind::kSinh>},
    {"Cosh", 9, Unary<OpKind::kCosh>},
    {"Asinh", 9, Unary<OpKind::kAsinh>},
    {"Acosh", 9, Unary<OpKind::kAcosh>},
    {"Atanh", 9, Unary<OpKind::kAtanh>},
    {"Floor", 6, Unary<OpKind::kFloor>},
    {"Ceil", 6, Unary<OpKind::kCeil>},
    {"Round", 11, Unary<OpKind::kRound>},
    {"Sign", 9, Unary<OpKind::kSign>},
    {"Reciprocal", 6, Unary<OpKind::kReciprocal>},
    {"IsNaN", 9, Unary<OpKind::kIsNaN>},
    {"IsInf", 10, IsInf},
    {"Relu", 6, Unary<OpKind::kRelu>},
    {"Cast", 6, Cast},
    {"Clip", 6, Clip},
    {"Where", 9, Where},
};

}  // namespace quilt::importers::onnx
