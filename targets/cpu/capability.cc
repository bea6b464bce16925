// The CPU takes every op that has a CPU kernel (the table the runtime runs from), plus the
// control flow the runtime executes itself.
#include "targets/capability.h"

#include "ir/op.h"
#include "targets/cpu/kernels/registry.h"

namespace quilt::targets {
namespace {

class Cpu : public Capability {
 public:
  Support Supports(const ir::CallNode& call) const override {
    const ir::OpInfo* op = call.op();
    if (!op) return Support::Yes();  // calls of functions: their ops are placed one by one
    if (op->kind == ir::OpKind::kWhileLoop || op->kind == ir::OpKind::kScan) return Support::Yes();
    if (op->kind == ir::OpKind::kMatchCast) return Support::Yes();  // the value itself
    if (op->kind == ir::OpKind::kBatchNorm) {
      if (Support s = BatchNormForm(call, "CPU"); !s.ok) return s;
    }
    if (cpu::FindKernel(op->name)) return Support::Yes();
    return Support::No("no CPU kernel for R." + op->name);
  }
};

}  // namespace

const Capability& CpuCapability() {
  static const Cpu cpu;
  return cpu;
}

}  // namespace quilt::targets
