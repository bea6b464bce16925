// Structural equality: variables match by position, vdevices by value, and equal modules hash
// equally.
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace quilt::ir {
namespace {

using quilt::testing::Parse;

constexpr char kBase[] = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2, 3), "float32", "cuda"), y: R.Tensor((2, 3), "float32")):
        a = R.add(x, y)
        b = R.multiply(a, x)
        return b
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at;
  while ((at = s.find(from)) != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(StructuralEqual, RenamedVariablesAreEqual) {
  IRModule a = Parse(kBase);
  IRModule b = Parse(Replace(Replace(Replace(kBase, "x", "inp"), "a =", "t ="), "(a,", "(t,"));
  EXPECT_TRUE(StructuralEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
}

TEST(StructuralEqual, SameDeviceNamedDifferentlyIsEqual) {
  IRModule a = Parse(kBase);
  IRModule b = Parse(Replace(kBase, "\"cuda\")", "\"vdevice:1\")"));
  EXPECT_TRUE(StructuralEqual(a, b));
}

TEST(StructuralEqual, DifferentVDeviceIsUnequal) {
  IRModule a = Parse(kBase);
  IRModule b = Parse(Replace(kBase, "\"float32\", \"cuda\")", "\"float32\", \"llvm\")"));
  std::string why;
  EXPECT_FALSE(StructuralEqual(a, b, &why));
  EXPECT_NE(why.find("'x'"), std::string::npos) << why;
  EXPECT_NE(StructuralHash(a), StructuralHash(b));
}

TEST(StructuralEqual, DifferentTargetAttributesAreUnequal) {
  IRModule a = Parse(kBase);
  IRModule b =
      Parse(Replace(kBase, "I.vdevice(\"cuda\", 0)", "I.vdevice(\"cuda -arch=sm_80\", 0)"));
  EXPECT_FALSE(StructuralEqual(a, b));
}

TEST(StructuralEqual, DifferentOpOrOperandOrderIsUnequal) {
  IRModule a = Parse(kBase);
  EXPECT_FALSE(StructuralEqual(a, Parse(Replace(kBase, "R.multiply", "R.subtract"))));
  EXPECT_FALSE(StructuralEqual(a, Parse(Replace(kBase, "R.multiply(a, x)", "R.multiply(x, a)"))));
}

TEST(StructuralEqual, SwappedParametersAreUnequal) {
  IRModule a = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")):
        a = R.subtract(x, y)
        return a
)");
  IRModule b = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")):
        a = R.subtract(y, x)
        return a
)");
  EXPECT_FALSE(StructuralEqual(a, b));
}

TEST(StructuralEqual, SymbolicDimsMatchByPosition) {
  const char* t = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32")):
        y = R.permute_dims(x)
        return y
)";
  IRModule a = Parse(t);
  IRModule b = Parse(Replace(Replace(t, "\"n\"", "\"p\""), "\"m\"", "\"q\""));
  EXPECT_TRUE(StructuralEqual(a, b));
  // (n, m) vs (n, n): the second dim maps m to n, which is taken.
  IRModule c = Parse(Replace(t, "\"m\"", "\"n\""));
  EXPECT_FALSE(StructuralEqual(a, c));
}

TEST(StructuralEqual, FunctionOrderDoesNotMatter) {
  const char* f = R"(
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        return x
)";
  const char* g = R"(
    @R.function
    def g(x: R.Tensor((2,), "float32")):
        y = R.exp(x)
        return y
)";
  std::string head = "@I.ir_module\nclass Module:";
  IRModule a = Parse(head + f + g);
  IRModule b = Parse(head + g + f);
  EXPECT_TRUE(StructuralEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
}

TEST(StructuralEqual, ConstantsCompareByValue) {
  const char* t = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.add(x, R.const([1.0, 2.0], "float32"))
        return y
)";
  EXPECT_TRUE(StructuralEqual(Parse(t), Parse(t)));
  EXPECT_FALSE(StructuralEqual(Parse(t), Parse(Replace(t, "2.0]", "2.5]"))));
}

TEST(LineDiff, ShowsChangedLines) {
  std::string d = LineDiff("a\nb\nc\n", "a\nB\nc\n");
  EXPECT_NE(d.find("- b"), std::string::npos) << d;
  EXPECT_NE(d.find("+ B"), std::string::npos) << d;
}

}  // namespace
}  // namespace quilt::ir
