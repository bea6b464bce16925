// update-vdevice: append, replace by index (every tensor on the entry moves), reset; and the
// errors for bad options and changes that would lose a placement.
#include <gtest/gtest.h>

#include "tests/passes/pass_test_util.h"

namespace quilt::passes {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::PassError;
using quilt::testing::ReadData;
using quilt::testing::RunPass;
using quilt::testing::SInfoOf;

constexpr const char* kPlaced = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm"), y: R.Tensor((4,), "float32", "cuda")):
        a = R.to_vdevice(x, "cuda")
        b = R.add(a, y)
        return b
)";

TEST(UpdateVDevice, ReproducesThePair) {
  ir::IRModule before = Parse(ReadData("ir/update_vdevice_before.qir"));
  ir::IRModule want = Parse(ReadData("ir/update_vdevice_expected.qir"));
  EXPECT_TRUE(
      ModulesEqual(RunPass("update-vdevice{index=1 target=\"cuda -arch=sm_80\"}", before), want));
}

TEST(UpdateVDevice, ReplacingAnEntryMovesEveryTensorOnItIncludingCopiesAndReturn) {
  ir::IRModule got =
      RunPass("update-vdevice{index=1 target=\"opencl\" id=2 scope=\"texture\"}", Parse(kPlaced));
  ASSERT_EQ(got.vdevices.size(), 2u);
  ir::VDevice want{*ir::Target::Parse("opencl"), 2, "texture"};
  EXPECT_EQ(got.vdevices[1], want);
  for (const char* name : {"y", "a", "b"}) {
    EXPECT_EQ(*SInfoOf(got, "main", name)->vdevice, want) << name;
  }
  EXPECT_EQ(*got.Lookup("main")->ret_struct_info->vdevice, want);
  EXPECT_EQ(SInfoOf(got, "main", "x")->vdevice->target.kind, "llvm");
}

TEST(UpdateVDevice, TakesATargetInTvmsDictForm) {
  // TVM's UpdateVDevice gets a whole Target, which TVM prints as a dict: its types are kept.
  const std::string spec =
      "update-vdevice{index=1 id=1 target='{\"kind\": \"metal\", \"keys\": [\"metal\", \"gpu\"], "
      "\"max_num_threads\": 256, \"tag\": \"\"}'}";
  ir::IRModule got = RunPass(spec, Parse(kPlaced));
  ASSERT_EQ(got.vdevices.size(), 2u);
  const ir::Target& t = got.vdevices[1].target;
  EXPECT_EQ(t.kind, "metal");
  EXPECT_EQ(std::get<std::vector<std::string>>(t.attrs.at("keys")),
            (std::vector<std::string>{"metal", "gpu"}));
  EXPECT_EQ(std::get<int64_t>(t.attrs.at("max_num_threads")), 256);
  EXPECT_EQ(got.vdevices[1].vdevice_id, 1);
  EXPECT_EQ(*SInfoOf(got, "main", "b")->vdevice, got.vdevices[1]);
  EXPECT_NE(
      PassError("update-vdevice{target='{\"kind\": \"metal\", \"arch\": 1.5}'}", Parse(kPlaced))
          .find("target attribute \"arch\": expected a string"),
      std::string::npos);
  EXPECT_NE(PassError("update-vdevice{target='{\"keys\": [\"gpu\"]}'}", Parse(kPlaced))
                .find("target dict has no \"kind\""),
            std::string::npos);
}

TEST(UpdateVDevice, AppendsWithoutIndex) {
  ir::IRModule got = RunPass("update-vdevice{target=\"opencl\"}", Parse(kPlaced));
  ASSERT_EQ(got.vdevices.size(), 3u);
  EXPECT_EQ(got.vdevices[2].target.kind, "opencl");
  EXPECT_EQ(SInfoOf(got, "main", "b")->vdevice->target.kind, "cuda");
}

TEST(UpdateVDevice, ResetReplacesTheListKeepingEntriesStillThere) {
  ir::IRModule got = RunPass("update-vdevice{reset=\"opencl;cuda;llvm\"}", Parse(kPlaced));
  ASSERT_EQ(got.vdevices.size(), 3u);
  EXPECT_EQ(got.vdevices[0].target.kind, "opencl");
  EXPECT_EQ(SInfoOf(got, "main", "b")->vdevice->target.kind, "cuda");
  // Printing names entries by position: the cuda tensors now print against the new list.
  EXPECT_NE(ir::PrintModule(got).find("I.vdevice(\"opencl\""), std::string::npos);
}

TEST(UpdateVDevice, ResetThatDropsAUsedEntryIsRefused) {
  std::string e = PassError("update-vdevice{reset=\"llvm;opencl\"}", Parse(kPlaced));
  EXPECT_NE(e.find("drops vdevice cuda (id 0, global)"), std::string::npos) << e;
  EXPECT_NE(e.find("parameter 'y'"), std::string::npos) << e;
  EXPECT_NE(e.find("index="), std::string::npos) << e;
}

TEST(UpdateVDevice, BadOptionsAreDiagnostics) {
  ir::IRModule mod = Parse(kPlaced);
  std::string e = PassError("update-vdevice{index=5 target=\"opencl\"}", mod);
  EXPECT_NE(e.find("index 5 is past the end"), std::string::npos) << e;
  e = PassError("update-vdevice{index=1 target=\"tpu\"}", mod);
  EXPECT_NE(e.find("unknown target kind 'tpu'"), std::string::npos) << e;
  e = PassError("update-vdevice{index=x target=\"cuda\"}", mod);
  EXPECT_NE(e.find("must be an integer"), std::string::npos) << e;
  e = PassError("update-vdevice{index=1 target=\"cuda\" id=-1}", mod);
  EXPECT_NE(e.find("negative"), std::string::npos) << e;
  e = PassError("update-vdevice{index=0}", mod);
  EXPECT_NE(e.find("needs target="), std::string::npos) << e;
  e = PassError("update-vdevice{reset=\"llvm\" index=0}", mod);
  EXPECT_NE(e.find("takes no other option"), std::string::npos) << e;
  e = PassError("update-vdevice{index=0 target=\"cuda\"}", mod);
  EXPECT_NE(e.find("already entry 1"), std::string::npos) << e;
  e = PassError("update-vdevice{target=\"cuda\"}", mod);
  EXPECT_NE(e.find("already entry 1"), std::string::npos) << e;
}

}  // namespace
}  // namespace quilt::passes
