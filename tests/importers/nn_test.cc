// Converters of the nn category: each test builds a tiny ONNX graph and expects IR text.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::Dim;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::ImportedResult;
using quilt::testing::OnnxGraph;
using quilt::testing::SetFloat;
using quilt::testing::SetFloats;
using quilt::testing::SetInt;
using quilt::testing::SetInts;
using quilt::testing::SetString;

std::vector<int64_t> StaticShape(const OnnxGraph& g) {
  ir::StructInfo s = ImportedResult(g);
  if (!s) return {};
  std::optional<std::vector<int64_t>> v = s->StaticShape();
  EXPECT_TRUE(v.has_value()) << ir::Describe(s);
  return v ? *v : std::vector<int64_t>{};
}

TEST(NnImport, ConvWithGroupsStridesPadsAndBias) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 4, 7, 7})
      .Input("w", TensorProto::FLOAT, {6, 2, 3, 3})
      .Input("b", TensorProto::FLOAT, {6});
  auto& n = g.Node("Conv", {"x", "w", "b"}, {"y"});
  SetInts(n, "strides", {2, 2});
  SetInts(n, "pads", {1, 1, 1, 1});
  SetInt(n, "group", 2);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 7, 7), "float32"), w: R.Tensor((6, 2, 3, 3), "float32"), b: R.Tensor((6,), "float32")) -> R.Tensor((1, 6, 4, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], groups=2)
        y_1 = R.expand_dims(b, [0, 2, 3])
        y_2 = R.add(y, y_1)
        return y_2
)");
}

TEST(NnImport, ConvSameLowerResolvesToAsymmetricPads) {
  // in 5, kernel 2, stride 1: out 5, total pad 1, the odd one at the beginning.
  OnnxGraph g(11);
  g.Input("x", TensorProto::FLOAT, {1, 1, 5, 5}).Input("w", TensorProto::FLOAT, {1, 1, 2, 2});
  auto& n = g.Node("Conv", {"x", "w"}, {"y"});
  SetString(n, "auto_pad", "SAME_LOWER");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 5, 5), "float32"), w: R.Tensor((1, 1, 2, 2), "float32")) -> R.Tensor((1, 1, 5, 5), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 0, 0], dilation=[1, 1])
        return y
)");
}

TEST(NnImport, ConvSameUpperOverSymbolicDimsKeepsAutoPad) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {"n", 3, "h", 9}).Input("w", TensorProto::FLOAT, {8, 3, 3, 3});
  auto& n = g.Node("Conv", {"x", "w"}, {"y"});
  SetString(n, "auto_pad", "SAME_UPPER");
  SetInts(n, "strides", {2, 2});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, "h", 9), "float32"), w: R.Tensor((8, 3, 3, 3), "float32")) -> R.Tensor(("n", 8, (h + 1) // 2, 5), "float32"):
        n = T.int64()
        h = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.conv2d(x, w, strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1], auto_pad="SAME_UPPER")
        return y
)");
}

TEST(NnImport, ConvShapesWithDilationAnd1dAnd3d) {
  {
    OnnxGraph g(11);
    g.Input("x", TensorProto::FLOAT, {2, 3, 10}).Input("w", TensorProto::FLOAT, {5, 3, 3});
    auto& n = g.Node("Conv", {"x", "w"}, {"y"});
    SetInts(n, "dilations", {2});
    SetInts(n, "pads", {1, 0});
    SetInts(n, "strides", {3});
    g.Output("y", TensorProto::FLOAT);
    // (10 + 1 + 0 - 5) // 3 + 1 = 3
    EXPECT_EQ(StaticShape(g), (std::vector<int64_t>{2, 5, 3}));
  }
  {
    OnnxGraph g(22);
    g.Input("x", TensorProto::FLOAT, {1, 2, 4, 5, 6})
        .Input("w", TensorProto::FLOAT, {4, 2, 1, 2, 3});
    g.Node("Conv", {"x", "w"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    EXPECT_EQ(StaticShape(g), (std::vector<int64_t>{1, 4, 4, 4, 4}));
  }
}

TEST(NnImport, ConvBadGroupsAndChannels) {
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 64, 8, 8}).Input("w", TensorProto::FLOAT, {6, 21, 3, 3});
    auto& n = g.Node("Conv", {"x", "w"}, {"y"});
    SetInt(n, "group", 3);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"Conv", "group 3 does not divide 64 input channels"});
  }
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 8, 8, 8}).Input("w", TensorProto::FLOAT, {6, 3, 3, 3});
    g.Node("Conv", {"x", "w"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"weight has 3 input channels per group", "8 channels in 1 group"});
  }
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 1, 2, 2}).Input("w", TensorProto::FLOAT, {1, 1, 3, 3});
    g.Node("Conv", {"x", "w"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"larger than the padded input"});
  }
}

// A rank or shape the importer cannot work out (a reshape to a shape read at run time) in a
// model whose inputs leave dims open: the message names the open inputs, as declared, and the way
// to fix them; an input fixed by the options is no longer named.
TEST(NnImport, UnknownRankNamesTheInputsWithOpenDims) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {"n", 48}).Input("s", TensorProto::INT64, {Dim(std::string())});
  g.Initializer<float>("w", TensorProto::FLOAT, {4, 2, 3}, std::vector<float>(24, 1.0f));
  SetInt(g.Node("Reshape", {"x", "s"}, {"r"}), "allowzero", 1);
  g.Node("Conv", {"r", "w"}, {"y"}, "conv");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"node 'conv' (Conv, opset 17): the rank of input 0 must be known; ",
                        "the model's inputs leave dims open ('x' [n, 48], 's' [?]): ",
                        "quiltc --input-shape NAME:D,D,..."});
  importers::onnx::ImportOptions fix_x;
  fix_x.input_shapes["x"] = {2, 48};
  ExpectImportError(g, {"the model's inputs leave dims open ('s' [?]): "}, fix_x);
  // Reshape's zeros copy the data's dims: it needs the shape's length when compiled.
  g.graph()->mutable_node(0)->clear_attribute();
  ExpectImportError(g, {"(Reshape, opset 17): Reshape with allowzero = 0 to a shape known only at "
                        "run time",
                        "leave dims open ('x' [n, 48], 's' [?])"});
  // An error of another kind gets no hint.
  OnnxGraph h(17);
  h.Input("x", TensorProto::FLOAT, {"n", 64, 8, 8}).Input("w", TensorProto::FLOAT, {6, 21, 3, 3});
  SetInt(h.Node("Conv", {"x", "w"}, {"y"}), "group", 3);
  h.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> m = h.Import();
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message.find("leave dims open"), std::string::npos) << m.error().message;
}

TEST(NnImport, ConvTransposeOutputShapeGivesPads) {
  // in 3, stride 3, kernel 3: natural size 9; output_shape 10 needs total pad -1: begin 0, end
  // -1 (the odd pad goes first unless SAME_UPPER; floor division). Width: 2 * 2 + 3 - 8 = -1.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 1, 3, 3}).Input("w", TensorProto::FLOAT, {1, 2, 3, 3});
  auto& n = g.Node("ConvTranspose", {"x", "w"}, {"y"});
  SetInts(n, "strides", {3, 2});
  SetInts(n, "output_shape", {10, 8});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 3, 3), "float32"), w: R.Tensor((1, 2, 3, 3), "float32")) -> R.Tensor((1, 2, 10, 8), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.conv2d_transpose(x, w, strides=[3, 2], padding=[0, 0, -1, -1], output_padding=[0, 0], dilation=[1, 1])
        return y
)");
}

TEST(NnImport, ConvTransposeShapes) {
  OnnxGraph g(11);
  g.Input("x", TensorProto::FLOAT, {1, 4, 3, 3}).Input("w", TensorProto::FLOAT, {4, 3, 3, 3});
  auto& n = g.Node("ConvTranspose", {"x", "w"}, {"y"});
  SetInts(n, "strides", {2, 2});
  SetInts(n, "pads", {1, 1, 1, 1});
  SetInts(n, "output_padding", {1, 0});
  SetInt(n, "group", 2);
  g.Output("y", TensorProto::FLOAT);
  // (3 - 1) * 2 + 3 + output_padding - 2: 6 and 5; channels 3 * 2.
  EXPECT_EQ(StaticShape(g), (std::vector<int64_t>{1, 6, 6, 5}));
}

TEST(NnImport, MaxPoolCeilModeDropsAWindowStartingInThePad) {
  // in 5, kernel 2, stride 2, pads 1/1: ceil((5 + 2 - 2) / 2) + 1 = 4, but the 4th window would
  // start at 6 >= 5 + 1, so 3.
  OnnxGraph g(12);
  g.Input("x", TensorProto::FLOAT, {1, 1, 5, 5});
  auto& n = g.Node("MaxPool", {"x"}, {"y"});
  SetInts(n, "kernel_shape", {2, 2});
  SetInts(n, "strides", {2, 2});
  SetInts(n, "pads", {1, 1, 1, 1});
  SetInt(n, "ceil_mode", 1);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 5, 5), "float32")) -> R.Tensor((1, 1, 3, 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.max_pool2d(x, [2, 2], strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], ceil_mode=True)
        return y
)");
}

TEST(NnImport, PoolShapes) {
  struct Case {
    int64_t opset;
    const char* op;
    std::vector<int64_t> kernel, strides, pads, dilations;
    int64_t ceil;
    std::string auto_pad;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {10, "MaxPool", {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, "", {1, 1, 3, 3}},  // 8 -> 3
      {10, "MaxPool", {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, "", {1, 1, 4, 4}},  // ceil: 4
      {10, "MaxPool", {2, 2}, {1, 1}, {0, 0, 0, 0}, {3, 3}, 0, "", {1, 1, 5, 5}},  // dilated 4
      {19, "AveragePool", {3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}, 0, "SAME_UPPER", {1, 1, 3, 3}},
      {19, "AveragePool", {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, "VALID", {1, 1, 3, 3}},
      {18, "LpPool", {2, 2}, {2, 2}, {1, 0, 1, 0}, {1, 1}, 0, "", {1, 1, 5, 4}},
  };
  for (const Case& c : cases) {
    OnnxGraph g(c.opset);
    g.Input("x", TensorProto::FLOAT, {1, 1, 8, 8});
    auto& n = g.Node(c.op, {"x"}, {"y"});
    SetInts(n, "kernel_shape", c.kernel);
    SetInts(n, "strides", c.strides);
    if (c.auto_pad.empty()) {
      SetInts(n, "pads", c.pads);
      SetInt(n, "ceil_mode", c.ceil);
    } else {
      SetString(n, "auto_pad", c.auto_pad);
    }
    if (c.dilations != std::vector<int64_t>{1, 1}) SetInts(n, "dilations", c.dilations);
    g.Output("y", TensorProto::FLOAT);
    EXPECT_EQ(StaticShape(g), c.want) << c.op << " opset " << c.opset;
  }
}

TEST(NnImport, AveragePoolSymbolicCeilIsAMin) {
  // ceil((h + 2 - 2) / 2) + 1 windows, but no more than start inside h + 1: h // 2 + 1.
  OnnxGraph g(11);
  g.Input("x", TensorProto::FLOAT, {1, 1, "h"});
  auto& n = g.Node("AveragePool", {"x"}, {"y"});
  SetInts(n, "kernel_shape", {2});
  SetInts(n, "strides", {2});
  SetInts(n, "pads", {1, 1});
  SetInt(n, "ceil_mode", 1);
  SetInt(n, "count_include_pad", 1);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"IR(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, "h"), "float32")) -> R.Tensor((1, 1, T.min((h + 1) // 2 + 1, h // 2 + 1)), "float32"):
        h = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.avg_pool1d(x, [2], strides=[2], padding=[1, 1], dilation=[1], ceil_mode=True, count_include_pad=True)
        return y
)IR");
}

TEST(NnImport, MaxPoolWithIndices) {
  OnnxGraph g(12);
  g.Input("x", TensorProto::FLOAT, {1, 1, 4, 4});
  auto& n = g.Node("MaxPool", {"x"}, {"y", "i"});
  SetInts(n, "kernel_shape", {2, 2});
  SetInts(n, "strides", {2, 2});
  SetInt(n, "storage_order", 1);
  g.Output("y", TensorProto::FLOAT).Output("i", TensorProto::INT64);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")) -> R.Tuple(R.Tensor((1, 1, 2, 2), "float32"), R.Tensor((1, 1, 2, 2), "int64")):
        R.func_attr({"global_symbol": "main", "output_names": ["y", "i"]})
        y = R.nn.max_pool2d_with_indices(x, [2, 2], strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1], storage_order=1)
        y_1 = y[0]
        i = y[1]
        outputs = (y_1, i)
        return outputs
)");
}

TEST(NnImport, GlobalPoolsAreAdaptivePoolsToOne) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {"n", 3, 5, 7});
  g.Node("GlobalAveragePool", {"x"}, {"a"});
  g.Node("GlobalMaxPool", {"a"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 5, 7), "float32")) -> R.Tensor(("n", 3, 1, 1), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        a = R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])
        y = R.nn.adaptive_max_pool2d(a, output_size=[1, 1])
        return y
)");
}

TEST(NnImport, SoftmaxBeforeOpset13IsCoercedTo2D) {
  OnnxGraph g(11);
  g.Input("x", TensorProto::FLOAT, {"n", 3, 4});
  g.Node("Softmax", {"x"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 4), "float32")) -> R.Tensor(("n", 3, 4), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.reshape(x, R.shape([n, 12]))
        y_1 = R.nn.softmax(y)
        y_2 = R.reshape(y_1, R.shape([n, 3, 4]))
        return y_2
)");
}

TEST(NnImport, SoftmaxFamilyPerAxisFromOpset13AndLastAxisBefore) {
  {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4});
    auto& n = g.Node("Hardmax", {"x"}, {"y"});
    SetInt(n, "axis", 1);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32")) -> R.Tensor((2, 3, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.hardmax(x, axis=1)
        return y
)");
  }
  {
    OnnxGraph g(11);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4});
    auto& n = g.Node("LogSoftmax", {"x"}, {"y"});
    SetInt(n, "axis", -1);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32")) -> R.Tensor((2, 3, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.log_softmax(x)
        return y
)");
  }
  {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {2, 3});
    auto& n = g.Node("Softmax", {"x"}, {"y"});
    SetInt(n, "axis", 2);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"axis 2 is out of range for rank 2"});
  }
}

TEST(NnImport, LayerNormalizationWithAllThreeOutputs) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {2, 3, 4}).Input("s", TensorProto::FLOAT, {3, 4});
  auto& n = g.Node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv"});
  SetInt(n, "axis", 1);
  SetFloat(n, "epsilon", 0.001f);
  g.Output("y", TensorProto::FLOAT)
      .Output("mean", TensorProto::FLOAT)
      .Output("inv", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), s: R.Tensor((3, 4), "float32")) -> R.Tuple(R.Tensor((2, 3, 4), "float32"), R.Tensor((2, 1, 1), "float32"), R.Tensor((2, 1, 1), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["y", "mean", "inv"]})
        y = R.nn.layer_norm(x, s, R.const(0.0, "float32"), [1, 2], epsilon=0.001)
        mean = R.nn.layer_norm_stats(x, [1, 2], epsilon=0.001)
        mean_1 = mean[0]
        inv = mean[1]
        outputs = (y, mean_1, inv)
        return outputs
)");
}

TEST(NnImport, NormalizationsAndTheirErrors) {
  {
    OnnxGraph g(15);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4, 5});
    for (const char* p : {"s", "b", "m", "v"}) g.Input(p, TensorProto::FLOAT, {3});
    g.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4, 5), "float32"), s: R.Tensor((3,), "float32"), b: R.Tensor((3,), "float32"), m: R.Tensor((3,), "float32"), v: R.Tensor((3,), "float32")) -> R.Tensor((2, 3, 4, 5), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y_bn = R.nn.batch_norm(x, s, b, m, v, axis=1, training=False)
        y = y_bn[0]
        return y
)");
  }
  {
    OnnxGraph g(15);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4, 5});
    for (const char* p : {"s", "b", "m", "v"}) g.Input(p, TensorProto::FLOAT, {4});
    g.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"has 4 values, expected 3"});
  }
  {
    OnnxGraph g(15);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4, 5});
    for (const char* p : {"s", "b", "m", "v"}) g.Input(p, TensorProto::FLOAT, {3});
    auto& n = g.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "rm", "rv"});
    SetInt(n, "training_mode", 1);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"training_mode=1"});
  }
  {
    OnnxGraph g(21);
    g.Input("x", TensorProto::FLOAT, {2, 6, 4})
        .Input("s", TensorProto::FLOAT, {6})
        .Input("b", TensorProto::FLOAT, {6});
    auto& n = g.Node("GroupNormalization", {"x", "s", "b"}, {"y"});
    SetInt(n, "num_groups", 4);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"num_groups 4 does not divide 6 channels"});
  }
  {
    OnnxGraph g(22);
    g.Input("x", TensorProto::FLOAT, {2, 6, 4, 4})
        .Input("s", TensorProto::FLOAT, {6})
        .Input("b", TensorProto::FLOAT, {6});
    g.Node("InstanceNormalization", {"x", "s", "b"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 6, 4, 4), "float32"), s: R.Tensor((6,), "float32"), b: R.Tensor((6,), "float32")) -> R.Tensor((2, 6, 4, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.instance_norm(x, s, b, axes=[2, 3])
        return y
)");
  }
}

TEST(NnImport, GroupNormalizationOpset18RepeatsPerGroupScale) {
  OnnxGraph g(18);
  g.Input("x", TensorProto::FLOAT, {2, 6, 4})
      .Input("s", TensorProto::FLOAT, {2})
      .Input("b", TensorProto::FLOAT, {2});
  auto& n = g.Node("GroupNormalization", {"x", "s", "b"}, {"y"});
  SetInt(n, "num_groups", 2);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 6, 4), "float32"), s: R.Tensor((2,), "float32"), b: R.Tensor((2,), "float32")) -> R.Tensor((2, 6, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.reshape(s, R.shape([2, 1]))
        y_1 = R.multiply(y, R.const([[1.0, 1.0, 1.0]], "float32"))
        y_2 = R.reshape(y_1, R.shape([6]))
        y_3 = R.reshape(b, R.shape([2, 1]))
        y_4 = R.multiply(y_3, R.const([[1.0, 1.0, 1.0]], "float32"))
        y_5 = R.reshape(y_4, R.shape([6]))
        y_6 = R.nn.group_norm(x, y_2, y_5, 2, axes=[2])
        return y_6
)");
}

TEST(NnImport, DropoutIsIdentityWithAnAllOnesMask) {
  {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {3, 4});
    g.Node("Dropout", {"x"}, {"y"});
    g.Node("Relu", {"y"}, {"z"});
    g.Output("z", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")) -> R.Tensor((3, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["z"]})
        z = R.nn.relu(x)
        return z
)");
  }
  {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {3, 4});
    g.Node("Dropout", {"x"}, {"y", "m"});
    g.Output("y", TensorProto::FLOAT).Output("m", TensorProto::BOOL);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")) -> R.Tuple(R.Tensor((3, 4), "float32"), R.Tensor((3, 4), "bool")):
        R.func_attr({"global_symbol": "main", "output_names": ["y", "m"]})
        m = R.nn.dropout(x)
        m_1 = m[1]
        m_2 = R.astype(m_1, "bool")
        y = m[0]
        outputs = (y, m_2)
        return outputs
)");
  }
  {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {3, 4});
    g.Initializer<float>("r", TensorProto::FLOAT, {}, {0.5f});
    g.Initializer<bool>("t", TensorProto::BOOL, {}, {true});
    g.Node("Dropout", {"x", "r", "t"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"training-mode dropout"});
  }
}

TEST(NnImport, PReluSlopeAlongOneAxisIsPRelu) {
  {
    OnnxGraph g(16);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4, 4}).Input("s", TensorProto::FLOAT, {3, 1, 1});
    g.Node("PRelu", {"x", "s"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4, 4), "float32"), s: R.Tensor((3, 1, 1), "float32")) -> R.Tensor((2, 3, 4, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.reshape(s, R.shape([3]))
        y_1 = R.nn.prelu(x, y)
        return y_1
)");
  }
  {
    OnnxGraph g(16);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4}).Input("s", TensorProto::FLOAT, {3, 4});
    g.Node("PRelu", {"x", "s"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), s: R.Tensor((3, 4), "float32")) -> R.Tensor((2, 3, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.less(x, R.const(0.0, "float32"))
        y_1 = R.multiply(x, s)
        y_2 = R.where(y, y_1, x)
        return y_2
)");
  }
}

TEST(NnImport, ActivationsKeepTheirAttributes) {
  OnnxGraph g(24);
  g.Input("x", TensorProto::FLOAT, {4});
  auto& a = g.Node("LeakyRelu", {"x"}, {"a"});
  SetFloat(a, "alpha", 0.1f);
  g.Node("Selu", {"a"}, {"b"});
  auto& c = g.Node("Gelu", {"b"}, {"c"});
  SetString(c, "approximate", "tanh");
  auto& d = g.Node("Swish", {"c"}, {"d"});
  SetFloat(d, "alpha", 1.0f);
  auto& e = g.Node("HardSigmoid", {"d"}, {"e"});
  SetFloat(e, "alpha", 0.25f);
  g.Node("Softplus", {"e"}, {"f"});
  g.Output("f", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["f"]})
        a = R.nn.leakyrelu(x, alpha=0.1)
        b = R.nn.selu(a)
        c = R.nn.gelu_tanh(b)
        d = R.nn.silu(c)
        e = R.nn.hard_sigmoid(d, alpha=0.25)
        f = R.nn.softplus(e)
        return f
)");
}

TEST(NnImport, SpaceDepthAndTheirErrors) {
  {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {1, 8, 2, 3});
    auto& n = g.Node("DepthToSpace", {"x"}, {"y"});
    SetInt(n, "blocksize", 2);
    SetString(n, "mode", "CRD");
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 2, 3), "float32")) -> R.Tensor((1, 2, 4, 6), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.depth_to_space(x, 2, mode="CRD")
        return y
)");
  }
  {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {1, 2, 4, 5});
    auto& n = g.Node("SpaceToDepth", {"x"}, {"y"});
    SetInt(n, "blocksize", 2);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"block_size 2 does not divide dim 3 (5)"});
  }
}

TEST(NnImport, MaxUnpoolAndCol2Im) {
  {
    OnnxGraph g(11);
    g.Input("x", TensorProto::FLOAT, {1, 1, 2, 2}).Input("i", TensorProto::INT64, {1, 1, 2, 2});
    g.Initializer<int64_t>("s", TensorProto::INT64, {4}, {1, 1, 5, 5});
    auto& n = g.Node("MaxUnpool", {"x", "i", "s"}, {"y"});
    SetInts(n, "kernel_shape", {2, 2});
    SetInts(n, "strides", {2, 2});
    g.Output("y", TensorProto::FLOAT);
    EXPECT_EQ(StaticShape(g), (std::vector<int64_t>{1, 1, 5, 5}));
  }
  {
    OnnxGraph g(11);
    g.Input("x", TensorProto::FLOAT, {1, 1, 2, 2}).Input("i", TensorProto::INT64, {1, 1, 2, 2});
    auto& n = g.Node("MaxUnpool", {"x", "i"}, {"y"});
    SetInts(n, "kernel_shape", {2, 2});
    SetInts(n, "strides", {2, 2});
    g.Output("y", TensorProto::FLOAT);
    EXPECT_EQ(StaticShape(g), (std::vector<int64_t>{1, 1, 4, 4}));
  }
  {
    OnnxGraph g(18);
    g.Input("x", TensorProto::FLOAT, {1, 10, 12});
    g.Initializer<int64_t>("img", TensorProto::INT64, {2}, {5, 5});
    g.Initializer<int64_t>("blk", TensorProto::INT64, {2}, {1, 5});
    auto& n = g.Node("Col2Im", {"x", "img", "blk"}, {"y"});
    SetInts(n, "pads", {0, 1, 0, 1});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"12 blocks", "give 15"});
  }
}

TEST(NnImport, TfIdfVectorizerOfIntTokens) {
  OnnxGraph g(9);
  g.Input("x", TensorProto::INT32, {"n", 6});
  auto& v = g.Node("TfIdfVectorizer", {"x"}, {"y"});
  SetString(v, "mode", "TFIDF");
  SetInt(v, "min_gram_length", 1);
  SetInt(v, "max_gram_length", 2);
  SetInt(v, "max_skip_count", 1);
  SetInts(v, "ngram_counts", {0, 2});
  SetInts(v, "ngram_indexes", {0, 3, 1});
  SetInts(v, "pool_int64s", {2, 3, 5, 4});
  SetFloats(v, "weights", {0.1f, 1.0f, 2.0f});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 6), "int32")) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.tfidf_vectorizer(x, "TFIDF", 1, 2, 1, [0, 2], [0, 3, 1], [2, 3, 5, 4], weights=[0.1, 1.0, 2.0])
        return y
)");
  OnnxGraph bad(9);
  bad.Input("x", TensorProto::INT64, {6});
  auto& b = bad.Node("TfIdfVectorizer", {"x"}, {"y"}, "tfidf");
  SetString(b, "mode", "TF");
  SetInt(b, "min_gram_length", 2);
  SetInt(b, "max_gram_length", 1);
  SetInt(b, "max_skip_count", 0);
  SetInts(b, "ngram_counts", {0});
  SetInts(b, "ngram_indexes", {0});
  SetInts(b, "pool_int64s", {2});
  bad.Output("y", TensorProto::FLOAT);
  ExpectImportError(bad, {"node 'tfidf' (TfIdfVectorizer, opset 9)",
                          "1 <= min_gram_length <= max_gram_length, got 2 and 1"});
}

}  // namespace
}  // namespace quilt::importers::onnx
