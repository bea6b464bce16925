// The runtime's seam to devices: what the executor asks of any device. The executor holds
// devices, prepared steps and queues through these interfaces and never names a device kind's
// code; each kind implements them (cpu_device.cc here; accelerators as plug-ins).
//
//   std::unique_ptr<Device> cpu;
//   QUILT_RETURN_IF_ERROR(CreateDevice(DeviceKind::kCpu, 0, {}, &cpu));
//   std::unique_ptr<PreparedStep> step;                  // at session creation: the kernel found,
//   QUILT_RETURN_IF_ERROR(cpu->Prepare(*pkg_step, &step));  // static checks done
//   std::unique_ptr<Queue> q;
//   QUILT_RETURN_IF_ERROR(cpu->CreateQueue(&q));         // per run
//   QUILT_RETURN_IF_ERROR(q->Run(*step, ctx));           // in order; Finish() waits for all
//
// Everything that can fail for a static reason fails in CreateDevice or Prepare; Run fails only
// on what depends on the data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/src/kernel.h"
#include "runtime/src/status.h"

namespace quilt::pkg {
struct Step;
}

namespace quilt::rt {

// Every device kind the runtime knows, one explicit list. kTest is the opaque test device
// (host memory behind handles, work run late) that keeps the executor honest without a GPU.
enum class DeviceKind : uint8_t { kCpu, kOpenCl, kCuda, kTest };
inline constexpr DeviceKind kDeviceKinds[] = {DeviceKind::kCpu, DeviceKind::kOpenCl,
                                              DeviceKind::kCuda, DeviceKind::kTest};

// "cpu", "opencl", "cuda", "test": the names packages and session options use.
std::string_view DeviceKindName(DeviceKind kind);
std::optional<DeviceKind> ParseDeviceKind(std::string_view name);
// "CPU", "OpenCL", "CUDA", "test device": the kind as messages name it.
std::string_view DeviceKindTitle(DeviceKind kind);
// "cpu, opencl, cuda, test", for messages.
std::string DeviceKindList();

struct DeviceInfo {
  DeviceKind kind = DeviceKind::kCpu;
  int id = 0;
  std::string name;               // what the device calls itself ("host CPU", a GPU's name)
  bool host_addressable = false;  // the executor may read and write its buffers in place
  uint64_t buffer_alignment = 64;
};

// A step made ready to run on one device: its kernel found, its attributes read. Made once per
// session; a device's queue runs it as many times as runs ask.
class PreparedStep {
 public:
  virtual ~PreparedStep() = default;
};

// A device's in-order queue, one per run: work is done in the order it is given. A queue may run
// work as it is given (the CPU) or later; Finish returns when all of it is done.
class Queue {
 public:
  virtual ~Queue() = default;
  // Runs `step` with the tensors and output memory of `ctx`.
  virtual Status Run(const PreparedStep& step, KernelContext& ctx) = 0;
  virtual Status Finish() = 0;
};

struct DeviceOptions {
  int threads = 1;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // Fails with a message naming the step when the device cannot run it.
  virtual Status Prepare(const pkg::Step& step, std::unique_ptr<PreparedStep>* out) const = 0;
  virtual Status CreateQueue(std::unique_ptr<Queue>* out) const = 0;
};

// The device of `kind` numbered `id` on this machine, or an error saying why there is none.
// Every cpu id is the one host CPU (a package's cpu vdevices share it).
Status CreateDevice(DeviceKind kind, int id, const DeviceOptions& options,
                    std::unique_ptr<Device>* out);

}  // namespace quilt::rt
