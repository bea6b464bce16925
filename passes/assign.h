// assign: gives every op of the module a device (DESIGN step 6) and inserts the copies that
// follow from it, so the module stays valid (every op's tensors on one vdevice).
//
//   AssignResult r = *Assign(mod, {.strict = false});
//   for (const OpPlacement& p : r.ops) ...   // the placement report's raw material
//
// Per op of the entry function, in order:
//  - control flow (If and what it runs, loops, calls of functions) and the producer of a
//    condition run on the host;
//  - an op that a rule pinned (R.hint_on_device on its result) or that is already placed runs
//    there, and it is an error when that device cannot run it;
//  - small shape computations (from shape_to_tensor to tensor_to_shape, integer, at most
//    `small_shape_elements` elements) run on the host;
//  - every other op runs on the first vdevice, in list order (the --device order), whose target
//    supports it; taking a later one is a fallback, recorded with each refusal's reason;
//  - then a fragment of at most `max_fragment_ops` cheap ops (elementwise, broadcast,
//    injective) on an accelerator whose inputs and consumers are all on the host moves to the
//    host: its copies would cost more than it saves.
// Free parameters are on the host, the entry's results are copied back to the host, and every
// other function runs on the host. With `strict`, any fallback is an error listing each op.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/module.h"
#include "targets/capability.h"

namespace quilt::passes {

struct AssignOptions {
  bool strict = false;
  // Whether `device` can run `call`; by default the targets' own answer (CapabilityFor).
  std::function<targets::Support(const ir::VDevice& device, const ir::CallNode& call)> supports;
  int64_t small_shape_elements = 64;
  int max_fragment_ops = 3;
};

struct OpPlacement {
  enum class Why { kFirstChoice, kPinned, kPlaced, kFallback, kShape, kFragment, kControlFlow };
  std::string function;  // the function it is in
  std::string value;     // the variable it binds
  std::string node;      // where it came from (the ONNX node name), may be empty
  std::string op;        // "nn.conv2d"
  int device = -1;       // index into the module's vdevice list
  Why why = Why::kFirstChoice;
  std::string reason;  // for a fallback: each device passed over and why
};
std::string_view WhyName(OpPlacement::Why why);

struct AssignResult {
  ir::IRModule module;
  std::vector<OpPlacement> ops;
};

Expected<AssignResult> Assign(const ir::IRModule& mod, const AssignOptions& options = {});

}  // namespace quilt::passes
