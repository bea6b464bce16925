// Struct-info rules of the ops in ir/ops/signal.def.
#include "ir/op_infer.h"

namespace quilt::ir {}  // namespace quilt::ir
