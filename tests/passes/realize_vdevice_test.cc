// realize-vdevice: the RFC pairs, the error cases, the defaults (first entry; host for shape
// computations, scalars and conditions), fill=false, idempotence and an untouched input.
#include <gtest/gtest.h>

#include "tests/passes/pass_test_util.h"

namespace quilt::passes {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::ParseError;
using quilt::testing::PassError;
using quilt::testing::ReadData;
using quilt::testing::RunPass;
using quilt::testing::SInfoOf;

std::string KindOf(const ir::IRModule& mod, const std::string& func, const std::string& name) {
  ir::StructInfo s = SInfoOf(mod, func, name);
  if (!s || !s->vdevice) return "(none)";
  return s->vdevice->target.kind + ":" + std::to_string(s->vdevice->vdevice_id);
}

TEST(RealizeVDevice, ReproducesTheToVDevicePair) {
  ir::IRModule got = RunPass("realize-vdevice", Parse(ReadData("ir/rfc_to_vdevice.qir")));
  EXPECT_TRUE(ModulesEqual(got, Parse(ReadData("ir/rfc_to_vdevice_expected.qir"))));
}

TEST(RealizeVDevice, ReproducesTheRealizePair) {
  ir::IRModule got = RunPass("realize-vdevice", Parse(ReadData("ir/rfc_realize_before.qir")));
  EXPECT_TRUE(ModulesEqual(got, Parse(ReadData("ir/rfc_realize_expected.qir"))));
}

TEST(RealizeVDevice, RunningTwiceChangesNothing) {
  for (const char* file : {"ir/rfc_to_vdevice.qir", "ir/rfc_realize_before.qir"}) {
    ir::IRModule once = RunPass("realize-vdevice", Parse(ReadData(file)));
    EXPECT_TRUE(ModulesEqual(RunPass("realize-vdevice", once), once)) << file;
  }
}

TEST(RealizeVDevice, AConflictNamesTheVariableBothDevicesAndBothHints) {
  std::string e = PassError("realize-vdevice", Parse(ReadData("ir/rfc_hint_conflict.qir")));
  EXPECT_NE(e.find("binding 'c'"), std::string::npos) << e;
  EXPECT_NE(e.find("llvm (id 0, global) (from the R.hint_on_device at 'a')"), std::string::npos)
      << e;
  EXPECT_NE(e.find("cuda (id 0, global) (from the R.hint_on_device at 'b')"), std::string::npos)
      << e;
}

TEST(RealizeVDevice, TwoCallSitesThatDisagreeAreAConflict) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def callee(x: R.Tensor((2,), "float32")):
        r = R.add(x, x)
        return r

    @R.function
    def on_cpu(x: R.Tensor((2,), "float32", "llvm")):
        cls = Module
        s = cls.callee(x)
        return s

    @R.function
    def on_gpu(x: R.Tensor((2,), "float32", "cuda")):
        cls = Module
        s = cls.callee(x)
        return s
)");
  // The callee, its parameter and both call sites are named.
  std::string e = PassError("realize-vdevice", mod);
  EXPECT_NE(e.find("function 'callee', parameter 'x': passed on llvm (id 0, global) by the call "
                   "at function 'on_cpu', binding 's' and on cuda (id 0, global) by the call at "
                   "function 'on_gpu', binding 's'"),
            std::string::npos)
      << e;
}

TEST(RealizeVDevice, ACallThatPassesAnArgumentWhereTheCalleeCannotTakeItNamesTheCall) {
  std::string e = PassError("realize-vdevice", Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def callee(x: R.Tensor((2,), "float32", "cuda")):
        r = R.add(x, x)
        return r

    @R.function
    def main(x: R.Tensor((2,), "float32"), z: R.Tensor((2,), "float32", "llvm")):
        cls = Module
        t = R.add(x, z)
        s = cls.callee(x)
        return (s, t)
)"));
  EXPECT_NE(e.find("function 'main', binding 's'"), std::string::npos) << e;
  EXPECT_NE(e.find("the call of 'callee' passes parameter 'x' where it cannot be"),
            std::string::npos)
      << e;
}

TEST(RealizeVDevice, ADeviceStringThatMatchesNothingIsAnError) {
  std::string e = ParseError(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2,), "float32", "opencl")):
        return x
)");
  EXPECT_NE(e.find("\"opencl\" names no entry"), std::string::npos) << e;
  EXPECT_NE(e.find("cuda (id 0, global)"), std::string::npos) << e;
}

constexpr const char* kHintTemplate = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2,), "float32")):
        a = R.hint_on_device(x, DEVICE)
        b = R.add(a, a)
        return b
)";

std::string WithDevice(const std::string& device) {
  std::string text = kHintTemplate;
  text.replace(text.find("DEVICE"), 6, device);
  return text;
}

TEST(RealizeVDevice, AHintToADeviceNotInTheListIsAnError) {
  std::string e = PassError("realize-vdevice", Parse(WithDevice("tvm.opencl(0)")));
  EXPECT_NE(e.find("binding 'a'"), std::string::npos) << e;
  EXPECT_NE(e.find("opencl"), std::string::npos) << e;
  e = PassError("realize-vdevice", Parse(WithDevice("tvm.cuda(1)")));
  EXPECT_NE(e.find("cuda"), std::string::npos) << e;
}

TEST(RealizeVDevice, AHintNamesItsMemoryScope) {
  // R.hint_on_device(x, dev, scope) resolves to the entry with that scope, not the first
  // entry of the device; without a scope, to the "global" one.
  constexpr const char* kScoped = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0), I.vdevice("cuda", 0, "global.texture")]})

    @R.function
    def main(x: R.Tensor((2,), "float32")):
        a = R.hint_on_device(x, R.cuda(0), "global.texture")
        b = R.add(a, a)
        c = R.hint_on_device(x, R.cuda(0))
        d = R.multiply(c, c)
        return (b, d)
)";
  ir::IRModule got = RunPass("realize-vdevice", Parse(kScoped));
  EXPECT_EQ(*SInfoOf(got, "main", "b")->vdevice, got.vdevices[2]);
  EXPECT_EQ(*SInfoOf(got, "main", "d")->vdevice, got.vdevices[1]);
  std::string wrong = kScoped;
  wrong.replace(wrong.find("\"global.texture\")\n"), 16, "\"global.shared\"");
  std::string e = PassError("realize-vdevice", Parse(wrong));
  EXPECT_NE(e.find("binding 'a'"), std::string::npos) << e;
  EXPECT_NE(e.find("no entry of the vdevice list"), std::string::npos) << e;
}

TEST(RealizeVDevice, AHintInAModuleWithoutAVDeviceListIsAnError) {
  // TVM's RealizeVDevice refuses it too; left in place it would place nothing, silently.
  std::string e = PassError("realize-vdevice", Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.exp(x)
        a = R.hint_on_device(y, R.cuda(0))
        return a
)"));
  EXPECT_NE(e.find("function 'main'"), std::string::npos) << e;
  EXPECT_NE(e.find("R.hint_on_device at 'a', but the module has no vdevice list"),
            std::string::npos)
      << e;
}

TEST(RealizeVDevice, ANegativeDeviceIdIsAnError) {
  Expected<ir::IRModule> mod = ir::ParseModule(WithDevice("tvm.cuda(-1)"));
  std::string e = mod ? PassError("realize-vdevice", *mod) : mod.error().ToString();
  EXPECT_NE(e.find("-1"), std::string::npos) << e;
  EXPECT_NE(e.find("negative"), std::string::npos) << e;
}

TEST(RealizeVDevice, ATupleReturnAnnotationOfAnotherArityIsAnError) {
  Expected<ir::IRModule> mod = ir::ParseModule(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tuple(R.Tensor((2,), "float32", "cuda")):
        a = R.add(x, x)
        t = (a, x)
        return t
)");
  std::string e = mod ? PassError("realize-vdevice", *mod) : mod.error().ToString();
  EXPECT_NE(e.find("return"), std::string::npos) << e;
  EXPECT_NE(e.find("with 1 field(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("with 2"), std::string::npos) << e;
}

TEST(RealizeVDevice, ATupleReturnAnnotationPlacesEachField) {
  ir::IRModule got = RunPass("realize-vdevice", Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")) -> R.Tuple(R.Tensor((2,), "float32", "cuda"), R.Tensor((2,), "float32", "llvm")):
        a = R.add(x, x)
        b = R.multiply(y, y)
        t = (a, b)
        return t
)"));
  EXPECT_EQ(KindOf(got, "main", "x"), "cuda:0");
  EXPECT_EQ(KindOf(got, "main", "a"), "cuda:0");
  EXPECT_EQ(KindOf(got, "main", "y"), "llvm:0");
  EXPECT_EQ(KindOf(got, "main", "b"), "llvm:0");
}

constexpr const char* kFree = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm"), I.vdevice("opencl")]})

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), i: R.Tensor((), "int64"), j: R.Tensor((), "int64")):
        a = R.nn.relu(x)
        s = R.shape_of(a)
        t = R.shape_to_tensor(s)
        u = R.concat((t, t), axis=0)
        v = R.tensor_to_shape(u)
        w = R.reshape(a, v)
        k = R.add(i, j)
        return (w, k)
)";

TEST(RealizeVDevice, FreeTensorsTakeTheFirstEntryShapeComputationsAndScalarsTheHost) {
  ir::IRModule got = RunPass("realize-vdevice", Parse(kFree));
  for (const char* name : {"x", "a", "w"}) EXPECT_EQ(KindOf(got, "main", name), "cuda:0") << name;
  // The host is the last entry that runs on the CPU (llvm), not opencl.
  for (const char* name : {"t", "u", "i", "j", "k"}) {
    EXPECT_EQ(KindOf(got, "main", name), "llvm:0") << name;
  }
}

TEST(RealizeVDevice, ConditionsGoToTheHost) {
  ir::IRModule got = RunPass("realize-vdevice", Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")):
        if c:
            r = R.nn.relu(x)
        else:
            r = R.negative(x)
        return r
)"));
  EXPECT_EQ(KindOf(got, "main", "c"), "llvm:0");
  EXPECT_EQ(KindOf(got, "main", "x"), "cuda:0");
  EXPECT_EQ(KindOf(got, "main", "r"), "cuda:0");
}

TEST(RealizeVDevice, FillFalseLeavesFreeTensorsForAssign) {
  ir::IRModule got = RunPass("realize-vdevice{fill=false}", Parse(kFree));
  for (const char* name : {"x", "a", "t", "k"}) EXPECT_EQ(KindOf(got, "main", name), "(none)");
  EXPECT_NE(PassError("realize-vdevice{fill=maybe}", Parse(kFree)).find("true or false"),
            std::string::npos);
}

TEST(RealizeVDevice, AHintOnAPlacedInputBecomesACopy) {
  ir::IRModule got = RunPass("realize-vdevice", Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2,), "float32", "llvm")):
        a = R.hint_on_device(x, tvm.cuda(0))
        b = R.add(a, a)
        return b
)"));
  std::string text = ir::PrintModule(got);
  EXPECT_NE(text.find("R.to_vdevice(x, \"cuda\")"), std::string::npos) << text;
  EXPECT_EQ(KindOf(got, "main", "b"), "cuda:0");
}

}  // namespace
}  // namespace quilt::passes

namespace quilt::passes {
namespace {

TEST(RealizeVDevice, AFunctionThatReturnsAConstantIsFine) {
  // A constant has no slot of its own: it is placed where it is used.
  ir::IRModule got = quilt::testing::RunPass("realize-vdevice", quilt::testing::Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return R.const([1, 2], "float32")
)"));
  EXPECT_EQ(got.functions.size(), 1u);
}

}  // namespace
}  // namespace quilt::passes
