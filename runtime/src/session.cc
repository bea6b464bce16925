#include "runtime/src/session.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>

#include "runtime/src/device/device.h"
#include "runtime/src/dims.h"
#include "targets/cpu/kernels/registry.h"

namespace quilt::rt {
namespace {

// The largest single allocation a run makes: a bigger request is a shape gone wrong.
constexpr uint64_t kMaxAllocation = uint64_t{1} << 40;

enum class Builtin { kNone, kShapeExpr, kPrimValue, kIf, kWhileLoop, kScan, kCopy };

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

namespace {
// A value a hoisted step made, in a buffer the session owns.
struct HeldValue {
  int value = -1;
  DeviceTensor tensor;  // its data: the whole of `buffer`
  BufferPtr buffer;
};

struct GraphPlan {
  const pkg::Graph* graph = nullptr;
  std::vector<std::unique_ptr<PreparedStep>> prepared;  // per step (null for builtins)
  std::vector<Builtin> builtins;
  std::vector<std::vector<int>> frees;  // per step: values whose last use it is
  // Per step: the input value whose run-time buffer its output 0 may take (the compiler's
  // "in_place_input"; an intermediate this step reads last, as nothing else), or -1.
  std::vector<int> in_place;
  std::vector<bool> is_output;
  // Steps that read constants alone (or what such steps make), run once when the session is
  // created (main graph only); `held`: what they make that other steps read, bound in every run
  // as constants are.
  std::vector<bool> hoisted;
  std::vector<HeldValue> held;
  // Per step: which of its inputs are the same tensor in every run (StepArgs::constant_inputs).
  std::vector<uint64_t> constant_inputs;
  // A while_loop body: the steps that read only what every iteration of one loop sees alike
  // (constants, captured values, carried values the body passes through unchanged, or what such
  // steps make), computed in the first iteration and held for the others (MarkLoopInvariants);
  // `loop_keep`: the values they make that the other steps read. Empty for other graphs.
  std::vector<bool> loop_invariant;
  std::vector<bool> loop_keep;
  // A while_loop body: per output, whether it is a carried value the body returns as it was
  // given (through copies), which the loop keeps rather than reading back; and per step, whether
  // it only makes such outputs (a copy nothing else reads), which the loop's iterations skip.
  std::vector<bool> loop_passthrough;
  std::vector<bool> loop_skip;
  // A while_loop body: per input, whether it is the same tensor in every iteration of every run
  // (MarkSameLoopInputs). Empty for other graphs.
  std::vector<bool> same_inputs;
};

// What the first iteration of one loop computed for the others: the loop-invariant values.
struct LoopHeld {
  bool ready = false;
  std::vector<HeldValue> held;
};
}  // namespace

namespace {
// What a run leaves for the next one of its session: the vectors it indexes by value, whose
// tensors' shapes keep their capacity, so that a run in steady state allocates none of them, and
// (a run of the main graph) its queues, finished, one per device: the CPU's with its thread pool
// and its kernels' context, whose vectors are kept as well. Never a buffer: the memory a run held
// is released when it ends. A run that fails leaves nothing (its queues may hold work).
struct RunState {
  std::vector<DeviceTensor> values;
  std::vector<BufferPtr> owned;
  std::vector<uint64_t> counted;
  StepArgs args;
  Shape known;
  std::vector<std::unique_ptr<Queue>> queues;
  DimEnv::Storage dims;  // the symbols' environment's memory
  // The arenas of the run before, per device: taken again where the size is the same.
  std::vector<BufferPtr> arenas;
  std::vector<const Tensor*> given;  // the main graph's inputs by position
};
}  // namespace

struct Session::Plans {
  // The devices that run the package, one per physical device (a package's cpu vdevices
  // share one), and for each device of the package the index of its device here (-1: unused).
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<int> device_of;
  // Per device here, per package buffer: the constant made ready on that device (null where
  // no value of the device reads it).
  std::vector<std::vector<BufferPtr>> constants;
  // Per code section of the package: as its device loaded it (null where its device is unused).
  std::vector<std::unique_ptr<Executable>> executables;
  std::vector<GraphPlan> graphs;  // per graph of the package
  const pkg::Package* package = nullptr;
  SessionLimits limits;
  // Per graph, the states of its finished runs, for the next ones (a run of the main graph, an
  // iteration of a loop's body, a branch taken): one per run at a time, kept up to
  // kIdleRunStates a graph.
  static constexpr size_t kIdleRunStates = 8;
  mutable std::mutex idle_mu;
  mutable std::vector<std::vector<std::unique_ptr<RunState>>> idle;

  std::unique_ptr<RunState> TakeRunState(size_t graph) const {
    std::lock_guard<std::mutex> lock(idle_mu);
    if (graph >= idle.size() || idle[graph].empty()) return std::make_unique<RunState>();
    std::unique_ptr<RunState> state = std::move(idle[graph].back());
    idle[graph].pop_back();
    return state;
  }
  void KeepRunState(size_t graph, std::unique_ptr<RunState> state) const {
    std::lock_guard<std::mutex> lock(idle_mu);
    if (idle.size() <= graph) idle.resize(graph + 1);
    if (idle[graph].size() < kIdleRunStates) idle[graph].push_back(std::move(state));
  }
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
// The state of one run: every value's tensor and the buffer it owns, the arenas, the symbols.
// Values live on devices and are named by buffer ranges; the run reaches their bytes only
// through the queues (Read, Write, Copy), and takes a host address only where the device says
// its memory is host addressable.
class Run final : public OutputAllocator {
 public:
  // `queues`: the run's queue on each device of the session, shared with the runs of its
  // subgraphs.
  // `memory`: the bytes the run holds so far, shared with its subgraphs' runs (null: not
  // counted, as at creation).
  Run(const Session::Plans& plans, const std::vector<std::unique_ptr<Queue>>& queues, int graph,
      int depth = 0, RunProfile* profile = nullptr,
      std::chrono::steady_clock::time_point start = {}, const RunControl* control = nullptr,
      uint64_t* memory = nullptr, RunState* state = nullptr)
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

  ~Run() {
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
    }
  }

  // Binds the inputs (host tensors, by position; null: the input's default), runs every step,
  // frees each intermediate after its last reader.
  // `loop`: for an iteration of a while_loop's body, what the loop's first iteration holds for
  // the others (null otherwise): the first runs every step and keeps the loop-invariant values,
  // the later ones bind them and skip the steps that made them.
  Status Execute(const std::vector<const Tensor*>& given, LoopHeld* loop = nullptr) {
    QUILT_RETURN_IF_ERROR(AllocateArenas());
    QUILT_RETURN_IF_ERROR(BindConstantsAndInputs(given));
    for (const HeldValue& h : plan_.held) values_[static_cast<size_t>(h.value)] = h.tensor;
    bool invariants = loop && !plan_.loop_invariant.empty();
    bool skip = invariants && loop->ready;
    if (skip) {
      for (const HeldValue& h : loop->held) {
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
          HeldValue h;
          st = Hold(v, &h);
          if (!st.ok()) break;
          loop->held.push_back(std::move(h));
        }
      }
      if (!st.ok()) return st.WithContext(StepName(g_, s));
      for (int v : plan_.frees[s]) Free(v);
    }
    if (invariants) loop->ready = true;
    return Status::Ok();
  }

  // Value v copied into a buffer of its own (`h`), which outlives this run.
  Status Hold(int v, HeldValue* h) {
    const DeviceTensor& t = values_[static_cast<size_t>(v)];
    int device = ValueDevice(v);
    h->value = v;
    QUILT_RETURN_IF_ERROR(DeviceOf(device).Allocate(t.data.size, &h->buffer));
    h->tensor = {t.dtype, t.shape, {h->buffer.get(), 0, t.data.size}};
    if (t.data.size) QUILT_RETURN_IF_ERROR(QueueOf(device).Copy(t.data, h->tensor.data));
    return Status::Ok();
  }

  // Runs the hoisted steps once (at session creation), and copies each value they make that a
  // step left in the run reads into a buffer of its own: `held`, for the session.
  Status Hoist(std::vector<HeldValue>* held) {
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

  // A cancelled run stops here (before a step, or a loop's iteration).
  Status CheckCancelled() const {
    if (control_ && control_->cancelled()) {
      return Status::Error("the run was cancelled", StatusCode::kCancelled);
    }
    return Status::Ok();
  }

  Status AllocateArenas() {
    const auto* arenas = g_.arena_bytes();
    arenas_.resize(arenas ? arenas->size() : 0);
    for (uint32_t d = 0; d < arenas_.size(); ++d) {
      if (arenas->Get(d) == 0) {
        arenas_[d].reset();
        continue;
      }
      const auto bytes = static_cast<uint64_t>(arenas->Get(d));
      QUILT_RETURN_IF_ERROR(
          Count(bytes, [&] { return "the arena of device " + std::to_string(d); }));
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

  // Waits for every queue, then records step s as started at `begin`.
  Status Profile(int s, std::chrono::steady_clock::time_point begin) {
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

  // The outputs, read back to the host.
  // `passed`: for a loop's body, the outputs it passes through (GraphPlan::loop_passthrough),
  // left empty: the loop keeps what it gave.
  Status TakeOutputs(std::vector<OwnedTensor>* outputs, bool passed = false) {
    // Written over the caller's tensors (their names' and bytes' memory reused, as a caller
    // running again with the same vector has them), not made anew.
    outputs->resize(g_.outputs()->size());
    for (uint32_t i = 0; i < g_.outputs()->size(); ++i) {
      int v = g_.outputs()->Get(i);
      OwnedTensor& o = (*outputs)[i];
      if (!passed || plan_.loop_passthrough.empty() || !plan_.loop_passthrough[i]) {
        QUILT_RETURN_IF_ERROR(ReadValue(v, &o));
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

  // OutputAllocator: memory for output i of the current step, of this dtype and shape, on its
  // value's device (in the arena where the plan put it and the size is the planned one).
  Status Allocate(int i, DType dtype, const Shape& shape, DeviceTensor** out) override {
    return Place(i, dtype, shape, out);
  }

  // Allocate with the shape copied into the value's own (whose capacity a run in steady state
  // has already: no allocation).
  Status Place(int i, DType dtype, const Shape& shape, DeviceTensor** out) {
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

  Status Disagree(int i, DType dtype, const Shape& shape) override {
    DeviceTensor made{dtype, shape, {}};
    Status st = CheckOutput(i, made);
    return st.ok() ? Status::Error("output " + std::to_string(i) + " is " +
                                   std::string(DTypeName(dtype)) + " " + ShapeString(shape) +
                                   ", placed as " +
                                   ShapeString(values_[step_->outputs()->Get(i)].shape))
                   : st;
  }

 private:
  static constexpr int kMaxDepth = 64;

  int num_outputs() const { return static_cast<int>(step_->outputs()->size()); }
  int DeviceIndex(int package_device) const {
    return plans_.device_of[static_cast<size_t>(package_device)];
  }
  Device& DeviceOf(int package_device) const {
    return *plans_.devices[static_cast<size_t>(DeviceIndex(package_device))];
  }
  Queue& QueueOf(int package_device) const {
    return *queues_[static_cast<size_t>(DeviceIndex(package_device))];
  }
  int ValueDevice(int v) const { return g_.values()->Get(v)->device(); }

  void BindConstants() {
    for (uint32_t v = 0; v < g_.values()->size(); ++v) {
      const pkg::Value* value = g_.values()->Get(v);
      if (value->kind() == pkg::ValueKind::Constant) SetConstant(v, value->buffer());
    }
  }

  Status BindConstantsAndInputs(const std::vector<const Tensor*>& given) {
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
        return Status::Error(where() +
                             (t.data ? " is not aligned to " : " has no data; it needs ") +
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

  void SetConstant(int v, int buffer) {
    const pkg::Value* value = g_.values()->Get(v);
    DeviceTensor& t = values_[v];
    t.dtype = static_cast<DType>(value->dtype());
    t.shape.clear();
    for (int32_t d : *value->dims()) t.shape.push_back(g_.dims()->Get(d)->value());
    Buffer* b = plans_
                    .constants[static_cast<size_t>(DeviceIndex(value->device()))]
                              [static_cast<size_t>(buffer)]
                    .get();
    t.data = {b, 0, b->size()};
  }

  Status RunStep(int s, const PreparedStep* prepared, Builtin builtin) {
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

  // A library kernel on the step's device. Its outputs are placed before it runs when the
  // compiler's dims give their shapes now; otherwise the kernel places them as it runs.
  Status RunKernel(int s, const PreparedStep& prepared) {
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

  // The shape of value v as the compiler's dims give it now, into `shape`, if they do (and its
  // dtype is known).
  bool KnownShape(int v, Shape* shape) const {
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

  // copy(x...): each input to the output of the same position, from its device to the step's.
  // Within one device the queue copies; otherwise the bytes go through the host, waiting on the
  // source's queue (and the destination's, before its memory is written from outside it).
  Status RunCopy() {
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

  void Free(int v) {
    Release(v);
    values_[v].data = {};
  }

  // Adds `bytes` to what the run holds, within SessionLimits::max_run_bytes; `what()` names them
  // (called only to say they do not fit: no string is built on a run's way).
  template <typename What>
  Status Count(uint64_t bytes, const What& what) {
    if (!memory_) return Status::Ok();
    uint64_t limit = plans_.limits.max_run_bytes;
    if (bytes > limit || *memory_ > limit - bytes) {
      return Status::Error(std::string(what()) + " needs " + std::to_string(bytes) +
                               " bytes, and the run holds " + std::to_string(*memory_) +
                               ": past its limit of " + std::to_string(limit) +
                               " (SessionLimits::max_run_bytes; quilt-run --max-run-bytes)",
                           StatusCode::kLimit);
    }
    *memory_ += bytes;
    return Status::Ok();
  }
  void Uncount(uint64_t bytes) {
    if (memory_) *memory_ -= bytes;
  }
  // Drops the run's own buffer of value v (an input's import or an output's memory).
  void Release(int v) {
    owned_[v].reset();
    Uncount(counted_[static_cast<size_t>(v)]);
    counted_[static_cast<size_t>(v)] = 0;
  }

  // The bytes of value v, read back to the host once the work that makes them is done.
  Status ReadValue(int v, OwnedTensor* out) {
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

  // Input i of the step on the host: in place where its device is host addressable (once the
  // work that makes it is done), else read into `held`. Null for an absent input.
  Status HostInput(int i, std::list<OwnedTensor>* held, Tensor* out, bool* present) {
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
    held->emplace_back();
    QUILT_RETURN_IF_ERROR(ReadValue(v, &held->back()));
    *out = View(held->back());
    return Status::Ok();
  }

  // The inputs of argument `arg` of the step on the host (see HostInput), their views in `views`
  // (HostViews: room for every input of the step, so that none moves).
  Status HostArg(int arg, std::list<OwnedTensor>* held, std::vector<Tensor>* views,
                 std::vector<const Tensor*>* out) {
    out->clear();
    for (int k = 0; k < ArgSize(arg); ++k) {
      if (views->size() == views->capacity()) {
        return Status::Error("the step's argument sizes (input_arity) count more inputs than its " +
                             std::to_string(step_->inputs()->size()));
      }
      views->emplace_back();
      bool present;
      QUILT_RETURN_IF_ERROR(HostInput(ArgBegin(arg) + k, held, &views->back(), &present));
      out->push_back(present ? &views->back() : nullptr);
    }
    return Status::Ok();
  }

  // Room for the views of every input of the step (HostArg's), made once: a read of the inputs
  // (an If's condition and captured values, every run) allocates nothing more; the held copies (a
  // device the host cannot address) are made only where there are some.
  std::vector<Tensor> HostViews() const {
    std::vector<Tensor> views;
    views.reserve(step_->inputs()->size());
    return views;
  }

  int ArgBegin(int arg) const { return StepArgBegin(*step_, arg); }
  int ArgSize(int arg) const { return StepArgSize(*step_, arg); }

  // Subgraph `graph` run on `inputs`, in a run of its own (its own values and symbols).
  Status RunGraph(int graph, const std::vector<const Tensor*>& inputs,
                  std::vector<OwnedTensor>* outputs, LoopHeld* loop = nullptr) {
    if (depth_ >= kMaxDepth) return Status::Error("subgraphs nested too deep");
    if (inputs.size() != plans_.graphs[graph].graph->inputs()->size()) {
      return Status::Error("subgraph " + std::to_string(graph) + " takes " +
                           std::to_string(plans_.graphs[graph].graph->inputs()->size()) +
                           " inputs, the step gives " + std::to_string(inputs.size()));
    }
    std::unique_ptr<RunState> state = plans_.TakeRunState(static_cast<size_t>(graph));
    Status st = Status::Ok();
    {
      class Run sub(plans_, queues_, graph, depth_ + 1, profile_, start_, control_, memory_,
                    state.get());
      st = sub.Execute(inputs, loop);
      if (st.ok()) st = sub.TakeOutputs(outputs, loop != nullptr);
    }
    plans_.KeepRunState(static_cast<size_t>(graph), std::move(state));
    return st;
  }

  // Output i of the step from host memory.
  Status SetOutput(int i, const Tensor& t) {
    DeviceTensor* y;
    QUILT_RETURN_IF_ERROR(Allocate(i, t.dtype, t.shape, &y));
    if (y->data.size == 0) return Status::Ok();
    return QueueOf(ValueDevice(step_->outputs()->Get(i))).Write(t.data, y->data);
  }

  static Status ScalarBool(const Tensor* t, const char* what, bool* out) {
    if (!t || t->dtype != DType::kBool || t->NumElements() != 1) {
      return Status::Error(std::string(what) + " must be one bool");
    }
    *out = *t->Data<uint8_t>() != 0;
    return Status::Ok();
  }

  // if(cond, captured...): runs the then (subgraph 0) or else (subgraph 1) branch.
  Status RunIf() {
    std::list<OwnedTensor> held;
    std::vector<Tensor> views = HostViews();
    std::vector<const Tensor*> cond_arg, captured;
    QUILT_RETURN_IF_ERROR(HostArg(0, &held, &views, &cond_arg));
    bool cond = false;
    QUILT_RETURN_IF_ERROR(
        ScalarBool(cond_arg.empty() ? nullptr : cond_arg[0], "the condition", &cond));
    QUILT_RETURN_IF_ERROR(HostArg(1, &held, &views, &captured));
    std::vector<OwnedTensor> outs;
    QUILT_RETURN_IF_ERROR(RunGraph(step_->subgraphs()->Get(cond ? 0 : 1), captured, &outs));
    if (static_cast<int>(outs.size()) != num_outputs()) {
      return Status::Error("the branch returns " + std::to_string(outs.size()) +
                           " values, expected " + std::to_string(num_outputs()));
    }
    for (int i = 0; i < num_outputs(); ++i) QUILT_RETURN_IF_ERROR(SetOutput(i, View(outs[i])));
    return Status::Ok();
  }

  static OwnedTensor Copy(const Tensor& t) {
    OwnedTensor o;
    o.dtype = t.dtype;
    o.shape = t.shape;
    const auto* b = static_cast<const uint8_t*>(t.data);
    if (t.ByteSize()) o.data.assign(b, b + t.ByteSize());
    return o;
  }

  static Tensor View(const OwnedTensor& o) {
    return Tensor{o.dtype, o.shape, const_cast<uint8_t*>(o.data.data())};
  }

  // Stacks equally shaped `items` along a new axis `axis` (of the result) into output i; with
  // `reverse`, item t goes to position n-1-t.
  Status Stack(int i, const std::vector<OwnedTensor>& items, int64_t axis, bool reverse) {
    int v = step_->outputs()->Get(i);
    const pkg::Value* value = g_.values()->Get(v);
    Shape elem;
    DType dtype = static_cast<DType>(value->dtype());
    if (items.empty()) {
      // No iterations: a zero-length axis; other dims as far as the compiler knows them.
      Shape shape;
      for (int d = 0; d < value->rank(); ++d) {
        std::optional<int64_t> e = env_.Eval(value->dims()->Get(d));
        shape.push_back(d == 0 || !e ? 0 : *e);
      }
      DeviceTensor* y;
      return Allocate(i, dtype, shape, &y);
    }
    elem = items[0].shape;
    dtype = items[0].dtype;
    for (const OwnedTensor& t : items) {
      if (t.shape != elem || t.dtype != dtype) {
        return Status::Error("the scan output " + std::to_string(i) +
                             " changes shape or type between iterations");
      }
    }
    int rank = static_cast<int>(elem.size()) + 1;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return Status::Error("scan output axis out of range");
    if (DTypeBits(dtype) % 8 != 0) return Status::Error("sub-byte element types in a loop");
    size_t eb = DTypeBits(dtype) / 8;
    int64_t n = static_cast<int64_t>(items.size());
    OwnedTensor y;
    y.dtype = dtype;
    y.shape = elem;
    y.shape.insert(y.shape.begin() + axis, n);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= elem[d];
    for (size_t d = axis; d < elem.size(); ++d) inner *= elem[d];
    y.data.resize(static_cast<size_t>(outer * n * inner) * eb);
    uint8_t* dst = y.data.data();
    // Elements of zero elements have no data (null pointers, which memcpy may not be given).
    for (int64_t t = 0; t < n && inner > 0; ++t) {
      int64_t pos = reverse ? n - 1 - t : t;
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(dst + ((o * n + pos) * inner) * eb, items[t].data.data() + o * inner * eb,
                    inner * eb);
      }
    }
    return SetOutput(i, View(y));
  }

  // while_loop(body, max_trip, cond, carried..., captured...), ONNX Loop semantics: the body
  // (iteration, cond, carried..., captured...) -> (cond, carried..., scan elements...).
  Status RunWhileLoop() {
    std::list<OwnedTensor> held;
    std::vector<Tensor> views_in = HostViews();
    std::vector<const Tensor*> max_arg, cond_arg, init, captured;
    QUILT_RETURN_IF_ERROR(HostArg(1, &held, &views_in, &max_arg));
    QUILT_RETURN_IF_ERROR(HostArg(2, &held, &views_in, &cond_arg));
    QUILT_RETURN_IF_ERROR(HostArg(3, &held, &views_in, &init));
    QUILT_RETURN_IF_ERROR(HostArg(4, &held, &views_in, &captured));
    const Tensor* max_trip = max_arg.empty() ? nullptr : max_arg[0];
    const Tensor* cond_in = cond_arg.empty() ? nullptr : cond_arg[0];
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
    size_t num_carried = init.size();
    std::vector<OwnedTensor> carried;
    for (const Tensor* t : init) carried.push_back(Copy(*t));
    size_t num_scans = num_outputs() - num_carried;
    std::vector<std::vector<OwnedTensor>> scans(num_scans);
    int body = step_->subgraphs()->Get(0);
    LoopHeld invariants;  // what the first iteration computes for the others
    // Kept across the iterations: each writes over the last one's (no allocation for them).
    std::vector<Tensor> views;
    std::vector<const Tensor*> in;
    std::vector<OwnedTensor> outs;
    for (int64_t it = 0; it < max && cond; ++it) {
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
      views.clear();
      for (const OwnedTensor& c : carried) views.push_back(View(c));
      in.assign({&iter_t, &cond_t});
      for (const Tensor& v : views) in.push_back(&v);
      in.insert(in.end(), captured.begin(), captured.end());
      Status st = RunGraph(body, in, &outs, &invariants);
      if (!st.ok()) return st.WithContext("iteration " + std::to_string(it));
      if (outs.size() != 1 + num_carried + num_scans) {
        return Status::Error("the loop body returns " + std::to_string(outs.size()) + " values");
      }
      Tensor c = View(outs[0]);
      QUILT_RETURN_IF_ERROR(ScalarBool(&c, "the body's condition", &cond));
      const std::vector<bool>& passed = plans_.graphs[static_cast<size_t>(body)].loop_passthrough;
      for (size_t k = 0; k < num_carried; ++k) {
        // Swapped: the body's next outputs are written over the old state's memory.
        if (passed.empty() || !passed[1 + k]) std::swap(carried[k], outs[1 + k]);
      }
      for (size_t k = 0; k < num_scans; ++k)
        scans[k].push_back(std::move(outs[1 + num_carried + k]));
    }
    for (size_t k = 0; k < num_carried; ++k) {
      QUILT_RETURN_IF_ERROR(SetOutput(static_cast<int>(k), View(carried[k])));
    }
    for (size_t k = 0; k < num_scans; ++k) {
      QUILT_RETURN_IF_ERROR(Stack(static_cast<int>(num_carried + k), scans[k], 0, false));
    }
    return Status::Ok();
  }

  // scan(body, states..., scan_inputs..., captured...), ONNX Scan (opset 9+) semantics.
  Status RunScan() {
    std::list<OwnedTensor> held;
    std::vector<Tensor> views_in = HostViews();
    std::vector<const Tensor*> states_in, xs, captured;
    QUILT_RETURN_IF_ERROR(HostArg(1, &held, &views_in, &states_in));
    QUILT_RETURN_IF_ERROR(HostArg(2, &held, &views_in, &xs));
    QUILT_RETURN_IF_ERROR(HostArg(3, &held, &views_in, &captured));
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
    std::vector<int64_t> axes(xs.size());
    for (size_t j = 0; j < xs.size(); ++j) {
      int64_t a = j < in_axes.size() ? in_axes[j] : 0;
      int rank = xs[j]->rank();
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) return Status::Error("scan input axis out of range");
      if (DTypeBits(xs[j]->dtype) % 8 != 0)
        return Status::Error("sub-byte element types in a scan");
      axes[j] = a;
      int64_t n = xs[j]->shape[a];
      if (len >= 0 && n != len) return Status::Error("scan inputs have different lengths");
      len = n;
    }
    size_t num_states = states_in.size();
    std::vector<OwnedTensor> states;
    for (const Tensor* t : states_in) states.push_back(Copy(*t));
    size_t num_scans = num_outputs() - num_states;
    std::vector<std::vector<OwnedTensor>> scans(num_scans);
    int body = step_->subgraphs()->Get(0);
    for (int64_t t = 0; t < len; ++t) {
      QUILT_RETURN_IF_ERROR(CheckCancelled());
      std::vector<OwnedTensor> slices;
      for (size_t j = 0; j < xs.size(); ++j) {
        bool reverse = j < in_dirs.size() && in_dirs[j] == 1;
        slices.push_back(Slice(*xs[j], axes[j], reverse ? len - 1 - t : t));
      }
      std::vector<Tensor> views;
      for (const OwnedTensor& s : states) views.push_back(View(s));
      for (const OwnedTensor& s : slices) views.push_back(View(s));
      std::vector<const Tensor*> in;
      for (const Tensor& v : views) in.push_back(&v);
      in.insert(in.end(), captured.begin(), captured.end());
      std::vector<OwnedTensor> outs;
      Status st = RunGraph(body, in, &outs);
      if (!st.ok()) return st.WithContext("iteration " + std::to_string(t));
      if (outs.size() != num_states + num_scans) {
        return Status::Error("the scan body returns " + std::to_string(outs.size()) + " values");
      }
      for (size_t k = 0; k < num_states; ++k) states[k] = std::move(outs[k]);
      for (size_t k = 0; k < num_scans; ++k) scans[k].push_back(std::move(outs[num_states + k]));
    }
    for (size_t k = 0; k < num_states; ++k) {
      QUILT_RETURN_IF_ERROR(SetOutput(static_cast<int>(k), View(states[k])));
    }
    for (size_t k = 0; k < num_scans; ++k) {
      int64_t axis = k < out_axes.size() ? out_axes[k] : 0;
      bool reverse = k < out_dirs.size() && out_dirs[k] == 1;
      QUILT_RETURN_IF_ERROR(Stack(static_cast<int>(num_states + k), scans[k], axis, reverse));
    }
    return Status::Ok();
  }
  // Element `index` of `x` along `axis` (that axis removed).
  static OwnedTensor Slice(const Tensor& x, int64_t axis, int64_t index) {
    OwnedTensor o;
    o.dtype = x.dtype;
    o.shape = x.shape;
    o.shape.erase(o.shape.begin() + axis);
    size_t eb = DTypeBits(x.dtype) / 8;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    int64_t n = x.shape[axis];
    o.data.resize(outer * inner * eb);
    const auto* src = static_cast<const uint8_t*>(x.data);
    for (int64_t k = 0; k < outer && inner > 0; ++k) {
      std::memcpy(o.data.data() + k * inner * eb, src + ((k * n + index) * inner) * eb, inner * eb);
    }
    return o;
  }

  Status EvalShapeExpr() {
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

  Status EvalPrimValue() {
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

  // What the step produced agrees with what the compiler inferred; binds new symbols.
  Status CheckOutputs() {
    for (int i = 0; i < num_outputs(); ++i) {
      QUILT_RETURN_IF_ERROR(CheckOutput(i, values_[step_->outputs()->Get(i)]));
    }
    return Status::Ok();
  }

  Status CheckOutput(int i, const DeviceTensor& t) {
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

  // The dims of `value` (its rank checked) against `shape`: its new symbols bound, the others
  // checked, a mismatch an error naming the place (`where()`, called only then) and the dim.
  template <class Where>
  Status MatchDims(const pkg::Value& value, const Shape& shape, const Where& where) {
    for (int d = 0; d < value.rank(); ++d) {
      QUILT_RETURN_IF_ERROR(env_.Match(value.dims()->Get(static_cast<uint32_t>(d)),
                                       shape[static_cast<size_t>(d)],
                                       [&] { return where() + " dim " + std::to_string(d); }));
    }
    return Status::Ok();
  }

  RunState* state_;  // where the vectors come from and go back to (null: the run's own)
  const RunControl* control_;
  uint64_t* memory_;
  std::vector<uint64_t> counted_;  // per value: the bytes of owned_ counted in *memory_
  const Session::Plans& plans_;
  const std::vector<std::unique_ptr<Queue>>& queues_;
  const GraphPlan& plan_;
  const pkg::Graph& g_;
  DimEnv env_;
  int depth_;
  int graph_;
  RunProfile* profile_;  // null: not profiled
  std::chrono::steady_clock::time_point start_;
  std::vector<DeviceTensor> values_;
  std::vector<BufferPtr> owned_;      // per value: the buffer it owns (none: in an arena or absent)
  std::vector<BufferPtr> arenas_;     // per device of the package
  uint64_t arena_bytes_counted_ = 0;  // what this run counted for them
  const pkg::Step* step_ = nullptr;
  int step_index_ = -1;
  AttrView attrs_{nullptr};
  StepArgs args_;  // of the current kernel step, reused
  Shape known_;    // an output's shape from the compiler's dims (RunKernel), reused
};

}  // namespace

namespace {

Status HoistConstantSteps(Session::Plans& plans) {
  if (MarkHoisted(plans.graphs[0]) == 0) return Status::Ok();
  std::vector<std::unique_ptr<Queue>> queues(plans.devices.size());
  for (size_t d = 0; d < queues.size(); ++d) {
    QUILT_RETURN_IF_ERROR(plans.devices[d]->CreateQueue(&queues[d]));
  }
  std::vector<HeldValue> held;
  {
    class Run run(plans, queues, 0);
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
    class Run run(*plans_, queues, 0, 0, profile, start, control, &memory, state.get());
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
