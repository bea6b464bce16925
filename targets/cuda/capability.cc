// What the CUDA back end can run: the ops with a CUDA kernel. The back end has no kernels yet, so
// it takes nothing, and says so; each kernel that lands adds its op here.
#include "targets/capability.h"

#include "ir/op.h"

namespace quilt::targets {
namespace {

class Cuda : public Capability {
 public:
  Support Supports(const ir::CallNode& call) const override {
    const ir::OpInfo* op = call.op();
    return Support::No("no CUDA kernel for " + (op ? "R." + op->name : std::string("this call")) +
                       " yet");
  }
};

}  // namespace

const Capability& CudaCapability() {
  static const Cuda backend;
  return backend;
}

}  // namespace quilt::targets
