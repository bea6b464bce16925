// The kernel context of one step for devices whose kernels are the CPU's and whose memory is
// host memory (the CPU, the test device): it turns the step's device tensors into the host
// tensors kernels read and write, and checks what the kernel produced against what the
// executor allocated.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/src/device/device.h"
#include "runtime/src/kernel.h"

namespace quilt::rt {

// The CPU kernel that runs `step` on a device of kind `device` with the CPU's kernels: a library
// kernel by its op name, or a dispatch step handed over by a device whose code did not load, by
// the op it names. `name` is set to the kernel's op name. A kernel the CPU lacks is refused with
// NoKernelMessage; a fused step's missing member with more.
Status FindHostKernel(const pkg::Step& step, DeviceKind device, KernelFn* fn,
                      std::string_view* name);

class HostStepContext final : public KernelContext {
 public:
  // `resolve`: the host address of a buffer range of the device.
  using Resolve = uint8_t* (*)(const BufferRef& ref);
  HostStepContext(Resolve resolve, int threads, ThreadPool* pool)
      : resolve_(resolve), threads_(threads), pool_(pool), attrs_(nullptr) {}

  // Runs kernel `fn` on `args`; fails when the kernel fails or leaves an output unproduced.
  // `cache`, `index`: the prepared step's (null: none).
  Status Run(KernelFn fn, const StepArgs& args, StepCache* cache = nullptr,
             const AttrIndex* index = nullptr);

  int num_inputs() const override { return static_cast<int>(args_->inputs.size()); }
  const Tensor* input(int i) const override;
  int ArgBegin(int arg) const override;
  int ArgSize(int arg) const override;
  int num_outputs() const override { return num_outputs_; }
  DType output_dtype(int i) const override;
  Status Output(int i, DType dtype, const Shape& shape, Tensor** out) override;
  const AttrView& attrs() const override { return attrs_; }
  int threads() const override { return threads_; }
  ThreadPool* thread_pool() const override { return pool_; }
  bool constant_input(int i) const override {
    return i >= 0 && i < 64 && ((args_->constant_inputs >> i) & 1);
  }
  StepCache* cache() const override { return cache_; }

 private:
  Resolve resolve_;
  int threads_;
  ThreadPool* pool_;
  const StepArgs* args_ = nullptr;
  StepCache* cache_ = nullptr;
  AttrView attrs_;
  int num_outputs_ = 0;
  // Reused from step to step, so a run in steady state allocates nothing here.
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<bool> produced_;
};

}  // namespace quilt::rt
