// partition: graphs whose optimum is known, a randomized check on generated DAGs (acyclic,
// every op keeps its device, no two regions of one device could merge), and the IR lifting.
#include "passes/partition.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tests/passes/pass_test_util.h"

namespace quilt::passes {
namespace {

using quilt::testing::ModulesEqual;
using quilt::testing::Parse;
using quilt::testing::RunPass;

int CountRegions(const std::vector<int>& region) {
  std::set<int> ids;
  for (int r : region) {
    if (r >= 0) ids.insert(r);
  }
  return static_cast<int>(ids.size());
}

// The graph of regions (glue nodes alone) has a topological order.
bool Acyclic(const std::vector<int>& region, const std::vector<std::vector<int>>& preds) {
  size_t n = region.size();
  int regions = CountRegions(region);
  std::vector<int> group(n);
  int groups = regions;
  for (size_t i = 0; i < n; ++i) group[i] = region[i] >= 0 ? region[i] : groups++;
  std::vector<std::set<int>> in(static_cast<size_t>(groups));
  for (size_t i = 0; i < n; ++i) {
    for (int p : preds[i]) {
      if (group[static_cast<size_t>(p)] != group[i]) {
        in[static_cast<size_t>(group[i])].insert(group[static_cast<size_t>(p)]);
      }
    }
  }
  std::vector<char> done(static_cast<size_t>(groups), 0);
  for (int k = 0; k < groups; ++k) {
    int ready = -1;
    for (int g = 0; g < groups && ready < 0; ++g) {
      if (done[static_cast<size_t>(g)]) continue;
      bool ok = true;
      for (int p : in[static_cast<size_t>(g)]) ok &= done[static_cast<size_t>(p)] != 0;
      if (ok) ready = g;
    }
    if (ready < 0) return false;
    done[static_cast<size_t>(ready)] = 1;
  }
  return true;
}

TEST(PartitionDag, AChainOfOneDeviceIsOneRegion) {
  std::vector<int> r = PartitionDag({0, 0, 0, 0}, {{}, {0}, {1}, {2}});
  EXPECT_EQ(r, (std::vector<int>{0, 0, 0, 0}));
}

TEST(PartitionDag, AChainInterruptedByAnotherDeviceIsThreeRegions) {
  // a b on 1, c on 0 (an op device 1 cannot run), d e on 1.
  std::vector<int> r = PartitionDag({1, 1, 0, 1, 1}, {{}, {0}, {1}, {2}, {3}});
  EXPECT_EQ(r, (std::vector<int>{0, 0, 1, 2, 2}));
}

TEST(PartitionDag, ADiamondWhereNaiveMergingMakesACycle) {
  // a(0) -> b(1) -> d(0), a -> c(0) -> d. Merging a, c and d into one region would need b both
  // after and before it; the optimum is 3 regions.
  std::vector<std::vector<int>> preds = {{}, {0}, {0}, {1, 2}};
  std::vector<int> r = PartitionDag({0, 1, 0, 0}, preds);
  EXPECT_EQ(CountRegions(r), 3);
  EXPECT_TRUE(Acyclic(r, preds));
  EXPECT_EQ(r[0], r[2]);  // a and c together (c joins its predecessor first)
  EXPECT_NE(r[0], r[3]);
}

TEST(PartitionDag, ParallelBranchesOfOneDeviceShareARegion) {
  // Input glue x; two independent branches on device 1; joined on device 0.
  std::vector<std::vector<int>> preds = {{}, {0}, {1}, {0}, {3}, {2, 4}};
  std::vector<int> r = PartitionDag({-1, 1, 1, 1, 1, 0}, preds);
  EXPECT_EQ(r[0], -1);
  EXPECT_EQ(CountRegions(r), 2);
  EXPECT_EQ(r[1], r[4]);
  EXPECT_TRUE(Acyclic(r, preds));
}

TEST(PartitionDag, GlueSeparatesButIsInNoRegion) {
  // a(0) -> copy -> b(1) -> copy -> c(0): a and c cannot merge (the path goes through b).
  std::vector<std::vector<int>> preds = {{}, {0}, {1}, {2}, {3}};
  std::vector<int> r = PartitionDag({0, -1, 1, -1, 0}, preds);
  EXPECT_EQ(r, (std::vector<int>{0, -1, 1, -1, 2}));
}

TEST(PartitionDag, RandomDagsAreAcyclicKeepDevicesAndCannotMergeFurther) {
  std::mt19937 rng(20261122);
  for (int trial = 0; trial < 300; ++trial) {
    int n = 2 + static_cast<int>(rng() % 40);
    int devices = 1 + static_cast<int>(rng() % 3);
    std::vector<int> colors(static_cast<size_t>(n));
    std::vector<std::vector<int>> preds(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      colors[static_cast<size_t>(i)] =
          rng() % 6 == 0 ? -1 : static_cast<int>(rng() % static_cast<unsigned>(devices));
      for (int j = 0; j < i; ++j) {
        if (rng() % 100 < (j >= i - 3 ? 45u : 6u)) preds[static_cast<size_t>(i)].push_back(j);
      }
    }
    std::vector<int> r = PartitionDag(colors, preds);
    ASSERT_TRUE(Acyclic(r, preds)) << "trial " << trial;
    std::map<int, int> color_of;
    for (int i = 0; i < n; ++i) {
      size_t k = static_cast<size_t>(i);
      ASSERT_EQ(r[k] < 0, colors[k] < 0) << "trial " << trial << " node " << i;
      if (r[k] < 0) continue;
      auto [it, added] = color_of.emplace(r[k], colors[k]);
      ASSERT_EQ(it->second, colors[k]) << "region " << r[k] << " mixes devices, trial " << trial;
    }
    for (auto a = color_of.begin(); a != color_of.end(); ++a) {
      for (auto b = std::next(a); b != color_of.end(); ++b) {
        if (a->second != b->second) continue;
        EXPECT_TRUE(MergeMakesCycle(r, preds, a->first, b->first))
            << "regions " << a->first << " and " << b->first << " could merge, trial " << trial;
      }
    }
  }
}

TEST(Partition, LiftsRegionsIntoFunctionsWithTheirDevice) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm", 0), I.vdevice("llvm", 1)]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.to_vdevice(a, "llvm:1")
            c = R.exp(b)
            d = R.negative(a)
            e = R.to_vdevice(c, "llvm")
            f = R.add(d, e)
            R.output(f)
        return f
)");
  ir::IRModule got = RunPass("partition", mod);
  EXPECT_TRUE(ModulesEqual(got, Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("llvm", 1)]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        cls = Module
        main_region0_llvm: R.Tuple(R.Tensor((4,), "float32", "llvm"), R.Tensor((4,), "float32", "llvm")) = cls.main_region0_llvm(x)
        a: R.Tensor((4,), "float32", "llvm") = main_region0_llvm[0]
        d: R.Tensor((4,), "float32", "llvm") = main_region0_llvm[1]
        b: R.Tensor((4,), "float32", "llvm:1") = R.to_vdevice(a, "llvm:1")
        c: R.Tensor((4,), "float32", "llvm:1") = cls.main_region1_llvm_1(b)
        e: R.Tensor((4,), "float32", "llvm") = R.to_vdevice(c, "llvm")
        f: R.Tensor((4,), "float32", "llvm") = cls.main_region2_llvm(d, e)
        return f

    @R.function(private=True)
    def main_region0_llvm(x: R.Tensor((4,), "float32", "llvm")) -> R.Tuple(R.Tensor((4,), "float32", "llvm"), R.Tensor((4,), "float32", "llvm")):
        R.func_attr({"vdevice": "llvm", "codegen": "llvm"})
        a: R.Tensor((4,), "float32", "llvm") = R.nn.relu(x)
        d: R.Tensor((4,), "float32", "llvm") = R.negative(a)
        return (a, d)

    @R.function(private=True)
    def main_region1_llvm_1(b: R.Tensor((4,), "float32", "llvm:1")) -> R.Tensor((4,), "float32", "llvm:1"):
        R.func_attr({"vdevice": "llvm:1", "codegen": "llvm"})
        c: R.Tensor((4,), "float32", "llvm:1") = R.exp(b)
        return c

    @R.function(private=True)
    def main_region2_llvm(d: R.Tensor((4,), "float32", "llvm"), e: R.Tensor((4,), "float32", "llvm")) -> R.Tensor((4,), "float32", "llvm"):
        R.func_attr({"vdevice": "llvm", "codegen": "llvm"})
        f: R.Tensor((4,), "float32", "llvm") = R.add(d, e)
        return f
)")));
}

TEST(Partition, AModuleOnOneDeviceIsOneRegion) {
  ir::IRModule got = RunPass("partition", Parse(R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})

    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm")):
        a = R.nn.relu(x)
        b = R.exp(a)
        return b
)"));
  ASSERT_EQ(got.functions.size(), 2u);
  EXPECT_EQ(got.functions[1].first, "main_region0_llvm");
  EXPECT_EQ(*got.functions[1].second->attrs.Get<std::string>("codegen"), "llvm");
}

}  // namespace
}  // namespace quilt::passes
