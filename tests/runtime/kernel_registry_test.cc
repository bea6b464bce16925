// The CPU kernel table: every kernel names an op of the IR (or a runtime builtin, or a step
// lowering makes) exactly once.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "ir/op.h"
#include "targets/cpu/kernels/conv_blocked.h"
#include "targets/cpu/kernels/fused.h"
#include "targets/cpu/kernels/linalg.h"
#include "targets/cpu/kernels/registry.h"
#include "tests/runtime/kernel_test_util.h"

namespace {

TEST(CpuKernelRegistry, EveryKernelNamesAnIrOpOnce) {
  std::set<std::string> seen;
  for (const auto& k : quilt::cpu::AllKernels()) {
    std::string name(k.name);
    EXPECT_TRUE(seen.insert(name).second) << "kernel '" << name << "' is registered twice";
    // or is a step lowering makes: a fused chain, a matmul's B packed (targets/pack_weights.h),
    // the channel-blocked layout's convs, max pool and transforms (targets/block_layout.h)
    EXPECT_TRUE(name == "copy" || name == quilt::cpu::kFusedElementwise ||
                name == quilt::cpu::kMatmulPackB || name == quilt::cpu::nn::kConvNchw16c ||
                name == quilt::cpu::nn::kToNchw16c || name == quilt::cpu::nn::kFromNchw16c ||
                name == quilt::cpu::nn::kMaxPoolNchw16c ||
                name == quilt::cpu::nn::kGlobalAvgPoolNchw16c ||
                name == quilt::cpu::nn::kGateNchw16c || name == quilt::cpu::nn::kResizeNchw16c ||
                quilt::ir::FindOp(name) != nullptr)
        << "kernel '" << name << "' names no op of ir/ops.def";
    EXPECT_NE(k.fn, nullptr) << name;
  }
}

TEST(CpuKernelRegistry, FindsKernelsByName) {
  EXPECT_NE(quilt::cpu::FindKernel("add"), nullptr);
  EXPECT_EQ(quilt::cpu::FindKernel("no.such.op"), nullptr);
}

// A step's attributes looked up through its index (AttrIndex, as the session prepares it) read
// what the package's list gives, name by name: present and absent names, a name that begins
// another ("alpha" and "alpha_2") or another's end ("max" and "activation_max"), a member's
// through its prefix (and not the step's own of the same name), the first of a repeated name,
// the empty name; ints, floats, a list of ints and a string.
TEST(AttrView, AnIndexedViewReadsWhatTheListGives) {
  quilt::cpu::kernel_test::Attrs attrs;
  attrs.Int("alpha", 3)
      .Int("alpha_2", 5)
      .Float("activation_max", 6.0)
      .Float("max", 2.5)
      .Ints("pads", {1, 2, 3, 4})
      .Str("mode", "nearest")
      .Int("0:alpha", 7)
      .Float("1:beta", 0.25)
      .Int("alpha", 9)
      .Int("", 11);
  const quilt::rt::AttrView::List* list = attrs.Finish();
  quilt::rt::AttrIndex index(list);
  const quilt::rt::AttrView plain(list), indexed(list, {}, &index);
  for (const quilt::rt::AttrView* v : {&plain, &indexed}) {
    SCOPED_TRACE(v == &plain ? "the list" : "the index");
    EXPECT_EQ(v->Int("alpha"), 3);  // the first of two
    EXPECT_EQ(v->Int("alpha_2"), 5);
    EXPECT_EQ(v->Float("activation_max"), 6.0);
    EXPECT_EQ(v->Float("max"), 2.5);
    EXPECT_EQ(v->Ints("pads"), (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(v->IntsView("pads").size(), 4u);
    EXPECT_EQ(v->Str("mode"), "nearest");
    EXPECT_EQ(v->Int("", -1), 11);
    EXPECT_FALSE(v->Has("beta"));
    EXPECT_FALSE(v->Has("alph"));
    EXPECT_EQ(v->Int("absent", -4), -4);
    const quilt::rt::AttrView member0 = v->WithPrefix("0:"), member1 = v->WithPrefix("1:");
    EXPECT_EQ(member0.Int("alpha"), 7);
    EXPECT_FALSE(member0.Has("beta"));
    EXPECT_FALSE(member0.Has("mode"));
    EXPECT_EQ(member1.Float("beta"), 0.25);
    EXPECT_FALSE(member1.Has("alpha"));
  }
}

}  // namespace
