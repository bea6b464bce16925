#include "runtime/src/device/cpu_device.h"

#include <string>

#include "quilt/package_generated.h"
#include "targets/cpu/kernels/registry.h"

namespace quilt::rt {
namespace {

class CpuStep final : public PreparedStep {
 public:
  explicit CpuStep(KernelFn fn) : fn(fn) {}
  KernelFn fn;
};

class CpuQueue final : public Queue {
 public:
  Status Run(const PreparedStep& step, KernelContext& ctx) override {
    return static_cast<const CpuStep&>(step).fn(ctx);
  }
  Status Finish() override { return Status::Ok(); }
};

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int id) {
    info_.kind = DeviceKind::kCpu;
    info_.id = id;
    info_.name = "host CPU";
    info_.host_addressable = true;
    info_.buffer_alignment = 64;
  }
  const DeviceInfo& info() const override { return info_; }
  Status Prepare(const pkg::Step& step, std::unique_ptr<PreparedStep>* out) const override {
    std::string_view name = step.kernel() ? step.kernel()->string_view() : std::string_view();
    KernelFn fn = cpu::FindKernel(name);
    if (!fn) return Status::Error("no CPU kernel for " + std::string(name));
    *out = std::make_unique<CpuStep>(fn);
    return Status::Ok();
  }
  Status CreateQueue(std::unique_ptr<Queue>* out) const override {
    *out = std::make_unique<CpuQueue>();
    return Status::Ok();
  }

 private:
  DeviceInfo info_;
};

}  // namespace

Status CreateCpuDevice(int id, const DeviceOptions&, std::unique_ptr<Device>* out) {
  *out = std::make_unique<CpuDevice>(id);
  return Status::Ok();
}

}  // namespace quilt::rt
