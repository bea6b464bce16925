// Converters of the signal category: DFT (opset 17: axis attribute; opset 20: axis input), STFT,
// HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
//
// Integer inputs (lengths, sizes, axis) whose values the importer knows become constants so that
// the shape rules can read them; unknown ones stay as they are (the output shape is then unknown,
// its rank known).
#include "importers/onnx/converter.h"
#include "importers/onnx/tensor.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

// Input i, as a constant when its integer values are known; an empty constant of `dtype` when
// the model leaves it out.
Expected<ir::Expr> IntInput(NodeContext& ctx, int i, ir::DataType dtype = ir::DataType::kInt64) {
  if (!ctx.HasInput(i)) return ctx.Const(dtype, {0}, nullptr);
  ir::Expr in = ctx.Input(i);
  if (ctx.ConstantInput(i)) return in;
  const ir::StructInfo& s = in->struct_info;
  std::optional<std::vector<int64_t>> k = ctx.KnownInts(i);
  if (!k || !s->IsTensor() || s->ndim < 0 || s->ndim > 1) return in;
  std::vector<int64_t> shape;
  if (s->ndim == 1) shape.push_back(static_cast<int64_t>(k->size()));
  if (s->dtype == ir::DataType::kInt32) {
    std::vector<int32_t> v(k->begin(), k->end());
    return ctx.Const(ir::DataType::kInt32, shape, v.data());
  }
  return ctx.Const(ir::DataType::kInt64, shape, k->data());
}

Expected<Outputs> Dft(NodeContext& ctx) {
  Expected<int64_t> inverse = ctx.Int("inverse", 0);
  Expected<int64_t> onesided = ctx.Int("onesided", 0);
  if (!inverse) return ctx.Error(inverse.error().message);
  if (!onesided) return ctx.Error(onesided.error().message);
  if ((*inverse != 0 && *inverse != 1) || (*onesided != 0 && *onesided != 1)) {
    return ctx.Error("inverse and onesided must be 0 or 1");
  }
  Expected<ir::Expr> length = IntInput(ctx, 1);
  if (!length) return ctx.Error(length.error().message);
  Expected<ir::Expr> axis = ir::Expr();
  if (ctx.opset() < 20) {
    // DFT-17: the axis is an attribute, default 1.
    Expected<int64_t> a = ctx.Int("axis", 1);
    if (!a) return ctx.Error(a.error().message);
    axis = ctx.ScalarConst(ir::DataType::kInt64, static_cast<double>(*a));
  } else if (ctx.HasInput(2)) {
    axis = IntInput(ctx, 2);
  } else {
    axis = ctx.ScalarConst(ir::DataType::kInt64, -2);
  }
  if (!axis) return ctx.Error(axis.error().message);
  ir::Attrs a;
  a.Set("inverse", *inverse != 0);
  a.Set("onesided", *onesided != 0);
  return NodeContext::Single(ctx.Emit(OpKind::kDft, {ctx.Input(0), *length, *axis}, a));
}

Expected<Outputs> Stft(NodeContext& ctx) {
  Expected<int64_t> onesided = ctx.Int("onesided", 1);
  if (!onesided) return ctx.Error(onesided.error().message);
  if (*onesided != 0 && *onesided != 1) return ctx.Error("onesided must be 0 or 1");
  if (!ctx.HasInput(1)) return ctx.Error("needs input frame_step");
  Expected<ir::Expr> step = IntInput(ctx, 1);
  Expected<ir::Expr> length = IntInput(ctx, 3);
  ir::DataType dtype = ctx.InputSInfo(0)->dtype;
  Expected<ir::Expr> window =
      ctx.HasInput(2)
          ? Expected<ir::Expr>(ctx.Input(2))
          : ctx.Const(dtype == ir::DataType::kVoid ? ir::DataType::kFloat32 : dtype, {0}, nullptr);
  if (!step) return ctx.Error(step.error().message);
  if (!length) return ctx.Error(length.error().message);
  if (!window) return ctx.Error(window.error().message);
  ir::Attrs a;
  a.Set("onesided", *onesided != 0);
  return NodeContext::Single(ctx.Emit(OpKind::kStft, {ctx.Input(0), *step, *window, *length}, a));
}

// output_datatype (an ONNX TensorProto type number, default FLOAT) as an IR dtype.
Expected<ir::DataType> OutputDatatype(NodeContext& ctx) {
  Expected<int64_t> t = ctx.Int("output_datatype", ::onnx::TensorProto::FLOAT);
  if (!t) return t.error();
  std::optional<ir::DataType> d = ElemType(static_cast<int32_t>(*t));
  if (!d || (!ir::IsFloat(*d) && !ir::IsInteger(*d))) {
    return Error("output_datatype " + std::to_string(*t) + " is not a numeric ONNX type");
  }
  return *d;
}

template <OpKind kOp>
Expected<Outputs> Window(NodeContext& ctx) {
  Expected<int64_t> periodic = ctx.Int("periodic", 1);
  if (!periodic) return ctx.Error(periodic.error().message);
  if (*periodic != 0 && *periodic != 1) return ctx.Error("periodic must be 0 or 1");
  Expected<ir::DataType> dtype = OutputDatatype(ctx);
  if (!dtype) return ctx.Error(dtype.error().message);
  Expected<ir::Expr> size = IntInput(ctx, 0);
  if (!size) return ctx.Error(size.error().message);
  ir::Attrs a;
  a.Set("periodic", *periodic != 0);
  a.Set("output_datatype", *dtype);
  return NodeContext::Single(ctx.Emit(kOp, {*size}, a));
}

Expected<Outputs> MelWeightMatrix(NodeContext& ctx) {
  Expected<ir::DataType> dtype = OutputDatatype(ctx);
  if (!dtype) return ctx.Error(dtype.error().message);
  std::vector<ir::Expr> args;
  for (int i = 0; i < 5; ++i) {
    if (!ctx.HasInput(i)) return ctx.Error("needs 5 inputs");
    Expected<ir::Expr> e = i < 3 ? IntInput(ctx, i) : Expected<ir::Expr>(ctx.Input(i));
    if (!e) return ctx.Error(e.error().message);
    args.push_back(*e);
  }
  ir::Attrs a;
  a.Set("output_datatype", *dtype);
  return NodeContext::Single(ctx.Emit(OpKind::kMelWeightMatrix, std::move(args), a));
}

}  // namespace

const std::vector<Converter> kSignalConverters = {
    {"DFT", 17, Dft},
    {"STFT", 17, Stft},
    {"HannWindow", 17, Window<OpKind::kHannWindow>},
    {"HammingWindow", 17, Window<OpKind::kHammingWindow>},
    {"BlackmanWindow", 17, Window<OpKind::kBlackmanWindow>},
    {"MelWeightMatrix", 17, MelWeightMatrix},
};

}  // namespace quilt::importers::onnx
