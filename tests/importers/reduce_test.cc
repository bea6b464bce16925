// Converters of the reduce, linalg and quantize categories: each test builds a tiny ONNX graph
// and expects IR text (or a diagnostic).
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::Dim;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::OnnxGraph;
using quilt::testing::SetFloat;
using quilt::testing::SetInt;
using quilt::testing::SetInts;
using quilt::testing::SetString;

using quilt::testing::ImportedResult;

// Element types newer than the system's onnx.proto (the numbering is ONNX's).
constexpr int32_t kFloat8E4M3FN = 17;
constexpr int32_t kInt4 = 22;

std::string Text(const ir::StructInfo& s) { return s ? ir::Describe(s) : "<none>"; }

// ---------------------------------------------------------------- reductions

TEST(Reduce, SumTakesAxesAsAnInputFromOpset13) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 3, 4});
  g.Initializer<int64_t>("axes", TensorProto::INT64, {1}, {1});
  SetInt(g.Node("ReduceSum", {"x", "axes"}, {"y"}), "keepdims", 0);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 4), "float32")) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.sum(x, axis=[1])
        return y
)");
}

TEST(Reduce, SumTakesAxesAsAnAttributeBeforeOpset13) {
  OnnxGraph g(11);
  g.Input("x", TensorProto::FLOAT, {2, 3, 4});
  SetInts(g.Node("ReduceSum", {"x"}, {"y"}), "axes", {0, -1});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32")) -> R.Tensor((1, 3, 1), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.sum(x, axis=[0, -1], keepdims=True)
        return y
)");
}

TEST(Reduce, MeanKeepsAxesAsAnAttributeUntilOpset18) {
  // ReduceMean at opset 17 still reads the attribute; at 18 the input.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  SetInts(g.Node("ReduceMean", {"x"}, {"y"}), "axes", {-1});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 1), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.mean(x, axis=[-1], keepdims=True)
        return y
)");
  OnnxGraph h(18);
  h.Input("x", TensorProto::FLOAT, {2, 3});
  h.Initializer<int64_t>("axes", TensorProto::INT64, {1}, {0});
  h.Node("ReduceMean", {"x", "axes"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(h, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((1, 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.mean(x, axis=[0], keepdims=True)
        return y
)");
}

TEST(Reduce, NoAxesReducesEverythingUnlessNoopWithEmptyAxes) {
  OnnxGraph g(18);
  g.Input("x", TensorProto::INT32, {2, 3});
  SetInt(g.Node("ReduceMax", {"x"}, {"y"}), "keepdims", 0);
  auto& n = g.Node("ReduceL1", {"x"}, {"z"});
  SetInt(n, "noop_with_empty_axes", 1);
  g.Output("y", TensorProto::INT32).Output("z", TensorProto::INT32);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "int32")) -> R.Tuple(R.Tensor((), "int32"), R.Tensor((2, 3), "int32")):
        R.func_attr({"global_symbol": "main", "output_names": ["y", "z"]})
        y = R.max(x)
        z = R.reduce_l1(x, axis=[], keepdims=True)
        outputs = (y, z)
        return outputs
)");
}

TEST(Reduce, EveryReductionKeepsTheInputDtype) {
  const char* ops[] = {"ReduceProd",      "ReduceL2",        "ReduceLogSum",
                       "ReduceLogSumExp", "ReduceSumSquare", "ReduceMin"};
  for (const char* op : ops) {
    OnnxGraph g(13);
    g.Input("x", TensorProto::DOUBLE, {2, "k", 5});
    SetInts(g.Node(op, {"x"}, {"y"}), "axes", {1});
    g.Output("y", TensorProto::DOUBLE);
    EXPECT_EQ(Text(ImportedResult(g)), "R.Tensor((2, 1, 5), \"float64\")") << op;
  }
}

TEST(Reduce, SumOfAKnownShapeStaysKnown) {
  // ReduceProd(Shape(x)) is the element count, usable by a later Reshape.
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 4});
  g.Node("Shape", {"x"}, {"s"});
  SetInt(g.Node("ReduceProd", {"s"}, {"count"}), "keepdims", 1);
  g.Node("Reshape", {"x", "count"}, {"flat"});
  g.Output("flat", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  EXPECT_EQ(Text(mod->Lookup("main")->ret_struct_info), "R.Tensor((n * 4,), \"float32\")");
}

TEST(Reduce, BadAxesAreDiagnosed) {
  OnnxGraph g(18);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("axes", TensorProto::INT64, {1});
  g.Node("ReduceMin", {"x", "axes"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"(ReduceMin, opset 18)", "input 'axes' must be a constant"});
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {2, 3});
  SetInts(h.Node("ReduceL2", {"x"}, {"y"}), "axes", {2});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"R.reduce_l2", "axis 2 is out of range for rank 2"});
  OnnxGraph k(11);
  k.Input("x", TensorProto::FLOAT, {2, 3});
  SetInts(k.Node("ReduceSum", {"x"}, {"y"}), "axes", {1, -1});
  k.Output("y", TensorProto::FLOAT);
  ExpectImportError(k, {"R.sum", "appears twice"});
}

TEST(Reduce, ArgMaxWithSelectLastIndex) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, "k", 4});
  auto& n = g.Node("ArgMax", {"x"}, {"y"});
  SetInt(n, "axis", -2);
  SetInt(n, "keepdims", 0);
  SetInt(n, "select_last_index", 1);
  g.Node("ArgMin", {"x"}, {"z"});
  g.Output("y", TensorProto::INT64).Output("z", TensorProto::INT64);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, "k", 4), "float32")) -> R.Tuple(R.Tensor((2, 4), "int64"), R.Tensor((1, "k", 4), "int64")):
        k = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y", "z"]})
        y = R.argmax(x, axis=-2, select_last_index=True)
        z = R.argmin(x, axis=0, keepdims=True)
        outputs = (y, z)
        return outputs
)");
}

TEST(Reduce, CumSumAndCumProdReadTheAxisInput) {
  OnnxGraph g(26);
  g.Input("x", TensorProto::INT64, {3, 5});
  g.Initializer<int32_t>("axis", TensorProto::INT32, {}, {1});
  auto& n = g.Node("CumSum", {"x", "axis"}, {"y"});
  SetInt(n, "exclusive", 1);
  SetInt(n, "reverse", 1);
  g.Node("CumProd", {"y", "axis"}, {"z"});
  g.Output("z", TensorProto::INT64);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 5), "int64")) -> R.Tensor((3, 5), "int64"):
        R.func_attr({"global_symbol": "main", "output_names": ["z"]})
        y = R.cumsum(x, axis=1, exclusive=True, reverse=True)
        z = R.cumprod(y, axis=1)
        return z
)");
  OnnxGraph h(14);
  h.Input("x", TensorProto::FLOAT, {3});
  h.Initializer<int64_t>("axis", TensorProto::INT64, {}, {1});
  h.Node("CumSum", {"x", "axis"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"R.cumsum", "axis 1 is out of range for rank 1"});
}

TEST(Reduce, NegativeLogLikelihoodLossWithoutWeights) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 3, 2}).Input("t", TensorProto::INT64, {"n", 2});
  auto& n = g.Node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"});
  SetString(n, "reduction", "none");
  SetInt(n, "ignore_index", 1);
  g.Output("loss", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 2), "float32"), t: R.Tensor(("n", 2), "int64")) -> R.Tensor(("n", 2), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["loss"]})
        loss = R.nn.nll_loss(x, t, R.const([1.0, 1.0, 1.0], "float32"), reduction="none", ignore_index=1)
        return loss
)");
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {4, 3}).Input("t", TensorProto::INT64, {5});
  h.Node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"});
  h.Output("loss", TensorProto::FLOAT);
  ExpectImportError(h, {"R.nn.nll_loss", "'targets' dimension 0 is 5, expected 4"});
}

TEST(Reduce, SoftmaxCrossEntropyLossWithLogProb) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {4, 3}).Input("t", TensorProto::INT64, {4});
  g.Input("w", TensorProto::FLOAT, {3});
  g.Node("SoftmaxCrossEntropyLoss", {"x", "t", "w"}, {"loss", "log_prob"});
  g.Output("loss", TensorProto::FLOAT).Output("log_prob", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 3), "float32"), t: R.Tensor((4,), "int64"), w: R.Tensor((3,), "float32")) -> R.Tuple(R.Tensor((), "float32"), R.Tensor((4, 3), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["loss", "log_prob"]})
        loss = R.nn.softmax_cross_entropy(x, t, w)
        loss_1 = loss[0]
        log_prob = loss[1]
        outputs = (loss_1, log_prob)
        return outputs
)");
}

TEST(ReduceRules, UnknownRankKeepsWhatIsKnown) {
  ir::Var x = ir::MakeVar("x", ir::TensorSInfo(std::nullopt, ir::DataType::kFloat32));
  auto infer = [&](ir::OpKind op, ir::Attrs a) {
    Expected<ir::Expr> call = ir::MakeOpCall(op, {x}, a);
    EXPECT_TRUE(call) << call.error().ToString();
    return call ? Text((*call)->struct_info) : "";
  };
  // Every axis without keepdims is a scalar whatever the rank; anything else is unknown.
  EXPECT_EQ(infer(ir::OpKind::kSum, {}), "R.Tensor((), \"float32\")");
  ir::Attrs axes;
  axes.Set("axis", std::vector<int64_t>{0});
  EXPECT_EQ(infer(ir::OpKind::kProd, axes), "R.Tensor(?, \"float32\")");
  ir::Attrs flat;
  EXPECT_EQ(infer(ir::OpKind::kCumsum, flat), "R.Tensor(ndim=1, \"float32\")");
  ir::Var b = ir::MakeVar("b", ir::TensorSInfo(std::vector<int64_t>{2, 3}, ir::DataType::kBool));
  Expected<ir::Expr> sum = ir::MakeOpCall(ir::OpKind::kSum, {b});
  ASSERT_FALSE(sum);
  EXPECT_NE(sum.error().message.find("expects numeric tensors, got bool"), std::string::npos);
  EXPECT_TRUE(ir::MakeOpCall(ir::OpKind::kMax, {b}));  // max/min order bools (opset 20)
}

// ---------------------------------------------------------------- linear algebra

TEST(Linalg, MatMulBroadcastsBatchAndDropsVectorDims) {
  OnnxGraph g(13);
  g.Input("a", TensorProto::FLOAT, {"b", 1, 3, 4}).Input("v", TensorProto::FLOAT, {4});
  g.Input("m", TensorProto::FLOAT, {5, 4, 6});
  g.Node("MatMul", {"a", "v"}, {"y"});
  g.Node("MatMul", {"a", "m"}, {"z"});
  g.Output("y", TensorProto::FLOAT).Output("z", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("b", 1, 3, 4), "float32"), v: R.Tensor((4,), "float32"), m: R.Tensor((5, 4, 6), "float32")) -> R.Tuple(R.Tensor(("b", 1, 3), "float32"), R.Tensor(("b", 5, 3, 6), "float32")):
        b = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y", "z"]})
        y = R.matmul(a, v)
        z = R.matmul(a, m)
        outputs = (y, z)
        return outputs
)");
}

TEST(Linalg, GemmComposesTransposesScalesAndBias) {
  OnnxGraph g(13);
  g.Input("a", TensorProto::FLOAT, {4, 3}).Input("b", TensorProto::FLOAT, {5, 4});
  g.Input("c", TensorProto::FLOAT, {5});
  auto& n = g.Node("Gemm", {"a", "b", "c"}, {"y"});
  SetInt(n, "transA", 1);
  SetInt(n, "transB", 1);
  SetFloat(n, "alpha", 0.5f);
  SetFloat(n, "beta", 2.0f);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((4, 3), "float32"), b: R.Tensor((5, 4), "float32"), c: R.Tensor((5,), "float32")) -> R.Tensor((3, 5), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.permute_dims(a, axes=[1, 0])
        y_1 = R.permute_dims(b, axes=[1, 0])
        y_2 = R.matmul(y, y_1)
        y_3 = R.multiply(y_2, R.const(0.5, "float32"))
        y_4 = R.multiply(c, R.const(2.0, "float32"))
        y_5 = R.add(y_3, y_4)
        return y_5
)");
}

TEST(Linalg, GemmScalesHalfPrecisionWithHalfConstants) {
  OnnxGraph g(13);
  g.Input("a", TensorProto::FLOAT16, {2, 3}).Input("b", TensorProto::FLOAT16, {3, 4});
  SetFloat(g.Node("Gemm", {"a", "b"}, {"y"}), "alpha", 0.5f);
  g.Output("y", TensorProto::FLOAT16);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  const auto& bindings = mod->Lookup("main")->body->blocks[0].bindings;
  ASSERT_EQ(bindings.size(), 2u);
  const auto* mul = ir::As<ir::CallNode>(bindings[1].value);
  ASSERT_TRUE(mul && mul->args.size() == 2);
  const auto* c = ir::As<ir::ConstantNode>(mul->args[1]);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->dtype, ir::DataType::kFloat16);
  EXPECT_EQ(*c->data, (std::vector<uint8_t>{0x00, 0x38}));  // 0.5 in IEEE half
  EXPECT_EQ(Text(mod->Lookup("main")->ret_struct_info), "R.Tensor((2, 4), \"float16\")");
}

TEST(Linalg, GemmNeedsCBeforeOpset11AndAOneWayBroadcast) {
  OnnxGraph g(9);
  g.Input("a", TensorProto::FLOAT, {2, 3}).Input("b", TensorProto::FLOAT, {3, 4});
  g.Node("Gemm", {"a", "b"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"(Gemm, opset 9)", "takes 3 inputs, got 2"});
  OnnxGraph h(11);
  h.Input("a", TensorProto::FLOAT, {2, 3}).Input("b", TensorProto::FLOAT, {3, 4});
  h.Node("Gemm", {"a", "b"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  EXPECT_EQ(Text(ImportedResult(h)), "R.Tensor((2, 4), \"float32\")");
  OnnxGraph k(11);
  k.Input("a", TensorProto::FLOAT, {1, 3}).Input("b", TensorProto::FLOAT, {3, 4});
  k.Input("c", TensorProto::FLOAT, {2, 4});
  k.Node("Gemm", {"a", "b", "c"}, {"y"});
  k.Output("y", TensorProto::FLOAT);
  ExpectImportError(k, {"input 'C' does not broadcast to the 1 x 4 product"});
}

TEST(Linalg, EinsumExplicitImplicitAndEllipsis) {
  OnnxGraph g(12);
  g.Input("a", TensorProto::FLOAT, {"b", 2, 3}).Input("c", TensorProto::FLOAT, {"b", 3, 4});
  SetString(g.Node("Einsum", {"a", "c"}, {"y"}), "equation", "bij, bjk -> bik");
  SetString(g.Node("Einsum", {"a"}, {"t"}), "equation", "...ij");
  SetString(g.Node("Einsum", {"c"}, {"d"}), "equation", "kij");
  g.Output("y", TensorProto::FLOAT).Output("t", TensorProto::FLOAT).Output("d", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("b", 2, 3), "float32"), c: R.Tensor(("b", 3, 4), "float32")) -> R.Tuple(R.Tensor(("b", 2, 4), "float32"), R.Tensor(("b", 2, 3), "float32"), R.Tensor((3, 4, "b"), "float32")):
        b = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y", "t", "d"]})
        y = R.einsum((a, c), "bij, bjk -> bik")
        t = R.einsum((a,), "...ij")
        d = R.einsum((c,), "kij")
        outputs = (y, t, d)
        return outputs
)");
}

TEST(Linalg, EinsumDiagnostics) {
  auto error = [](const std::string& eq, std::vector<Dim> a, std::vector<Dim> b,
                  const std::string& want) {
    OnnxGraph g(12);
    g.Input("a", TensorProto::FLOAT, a).Input("b", TensorProto::FLOAT, b);
    SetString(g.Node("Einsum", {"a", "b"}, {"y"}), "equation", eq);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"R.einsum", want});
  };
  error("ij,jk->ik", {2, 3}, {4, 5}, "subscript 'j' is 3 in one operand and 4 in operand 1");
  error("ij,jk", {2, 3, 1}, {3, 5}, "term 'ij' has 2 letter(s) for operand 0 of rank 3");
  error("ij,jk->iz", {2, 3}, {3, 5}, "output subscript 'z' is not an input's");
  error("ij->i", {2, 3}, {3, 5}, "subscripts 'ij->i' name 1 operand(s), got 2");
}

TEST(Linalg, DetOfABatchOfSquareMatrices) {
  OnnxGraph g(22);
  g.Input("x", TensorProto::FLOAT, {"n", 3, 3});
  g.Node("Det", {"x"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 3), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.linalg.det(x)
        return y
)");
  OnnxGraph h(22);
  h.Input("x", TensorProto::FLOAT, {2, 3});
  h.Node("Det", {"x"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"R.linalg.det", "expects square matrices, got 2 x 3"});
}

TEST(Linalg, MatMulIntegerKeepsEightBitOperands) {
  OnnxGraph g(10);
  g.Input("a", TensorProto::UINT8, {4, 3}).Input("b", TensorProto::INT8, {3, 2});
  g.Input("az", TensorProto::UINT8, {4});
  g.Node("MatMulInteger", {"a", "b", "az"}, {"y"});
  g.Output("y", TensorProto::INT32);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((4, 3), "uint8"), b: R.Tensor((3, 2), "int8"), az: R.Tensor((4,), "uint8")) -> R.Tensor((4, 2), "int32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.matmul_integer(a, b, az, R.const(0, "int8"))
        return y
)");
  OnnxGraph h(10);
  h.Input("a", TensorProto::UINT8, {4, 3}).Input("b", TensorProto::INT8, {3, 2});
  h.Input("az", TensorProto::INT8, {4});
  h.Node("MatMulInteger", {"a", "b", "az"}, {"y"});
  h.Output("y", TensorProto::INT32);
  ExpectImportError(h, {"R.matmul_integer", "'a_zero_point' is int8, 'a' is uint8"});
}

// ---------------------------------------------------------------- quantization

TEST(Quantize, PerAxisQuantizeAndDequantize) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 3}).Input("s", TensorProto::FLOAT, {3});
  g.Input("z", TensorProto::INT8, {3});
  g.Node("QuantizeLinear", {"x", "s", "z"}, {"q"});
  SetInt(g.Node("DequantizeLinear", {"q", "s", "z"}, {"y"}), "axis", -1);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), s: R.Tensor((3,), "float32"), z: R.Tensor((3,), "int8")) -> R.Tensor(("n", 3), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        q = R.quantize(x, s, z, axis=1)
        y = R.dequantize(q, s, z)
        return y
)");
}

TEST(Quantize, AbsentZeroPointIsAZeroOfTheQuantizedType) {
  OnnxGraph g(10);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("s", TensorProto::FLOAT, {});
  g.Node("QuantizeLinear", {"x", "s"}, {"q"});
  g.Node("DequantizeLinear", {"q", "s"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), s: R.Tensor((), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        q = R.quantize(x, s, R.const(0, "uint8"), axis=1, out_dtype="uint8")
        y = R.dequantize(q, s, R.const(0, "uint8"), axis=1)
        return y
)");
}

TEST(Quantize, BlockedInt4WithOutputDtype) {
  OnnxGraph g(21);
  g.Input("x", TensorProto::FLOAT16, {4, 6}).Input("s", TensorProto::FLOAT16, {4, 2});
  auto& n = g.Node("QuantizeLinear", {"x", "s"}, {"q"});
  SetInt(n, "block_size", 3);
  SetInt(n, "output_dtype", kInt4);
  g.Output("q", kInt4);
  EXPECT_EQ(Text(ImportedResult(g)), "R.Tensor((4, 6), \"int4\")");
  // The scale must have ceil(6 / block_size) entries along the axis.
  OnnxGraph h(21);
  h.Input("x", kInt4, {4, 6}).Input("s", TensorProto::FLOAT, {4, 3});
  auto& d = h.Node("DequantizeLinear", {"x", "s"}, {"y"});
  SetInt(d, "block_size", 4);
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"R.dequantize", "'scale' dimension 1 is 3, expected 2"});
}

TEST(Quantize, DequantizeOutputDtypeFromOpset23AndFloat8Data) {
  OnnxGraph g(23);
  g.Input("x", kFloat8E4M3FN, {5}).Input("s", TensorProto::FLOAT, {});
  SetInt(g.Node("DequantizeLinear", {"x", "s"}, {"y"}), "output_dtype", TensorProto::FLOAT16);
  g.Output("y", TensorProto::FLOAT16);
  EXPECT_EQ(Text(ImportedResult(g)), "R.Tensor((5,), \"float16\")");
}

TEST(Quantize, PerAxisScaleMustMatchTheAxis) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("s", TensorProto::FLOAT, {2});
  g.Node("QuantizeLinear", {"x", "s"}, {"q"});
  g.Output("q", TensorProto::UINT8);
  ExpectImportError(g, {"R.quantize", "'scale' has 2 elements for axis 1 of size 3"});
  OnnxGraph h(21);
  h.Input("x", TensorProto::FLOAT, {2, 3})
      .Input("s", TensorProto::FLOAT, {})
      .Input("z", TensorProto::INT8, {});
  SetInt(h.Node("QuantizeLinear", {"x", "s", "z"}, {"q"}), "output_dtype", TensorProto::UINT8);
  h.Output("q", TensorProto::UINT8);
  ExpectImportError(h, {"output_dtype uint8 differs from the zero point's int8"});
}

TEST(Quantize, DynamicQuantizeLinearHasThreeOutputs) {
  OnnxGraph g(11);
  g.Input("x", TensorProto::FLOAT, {"n", 4});
  g.Node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  g.Output("y", TensorProto::UINT8)
      .Output("scale", TensorProto::FLOAT)
      .Output("zp", TensorProto::UINT8);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")) -> R.Tuple(R.Tensor(("n", 4), "uint8"), R.Tensor((), "float32"), R.Tensor((), "uint8")):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y", "scale", "zp"]})
        y = R.dynamic_quantize(x)
        y_1 = y[0]
        scale = y[1]
        zp = y[2]
        outputs = (y_1, scale, zp)
        return outputs
)");
}

TEST(Quantize, QLinearMatMulTakesTheOutputZeroPointsType) {
  OnnxGraph g(10);
  g.Input("a", TensorProto::UINT8, {"n", 2, 4}).Input("as", TensorProto::FLOAT, {});
  g.Input("az", TensorProto::UINT8, {}).Input("b", TensorProto::INT8, {4, 3});
  g.Input("bs", TensorProto::FLOAT, {3}).Input("bz", TensorProto::INT8, {3});
  g.Input("ys", TensorProto::FLOAT, {}).Input("yz", TensorProto::INT8, {});
  g.Node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  g.Output("y", TensorProto::INT8);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", 2, 4), "uint8"), as_: R.Tensor((), "float32"), az: R.Tensor((), "uint8"), b: R.Tensor((4, 3), "int8"), bs: R.Tensor((3,), "float32"), bz: R.Tensor((3,), "int8"), ys: R.Tensor((), "float32"), yz: R.Tensor((), "int8")) -> R.Tensor(("n", 2, 3), "int8"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.qlinear_matmul(a, as_, az, b, bs, bz, ys, yz)
        return y
)");
  OnnxGraph h(10);
  h.Input("a", TensorProto::UINT8, {2, 4}).Input("as", TensorProto::FLOAT, {});
  h.Input("az", TensorProto::INT8, {}).Input("b", TensorProto::UINT8, {4, 3});
  h.Input("bs", TensorProto::FLOAT, {}).Input("bz", TensorProto::UINT8, {});
  h.Input("ys", TensorProto::FLOAT, {}).Input("yz", TensorProto::UINT8, {});
  h.Node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  h.Output("y", TensorProto::UINT8);
  ExpectImportError(h, {"R.qlinear_matmul", "'a_zero_point' is int8, 'a' is uint8"});
}

TEST(Quantize, ConvIntegerResolvesSameUpperPadding) {
  OnnxGraph g(10);
  g.Input("x", TensorProto::UINT8, {1, 2, 5, 5}).Input("w", TensorProto::UINT8, {4, 2, 3, 3});
  auto& n = g.Node("ConvInteger", {"x", "w"}, {"y"});
  SetString(n, "auto_pad", "SAME_UPPER");
  SetInts(n, "strides", {2, 2});
  g.Output("y", TensorProto::INT32);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 5, 5), "uint8"), w: R.Tensor((4, 2, 3, 3), "uint8")) -> R.Tensor((1, 4, 3, 3), "int32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.conv_integer(x, w, R.const(0, "uint8"), R.const(0, "uint8"), [2, 2], [1, 1, 1, 1], [1, 1])
        return y
)");
}

TEST(Quantize, QLinearConvWithGroupsAndBias) {
  OnnxGraph g(10);
  g.Input("x", TensorProto::INT8, {1, 4, "h", 6}).Input("xs", TensorProto::FLOAT, {});
  g.Input("xz", TensorProto::INT8, {}).Input("w", TensorProto::INT8, {6, 2, 1, 3});
  g.Input("ws", TensorProto::FLOAT, {6}).Input("wz", TensorProto::INT8, {6});
  g.Input("ys", TensorProto::FLOAT, {}).Input("yz", TensorProto::UINT8, {});
  g.Input("bias", TensorProto::INT32, {6});
  auto& n = g.Node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"}, {"y"});
  SetInt(n, "group", 2);
  SetInts(n, "pads", {0, 1, 0, 1});
  g.Output("y", TensorProto::UINT8);
  EXPECT_EQ(Text(ImportedResult(g)), "R.Tensor((1, 6, h, 6), \"uint8\")");
  OnnxGraph h(10);
  h.Input("x", TensorProto::UINT8, {1, 3, 5, 5}).Input("w", TensorProto::UINT8, {4, 2, 3, 3});
  h.Node("ConvInteger", {"x", "w"}, {"y"});
  h.Output("y", TensorProto::INT32);
  ExpectImportError(h, {"R.conv_integer", "data has 3 channels, weight expects 2 x 1 groups"});
}

}  // namespace
}  // namespace quilt::importers::onnx
