// Struct-info rules of the ops in ir/ops/recurrent.def.
#include "ir/op_infer.h"

namespace quilt::ir {}  // namespace quilt::ir
