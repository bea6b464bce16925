// The arena planner on plain tables: live values never overlap, dead ones are reused.
#include "targets/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace quilt::compiler {
namespace {

bool Overlap(const LiveRange& a, int64_t oa, const LiveRange& b, int64_t ob) {
  bool live_together = !(a.last < b.first || b.last < a.first);
  bool bytes_overlap = oa < ob + b.size && ob < oa + a.size;
  return live_together && bytes_overlap;
}

TEST(PlanArena, ValuesLiveAtOnceGetDisjointBytes) {
  std::vector<LiveRange> r = {{100, 0, 2}, {200, 1, 3}, {50, 2, 2}};
  ArenaPlan p = PlanArena(r);
  for (size_t i = 0; i < r.size(); ++i) {
    for (size_t j = i + 1; j < r.size(); ++j)
      EXPECT_FALSE(Overlap(r[i], p.offsets[i], r[j], p.offsets[j]));
  }
  EXPECT_EQ(p.total, 448);  // 256 + 128 + 64, each rounded up to 64 bytes
}

TEST(PlanArena, ValuesDeadBeforeAnotherStartsShareMemory) {
  // A chain: each value dies when the next is made from it, so two buffers suffice.
  std::vector<LiveRange> r = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  ArenaPlan p = PlanArena(r);
  EXPECT_EQ(p.total, 2048);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
  EXPECT_EQ(p.offsets[1], p.offsets[3]);
}

TEST(PlanArena, OffsetsAreAligned) {
  std::vector<LiveRange> r = {{3, 0, 5}, {5, 0, 5}, {7, 0, 5}};
  ArenaPlan p = PlanArena(r, 64);
  for (int64_t o : p.offsets) EXPECT_EQ(o % 64, 0);
}

TEST(PlanArena, RandomTablesNeverOverlapAndNeverExceedTheSum) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<LiveRange> r;
    int64_t sum = 0;
    int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % 20);
      LiveRange l{static_cast<int64_t>(1 + rng() % 5000), first,
                  first + static_cast<int>(rng() % 6)};
      sum += (l.size + 63) / 64 * 64;
      r.push_back(l);
    }
    ArenaPlan p = PlanArena(r);
    ASSERT_LE(p.total, sum);
    for (int i = 0; i < n; ++i) {
      ASSERT_GE(p.offsets[i], 0);
      ASSERT_LE(p.offsets[i] + r[i].size, p.total);
      for (int j = i + 1; j < n; ++j) ASSERT_FALSE(Overlap(r[i], p.offsets[i], r[j], p.offsets[j]));
    }
  }
}

}  // namespace
}  // namespace quilt::compiler
