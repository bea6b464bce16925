// The runtime's seam to devices: what the executor asks of any device. The executor holds
// devices, buffers, prepared steps, queues and events through these interfaces and never names
// a device kind's code; each kind implements them (cpu_device.cc, test_device.cc here;
// accelerators as plug-ins).
//
//   std::unique_ptr<Device> cpu;
//   QUILT_RETURN_IF_ERROR(CreateDevice(DeviceKind::kCpu, 0, {}, &cpu));
//   std::unique_ptr<PreparedStep> step;                    // at session creation: the kernel
//   QUILT_RETURN_IF_ERROR(cpu->Prepare(*pkg_step, nullptr, &step));  // found, checks done
//   std::unique_ptr<Queue> q;
//   QUILT_RETURN_IF_ERROR(cpu->CreateQueue(&q));           // per run
//   QUILT_RETURN_IF_ERROR(q->Run(*step, args));            // in order; Finish() waits for all
//
// Memory is the device's: the executor allocates buffers from the device and names tensors as
// buffer + offset (BufferRef), never as a raw pointer. Only where a device says its memory is
// host addressable may the executor take a buffer's host address; everything else moves
// through a queue (Write, Read, Copy), in order with the steps.
//
// Everything that can fail for a static reason fails in CreateDevice or Prepare; Run fails only
// on what depends on the data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
// "no CPU kernel for add": how a device says it has no kernel of that name.
std::string NoKernelMessage(DeviceKind kind, std::string_view kernel);
// "cpu, opencl, cuda, test", for messages.
std::string DeviceKindList();

struct DeviceInfo {
  DeviceKind kind = DeviceKind::kCpu;
  int id = 0;                     // the physical device: every CPU id is the one host CPU (0)
  std::string name;               // what the device calls itself ("host CPU", a GPU's name)
  bool host_addressable = false;  // the executor may read and write its buffers in place
  uint64_t buffer_alignment = 64;
};

// Device memory. Made by a device (Allocate, Import) and held through shared pointers, so a
// queue that runs work late keeps the buffers of that work alive until it has run.
class Buffer : public std::enable_shared_from_this<Buffer> {
 public:
  virtual ~Buffer() = default;
  uint64_t size() const { return size_; }
  // The host address of byte 0 where the device's memory is host addressable, else null.
  virtual uint8_t* host() const { return nullptr; }
  // Whether this is host memory the device made for this buffer alone (not a caller's, not the
  // package's) and that stays good after the device is gone: a run may then hand it to the
  // caller as an output instead of copying it.
  virtual bool outlives_device() const { return false; }

 protected:
  explicit Buffer(uint64_t size) : size_(size) {}

 private:
  uint64_t size_;
};
using BufferPtr = std::shared_ptr<Buffer>;

// A range of a buffer: how the executor names device memory.
struct BufferRef {
  Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// A tensor in a device's memory: what steps read and write.
struct DeviceTensor {
  DType dtype = DType::kVoid;
  Shape shape;
  BufferRef data;
};

// Memory for the outputs of a step whose output shapes only its kernel knows (they depend on
// the data): the kernel asks while it runs, the executor places the tensor.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  virtual Status Allocate(int i, DType dtype, const Shape& shape, DeviceTensor** out) = 0;
  // The error for a kernel that makes output i other than the executor placed it, in the words
  // the executor uses for the compiler's dims ("output 0 dim 1 is 3, expected n = 4").
  virtual Status Disagree(int i, DType dtype, const Shape& shape) = 0;
};

// What one step reads and writes. The executor places the outputs before the step runs
// whenever the compiler's dims give their shapes (`placed`, `outputs[i]` set); otherwise the
// kernel places them through `allocate` as it runs, and the queue runs the step before Run
// returns (all earlier work first), so the executor learns the shapes.
struct StepArgs {
  const pkg::Step* step = nullptr;
  std::vector<const DeviceTensor*> inputs;  // flattened tuples; null for an absent optional input
  // Bit i: input i is the same tensor in every run of the session (KernelContext::constant_input;
  // inputs past the 64th are never marked).
  uint64_t constant_inputs = 0;
  std::vector<DeviceTensor*> outputs;
  std::vector<DType> output_dtypes;  // as the compiler inferred them (kVoid: not known)
  bool placed = false;
  OutputAllocator* allocate = nullptr;  // may be null for placed outputs
  // A dispatch step: its dims evaluated now (the launch grid and the sizes its code takes; see
  // the device's dispatch convention). Empty for library kernels.
  std::vector<int64_t> dims = {};
};

// Where argument `arg` of `step` starts in its flattened inputs, and how many inputs it has (a
// tuple argument contributes one per field; steps without an arity list have one per argument).
int StepArgBegin(const pkg::Step& step, int arg);
int StepArgSize(const pkg::Step& step, int arg);

// A code section of the package (TargetCode) as its device is given it: the bytes stay the
// package's, valid while the session lives.
struct CodeBlob {
  std::string_view format;  // "opencl-c", "elf-object", "ptx"
  std::string_view target;  // the target the compiler made it for
  const uint8_t* bytes = nullptr;
  uint64_t size = 0;
  std::vector<std::string_view> entry_points = {};
};

// Code loaded on a device once per session (an OpenCL program built, a CUDA module loaded); the
// dispatch steps of the section are prepared against it.
class Executable {
 public:
  virtual ~Executable() = default;
};

// A step made ready to run on one device: its kernel found, its attributes read. Made once per
// session; a device's queue runs it as many times as runs ask.
class PreparedStep {
 public:
  virtual ~PreparedStep() = default;
};

// A point in a queue's work: done when everything given to the queue before it is done.
class Event {
 public:
  virtual ~Event() = default;
  // Blocks the calling thread until the event is done.
  virtual Status Wait() = 0;
};

// A device's in-order queue, one per run: work is done in the order it is given, each piece
// after the one before has finished. A queue may run work as it is given (the CPU) or later;
// Finish returns when all of it is done. A session gives a finished queue to its next run.
class Queue {
 public:
  virtual ~Queue() = default;
  virtual Status Run(const PreparedStep& step, const StepArgs& args) = 0;
  // Within the device.
  virtual Status Copy(BufferRef src, BufferRef dst) = 0;
  // From host memory: the bytes are taken when Write returns (the host memory may be reused at
  // once); they reach `dst` in order with the queue's other work.
  virtual Status Write(const void* host, BufferRef dst) = 0;
  // To host memory: the bytes are there once an event signalled after the read is done.
  virtual Status Read(BufferRef src, void* host) = 0;
  // An event done when all work given so far is done.
  virtual Status Signal(std::unique_ptr<Event>* out) = 0;
  // Work given after this waits for `event` (of any queue).
  virtual Status Wait(Event& event) = 0;
  virtual Status Finish() = 0;
  // Returns once all work given so far is done, for the host to read what it wrote: by default
  // an event signalled and waited on; a queue that runs its work as it is given (the CPU's) has
  // nothing to wait for, and makes no event (one allocation fewer per wait, several a run).
  virtual Status WaitOnHost() {
    std::unique_ptr<Event> done;
    if (Status st = Signal(&done); !st.ok()) return st;
    return done->Wait();
  }
};

struct DeviceOptions {
  int threads = 1;
  // Worker threads of all concurrent runs together (SessionLimits::max_workers).
  int max_workers = 1024;
  // A folder where a device keeps the binaries of the code it builds (OpenCL programs), keyed by
  // device, driver and source, so a later session skips the build; empty: no cache. A damaged or
  // stale entry is rebuilt from source; a folder that cannot be written is not an error.
  std::string code_cache_dir;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // A buffer of `bytes` (contents undefined); an error when out of memory.
  virtual Status Allocate(uint64_t bytes, BufferPtr* out) = 0;
  // A buffer holding `bytes` bytes at `host`, which the caller keeps unchanged for the buffer's
  // life: a host-addressable device uses them in place, others copy them now. For constants
  // (the package's bytes) and borrowed inputs.
  virtual Status Import(const void* host, uint64_t bytes, BufferPtr* out) = 0;
  // Loads a code section of the package; a device that runs no code of that format says so.
  virtual Status Load(const CodeBlob& code, std::unique_ptr<Executable>* out);
  // Fails with a message naming the step when the device cannot run it. `code`: for a dispatch
  // step, its code section as this device loaded it; null otherwise.
  virtual Status Prepare(const pkg::Step& step, const Executable* code,
                         std::unique_ptr<PreparedStep>* out) const = 0;
  virtual Status CreateQueue(std::unique_ptr<Queue>* out) = 0;
};

// The device of `kind` numbered `id` on this machine, or an error saying why there is none.
// Every cpu id is the one host CPU (a package's cpu vdevices share it).
Status CreateDevice(DeviceKind kind, int id, const DeviceOptions& options,
                    std::unique_ptr<Device>* out);

// The host address of `ref` on a host-addressable device (null otherwise).
inline uint8_t* HostAddress(const BufferRef& ref) {
  uint8_t* base = ref.buffer ? ref.buffer->host() : nullptr;
  return base ? base + ref.offset : nullptr;
}

}  // namespace quilt::rt
