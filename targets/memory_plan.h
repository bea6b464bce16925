// Memory planning on plain tables: values with a static size and a live range [first, last]
// (step indices, inclusive) get offsets in one arena so that no two values live at the same
// time overlap. Greedy by size, largest first, each at the lowest offset that fits: the usual
// heuristic of inference engines (TFLite's arena planner, ORT's), close to optimal in practice.
#pragma once

#include <cstdint>
#include <vector>

namespace quilt::compiler {

struct LiveRange {
  int64_t size = 0;
  int first = 0;
  int last = 0;
};

struct ArenaPlan {
  std::vector<int64_t> offsets;  // per range
  int64_t total = 0;             // arena size
};

ArenaPlan PlanArena(const std::vector<LiveRange>& ranges, int64_t alignment = 64);

}  // namespace quilt::compiler
