// User placement rules (quiltc --place RULE) turned into R.hint_on_device annotations that
// `assign` honours, one op at a time:
//
//   op:Softmax=llvm            every op converted from an ONNX node of that op type
//   node:/backbone/*=opencl    every op from a node whose name matches the glob
//   region:FROM..TO=cuda       every op on a path from node FROM to node TO, both included
//
// The device is a device string of the module's vdevice list ("cuda", "cuda:1", "vdevice:2").
// A rule that names nothing, an unknown node, a region with no path from FROM to TO, a bad
// device and one op asked for on two devices are errors that say which rule and why. A region
// is every op on a path between its ends, so it is closed under paths and can never make the
// graph cyclic once it is partitioned.
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace quilt::passes {

Expected<ir::IRModule> ApplyPlacementRules(const ir::IRModule& mod,
                                           const std::vector<std::string>& rules);

}  // namespace quilt::passes
