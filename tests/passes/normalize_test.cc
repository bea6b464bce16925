// normalize re-infers struct info: after a parameter's annotation changes, every binding that
// depends on it follows, and the return type too; annotations that now disagree are errors.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "passes/pass.h"
#include "tests/test_util.h"

namespace quilt::passes {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::ReadData;

TEST(Normalize, PassReproducesTheRfcPair) {
  ir::IRModule before = Parse(ReadData("ir/rfc_normalize_before.qir"));
  ir::IRModule after = Parse(ReadData("ir/rfc_normalize_after.qir"));
  Expected<Pass> p = CreatePass("normalize");
  ASSERT_TRUE(p);
  Expected<ir::IRModule> got = p->Run(before);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_TRUE(ModulesEqual(*got, after));
}

TEST(Normalize, FollowsAChangedParameterThroughEveryBindingAndTheReturn) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        a = R.add(x, y)
        b = R.nn.relu(a)
        return b
)");
  // Put x on cuda by hand; the body still carries the old, unplaced struct info.
  ir::Function f = mod.Lookup("main");
  auto g = std::make_shared<ir::FunctionNode>(*f);
  ir::Var x = g->params[0];
  // Same Var object, new struct info: make a new node and rebuild the body's uses through the
  // normalizer's variable map by keeping the old pointer out of the new function.
  auto placed = std::make_shared<ir::VarNode>(*x);
  placed->struct_info = ir::WithVDevice(x->struct_info, mod.vdevices[1]);
  g->params[0] = placed;
  // Rewrite the one use of x in the body.
  auto block = g->body->blocks[0];
  auto call = std::make_shared<ir::CallNode>(*ir::As<ir::CallNode>(block.bindings[0].value));
  call->args[0] = placed;
  block.bindings[0].value = call;
  g->body = ir::MakeSeqExpr({block}, g->body->body);
  mod.Set("main", g);

  ir::StructInfo stale = quilt::testing::SInfoOf(mod, "main", "b");
  EXPECT_FALSE(stale->vdevice.has_value());
  Expected<ir::IRModule> got = CreatePass("normalize")->Run(mod);
  ASSERT_TRUE(got) << got.error().ToString();
  for (const char* name : {"a", "b"}) {
    ir::StructInfo s = quilt::testing::SInfoOf(*got, "main", name);
    ASSERT_TRUE(s->vdevice) << name;
    EXPECT_EQ(*s->vdevice, mod.vdevices[1]) << name;
  }
  EXPECT_EQ(*got->Lookup("main")->ret_struct_info->vdevice, mod.vdevices[1]);
  // The input module is untouched.
  EXPECT_FALSE(quilt::testing::SInfoOf(mod, "main", "b")->vdevice.has_value());
}

TEST(Normalize, ReportsAnAnnotationThatNoLongerHolds) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32", "llvm")):
        a = R.add(x, y)
        return a
)");
  ir::Function f = mod.Lookup("main");
  auto g = std::make_shared<ir::FunctionNode>(*f);
  auto placed = std::make_shared<ir::VarNode>(*g->params[0]);
  placed->struct_info = ir::WithVDevice(placed->struct_info, mod.vdevices[1]);
  auto block = g->body->blocks[0];
  auto call = std::make_shared<ir::CallNode>(*ir::As<ir::CallNode>(block.bindings[0].value));
  call->args[0] = placed;
  block.bindings[0].value = call;
  g->params[0] = placed;
  g->body = ir::MakeSeqExpr({block}, g->body->body);
  mod.Set("main", g);
  Expected<ir::IRModule> got = CreatePass("normalize")->Run(mod);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().location, "function 'main', binding 'a'");
  EXPECT_NE(got.error().message.find("different vdevices: `x` is on cuda"), std::string::npos)
      << got.error().message;
}

TEST(Normalize, IsIdempotent) {
  ir::IRModule mod = Parse(ReadData("ir/rfc_realize_before.qir"));
  Expected<ir::IRModule> once = CreatePass("normalize")->Run(mod);
  ASSERT_TRUE(once);
  Expected<ir::IRModule> twice = CreatePass("normalize")->Run(*once);
  ASSERT_TRUE(twice);
  EXPECT_TRUE(ModulesEqual(*twice, *once));
  EXPECT_TRUE(ModulesEqual(*once, mod));
}

}  // namespace
}  // namespace quilt::passes
