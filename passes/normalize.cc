// normalize: re-infers every struct info of the module from parameters and annotations
// (ir/normalize.cc does the work; the builder normalizes on every emit, so this pass matters
// after hand-written IR or a pass that changed annotations).
#include "ir/builder.h"
#include "passes/pass.h"

namespace quilt::passes {

Expected<Pass> CreateNormalize(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {}); !s) return s.error();
  return Pass{"normalize", [](const ir::IRModule& mod) { return ir::NormalizeModule(mod); }};
}

}  // namespace quilt::passes
