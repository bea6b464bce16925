#include "runtime/src/device/device.h"

#include "quilt/package_generated.h"

namespace quilt::rt {

std::string_view DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kOpenCl:
      return "opencl";
    case DeviceKind::kCuda:
      return "cuda";
    case DeviceKind::kTest:
      return "test";
  }
  return "?";
}

std::string_view DeviceKindTitle(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "CPU";
    case DeviceKind::kOpenCl:
      return "OpenCL";
    case DeviceKind::kCuda:
      return "CUDA";
    case DeviceKind::kTest:
      return "test device";
  }
  return "?";
}

std::string NoKernelMessage(DeviceKind kind, std::string_view kernel) {
  return "no " + std::string(DeviceKindTitle(kind)) + " kernel for " + std::string(kernel);
}

std::optional<DeviceKind> ParseDeviceKind(std::string_view name) {
  for (DeviceKind k : kDeviceKinds) {
    if (DeviceKindName(k) == name) return k;
  }
  return std::nullopt;
}

std::string DeviceKindList() {
  std::string s;
  for (DeviceKind k : kDeviceKinds) s += (s.empty() ? "" : ", ") + std::string(DeviceKindName(k));
  return s;
}

int StepArgBegin(const pkg::Step& step, int arg) {
  const auto* arity = step.input_arity();
  if (!arity) return arg;
  int begin = 0;
  for (int a = 0; a < arg && a < static_cast<int>(arity->size()); ++a) begin += arity->Get(a);
  return begin;
}

int StepArgSize(const pkg::Step& step, int arg) {
  const auto* arity = step.input_arity();
  if (!arity) return arg < static_cast<int>(step.inputs()->size()) ? 1 : 0;
  return arg < static_cast<int>(arity->size()) ? arity->Get(arg) : 0;
}

Status Device::Load(const CodeBlob& code, std::unique_ptr<Executable>* /*out*/) {
  return Status::Error("the " + std::string(DeviceKindTitle(info().kind)) +
                       " device runs no generated code of format '" + std::string(code.format) +
                       "'");
}

}  // namespace quilt::rt
