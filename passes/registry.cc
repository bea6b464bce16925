// The list of passes, in pipeline order. One line per pass; no static registration.
#include "passes/pass.h"

namespace quilt::passes {

const std::vector<PassInfo>& AllPasses() {
  static const std::vector<PassInfo> passes = {
      {"normalize", "re-infer every struct info; fill in return types", &CreateNormalize},
  };
  return passes;
}

}  // namespace quilt::passes
