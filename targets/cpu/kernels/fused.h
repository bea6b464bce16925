// A fused elementwise step: a chain (or tree) of elementwise and broadcasting ops that lowering
// made into one step (targets/fuse_elementwise.h), so a device that generates code runs it as one
// kernel. Its attributes describe the members, in the order they compute:
//
//   ops     strs  each member's op ("add", "sigmoid", ...)
//   arity   ints  how many operands each member reads
//   args    ints  the operands, member after member: k >= 0 is the step's input k, k < 0 is the
//                 result of member -k - 1 (an earlier one)
//   dtypes  ints  each member's result element type (the last is the step's output)
//   M:NAME        member M's attribute NAME ("2:alpha")
//
// Every member's result broadcasts to the step output's shape; each member broadcasts its
// operands as its op does, so a generated kernel may read every input broadcast straight to the
// output's shape and compute each member per output element. The CPU kernel (fused.cc) runs the
// members' own kernels one after another, so a package whose accelerator is absent or whose code
// did not load still runs the step.
#pragma once

#include <string_view>

namespace quilt::cpu {

inline constexpr std::string_view kFusedElementwise = "fused_elementwise";

}  // namespace quilt::cpu
