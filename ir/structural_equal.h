// Structural equality and hashing of modules: variables and symbolic dims are matched by where
// they are defined (parameters by position, bindings in order), vdevices and targets by value,
// functions by name. Equal modules hash equally.
#pragma once

#include <cstddef>
#include <string>

#include "ir/module.h"

namespace quilt::ir {

// On inequality, *why (when given) says where the first difference is.
bool StructuralEqual(const IRModule& a, const IRModule& b, std::string* why = nullptr);
size_t StructuralHash(const IRModule& m);

// A unified line diff of two texts (`-` lines of a, `+` lines of b, 2 lines of context).
std::string LineDiff(const std::string& a, const std::string& b);

}  // namespace quilt::ir
