// assign with small fake targets: a "cuda" that runs only the ops a test names, and the CPU
// (llvm) that runs everything. Expected modules are written out by hand.
#include "passes/assign.h"

#include <gtest/gtest.h>

#include <set>

#include "ir/op.h"
#include "tests/passes/pass_test_util.h"

namespace quilt::passes {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::RunPass;

AssignOptions FakeCuda(std::set<std::string> ops, bool strict = false) {
  AssignOptions o;
  o.strict = strict;
  o.supports = [ops](const ir::VDevice& d, const ir::CallNode& call) {
    if (d.target.kind == "llvm") return targets::Support::Yes();
    std::string name = call.op() ? call.op()->name : "call";
    if (ops.count(name)) return targets::Support::Yes();
    return targets::Support::No("the fake " + d.target.kind + " has no " + name);
  };
  return o;
}

AssignResult RunAssign(const ir::IRModule& mod, const AssignOptions& o) {
  std::string before = ir::PrintModule(mod);
  Expected<AssignResult> r = Assign(mod, o);
  EXPECT_EQ(ir::PrintModule(mod), before) << "assign changed its input";
  if (!r) {
    ADD_FAILURE() << r.error().ToString();
    return {mod, {}};
  }
  Status v = ir::Verify(r->module);
  EXPECT_TRUE(v.ok()) << (v ? "" : v.error().ToString()) << "\n" << ir::PrintModule(r->module);
  return *r;
}

std::string AssignError(const ir::IRModule& mod, const AssignOptions& o) {
  Expected<AssignResult> r = Assign(mod, o);
  if (r) {
    ADD_FAILURE() << "assign succeeded:\n" << ir::PrintModule(r->module);
    return "";
  }
  return r.error().ToString();
}

const OpPlacement& Placement(const AssignResult& r, const std::string& value) {
  for (const OpPlacement& p : r.ops) {
    if (p.value == value) return p;
  }
  static const OpPlacement none;
  ADD_FAILURE() << "no placement for " << value;
  return none;
}

constexpr const char* kChain = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")):
        a = R.nn.conv2d(x, w)
        b = R.nn.relu(a)
        c = R.nn.softmax(b, axis=1)
        return c
)";

TEST(Assign, FirstSupportingDeviceInOrderWithCopiesOnEveryCrossingEdge) {
  AssignResult r = RunAssign(Parse(kChain), FakeCuda({"nn.conv2d", "nn.relu"}));
  EXPECT_TRUE(ModulesEqual(r.module, Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), "float32", "llvm"), w: R.Tensor((4, 3, 3, 3), "float32", "llvm")) -> R.Tensor((1, 4, 6, 6), "float32", "llvm"):
        x_cuda: R.Tensor((1, 3, 8, 8), "float32", "cuda") = R.to_vdevice(x, "cuda")
        w_cuda: R.Tensor((4, 3, 3, 3), "float32", "cuda") = R.to_vdevice(w, "cuda")
        a: R.Tensor((1, 4, 6, 6), "float32", "cuda") = R.nn.conv2d(x_cuda, w_cuda)
        b: R.Tensor((1, 4, 6, 6), "float32", "cuda") = R.nn.relu(a)
        b_llvm: R.Tensor((1, 4, 6, 6), "float32", "llvm") = R.to_vdevice(b, "llvm")
        c: R.Tensor((1, 4, 6, 6), "float32", "llvm") = R.nn.softmax(b_llvm, axis=1)
        return c
)")));
  EXPECT_EQ(Placement(r, "a").why, OpPlacement::Why::kFirstChoice);
  const OpPlacement& c = Placement(r, "c");
  EXPECT_EQ(c.why, OpPlacement::Why::kFallback);
  EXPECT_EQ(c.device, 1);
  EXPECT_EQ(c.reason, "cuda (id 0, global): the fake cuda has no nn.softmax");
}

TEST(Assign, ResultsOnAnAcceleratorAreCopiedBackToTheHost) {
  AssignResult r = RunAssign(Parse(kChain), FakeCuda({"nn.conv2d", "nn.relu", "nn.softmax"}));
  std::string text = ir::PrintModule(r.module);
  EXPECT_NE(text.find("c_llvm: R.Tensor((1, 4, 6, 6), \"float32\", \"llvm\") = R.to_vdevice(c"),
            std::string::npos)
      << text;
  EXPECT_EQ(r.module.Lookup("main")->ret_struct_info->vdevice->target.kind, "llvm");
}

TEST(Assign, StrictListsEveryFallbackWithItsReason) {
  std::string e = AssignError(Parse(kChain), FakeCuda({"nn.conv2d"}, /*strict=*/true));
  EXPECT_NE(e.find("--strict: 2 op(s) fell back"), std::string::npos) << e;
  EXPECT_NE(e.find("'b' (R.nn.relu) on llvm (id 0, global): cuda (id 0, global): the fake cuda "
                   "has no nn.relu"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("'c' (R.nn.softmax)"), std::string::npos) << e;
  // Nothing fell back: strict is satisfied.
  RunAssign(Parse(kChain), FakeCuda({"nn.conv2d", "nn.relu", "nn.softmax"}, true));
}

TEST(Assign, ARulePinsOneOpAndItsHintDisappears) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        a = R.nn.relu(x)
        b = R.negative(a)
        h = R.hint_on_device(b, tvm.cpu())
        c = R.exp(h)
        return c
)");
  AssignOptions o = FakeCuda({"nn.relu", "negative", "exp"});
  o.max_fragment_ops = 0;  // keep the single cheap ops where they are, to see the copies
  AssignResult r = RunAssign(mod, o);
  EXPECT_TRUE(ModulesEqual(r.module, Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        x_cuda: R.Tensor((4,), "float32", "cuda") = R.to_vdevice(x, "cuda")
        a: R.Tensor((4,), "float32", "cuda") = R.nn.relu(x_cuda)
        a_llvm: R.Tensor((4,), "float32", "llvm") = R.to_vdevice(a, "llvm")
        b: R.Tensor((4,), "float32", "llvm") = R.negative(a_llvm)
        h: R.Tensor((4,), "float32", "llvm") = b
        h_cuda: R.Tensor((4,), "float32", "cuda") = R.to_vdevice(h, "cuda")
        c: R.Tensor((4,), "float32", "cuda") = R.exp(h_cuda)
        c_llvm: R.Tensor((4,), "float32", "llvm") = R.to_vdevice(c, "llvm")
        return c_llvm
)")));
  EXPECT_EQ(Placement(r, "b").why, OpPlacement::Why::kPinned);
}

TEST(Assign, AKeptHintOnAnAnnotatedInputBecomesACopy) {
  // realize-vdevice{hints=keep} joins the hint's result with the annotated input through the op
  // that reads both; the hint still moves x to cuda, and that op reads a copy back.
  ir::IRModule mod = RunPass("realize-vdevice{fill=false hints=keep}", Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")):
        with R.dataflow():
            c = R.exp(x)
            a = R.hint_on_device(x, R.cuda(0))
            b = R.add(a, c)
            R.output(b)
        return b
)"));
  AssignResult r = RunAssign(mod, FakeCuda({"add", "exp"}));
  EXPECT_TRUE(ModulesEqual(r.module, Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        with R.dataflow():
            c: R.Tensor((4,), "float32", "llvm") = R.exp(x)
            x_cuda: R.Tensor((4,), "float32", "cuda") = R.to_vdevice(x, "cuda")
            a: R.Tensor((4,), "float32", "cuda") = x_cuda
            a_llvm: R.Tensor((4,), "float32", "llvm") = R.to_vdevice(a, "llvm")
            b: R.Tensor((4,), "float32", "llvm") = R.add(a_llvm, c)
            R.output(b)
        return b
)")));
}

TEST(Assign, APinToADeviceThatCannotRunTheOpIsAnError) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        a = R.nn.relu(x)
        h = R.hint_on_device(a, tvm.cuda(0))
        return h
)");
  std::string e = AssignError(mod, FakeCuda({}));
  EXPECT_NE(e.find("'a' (R.nn.relu) must run on cuda (id 0, global) (placement rule) but it "
                   "cannot: the fake cuda has no nn.relu"),
            std::string::npos)
      << e;
}

TEST(Assign, ShapeComputationsStayOnTheHost) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32")):
        a = R.nn.relu(x)
        s = R.shape_of(a)
        t = R.shape_to_tensor(s)
        u = R.concat((t, t), axis=0)
        v = R.strided_slice(u, axes=[0], begin=[0], end=[2], strides=[1])
        sh = R.tensor_to_shape(v)
        w = R.reshape(a, sh)
        return w
)");
  std::set<std::string> all = {"nn.relu",         "shape_to_tensor", "concat",  "strided_slice",
                               "tensor_to_shape", "reshape",         "shape_of"};
  AssignResult r = RunAssign(mod, FakeCuda(all));
  for (const char* v : {"t", "u", "v", "sh"}) {
    EXPECT_EQ(Placement(r, v).device, 1) << v;
    EXPECT_EQ(Placement(r, v).why, OpPlacement::Why::kShape) << v;
  }
  EXPECT_EQ(Placement(r, "s").device, 0);  // reads only the shape, where its input is
  EXPECT_EQ(Placement(r, "a").device, 0);
  EXPECT_EQ(Placement(r, "w").device, 0);
}

constexpr const char* kSandwich = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        a = R.nn.softmax(x, axis=1)
        b = R.add(a, y)
        c = R.multiply(b, b)
        d = R.nn.softmax(c, axis=1)
        return d
)";

TEST(Assign, AFragmentOfCheapOpsBetweenHostOpsStaysOnTheHost) {
  AssignResult r = RunAssign(Parse(kSandwich), FakeCuda({"add", "multiply"}));
  for (const char* v : {"b", "c"}) {
    const OpPlacement& p = Placement(r, v);
    EXPECT_EQ(p.device, 1) << v;
    EXPECT_EQ(p.why, OpPlacement::Why::kFragment) << v;
    EXPECT_NE(p.reason.find("a fragment of 2 cheap op(s)"), std::string::npos) << p.reason;
  }
  EXPECT_EQ(ir::PrintModule(r.module).find("to_vdevice"), std::string::npos)
      << ir::PrintModule(r.module);
}

TEST(Assign, AFragmentLargerThanTheLimitOrWithHeavyOpsStaysOnTheAccelerator) {
  AssignOptions o = FakeCuda({"add", "multiply"});
  o.max_fragment_ops = 1;
  AssignResult r = RunAssign(Parse(kSandwich), o);
  EXPECT_EQ(Placement(r, "b").device, 0);
  EXPECT_EQ(Placement(r, "c").device, 0);
  EXPECT_EQ(Placement(r, "b").why, OpPlacement::Why::kFirstChoice);
}

TEST(Assign, NoDeviceThatCanRunAnOpIsAnErrorNamingEachRefusal) {
  AssignOptions o;
  o.supports = [](const ir::VDevice& d, const ir::CallNode&) {
    return targets::Support::No("nothing on " + d.target.kind);
  };
  std::string e = AssignError(Parse(kChain), o);
  EXPECT_NE(e.find("can run 'a' (R.nn.conv2d): cuda (id 0, global): nothing on cuda; llvm (id 0, "
                   "global): nothing on llvm"),
            std::string::npos)
      << e;
}

TEST(Assign, ControlFlowRunsOnTheHost) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("cuda", 0), I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        s = R.sum(x)
        c = R.greater(s, R.const(0, "float32"))
        if c:
            r = R.nn.relu(y)
        else:
            r = R.negative(y)
        return r
)");
  AssignResult r = RunAssign(mod, FakeCuda({"sum", "greater", "nn.relu", "negative"}));
  EXPECT_EQ(Placement(r, "s").device, 0);
  EXPECT_EQ(Placement(r, "c").device, 1);
  EXPECT_EQ(Placement(r, "c").why, OpPlacement::Why::kControlFlow);
  EXPECT_EQ(Placement(r, "r").device, 1);
}

TEST(Assign, TheRealTargetsTodayRunEverythingOnTheCpu) {
  AssignResult r = RunAssign(Parse(kChain), {});
  for (const OpPlacement& p : r.ops) {
    EXPECT_EQ(p.device, 1) << p.value;
    EXPECT_EQ(p.why, OpPlacement::Why::kFallback);
    EXPECT_NE(p.reason.find("no CUDA kernel for R."), std::string::npos) << p.reason;
  }
}

}  // namespace
}  // namespace quilt::passes
