#include "runtime/src/session.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "runtime/src/device/device.h"
#include "runtime/src/dims.h"
#include "runtime/src/executor.h"
#include "targets/cpu/kernels/registry.h"

namespace quilt::rt {

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

// Per value of `g`: whether it is a constant of the package.
std::vector<bool> PackageConstants(const pkg::Graph& g) {
  std::vector<bool> constant(g.values()->size(), false);
  for (uint32_t v = 0; v < g.values()->size(); ++v) {
    constant[v] = g.values()->Get(v)->kind() == pkg::ValueKind::Constant;
  }
  return constant;
}

// Whether step s of `plan` may run ahead of the others it sits among (hoisted to session creation,
// or to a loop's first iteration): a library kernel, generated code or copy that reads only
// values in `same` (and at least one), whose outputs are no graph output and, with static_dims
// (session creation), have static shapes.
bool Hoistable(const GraphPlan& plan, uint32_t s, const std::vector<bool>& same,
               bool static_dims = true) {
  const pkg::Graph& g = *plan.graph;
  const pkg::Step* step = g.steps()->Get(s);
  Builtin b = plan.builtins[s];
  if ((b != Builtin::kNone && b != Builtin::kCopy) || !step->inputs() || !step->outputs() ||
      step->inputs()->size() == 0) {
    return false;
  }
  for (int32_t v : *step->inputs()) {
    if (v >= 0 && !same[static_cast<size_t>(v)]) return false;
  }
  for (int32_t v : *step->outputs()) {
    const pkg::Value* value = g.values()->Get(static_cast<uint32_t>(v));
    if (plan.is_output[static_cast<size_t>(v)] || value->dtype() == 0 || value->rank() < 0 ||
        !value->dims()) {
      return false;
    }
    if (!static_dims) continue;
    for (int32_t d : *value->dims()) {
      if (g.dims()->Get(d)->kind() != pkg::DimKind::Int) return false;
    }
  }
  return true;
}

// Marks the steps of `plan` whose inputs are all constants or values such steps make (the
// Hoistable ones). Returns how many there are.
int MarkHoisted(GraphPlan& plan) {
  const pkg::Graph& g = *plan.graph;
  std::vector<bool> constant = PackageConstants(g);
  plan.hoisted.assign(g.steps()->size(), false);
  int count = 0;
  for (uint32_t s = 0; s < g.steps()->size(); ++s) {
    if (!Hoistable(plan, s, constant)) continue;
    plan.hoisted[s] = true;
    ++count;
    for (int32_t v : *g.steps()->Get(s)->outputs()) constant[static_cast<size_t>(v)] = true;
  }
  return count;
}

// The values of `plan`'s graph that are the same tensor in every run (in a loop's body, in every
// iteration too): the package's constants, the values the session holds (made by the hoisted
// steps, main graph only), the inputs GraphPlan::same_inputs marks, and what the steps that read
// only such values make from them (a body's loop-invariant steps: a weight transposed).
std::vector<bool> SameInEveryRun(const GraphPlan& plan) {
  const pkg::Graph& g = *plan.graph;
  std::vector<bool> same = PackageConstants(g);
  for (const HeldValue& h : plan.held) same[static_cast<size_t>(h.value)] = true;
  bool any = false;
  for (uint32_t i = 0; i < plan.same_inputs.size() && i < g.inputs()->size(); ++i) {
    int32_t v = g.inputs()->Get(i);
    if (!plan.same_inputs[i] || v < 0) continue;
    same[static_cast<size_t>(v)] = true;
    any = true;
  }
  if (!any) return same;
  for (uint32_t s = 0; s < g.steps()->size(); ++s) {
    if (!Hoistable(plan, s, same)) continue;
    for (int32_t v : *g.steps()->Get(s)->outputs()) same[static_cast<size_t>(v)] = true;
  }
  return same;
}

// Marks, per step of `plan`, the inputs that are the same tensor in every run (SameInEveryRun).
void MarkConstantInputs(GraphPlan& plan) {
  const pkg::Graph& g = *plan.graph;
  std::vector<bool> constant = SameInEveryRun(plan);
  plan.constant_inputs.assign(g.steps()->size(), 0);
  for (uint32_t s = 0; s < g.steps()->size(); ++s) {
    const pkg::Step* step = g.steps()->Get(s);
    if (!step->inputs()) continue;
    for (uint32_t i = 0; i < step->inputs()->size() && i < 64; ++i) {
      int32_t v = step->inputs()->Get(i);
      if (v >= 0 && constant[static_cast<size_t>(v)]) plan.constant_inputs[s] |= uint64_t{1} << i;
    }
  }
}

// Marks the loop-invariant steps of `body` (GraphPlan::loop_invariant), the body of a while_loop
// with `carried` carried values: its inputs past the carried ones are captured, and a carried
// value the body returns as it was given stays the same too; the steps are those Hoistable from
// these. A body of several loops keeps the steps invariant in all of them.
void MarkLoopInvariants(GraphPlan& body, int carried) {
  const pkg::Graph& g = *body.graph;
  size_t num_values = g.values()->size(), num_steps = g.steps()->size();
  std::vector<bool> same = PackageConstants(g);
  // What each output is a copy of, through chains of copies (the body's result of a carried
  // value it does not change is often a copy of that input).
  std::vector<int32_t> copied_from(num_values, -1);
  for (uint32_t s = 0; s < num_steps; ++s) {
    const pkg::Step* step = g.steps()->Get(s);
    if (body.builtins[s] != Builtin::kCopy || !step->inputs() || !step->outputs()) continue;
    for (uint32_t k = 0; k < step->outputs()->size() && k < step->inputs()->size(); ++k) {
      copied_from[static_cast<size_t>(step->outputs()->Get(k))] = step->inputs()->Get(k);
    }
  }
  auto source = [&](int32_t v) {
    for (size_t hops = 0; v >= 0 && copied_from[static_cast<size_t>(v)] >= 0 && hops < num_values;
         ++hops) {
      v = copied_from[static_cast<size_t>(v)];
    }
    return v;
  };
  uint32_t inputs = g.inputs()->size(), outputs = g.outputs()->size();
  std::vector<bool> passthrough(outputs, false);
  for (uint32_t i = 2; i < inputs; ++i) {
    int32_t v = g.inputs()->Get(i);
    bool captured = i >= 2 + static_cast<uint32_t>(carried);
    bool passed = !captured && i - 1 < outputs && source(g.outputs()->Get(i - 1)) == v;
    if (passed) passthrough[i - 1] = true;
    if (v >= 0 && (captured || passed)) same[static_cast<size_t>(v)] = true;
  }
  // Copies whose every output is a passed-through output and read by no step.
  std::vector<int> readers(num_values, 0);
  for (uint32_t s = 0; s < num_steps; ++s) {
    for (int32_t v : *g.steps()->Get(s)->inputs()) {
      if (v >= 0) ++readers[static_cast<size_t>(v)];
    }
  }
  std::vector<bool> passed_value(num_values, false);
  for (uint32_t o = 0; o < outputs; ++o) {
    if (passthrough[o]) passed_value[static_cast<size_t>(g.outputs()->Get(o))] = true;
  }
  std::vector<bool> skip(num_steps, false);
  for (uint32_t s = 0; s < num_steps; ++s) {
    const pkg::Step* step = g.steps()->Get(s);
    if (body.builtins[s] != Builtin::kCopy || !step->outputs() || step->outputs()->size() == 0) {
      continue;
    }
    bool only = true;
    for (int32_t v : *step->outputs()) {
      only &= passed_value[static_cast<size_t>(v)] && readers[static_cast<size_t>(v)] == 0;
      // An output listed twice (two carried values from one copy) is read back once.
      for (uint32_t o = 0; o < outputs; ++o) {
        only &= g.outputs()->Get(o) != v || passthrough[o];
      }
    }
    skip[s] = only;
  }
  if (body.loop_passthrough.empty()) {
    body.loop_passthrough = passthrough;
    body.loop_skip = skip;
  } else {
    for (uint32_t o = 0; o < outputs; ++o) {
      body.loop_passthrough[o] = body.loop_passthrough[o] && passthrough[o];
    }
    for (uint32_t s = 0; s < num_steps; ++s) body.loop_skip[s] = body.loop_skip[s] && skip[s];
  }
  std::vector<bool> invariant(num_steps, false);
  for (uint32_t s = 0; s < num_steps; ++s) {
    // Of any dims: the first iteration binds them, and the later ones bind them again from
    // what it held (Run::Execute).
    if (!Hoistable(body, s, same, /*static_dims=*/false)) continue;
    invariant[s] = true;
    for (int32_t v : *g.steps()->Get(s)->outputs()) same[static_cast<size_t>(v)] = true;
  }
  if (body.loop_invariant.empty()) {
    body.loop_invariant = invariant;
  } else {
    for (size_t s = 0; s < num_steps; ++s)
      body.loop_invariant[s] = body.loop_invariant[s] && invariant[s];
  }
  body.loop_keep.assign(num_values, false);
  for (uint32_t s = 0; s < num_steps; ++s) {
    if (body.loop_invariant[s]) continue;
    for (int32_t v : *g.steps()->Get(s)->inputs()) {
      if (v >= 0) body.loop_keep[static_cast<size_t>(v)] = true;
    }
  }
}

// Marks the inputs of each while_loop body that are the same tensor in every iteration of every
// run (GraphPlan::same_inputs): a captured value, or a carried value the body passes through
// unchanged, whose source in the loop's graph is such a value (a weight that an exporter hands
// the body as loop state, as paddle2onnx does). Their readers then keep what they derive from
// them (a matmul's packed weight) for the session, not per iteration. A body of several loops
// takes what all of them agree on; a graph that is also another step's subgraph (an If's branch,
// a scan's body) none. Repeated for loops nested in bodies, one level a pass.
void MarkSameLoopInputs(std::vector<GraphPlan>& graphs) {
  for (size_t pass = 0; pass <= graphs.size(); ++pass) {
    std::vector<std::vector<bool>> marks(graphs.size());
    std::vector<bool> seen(graphs.size(), false);
    auto meet = [&](size_t b, std::vector<bool> mark) {
      if (!seen[b]) {
        marks[b] = std::move(mark);
        seen[b] = true;
        return;
      }
      for (size_t i = 0; i < marks[b].size(); ++i) {
        marks[b][i] = marks[b][i] && i < mark.size() && mark[i];
      }
    };
    for (const GraphPlan& plan : graphs) {
      std::vector<bool> same = SameInEveryRun(plan);
      for (uint32_t s = 0; s < plan.graph->steps()->size(); ++s) {
        const pkg::Step* step = plan.graph->steps()->Get(s);
        if (!step->subgraphs()) continue;
        for (uint32_t k = 0; k < step->subgraphs()->size(); ++k) {
          auto b = static_cast<size_t>(step->subgraphs()->Get(k));
          if (b >= graphs.size()) continue;
          const pkg::Graph& body = *graphs[b].graph;
          std::vector<bool> mark(body.inputs()->size(), false);
          if (plan.builtins[s] == Builtin::kWhileLoop && k == 0 && step->inputs()) {
            const std::vector<bool>& passed = graphs[b].loop_passthrough;
            int carried = StepArgSize(*step, 3);
            int init = StepArgBegin(*step, 3), captured = StepArgBegin(*step, 4);
            for (uint32_t i = 2; i < mark.size(); ++i) {
              bool is_carried = i < 2 + static_cast<uint32_t>(carried);
              if (is_carried && (i - 1 >= passed.size() || !passed[i - 1])) continue;
              if (!is_carried && static_cast<int>(i - 2) - carried >= StepArgSize(*step, 4))
                continue;
              int at = is_carried ? init + static_cast<int>(i - 2)
                                  : captured + static_cast<int>(i - 2) - carried;
              if (at < 0 || static_cast<uint32_t>(at) >= step->inputs()->size()) continue;
              int32_t u = step->inputs()->Get(static_cast<uint32_t>(at));
              mark[i] = u >= 0 && same[static_cast<size_t>(u)];
            }
          }
          meet(b, std::move(mark));
        }
      }
    }
    bool changed = false;
    for (size_t b = 0; b < graphs.size(); ++b) {
      if (!seen[b] || marks[b] == graphs[b].same_inputs) continue;
      graphs[b].same_inputs = std::move(marks[b]);
      changed = true;
    }
    if (!changed) break;
  }
}

// Runs the main graph's hoisted steps (MarkHoisted) and keeps what they make in `plans`.
Status HoistConstantSteps(Session::Plans& plans);

// How many steps of the package's graphs run on its device `d`.
int StepsOn(const pkg::Package& p, uint32_t d) {
  int n = 0;
  for (const pkg::Graph* g : *p.graphs()) {
    for (const pkg::Step* step : *g->steps()) n += step->device() == static_cast<int>(d);
  }
  return n;
}

}  // namespace

namespace {

// What the executor does itself for a step (kNone: the step's device runs it). The loader checked
// that the kind and the name agree.
Builtin BuiltinOf(const pkg::Step& step) {
  if (step.kind() == pkg::StepKind::Kernel || step.kind() == pkg::StepKind::Dispatch) {
    return Builtin::kNone;
  }
  std::string_view name = step.kernel()->string_view();
  if (name == "shape_expr") return Builtin::kShapeExpr;
  if (name == "prim_value") return Builtin::kPrimValue;
  if (name == "if") return Builtin::kIf;
  if (name == "while_loop") return Builtin::kWhileLoop;
  if (name == "scan") return Builtin::kScan;
  if (name == "copy") return Builtin::kCopy;
  return Builtin::kNone;
}

// Every step prepared on its device, and for each step the values it is the last reader of.
// Steps their device cannot run are added to `missing`, by device kind; a step that reads a
// value held on another device (only copies and control steps may) is an error.
Status PlanGraph(const pkg::Graph& g, const Session::Plans& plans,
                 std::map<DeviceKind, std::vector<std::string>>* missing, GraphPlan* out) {
  GraphPlan& plan = *out;
  plan.graph = &g;
  int num_steps = static_cast<int>(g.steps()->size());
  for (int i = 0; i < num_steps; ++i) {
    const pkg::Step* step = g.steps()->Get(i);
    Builtin builtin = BuiltinOf(*step);
    std::unique_ptr<PreparedStep> prepared;
    if (builtin == Builtin::kNone) {
      int d = plans.device_of[static_cast<size_t>(step->device())];
      const Device& device = *plans.devices[static_cast<size_t>(d)];
      const Executable* code = nullptr;
      if (step->kind() == pkg::StepKind::Dispatch) {
        code = plans.executables[static_cast<size_t>(step->code())].get();
      }
      Status st = device.Prepare(*step, code, &prepared);
      if (!st.ok() && step->kind() == pkg::StepKind::Dispatch) {
        return Status::Error(StepName(g, i) + ": " + st.message());
      }
      if (!st.ok()) {
        std::string name = StepName(g, i);
        // What the device said, where it is more than that it has no kernel of the step's name
        // (a fused step's member).
        if (st.message() != NoKernelMessage(device.info().kind, step->kernel()->string_view())) {
          name += " [" + st.message() + "]";
        }
        (*missing)[device.info().kind].push_back(std::move(name));
      }
      for (int32_t v : *step->inputs()) {
        if (v < 0) continue;
        const pkg::Value* value = g.values()->Get(v);
        if (plans.device_of[static_cast<size_t>(value->device())] != d) {
          return Status::Error(StepName(g, i) + " on device " + std::to_string(step->device()) +
                               " reads value " + std::to_string(v) +
                               (value->name() ? " '" + value->name()->str() + "'" : "") +
                               ", which lives on device " + std::to_string(value->device()) +
                               ": the package lacks a copy");
        }
      }
    }
    plan.prepared.push_back(std::move(prepared));
    plan.builtins.push_back(builtin);
  }
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
  plan.in_place.assign(static_cast<size_t>(num_steps), -1);
  for (int i = 0; i < num_steps; ++i) {
    const pkg::Step* step = g.steps()->Get(i);
    const int64_t p = AttrView(step->attrs()).Int(kInPlaceInput, -1);
    if (p < 0 || p >= static_cast<int64_t>(step->inputs()->size()) ||
        step->outputs()->size() != 1) {
      continue;
    }
    const int32_t v = step->inputs()->Get(static_cast<uint32_t>(p));
    const int32_t out = step->outputs()->Get(0);
    if (v < 0 || v == out || g.values()->Get(v)->kind() != pkg::ValueKind::Intermediate ||
        plan.is_output[v] || last_use[v] != i ||
        g.values()->Get(v)->device() != g.values()->Get(out)->device() ||
        std::count(step->inputs()->begin(), step->inputs()->end(), v) != 1) {
      continue;
    }
    plan.in_place[static_cast<size_t>(i)] = v;
  }
  plan.frees.resize(num_steps);
  for (int v = 0; v < num_values; ++v) {
    if (g.values()->Get(v)->kind() == pkg::ValueKind::Intermediate && !plan.is_output[v] &&
        last_use[v] >= 0) {
      plan.frees[last_use[v]].push_back(v);
    }
  }
  return Status::Ok();
}

}  // namespace

Status Session::Create(std::shared_ptr<const LoadedPackage> package, const SessionOptions& options,
                       std::unique_ptr<Session>* out) {
  if (!package) return Status::Error("session: no package");
  if (options.threads < 1) return Status::Error("session: threads must be at least 1");
  const SessionLimits& limits = options.limits;
  if (options.threads > limits.max_threads) {
    return Status::Error("session: " + std::to_string(options.threads) +
                             " threads per run, past the limit of " +
                             std::to_string(limits.max_threads) +
                             " (SessionLimits::max_threads; quilt-run --max-threads)",
                         StatusCode::kLimit);
  }
  const pkg::Package& p = package->root();
  for (uint32_t gi = 0; gi < p.graphs()->size(); ++gi) {
    const auto* arenas = p.graphs()->Get(gi)->arena_bytes();
    if (!arenas) continue;
    for (uint32_t d = 0; d < arenas->size(); ++d) {
      if (static_cast<uint64_t>(arenas->Get(d)) > limits.max_arena_bytes) {
        return Status::Error("graph " + std::to_string(gi) + " plans an arena of " +
                                 std::to_string(arenas->Get(d)) + " bytes on device " +
                                 std::to_string(d) + ", past the limit of " +
                                 std::to_string(limits.max_arena_bytes) +
                                 " (SessionLimits::max_arena_bytes; quilt-run --max-arena-bytes)",
                             StatusCode::kLimit);
      }
    }
  }
  // The devices that hold a value or run a step (a package may list a device that the
  // placement left empty).
  std::vector<bool> used(p.devices()->size(), false);
  for (const pkg::Graph* g : *p.graphs()) {
    for (const pkg::Value* v : *g->values()) used[static_cast<size_t>(v->device())] = true;
    for (const pkg::Step* st : *g->steps()) used[static_cast<size_t>(st->device())] = true;
  }
  std::vector<DeviceKind> allowed;
  for (const std::string& name : options.devices) {
    std::optional<DeviceKind> k = ParseDeviceKind(name);
    if (!k) {
      return Status::Error("session options: unknown device kind '" + name +
                           "' (known: " + DeviceKindList() + ")");
    }
    allowed.push_back(*k);
  }
  for (int d : options.run_on_test_device) {
    if (d < 0 || d >= static_cast<int>(p.devices()->size())) {
      return Status::Error("session options: the package has no device " + std::to_string(d) +
                           " to run on the test device");
    }
  }
  std::unique_ptr<Session> s(new Session());
  s->package_ = package;
  s->options_ = options;
  s->plans_ = std::make_unique<Plans>();
  Plans& plans = *s->plans_;
  plans.package = &p;
  plans.limits = limits;
  plans.device_of.assign(p.devices()->size(), -1);
  DeviceOptions device_options;
  device_options.threads = options.threads;
  device_options.max_workers = limits.max_workers;
  device_options.code_cache_dir = options.code_cache_dir;
  // Devices of a portable package that are absent here: they run on the CPU, their code unloaded.
  std::vector<bool> absent(p.devices()->size(), false);
  for (uint32_t d = 0; d < p.devices()->size(); ++d) {
    if (!used[d]) continue;
    const pkg::Device* dev = p.devices()->Get(d);
    std::string name = dev->kind() ? dev->kind()->str() : "";
    std::string target = dev->target() ? dev->target()->str() : name;
    std::optional<DeviceKind> kind = ParseDeviceKind(name);
    if (!kind) {
      return Status::Error("the package runs steps on device '" + target + "' of kind '" + name +
                           "', which this runtime does not know (known: " + DeviceKindList() + ")");
    }
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), *kind) == allowed.end()) {
      return Status::Error("the package needs device kind '" + name +
                           "', which the session options do not allow");
    }
    const auto& on_test = options.run_on_test_device;
    if (std::find(on_test.begin(), on_test.end(), static_cast<int>(d)) != on_test.end()) {
      kind = DeviceKind::kTest;
    }
    std::unique_ptr<Device> device;
    Status st = CreateDevice(*kind, dev->id(), device_options, &device);
    if (!st.ok() && dev->cpu_fallback() && !options.strict && *kind != DeviceKind::kCpu) {
      // A portable package: this device's steps run on the CPU, each with its op's kernel.
      std::string message = st.message();
      if (size_t nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
      s->notes_.push_back("device " + std::to_string(d) + " ('" + target +
                          "') is not available here (" + message + "); the package is portable: " +
                          std::to_string(StepsOn(p, d)) + " steps run on the CPU instead");
      absent[d] = true;
      st = CreateDevice(DeviceKind::kCpu, 0, device_options, &device);
    }
    if (!st.ok()) {
      return Status::Error("the package runs steps on device '" + target + "': " + st.message());
    }
    // Vdevices of one physical device share it.
    for (size_t k = 0; k < plans.devices.size(); ++k) {
      const DeviceInfo& info = plans.devices[k]->info();
      if (info.kind == device->info().kind && info.id == device->info().id) {
        plans.device_of[d] = static_cast<int>(k);
      }
    }
    if (plans.device_of[d] < 0) {
      plans.device_of[d] = static_cast<int>(plans.devices.size());
      plans.devices.push_back(std::move(device));
    }
  }
  // Code sections, once each, on their devices. A device whose code does not load hands its
  // steps to the CPU (unless strict): every dispatch step names its op, which the CPU has a
  // library kernel for.
  plans.executables.resize(p.code() ? p.code()->size() : 0);
  std::vector<bool> moved_to_cpu = absent;
  for (size_t i = 0; i < plans.executables.size(); ++i) {
    const pkg::TargetCode* c = p.code()->Get(static_cast<uint32_t>(i));
    int d = plans.device_of[static_cast<size_t>(c->device())];
    // Unused, or moved to the CPU by an earlier section's failure.
    if (d < 0 || moved_to_cpu[static_cast<size_t>(c->device())]) continue;
    CodeBlob blob;
    blob.format = c->format()->string_view();
    blob.target = c->target() ? c->target()->string_view() : std::string_view();
    blob.bytes = package->BufferData(c->buffer());
    blob.size = package->BufferSize(c->buffer());
    if (c->entry_points()) {
      for (const flatbuffers::String* e : *c->entry_points()) {
        blob.entry_points.push_back(e->string_view());
      }
    }
    Status st = plans.devices[static_cast<size_t>(d)]->Load(blob, &plans.executables[i]);
    if (st.ok()) continue;
    std::string what = "code section " + std::to_string(i) + " (" + std::string(blob.format) +
                       " for '" + std::string(blob.target) + "')";
    // Every package device on this physical device goes to the CPU, with all its steps.
    std::vector<bool> moving(plans.device_of.size(), false);
    for (size_t k = 0; k < plans.device_of.size(); ++k) moving[k] = plans.device_of[k] == d;
    int moved = 0;
    bool movable = !options.strict;
    for (const pkg::Graph* g : *p.graphs()) {
      for (const pkg::Step* step : *g->steps()) {
        if (!moving[static_cast<size_t>(step->device())]) continue;
        ++moved;
        bool has_op = step->op() && step->op()->size();
        movable &= step->kind() != pkg::StepKind::Dispatch || has_op;
      }
    }
    if (!movable) return Status::Error(what + ": " + st.message());
    int cpu = -1;
    for (size_t k = 0; k < plans.devices.size(); ++k) {
      if (plans.devices[k]->info().kind == DeviceKind::kCpu) cpu = static_cast<int>(k);
    }
    if (cpu < 0) {
      std::unique_ptr<Device> host;
      QUILT_RETURN_IF_ERROR(CreateDevice(DeviceKind::kCpu, 0, device_options, &host));
      cpu = static_cast<int>(plans.devices.size());
      plans.devices.push_back(std::move(host));
    }
    std::string message = st.message();
    if (size_t nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
    const pkg::Device* dev = p.devices()->Get(c->device());
    s->notes_.push_back("device " + std::to_string(c->device()) + " ('" + dev->target()->str() +
                        "'): " + what + " did not load (" + message + "); its " +
                        std::to_string(moved) + " steps run on the CPU instead");
    for (size_t k = 0; k < plans.device_of.size(); ++k) {
      if (!moving[k]) continue;
      plans.device_of[k] = cpu;
      moved_to_cpu[k] = true;
    }
    // Sections already loaded for those devices are dropped; later ones are not loaded.
    for (size_t e = 0; e < plans.executables.size(); ++e) {
      if (moving[static_cast<size_t>(p.code()->Get(static_cast<uint32_t>(e))->device())]) {
        plans.executables[e].reset();
      }
    }
  }
  // Constants, once per device that reads them.
  plans.constants.resize(plans.devices.size());
  for (auto& list : plans.constants) list.resize(p.buffers() ? p.buffers()->size() : 0);
  for (const pkg::Graph* g : *p.graphs()) {
    for (const pkg::Value* v : *g->values()) {
      int d = plans.device_of[static_cast<size_t>(v->device())];
      for (int b :
           {v->kind() == pkg::ValueKind::Constant ? v->buffer() : -1, v->default_buffer()}) {
        if (b < 0 || plans.constants[d][b]) continue;
        QUILT_RETURN_IF_ERROR(plans.devices[d]->Import(
            package->BufferData(b), package->BufferSize(b), &plans.constants[d][b]));
      }
    }
  }
  std::map<DeviceKind, std::vector<std::string>> missing;
  plans.graphs.resize(p.graphs()->size());
  for (uint32_t gi = 0; gi < p.graphs()->size(); ++gi) {
    QUILT_RETURN_IF_ERROR(PlanGraph(*p.graphs()->Get(gi), plans, &missing, &plans.graphs[gi]));
  }
  if (!missing.empty()) {
    std::string message;
    // The first few steps of each device, and how many more: a package of a runtime built
    // without one kernel may have hundreds of its steps.
    constexpr size_t kNamed = 4;
    for (const auto& [kind, steps] : missing) {
      std::string named;
      for (size_t i = 0; i < steps.size() && i < kNamed; ++i) {
        named += (i ? ", " : "") + steps[i];
      }
      if (steps.size() > kNamed) {
        named += " and " + std::to_string(steps.size() - kNamed) + " more steps";
      }
      message += (message.empty() ? "" : "; ") + NoKernelMessage(kind, named);
    }
    // Devices that run the CPU's kernels, in a runtime built with chosen ones: how to build one
    // with those it lacks.
    if (missing.count(DeviceKind::kCpu) || missing.count(DeviceKind::kTest)) {
      message += cpu::KernelMissingHint();
    }
    return Status::Error(message);
  }
  // Steps that read constants alone run now, once, and their results stay with the session
  // (dequantized weights, constants moved to another device): runs start after them.
  QUILT_RETURN_IF_ERROR(HoistConstantSteps(plans));
  for (GraphPlan& plan : plans.graphs) {
    for (uint32_t i = 0; i < plan.graph->steps()->size(); ++i) {
      const pkg::Step* step = plan.graph->steps()->Get(i);
      if (plan.builtins[i] != Builtin::kWhileLoop || !step->subgraphs() ||
          step->subgraphs()->size() < 1) {
        continue;
      }
      auto body = static_cast<size_t>(step->subgraphs()->Get(0));
      if (body < plans.graphs.size()) MarkLoopInvariants(plans.graphs[body], StepArgSize(*step, 3));
    }
  }
  MarkSameLoopInputs(plans.graphs);
  for (GraphPlan& plan : plans.graphs) MarkConstantInputs(plan);
  const pkg::Graph& g = *p.graphs()->Get(0);
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
    // Built for a message alone (no string on a run's way).
    auto where = [&] { return "input '" + in.name + "'"; };
    if (t.dtype != it->dtype) {
      return Status::Error(where() + " is " + std::string(DTypeName(t.dtype)) + ", expected " +
                           it->ToString());
    }
    if (it->rank >= 0 && t.rank() != it->rank) {
      return Status::Error(where() + " has rank " + std::to_string(t.rank()) + ", expected " +
                           it->ToString());
    }
    for (int64_t d : t.shape) {
      if (d < 0) return Status::Error(where() + " has a negative dim");
    }
    if (t.data == nullptr && t.ByteSize() > 0) return Status::Error(where() + " has no data");
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

Status HoistConstantSteps(Session::Plans& plans) {
  if (MarkHoisted(plans.graphs[0]) == 0) return Status::Ok();
  std::vector<std::unique_ptr<Queue>> queues(plans.devices.size());
  for (size_t d = 0; d < queues.size(); ++d) {
    QUILT_RETURN_IF_ERROR(plans.devices[d]->CreateQueue(&queues[d]));
  }
  std::vector<HeldValue> held;
  {
    GraphRun run(plans, queues, 0);
    Status st = run.Hoist(&held);
    for (const std::unique_ptr<Queue>& q : queues) {
      Status done = q->Finish();
      if (st.ok()) st = done;
    }
    if (!st.ok()) return st.WithContext("computing the package's constant steps");
  }
  plans.graphs[0].held = std::move(held);
  return Status::Ok();
}

}  // namespace

Status Session::Run(const std::vector<NamedTensor>& inputs,
                    std::vector<OwnedTensor>* outputs) const {
  return Run(inputs, outputs, nullptr);
}

Status Session::Run(const std::vector<NamedTensor>& inputs, std::vector<OwnedTensor>* outputs,
                    RunProfile* profile, const RunControl* control) const {
  auto start = std::chrono::steady_clock::now();
  if (profile) *profile = {};
  uint64_t memory = 0;
  std::unique_ptr<RunState> state = plans_->TakeRunState(0);
  std::vector<const Tensor*>& given = state->given;
  QUILT_RETURN_IF_ERROR(CheckInputs(inputs, &given));
  // One in-order queue per device for this run (the CPU's holds this run's threads): an earlier
  // run's where it left them.
  std::vector<std::unique_ptr<Queue>>& queues = state->queues;
  if (queues.empty()) {
    queues.resize(plans_->devices.size());
    for (size_t d = 0; d < queues.size(); ++d) {
      QUILT_RETURN_IF_ERROR(plans_->devices[d]->CreateQueue(&queues[d]));
    }
  }
  {
    GraphRun run(*plans_, queues, 0, 0, profile, start, control, &memory, state.get());
    QUILT_RETURN_IF_ERROR(run.Execute(given));
    for (const std::unique_ptr<Queue>& q : queues) QUILT_RETURN_IF_ERROR(q->Finish());
    QUILT_RETURN_IF_ERROR(run.TakeOutputs(outputs));
  }
  plans_->KeepRunState(0, std::move(state));
  if (profile) {
    profile->total_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  }
  for (size_t i = 0; i < outputs->size(); ++i) (*outputs)[i].name = outputs_[i].name;
  return Status::Ok();
}

}  // namespace quilt::rt
