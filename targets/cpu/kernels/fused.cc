// The fused elementwise step on the CPU (fused.h): each member's own kernel in turn, the results
// between them in memory of their own.
#include "targets/cpu/kernels/fused.h"

#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"

namespace quilt::cpu {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// What one member's kernel sees: its operands, its attributes (the step's, by prefix) and its
// output, the step's own for the last member and a temporary for the others.
class MemberContext : public KernelContext {
 public:
  MemberContext(KernelContext& step, std::vector<const Tensor*> inputs, DType dtype, int member,
                bool last)
      : step_(step),
        inputs_(std::move(inputs)),
        dtype_(dtype),
        attrs_(step.attrs().WithPrefix(std::to_string(member) + ":")),
        last_(last) {}

  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const Tensor* input(int i) const override {
    return i >= 0 && i < num_inputs() ? inputs_[static_cast<size_t>(i)] : nullptr;
  }
  int ArgBegin(int arg) const override { return arg; }
  int ArgSize(int arg) const override { return arg >= 0 && arg < num_inputs() ? 1 : 0; }
  int num_outputs() const override { return 1; }
  DType output_dtype(int i) const override { return i == 0 ? dtype_ : DType::kVoid; }
  Status Output(int i, DType dtype, const Shape& shape, Tensor** out) override {
    if (i != 0) return Status::Error("a fused member has one output");
    if (last_) return step_.Output(0, dtype, shape, out);
    result_.dtype = dtype;
    result_.shape = shape;
    size_t bytes = result_.ByteSize();
    // 64-byte aligned, as the arenas are, for the kernels' vector loads.
    storage_.reset(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64));
    if (!storage_) return Status::Error("out of memory for a fused member's result");
    result_.data = storage_.get();
    *out = &result_;
    return Status::Ok();
  }
  const rt::AttrView& attrs() const override { return attrs_; }
  int threads() const override { return step_.threads(); }
  rt::ThreadPool* thread_pool() const override { return step_.thread_pool(); }

  // The result of a member that is not the last (valid while this context lives).
  Tensor* result() { return &result_; }

 private:
  KernelContext& step_;
  std::vector<const Tensor*> inputs_;
  DType dtype_;
  rt::AttrView attrs_;
  bool last_;
  Tensor result_;
  std::unique_ptr<void, FreeDeleter> storage_;
};

Status FusedElementwise(KernelContext& ctx) {
  const rt::AttrView& a = ctx.attrs();
  auto ops = a.Strs("ops");
  // Read in place (no copy at every run).
  std::span<const int64_t> arity = a.IntsView("arity"), args = a.IntsView("args"),
                           dtypes = a.IntsView("dtypes");
  if (ops.empty() || arity.size() != ops.size() || dtypes.size() != ops.size()) {
    return Status::Error("fused_elementwise: the step's ops, arity and dtypes disagree");
  }
  bool done = false;
  QUILT_RETURN_IF_ERROR(FusedElementwiseBlocks(ctx, ops, arity, args, dtypes, &done));
  if (done) return Status::Ok();
  std::vector<std::unique_ptr<MemberContext>> members;
  size_t next = 0;
  for (size_t m = 0; m < ops.size(); ++m) {
    std::string where =
        "fused_elementwise member " + std::to_string(m) + " (" + std::string(ops[m]) + ")";
    rt::KernelFn fn = FindKernel(ops[m]);
    if (!fn) {
      return Status::Error(where + ": the CPU has no kernel for it" +
                           std::string(KernelMissingHint()));
    }
    if (arity[m] < 0 || next + static_cast<size_t>(arity[m]) > args.size()) {
      return Status::Error(where + ": its operands run past the step's args");
    }
    std::vector<const Tensor*> operands;
    for (int64_t k = 0; k < arity[m]; ++k) {
      int64_t arg = args[next++];
      const Tensor* t = nullptr;
      if (arg >= 0) {
        t = ctx.input(static_cast<int>(arg));
      } else if (static_cast<size_t>(-arg - 1) < m) {
        t = members[static_cast<size_t>(-arg - 1)]->result();
      }
      if (!t) return Status::Error(where + ": operand " + std::to_string(k) + " is absent");
      operands.push_back(t);
    }
    if (!rt::IsValidDType(static_cast<int32_t>(dtypes[m]))) {
      return Status::Error(where + ": an unknown result type");
    }
    members.push_back(std::make_unique<MemberContext>(ctx, std::move(operands),
                                                      static_cast<DType>(dtypes[m]),
                                                      static_cast<int>(m), m + 1 == ops.size()));
    Status st = fn(*members.back());
    if (!st.ok()) return Status::Error(where + ": " + st.message());
  }
  return Status::Ok();
}

constexpr rt::KernelEntry kKernels[] = {
    Kernel(kFusedElementwise, FusedElementwise),
};

}  // namespace

std::span<const rt::KernelEntry> FusedKernels() { return kKernels; }

}  // namespace quilt::cpu
