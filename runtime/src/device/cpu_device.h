// The CPU as a device: the kernel table of targets/cpu/kernels, run inline on the calling thread
// (and the run's thread pool, through the kernel context).
#pragma once

#include <memory>

#include "runtime/src/device/device.h"

namespace quilt::rt {

Status CreateCpuDevice(int id, const DeviceOptions& options, std::unique_ptr<Device>* out);

}  // namespace quilt::rt
