// The attributes and arguments a kernel step may carry: its op's attributes (ir/ops.def, the one
// list of ops, read here as data: the runtime links nothing from the compiler) and those lowering
// adds (targets/fuse_epilogue.h, targets/cpu/kernels/fused.h). The package checker refuses any
// other, since a kernel would silently ignore it: a damaged attribute name must not change what
// runs.
#pragma once

#include <span>
#include <string_view>

namespace quilt::rt {

// The attribute names a kernel step running `op` may carry, or an empty span for an op this list
// does not know (the kernel table then refuses the step by name when the session prepares it).
// `known` is set to whether the op is on the list.
std::span<const std::string_view> KernelAttributes(std::string_view op, bool* known);

// The number of arguments (input_arity entries) a kernel step running `op` takes: the op's
// expression arguments, and up to `*extra` more that lowering adds (a conv's fused bias); false
// for an op this list does not know, or one whose steps take any number (a fused chain's).
bool KernelArguments(std::string_view op, int* count, int* extra);

// Whether argument `arg` of a kernel step running `op` is a tuple of any number of tensors
// (concat's and einsum's operands, read with KernelContext::ArgBegin/ArgSize). Every other
// argument is one tensor, which kernels read as input(i) without asking.
bool KernelTupleArgument(std::string_view op, int arg);

}  // namespace quilt::rt
