// The well-formedness check run after every pass in tests and debug builds:
//  - every variable is defined before it is used, once, and dataflow variables stay in their
//    block;
//  - every binding has struct info that agrees with what inference gives for its value;
//  - the tensor arguments of every op call are on one vdevice (to_vdevice and hint_on_device
//    aside), and every vdevice named anywhere is in the module's list;
//  - every called function exists, with the right number of arguments.
#pragma once

#include "ir/module.h"

namespace quilt::ir {

// The first problem found, located by function and value name.
Status Verify(const IRModule& mod);

}  // namespace quilt::ir
