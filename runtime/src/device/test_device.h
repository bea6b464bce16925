// The opaque test device: host memory the executor may not touch (its buffers have no host
// address), filled with 0xff bytes when allocated so that a forgotten copy shows as NaN or -1,
// and a queue that runs nothing until an event is waited for or the queue finishes, so that a
// forgotten wait reads stale memory. Its kernels are the CPU's. It runs the conformance suite
// split with the CPU, so every missing copy, wait and host dereference in the executor shows
// without a GPU.
#pragma once

#include <memory>

#include "runtime/src/device/device.h"

namespace quilt::rt {

Status CreateTestDevice(int id, const DeviceOptions& options, std::unique_ptr<Device>* out);

}  // namespace quilt::rt
