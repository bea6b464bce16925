// The verifier catches modules that the builder would never make but a pass could: each test
// breaks one rule by hand.
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include "ir/builder.h"

namespace quilt::ir {
namespace {

VDevice Dev(const char* target) { return VDevice{*Target::Parse(target), 0, "global"}; }

StructInfo T(std::optional<VDevice> d = std::nullopt) {
  return TensorSInfo(std::vector<int64_t>{2}, DataType::kFloat32, d);
}

IRModule Module(std::vector<Var> params, std::vector<BindingBlock> blocks, Expr ret,
                std::vector<VDevice> vdevices = {}) {
  auto f = std::make_shared<FunctionNode>();
  f->params = std::move(params);
  f->body = MakeSeqExpr(std::move(blocks), ret);
  f->ret_struct_info = ret->struct_info;
  IRModule m;
  m.vdevices = std::move(vdevices);
  m.functions.emplace_back("main", f);
  return m;
}

Expr Add(Expr a, Expr b) { return *MakeOpCall(OpKind::kAdd, {a, b}); }

std::string Problem(const IRModule& m) {
  Status s = Verify(m);
  EXPECT_FALSE(s.ok());
  return s ? "" : s.error().ToString();
}

TEST(Verifier, AcceptsAWellFormedModule) {
  Var x = MakeVar("x", T());
  Var y = MakeVar("y", T());
  EXPECT_TRUE(Verify(Module({x}, {{false, {{y, Add(x, x)}}}}, y)).ok());
}

TEST(Verifier, UseBeforeDefinition) {
  Var x = MakeVar("x", T());
  Var y = MakeVar("y", T());
  Var z = MakeVar("z", T());
  std::string p = Problem(Module({x}, {{false, {{z, Add(y, x)}, {y, Add(x, x)}}}}, z));
  EXPECT_EQ(p, "function 'main': z: 'y' is used before it is defined");
}

TEST(Verifier, DefinedTwice) {
  Var x = MakeVar("x", T());
  Var y = MakeVar("y", T());
  EXPECT_NE(
      Problem(Module({x}, {{false, {{y, Add(x, x)}, {y, Add(x, x)}}}}, y)).find("defined twice"),
      std::string::npos);
}

TEST(Verifier, DataflowVariableLeavingItsBlock) {
  Var x = MakeVar("x", T());
  Var lv = MakeVar("lv", T(), /*dataflow=*/true);
  std::string p = Problem(Module({x}, {{true, {{lv, Add(x, x)}}}}, lv));
  EXPECT_NE(p.find("dataflow variable 'lv' is used outside its block"), std::string::npos) << p;
}

TEST(Verifier, VDeviceOutsideTheList) {
  Var x = MakeVar("x", T(Dev("cuda")));
  std::string p = Problem(Module({x}, {}, x, {Dev("llvm")}));
  EXPECT_NE(p.find("not in the module's vdevice list"), std::string::npos) << p;
}

TEST(Verifier, ArgumentsOnDifferentVDevices) {
  // The builder refuses this; build the call by hand as a faulty pass might.
  Var a = MakeVar("a", T(Dev("llvm")));
  Var b = MakeVar("b", T(Dev("cuda")));
  auto call = std::make_shared<CallNode>();
  call->callee = OpExpr(OpKind::kAdd);
  call->args = {a, b};
  call->struct_info = T(Dev("llvm"));
  Var c = MakeVar("c", T(Dev("llvm")));
  std::string p = Problem(Module({a, b}, {{false, {{c, call}}}}, c, {Dev("llvm"), Dev("cuda")}));
  EXPECT_NE(p.find("different vdevices"), std::string::npos) << p;
}

TEST(Verifier, StructInfoThatContradictsInference) {
  Var x = MakeVar("x", T());
  Var y = MakeVar("y", TensorSInfo(std::vector<int64_t>{3}, DataType::kFloat32));
  std::string p = Problem(Module({x}, {{false, {{y, Add(x, x)}}}}, y));
  EXPECT_NE(p.find("annotated shape (3,) but inferred shape (2,)"), std::string::npos) << p;
}

}  // namespace
}  // namespace quilt::ir
