#include "runtime/src/device/test_device.h"

#include <cstring>
#include <functional>
#include <string>

#include "quilt/package_generated.h"
#include "runtime/src/block_pool.h"
#include "runtime/src/device/host_step.h"

namespace quilt::rt {
namespace {

class TestBuffer final : public Buffer {
 public:
  explicit TestBuffer(uint64_t size)
      : Buffer(size),
        mem_(static_cast<uint8_t*>(
            std::aligned_alloc(64, std::max<uint64_t>(64, (size + 63) / 64 * 64)))) {
    if (mem_) std::memset(mem_.get(), 0xff, size);
  }
  // host() stays null: only this device reaches the memory.
  uint8_t* bytes() const { return mem_.get(); }
  bool ok() const { return mem_ != nullptr; }

 private:
  Memory mem_;
};

uint8_t* Resolve(const BufferRef& ref) {
  if (!ref.buffer) return nullptr;
  return static_cast<TestBuffer*>(ref.buffer)->bytes() + ref.offset;
}

class TestStep final : public PreparedStep {
 public:
  TestStep(KernelFn fn, std::string name) : fn(fn), name(std::move(name)) {}
  KernelFn fn;
  std::string name;  // "nn.conv2d, node 'conv1'", for errors found late
};

class TestQueue;

class TestEvent final : public Event {
 public:
  TestEvent(TestQueue& queue, size_t index) : queue_(queue), index_(index) {}
  Status Wait() override;

 private:
  TestQueue& queue_;
  size_t index_;  // done when this many pieces of work have run
};

// Work is recorded and run only when an event of the queue is waited for, or at Finish (or, for
// a step whose output shapes only its kernel knows, when the step is given).
class TestQueue final : public Queue {
 public:
  TestQueue() : context_(Resolve, 1, nullptr) {}
  ~TestQueue() override = default;

  Status Run(const PreparedStep& prepared, const StepArgs& args) override {
    const auto& step = static_cast<const TestStep&>(prepared);
    if (!args.placed) {
      QUILT_RETURN_IF_ERROR(RunUntil(pending_.size()));
      return context_.Run(step.fn, args);
    }
    // The step's tensors, held by the work until it runs.
    struct Held {
      StepArgs args;
      std::vector<DeviceTensor> inputs, outputs;
      std::vector<bool> present;
      std::vector<BufferPtr> keep;
    };
    auto held = std::make_shared<Held>();
    held->args.step = args.step;
    held->args.output_dtypes = args.output_dtypes;
    held->args.placed = true;  // and no allocator: the run that placed them may be over
    for (const DeviceTensor* t : args.inputs) {
      held->inputs.push_back(t ? *t : DeviceTensor{});
      held->present.push_back(t != nullptr);
      if (t && t->data.buffer) held->keep.push_back(t->data.buffer->shared_from_this());
    }
    for (const DeviceTensor* t : args.outputs) {
      held->outputs.push_back(*t);
      if (t->data.buffer) held->keep.push_back(t->data.buffer->shared_from_this());
    }
    for (size_t i = 0; i < held->inputs.size(); ++i) {
      held->args.inputs.push_back(held->present[i] ? &held->inputs[i] : nullptr);
    }
    for (DeviceTensor& t : held->outputs) held->args.outputs.push_back(&t);
    const TestStep* s = &step;
    return Add([this, held, s] {
      Status st = context_.Run(s->fn, held->args);
      return st.ok() ? st : st.WithContext(s->name + ", run late on the test device");
    });
  }

  Status Copy(BufferRef src, BufferRef dst) override {
    BufferPtr a = Keep(src), b = Keep(dst);
    return Add([src, dst, a, b] {
      if (src.size) std::memmove(Resolve(dst), Resolve(src), src.size);
      return Status::Ok();
    });
  }
  Status Write(const void* host, BufferRef dst) override {
    auto staged = std::make_shared<std::vector<uint8_t>>(
        static_cast<const uint8_t*>(host), static_cast<const uint8_t*>(host) + dst.size);
    BufferPtr b = Keep(dst);
    return Add([dst, staged, b] {
      if (dst.size) std::memcpy(Resolve(dst), staged->data(), dst.size);
      return Status::Ok();
    });
  }
  Status Read(BufferRef src, void* host) override {
    BufferPtr a = Keep(src);
    return Add([src, host, a] {
      if (src.size) std::memcpy(host, Resolve(src), src.size);
      return Status::Ok();
    });
  }
  Status Signal(std::unique_ptr<Event>* out) override {
    *out = std::make_unique<TestEvent>(*this, pending_.size());
    return Status::Ok();
  }
  // Later work must wait for the event: waiting now, on the host, is the simplest way to be sure.
  Status Wait(Event& event) override { return event.Wait(); }
  Status Finish() override { return RunUntil(pending_.size()); }

  Status RunUntil(size_t index) {
    while (done_ < index && error_.ok()) {
      error_ = pending_[done_]();
      pending_[done_] = nullptr;  // lets go of its buffers
      ++done_;
    }
    return error_;
  }

 private:
  static BufferPtr Keep(const BufferRef& ref) {
    return ref.buffer ? ref.buffer->shared_from_this() : nullptr;
  }
  Status Add(std::function<Status()> work) {
    if (!error_.ok()) return error_;
    pending_.push_back(std::move(work));
    return Status::Ok();
  }

  HostStepContext context_;
  std::vector<std::function<Status()>> pending_;
  size_t done_ = 0;
  Status error_ = Status::Ok();
};

Status TestEvent::Wait() { return queue_.RunUntil(index_); }

class TestDevice final : public Device {
 public:
  explicit TestDevice(int id) {
    info_.kind = DeviceKind::kTest;
    info_.id = id;
    info_.name = "opaque test device";
    info_.host_addressable = false;
    info_.buffer_alignment = 64;
  }
  const DeviceInfo& info() const override { return info_; }
  Status Allocate(uint64_t bytes, BufferPtr* out) override {
    auto b = std::make_shared<TestBuffer>(bytes);
    if (!b->ok()) {
      return Status::Error("out of memory allocating " + std::to_string(bytes) +
                           " bytes on the test device");
    }
    *out = std::move(b);
    return Status::Ok();
  }
  Status Import(const void* host, uint64_t bytes, BufferPtr* out) override {
    QUILT_RETURN_IF_ERROR(Allocate(bytes, out));
    if (bytes) std::memcpy(static_cast<TestBuffer&>(**out).bytes(), host, bytes);
    return Status::Ok();
  }
  Status Prepare(const pkg::Step& step, const Executable* /*code*/,
                 std::unique_ptr<PreparedStep>* out) const override {
    KernelFn fn;
    std::string_view name;
    QUILT_RETURN_IF_ERROR(FindHostKernel(step, DeviceKind::kTest, &fn, &name));
    std::string what(name);
    if (step.source() && step.source()->size()) what += ", node '" + step.source()->str() + "'";
    *out = std::make_unique<TestStep>(fn, what);
    return Status::Ok();
  }
  Status CreateQueue(std::unique_ptr<Queue>* out) override {
    *out = std::make_unique<TestQueue>();
    return Status::Ok();
  }

 private:
  DeviceInfo info_;
};

}  // namespace

Status CreateTestDevice(int id, const DeviceOptions&, std::unique_ptr<Device>* out) {
  *out = std::make_unique<TestDevice>(id);
  return Status::Ok();
}

}  // namespace quilt::rt
