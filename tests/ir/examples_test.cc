// The IR text examples of the design (tests/data/ir, from the heterogeneous-execution RFC) parse
// as written, print and parse back equal, and behave as their README says where that is
// already in reach (normalization; the placement passes come later).
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "tests/test_util.h"

namespace quilt::ir {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::ReadData;
using quilt::testing::SInfoOf;

class ExampleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExampleTest, ParsesVerifiesAndRoundTrips) {
  IRModule mod = Parse(ReadData(std::string("ir/") + GetParam()));
  EXPECT_FALSE(mod.functions.empty());
  EXPECT_FALSE(mod.vdevices.empty());
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest,
                         ::testing::Values("rfc_hint_conflict.qir", "rfc_module.qir",
                                           "rfc_normalize_after.qir", "rfc_normalize_before.qir",
                                           "rfc_realize_before.qir", "rfc_realize_expected.qir",
                                           "rfc_to_vdevice.qir", "rfc_to_vdevice_expected.qir",
                                           "update_vdevice_before.qir",
                                           "update_vdevice_expected.qir"),
                         [](const auto& info) {
                           std::string name = info.param;
                           return name.substr(0, name.find('.'));
                         });

TEST(Examples, RfcModuleDeviceStringsNameTheirEntries) {
  IRModule mod = Parse(ReadData("ir/rfc_module.qir"));
  ASSERT_EQ(mod.vdevices.size(), 4u);
  EXPECT_EQ(mod.vdevices[2].target.Attr("arch"), "sm_80");
  EXPECT_EQ(mod.vdevices[3].target.kind, "metal");
  // "cuda", "cuda:0" and "vdevice:1" all name entry 1.
  for (const char* param : {"a", "b", "c"}) {
    StructInfo s = SInfoOf(mod, "foo", param);
    ASSERT_TRUE(s && s->vdevice) << param;
    EXPECT_EQ(*s->vdevice, mod.vdevices[1]) << param;
  }
}

TEST(Examples, RfcModuleNormalizesOntoCuda) {
  IRModule mod = Parse(ReadData("ir/rfc_module.qir"));
  Expected<IRModule> norm = NormalizeModule(mod);
  ASSERT_TRUE(norm) << norm.error().ToString();
  for (const char* name : {"s1", "s"}) {
    StructInfo s = SInfoOf(*norm, "foo", name);
    ASSERT_TRUE(s && s->vdevice) << name;
    EXPECT_EQ(*s->vdevice, norm->vdevices[1]) << name;
    EXPECT_EQ(s->vdevice->target.attrs.size(), 0u) << name << " must not be on the sm_80 entry";
  }
  EXPECT_EQ(*norm->Lookup("foo")->ret_struct_info->vdevice, norm->vdevices[1]);
}

TEST(Examples, NormalizeFillsEveryStructInfoIncludingTheReturnType) {
  IRModule before = Parse(ReadData("ir/rfc_normalize_before.qir"));
  IRModule after = Parse(ReadData("ir/rfc_normalize_after.qir"));
  Expected<IRModule> norm = NormalizeModule(before);
  ASSERT_TRUE(norm) << norm.error().ToString();
  EXPECT_TRUE(ModulesEqual(*norm, after));
  StructInfo ret = norm->Lookup("before")->ret_struct_info;
  ASSERT_TRUE(ret->vdevice);
  EXPECT_EQ(ret->vdevice->target.kind, "cuda");
}

TEST(Examples, HintConflictParsesWithHintsLeftForRealizeVDevice) {
  // The hints place nothing by themselves: c = add(a, b) is only a conflict once
  // realize-vdevice propagates them.
  IRModule mod = Parse(ReadData("ir/rfc_hint_conflict.qir"));
  EXPECT_FALSE(SInfoOf(mod, "main", "c")->vdevice.has_value());
}

TEST(Examples, ToVDeviceResultIsOnTheDestination) {
  IRModule mod = Parse(ReadData("ir/rfc_to_vdevice.qir"));
  StructInfo s2 = SInfoOf(mod, "foo", "s2");
  ASSERT_TRUE(s2->vdevice);
  EXPECT_EQ(*s2->vdevice, mod.vdevices[1]);
  // s = add(y1, s2): y1 is free, so s takes s2's vdevice.
  EXPECT_EQ(*SInfoOf(mod, "foo", "s")->vdevice, mod.vdevices[1]);
  EXPECT_FALSE(SInfoOf(mod, "foo", "s1")->vdevice.has_value());
}

TEST(Examples, UpdateVDeviceExpectedNamesTheNewEntryByIndex) {
  IRModule mod = Parse(ReadData("ir/update_vdevice_expected.qir"));
  StructInfo y = SInfoOf(mod, "main", "y");
  ASSERT_TRUE(y->vdevice);
  EXPECT_EQ(y->vdevice->target.ToString(), "cuda -arch=sm_80");
}

}  // namespace
}  // namespace quilt::ir
