// The text form: TVMScript as in TVM Relax (see DESIGN "Text form"). Printing is deterministic,
// and parse(print(m)) is structurally equal to m.
//
//   std::string text = PrintModule(mod);
#pragma once

#include <string>

#include "ir/module.h"

namespace quilt::ir {

std::string PrintModule(const IRModule& mod);
// One struct info as an annotation; vdevices are named against `mod`'s list when given.
std::string PrintStructInfo(const StructInfo& s, const IRModule* mod = nullptr);
// A Python literal for an attribute value.
std::string PrintAttrValue(const AttrValue& v, const IRModule* mod = nullptr);
// Shortest text that reads back as the same double, always with a '.' or exponent.
std::string FormatDouble(double v);

}  // namespace quilt::ir
