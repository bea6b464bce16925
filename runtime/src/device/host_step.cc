#include "runtime/src/device/host_step.h"

#include <string>

#include "quilt/package_generated.h"
#include "targets/cpu/kernels/fused.h"
#include "targets/cpu/kernels/registry.h"

namespace quilt::rt {

Status FindHostKernel(const pkg::Step& step, DeviceKind device, KernelFn* fn,
                      std::string_view* name) {
  *name = step.kernel() ? step.kernel()->string_view() : std::string_view();
  if (step.kind() == pkg::StepKind::Dispatch && step.op() && step.op()->size()) {
    *name = step.op()->string_view();
  } else if (step.kind() != pkg::StepKind::Kernel) {
    return Status::Error("the " + std::string(DeviceKindTitle(device)) +
                         " runs only library kernels, not a " +
                         std::string(pkg::EnumNameStepKind(step.kind())) + " step");
  }
  *fn = cpu::FindKernel(*name);
  if (!*fn) return Status::Error(NoKernelMessage(device, *name));
  // A fused step runs its members' kernels: one missing (a build with chosen kernels) is refused
  // here, when the session is created, not at its first run.
  if (*name == cpu::kFusedElementwise) {
    for (std::string_view op : AttrView(step.attrs()).Strs("ops")) {
      if (!cpu::FindKernel(op)) {
        return Status::Error(NoKernelMessage(device, op) + ", a member of the step");
      }
    }
  }
  return Status::Ok();
}

Status HostStepContext::Run(KernelFn fn, const StepArgs& args, StepCache* cache,
                            const AttrIndex* index) {
  args_ = &args;
  cache_ = cache;
  attrs_ = AttrView(args.step->attrs(), {}, index);
  num_outputs_ = static_cast<int>(args.output_dtypes.size());
  // Grown, never shrunk: a tensor destroyed here would free its shape, and the next step with
  // more inputs allocate it again.
  if (inputs_.size() < args.inputs.size()) inputs_.resize(args.inputs.size());
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const DeviceTensor* t = args.inputs[i];
    if (!t) continue;
    inputs_[i].dtype = t->dtype;
    inputs_[i].shape = t->shape;
    inputs_[i].data = resolve_(t->data);
  }
  if (outputs_.size() < static_cast<size_t>(num_outputs_)) {
    outputs_.resize(static_cast<size_t>(num_outputs_));
  }
  produced_.assign(static_cast<size_t>(num_outputs_), false);
  QUILT_RETURN_IF_ERROR(fn(*this));
  for (int i = 0; i < num_outputs_; ++i) {
    if (!produced_[static_cast<size_t>(i)]) {
      return Status::Error("the kernel did not produce output " + std::to_string(i));
    }
  }
  return Status::Ok();
}

const Tensor* HostStepContext::input(int i) const {
  if (i < 0 || i >= num_inputs() || !args_->inputs[static_cast<size_t>(i)]) return nullptr;
  return &inputs_[static_cast<size_t>(i)];
}

int HostStepContext::ArgBegin(int arg) const { return StepArgBegin(*args_->step, arg); }

int HostStepContext::ArgSize(int arg) const { return StepArgSize(*args_->step, arg); }

DType HostStepContext::output_dtype(int i) const {
  if (i < 0 || i >= num_outputs_) return DType::kVoid;
  return args_->output_dtypes[static_cast<size_t>(i)];
}

Status HostStepContext::Output(int i, DType dtype, const Shape& shape, Tensor** out) {
  if (i < 0 || i >= num_outputs_) {
    return Status::Error("kernel asked for output " + std::to_string(i) + " of " +
                         std::to_string(num_outputs_));
  }
  auto k = static_cast<size_t>(i);
  const DeviceTensor* placed = nullptr;
  if (args_->placed) {
    placed = args_->outputs[k];
    bool same = placed->dtype == dtype && placed->shape == shape;
    if (!same && args_->allocate) return args_->allocate->Disagree(i, dtype, shape);
    auto where = [i] { return "output " + std::to_string(i); };
    if (placed->dtype != dtype) {
      return Status::Error(where() + " is " + std::string(DTypeName(dtype)) +
                           ", the compiled model expects " + std::string(DTypeName(placed->dtype)));
    }
    if (placed->shape.size() != shape.size()) {
      return Status::Error(where() + " has shape " + ShapeString(shape) +
                           ", the compiled model expects rank " +
                           std::to_string(placed->shape.size()));
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] != placed->shape[d]) {
        return Status::Error(where() + " dim " + std::to_string(d) + " is " +
                             std::to_string(shape[d]) + ", expected " +
                             std::to_string(placed->shape[d]));
      }
    }
  } else {
    DeviceTensor* t = nullptr;
    QUILT_RETURN_IF_ERROR(args_->allocate->Allocate(i, dtype, shape, &t));
    placed = t;
  }
  Tensor& y = outputs_[k];
  y.dtype = placed->dtype;
  y.shape = placed->shape;
  y.data = resolve_(placed->data);
  produced_[k] = true;
  *out = &y;
  return Status::Ok();
}

}  // namespace quilt::rt
