// The CPU kernel table: every kernel names an op of the IR (or a runtime builtin, or a step
// lowering makes) exactly once.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ir/op.h"
#include "targets/cpu/kernels/conv_blocked.h"
#include "targets/cpu/kernels/fused.h"
#include "targets/cpu/kernels/linalg.h"
#include "targets/cpu/kernels/registry.h"

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

}  // namespace
