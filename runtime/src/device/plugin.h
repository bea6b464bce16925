// Device plug-ins: accelerator devices live in shared libraries of their own
// (`libquilt_opencl.so`, `libquilt_cuda.so`) that the runtime opens only when a package needs
// that kind, so a CPU-only deployment never needs an accelerator's libraries. Each exports one C
// function, `quilt_device_plugin`, returning its entry below.
//
// Where the runtime looks, in order: each folder of the QUILT_PLUGIN_PATH environment variable
// (colon separated); the folder of the runtime itself (the executable it is linked into, or
// libquilt.so) and `../lib` beside it; then the dynamic loader's own search (LD_LIBRARY_PATH,
// the system's folders).
//
// Plug-ins are built with the runtime's headers from the same source tree: the entry carries
// kDevicePluginAbi, and a plug-in of another ABI is refused rather than called.
#pragma once

#include <memory>
#include <string>

#include "runtime/src/device/device.h"

namespace quilt::rt {

// Bumped whenever device.h, kernel.h's tensor types or this struct change shape.
inline constexpr int kDevicePluginAbi = 3;

struct DevicePlugin {
  int abi = kDevicePluginAbi;
  DeviceKind kind = DeviceKind::kOpenCl;
  // Opens device `id` of the plug-in's kind; an error says why there is none.
  Status (*create)(int id, const DeviceOptions& options, std::unique_ptr<Device>* out) = nullptr;
};

// The plug-in library's file name for `kind` ("libquilt_opencl.so").
std::string DevicePluginFile(DeviceKind kind);

// Opens (once per process) the plug-in for `kind`, or says where it looked and why it failed.
Status LoadDevicePlugin(DeviceKind kind, const DevicePlugin** out);

}  // namespace quilt::rt

extern "C" {
// What a plug-in exports (with default visibility).
using QuiltDevicePluginFn = const quilt::rt::DevicePlugin* (*)();
}
