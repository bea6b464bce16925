// Converters of the recurrent category: RNN, GRU and LSTM (opset 7 on; layout from opset 14),
// com.microsoft DynamicQuantizeLSTM (what onnxruntime.quantization makes of an LSTM), and
// DeformConv (opset 19 on).
//
// The IR call takes every ONNX input (an absent one as an empty tensor) and returns a tuple of
// all outputs; the node's outputs are items of it. Activation names are normalized to their
// canonical spelling and given one alpha and one beta each, so the call holds everything needed
// to compute the op.
#include <algorithm>
#include <cctype>

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {
namespace {

using ir::OpKind;

struct ActivationSpec {
  const char* name;
  bool has_alpha, has_beta;
  double alpha, beta;  // ONNX defaults
};

// The activation functions of the recurrent ops, with their parameters and defaults.
constexpr ActivationSpec kActivations[] = {
    {"Relu", false, false, 0, 0},         {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},      {"Affine", true, true, 1.0, 0.0},
    {"LeakyRelu", true, false, 0.01, 0},  {"ThresholdedRelu", true, false, 1.0, 0},
    {"ScaledTanh", true, true, 1.0, 1.0}, {"HardSigmoid", true, true, 0.2, 0.5},
    {"Elu", true, false, 1.0, 0},         {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Reads direction, hidden_size, activations (with alpha/beta), clip and layout into `a`.
// `defaults` are one direction's activations.
Status CommonAttrs(NodeContext& ctx, const std::vector<std::string>& defaults, ir::Attrs* a) {
  Expected<std::string> direction = ctx.String("direction", "forward");
  if (!direction) return direction.error();
  if (*direction != "forward" && *direction != "reverse" && *direction != "bidirectional") {
    return Error("direction must be forward, reverse or bidirectional, got '" + *direction + "'");
  }
  const size_t num_dir = *direction == "bidirectional" ? 2 : 1;
  a->Set("direction", *direction);
  if (ctx.Attr("hidden_size")) {
    Expected<int64_t> h = ctx.Int("hidden_size");
    if (!h) return h.error();
    if (*h <= 0) return Error("hidden_size must be positive, got " + std::to_string(*h));
    a->Set("hidden_size", *h);
  }

  std::vector<std::string> names;
  if (const ::onnx::AttributeProto* attr = ctx.Attr("activations")) {
    if (attr->type() != ::onnx::AttributeProto::STRINGS) {
      return Error("attribute 'activations' must be a list of strings");
    }
    names.assign(attr->strings().begin(), attr->strings().end());
  }
  if (names.empty()) {
    for (size_t d = 0; d < num_dir; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (num_dir == 2 && names.size() == defaults.size()) {
    // One direction's worth for a bidirectional op: both directions use them.
    std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != defaults.size() * num_dir) {
    return Error("activations has " + std::to_string(names.size()) + " names, expected " +
                 std::to_string(defaults.size() * num_dir) + " for direction " + *direction);
  }
  Expected<std::vector<double>> alphas = ctx.Floats("activation_alpha", std::vector<double>{});
  Expected<std::vector<double>> betas = ctx.Floats("activation_beta", std::vector<double>{});
  if (!alphas) return alphas.error();
  if (!betas) return betas.error();
  // Alphas and betas are consumed in order by the activations that take them.
  size_t next_alpha = 0, next_beta = 0;
  std::vector<std::string> canonical;
  std::vector<double> alpha, beta;
  for (const std::string& n : names) {
    const ActivationSpec* spec = nullptr;
    for (const ActivationSpec& s : kActivations) {
      if (Lower(s.name) == Lower(n)) spec = &s;
    }
    if (!spec) return Error("unsupported activation '" + n + "'");
    canonical.push_back(spec->name);
    double al = 0, be = 0;
    if (spec->has_alpha) al = next_alpha < alphas->size() ? (*alphas)[next_alpha++] : spec->alpha;
    if (spec->has_beta) be = next_beta < betas->size() ? (*betas)[next_beta++] : spec->beta;
    alpha.push_back(al);
    beta.push_back(be);
  }
  a->Set("activations", canonical);
  a->Set("activation_alpha", alpha);
  a->Set("activation_beta", beta);
  if (ctx.Attr("clip")) {
    Expected<double> clip = ctx.Float("clip");
    if (!clip) return clip.error();
    if (!(*clip > 0)) return Error("clip must be positive, got " + std::to_string(*clip));
    a->Set("clip", *clip);
  }
  return {};
}

Status Layout(NodeContext& ctx, ir::Attrs* a) {
  // The attribute exists from opset 14.
  Expected<int64_t> layout = ctx.opset() >= 14 ? ctx.Int("layout", 0) : Expected<int64_t>(0);
  if (!layout) return layout.error();
  if (*layout != 0 && *layout != 1) {
    return Error("layout must be 0 or 1, got " + std::to_string(*layout));
  }
  a->Set("layout", *layout);
  return {};
}

// Emits `op` over the node's inputs (absent ones empty) and returns its outputs as tuple items.
Expected<Outputs> EmitRecurrent(NodeContext& ctx, OpKind op, int num_inputs, ir::Attrs attrs) {
  if (!ctx.HasInput(0) || !ctx.HasInput(1) || !ctx.HasInput(2)) {
    return ctx.Error("needs inputs X, W and R");
  }
  ir::DataType dtype = ctx.InputSInfo(0)->dtype;
  if (dtype == ir::DataType::kVoid) dtype = ir::DataType::kFloat32;
  std::vector<ir::Expr> args;
  for (int i = 0; i < num_inputs; ++i) {
    // sequence_lens (input 4) is int32; every other input has X's dtype.
    Expected<ir::Expr> e = ctx.InputOrEmpty(i, i == 4 ? ir::DataType::kInt32 : dtype);
    if (!e) return ctx.Error(e.error().message);
    args.push_back(*e);
  }
  int num_outputs = op == OpKind::kRnn || op == OpKind::kGru ? 2 : 3;
  if (ctx.NumOutputs() > num_outputs) {
    return ctx.Error("has " + std::to_string(ctx.NumOutputs()) + " outputs, at most " +
                     std::to_string(num_outputs) + " allowed");
  }
  Expected<ir::Expr> call = ctx.Emit(op, std::move(args), std::move(attrs));
  if (!call) return ctx.Error(call.error().message);
  Outputs outs(static_cast<size_t>(ctx.NumOutputs()));
  for (int i = 0; i < ctx.NumOutputs(); ++i) {
    if (!ctx.HasOutput(i)) continue;
    Expected<ir::Expr> item = ir::MakeTupleGetItem(*call, i);
    if (!item) return ctx.Error(item.error().message);
    outs[static_cast<size_t>(i)] = ctx.Bind(*item, i);
  }
  return outs;
}

Expected<Outputs> Rnn(NodeContext& ctx) {
  ir::Attrs a;
  if (Status s = CommonAttrs(ctx, {"Tanh"}, &a); !s) return ctx.Error(s.error().message);
  if (Status s = Layout(ctx, &a); !s) return ctx.Error(s.error().message);
  return EmitRecurrent(ctx, OpKind::kRnn, 6, std::move(a));
}

Expected<Outputs> Gru(NodeContext& ctx) {
  ir::Attrs a;
  if (Status s = CommonAttrs(ctx, {"Sigmoid", "Tanh"}, &a); !s) {
    return ctx.Error(s.error().message);
  }
  Expected<int64_t> lbr = ctx.Int("linear_before_reset", 0);
  if (!lbr) return ctx.Error(lbr.error().message);
  a.Set("linear_before_reset", *lbr != 0);
  if (Status s = Layout(ctx, &a); !s) return ctx.Error(s.error().message);
  return EmitRecurrent(ctx, OpKind::kGru, 6, std::move(a));
}

// LSTM's attributes but layout: activations, clip, hidden_size, direction, input_forget.
Status LstmAttrs(NodeContext& ctx, ir::Attrs* a) {
  if (Status s = CommonAttrs(ctx, {"Sigmoid", "Tanh", "Tanh"}, a); !s) return s;
  Expected<int64_t> input_forget = ctx.Int("input_forget", 0);
  if (!input_forget) return input_forget.error();
  a->Set("input_forget", *input_forget != 0);
  return {};
}

Expected<Outputs> Lstm(NodeContext& ctx) {
  ir::Attrs a;
  if (Status s = LstmAttrs(ctx, &a); !s) return ctx.Error(s.error().message);
  if (Status s = Layout(ctx, &a); !s) return ctx.Error(s.error().message);
  return EmitRecurrent(ctx, OpKind::kLstm, 8, std::move(a));
}

// com.microsoft DynamicQuantizeLSTM (its opset 1): LSTM's inputs and attributes (no layout) with
// quantized W and R and their scales and zero points as inputs 8 to 11, all four required.
Expected<Outputs> DynamicQuantizeLstm(NodeContext& ctx) {
  ir::Attrs a;
  if (Status s = LstmAttrs(ctx, &a); !s) return ctx.Error(s.error().message);
  static constexpr const char* kQuantInputs[] = {"W_scale", "W_zero_point", "R_scale",
                                                 "R_zero_point"};
  for (int i = 8; i < 12; ++i) {
    if (!ctx.HasInput(i)) {
      return ctx.Error(std::string("input ") + std::to_string(i) + " ('" + kQuantInputs[i - 8] +
                       "') is required");
    }
  }
  return EmitRecurrent(ctx, OpKind::kDynamicQuantizeLstm, 12, std::move(a));
}

// DeformConv (opset 19 on): every attribute filled in (kernel_shape from W when left out).
Expected<Outputs> DeformConv(NodeContext& ctx) {
  if (!ctx.HasInput(0) || !ctx.HasInput(1) || !ctx.HasInput(2)) {
    return ctx.Error("needs inputs X, W and offset");
  }
  // The spatial rank: from kernel_shape, else from W's or X's rank.
  std::vector<int64_t> kernel;
  if (ctx.Attr("kernel_shape")) {
    Expected<std::vector<int64_t>> k = ctx.Ints("kernel_shape");
    if (!k) return ctx.Error(k.error().message);
    kernel = *k;
  } else {
    const ir::StructInfo& w = ctx.InputSInfo(1);
    std::optional<std::vector<int64_t>> shape = w->StaticShape();
    if (!shape || shape->size() < 3) {
      return ctx.Error("kernel_shape is left out and W's spatial dims are not known");
    }
    kernel.assign(shape->begin() + 2, shape->end());
  }
  const size_t n = kernel.size();
  Expected<std::vector<int64_t>> strides = ctx.Ints("strides", std::vector<int64_t>(n, 1));
  Expected<std::vector<int64_t>> dilations = ctx.Ints("dilations", std::vector<int64_t>(n, 1));
  Expected<std::vector<int64_t>> pads = ctx.Ints("pads", std::vector<int64_t>(2 * n, 0));
  Expected<int64_t> group = ctx.Int("group", 1);
  Expected<int64_t> offset_group = ctx.Int("offset_group", 1);
  if (!strides) return ctx.Error(strides.error().message);
  if (!dilations) return ctx.Error(dilations.error().message);
  if (!pads) return ctx.Error(pads.error().message);
  if (!group) return ctx.Error(group.error().message);
  if (!offset_group) return ctx.Error(offset_group.error().message);
  ir::Attrs a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", *strides);
  a.Set("pads", *pads);
  a.Set("dilations", *dilations);
  a.Set("group", *group);
  a.Set("offset_group", *offset_group);
  ir::DataType dtype = ctx.InputSInfo(0)->dtype;
  if (dtype == ir::DataType::kVoid) dtype = ir::DataType::kFloat32;
  Expected<ir::Expr> b = ctx.InputOrEmpty(3, dtype);
  Expected<ir::Expr> mask = ctx.InputOrEmpty(4, dtype);
  if (!b) return ctx.Error(b.error().message);
  if (!mask) return ctx.Error(mask.error().message);
  return NodeContext::Single(ctx.Emit(
      OpKind::kDeformConv, {ctx.Input(0), ctx.Input(1), ctx.Input(2), *b, *mask}, std::move(a)));
}

}  // namespace

const std::vector<Converter> kRecurrentConverters = {
    {"RNN", 7, Rnn},
    {"GRU", 7, Gru},
    {"LSTM", 7, Lstm},
    {"DeformConv", 19, DeformConv},
    {"DynamicQuantizeLSTM", 1, DynamicQuantizeLstm, "com.microsoft"},
};

}  // namespace quilt::importers::onnx
