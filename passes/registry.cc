// The list of passes, in pipeline order. One line per pass; no static registration.
#include "passes/pass.h"

namespace quilt::passes {

const std::vector<PassInfo>& AllPasses() {
  static const std::vector<PassInfo> passes = {
      {"normalize", "re-infer every struct info; fill in return types", &CreateNormalize},
      {"update-vdevice",
       "set the vdevice list: {target=\"T\" [index=I] [id=0] [scope=global]} or {reset=\"a;b\"}",
       &CreateUpdateVDevice},
      {"realize-vdevice",
       "place every tensor from annotations, hints and calls (DESIGN rules 1-8) [fill=true]",
       &CreateRealizeVDevice},
      {"assign",
       "give every op a device: rules, then the first that supports it, host fallback "
       "[strict=false]",
       &CreateAssign},
      {"simplify", "remove bindings nobody uses", &CreateSimplify},
      {"fold-constants",
       "fold an inference batch_norm with constant parameters into the conv2d before it, and "
       "a scalar multiply or divide into the conv2d after it",
       &CreateFoldConstants},
      {"partition",
       "group each device's ops into the fewest acyclic regions, lifted into functions "
       "{vdevice, codegen}",
       &CreatePartition},
      {"insert-device-copies",
       "keep only the copies that move data; place constants on each device that uses them",
       &CreateInsertDeviceCopies},
  };
  return passes;
}

}  // namespace quilt::passes
