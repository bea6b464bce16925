#include "targets/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace quilt::compiler {

ArenaPlan PlanArena(const std::vector<LiveRange>& ranges, int64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(ranges.size(), -1);
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by start, then index, so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (ranges[a].size != ranges[b].size) return ranges[a].size > ranges[b].size;
    return ranges[a].first < ranges[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const LiveRange& r = ranges[i];
    int64_t size = (r.size + alignment - 1) / alignment * alignment;
    // The blocks already placed whose lifetime overlaps r, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const LiveRange& o = ranges[j];
      if (o.last < r.first || r.last < o.first) continue;
      int64_t osize = (o.size + alignment - 1) / alignment * alignment;
      busy.emplace_back(plan.offsets[j], plan.offsets[j] + osize);
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin - offset >= size) break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, offset + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace quilt::compiler
