// What the OpenCL back end can run: the ops with a OpenCL kernel. The back end has no kernels yet,
// so it takes nothing, and says so; each kernel that lands adds its op here.
#include "targets/capability.h"

#include "ir/op.h"

namespace quilt::targets {
namespace {

class OpenCl : public Capability {
 public:
  Support Supports(const ir::CallNode& call) const override {
    const ir::OpInfo* op = call.op();
    return Support::No("no OpenCL kernel for " + (op ? "R." + op->name : std::string("this call")) +
                       " yet");
  }
};

}  // namespace

const Capability& OpenClCapability() {
  static const OpenCl backend;
  return backend;
}

}  // namespace quilt::targets
