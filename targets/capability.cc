#include "targets/capability.h"

#include <map>
#include <memory>

#include "ir/op.h"

namespace quilt::targets {
namespace {

class NoBackEnd : public Capability {
 public:
  explicit NoBackEnd(std::string type) : type_(std::move(type)) {}
  Support Supports(const ir::CallNode&) const override {
    return Support::No("quilt has no back end for " + type_ + " devices");
  }

 private:
  std::string type_;
};

}  // namespace

Support NoKernelsYet::Supports(const ir::CallNode& call) const {
  const ir::OpInfo* op = call.op();
  return Support::No("no " + device_ + " kernel for " +
                     (op ? "R." + op->name : std::string("this call")) + " yet");
}

const Capability& CapabilityFor(const ir::Target& target) {
  std::string type = target.DeviceType();
  if (type == "cpu") return CpuCapability();
  if (type == "cuda") return CudaCapability();
  if (type == "opencl") return OpenClCapability();
  // Every other known device type (the kinds are fixed, so the table is made once).
  static const auto* others = [] {
    auto* m = new std::map<std::string, std::unique_ptr<NoBackEnd>>;
    for (const auto& [kind, device] : ir::KnownTargetKinds()) {
      if (!m->count(device)) m->emplace(device, std::make_unique<NoBackEnd>(device));
    }
    return m;
  }();
  auto it = others->find(type);
  static const NoBackEnd unknown("unknown");
  return it == others->end() ? static_cast<const Capability&>(unknown) : *it->second;
}

Support BatchNormForm(const ir::CallNode& call, const std::string& device) {
  const bool* training = call.attrs.Get<bool>("training");
  if (!training || *training) {
    return Support::No("R.nn.batch_norm with training=True (batch statistics): no " + device +
                       " kernel; inference models use training=False");
  }
  const bool* center = call.attrs.Get<bool>("center");
  const bool* scale = call.attrs.Get<bool>("scale");
  if (!center || !*center || !scale || !*scale) {
    return Support::No(
        "R.nn.batch_norm without its scale or shift (center=False or "
        "scale=False): no " +
        device + " kernel");
  }
  return Support::Yes();
}

}  // namespace quilt::targets
