// CreateDevice: the one place that maps a device kind to its implementation (built in, or a
// plug-in). Kept apart from device.cc, which plug-ins compile into themselves.
#include "runtime/src/device/cpu_device.h"
#include "runtime/src/device/device.h"
#include "runtime/src/device/plugin.h"
#include "runtime/src/device/test_device.h"

namespace quilt::rt {

Status CreateDevice(DeviceKind kind, int id, const DeviceOptions& options,
                    std::unique_ptr<Device>* out) {
  switch (kind) {
    case DeviceKind::kCpu:
      return CreateCpuDevice(id, options, out);
    case DeviceKind::kTest:
      return CreateTestDevice(id, options, out);
    case DeviceKind::kOpenCl:
    case DeviceKind::kCuda:
      break;
  }
  const DevicePlugin* plugin = nullptr;
  Status st = LoadDevicePlugin(kind, &plugin);
  if (!st.ok()) {
    return Status::Error("no " + std::string(DeviceKindTitle(kind)) +
                         " device in this runtime: " + st.message());
  }
  return plugin->create(id, options, out);
}

}  // namespace quilt::rt
