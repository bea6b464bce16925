// The executor's parts (session.cc, executor.cc, control_flow.cc): what a session's creation
// makes ready for each graph (GraphPlan, Session::Plans), what a run keeps for the next one of its
// session (RunState, FlowState), and one run of one graph (GraphRun).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/src/device/device.h"
#include "runtime/src/dims.h"
#include "runtime/src/session.h"

namespace quilt::rt {

// The largest single allocation a run makes: a bigger request is a shape gone wrong.
constexpr uint64_t kMaxAllocation = uint64_t{1} << 40;

// What the executor does itself for a step (kNone: the step's device runs it).
enum class Builtin { kNone, kShapeExpr, kPrimValue, kIf, kWhileLoop, kScan, kCopy };

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

// What the first iteration of one loop computed for the others: the loop-invariant values, the
// first `count` of `held` (whose buffers a later run of the loop writes over where the sizes are
// the same).
struct LoopHeld {
  bool ready = false;
  size_t count = 0;
  std::vector<HeldValue> held;
};

// What a control step (if, while_loop, scan) keeps for its next run: its lists, and the host
// tensors its iterations write over (the carried state, an iteration's outputs, the scan
// outputs' elements), so that a run in steady state allocates none of them. Kept with its
// graph's run state; the memory held between runs is the step's host copies of its last run.
struct FlowState {
  // The step's inputs on the host (HostArg): views, and the first `held_count` of `held` where
  // a device the host cannot address holds them.
  std::vector<Tensor> views_in;
  std::vector<OwnedTensor> held;
  size_t held_count = 0;
  std::vector<const Tensor*> args[5];
  std::vector<OwnedTensor> carried;  // a loop's carried values, a scan's states
  std::vector<OwnedTensor> outs;     // an iteration's (a branch's) outputs
  std::vector<OwnedTensor> slices;   // a scan's inputs at one iteration
  std::vector<Tensor> views;
  std::vector<const Tensor*> in;
  std::vector<std::vector<OwnedTensor>> scans;  // per scan output, its elements
  OwnedTensor stacked;                          // a scan output, where its device is not the host's
  LoopHeld invariants;
};

// What a run leaves for the next one of its session: the vectors it indexes by value, whose
// tensors' shapes keep their capacity, so that a run in steady state allocates none of them, and
// (a run of the main graph) its queues, finished, one per device: the CPU's with its thread pool
// and its kernels' context, whose vectors are kept as well; its control steps' host tensors
// (FlowState). Never a device buffer: the memory a run held on its devices goes back to them when
// it ends. A run that fails leaves nothing (its queues may hold work).
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
  std::vector<const Tensor*> given;               // the main graph's inputs by position
  std::vector<std::unique_ptr<FlowState>> flows;  // per step: a control step's (null for others)
};

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

std::string StepName(const pkg::Graph& g, int s);

// The state of one run: every value's tensor and the buffer it owns, the arenas, the symbols.
// Values live on devices and are named by buffer ranges; the run reaches their bytes only
// through the queues (Read, Write, Copy), and takes a host address only where the device says
// its memory is host addressable.
class GraphRun final : public OutputAllocator {
 public:
  // `queues`: the run's queue on each device of the session, shared with the runs of its
  // subgraphs.
  // `memory`: the bytes the run holds so far, shared with its subgraphs' runs (null: not
  // counted, as at creation).
  GraphRun(const Session::Plans& plans, const std::vector<std::unique_ptr<Queue>>& queues,
           int graph, int depth = 0, RunProfile* profile = nullptr,
           std::chrono::steady_clock::time_point start = {}, const RunControl* control = nullptr,
           uint64_t* memory = nullptr, RunState* state = nullptr);

  ~GraphRun();

  // Binds the inputs (host tensors, by position; null: the input's default), runs every step,
  // frees each intermediate after its last reader.
  // `loop`: for an iteration of a while_loop's body, what the loop's first iteration holds for
  // the others (null otherwise): the first runs every step and keeps the loop-invariant values,
  // the later ones bind them and skip the steps that made them.
  Status Execute(const std::vector<const Tensor*>& given, LoopHeld* loop = nullptr);

  // Value v copied into a buffer of its own (`h`), which outlives this run: h's buffer where it
  // has one of the same size on v's device (a loop's invariant value, at the loop's next run).
  Status Hold(int v, HeldValue* h);

  // Runs the hoisted steps once (at session creation), and copies each value they make that a
  // step left in the run reads into a buffer of its own: `held`, for the session.
  Status Hoist(std::vector<HeldValue>* held);

  // A cancelled run stops here (before a step, or a loop's iteration).
  Status CheckCancelled() const {
    if (control_ && control_->cancelled()) {
      return Status::Error("the run was cancelled", StatusCode::kCancelled);
    }
    return Status::Ok();
  }

  Status AllocateArenas();

  // Waits for every queue, then records step s as started at `begin`.
  Status Profile(int s, std::chrono::steady_clock::time_point begin);

  // The outputs, read back to the host.
  // `passed`: for a loop's body, the outputs it passes through (GraphPlan::loop_passthrough),
  // left empty: the loop keeps what it gave.
  Status TakeOutputs(std::vector<OwnedTensor>* outputs, bool passed = false);

  // OutputAllocator: memory for output i of the current step, of this dtype and shape, on its
  // value's device (in the arena where the plan put it and the size is the planned one).
  Status Allocate(int i, DType dtype, const Shape& shape, DeviceTensor** out) override {
    return Place(i, dtype, shape, out);
  }

  // Allocate with the shape copied into the value's own (whose capacity a run in steady state
  // has already: no allocation).
  Status Place(int i, DType dtype, const Shape& shape, DeviceTensor** out);

  Status Disagree(int i, DType dtype, const Shape& shape) override;

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

  void BindConstants();

  Status BindConstantsAndInputs(const std::vector<const Tensor*>& given);

  void SetConstant(int v, int buffer);

  Status RunStep(int s, const PreparedStep* prepared, Builtin builtin);

  // A library kernel on the step's device. Its outputs are placed before it runs when the
  // compiler's dims give their shapes now; otherwise the kernel places them as it runs.
  Status RunKernel(int s, const PreparedStep& prepared);

  // The shape of value v as the compiler's dims give it now, into `shape`, if they do (and its
  // dtype is known).
  bool KnownShape(int v, Shape* shape) const;

  // copy(x...): each input to the output of the same position, from its device to the step's.
  // Within one device the queue copies; otherwise the bytes go through the host, waiting on the
  // source's queue (and the destination's, before its memory is written from outside it).
  Status RunCopy();

  void Free(int v);

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
  void Release(int v);

  // The bytes of value v, read back to the host once the work that makes them is done.
  Status ReadValue(int v, OwnedTensor* out);
  // Gives value v's buffer to `out` instead of copying it, where the buffer may go (see
  // Buffer::outlives_device) and nothing else holds it; false: it may not, nothing changed.
  bool HandOver(int v, OwnedTensor* out);

  // The state step s keeps for its next run (FlowState), made at its first.
  FlowState& Flow(int s);

  // Input i of the step on the host: in place where its device is host addressable (once the
  // work that makes it is done), else read into the next of `f.held`. Null for an absent input.
  Status HostInput(int i, FlowState& f, Tensor* out, bool* present);

  // The inputs of argument `arg` of the step on the host (see HostInput) into f.args[arg], their
  // views in f.views_in (room for every input of the step, made by StartHostArgs: none moves).
  Status HostArg(int arg, FlowState& f);

  // The step's state, ready for HostArg: room for the views of every input of the step (kept
  // from the run before: a read of the inputs, an If's condition and captured values at every
  // run, allocates nothing).
  FlowState& StartHostArgs();

  int ArgBegin(int arg) const { return StepArgBegin(*step_, arg); }
  int ArgSize(int arg) const { return StepArgSize(*step_, arg); }

  // Subgraph `graph` run on `inputs`, in a run of its own (its own values and symbols).
  Status RunGraph(int graph, const std::vector<const Tensor*>& inputs,
                  std::vector<OwnedTensor>* outputs, LoopHeld* loop = nullptr);

  // Output i of the step from host memory.
  Status SetOutput(int i, const Tensor& t);

  static Status ScalarBool(const Tensor* t, const char* what, bool* out);

  // if(cond, captured...): runs the then (subgraph 0) or else (subgraph 1) branch.
  Status RunIf();

  // `o` made a copy of `t`, its memory reused.
  static void CopyInto(const Tensor& t, OwnedTensor* o);

  // `to` made copies of `from`, the tensors it has reused.
  static void CopyAll(const std::vector<const Tensor*>& from, std::vector<OwnedTensor>* to);

  static Tensor View(const OwnedTensor& o) {
    return Tensor{o.dtype, o.shape, const_cast<uint8_t*>(o.data.data())};
  }

  // Element n of scan output k: `item`, swapped into f.scans[k] (where item gets an element of
  // the run before, whose memory the next iteration's writes over).
  static void KeepScanItem(FlowState& f, size_t k, int64_t n, OwnedTensor* item);

  // Stacks the first `n` of the equally shaped `items` along a new axis `axis` (of the result)
  // into output i, written where the output lies when the host can address it; with `reverse`,
  // item t goes to position n-1-t.
  Status Stack(int i, const std::vector<OwnedTensor>& items, int64_t n, int64_t axis, bool reverse,
               OwnedTensor* stacked);

  // while_loop(body, max_trip, cond, carried..., captured...), ONNX Loop semantics: the body
  // (iteration, cond, carried..., captured...) -> (cond, carried..., scan elements...). What its
  // iterations make is written over the tensors of the iterations before and of the run before
  // (FlowState): a loop in steady state allocates nothing at an iteration.
  Status RunWhileLoop();

  // scan(body, states..., scan_inputs..., captured...), ONNX Scan (opset 9+) semantics; its
  // tensors kept as a loop's are (RunWhileLoop).
  Status RunScan();
  // Element `index` of `x` along `axis` (that axis removed) into `o`, its memory reused.
  static void Slice(const Tensor& x, int64_t axis, int64_t index, OwnedTensor* o);

  Status EvalShapeExpr();

  Status EvalPrimValue();

  // What the step produced agrees with what the compiler inferred; binds new symbols.
  Status CheckOutputs();

  Status CheckOutput(int i, const DeviceTensor& t);

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
  std::vector<BufferPtr> owned_;   // per value: the buffer it owns (none: in an arena or absent)
  std::vector<BufferPtr> arenas_;  // per device of the package
  std::vector<std::unique_ptr<FlowState>> flows_;  // per step: a control step's (RunState::flows)
  uint64_t arena_bytes_counted_ = 0;               // what this run counted for them
  const pkg::Step* step_ = nullptr;
  int step_index_ = -1;
  AttrView attrs_{nullptr};
  StepArgs args_;  // of the current kernel step, reused
  Shape known_;    // an output's shape from the compiler's dims (RunKernel), reused
};

}  // namespace quilt::rt
