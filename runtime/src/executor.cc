#include "runtime/src/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace quilt::rt {

std::string StepName(const pkg::Graph& g, int s) {
  const pkg::Step* step = g.steps()->Get(s);
  std::string name = "step " + std::to_string(s) + " (" + step->kernel()->str();
  if (step->source() && step->source()->size()) name += ", node '" + step->source()->str() + "'";
  return name + ")";
}

GraphRun::GraphRun(const Session::Plans& plans, const std::vector<std::unique_ptr<Queue>>& queues,
                   int graph, int depth, RunProfile* profile,
                   std::chrono::steady_clock::time_point start, const RunControl* control,
                   uint64_t* memory, RunState* state)
    : state_(state),
      control_(control),
      memory_(memory),
      plans_(plans),
      queues_(queues),
      plan_(plans.graphs[graph]),
      g_(*plan_.graph),
      env_(g_, state ? std::move(state->dims) : DimEnv::Storage{}),
      depth_(depth),
      graph_(graph),
      profile_(profile),
      start_(start) {
  if (state_) {
    values_ = std::move(state_->values);
    owned_ = std::move(state_->owned);
    counted_ = std::move(state_->counted);
    args_ = std::move(state_->args);
    known_ = std::move(state_->known);
    arenas_ = std::move(state_->arenas);
    flows_ = std::move(state_->flows);
  }
  size_t n = g_.values()->size();
  values_.resize(n);
  // A state's tensors name the buffers of the run before: cleared, their shapes' memory kept.
  for (DeviceTensor& t : values_) {
    t.dtype = DType::kVoid;
    t.shape.clear();
    t.data = {};
  }
  owned_.resize(n);
  counted_.assign(n, 0);
}

GraphRun::~GraphRun() {
  for (size_t v = 0; v < counted_.size(); ++v) Uncount(counted_[v]);
  Uncount(arena_bytes_counted_);
  if (state_) {
    for (BufferPtr& b : owned_) b.reset();
    args_.inputs.clear();
    args_.outputs.clear();
    state_->values = std::move(values_);
    state_->owned = std::move(owned_);
    state_->counted = std::move(counted_);
    state_->args = std::move(args_);
    state_->known = std::move(known_);
    state_->dims = env_.Release();
    state_->arenas = std::move(arenas_);
    state_->flows = std::move(flows_);
  }
}

Status GraphRun::Execute(const std::vector<const Tensor*>& given, LoopHeld* loop) {
  QUILT_RETURN_IF_ERROR(AllocateArenas());
  QUILT_RETURN_IF_ERROR(BindConstantsAndInputs(given));
  for (const HeldValue& h : plan_.held) values_[static_cast<size_t>(h.value)] = h.tensor;
  bool invariants = loop && !plan_.loop_invariant.empty();
  bool skip = invariants && loop->ready;
  if (skip) {
    for (size_t k = 0; k < loop->count; ++k) {
      const HeldValue& h = loop->held[k];
      values_[static_cast<size_t>(h.value)] = h.tensor;
      // The symbols its dims bring in, which the skipped step's output would have bound.
      QUILT_RETURN_IF_ERROR(
          MatchDims(*g_.values()->Get(static_cast<uint32_t>(h.value)), h.tensor.shape,
                    [&] { return "the loop-invariant value " + std::to_string(h.value); }));
    }
  }
  int num_steps = static_cast<int>(g_.steps()->size());
  for (int s = 0; s < num_steps; ++s) {
    if (!plan_.hoisted.empty() && plan_.hoisted[static_cast<size_t>(s)]) continue;
    bool invariant = invariants && plan_.loop_invariant[static_cast<size_t>(s)];
    if (skip && invariant) continue;
    if (loop && !plan_.loop_skip.empty() && plan_.loop_skip[static_cast<size_t>(s)]) continue;
    QUILT_RETURN_IF_ERROR(CheckCancelled());
    auto begin =
        profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Status st = RunStep(s, plan_.prepared[s].get(), plan_.builtins[s]);
    if (st.ok() && profile_) st = Profile(s, begin);
    if (st.ok() && invariant) {
      for (int32_t v : *step_->outputs()) {
        if (!plan_.loop_keep[static_cast<size_t>(v)]) continue;
        if (loop->count == loop->held.size()) loop->held.emplace_back();
        st = Hold(v, &loop->held[loop->count++]);
        if (!st.ok()) break;
      }
    }
    if (!st.ok()) return st.WithContext(StepName(g_, s));
    for (int v : plan_.frees[s]) Free(v);
  }
  if (invariants) loop->ready = true;
  return Status::Ok();
}

Status GraphRun::Hold(int v, HeldValue* h) {
  const DeviceTensor& t = values_[static_cast<size_t>(v)];
  int device = ValueDevice(v);
  bool reuse = h->value == v && h->buffer && h->buffer->size() == t.data.size;
  h->value = v;
  if (!reuse) QUILT_RETURN_IF_ERROR(DeviceOf(device).Allocate(t.data.size, &h->buffer));
  h->tensor = {t.dtype, t.shape, {h->buffer.get(), 0, t.data.size}};
  if (t.data.size) QUILT_RETURN_IF_ERROR(QueueOf(device).Copy(t.data, h->tensor.data));
  return Status::Ok();
}

Status GraphRun::Hoist(std::vector<HeldValue>* held) {
  QUILT_RETURN_IF_ERROR(AllocateArenas());
  BindConstants();
  size_t num_steps = g_.steps()->size();
  std::vector<bool> read_later(g_.values()->size(), false);
  for (size_t s = 0; s < num_steps; ++s) {
    if (plan_.hoisted[s]) continue;
    for (int32_t v : *g_.steps()->Get(static_cast<uint32_t>(s))->inputs()) {
      if (v >= 0) read_later[static_cast<size_t>(v)] = true;
    }
  }
  for (size_t s = 0; s < num_steps; ++s) {
    if (!plan_.hoisted[s]) continue;
    int step = static_cast<int>(s);
    Status st = RunStep(step, plan_.prepared[s].get(), plan_.builtins[s]);
    if (!st.ok()) return st.WithContext(StepName(g_, step));
    for (int32_t v : *step_->outputs()) {
      if (!read_later[static_cast<size_t>(v)]) continue;
      HeldValue h;
      QUILT_RETURN_IF_ERROR(Hold(v, &h));
      held->push_back(std::move(h));
    }
  }
  return Status::Ok();
}

Status GraphRun::AllocateArenas() {
  const auto* arenas = g_.arena_bytes();
  arenas_.resize(arenas ? arenas->size() : 0);
  for (uint32_t d = 0; d < arenas_.size(); ++d) {
    if (arenas->Get(d) == 0) {
      arenas_[d].reset();
      continue;
    }
    const auto bytes = static_cast<uint64_t>(arenas->Get(d));
    QUILT_RETURN_IF_ERROR(Count(bytes, [&] { return "the arena of device " + std::to_string(d); }));
    // The run before's, of this same size, kept by the state, is taken as it is.
    if (!arenas_[d] || arenas_[d]->size() != bytes) {
      arenas_[d].reset();
      Status st = DeviceOf(static_cast<int>(d)).Allocate(arenas->Get(d), &arenas_[d]);
      if (!st.ok()) {
        Uncount(bytes);
        return Status::Error("allocating an arena of " + std::to_string(bytes) +
                             " bytes for device " + std::to_string(d) + ": " + st.message());
      }
    }
    arena_bytes_counted_ += bytes;
  }
  return Status::Ok();
}

Status GraphRun::Profile(int s, std::chrono::steady_clock::time_point begin) {
  for (const std::unique_ptr<Queue>& q : queues_) QUILT_RETURN_IF_ERROR(q->WaitOnHost());
  auto end = std::chrono::steady_clock::now();
  const pkg::Step* step = g_.steps()->Get(s);
  StepProfile p;
  p.graph = graph_;
  p.step = s;
  static const char* kKinds[] = {"kernel", "dispatch", "copy", "control"};
  auto kind = static_cast<size_t>(step->kind());
  p.kind = kind < 4 ? kKinds[kind] : "?";
  p.op = step->op() && step->op()->size() ? step->op()->str() : step->kernel()->str();
  p.node = step->source() ? step->source()->str() : "";
  const auto* devices = plans_.package->devices();
  if (devices && static_cast<uint32_t>(step->device()) < devices->size()) {
    const pkg::Device* d = devices->Get(static_cast<uint32_t>(step->device()));
    p.device = d->target() ? d->target()->str() : "";
  }
  p.start_us = std::chrono::duration<double, std::micro>(begin - start_).count();
  p.duration_us = std::chrono::duration<double, std::micro>(end - begin).count();
  profile_->steps.push_back(std::move(p));
  return Status::Ok();
}

Status GraphRun::TakeOutputs(std::vector<OwnedTensor>* outputs, bool passed) {
  // Written over the caller's tensors (their names' and bytes' memory reused, as a caller
  // running again with the same vector has them), not made anew.
  outputs->resize(g_.outputs()->size());
  for (uint32_t i = 0; i < g_.outputs()->size(); ++i) {
    int v = g_.outputs()->Get(i);
    OwnedTensor& o = (*outputs)[i];
    if (!passed || plan_.loop_passthrough.empty() || !plan_.loop_passthrough[i]) {
      if (!HandOver(v, &o)) QUILT_RETURN_IF_ERROR(ReadValue(v, &o));
    } else {
      o.dtype = DType::kVoid;
      o.shape.clear();
      o.data.clear();
    }
    const flatbuffers::String* name = g_.values()->Get(v)->name();
    if (name) {
      o.name.assign(name->c_str(), name->size());
    } else {
      o.name.clear();
    }
  }
  return Status::Ok();
}

Status GraphRun::Place(int i, DType dtype, const Shape& shape, DeviceTensor** out) {
  if (i < 0 || i >= num_outputs()) {
    return Status::Error("kernel asked for output " + std::to_string(i) + " of " +
                         std::to_string(num_outputs()));
  }
  for (int64_t d : shape) {
    if (d < 0) return Status::Error("output " + std::to_string(i) + " would have a negative dim");
  }
  std::optional<size_t> checked = CheckedByteSize(dtype, shape);
  size_t bytes = checked.value_or(0);
  if (!checked || bytes > kMaxAllocation) {
    return Status::Error("output " + std::to_string(i) + " of shape " + ShapeString(shape) +
                         " is too large");
  }
  int v = step_->outputs()->Get(i);
  const pkg::Value* value = g_.values()->Get(v);
  DeviceTensor& t = values_[v];
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  auto device = static_cast<size_t>(value->device());
  Release(v);
  // The buffer of an input this step reads last, where the compiler said the kernel may write
  // its output there (it reads each element of that input before writing the output's).
  const int r = i == 0 ? plan_.in_place[static_cast<size_t>(step_index_)] : -1;
  if (value->arena_offset() >= 0 && device < arenas_.size() && arenas_[device] &&
      static_cast<int64_t>(bytes) == value->byte_size()) {
    t.data = {arenas_[device].get(), static_cast<uint64_t>(value->arena_offset()), bytes};
  } else if (r >= 0 && owned_[r] && values_[r].data.buffer == owned_[r].get() &&
             values_[r].data.offset == 0 && values_[r].data.size == bytes) {
    owned_[v] = std::move(owned_[r]);
    counted_[static_cast<size_t>(v)] = counted_[static_cast<size_t>(r)];
    counted_[static_cast<size_t>(r)] = 0;
    t.data = values_[r].data;
  } else {
    QUILT_RETURN_IF_ERROR(Count(bytes, [&] {
      return "output " + std::to_string(i) + " of shape " + ShapeString(t.shape);
    }));
    Status st = DeviceOf(value->device()).Allocate(bytes, &owned_[v]);
    if (!st.ok()) {
      Uncount(bytes);
      return st;
    }
    counted_[static_cast<size_t>(v)] = bytes;
    t.data = {owned_[v].get(), 0, bytes};
  }
  *out = &t;
  return Status::Ok();
}

Status GraphRun::Disagree(int i, DType dtype, const Shape& shape) {
  DeviceTensor made{dtype, shape, {}};
  Status st = CheckOutput(i, made);
  return st.ok()
             ? Status::Error("output " + std::to_string(i) + " is " +
                             std::string(DTypeName(dtype)) + " " + ShapeString(shape) +
                             ", placed as " + ShapeString(values_[step_->outputs()->Get(i)].shape))
             : st;
}

void GraphRun::BindConstants() {
  for (uint32_t v = 0; v < g_.values()->size(); ++v) {
    const pkg::Value* value = g_.values()->Get(v);
    if (value->kind() == pkg::ValueKind::Constant) SetConstant(v, value->buffer());
  }
}

Status GraphRun::BindConstantsAndInputs(const std::vector<const Tensor*>& given) {
  BindConstants();
  for (uint32_t i = 0; i < g_.inputs()->size(); ++i) {
    int v = g_.inputs()->Get(i);
    const pkg::Value* value = g_.values()->Get(v);
    if (!given[i]) {
      SetConstant(v, value->default_buffer());
      continue;
    }
    const Tensor& t = *given[i];
    // A package's values need no names (the signature then has ""). Built for a message
    // alone: a loop body binds its inputs at every iteration.
    auto where = [&] {
      return "input " + (value->name() ? "'" + value->name()->str() + "'" : std::to_string(i));
    };
    if (value->rank() >= 0 && t.rank() != value->rank()) {
      return Status::Error(where() + " has rank " + std::to_string(t.rank()) + ", expected " +
                           std::to_string(value->rank()));
    }
    if (static_cast<int32_t>(t.dtype) != value->dtype()) {
      return Status::Error(where() + " is " + std::string(DTypeName(t.dtype)) + ", expected " +
                           std::string(DTypeName(static_cast<DType>(value->dtype()))));
    }
    std::optional<size_t> size = CheckedByteSize(t.dtype, t.shape);
    if (!size) {
      return Status::Error(where() + " has shape " + ShapeString(t.shape) +
                           (std::find_if(t.shape.begin(), t.shape.end(),
                                         [](int64_t d) { return d < 0; }) != t.shape.end()
                                ? ": a dim is negative"
                                : ": a dim past 2^50, or more than 2^50 elements"));
    }
    if (*size > 0 && (!t.data || reinterpret_cast<uintptr_t>(t.data) % DTypeAlignment(t.dtype))) {
      return Status::Error(where() + (t.data ? " is not aligned to " : " has no data; it needs ") +
                           std::to_string(DTypeAlignment(t.dtype)) + " bytes" +
                           (t.data ? " (its element's size)" : ""));
    }
    QUILT_RETURN_IF_ERROR(MatchDims(*value, t.shape, where));
    uint64_t bytes = *size;
    QUILT_RETURN_IF_ERROR(DeviceOf(value->device()).Import(t.data, bytes, &owned_[v]));
    values_[v] = {t.dtype, t.shape, {owned_[v].get(), 0, bytes}};
  }
  return Status::Ok();
}

void GraphRun::SetConstant(int v, int buffer) {
  const pkg::Value* value = g_.values()->Get(v);
  DeviceTensor& t = values_[v];
  t.dtype = static_cast<DType>(value->dtype());
  t.shape.clear();
  for (int32_t d : *value->dims()) t.shape.push_back(g_.dims()->Get(d)->value());
  Buffer* b =
      plans_
          .constants[static_cast<size_t>(DeviceIndex(value->device()))][static_cast<size_t>(buffer)]
          .get();
  t.data = {b, 0, b->size()};
}

Status GraphRun::RunStep(int s, const PreparedStep* prepared, Builtin builtin) {
  step_ = g_.steps()->Get(s);
  step_index_ = s;
  attrs_ = AttrView(step_->attrs());
  switch (builtin) {
    case Builtin::kShapeExpr:
      QUILT_RETURN_IF_ERROR(EvalShapeExpr());
      break;
    case Builtin::kPrimValue:
      QUILT_RETURN_IF_ERROR(EvalPrimValue());
      break;
    case Builtin::kIf:
      QUILT_RETURN_IF_ERROR(RunIf());
      break;
    case Builtin::kWhileLoop:
      QUILT_RETURN_IF_ERROR(RunWhileLoop());
      break;
    case Builtin::kScan:
      QUILT_RETURN_IF_ERROR(RunScan());
      break;
    case Builtin::kCopy:
      QUILT_RETURN_IF_ERROR(RunCopy());
      break;
    case Builtin::kNone:
      QUILT_RETURN_IF_ERROR(RunKernel(s, *prepared));
      // Outputs placed from the compiler's dims were checked against them as the kernel made
      // them (its context compares); only outputs the kernel placed itself are checked here.
      if (args_.placed) return Status::Ok();
      break;
  }
  return CheckOutputs();
}

Status GraphRun::RunKernel(int s, const PreparedStep& prepared) {
  args_.step = step_;
  // Empty while the hoisted steps run at creation: a step that runs once keeps no cache.
  args_.constant_inputs = static_cast<size_t>(s) < plan_.constant_inputs.size()
                              ? plan_.constant_inputs[static_cast<size_t>(s)]
                              : 0;
  args_.inputs.clear();
  for (int32_t v : *step_->inputs()) args_.inputs.push_back(v >= 0 ? &values_[v] : nullptr);
  args_.output_dtypes.clear();
  for (int32_t v : *step_->outputs()) {
    args_.output_dtypes.push_back(static_cast<DType>(g_.values()->Get(v)->dtype()));
  }
  args_.outputs.clear();
  args_.allocate = this;
  args_.placed = true;
  for (int i = 0; i < num_outputs(); ++i) {
    if (!KnownShape(step_->outputs()->Get(i), &known_)) {
      args_.outputs.clear();
      args_.placed = false;
      break;
    }
    DeviceTensor* t;
    QUILT_RETURN_IF_ERROR(Place(i, args_.output_dtypes[i], known_, &t));
    args_.outputs.push_back(t);
  }
  args_.dims.clear();
  if (step_->kind() == pkg::StepKind::Dispatch) {
    // Generated code is launched with its sizes known: its outputs placed, its dims evaluated.
    if (!args_.placed) {
      return Status::Error("the shapes of its outputs are not known before it runs");
    }
    uint32_t num_dims = step_->dims() ? step_->dims()->size() : 0;
    for (uint32_t k = 0; k < num_dims; ++k) {
      int32_t d = step_->dims()->Get(k);
      std::optional<int64_t> e = env_.Eval(d);
      if (!e) return Status::Error("dim " + env_.DimString(d) + " of its launch is not known");
      args_.dims.push_back(*e);
    }
  }
  return QueueOf(step_->device()).Run(prepared, args_);
}

bool GraphRun::KnownShape(int v, Shape* shape) const {
  const pkg::Value* value = g_.values()->Get(v);
  if (value->dtype() == 0 || value->rank() < 0 || !value->dims()) return false;
  shape->clear();
  for (int32_t d : *value->dims()) {
    std::optional<int64_t> e = env_.Eval(d);
    if (!e || *e < 0) return false;
    shape->push_back(*e);
  }
  // A shape past the runtime's: left to Allocate, which says so.
  return ShapeFits(*shape);
}

Status GraphRun::RunCopy() {
  for (int i = 0; i < num_outputs() && i < static_cast<int>(step_->inputs()->size()); ++i) {
    int from = step_->inputs()->Get(i);
    const DeviceTensor src = values_[from];
    DeviceTensor* dst;
    QUILT_RETURN_IF_ERROR(Allocate(i, src.dtype, src.shape, &dst));
    int a = ValueDevice(from), b = ValueDevice(step_->outputs()->Get(i));
    Queue& qa = QueueOf(a);
    Queue& qb = QueueOf(b);
    if (DeviceIndex(a) == DeviceIndex(b)) {
      QUILT_RETURN_IF_ERROR(qa.Copy(src.data, dst->data));
    } else if (DeviceOf(a).info().host_addressable) {
      QUILT_RETURN_IF_ERROR(qa.WaitOnHost());
      QUILT_RETURN_IF_ERROR(qb.Write(HostAddress(src.data), dst->data));
    } else if (DeviceOf(b).info().host_addressable) {
      QUILT_RETURN_IF_ERROR(qb.WaitOnHost());
      QUILT_RETURN_IF_ERROR(qa.Read(src.data, HostAddress(dst->data)));
      std::unique_ptr<Event> done;
      QUILT_RETURN_IF_ERROR(qa.Signal(&done));
      QUILT_RETURN_IF_ERROR(qb.Wait(*done));
    } else {
      std::vector<uint8_t> staged(src.data.size);
      QUILT_RETURN_IF_ERROR(qa.Read(src.data, staged.data()));
      QUILT_RETURN_IF_ERROR(qa.WaitOnHost());
      QUILT_RETURN_IF_ERROR(qb.Write(staged.data(), dst->data));
    }
  }
  return Status::Ok();
}

void GraphRun::Free(int v) {
  Release(v);
  values_[v].data = {};
}

void GraphRun::Release(int v) {
  owned_[v].reset();
  Uncount(counted_[static_cast<size_t>(v)]);
  counted_[static_cast<size_t>(v)] = 0;
}

bool GraphRun::HandOver(int v, OwnedTensor* out) {
  // The entry graph's outputs alone: a subgraph's go on to its step, which copies them where
  // they belong, into memory its loop keeps from one iteration to the next.
  if (depth_ != 0) return false;
  const DeviceTensor& t = values_[v];
  BufferPtr& b = owned_[v];
  // Host memory this value has to itself, whole: not an arena's, a constant's or a caller's
  // input, nor a buffer another value (one that took it in place) or a queue still holds.
  if (!b || !b->outlives_device() || t.data.buffer != b.get() || t.data.offset != 0 ||
      t.data.size != b->size() || b.use_count() != 1) {
    return false;
  }
  uint8_t* host = b->host();
  out->dtype = t.dtype;
  out->shape = t.shape;
  out->data.Hold(std::move(b), host, t.data.size);
  Uncount(counted_[static_cast<size_t>(v)]);
  counted_[static_cast<size_t>(v)] = 0;
  return true;
}

Status GraphRun::ReadValue(int v, OwnedTensor* out) {
  const DeviceTensor& t = values_[v];
  out->dtype = t.dtype;
  out->shape = t.shape;
  Queue& q = QueueOf(ValueDevice(v));
  const uint8_t* host = DeviceOf(ValueDevice(v)).info().host_addressable && t.data.size
                            ? HostAddress(t.data)
                            : nullptr;
  if (host) {
    // Copied straight from where it lies once its work is done: one pass over the bytes, with
    // no clearing of the new buffer first (a detector's 1.6 MB output, every run).
    QUILT_RETURN_IF_ERROR(q.WaitOnHost());
    out->data.assign(host, host + t.data.size);
    return Status::Ok();
  }
  out->data.resize(t.data.size);
  if (t.data.size == 0) return Status::Ok();
  QUILT_RETURN_IF_ERROR(q.Read(t.data, out->data.data()));
  return q.WaitOnHost();
}

Status GraphRun::EvalShapeExpr() {
  const auto* dims = step_->dims();
  int64_t n = dims ? dims->size() : 0;
  std::vector<int64_t> shape(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    std::optional<int64_t> d = env_.Eval(dims->Get(i));
    if (!d) return Status::Error("dim " + env_.DimString(dims->Get(i)) + " is not known here");
    shape[static_cast<size_t>(i)] = *d;
  }
  return SetOutput(0, Tensor{DType::kInt64, {n}, shape.data()});
}

Status GraphRun::EvalPrimValue() {
  if (!step_->dims() || step_->dims()->size() != 1) return Status::Error("needs one dim");
  std::optional<int64_t> d = env_.Eval(step_->dims()->Get(0));
  if (!d)
    return Status::Error("dim " + env_.DimString(step_->dims()->Get(0)) + " is not known here");
  DType dt = static_cast<DType>(g_.values()->Get(step_->outputs()->Get(0))->dtype());
  union {
    int64_t i64;
    int32_t i32;
    float f32;
    double f64;
    uint8_t b;
  } y;
  switch (dt) {
    case DType::kInt64:
      y.i64 = *d;
      break;
    case DType::kInt32:
      y.i32 = static_cast<int32_t>(*d);
      break;
    case DType::kFloat32:
      y.f32 = static_cast<float>(*d);
      break;
    case DType::kFloat64:
      y.f64 = static_cast<double>(*d);
      break;
    case DType::kBool:
      y.b = *d != 0;
      break;
    default:
      return Status::Error("a prim value of type " + std::string(DTypeName(dt)));
  }
  return SetOutput(0, Tensor{dt, {}, &y});
}

Status GraphRun::CheckOutputs() {
  for (int i = 0; i < num_outputs(); ++i) {
    QUILT_RETURN_IF_ERROR(CheckOutput(i, values_[step_->outputs()->Get(i)]));
  }
  return Status::Ok();
}

Status GraphRun::CheckOutput(int i, const DeviceTensor& t) {
  const pkg::Value* value = g_.values()->Get(step_->outputs()->Get(i));
  auto where = [i] { return "output " + std::to_string(i); };
  if (t.data.buffer == nullptr && t.dtype == DType::kVoid) {
    return Status::Error("the kernel did not produce " + where());
  }
  if (value->dtype() != 0 && static_cast<int32_t>(t.dtype) != value->dtype()) {
    return Status::Error(where() + " is " + std::string(DTypeName(t.dtype)) +
                         ", the compiled model expects " +
                         std::string(DTypeName(static_cast<DType>(value->dtype()))));
  }
  if (value->rank() < 0) return Status::Ok();
  if (static_cast<int>(t.shape.size()) != value->rank()) {
    return Status::Error(where() + " has shape " + ShapeString(t.shape) +
                         ", the compiled model expects rank " + std::to_string(value->rank()));
  }
  return MatchDims(*value, t.shape, where);
}

}  // namespace quilt::rt
