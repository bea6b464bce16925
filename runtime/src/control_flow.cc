// The executor's control steps: if, while_loop and scan, which run subgraphs of the package.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/src/executor.h"

namespace quilt::rt {

FlowState& GraphRun::Flow(int s) {
  if (flows_.size() < g_.steps()->size()) flows_.resize(g_.steps()->size());
  std::unique_ptr<FlowState>& f = flows_[static_cast<size_t>(s)];
  if (!f) f = std::make_unique<FlowState>();
  return *f;
}

Status GraphRun::HostInput(int i, FlowState& f, Tensor* out, bool* present) {
  *present = false;
  if (i < 0 || i >= static_cast<int>(step_->inputs()->size())) return Status::Ok();
  int v = step_->inputs()->Get(i);
  if (v < 0) return Status::Ok();
  *present = true;
  const DeviceTensor& t = values_[v];
  if (DeviceOf(ValueDevice(v)).info().host_addressable) {
    QUILT_RETURN_IF_ERROR(QueueOf(ValueDevice(v)).WaitOnHost());
    *out = Tensor{t.dtype, t.shape, HostAddress(t.data)};
    return Status::Ok();
  }
  // The held tensors' bytes stay where they are when `held` grows: the views before stay good.
  if (f.held_count == f.held.size()) f.held.emplace_back();
  OwnedTensor& h = f.held[f.held_count++];
  QUILT_RETURN_IF_ERROR(ReadValue(v, &h));
  *out = View(h);
  return Status::Ok();
}

Status GraphRun::HostArg(int arg, FlowState& f) {
  std::vector<const Tensor*>& out = f.args[arg];
  out.clear();
  for (int k = 0; k < ArgSize(arg); ++k) {
    if (f.views_in.size() == f.views_in.capacity()) {
      return Status::Error("the step's argument sizes (input_arity) count more inputs than its " +
                           std::to_string(step_->inputs()->size()));
    }
    f.views_in.emplace_back();
    bool present;
    QUILT_RETURN_IF_ERROR(HostInput(ArgBegin(arg) + k, f, &f.views_in.back(), &present));
    out.push_back(present ? &f.views_in.back() : nullptr);
  }
  return Status::Ok();
}

FlowState& GraphRun::StartHostArgs() {
  FlowState& f = Flow(step_index_);
  f.views_in.clear();
  f.views_in.reserve(step_->inputs()->size());
  f.held_count = 0;
  return f;
}

Status GraphRun::RunGraph(int graph, const std::vector<const Tensor*>& inputs,
                          std::vector<OwnedTensor>* outputs, LoopHeld* loop) {
  if (depth_ >= kMaxDepth) return Status::Error("subgraphs nested too deep");
  if (inputs.size() != plans_.graphs[graph].graph->inputs()->size()) {
    return Status::Error("subgraph " + std::to_string(graph) + " takes " +
                         std::to_string(plans_.graphs[graph].graph->inputs()->size()) +
                         " inputs, the step gives " + std::to_string(inputs.size()));
  }
  std::unique_ptr<RunState> state = plans_.TakeRunState(static_cast<size_t>(graph));
  Status st = Status::Ok();
  {
    GraphRun sub(plans_, queues_, graph, depth_ + 1, profile_, start_, control_, memory_,
                 state.get());
    st = sub.Execute(inputs, loop);
    if (st.ok()) st = sub.TakeOutputs(outputs, loop != nullptr);
  }
  plans_.KeepRunState(static_cast<size_t>(graph), std::move(state));
  return st;
}

Status GraphRun::SetOutput(int i, const Tensor& t) {
  DeviceTensor* y;
  QUILT_RETURN_IF_ERROR(Allocate(i, t.dtype, t.shape, &y));
  if (y->data.size == 0) return Status::Ok();
  return QueueOf(ValueDevice(step_->outputs()->Get(i))).Write(t.data, y->data);
}

Status GraphRun::ScalarBool(const Tensor* t, const char* what, bool* out) {
  if (!t || t->dtype != DType::kBool || t->NumElements() != 1) {
    return Status::Error(std::string(what) + " must be one bool");
  }
  *out = *t->Data<uint8_t>() != 0;
  return Status::Ok();
}

Status GraphRun::RunIf() {
  FlowState& f = StartHostArgs();
  QUILT_RETURN_IF_ERROR(HostArg(0, f));
  bool cond = false;
  QUILT_RETURN_IF_ERROR(
      ScalarBool(f.args[0].empty() ? nullptr : f.args[0][0], "the condition", &cond));
  QUILT_RETURN_IF_ERROR(HostArg(1, f));
  std::vector<OwnedTensor>& outs = f.outs;
  QUILT_RETURN_IF_ERROR(RunGraph(step_->subgraphs()->Get(cond ? 0 : 1), f.args[1], &outs));
  if (static_cast<int>(outs.size()) != num_outputs()) {
    return Status::Error("the branch returns " + std::to_string(outs.size()) +
                         " values, expected " + std::to_string(num_outputs()));
  }
  for (int i = 0; i < num_outputs(); ++i) QUILT_RETURN_IF_ERROR(SetOutput(i, View(outs[i])));
  return Status::Ok();
}

void GraphRun::CopyInto(const Tensor& t, OwnedTensor* o) {
  o->name.clear();
  o->dtype = t.dtype;
  o->shape = t.shape;
  const auto* b = static_cast<const uint8_t*>(t.data);
  if (t.ByteSize()) {
    o->data.assign(b, b + t.ByteSize());
  } else {
    o->data.clear();
  }
}

void GraphRun::CopyAll(const std::vector<const Tensor*>& from, std::vector<OwnedTensor>* to) {
  to->resize(from.size());
  for (size_t k = 0; k < from.size(); ++k) CopyInto(*from[k], &(*to)[k]);
}

void GraphRun::KeepScanItem(FlowState& f, size_t k, int64_t n, OwnedTensor* item) {
  std::vector<OwnedTensor>& items = f.scans[k];
  if (static_cast<size_t>(n) < items.size()) {
    std::swap(items[static_cast<size_t>(n)], *item);
  } else {
    items.push_back(std::move(*item));
  }
}

Status GraphRun::Stack(int i, const std::vector<OwnedTensor>& items, int64_t n, int64_t axis,
                       bool reverse, OwnedTensor* stacked) {
  int v = step_->outputs()->Get(i);
  const pkg::Value* value = g_.values()->Get(v);
  DType dtype = static_cast<DType>(value->dtype());
  DeviceTensor* y;
  if (n == 0) {
    // No iterations: a zero-length axis; other dims as far as the compiler knows them.
    Shape shape;
    for (int d = 0; d < value->rank(); ++d) {
      std::optional<int64_t> e = env_.Eval(value->dims()->Get(d));
      shape.push_back(d == 0 || !e ? 0 : *e);
    }
    return Allocate(i, dtype, shape, &y);
  }
  const Shape& elem = items[0].shape;
  dtype = items[0].dtype;
  for (int64_t t = 0; t < n; ++t) {
    if (items[static_cast<size_t>(t)].shape != elem ||
        items[static_cast<size_t>(t)].dtype != dtype) {
      return Status::Error("the scan output " + std::to_string(i) +
                           " changes shape or type between iterations");
    }
  }
  int rank = static_cast<int>(elem.size()) + 1;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return Status::Error("scan output axis out of range");
  if (DTypeBits(dtype) % 8 != 0) return Status::Error("sub-byte element types in a loop");
  size_t eb = DTypeBits(dtype) / 8;
  Shape shape = elem;
  shape.insert(shape.begin() + axis, n);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= elem[d];
  for (size_t d = axis; d < elem.size(); ++d) inner *= elem[d];
  QUILT_RETURN_IF_ERROR(Allocate(i, dtype, shape, &y));
  if (y->data.size == 0) return Status::Ok();
  Queue& q = QueueOf(value->device());
  uint8_t* dst = nullptr;
  if (DeviceOf(value->device()).info().host_addressable) {
    // The output's memory may be an arena's, which earlier work on the queue may still use.
    QUILT_RETURN_IF_ERROR(q.WaitOnHost());
    dst = HostAddress(y->data);
  } else {
    stacked->data.resize(y->data.size);
    dst = stacked->data.data();
  }
  for (int64_t t = 0; t < n && inner > 0; ++t) {
    int64_t pos = reverse ? n - 1 - t : t;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + ((o * n + pos) * inner) * eb,
                  items[static_cast<size_t>(t)].data.data() + o * inner * eb, inner * eb);
    }
  }
  return dst == stacked->data.data() ? q.Write(dst, y->data) : Status::Ok();
}

Status GraphRun::RunWhileLoop() {
  FlowState& f = StartHostArgs();
  for (int arg = 1; arg <= 4; ++arg) QUILT_RETURN_IF_ERROR(HostArg(arg, f));
  const Tensor* max_trip = f.args[1].empty() ? nullptr : f.args[1][0];
  const Tensor* cond_in = f.args[2].empty() ? nullptr : f.args[2][0];
  const std::vector<const Tensor*>& captured = f.args[4];
  int64_t max = INT64_MAX;
  if (max_trip && max_trip->NumElements() > 0) {
    if (max_trip->dtype != DType::kInt64 || max_trip->NumElements() != 1) {
      return Status::Error("the trip count must be one int64");
    }
    max = *max_trip->Data<int64_t>();
  }
  bool cond = true;
  if (cond_in && cond_in->NumElements() > 0) {
    QUILT_RETURN_IF_ERROR(ScalarBool(cond_in, "the loop condition", &cond));
  }
  size_t num_carried = f.args[3].size();
  CopyAll(f.args[3], &f.carried);
  size_t num_scans = num_outputs() - num_carried;
  f.scans.resize(num_scans);
  int body = step_->subgraphs()->Get(0);
  // What the first iteration computes for the others (its buffers the last run's).
  f.invariants.ready = false;
  f.invariants.count = 0;
  int64_t it = 0;
  for (; it < max && cond; ++it) {
    if (it >= plans_.limits.max_loop_iterations) {
      return Status::Error("the loop reached " + std::to_string(it) +
                               " iterations, its limit (SessionLimits::max_loop_iterations; "
                               "quilt-run --max-loop-iterations)",
                           StatusCode::kLimit);
    }
    QUILT_RETURN_IF_ERROR(CheckCancelled());
    int64_t iter_value = it;
    uint8_t cond_value = 1;
    Tensor iter_t{DType::kInt64, {}, &iter_value};
    Tensor cond_t{DType::kBool, {}, &cond_value};
    f.views.clear();
    for (const OwnedTensor& c : f.carried) f.views.push_back(View(c));
    f.in.assign({&iter_t, &cond_t});
    for (const Tensor& v : f.views) f.in.push_back(&v);
    f.in.insert(f.in.end(), captured.begin(), captured.end());
    Status st = RunGraph(body, f.in, &f.outs, &f.invariants);
    if (!st.ok()) return st.WithContext("iteration " + std::to_string(it));
    if (f.outs.size() != 1 + num_carried + num_scans) {
      return Status::Error("the loop body returns " + std::to_string(f.outs.size()) + " values");
    }
    Tensor c = View(f.outs[0]);
    QUILT_RETURN_IF_ERROR(ScalarBool(&c, "the body's condition", &cond));
    const std::vector<bool>& passed = plans_.graphs[static_cast<size_t>(body)].loop_passthrough;
    for (size_t k = 0; k < num_carried; ++k) {
      // Swapped: the body's next outputs are written over the old state's memory.
      if (passed.empty() || !passed[1 + k]) std::swap(f.carried[k], f.outs[1 + k]);
    }
    for (size_t k = 0; k < num_scans; ++k) KeepScanItem(f, k, it, &f.outs[1 + num_carried + k]);
  }
  for (size_t k = 0; k < num_carried; ++k) {
    QUILT_RETURN_IF_ERROR(SetOutput(static_cast<int>(k), View(f.carried[k])));
  }
  for (size_t k = 0; k < num_scans; ++k) {
    QUILT_RETURN_IF_ERROR(
        Stack(static_cast<int>(num_carried + k), f.scans[k], it, 0, false, &f.stacked));
  }
  return Status::Ok();
}

Status GraphRun::RunScan() {
  FlowState& f = StartHostArgs();
  for (int arg = 1; arg <= 3; ++arg) QUILT_RETURN_IF_ERROR(HostArg(arg, f));
  const std::vector<const Tensor*>& states_in = f.args[1];
  const std::vector<const Tensor*>& xs = f.args[2];
  const std::vector<const Tensor*>& captured = f.args[3];
  // ONNX Scan has no optional inputs: an absent one (value -1) is a damaged package.
  for (const auto* group : {&states_in, &xs, &captured}) {
    if (std::find(group->begin(), group->end(), nullptr) != group->end()) {
      return Status::Error("a scan state, scan input or captured value is absent");
    }
  }
  Shape in_axes = attrs_.Ints("scan_input_axes");
  Shape in_dirs = attrs_.Ints("scan_input_directions");
  Shape out_axes = attrs_.Ints("scan_output_axes");
  Shape out_dirs = attrs_.Ints("scan_output_directions");
  if (xs.empty()) return Status::Error("scan needs at least one scan input");
  int64_t len = -1;
  Shape axes(xs.size());
  for (size_t j = 0; j < xs.size(); ++j) {
    int64_t a = j < in_axes.size() ? in_axes[j] : 0;
    int rank = xs[j]->rank();
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return Status::Error("scan input axis out of range");
    if (DTypeBits(xs[j]->dtype) % 8 != 0) return Status::Error("sub-byte element types in a scan");
    axes[j] = a;
    int64_t n = xs[j]->shape[a];
    if (len >= 0 && n != len) return Status::Error("scan inputs have different lengths");
    len = n;
  }
  size_t num_states = states_in.size();
  CopyAll(states_in, &f.carried);
  size_t num_scans = num_outputs() - num_states;
  f.scans.resize(num_scans);
  f.slices.resize(xs.size());
  int body = step_->subgraphs()->Get(0);
  for (int64_t t = 0; t < len; ++t) {
    QUILT_RETURN_IF_ERROR(CheckCancelled());
    for (size_t j = 0; j < xs.size(); ++j) {
      bool reverse = j < in_dirs.size() && in_dirs[j] == 1;
      Slice(*xs[j], axes[j], reverse ? len - 1 - t : t, &f.slices[j]);
    }
    f.views.clear();
    for (const OwnedTensor& s : f.carried) f.views.push_back(View(s));
    for (const OwnedTensor& s : f.slices) f.views.push_back(View(s));
    f.in.clear();
    for (const Tensor& v : f.views) f.in.push_back(&v);
    f.in.insert(f.in.end(), captured.begin(), captured.end());
    Status st = RunGraph(body, f.in, &f.outs);
    if (!st.ok()) return st.WithContext("iteration " + std::to_string(t));
    if (f.outs.size() != num_states + num_scans) {
      return Status::Error("the scan body returns " + std::to_string(f.outs.size()) + " values");
    }
    for (size_t k = 0; k < num_states; ++k) std::swap(f.carried[k], f.outs[k]);
    for (size_t k = 0; k < num_scans; ++k) KeepScanItem(f, k, t, &f.outs[num_states + k]);
  }
  for (size_t k = 0; k < num_states; ++k) {
    QUILT_RETURN_IF_ERROR(SetOutput(static_cast<int>(k), View(f.carried[k])));
  }
  for (size_t k = 0; k < num_scans; ++k) {
    int64_t axis = k < out_axes.size() ? out_axes[k] : 0;
    bool reverse = k < out_dirs.size() && out_dirs[k] == 1;
    QUILT_RETURN_IF_ERROR(Stack(static_cast<int>(num_states + k), f.scans[k],
                                std::max<int64_t>(len, 0), axis, reverse, &f.stacked));
  }
  return Status::Ok();
}

void GraphRun::Slice(const Tensor& x, int64_t axis, int64_t index, OwnedTensor* o) {
  o->dtype = x.dtype;
  o->shape = x.shape;
  o->shape.erase(o->shape.begin() + axis);
  size_t eb = DTypeBits(x.dtype) / 8;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  int64_t n = x.shape[axis];
  o->data.resize(outer * inner * eb);
  const auto* src = static_cast<const uint8_t*>(x.data);
  for (int64_t k = 0; k < outer && inner > 0; ++k) {
    std::memcpy(o->data.data() + k * inner * eb, src + ((k * n + index) * inner) * eb, inner * eb);
  }
}

}  // namespace quilt::rt
