#include "runtime/src/session.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "runtime/src/dims.h"
#include "targets/cpu/kernels/registry.h"

namespace quilt::rt {
namespace {

// The largest single allocation a run makes: a bigger request is a shape gone wrong.
constexpr uint64_t kMaxAllocation = uint64_t{1} << 40;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Memory = std::unique_ptr<uint8_t, FreeDeleter>;

Memory Allocate(size_t bytes) {
  size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  return Memory(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
}

enum class Builtin { kNone, kShapeExpr, kPrimValue };

}  // namespace

std::string TensorSignature::ToString() const {
  std::string s = name + ": " + std::string(DTypeName(dtype));
  if (rank < 0) return s + " (any rank)";
  s += " (";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += dim_names[i].empty() ? std::to_string(dims[i]) : dim_names[i];
  }
  if (rank == 1) s += ",";
  return s + ")" + (has_default ? " = default" : "");
}

struct Session::GraphPlan {
  const pkg::Graph* graph = nullptr;
  std::vector<KernelFn> kernels;  // per step (null for builtins)
  std::vector<Builtin> builtins;
  std::vector<std::vector<int>> frees;  // per step: values whose last use it is
  std::vector<bool> is_output;
};

Session::~Session() = default;

namespace {

TensorSignature SignatureOf(const pkg::Graph& g, int v) {
  const pkg::Value* value = g.values()->Get(v);
  TensorSignature sig;
  sig.name = value->name() ? value->name()->str() : "";
  sig.dtype = static_cast<DType>(value->dtype());
  sig.rank = value->rank();
  sig.has_default = value->default_buffer() >= 0;
  for (int i = 0; i < sig.rank; ++i) {
    const pkg::DimNode* d = g.dims()->Get(value->dims()->Get(i));
    if (d->kind() == pkg::DimKind::Int) {
      sig.dims.push_back(d->value());
      sig.dim_names.push_back("");
      continue;
    }
    DimEnv env(g);
    sig.dims.push_back(-1);
    sig.dim_names.push_back(env.DimString(value->dims()->Get(i)));
  }
  return sig;
}

std::string StepName(const pkg::Graph& g, int s) {
  const pkg::Step* step = g.steps()->Get(s);
  std::string name = "step " + std::to_string(s) + " (" + step->kernel()->str();
  if (step->source() && step->source()->size()) name += ", node '" + step->source()->str() + "'";
  return name + ")";
}

}  // namespace

Status Session::Create(std::shared_ptr<const LoadedPackage> package, const SessionOptions& options,
                       std::unique_ptr<Session>* out) {
  if (!package) return Status::Error("session: no package");
  if (options.threads < 1) return Status::Error("session: threads must be at least 1");
  const pkg::Package& p = package->root();
  for (uint32_t d = 0; d < p.devices()->size(); ++d) {
    const pkg::Device* dev = p.devices()->Get(d);
    std::string kind = dev->kind() ? dev->kind()->str() : "";
    if (kind != "cpu") {
      return Status::Error("the package runs steps on device '" +
                           (dev->target() ? dev->target()->str() : kind) +
                           "', which this runtime was built without");
    }
    if (!options.devices.empty() &&
        std::find(options.devices.begin(), options.devices.end(), kind) == options.devices.end()) {
      return Status::Error("the package needs device kind '" + kind +
                           "', which the session options do not allow");
    }
  }
  if (p.graphs()->size() > 1) {
    return Status::Error("packages with subgraphs (control flow) are not supported yet");
  }
  std::unique_ptr<Session> s(new Session());
  s->package_ = package;
  s->options_ = options;
  s->plan_ = std::make_unique<GraphPlan>();
  GraphPlan& plan = *s->plan_;
  const pkg::Graph& g = *p.graphs()->Get(0);
  plan.graph = &g;
  std::string missing;
  int num_steps = static_cast<int>(g.steps()->size());
  for (int i = 0; i < num_steps; ++i) {
    const pkg::Step* step = g.steps()->Get(i);
    std::string_view name = step->kernel()->string_view();
    Builtin builtin = name == "shape_expr"   ? Builtin::kShapeExpr
                      : name == "prim_value" ? Builtin::kPrimValue
                                             : Builtin::kNone;
    KernelFn fn = builtin == Builtin::kNone ? cpu::FindKernel(name) : nullptr;
    if (builtin == Builtin::kNone && !fn) {
      missing += missing.empty() ? "" : ", ";
      missing += StepName(g, i);
    }
    plan.kernels.push_back(fn);
    plan.builtins.push_back(builtin);
  }
  if (!missing.empty()) return Status::Error("no CPU kernel for " + missing);
  // Liveness: each intermediate is freed after the last step that reads it.
  int num_values = static_cast<int>(g.values()->size());
  plan.is_output.assign(num_values, false);
  for (int32_t v : *g.outputs()) plan.is_output[v] = true;
  std::vector<int> last_use(num_values, -1);
  for (int i = 0; i < num_steps; ++i) {
    const pkg::Step* step = g.steps()->Get(i);
    for (int32_t v : *step->inputs()) {
      if (v >= 0) last_use[v] = i;
    }
    for (int32_t v : *step->outputs()) last_use[v] = std::max(last_use[v], i);
  }
  plan.frees.resize(num_steps);
  for (int v = 0; v < num_values; ++v) {
    if (g.values()->Get(v)->kind() == pkg::ValueKind::Intermediate && !plan.is_output[v] &&
        last_use[v] >= 0) {
      plan.frees[last_use[v]].push_back(v);
    }
  }
  for (int32_t v : *g.inputs()) s->inputs_.push_back(SignatureOf(g, v));
  for (int32_t v : *g.outputs()) s->outputs_.push_back(SignatureOf(g, v));
  *out = std::move(s);
  return Status::Ok();
}

std::string Session::SignatureText() const {
  std::string s = "the model takes";
  for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : " ") + inputs_[i].ToString();
  return inputs_.empty() ? "the model takes no inputs" : s;
}

Status Session::CheckInputs(const std::vector<NamedTensor>& inputs,
                            std::vector<const Tensor*>* by_position) const {
  by_position->assign(inputs_.size(), nullptr);
  for (const NamedTensor& in : inputs) {
    auto it = std::find_if(inputs_.begin(), inputs_.end(),
                           [&](const TensorSignature& s) { return s.name == in.name; });
    if (it == inputs_.end()) {
      return Status::Error("no input named '" + in.name + "'; " + SignatureText());
    }
    size_t i = it - inputs_.begin();
    if ((*by_position)[i]) return Status::Error("input '" + in.name + "' is given twice");
    const Tensor& t = in.tensor;
    std::string where = "input '" + in.name + "'";
    if (t.dtype != it->dtype) {
      return Status::Error(where + " is " + std::string(DTypeName(t.dtype)) + ", expected " +
                           it->ToString());
    }
    if (it->rank >= 0 && t.rank() != it->rank) {
      return Status::Error(where + " has rank " + std::to_string(t.rank()) + ", expected " +
                           it->ToString());
    }
    for (int64_t d : t.shape) {
      if (d < 0) return Status::Error(where + " has a negative dim");
    }
    if (t.data == nullptr && t.ByteSize() > 0) return Status::Error(where + " has no data");
    (*by_position)[i] = &t;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!(*by_position)[i] && !inputs_[i].has_default) {
      return Status::Error("input '" + inputs_[i].name + "' is missing; " + SignatureText());
    }
  }
  return Status::Ok();
}

namespace {

// The state of one run: every value's tensor, the memory it owns, the arena, the symbols.
class Run final : public KernelContext {
 public:
  Run(const LoadedPackage& package, const pkg::Graph& g, int threads)
      : package_(package), g_(g), env_(g), threads_(threads), attrs_(nullptr) {
    size_t n = g.values()->size();
    values_.resize(n);
    owned_.resize(n);
    const auto* arenas = g.arena_bytes();
    if (arenas && arenas->size() > 0 && arenas->Get(0) > 0) arena_ = Allocate(arenas->Get(0));
  }

  DimEnv& env() { return env_; }
  std::vector<Tensor>& values() { return values_; }
  std::vector<Memory>& owned() { return owned_; }

  Status BindConstantsAndInputs(const std::vector<const Tensor*>& given) {
    for (uint32_t v = 0; v < g_.values()->size(); ++v) {
      const pkg::Value* value = g_.values()->Get(v);
      if (value->kind() == pkg::ValueKind::Constant) SetConstant(v, value->buffer());
    }
    for (uint32_t i = 0; i < g_.inputs()->size(); ++i) {
      int v = g_.inputs()->Get(i);
      const pkg::Value* value = g_.values()->Get(v);
      if (!given[i]) {
        SetConstant(v, value->default_buffer());
        continue;
      }
      values_[v] = *given[i];
      std::string where = "input '" + value->name()->str() + "'";
      for (int d = 0; d < value->rank(); ++d) {
        QUILT_RETURN_IF_ERROR(env_.Match(value->dims()->Get(d), given[i]->shape[d],
                                         where + " dim " + std::to_string(d)));
      }
    }
    return Status::Ok();
  }

  Status RunStep(int s, KernelFn fn, Builtin builtin) {
    step_ = g_.steps()->Get(s);
    inputs_.clear();
    for (int32_t v : *step_->inputs()) inputs_.push_back(v >= 0 ? &values_[v] : nullptr);
    attrs_ = AttrView(step_->attrs());
    switch (builtin) {
      case Builtin::kShapeExpr:
        QUILT_RETURN_IF_ERROR(EvalShapeExpr());
        break;
      case Builtin::kPrimValue:
        QUILT_RETURN_IF_ERROR(EvalPrimValue());
        break;
      case Builtin::kNone:
        QUILT_RETURN_IF_ERROR(fn(*this));
        break;
    }
    return CheckOutputs();
  }

  void Free(int v) {
    owned_[v].reset();
    values_[v].data = nullptr;
  }

  // KernelContext.
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const Tensor* input(int i) const override {
    return i >= 0 && i < num_inputs() ? inputs_[i] : nullptr;
  }
  int ArgBegin(int arg) const override {
    const auto* arity = step_->input_arity();
    if (!arity) return arg;
    int begin = 0;
    for (int a = 0; a < arg && a < static_cast<int>(arity->size()); ++a) begin += arity->Get(a);
    return begin;
  }
  int ArgSize(int arg) const override {
    const auto* arity = step_->input_arity();
    if (!arity) return arg < num_inputs() ? 1 : 0;
    return arg < static_cast<int>(arity->size()) ? arity->Get(arg) : 0;
  }
  int num_outputs() const override { return static_cast<int>(step_->outputs()->size()); }
  DType output_dtype(int i) const override {
    if (i < 0 || i >= num_outputs()) return DType::kVoid;
    return static_cast<DType>(g_.values()->Get(step_->outputs()->Get(i))->dtype());
  }
  Status Output(int i, DType dtype, Shape shape, Tensor** out) override {
    if (i < 0 || i >= num_outputs()) {
      return Status::Error("kernel asked for output " + std::to_string(i) + " of " +
                           std::to_string(num_outputs()));
    }
    uint64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) return Status::Error("output " + std::to_string(i) + " would have a negative dim");
      if (d != 0 && n > kMaxAllocation / static_cast<uint64_t>(d)) {
        return Status::Error("output " + std::to_string(i) + " of shape " + ShapeString(shape) +
                             " is too large");
      }
      n *= d;
    }
    size_t bytes = DTypeBytes(dtype, static_cast<int64_t>(n));
    if (bytes > kMaxAllocation) {
      return Status::Error("output " + std::to_string(i) + " of shape " + ShapeString(shape) +
                           " is too large");
    }
    int v = step_->outputs()->Get(i);
    const pkg::Value* value = g_.values()->Get(v);
    Tensor& t = values_[v];
    t.dtype = dtype;
    t.shape = std::move(shape);
    if (arena_ && value->arena_offset() >= 0 && static_cast<int64_t>(bytes) == value->byte_size()) {
      t.data = arena_.get() + value->arena_offset();
    } else {
      owned_[v] = Allocate(bytes);
      if (!owned_[v])
        return Status::Error("out of memory allocating " + std::to_string(bytes) + " bytes");
      t.data = owned_[v].get();
    }
    *out = &t;
    return Status::Ok();
  }
  const AttrView& attrs() const override { return attrs_; }
  int threads() const override { return threads_; }

 private:
  void SetConstant(int v, int buffer) {
    const pkg::Value* value = g_.values()->Get(v);
    Tensor& t = values_[v];
    t.dtype = static_cast<DType>(value->dtype());
    t.shape.clear();
    for (int32_t d : *value->dims()) t.shape.push_back(g_.dims()->Get(d)->value());
    t.data = const_cast<uint8_t*>(package_.BufferData(buffer));
  }

  Status EvalShapeExpr() {
    const auto* dims = step_->dims();
    int64_t n = dims ? dims->size() : 0;
    Tensor* y;
    QUILT_RETURN_IF_ERROR(Output(0, DType::kInt64, {n}, &y));
    for (int64_t i = 0; i < n; ++i) {
      std::optional<int64_t> d = env_.Eval(dims->Get(i));
      if (!d) return Status::Error("dim " + env_.DimString(dims->Get(i)) + " is not known here");
      y->MutableData<int64_t>()[i] = *d;
    }
    return Status::Ok();
  }

  Status EvalPrimValue() {
    if (!step_->dims() || step_->dims()->size() != 1) return Status::Error("needs one dim");
    std::optional<int64_t> d = env_.Eval(step_->dims()->Get(0));
    if (!d)
      return Status::Error("dim " + env_.DimString(step_->dims()->Get(0)) + " is not known here");
    DType dt = output_dtype(0);
    Tensor* y;
    QUILT_RETURN_IF_ERROR(Output(0, dt, {}, &y));
    switch (dt) {
      case DType::kInt64:
        *y->MutableData<int64_t>() = *d;
        return Status::Ok();
      case DType::kInt32:
        *y->MutableData<int32_t>() = static_cast<int32_t>(*d);
        return Status::Ok();
      case DType::kFloat32:
        *y->MutableData<float>() = static_cast<float>(*d);
        return Status::Ok();
      case DType::kFloat64:
        *y->MutableData<double>() = static_cast<double>(*d);
        return Status::Ok();
      case DType::kBool:
        *y->MutableData<uint8_t>() = *d != 0;
        return Status::Ok();
      default:
        return Status::Error("a prim value of type " + std::string(DTypeName(dt)));
    }
  }

  // What the kernel produced agrees with what the compiler inferred; binds new symbols.
  Status CheckOutputs() {
    for (int i = 0; i < num_outputs(); ++i) {
      int v = step_->outputs()->Get(i);
      const pkg::Value* value = g_.values()->Get(v);
      const Tensor& t = values_[v];
      std::string where = "output " + std::to_string(i);
      if (t.data == nullptr && t.dtype == DType::kVoid) {
        return Status::Error("the kernel did not produce " + where);
      }
      if (value->dtype() != 0 && static_cast<int32_t>(t.dtype) != value->dtype()) {
        return Status::Error(where + " is " + std::string(DTypeName(t.dtype)) +
                             ", the compiled model expects " +
                             std::string(DTypeName(static_cast<DType>(value->dtype()))));
      }
      if (value->rank() < 0) continue;
      if (t.rank() != value->rank()) {
        return Status::Error(where + " has shape " + ShapeString(t.shape) +
                             ", the compiled model expects rank " + std::to_string(value->rank()));
      }
      for (int d = 0; d < t.rank(); ++d) {
        QUILT_RETURN_IF_ERROR(
            env_.Match(value->dims()->Get(d), t.shape[d], where + " dim " + std::to_string(d)));
      }
    }
    return Status::Ok();
  }

  const LoadedPackage& package_;
  const pkg::Graph& g_;
  DimEnv env_;
  int threads_;
  std::vector<Tensor> values_;
  std::vector<Memory> owned_;
  Memory arena_;
  const pkg::Step* step_ = nullptr;
  std::vector<const Tensor*> inputs_;
  AttrView attrs_;
};

}  // namespace

Status Session::Run(const std::vector<NamedTensor>& inputs,
                    std::vector<OwnedTensor>* outputs) const {
  std::vector<const Tensor*> given;
  QUILT_RETURN_IF_ERROR(CheckInputs(inputs, &given));
  const pkg::Graph& g = *plan_->graph;
  class Run run(*package_, g, options_.threads);
  QUILT_RETURN_IF_ERROR(run.BindConstantsAndInputs(given));
  int num_steps = static_cast<int>(g.steps()->size());
  for (int s = 0; s < num_steps; ++s) {
    Status st = run.RunStep(s, plan_->kernels[s], plan_->builtins[s]);
    if (!st.ok()) return st.WithContext(StepName(g, s));
    for (int v : plan_->frees[s]) run.Free(v);
  }
  outputs->clear();
  for (uint32_t i = 0; i < g.outputs()->size(); ++i) {
    const Tensor& t = run.values()[g.outputs()->Get(i)];
    OwnedTensor o;
    o.name = outputs_[i].name;
    o.dtype = t.dtype;
    o.shape = t.shape;
    const auto* bytes = static_cast<const uint8_t*>(t.data);
    o.data.assign(bytes, bytes + t.ByteSize());
    outputs->push_back(std::move(o));
  }
  return Status::Ok();
}

}  // namespace quilt::rt
