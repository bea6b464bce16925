// The importer's core: inputs, initializers, symbolic dims, node names, outputs, shape
// computations on known values, and the elementwise converters.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::OnnxGraph;
using quilt::testing::SetInt;

TEST(Import, AddWithSymbolicBatchSharedAcrossInputs) {
  OnnxGraph g;
  g.Input("a", TensorProto::FLOAT, {"batch", 3}).Input("b", TensorProto::FLOAT, {"batch", 3});
  g.Node("Add", {"a", "b"}, {"c"}, "/add");
  g.Output("c", TensorProto::FLOAT, std::vector<quilt::testing::Dim>{"batch", 3});
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("batch", 3), "float32"), b: R.Tensor(("batch", 3), "float32")) -> R.Tensor(("batch", 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["c"]})
        c = R.add(a, b)
        return c
)");
}

TEST(Import, NodeNamesAreKeptOnBindings) {
  OnnxGraph g;
  g.Input("x", TensorProto::FLOAT, {4});
  g.Node("Exp", {"x"}, {"y"}, "/backbone/exp");
  g.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  EXPECT_EQ(mod->Lookup("main")->body->blocks[0].bindings[0].source, "/backbone/exp");
}

TEST(Import, InitializerThatIsAlsoAnInputStaysAnInputWithADefault) {
  OnnxGraph g;
  g.Input("x", TensorProto::FLOAT, {2}).Input("w", TensorProto::FLOAT, {2});
  g.Initializer<float>("w", TensorProto::FLOAT, {2}, {1.5f, -2.0f});
  g.Initializer<float>("k", TensorProto::FLOAT, {2}, {3.0f, 4.0f});
  g.Node("Mul", {"x", "w"}, {"t"});
  g.Node("Add", {"t", "k"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32"), w: R.Tensor((2,), "float32") = R.const([1.5, -2.0], "float32")) -> R.Tensor((2,), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        t = R.multiply(x, w)
        y = R.add(t, R.const([3.0, 4.0], "float32"))
        return y
)");
}

TEST(Import, ShapeComputationsStaySymbolic) {
  // Shape -> Gather-free chain: Shape, Concat with a constant, Reshape.
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 4, 8});
  g.Initializer<int64_t>("minus_one", TensorProto::INT64, {1}, {-1});
  g.Node("Shape", {"x"}, {"s"});
  g.Node("Concat", {"s", "minus_one"}, {"s2"}).add_attribute();
  auto& concat = g.graph()->mutable_node()->at(1);
  concat.clear_attribute();
  SetInt(concat, "axis", 0);
  g.Node("Flatten", {"x"}, {"f"});
  g.Output("f", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 8), "float32")) -> R.Tensor(("n", 32), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["f"]})
        s = R.shape_of(x)
        s_1 = R.shape_to_tensor(s)
        s2 = R.concat((s_1, R.const([-1], "int64")))
        f = R.reshape(x, R.shape([n, 32]))
        return f
)");
}

TEST(Import, ReshapeResolvesZeroAndMinusOneSymbolically) {
  OnnxGraph g(14);
  g.Input("x", TensorProto::FLOAT, {"n", 4, 8});
  g.Initializer<int64_t>("shape", TensorProto::INT64, {3}, {0, -1, 2});
  g.Node("Reshape", {"x", "shape"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 8), "float32")) -> R.Tensor(("n", 16, 2), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.reshape(x, R.shape([n, 16, 2]))
        return y
)");
}

TEST(Import, VariadicMaxAndMeanChainBinaryOps) {
  OnnxGraph g(13);
  g.Input("a", TensorProto::FLOAT, {3})
      .Input("b", TensorProto::FLOAT, {3})
      .Input("c", TensorProto::FLOAT, {1});
  g.Node("Mean", {"a", "b", "c"}, {"m"});
  g.Output("m", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((3,), "float32"), b: R.Tensor((3,), "float32"), c: R.Tensor((1,), "float32")) -> R.Tensor((3,), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["m"]})
        m = R.add(a, b)
        m_1 = R.add(m, c)
        m_2 = R.divide(m_1, R.const(3.0, "float32"))
        return m_2
)");
}

TEST(Import, PowCastsTheExponentToTheBaseType) {
  OnnxGraph g(15);
  g.Input("x", TensorProto::FLOAT, {2}).Input("e", TensorProto::INT64, {2});
  g.Node("Pow", {"x", "e"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32"), e: R.Tensor((2,), "int64")) -> R.Tensor((2,), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.astype(e, "float32")
        y_1 = R.power(x, y)
        return y_1
)");
}

// A Cast to the type its input already has is that input, as an Identity is (no astype step);
// a Cast to another type stays. The graph's outputs keep their names, one of them the cast input
// itself.
TEST(Import, ACastToTheInputsOwnTypeIsTheInputItself) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  SetInt(g.Node("Cast", {"x"}, {"c"}), "to", TensorProto::FLOAT);
  g.Node("Relu", {"c"}, {"r"});
  SetInt(g.Node("Cast", {"r"}, {"i"}), "to", TensorProto::INT32);
  SetInt(g.Node("Cast", {"x"}, {"same"}), "to", TensorProto::FLOAT);
  g.Output("r", TensorProto::FLOAT)
      .Output("i", TensorProto::INT32)
      .Output("same", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "int32"), R.Tensor((2, 3), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["r", "i", "same"]})
        r = R.nn.relu(x)
        i = R.astype(r, "int32")
        outputs = (r, i, x)
        return outputs
)");
}

TEST(Import, ClipWithConstantAndRuntimeBounds) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2}).Input("hi", TensorProto::FLOAT, {});
  g.Initializer<float>("lo", TensorProto::FLOAT, {}, {0.0f});
  g.Node("Clip", {"x", "lo", "hi"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32"), hi: R.Tensor((), "float32")) -> R.Tensor((2,), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.clip(x, min=0.0)
        y_1 = R.minimum(y, hi)
        return y_1
)");
}

TEST(Import, InputValuesBecomeConstants) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("axes", TensorProto::INT64, {1});
  g.Node("Unsqueeze", {"x", "axes"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(
      g, {"node 'Unsqueeze_1' (Unsqueeze, opset 13)", "input 'axes' must be a constant"});
  ImportOptions options;
  int64_t axis = 1;
  options.input_values["axes"] =
      InputValue{ir::DataType::kInt64,
                 {1},
                 std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&axis),
                                      reinterpret_cast<uint8_t*>(&axis) + 8)};
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 1, 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.expand_dims(x, axis=[1])
        return y
)",
                  options);
}

TEST(Import, InputShapeOverride) {
  OnnxGraph g;
  g.Input("x", TensorProto::FLOAT, {"n", 3});
  g.Node("Relu", {"x"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ImportOptions options;
  options.input_shapes["x"] = {5, 3};
  Expected<ir::IRModule> mod = g.Import(options);
  ASSERT_TRUE(mod) << mod.error().ToString();
  EXPECT_EQ(mod->Lookup("main")->ret_struct_info->StaticShape(), (std::vector<int64_t>{5, 3}));
  options.input_shapes["x"] = {5, 3, 1};
  ExpectImportError(g, {"--input-shape gives x rank 3, but the model declares rank 2"}, options);
}

TEST(Import, DeclaredOutputTypeIsChecked) {
  OnnxGraph g;
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Exp", {"x"}, {"y"});
  g.Output("y", TensorProto::DOUBLE);
  ExpectImportError(g, {"graph output 'y' is declared float64 but computes float32"});
  // A declared shape that disagrees is the exporter's slip: the computed shape wins, with a
  // warning (ONNX Runtime runs such models too).
  OnnxGraph h;
  h.Input("x", TensorProto::FLOAT, {2});
  h.Node("Exp", {"x"}, {"y"});
  h.Output("y", TensorProto::FLOAT, std::vector<quilt::testing::Dim>{3});
  std::vector<std::string> warnings;
  ImportOptions options;
  options.warn = [&](const Diagnostic& d) { warnings.push_back(d.ToString()); };
  Expected<ir::IRModule> mod = h.Import(options);
  ASSERT_TRUE(mod) << mod.error().ToString();
  EXPECT_EQ(mod->Lookup("main")->ret_struct_info->StaticShape(), (std::vector<int64_t>{2}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("graph output 'y' is declared with dimension 0 = 3 but computes 2; "
                             "the computed shape is used"),
            std::string::npos)
      << warnings[0];
  OnnxGraph r;
  r.Input("x", TensorProto::FLOAT, {2});
  r.Node("Exp", {"x"}, {"y"});
  r.Output("y", TensorProto::FLOAT, std::vector<quilt::testing::Dim>{1, 2});
  warnings.clear();
  ASSERT_TRUE(r.Import(options));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("declared with rank 2 but computes rank 1"), std::string::npos)
      << warnings[0];
}

TEST(Import, DeclaredMinusOneOutputDimConstrainsNothing) {
  // Exporters write -1 for an unknown batch; a fixed input shape then makes it static.
  OnnxGraph g;
  g.Input("x", TensorProto::FLOAT, {-1, 3});
  g.Node("Exp", {"x"}, {"y"});
  g.Output("y", TensorProto::FLOAT, std::vector<quilt::testing::Dim>{int64_t{-1}, int64_t{3}});
  ImportOptions options;
  options.input_shapes["x"] = {2, 3};
  Expected<ir::IRModule> mod = g.Import(options);
  ASSERT_TRUE(mod) << mod.error().ToString();
  EXPECT_EQ(mod->Lookup("main")->ret_struct_info->StaticShape(), (std::vector<int64_t>{2, 3}));
}

}  // namespace
}  // namespace quilt::importers::onnx

namespace quilt::importers::onnx {
namespace {

TEST(Import, MinusOneAndQuestionMarkDimsAreFreshSymbolicDims) {
  // Exporters write -1 or "?" for dims they do not know; each is its own unknown dim.
  quilt::testing::OnnxGraph g(11);
  g.Input("x", ::onnx::TensorProto::FLOAT, {int64_t{-1}, 3, "?", "?"});
  g.Node("Relu", {"x"}, {"y"});
  g.Output("y", ::onnx::TensorProto::FLOAT);
  quilt::testing::ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("a", 3, "b", "c"), "float32")) -> R.Tensor(("a", 3, "b", "c"), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.relu(x)
        return y
)");
}

}  // namespace
}  // namespace quilt::importers::onnx
