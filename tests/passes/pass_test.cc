// Pass specs (MLIR-style options) and the pass registry's errors.
#include "passes/pass.h"

#include <gtest/gtest.h>

namespace quilt::passes {
namespace {

TEST(PassSpec, NameAlone) {
  Expected<PassSpec> s = ParsePassSpec("normalize");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "normalize");
  EXPECT_TRUE(s->options.empty());
}

TEST(PassSpec, OptionsWithQuotedValues) {
  Expected<PassSpec> s =
      ParsePassSpec("update-vdevice{index=1 target=\"cuda -arch=sm_80\" scope='global'}");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->name, "update-vdevice");
  EXPECT_EQ(s->options.at("index"), "1");
  EXPECT_EQ(s->options.at("target"), "cuda -arch=sm_80");
  EXPECT_EQ(s->options.at("scope"), "global");
}

TEST(PassSpec, MalformedSpecsAreRefused) {
  EXPECT_FALSE(ParsePassSpec(""));
  EXPECT_FALSE(ParsePassSpec("p{a=1"));
  EXPECT_FALSE(ParsePassSpec("p{a}"));
  EXPECT_FALSE(ParsePassSpec("p{a=\"x}"));
  EXPECT_FALSE(ParsePassSpec("p{a=1 a=2}"));
  EXPECT_FALSE(ParsePassSpec("bad name"));
}

TEST(Registry, UnknownPassListsTheKnownOnes) {
  Expected<Pass> p = CreatePass("frobnicate");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message,
            "unknown pass 'frobnicate' (known: normalize, update-vdevice, realize-vdevice, "
            "assign, simplify, fold-constants, partition, insert-device-copies)");
}

TEST(Registry, UnknownOptionIsRefused) {
  Expected<Pass> p = CreatePass("normalize{level=2}");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message, "pass 'normalize' has no option 'level' (it takes none)");
}

}  // namespace
}  // namespace quilt::passes
