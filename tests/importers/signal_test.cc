// Converters of the signal category: each test builds a tiny ONNX graph and expects IR text.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::OnnxGraph;
using quilt::testing::SetInt;

// The struct info of the model's result, described ("R.Tensor((2, 3), "float32")").
std::string Result(const OnnxGraph& g) {
  Expected<ir::IRModule> mod = g.Import();
  EXPECT_TRUE(mod) << mod.error().ToString();
  if (!mod) return "";
  return ir::Describe(mod->Lookup("main")->body->body->struct_info);
}

TEST(SignalImport, Dft17AxisAttributeBecomesAConstant) {
  // Real input [2, 16, 1], axis 1 (the default), one-sided: 16 / 2 + 1 bins.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {2, 16, 1});
  auto& n = g.Node("DFT", {"x"}, {"y"});
  SetInt(n, "onesided", 1);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 16, 1), "float32")) -> R.Tensor((2, 9, 2), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.signal.dft(x, R.const([], "int64"), R.const(1, "int64"), onesided=True)
        return y
)");
}

TEST(SignalImport, Dft20AxisAndLengthInputs) {
  // axis -3 of rank 4 is axis 1; dft_length 12 zero-pads it.
  OnnxGraph g(20);
  g.Input("x", TensorProto::FLOAT, {1, 10, 10, 2});
  g.Initializer<int64_t>("len", TensorProto::INT64, {}, {12});
  g.Initializer<int64_t>("axis", TensorProto::INT64, {}, {-3});
  g.Node("DFT", {"x", "len", "axis"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tensor((1, 12, 10, 2), \"float32\")");
}

TEST(SignalImport, Dft20DefaultAxisIsTheLastSignalAxis) {
  OnnxGraph g(20);
  g.Input("x", TensorProto::FLOAT, {3, "n", 1});
  auto& n = g.Node("DFT", {"x"}, {"y"});
  SetInt(n, "onesided", 1);
  g.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tensor((3, n // 2 + 1, 2), \"float32\")");
}

TEST(SignalImport, InverseOneSidedDftIsRealWithEvenDefaultLength) {
  // IRFFT: 6 one-sided bins -> 2 * (6 - 1) = 10 real samples.
  for (int opset : {17, 20}) {
    OnnxGraph g(opset);
    g.Input("x", TensorProto::FLOAT, {1, 6, 10, 2});
    auto& n = g.Node("DFT", {"x"}, {"y"});
    SetInt(n, "inverse", 1);
    SetInt(n, "onesided", 1);
    if (opset == 17) SetInt(n, "axis", 1);
    if (opset == 20) {
      g.Initializer<int64_t>("axis", TensorProto::INT64, {}, {1});
      n.add_input("");
      n.add_input("axis");
    }
    g.Output("y", TensorProto::FLOAT);
    EXPECT_EQ(Result(g), "R.Tensor((1, 10, 10, 1), \"float32\")") << "opset " << opset;
  }
}

TEST(SignalImport, DftWithRuntimeAxisOrLengthKeepsTheRank) {
  OnnxGraph g(20);
  g.Input("x", TensorProto::FLOAT, {1, 10, 10, 1}).Input("axis", TensorProto::INT64, {});
  g.Node("DFT", {"x", "", "axis"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tensor(ndim=4, \"float32\")");
  OnnxGraph g2(17);
  g2.Input("x", TensorProto::FLOAT, {1, 10, 1}).Input("len", TensorProto::INT32, {});
  g2.Node("DFT", {"x", "len"}, {"y"});
  g2.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Result(g2), "R.Tensor(ndim=3, \"float32\")");
}

TEST(SignalImport, BadDftsAreErrors) {
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 10, 1});
    auto& n = g.Node("DFT", {"x"}, {"y"});
    SetInt(n, "axis", 2);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"axis 2 is out of range for rank 3"});
  }
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 10, 2});
    auto& n = g.Node("DFT", {"x"}, {"y"});
    SetInt(n, "onesided", 1);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"one-sided forward DFT needs real input"});
  }
  {
    OnnxGraph g(17);
    g.Input("x", TensorProto::FLOAT, {1, 10, 3});
    g.Node("DFT", {"x"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"last dim must be 1 (real) or 2 (complex), got 3"});
  }
}

TEST(SignalImport, StftFramesAndBins) {
  // (128 - 16) // 8 + 1 = 15 frames of 16 // 2 + 1 = 9 one-sided bins.
  OnnxGraph g(17);
  g.Input("signal", TensorProto::FLOAT, {1, 128, 1});
  g.Initializer<int64_t>("step", TensorProto::INT64, {}, {8});
  g.Initializer<int64_t>("len", TensorProto::INT64, {}, {16});
  g.Node("STFT", {"signal", "step", "", "len"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(signal: R.Tensor((1, 128, 1), "float32")) -> R.Tensor((1, 15, 9, 2), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.signal.stft(signal, R.const(8, "int64"), R.const([], "float32"), R.const(16, "int64"))
        return y
)");
}

TEST(SignalImport, StftFrameLengthFromTheWindowTwoSided) {
  OnnxGraph g(17);
  g.Input("signal", TensorProto::FLOAT, {2, "t", 2}).Input("window", TensorProto::FLOAT, {10});
  g.Initializer<int32_t>("step", TensorProto::INT32, {}, {4});
  auto& n = g.Node("STFT", {"signal", "step", "window"}, {"y"});
  SetInt(n, "onesided", 0);
  g.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tensor((2, (t - 10) // 4 + 1, 10, 2), \"float32\")");
}

TEST(SignalImport, BadStftsAreErrors) {
  {
    OnnxGraph g(17);
    g.Input("signal", TensorProto::FLOAT, {1, 64, 1}).Input("window", TensorProto::FLOAT, {10});
    g.Initializer<int64_t>("step", TensorProto::INT64, {}, {4});
    g.Initializer<int64_t>("len", TensorProto::INT64, {}, {16});
    g.Node("STFT", {"signal", "step", "window", "len"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"window has length 10 but frame_length is 16"});
  }
  {
    OnnxGraph g(17);
    g.Input("signal", TensorProto::FLOAT, {1, 64, 2});
    g.Initializer<int64_t>("step", TensorProto::INT64, {}, {4});
    g.Initializer<int64_t>("len", TensorProto::INT64, {}, {16});
    g.Node("STFT", {"signal", "step", "", "len"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"onesided output needs a real signal"});
  }
}

TEST(SignalImport, WindowsHaveSizePointsOfTheOutputType) {
  OnnxGraph g(17);
  g.Initializer<int32_t>("size", TensorProto::INT32, {}, {10});
  auto& n = g.Node("HannWindow", {"size"}, {"y"});
  SetInt(n, "periodic", 0);
  SetInt(n, "output_datatype", TensorProto::DOUBLE);
  g.Output("y", TensorProto::DOUBLE);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main() -> R.Tensor((10,), "float64"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.signal.hann_window(R.const(10, "int32"), periodic=False, output_datatype="float64")
        return y
)");
  for (const char* op : {"HammingWindow", "BlackmanWindow"}) {
    OnnxGraph h(17);
    h.Input("size", TensorProto::INT64, {});
    h.Node(op, {"size"}, {"y"});
    h.Output("y", TensorProto::FLOAT);
    EXPECT_EQ(Result(h), "R.Tensor(ndim=1, \"float32\")") << op;
  }
}

TEST(SignalImport, MelWeightMatrixShape) {
  OnnxGraph g(17);
  g.Input("lo", TensorProto::FLOAT, {}).Input("hi", TensorProto::FLOAT, {});
  g.Initializer<int32_t>("bins", TensorProto::INT32, {}, {8});
  g.Initializer<int32_t>("len", TensorProto::INT32, {}, {16});
  g.Initializer<int32_t>("rate", TensorProto::INT32, {}, {8192});
  g.Node("MelWeightMatrix", {"bins", "len", "rate", "lo", "hi"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Result(g), "R.Tensor((9, 8), \"float32\")");
}

TEST(SignalImport, BadWindowSizeIsAnError) {
  OnnxGraph g(17);
  g.Input("size", TensorProto::FLOAT, {});
  g.Node("BlackmanWindow", {"size"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"size must be int32 or int64"});
}

}  // namespace
}  // namespace quilt::importers::onnx
