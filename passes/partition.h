// partition: groups the ops of one device into regions and lifts each region into a function
// with attributes {"vdevice", "codegen"} (DESIGN step 8).
//
// The grouping works on a plain DAG (PartitionDag), so it can be tested on generated graphs:
// nodes come in topological order, each with a color (a device; -1 for glue such as copies,
// which belongs to no region). The result has the fewest regions this greedy finds and is
// acyclic: first every node joins a same-color predecessor's region when that makes no cycle,
// then any two regions of one color merge while that makes no cycle. So no two regions of one
// device can be merged when it ends.
#pragma once

#include <vector>

namespace quilt::passes {

// Region id per node (-1 for glue), numbered in order of first node.
std::vector<int> PartitionDag(const std::vector<int>& colors,
                              const std::vector<std::vector<int>>& preds);

// Whether merging regions `a` and `b` of `region` (per node) would make the region graph cyclic:
// a path from one to the other through some third region or glue node.
bool MergeMakesCycle(const std::vector<int>& region, const std::vector<std::vector<int>>& preds,
                     int a, int b);

}  // namespace quilt::passes
