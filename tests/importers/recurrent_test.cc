// Converters of the recurrent category: each test builds a tiny ONNX graph and expects IR text.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::OnnxGraph;
using quilt::testing::SetFloat;
using quilt::testing::SetFloats;
using quilt::testing::SetInt;
using quilt::testing::SetString;

void SetStrings(::onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const std::string& s : v) a->add_strings(s);
}

// The struct info of the model's result, described ("R.Tensor((2, 3), "float32")").
std::string Result(const OnnxGraph& g) {
  Expected<ir::IRModule> mod = g.Import();
  EXPECT_TRUE(mod) << mod.error().ToString();
  if (!mod) return "";
  return ir::Describe(mod->Lookup("main")->body->body->struct_info);
}

// The attributes of the model's first call, printed as in IR text.
std::string FirstCall(const OnnxGraph& g) {
  Expected<ir::IRModule> mod = g.Import();
  EXPECT_TRUE(mod) << mod.error().ToString();
  if (!mod) return "";
  std::string text = ir::PrintModule(*mod);
  size_t at = text.find("R.nn.");
  return at == std::string::npos ? text : text.substr(at, text.find('\n', at) - at);
}

TEST(RecurrentImport, LstmBidirectionalWithEveryInputAndOutput) {
  // seq 5, batch 2, input 4, hidden 3, two directions.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {5, 2, 4})
      .Input("w", TensorProto::FLOAT, {2, 12, 4})
      .Input("r", TensorProto::FLOAT, {2, 12, 3})
      .Input("b", TensorProto::FLOAT, {2, 24})
      .Input("lens", TensorProto::INT32, {2})
      .Input("h0", TensorProto::FLOAT, {2, 2, 3})
      .Input("c0", TensorProto::FLOAT, {2, 2, 3})
      .Input("p", TensorProto::FLOAT, {2, 9});
  auto& n = g.Node("LSTM", {"x", "w", "r", "b", "lens", "h0", "c0", "p"}, {"y", "y_h", "y_c"});
  SetString(n, "direction", "bidirectional");
  SetInt(n, "hidden_size", 3);
  g.Output("y", TensorProto::FLOAT)
      .Output("y_h", TensorProto::FLOAT)
      .Output("y_c", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 2, 4), "float32"), w: R.Tensor((2, 12, 4), "float32"), r: R.Tensor((2, 12, 3), "float32"), b: R.Tensor((2, 24), "float32"), lens: R.Tensor((2,), "int32"), h0: R.Tensor((2, 2, 3), "float32"), c0: R.Tensor((2, 2, 3), "float32"), p: R.Tensor((2, 9), "float32")) -> R.Tuple(R.Tensor((5, 2, 2, 3), "float32"), R.Tensor((2, 2, 3), "float32"), R.Tensor((2, 2, 3), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["y", "y_h", "y_c"]})
        y = R.nn.lstm(x, w, r, b, lens, h0, c0, p, ["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], direction="bidirectional", hidden_size=3)
        y_1 = y[0]
        y_h = y[1]
        y_c = y[2]
        outputs = (y_1, y_h, y_c)
        return outputs
)");
}

TEST(RecurrentImport, LstmAbsentInputsAreEmptyAndOnlyYhIsBound) {
  OnnxGraph g(7);
  g.Input("x", TensorProto::FLOAT, {1, 3, 2})
      .Input("w", TensorProto::FLOAT, {1, 12, 2})
      .Input("r", TensorProto::FLOAT, {1, 12, 3});
  auto& n = g.Node("LSTM", {"x", "w", "r"}, {"", "y_h"});
  SetInt(n, "hidden_size", 3);
  g.Output("y_h", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 2), "float32"), w: R.Tensor((1, 12, 2), "float32"), r: R.Tensor((1, 12, 3), "float32")) -> R.Tensor((1, 3, 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y_h"]})
        LSTM = R.nn.lstm(x, w, r, R.const([], "float32"), R.const([], "int32"), R.const([], "float32"), R.const([], "float32"), R.const([], "float32"), ["Sigmoid", "Tanh", "Tanh"], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], hidden_size=3)
        y_h = LSTM[1]
        return y_h
)");
}

TEST(RecurrentImport, LstmBatchFirstLayout) {
  // layout 1: x [batch 3, seq 4, input 2]; Y [batch, seq, dirs, hidden]; Y_h [batch, dirs, hidden].
  OnnxGraph g(14);
  g.Input("x", TensorProto::FLOAT, {3, 4, 2})
      .Input("w", TensorProto::FLOAT, {1, 28, 2})
      .Input("r", TensorProto::FLOAT, {1, 28, 7})
      .Input("h0", TensorProto::FLOAT, {3, 1, 7});
  auto& n = g.Node("LSTM", {"x", "w", "r", "", "", "h0"}, {"y", "y_h", "y_c"});
  SetInt(n, "hidden_size", 7);
  SetInt(n, "layout", 1);
  g.Output("y", TensorProto::FLOAT)
      .Output("y_h", TensorProto::FLOAT)
      .Output("y_c", TensorProto::FLOAT);
  EXPECT_EQ(Result(g),
            "R.Tuple(R.Tensor((3, 4, 1, 7), \"float32\"), R.Tensor((3, 1, 7), \"float32\"), "
            "R.Tensor((3, 1, 7), \"float32\"))");
}

TEST(RecurrentImport, ActivationAlphasAndBetasAreConsumedInOrder) {
  // HardSigmoid takes alpha and beta, Tanh neither, Affine both (its beta defaults to 0).
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 1, 2})
      .Input("w", TensorProto::FLOAT, {1, 4, 2})
      .Input("r", TensorProto::FLOAT, {1, 4, 1});
  auto& n = g.Node("LSTM", {"x", "w", "r"}, {"y"});
  SetStrings(n, "activations", {"hardsigmoid", "Tanh", "AFFINE"});
  SetFloats(n, "activation_alpha", {0.25f, 2.0f});
  SetFloats(n, "activation_beta", {0.75f});
  SetFloat(n, "clip", 1.5f);
  SetInt(n, "input_forget", 1);
  g.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(FirstCall(g),
            "R.nn.lstm(x, w, r, R.const([], \"float32\"), R.const([], \"int32\"), R.const([], "
            "\"float32\"), R.const([], \"float32\"), R.const([], \"float32\"), "
            "[\"HardSigmoid\", \"Tanh\", \"Affine\"], [0.25, 0.0, 2.0], [0.75, 0.0, 0.0], "
            "clip=1.5, input_forget=True)");
  // Hidden size from R when the attribute is left out.
  EXPECT_EQ(Result(g), "R.Tensor((1, 1, 1, 1), \"float32\")");
}

TEST(RecurrentImport, GruBatchFirstSymbolicBatchHiddenFromR) {
  OnnxGraph g(14);
  g.Input("x", TensorProto::FLOAT, {"n", 7, 3})
      .Input("w", TensorProto::FLOAT, {1, 15, 3})
      .Input("r", TensorProto::FLOAT, {1, 15, 5});
  auto& n = g.Node("GRU", {"x", "w", "r"}, {"", "y_h"});
  SetInt(n, "layout", 1);
  SetInt(n, "linear_before_reset", 1);
  g.Output("y_h", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tensor((n, 1, 5), \"float32\")");
  EXPECT_EQ(FirstCall(g),
            "R.nn.gru(x, w, r, R.const([], \"float32\"), R.const([], \"int32\"), R.const([], "
            "\"float32\"), [\"Sigmoid\", \"Tanh\"], [0.0, 0.0], [0.0, 0.0], "
            "linear_before_reset=True, layout=1)");
}

TEST(RecurrentImport, GruReverseWithBiasAndSequenceLengths) {
  OnnxGraph g(22);
  g.Input("x", TensorProto::FLOAT, {2, 3, 3})
      .Input("w", TensorProto::FLOAT, {1, 15, 3})
      .Input("r", TensorProto::FLOAT, {1, 15, 5})
      .Input("b", TensorProto::FLOAT, {1, 30})
      .Input("lens", TensorProto::INT32, {3});
  auto& n = g.Node("GRU", {"x", "w", "r", "b", "lens"}, {"y", "y_h"});
  SetString(n, "direction", "reverse");
  SetInt(n, "hidden_size", 5);
  g.Output("y", TensorProto::FLOAT).Output("y_h", TensorProto::FLOAT);
  EXPECT_EQ(Result(g),
            "R.Tuple(R.Tensor((2, 1, 3, 5), \"float32\"), R.Tensor((1, 3, 5), \"float32\"))");
}

TEST(RecurrentImport, RnnBidirectionalRepeatsOneDirectionsActivations) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::DOUBLE, {"t", 1, 2})
      .Input("w", TensorProto::DOUBLE, {2, 4, 2})
      .Input("r", TensorProto::DOUBLE, {2, 4, 4});
  auto& n = g.Node("RNN", {"x", "w", "r"}, {"y"});
  SetString(n, "direction", "bidirectional");
  SetInt(n, "hidden_size", 4);
  SetStrings(n, "activations", {"LeakyRelu"});
  SetFloats(n, "activation_alpha", {0.5f});
  g.Output("y", TensorProto::DOUBLE);
  EXPECT_EQ(Result(g), "R.Tensor((t, 2, 1, 4), \"float64\")");
  EXPECT_EQ(FirstCall(g),
            "R.nn.rnn(x, w, r, R.const([], \"float64\"), R.const([], \"int32\"), R.const([], "
            "\"float64\"), [\"LeakyRelu\", \"LeakyRelu\"], [0.5, 0.01], [0.0, 0.0], "
            "direction=\"bidirectional\", hidden_size=4)");
}

TEST(RecurrentImport, RnnHiddenSizeFromWWhenRIsUnshaped) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {4, 2, 3})
      .Input("w", TensorProto::FLOAT, {1, 6, 3})
      .Input("r", TensorProto::FLOAT, {1, 6, 6});
  // R as a graph input with no shape: hidden size unknown.
  g.graph()->mutable_input(2)->mutable_type()->mutable_tensor_type()->clear_shape();
  g.Node("RNN", {"x", "w", "r"}, {"y", "y_h"});
  g.Output("y", TensorProto::FLOAT).Output("y_h", TensorProto::FLOAT);
  EXPECT_EQ(Result(g),
            "R.Tuple(R.Tensor((4, 1, 2, 6), \"float32\"), R.Tensor((1, 2, 6), "
            "\"float32\"))");
}

TEST(RecurrentImport, RnnUnknownShapesKeepRanks) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {4, 2, 3})
      .Input("w", TensorProto::FLOAT, {1, 6, 3})
      .Input("r", TensorProto::FLOAT, {1, 6, 6});
  g.graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  g.Node("RNN", {"x", "w", "r"}, {"y", "y_h"});
  g.Output("y", TensorProto::FLOAT).Output("y_h", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tuple(R.Tensor(ndim=4, \"float32\"), R.Tensor(ndim=3, \"float32\"))");
}

TEST(RecurrentImport, WrongNumberOfDirectionsIsAnError) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 3, 2})
      .Input("w", TensorProto::FLOAT, {3, 12, 2})
      .Input("r", TensorProto::FLOAT, {3, 12, 3});
  auto& n = g.Node("LSTM", {"x", "w", "r"}, {"y"});
  SetInt(n, "hidden_size", 3);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"W has 3 directions but direction is forward"});
}

TEST(RecurrentImport, HiddenSizeDisagreeingWithRIsAnError) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 3, 2})
      .Input("w", TensorProto::FLOAT, {1, 9, 2})
      .Input("r", TensorProto::FLOAT, {1, 9, 3});
  auto& n = g.Node("GRU", {"x", "w", "r"}, {"y"});
  SetInt(n, "hidden_size", 4);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"R's dim 2 (hidden_size) is 3, expected 4"});
}

TEST(RecurrentImport, BadInitialStateAndBiasAreErrors) {
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 3, 2})
        .Input("w", TensorProto::FLOAT, {1, 3, 2})
        .Input("r", TensorProto::FLOAT, {1, 3, 3})
        .Input("h0", TensorProto::FLOAT, {1, 2, 3});
    g.Node("RNN", {"x", "w", "r", "", "", "h0"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"initial_h's dim 1 (batch_size) is 2, expected 3"});
  }
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 3, 2})
        .Input("w", TensorProto::FLOAT, {1, 12, 2})
        .Input("r", TensorProto::FLOAT, {1, 12, 3})
        .Input("b", TensorProto::FLOAT, {1, 12});
    g.Node("LSTM", {"x", "w", "r", "b"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"B's dim 1 (8 * hidden_size) is 12, expected 24"});
  }
}

TEST(RecurrentImport, BadAttributesAreErrors) {
  auto graph = [](const std::string& attr, const std::string& value) {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 3, 2})
        .Input("w", TensorProto::FLOAT, {1, 3, 2})
        .Input("r", TensorProto::FLOAT, {1, 3, 3});
    auto& n = g.Node("RNN", {"x", "w", "r"}, {"y"});
    if (attr == "activations") {
      SetStrings(n, attr, {value});
    } else {
      SetString(n, attr, value);
    }
    g.Output("y", TensorProto::FLOAT);
    return g;
  };
  ExpectImportError(graph("direction", "sideways"),
                    {"direction must be forward, reverse or bidirectional", "sideways"});
  ExpectImportError(graph("activations", "Gelu"), {"unsupported activation 'Gelu'"});
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 3, 2})
      .Input("w", TensorProto::FLOAT, {1, 6, 2})
      .Input("r", TensorProto::FLOAT, {1, 6, 3});
  auto& n = g.Node("GRU", {"x", "w", "r"}, {"y"});
  SetStrings(n, "activations", {"Sigmoid", "Tanh", "Tanh"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"activations has 3 names, expected 2"});
}

TEST(DeformConvImport, AttributesAreFilledInAndOutputIsConvLike) {
  // in 5, kernel 3 dilated 2 (span 5), pads 1 + 1, stride 2: (5 + 2 - 5) // 2 + 1 = 2.
  OnnxGraph g(19);
  g.Input("x", TensorProto::FLOAT, {1, 4, 5, 5})
      .Input("w", TensorProto::FLOAT, {6, 2, 3, 3})
      .Input("off", TensorProto::FLOAT, {1, 36, 2, 2})
      .Input("b", TensorProto::FLOAT, {6});
  auto& n = g.Node("DeformConv", {"x", "w", "off", "b"}, {"y"});
  quilt::testing::SetInts(n, "strides", {2, 2});
  quilt::testing::SetInts(n, "dilations", {2, 2});
  quilt::testing::SetInts(n, "pads", {1, 1, 1, 1});
  SetInt(n, "group", 2);
  SetInt(n, "offset_group", 2);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 5, 5), "float32"), w: R.Tensor((6, 2, 3, 3), "float32"), off: R.Tensor((1, 36, 2, 2), "float32"), b: R.Tensor((6,), "float32")) -> R.Tensor((1, 6, 2, 2), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.deform_conv(x, w, off, b, R.const([], "float32"), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dilations=[2, 2], group=2, offset_group=2)
        return y
)");
}

TEST(DeformConvImport, SymbolicBatchAndMask) {
  OnnxGraph g(22);
  g.Input("x", TensorProto::FLOAT, {"n", 1, 3, 3})
      .Input("w", TensorProto::FLOAT, {1, 1, 2, 2})
      .Input("off", TensorProto::FLOAT, {"n", 8, 4, 4})
      .Input("mask", TensorProto::FLOAT, {"n", 4, 4, 4});
  auto& n = g.Node("DeformConv", {"x", "w", "off", "", "mask"}, {"y"});
  quilt::testing::SetInts(n, "pads", {1, 1, 1, 1});
  g.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tensor((n, 1, 4, 4), \"float32\")");
}

TEST(DeformConvImport, BadOffsetIsAnError) {
  OnnxGraph g(19);
  g.Input("x", TensorProto::FLOAT, {1, 1, 3, 3})
      .Input("w", TensorProto::FLOAT, {1, 1, 2, 2})
      .Input("off", TensorProto::FLOAT, {1, 4, 2, 2});
  g.Node("DeformConv", {"x", "w", "off"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"offset's dim 1 (offset_group * 8) is 4, expected 8"});
}

}  // namespace
}  // namespace quilt::importers::onnx
