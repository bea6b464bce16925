// insert-device-copies: copies stay only where data moves (between physical devices).
#include <gtest/gtest.h>

#include "tests/passes/pass_test_util.h"

namespace quilt::passes {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::RunPass;

constexpr const char* kRegions = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("nvptx", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")):
        cls = Module
        a = R.to_vdevice(x, "cuda")
        b = cls.r0(a)
        c = R.to_vdevice(b, "nvptx")
        d = cls.r1(c)
        e = R.to_vdevice(d, "llvm")
        f = cls.r2(e)
        return f

    @R.function(private=True)
    def r0(a: R.Tensor((4,), "float32", "cuda")) -> R.Tensor((4,), "float32", "cuda"):
        R.func_attr({"vdevice": "cuda", "codegen": "cuda"})
        b = R.add(a, R.const(1, "float32"))
        return b

    @R.function(private=True)
    def r1(c: R.Tensor((4,), "float32", "nvptx")) -> R.Tensor((4,), "float32", "nvptx"):
        R.func_attr({"vdevice": "nvptx", "codegen": "nvptx"})
        d = R.multiply(c, R.const(2, "float32"))
        return d

    @R.function(private=True)
    def r2(e: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        R.func_attr({"vdevice": "llvm", "codegen": "llvm"})
        f = R.add(e, R.const(1, "float32"))
        return f
)";

TEST(InsertDeviceCopies, NoCopyBetweenTwoTargetsOfOneDeviceACopyBetweenDevices) {
  ir::IRModule got = RunPass("insert-device-copies", Parse(kRegions));
  std::string want = kRegions;
  want.replace(want.find("c = R.to_vdevice(b, \"nvptx\")"), 28, "c = b");
  EXPECT_TRUE(ModulesEqual(got, Parse(want)));
  std::string text = ir::PrintModule(got);
  EXPECT_NE(text.find("R.to_vdevice(x, \"cuda\")"), std::string::npos) << text;
  EXPECT_NE(text.find("R.to_vdevice(d, \"llvm\")"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"nvptx\")\n"), std::string::npos) << text;
}

TEST(InsertDeviceCopies, ACopyThatAnOpReadsStays) {
  // Outside regions an op needs its tensors on its own vdevice, so the retag must stay.
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("nvptx", 0)]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "cuda")):
        c = R.to_vdevice(x, "nvptx")
        d = R.multiply(c, c)
        return d
)");
  EXPECT_TRUE(ModulesEqual(RunPass("insert-device-copies", mod), mod));
}

TEST(InsertDeviceCopies, RunningTwiceChangesNothing) {
  ir::IRModule once = RunPass("insert-device-copies", Parse(kRegions));
  EXPECT_TRUE(ModulesEqual(RunPass("insert-device-copies", once), once));
}

}  // namespace
}  // namespace quilt::passes
