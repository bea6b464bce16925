// fold-constants: batch_norm folded into the conv2d before it, checked as IR and by running the
// compiled module with and without the fold.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <sstream>

#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/passes/pass_test_util.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt::passes {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::RunPass;

// s = gamma / sqrt(var + eps) = [1, 2]: W' = W * s, B' = (B - mean) * s + beta.
constexpr const char* kBefore = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"))
        e = R.expand_dims(R.const([1.0, 2.0], "float32"), axis=[0, 2, 3])
        a = R.add(c, e)
        y_bn = R.nn.batch_norm(a, R.const([2.0, 4.0], "float32"), R.const([0.5, -1.0], "float32"), R.const([3.0, 1.0], "float32"), R.const([3.0, 3.0], "float32"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        r = R.nn.relu(y)
        return r
)";

constexpr const char* kExpected = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[6.0, -2.0]]]], "float32"))
        y = R.add(c, R.const([[[[-1.5]], [[1.0]]]], "float32"))
        r = R.nn.relu(y)
        return r
)";

void ExpectUnchanged(const std::string& text) {
  ir::IRModule mod = Parse(text);
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", mod), mod));
}

TEST(FoldConstants, BatchNormAndBiasGoIntoTheConv) {
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", Parse(kBefore)), Parse(kExpected)));
}

TEST(FoldConstants, WithoutBiasTheShiftBecomesOne) {
  std::string before = kBefore;
  before.replace(before.find("        e = "),
                 before.find("        y_bn = ") - before.find("        e = "), "");
  before.replace(before.find("batch_norm(a,"), 13, "batch_norm(c,");
  std::string want = kExpected;
  want.replace(want.find("[[[[-1.5]], [[1.0]]]]"), 21, "[[[[-2.5]], [[-3.0]]]]");
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", Parse(before)), Parse(want)));
}

TEST(FoldConstants, OnlyTheInferenceFormIsFolded) {
  // training=True normalizes with the batch's statistics (TVM's default): not a fixed scale.
  for (const char* form : {"training=True", "training=False, center=False"}) {
    std::string text = kBefore;
    text.replace(text.find("training=False"), 14, form);
    std::string got = ir::PrintModule(RunPass("fold-constants", Parse(text)));
    EXPECT_NE(got.find("R.nn.batch_norm(a, "), std::string::npos) << form << "\n" << got;
    EXPECT_NE(got.find("[[[[1.0, 2.0]]], [[[3.0, -1.0]]]]"), std::string::npos) << form << "\n"
                                                                                << got;
  }
}

TEST(FoldConstants, RunningTwiceChangesNothing) {
  ir::IRModule once = RunPass("fold-constants", Parse(kBefore));
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", once), once));
}

TEST(FoldConstants, ParametersThatAreNotConstantsStay) {
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32"), g: R.Tensor((2,), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"))
        y_bn = R.nn.batch_norm(c, g, R.const([0.5, -1.0], "float32"), R.const([3.0, 1.0], "float32"), R.const([3.0, 3.0], "float32"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        return y
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32"), w: R.Tensor((2, 1, 1, 2), "float32")):
        c = R.nn.conv2d(x, w)
        y_bn = R.nn.batch_norm(c, R.const([2.0, 4.0], "float32"), R.const([0.5, -1.0], "float32"), R.const([3.0, 1.0], "float32"), R.const([3.0, 3.0], "float32"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        return y
)");
}

TEST(FoldConstants, AConvResultUsedTwiceStays) {
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"))
        y_bn = R.nn.batch_norm(c, R.const([2.0, 4.0], "float32"), R.const([0.5, -1.0], "float32"), R.const([3.0, 1.0], "float32"), R.const([3.0, 3.0], "float32"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        z = R.add(y, c)
        return z
)");
  // The bias add's result used twice.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"))
        a = R.add(c, R.const([[[1.0]], [[2.0]]], "float32"))
        y_bn = R.nn.batch_norm(a, R.const([2.0, 4.0], "float32"), R.const([0.5, -1.0], "float32"), R.const([3.0, 1.0], "float32"), R.const([3.0, 3.0], "float32"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        z = R.add(y, a)
        return z
)");
}

TEST(FoldConstants, ADataflowVariableIsNotReadOutsideItsBlock) {
  // Folding would make y (outside the block) read the block's c.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        with R.dataflow():
            c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"))
            a = R.add(c, R.const([[[1.0]], [[2.0]]], "float32"))
            R.output(a)
        y_bn = R.nn.batch_norm(a, R.const([2.0, 4.0], "float32"), R.const([0.5, -1.0], "float32"), R.const([3.0, 1.0], "float32"), R.const([3.0, 3.0], "float32"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        return y
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        with R.dataflow():
            u = R.nn.relu(x)
            h = R.divide(u, R.const(6.0, "float32"))
            R.output(h)
        c = R.nn.conv2d(h, R.const([[[[1.0]]]], "float32"))
        return c
)");
}

TEST(FoldConstants, OpsOnTwoVDevicesStay) {
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm", 0), I.vdevice("llvm", 1)]})

    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32", "llvm:0")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"))
        d = R.to_vdevice(c, "llvm:1")
        y_bn = R.nn.batch_norm(d, R.const([2.0, 4.0], "float32"), R.const([0.5, -1.0], "float32"), R.const([3.0, 1.0], "float32"), R.const([3.0, 3.0], "float32"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        return y
)");
}

TEST(FoldConstants, OtherDtypesStay) {
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float64")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float64"))
        y_bn = R.nn.batch_norm(c, R.const([2.0, 4.0], "float64"), R.const([0.5, -1.0], "float64"), R.const([3.0, 1.0], "float64"), R.const([3.0, 3.0], "float64"), axis=1, epsilon=1.0, training=False)
        y = y_bn[0]
        return y
)");
}

TEST(FoldConstants, AReshapeOrExpandDimsOfAConstantBecomesAConstant) {
  ir::IRModule before = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 2, 2), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0]], [[2.0]]], [[[3.0]], [[-1.0]]]], "float32"))
        b = R.reshape(R.const([1.0, 2.0], "float32"), R.shape([1, 2, 1, 1]))
        a = R.add(c, b)
        e = R.expand_dims(R.const([[0.5], [0.25]], "float32"), axis=[0])
        s = R.reshape(e, R.shape([2, 1, 1]))
        y = R.multiply(a, s)
        i = R.reshape(R.const([[3, 4], [5, 6]], "int64"), R.shape([4]))
        k = R.add(i, R.const(1, "int64"))
        return (y, k)
)");
  // The bias and the scale, constants now, then go into the conv (FoldAffineAfterConv).
  ir::IRModule want = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 2, 2), "float32")):
        c = R.nn.conv2d(x, R.const([[[[0.5]], [[1.0]]], [[[0.75]], [[-0.25]]]], "float32"))
        y = R.add(c, R.const([[[[0.5]], [[0.5]]]], "float32"))
        i = R.const([3, 4, 5, 6], "int64")
        k = R.add(i, R.const(1, "int64"))
        return (y, k)
)");
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", before), want));
}

// Inside an If branch too (a Gemm(transB=1) in a branch: its weight transposed once, not at
// every run); a branch's result stays a call, as a function's does.
TEST(FoldConstants, APermuteDimsOfAConstantInAnIfBranchBecomesAConstant) {
  ir::IRModule before = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2), "float32"), flag: R.Tensor((), "bool")):
        if flag:
            w = R.permute_dims(R.const([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float32"), axes=[1, 0])
            y = R.matmul(x, w)
        else:
            y = R.permute_dims(R.const([[1.0, 2.0, 3.0]], "float32"), axes=[1, 0])
        return y
)");
  ir::IRModule want = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2), "float32"), flag: R.Tensor((), "bool")):
        if flag:
            w = R.const([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]], "float32")
            y = R.matmul(x, w)
        else:
            y = R.permute_dims(R.const([[1.0, 2.0, 3.0]], "float32"), axes=[1, 0])
        return y
)");
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", before), want));
}

TEST(FoldConstants, AReshapeOfANonConstantOrToAnUnknownShapeOrReturnedStays) {
  // Of a parameter.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 2, 2), "float32"), p: R.Tensor((2,), "float32")):
        b = R.reshape(p, R.shape([1, 2, 1, 1]))
        a = R.add(x, b)
        return a
)");
  // Returned as it is.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 2, 2), "float32")):
        b = R.reshape(R.const([1.0, 2.0], "float32"), R.shape([1, 2, 1, 1]))
        a = R.add(x, b)
        return (a, b)
)");
  // A shape that is not known.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2), "float32"), s: R.Shape(ndim=2)):
        b = R.reshape(R.const([1.0, 2.0], "float32"), s)
        a = R.add(x, b)
        return a
)");
}

TEST(FoldConstants, AScalarMultiplyOrDivideGoesIntoTheConvAfterIt) {
  ir::IRModule before = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        h = R.divide(x, R.const(4.0, "float32"))
        c = R.nn.conv2d(h, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"), padding=[1, 1, 1, 1])
        g = R.multiply(R.const(2.0, "float32"), c)
        d = R.nn.conv2d(g, R.const([[[[1.0]], [[0.5]]]], "float32"))
        return d
)");
  ir::IRModule want = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[0.25, 0.5]]], [[[0.75, -0.25]]]], "float32"), padding=[1, 1, 1, 1])
        d = R.nn.conv2d(c, R.const([[[[2.0]], [[1.0]]]], "float32"))
        return d
)");
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", before), want));
}

TEST(FoldConstants, AScaleThatIsNotOneConstantOrHasOtherUsesStays) {
  // Per channel, not a scalar.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32")):
        h = R.multiply(x, R.const([[[2.0]], [[3.0]]], "float32"))
        c = R.nn.conv2d(h, R.const([[[[1.0]], [[2.0]]]], "float32"))
        return c
)");
  // Used twice.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        h = R.divide(x, R.const(6.0, "float32"))
        c = R.nn.conv2d(h, R.const([[[[1.0]]]], "float32"))
        d = R.add(c, h)
        return d
)");
  // The scalar divided by the tensor.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        h = R.divide(R.const(6.0, "float32"), x)
        c = R.nn.conv2d(h, R.const([[[[1.0]]]], "float32"))
        return c
)");
}

// A learnable affine block after a conv's bias (PP-LCNetV3): its scalar multiply goes into the
// weight and the bias, its add into the bias; a per-channel multiply of a conv without a bias
// into the weight alone.
TEST(FoldConstants, AScaleAndShiftAfterAConvGoIntoItsWeightAndBias) {
  ir::IRModule before = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float32"))
        a = R.add(c, R.const([[[[1.0]], [[-2.0]]]], "float32"))
        m = R.multiply(R.const([0.5], "float32"), a)
        t = R.add(m, R.const(0.25, "float32"))
        r = R.nn.relu(t)
        d = R.nn.conv2d(r, R.const([[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]], "float32"))
        g = R.multiply(d, R.const([[[2.0]], [[-4.0]]], "float32"))
        return g
)");
  ir::IRModule want = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[0.5, 1.0]]], [[[1.5, -0.5]]]], "float32"))
        t = R.add(c, R.const([[[[0.75]], [[-0.75]]]], "float32"))
        r = R.nn.relu(t)
        g = R.nn.conv2d(r, R.const([[[[2.0]], [[4.0]]], [[[-12.0]], [[-16.0]]]], "float32"))
        return g
)");
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", before), want));
}

TEST(FoldConstants, AScaleOrShiftAfterAConvThatCannotFoldStays) {
  // A scale of zero, for one channel or all (the conv's inf or NaN would become 0).
  for (const char* k : {"0.0", "[[[2.0]], [[0.0]]]"}) {
    ExpectUnchanged(std::string(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0]]], [[[2.0]]]], "float32"))
        m = R.multiply(c, R.const()") +
                    k + R"(, "float32"))
        return m
)");
  }
  // The conv's result read elsewhere too; its bias add's.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0]]]], "float32"))
        m = R.multiply(c, R.const(2.0, "float32"))
        s = R.add(m, c)
        return s
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0]]]], "float32"))
        a = R.add(c, R.const(1.0, "float32"))
        t = R.add(a, R.const(2.0, "float32"))
        s = R.multiply(t, a)
        return s
)");
  // Not one value per output channel (per row), a scale that is not a constant, a weight that is
  // not one.
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 2, 2), "float32"), w: R.Tensor((1, 1, 1, 1), "float32")):
        c = R.nn.conv2d(x, R.const([[[[1.0]]]], "float32"))
        m = R.multiply(c, R.const([[2.0], [3.0]], "float32"))
        d = R.nn.conv2d(m, R.const([[[[1.0]]]], "float32"))
        n = R.multiply(d, x)
        e = R.nn.conv2d(n, w)
        o = R.multiply(e, R.const(2.0, "float32"))
        return o
)");
}

// Numerics: random conv (plain, with a bias add, depthwise, after a scalar multiply or divide) +
// batch_norm, compiled with and without the fold and run on random inputs.
std::string Floats(std::mt19937& rng, int n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::ostringstream s;
  s.precision(9);
  s << "[";
  for (int i = 0; i < n; ++i) s << (i ? ", " : "") << d(rng);
  s << "]";
  return s.str();
}

std::string Weight(std::mt19937& rng, int m, int c, int k) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::ostringstream s;
  s.precision(9);
  s << "[";
  for (int i = 0; i < m; ++i) {
    s << (i ? ", " : "") << "[";
    for (int j = 0; j < c; ++j) {
      s << (j ? ", " : "") << "[";
      for (int y = 0; y < k; ++y) {
        s << (y ? ", " : "") << "[";
        for (int x = 0; x < k; ++x) s << (x ? ", " : "") << d(rng);
        s << "]";
      }
      s << "]";
    }
    s << "]";
  }
  s << "]";
  return s.str();
}

// `out = batch_norm(in)[0]` of m random channels, as two bindings.
std::string BatchNorm(std::mt19937& rng, const std::string& in, int m, const std::string& out) {
  return out + "_bn = R.nn.batch_norm(" + in + ", R.const(" + Floats(rng, m, 0.5f, 2) +
         ", \"float32\"), R.const(" + Floats(rng, m, -1, 1) + ", \"float32\"), R.const(" +
         Floats(rng, m, -1, 1) + ", \"float32\"), R.const(" + Floats(rng, m, 0.1f, 2) +
         ", \"float32\"), axis=1, epsilon=1e-05, training=False)\n        " + out + " = " + out +
         "_bn[0]";
}

std::string RandomModel(std::mt19937& rng) {
  auto bn = [&](const std::string& in, int m, const std::string& out) {
    return BatchNorm(rng, in, m, out);
  };
  return R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 9, 11), "float32")):
        c1 = R.nn.conv2d(x, R.const()" +
         Weight(rng, 8, 3, 3) + R"(, "float32"), strides=[2, 2], padding=[1, 1, 1, 1])
        )" +
         bn("c1", 8, "y1") +
         R"(
        h1 = R.nn.relu(y1)
        s1 = R.multiply(h1, R.const(0.75, "float32"))
        c2 = R.nn.conv2d(s1, R.const()" +
         Weight(rng, 8, 1, 3) + R"(, "float32"), padding=[1, 1, 1, 1], groups=8)
        e2 = R.expand_dims(R.const()" +
         Floats(rng, 8, -1, 1) + R"(, "float32"), axis=[0, 2, 3])
        a2 = R.add(c2, e2)
        )" +
         bn("a2", 8, "y2") +
         R"(
        q2 = R.divide(y2, R.const(6.0, "float32"))
        c3 = R.nn.conv2d(q2, R.const()" +
         Weight(rng, 4, 8, 1) + R"(, "float32"))
        )" +
         bn("c3", 4, "y3") +
         R"(
        c4 = R.nn.conv2d(y3, R.const()" +
         Weight(rng, 4, 4, 1) + R"(, "float32"))
        b4 = R.reshape(R.const()" +
         Floats(rng, 4, -1, 1) + R"(, "float32"), R.shape([1, 4, 1, 1]))
        a4 = R.add(c4, b4)
        return a4
)";
}

// The module compiled with or without fold-constants.
Expected<compiler::Compiled> CompileWithFold(const ir::IRModule& mod, bool fold) {
  compiler::CompileOptions options;
  options.fold_constants = fold;
  return compiler::Compile(mod, options);
}

// Runs `package` once on `inputs`; its first output's floats.
std::vector<float> RunWith(const std::vector<uint8_t>& package,
                           const std::vector<rt::NamedTensor>& inputs) {
  std::unique_ptr<rt::LoadedPackage> loaded;
  rt::Status st = rt::LoadedPackage::FromMemory(package.data(), package.size(), &loaded);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return {};
  std::shared_ptr<const rt::LoadedPackage> p(std::move(loaded));
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(p, {}, &s).ok());
  if (!s) return {};
  std::vector<rt::OwnedTensor> out;
  st = s->Run(inputs, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok() || out.empty()) return {};
  return test::Floats(out[0]);
}

// Runs `package` once on input x (of `shape`); its one output.
std::vector<float> RunOnce(const std::vector<uint8_t>& package, std::vector<float>& x,
                           rt::Shape shape = {2, 3, 9, 11}) {
  return RunWith(package, {test::Input("x", x, std::move(shape))});
}

// `mod` (input x of 2 x 3 x 9 x 11) compiled with and without the fold: the plain one keeps its
// batch norms, the folded one none, and on three random inputs the folded one's `outputs` values
// are the plain one's. The folded module's text, for more checks.
std::string ExpectFoldedComputesThePlain(const ir::IRModule& mod, size_t outputs,
                                         std::mt19937& rng) {
  Expected<compiler::Compiled> plain = CompileWithFold(mod, false);
  EXPECT_TRUE(plain) << plain.error().ToString();
  Expected<compiler::Compiled> folded = CompileWithFold(mod, true);
  EXPECT_TRUE(folded) << folded.error().ToString();
  if (!plain || !folded) return "";
  EXPECT_NE(ir::PrintModule(plain->module).find("batch_norm"), std::string::npos);
  std::string text = ir::PrintModule(folded->module);
  EXPECT_EQ(text.find("batch_norm"), std::string::npos) << text;
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<float> x(2 * 3 * 9 * 11);
    std::uniform_real_distribution<float> d(-2, 2);
    for (float& v : x) v = d(rng);
    std::vector<float> want = RunOnce(plain->package, x);
    std::vector<float> got = RunOnce(folded->package, x);
    EXPECT_EQ(got.size(), want.size());
    EXPECT_EQ(got.size(), outputs);
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4 * std::fabs(want[i]) + 1e-5) << i;
    }
  }
  return text;
}

TEST(FoldConstants, TheFoldedModuleComputesWhatTheUnfoldedOneDoes) {
  std::mt19937 rng(7);
  std::string text = ExpectFoldedComputesThePlain(Parse(RandomModel(rng)), 2u * 4 * 5 * 6, rng);
  EXPECT_EQ(text.find("expand_dims"), std::string::npos) << text;
  EXPECT_EQ(text.find("reshape"), std::string::npos) << text;
  EXPECT_EQ(text.find("R.divide"), std::string::npos) << text;
  EXPECT_EQ(text.find("R.multiply"), std::string::npos) << text;
}

// A transposed conv's batch_norm folds as a conv's, each output channel scaling the weights
// that feed it: W (C, M / groups, kh, kw), output channel g * M / groups + j from W[i, j] for
// the input channels i of group g. s = [1, 2] as in kBefore: one group (the second output
// channel's weights doubled) and two (the second input channel's).
TEST(FoldConstants, BatchNormGoesIntoATransposedConv) {
  // kBefore or kExpected with its conv made a transposed conv of `weight` (and `groups`) over
  // `channels` input channels.
  auto transposed = [](std::string text, const std::string& channels, const std::string& weight,
                       const std::string& groups) {
    size_t at = text.find("(1, 1, 4, 4)");
    text.replace(at, 12, "(1, " + channels + ", 4, 4)");
    at = text.find("        c = R.nn.conv2d(");
    text.replace(
        at, text.find('\n', at) - at,
        "        c = R.nn.conv2d_transpose(x, R.const(" + weight + ", \"float32\")" + groups + ")");
    return text;
  };
  // One group: W (1, 2, 1, 2), the second output channel's weights doubled.
  ir::IRModule got = RunPass(
      "fold-constants", Parse(transposed(kBefore, "1", "[[[[1.0, 2.0]], [[3.0, -1.0]]]]", "")));
  EXPECT_TRUE(
      ModulesEqual(got, Parse(transposed(kExpected, "1", "[[[[1.0, 2.0]], [[6.0, -2.0]]]]", ""))))
      << ir::PrintModule(got);
  // Two groups: W (2, 1, 1, 2), the second input channel's weights (its group's one output).
  got = RunPass("fold-constants",
                Parse(transposed(kBefore, "2", "[[[[1.0, 2.0]]], [[[3.0, -1.0]]]]", ", groups=2")));
  EXPECT_TRUE(ModulesEqual(
      got, Parse(transposed(kExpected, "2", "[[[[1.0, 2.0]]], [[[6.0, -2.0]]]]", ", groups=2"))))
      << ir::PrintModule(got);
}

// Numerics: random transposed convs (4x4 of stride 2 with a bias add; 3x3 in three groups) +
// batch_norm, compiled with and without the fold.
TEST(FoldConstants, TheFoldedTransposedConvComputesWhatTheUnfoldedOneDoes) {
  std::mt19937 rng(11);
  auto bn = [&](const std::string& in, int m, const std::string& out) {
    return BatchNorm(rng, in, m, out);
  };
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 9, 11), "float32")):
        c1 = R.nn.conv2d_transpose(x, R.const()" +
                           Weight(rng, 3, 6, 4) +
                           R"(, "float32"), strides=[2, 2], padding=[1, 1, 1, 1])
        e1 = R.expand_dims(R.const()" +
                           Floats(rng, 6, -1, 1) + R"(, "float32"), axis=[0, 2, 3])
        a1 = R.add(c1, e1)
        )" + bn("a1", 6, "y1") +
                           R"(
        h1 = R.nn.relu(y1)
        c2 = R.nn.conv2d_transpose(h1, R.const()" +
                           Weight(rng, 6, 1, 3) + R"(, "float32"), padding=[1, 1, 1, 1], groups=3)
        )" + bn("c2", 3, "y2") +
                           R"(
        return y2
)");
  ExpectFoldedComputesThePlain(mod, 2u * 3 * 18 * 22, rng);
}

}  // namespace
}  // namespace quilt::passes

namespace quilt::passes {
namespace {

// Layer normalization over the last axis as PyTorch exports it before opset 17, with the scale
// and shift; `STEP_SQ` is how the deviation is squared.
constexpr const char* kLayerNormSteps = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32")):
        m = R.mean(x, axis=[-1], keepdims=True)
        d = R.subtract(x, m)
        p = STEP_SQ
        v = R.mean(p, axis=[-1], keepdims=True)
        e = R.add(v, R.const(0.001, "float32"))
        s = R.sqrt(e)
        n = R.divide(d, s)
        g = R.multiply(n, R.const([0.5, 2.0, -1.0, 1.5], "float32"))
        b = R.add(g, R.const([0.25, 0.0, 1.0, -2.0], "float32"))
        return b
)";

std::string LayerNormSteps(const std::string& square) {
  std::string text = kLayerNormSteps;
  text.replace(text.find("STEP_SQ"), 7, square);
  return text;
}

// The folded scale and shift against float64: a 1x1 conv of 8 channels, its bias, a per-channel
// scale and a scalar shift, compiled with and without the fold: the fold leaves no multiply, and
// both are within float32's rounding of the float64 values (the fold rounds W * s and B * s + t
// once each, the steps each product and sum).
TEST(FoldConstants, TheFoldedScaleAndShiftAreAsCloseToFloat64AsTheSteps) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1, 1);
  const int m = 8, c = 3, pixels = 9 * 11;
  std::vector<float> w(m * c), b(m), s(m);
  for (float& v : w) v = d(rng);
  for (float& v : b) v = d(rng);
  for (float& v : s) v = 0.25f + std::fabs(d(rng));
  const float t = 0.375f;
  std::ostringstream ws, bs, ss;
  for (std::ostringstream* o : {&ws, &bs, &ss}) o->precision(9);
  ws << "[";
  bs << "[";
  ss << "[";
  for (int o = 0; o < m; ++o) {
    ws << (o ? ", " : "") << "[";
    for (int i = 0; i < c; ++i) ws << (i ? ", " : "") << "[[" << w[o * c + i] << "]]";
    ws << "]";
    bs << (o ? ", " : "") << "[[" << b[o] << "]]";
    ss << (o ? ", " : "") << "[[" << s[o] << "]]";
  }
  ws << "]";
  bs << "]";
  ss << "]";
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 9, 11), "float32")):
        c = R.nn.conv2d(x, R.const()" +
                           ws.str() + R"(, "float32"))
        a = R.add(c, R.const()" +
                           bs.str() + R"(, "float32"))
        k = R.multiply(a, R.const()" +
                           ss.str() + R"(, "float32"))
        y = R.add(R.const(0.375, "float32"), k)
        return y
)");
  Expected<compiler::Compiled> plain = CompileWithFold(mod, false);
  ASSERT_TRUE(plain) << plain.error().ToString();
  Expected<compiler::Compiled> folded = CompileWithFold(mod, true);
  ASSERT_TRUE(folded) << folded.error().ToString();
  std::string text = ir::PrintModule(folded->module);
  EXPECT_EQ(text.find("R.multiply"), std::string::npos) << text;
  EXPECT_NE(ir::PrintModule(plain->module).find("R.multiply"), std::string::npos);
  std::vector<float> x(2 * c * pixels);
  for (float& v : x) v = d(rng);
  std::vector<float> want_plain = RunOnce(plain->package, x);
  std::vector<float> got = RunOnce(folded->package, x);
  ASSERT_EQ(got.size(), static_cast<size_t>(2 * m * pixels));
  ASSERT_EQ(want_plain.size(), got.size());
  double worst_plain = 0, worst_folded = 0;
  for (int n = 0; n < 2; ++n) {
    for (int o = 0; o < m; ++o) {
      for (int p = 0; p < pixels; ++p) {
        double sum = b[o];
        for (int i = 0; i < c; ++i) {
          sum += static_cast<double>(w[o * c + i]) * x[(n * c + i) * pixels + p];
        }
        const double ref = sum * s[o] + t;
        const size_t at = static_cast<size_t>((n * m + o) * pixels + p);
        // Each float32 result within a few roundings of the terms' magnitude.
        double scale = std::fabs(b[o] * s[o]) + t;
        for (int i = 0; i < c; ++i) {
          scale +=
              std::fabs(static_cast<double>(w[o * c + i]) * x[(n * c + i) * pixels + p] * s[o]);
        }
        worst_plain = std::max(worst_plain, std::fabs(want_plain[at] - ref) / scale);
        worst_folded = std::max(worst_folded, std::fabs(got[at] - ref) / scale);
      }
    }
  }
  EXPECT_LT(worst_plain, 4 * 0x1p-24);
  EXPECT_LT(worst_folded, 4 * 0x1p-24);
}

TEST(FoldConstants, ALayerNormWrittenOutInStepsBecomesOneOp) {
  constexpr const char* kWant = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32")):
        b = R.nn.layer_norm(x, R.const([0.5, 2.0, -1.0, 1.5], "float32"), R.const([0.25, 0.0, 1.0, -2.0], "float32"), axes=[2], epsilon=0.0010000000474974513)
        return b
)";
  for (const char* square : {"R.power(d, R.const(2.0, \"float32\"))", "R.multiply(d, d)"}) {
    EXPECT_TRUE(
        ModulesEqual(RunPass("fold-constants", Parse(LayerNormSteps(square))), Parse(kWant)))
        << square;
  }
}

TEST(FoldConstants, ALayerNormWithoutScaleOrShiftGetsOnesAndZeros) {
  std::string text = LayerNormSteps("R.power(d, R.const(2.0, \"float32\"))");
  text.replace(text.find("        g = "), text.find("        return b") - text.find("        g = "),
               "");
  text.replace(text.find("return b"), 8, "return n");
  std::string got = ir::PrintModule(RunPass("fold-constants", Parse(text)));
  EXPECT_NE(got.find("n: R.Tensor((2, 3, 4), \"float32\") = R.nn.layer_norm(x, R.const([1.0, 1.0, "
                     "1.0, 1.0], \"float32\"), R.const([0.0, 0.0, 0.0, 0.0], \"float32\"), [2]"),
            std::string::npos)
      << got;
  EXPECT_EQ(got.find("R.mean"), std::string::npos) << got;
}

TEST(FoldConstants, ALayerNormOfRowsOnlyTheRunKnowsTakesTheirLengthFromItsScale) {
  // As a vision transformer whose token count is computed: x's last dim is not static.
  std::string text = LayerNormSteps("R.power(d, R.const(2.0, \"float32\"))");
  text.replace(text.find("x: R.Tensor((2, 3, 4), \"float32\")"), 33,
               "x: R.Tensor(ndim=3, dtype=\"float32\")");
  std::string got = ir::PrintModule(RunPass("fold-constants", Parse(text)));
  EXPECT_NE(got.find("R.nn.layer_norm(x, R.const([0.5, 2.0, -1.0, 1.5], \"float32\")"),
            std::string::npos)
      << got;
  // Without a scale or shift nothing says the rows' length: the steps stay.
  text.replace(text.find("        g = "), text.find("        return b") - text.find("        g = "),
               "");
  text.replace(text.find("return b"), 8, "return n");
  got = ir::PrintModule(RunPass("fold-constants", Parse(text)));
  EXPECT_EQ(got.find("layer_norm"), std::string::npos) << got;
}

TEST(FoldConstants, ALayerNormWhoseStepsAreReadElsewhereOrThatIsNotOneStays) {
  const std::string square = "R.power(d, R.const(2.0, \"float32\"))";
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string text = LayerNormSteps(square);
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  const std::string kCases[] = {
      edited("return b", "return (b, v)"),                               // variance read
      edited("return b", "return (b, d)"),                               // deviation read
      edited("R.const(2.0, \"float32\")", "R.const(3.0, \"float32\")"),  // not a square
      edited("R.mean(p, axis=[-1]", "R.mean(p, axis=[1]"),               // other axes
      edited("R.const(0.001, \"float32\")", "R.const([0.001, 0.001, 0.001, 0.001], \"float32\")"),
      edited("R.subtract(x, m)", "R.subtract(m, x)"),  // m - x
  };
  for (const std::string& text : kCases) {
    std::string got = ir::PrintModule(RunPass("fold-constants", Parse(text)));
    EXPECT_EQ(got.find("layer_norm"), std::string::npos) << text << "\n" << got;
  }
}

TEST(FoldConstants, ALayerNormInAnIfBranchFoldsAndTheBranchLosesItsDeadSteps) {
  std::string body = LayerNormSteps("R.multiply(d, d)");
  std::string steps = body.substr(body.find("        m = "),
                                  body.find("        return b") - body.find("        m = "));
  std::string indented;
  for (size_t at = 0; at < steps.size();) {
    size_t end = steps.find('\n', at);
    indented += "    " + steps.substr(at, end - at + 1);
    at = end + 1;
  }
  std::string text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), c: R.Tensor((), "bool")):
        if c:
)" + indented + R"(            r = b
        else:
            r = x
        return r
)";
  std::string got = ir::PrintModule(RunPass("fold-constants", Parse(text)));
  EXPECT_NE(got.find("R.nn.layer_norm(x, "), std::string::npos) << got;
  EXPECT_EQ(got.find("R.mean"), std::string::npos) << got;
  EXPECT_EQ(got.find("R.sqrt"), std::string::npos) << got;
}

TEST(FoldConstants, TheFoldedLayerNormIsAsCloseToFloat64AsTheSteps) {
  ir::IRModule mod = Parse(LayerNormSteps("R.power(d, R.const(2.0, \"float32\"))"));
  Expected<compiler::Compiled> plain = CompileWithFold(mod, false);
  ASSERT_TRUE(plain) << plain.error().ToString();
  Expected<compiler::Compiled> folded = CompileWithFold(mod, true);
  ASSERT_TRUE(folded) << folded.error().ToString();
  ASSERT_NE(ir::PrintModule(folded->module).find("layer_norm"), std::string::npos);
  const double gamma[4] = {0.5, 2.0, -1.0, 1.5}, beta[4] = {0.25, 0.0, 1.0, -2.0};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-3, 5);
  std::vector<float> x(24);
  for (float& f : x) f = dist(rng);
  std::vector<float> a = RunOnce(plain->package, x, {2, 3, 4});
  std::vector<float> b = RunOnce(folded->package, x, {2, 3, 4});
  ASSERT_EQ(a.size(), 24u);
  ASSERT_EQ(b.size(), 24u);
  for (int row = 0; row < 6; ++row) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += x[row * 4 + i] / 4.0;
    for (int i = 0; i < 4; ++i) var += (x[row * 4 + i] - mean) * (x[row * 4 + i] - mean) / 4.0;
    for (int i = 0; i < 4; ++i) {
      double want = (x[row * 4 + i] - mean) / std::sqrt(var + double(0.001f)) * gamma[i] + beta[i];
      EXPECT_NEAR(a[row * 4 + i], want, 2e-6 * (1 + std::fabs(want))) << row << "," << i;
      EXPECT_NEAR(b[row * 4 + i], want, 2e-6 * (1 + std::fabs(want))) << row << "," << i;
    }
  }
}

}  // namespace
}  // namespace quilt::passes

namespace quilt::passes {
namespace {

// An int8 table cast and scaled per row, and a bias along the rows' other dim, then rows taken
// from it (a quantized embedding): the rows are taken from the constants first.
constexpr const char* kTable = R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2, 3), "int64")):
        f = R.astype(R.const([[1, -2, 3], [4, 5, -6], [7, 8, 9], [-10, 11, 12]], "int8"), "float32")
        w = R.multiply(f, R.const([[0.5], [0.25], [2.0], [-1.0]], "float32"))
        b = R.add(w, R.const([1.0, 0.0, -1.0], "float32"))
        y = R.take(b, ids, axis=0)
        return y
)";

TEST(FoldConstants, RowsAreTakenFromTheConstantsATableIsMadeOf) {
  ir::IRModule want = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2, 3), "int64")):
        q = R.take(R.const([[1, -2, 3], [4, 5, -6], [7, 8, 9], [-10, 11, 12]], "int8"), ids, axis=0)
        f = R.astype(q, "float32")
        s = R.take(R.const([[0.5], [0.25], [2.0], [-1.0]], "float32"), ids, axis=0)
        w = R.multiply(f, s)
        y = R.add(w, R.const([1.0, 0.0, -1.0], "float32"))
        return y
)");
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", Parse(kTable)), want));
}

// It stays where a step of the table is read elsewhere, where a constant is broadcast along the
// rows from a dim of 1, where the table is not made of constants alone, and for a constant table.
TEST(FoldConstants, RowsOfATableReadElsewhereOrNotMadeOfConstantsStay) {
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2,), "int64")):
        w = R.multiply(R.const([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float32"), R.const(2.0, "float32"))
        y = R.take(w, ids, axis=0)
        return (y, w)
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2,), "int64")):
        w = R.multiply(R.const([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float32"), R.const([[2.0, 3.0]], "float32"))
        y = R.take(w, ids, axis=0)
        return y
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2,), "int64"), t: R.Tensor((3, 2), "float32")):
        w = R.multiply(t, R.const([[2.0], [3.0], [4.0]], "float32"))
        y = R.take(w, ids, axis=0)
        return y
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2,), "int64")):
        y = R.take(R.const([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float32"), ids, axis=0)
        return y
)");
}

// A template: Q (5 x 7 int8) and S (7 floats) are filled in.
constexpr const char* kScaledTable = R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((2, 2), "int64")):
        f = R.astype(R.const(Q, "int8"), "float32")
        w = R.multiply(f, R.const(S, "float32"))
        y = R.take(w, ids, axis=1)
        return y
)";

// Along another axis too (a scale of one dim spans it); the rows computed are the ones the whole
// table has, bit for bit, negative indices too, and an index out of range still fails the run.
TEST(FoldConstants, RowsTakenFirstAreTheTablesRows) {
  std::mt19937 rng(71);
  std::uniform_int_distribution<int> i8(-128, 127);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::ostringstream q, s;
  q << "[";
  for (int i = 0; i < 5; ++i) {
    q << (i ? ", [" : "[");
    for (int j = 0; j < 7; ++j) q << (j ? ", " : "") << i8(rng);
    q << "]";
  }
  q << "]";
  s.precision(9);
  s << "[";
  for (int j = 0; j < 7; ++j) s << (j ? ", " : "") << u(rng);
  s << "]";
  std::string text = kScaledTable;
  text.replace(text.find("Q, "), 1, q.str());
  text.replace(text.find("S, "), 1, s.str());
  ir::IRModule mod = Parse(text);
  EXPECT_EQ(ir::PrintModule(RunPass("fold-constants", mod)).find("R.take(w"), std::string::npos);
  Expected<compiler::Compiled> plain = CompileWithFold(mod, false);
  ASSERT_TRUE(plain) << plain.error().ToString();
  Expected<compiler::Compiled> folded = CompileWithFold(mod, true);
  ASSERT_TRUE(folded) << folded.error().ToString();
  auto run = [](const std::vector<uint8_t>& package, std::vector<int64_t> ids,
                std::vector<float>* values) {
    std::unique_ptr<rt::LoadedPackage> loaded;
    rt::Status st = rt::LoadedPackage::FromMemory(package.data(), package.size(), &loaded);
    EXPECT_TRUE(st.ok()) << st.message();
    std::unique_ptr<rt::Session> session;
    EXPECT_TRUE(rt::Session::Create(std::shared_ptr<const rt::LoadedPackage>(std::move(loaded)), {},
                                    &session)
                    .ok());
    std::vector<rt::OwnedTensor> out;
    st = session->Run({test::Input("ids", ids, {2, 2})}, &out);
    if (st.ok()) *values = test::Floats(out[0]);
    return st;
  };
  for (const std::vector<int64_t>& ids :
       {std::vector<int64_t>{0, 6, 3, -1}, std::vector<int64_t>{2, 2, 5, 1}}) {
    std::vector<float> want, got;
    rt::Status a = run(plain->package, ids, &want), b = run(folded->package, ids, &got);
    ASSERT_TRUE(a.ok()) << a.message();
    ASSERT_TRUE(b.ok()) << b.message();
    ASSERT_EQ(got.size(), 5u * 2 * 2);
    ASSERT_EQ(got, want);
  }
  std::vector<float> out;
  rt::Status bad = run(folded->package, {0, 7, 1, 2}, &out);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("7"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace quilt::passes

namespace quilt::passes {
namespace {

// A one-hot encoding times a constant matrix (an embedding as exporters write it for Keras).
constexpr const char* kOneHot = R"(
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((2, 3), "int32")):
        o = R.one_hot(i, R.prim_value(3), R.const([0.0, 1.0], "float32"))
        r = R.reshape(o, R.shape([6, 3]))
        y = R.matmul(r, R.const([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float32"))
        return y
)";

TEST(FoldConstants, AOneHotEncodingTimesAConstantTakesItsRows) {
  ir::IRModule want = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((2, 3), "int32")):
        k = R.add(i, R.const(4, "int32"))
        f = R.reshape(k, R.shape([6]))
        y = R.take(R.const([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [0.0, 0.0]], "float32"), f, axis=0, mode="clip")
        return y
)");
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", Parse(kOneHot)), want));
}

// It stays for other on / off values, a weight with an infinity, an encoding read elsewhere, a
// reshape that changes the last dim, and a product on another device than the CPU.
TEST(FoldConstants, OtherOneHotProductsStay) {
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((4,), "int32")):
        o = R.one_hot(i, R.prim_value(2), R.const([0.0, 2.0], "float32"))
        y = R.matmul(o, R.const([[1.0, 2.0], [3.0, 4.0]], "float32"))
        return y
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((4,), "int32")):
        o = R.one_hot(i, R.prim_value(2), R.const([0.0, 1.0], "float32"))
        y = R.matmul(o, R.const([[1.0, 1e39], [3.0, 4.0]], "float32"))
        return y
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((4,), "int32")):
        o = R.one_hot(i, R.prim_value(2), R.const([0.0, 1.0], "float32"))
        y = R.matmul(o, R.const([[1.0, 2.0], [3.0, 4.0]], "float32"))
        return (y, o)
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((4,), "int32")):
        o = R.one_hot(i, R.prim_value(2), R.const([0.0, 1.0], "float32"))
        r = R.reshape(o, R.shape([2, 4]))
        y = R.matmul(R.const([[1.0, 2.0], [3.0, 4.0]], "float32"), r)
        return y
)");
  ExpectUnchanged(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("opencl", 0), I.vdevice("llvm", 0)]})

    @R.function
    def main(i: R.Tensor((4,), "int32", "opencl")):
        o: R.Tensor((4, 2), "float32", "opencl") = R.one_hot(i, R.prim_value(2), R.const([0.0, 1.0], "float32"))
        y: R.Tensor((4, 2), "float32", "opencl") = R.matmul(o, R.const([[1.0, 2.0], [3.0, 4.0]], "float32"))
        return y
)");
}

// The rows taken are the product's, for indices in range, negative ones (counted from the end)
// and ones outside [-depth, depth) (a row of zeros), int32 and int64.
TEST(FoldConstants, RowsTakenForAOneHotAreTheProducts) {
  std::mt19937 rng(73);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const char* dtype : {"int32", "int64"}) {
    std::ostringstream w;
    w.precision(9);
    w << "[";
    for (int r = 0; r < 5; ++r) {
      w << (r ? ", [" : "[");
      for (int c = 0; c < 4; ++c) w << (c ? ", " : "") << u(rng);
      w << "]";
    }
    w << "]";
    std::string text = std::string(R"(
@I.ir_module
class Module:
    @R.function
    def main(i: R.Tensor((2, 6), ")") +
                       dtype + R"(")):
        o = R.one_hot(i, R.prim_value(5), R.const([0.0, 1.0], "float32"))
        r = R.reshape(o, R.shape([12, 5]))
        y = R.matmul(r, R.const()" +
                       w.str() + R"(, "float32"))
        return y
)";
    ir::IRModule mod = Parse(text);
    std::string folded_text = ir::PrintModule(RunPass("fold-constants", mod));
    EXPECT_EQ(folded_text.find("one_hot"), std::string::npos) << folded_text;
    Expected<compiler::Compiled> plain = CompileWithFold(mod, false);
    ASSERT_TRUE(plain) << plain.error().ToString();
    Expected<compiler::Compiled> folded = CompileWithFold(mod, true);
    ASSERT_TRUE(folded) << folded.error().ToString();
    auto run = [&](const std::vector<uint8_t>& package, auto ids) {
      return RunWith(package, {test::Input("i", ids, {2, 6})});
    };
    std::vector<int64_t> ids = {0, 4, -1, -5, 5, -6, 2, 1000000, -1000000, 3, -3, 2147483647};
    std::vector<float> want, got;
    if (std::string(dtype) == "int32") {
      std::vector<int32_t> i32(ids.begin(), ids.end());
      want = run(plain->package, i32);
      got = run(folded->package, i32);
    } else {
      ids.back() = int64_t{1} << 62;
      want = run(plain->package, ids);
      got = run(folded->package, ids);
    }
    ASSERT_EQ(got.size(), 48u) << dtype;
    ASSERT_EQ(got, want) << dtype;
    // Rows of zeros where the index is out of range (5, -6, 1000000, -1000000, the largest).
    for (int r : {4, 5, 7, 8, 11}) {
      for (int c = 0; c < 4; ++c) EXPECT_EQ(got[static_cast<size_t>(r * 4 + c)], 0.0f) << r;
    }
  }
}

// torch.stack((a, b, c), dim).max(dim) as PyTorch exports it: three expand_dims, a concat along
// the new axis and a max over it, each read by nothing else.
std::string StackedExtreme(const std::string& reduce, int axis, bool keepdims,
                           const std::string& extra = "") {
  return std::string(R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32"), c: R.Tensor((2, 3), "float32")):
        ea = R.expand_dims(a, axis=[)") +
         std::to_string(axis) + R"(])
        eb = R.expand_dims(b, axis=[)" +
         std::to_string(axis) + R"(])
        ec = R.expand_dims(c, axis=[)" +
         std::to_string(axis) + R"(])
        s = R.concat((ea, eb, ec), axis=)" +
         std::to_string(axis) + R"()
        y = R.)" +
         reduce + R"((s, axis=[)" + std::to_string(axis) +
         "], keepdims=" + (keepdims ? "True" : "False") + ")\n" + extra + "        return y\n";
}

TEST(FoldConstants, TheExtremeOfAStackIsAChainOfPairwiseExtremes) {
  constexpr const char* kWant = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32"), c: R.Tensor((2, 3), "float32")):
        y_extreme0 = R.maximum(a, b)
        y = R.maximum(y_extreme0, c)
        return y
)";
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", Parse(StackedExtreme("max", 2, false))),
                           Parse(kWant)));
  // Keeping the axis (of -1, the last): the extreme of the expanded tensors.
  constexpr const char* kWantKept = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32"), c: R.Tensor((2, 3), "float32")):
        ea = R.expand_dims(a, axis=[-1])
        eb = R.expand_dims(b, axis=[-1])
        ec = R.expand_dims(c, axis=[-1])
        y_extreme0 = R.minimum(ea, eb)
        y = R.minimum(y_extreme0, ec)
        return y
)";
  EXPECT_TRUE(ModulesEqual(RunPass("fold-constants", Parse(StackedExtreme("min", -1, true))),
                           Parse(kWantKept)));
}

TEST(FoldConstants, OtherReductionsOfAConcatStay) {
  // The stack read by another step; a sum, not an extreme.
  ExpectUnchanged(StackedExtreme("max", 0, false, "        z = R.add(s, s)\n"));
  ExpectUnchanged(StackedExtreme("sum", 1, false));
  // Two tensors expanded along `expand` and concatenated along `along`, their max over `over`:
  // over another axis than the stack's; concatenated along an axis they already have (not a
  // stack).
  auto two = [](int expand, int along, int over) {
    const std::string e = std::to_string(expand);
    return std::string(R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")):
)") + "        ea = R.expand_dims(a, axis=[" +
           e + "])\n        eb = R.expand_dims(b, axis=[" + e +
           "])\n        s = R.concat((ea, eb), axis=" + std::to_string(along) +
           ")\n        y = R.max(s, axis=[" + std::to_string(over) +
           "], keepdims=False)\n        return y\n";
  };
  ExpectUnchanged(two(2, 2, 1));
  ExpectUnchanged(two(0, 1, 1));
}

// The chain computes the stack's extremes, element for element: NaN where any of the three is
// NaN, else the greatest (least), of equal values the first (-0 before 0 gives -0, and 0 before
// -0 gives 0), against a hand-written walk and the compiled module without the fold.
TEST(FoldConstants, TheChainOfExtremesIsTheStacksExtreme) {
  for (const char* reduce : {"max", "min"}) {
    ir::IRModule mod = Parse(StackedExtreme(reduce, 1, false));
    Expected<compiler::Compiled> plain = CompileWithFold(mod, false);
    ASSERT_TRUE(plain) << plain.error().ToString();
    Expected<compiler::Compiled> folded = CompileWithFold(mod, true);
    ASSERT_TRUE(folded) << folded.error().ToString();
    const float nan = std::nanf(""), inf = INFINITY;
    std::vector<float> a = {1.0f, -0.0f, 0.0f, nan, 2.0f, -inf};
    std::vector<float> b = {3.0f, 0.0f, -0.0f, 1.0f, nan, 5.0f};
    std::vector<float> c = {-2.0f, 0.0f, -0.0f, 4.0f, 7.0f, nan};
    auto run = [&](const std::vector<uint8_t>& package) {
      return RunWith(package, {test::Input("a", a, {2, 3}), test::Input("b", b, {2, 3}),
                               test::Input("c", c, {2, 3})});
    };
    const bool max = std::string(reduce) == "max";
    std::vector<float> want(6);
    for (size_t i = 0; i < 6; ++i) {
      float acc = a[i];
      for (float v : {b[i], c[i]}) {
        if (std::isnan(v) || std::isnan(acc)) {
          acc = nan;
        } else if (max ? v > acc : v < acc) {
          acc = v;
        }
      }
      want[i] = acc;
    }
    for (const std::vector<float>& got : {run(plain->package), run(folded->package)}) {
      ASSERT_EQ(got.size(), 6u) << reduce;
      for (size_t i = 0; i < 6; ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << reduce << " element " << i;
        } else {
          EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << reduce << " element " << i << ": " << got[i] << " vs " << want[i];
        }
      }
    }
  }
}

}  // namespace
}  // namespace quilt::passes
