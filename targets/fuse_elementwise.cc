#include "targets/fuse_elementwise.h"

#include <algorithm>
#include <string>
#include <utility>

#include "ir/dtype.h"
#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/fused.h"
#include "targets/opencl/emit_util.h"
#include "targets/opencl/ops.h"

namespace quilt::compiler {
namespace {

// The most members one kernel computes (its source stays small to build).
constexpr size_t kMaxMembers = 32;
// The most members a producer of a smaller shape (broadcast by its reader) may have: the fused
// kernel computes them again for every element of the reader's result.
constexpr size_t kMaxBroadcastMembers = 3;

bool SameShape(const GraphSpec& g, int a, int b);
bool BroadcastsTo(const GraphSpec& g, int a, int b);

// Every dim of value v is 1 (a single element, broadcast to any shape).
bool AllOnes(const GraphSpec& g, int v) {
  const ValueSpec& x = g.values[static_cast<size_t>(v)];
  if (x.rank < 0) return false;
  for (int d : x.dims) {
    if (!opencl::IsOne(g, d)) return false;
  }
  return true;
}

bool OnCpu(const std::vector<DeviceSpec>& devices, const StepSpec& s) {
  return devices[static_cast<size_t>(s.device)].kind == "cpu";
}

bool Fusable(const std::vector<DeviceSpec>& devices, const GraphSpec& g, const StepSpec& s) {
  if (s.kind != pkg::StepKind::Kernel || s.outputs.size() != 1 || s.outputs[0] < 0) return false;
  if (s.device < 0 || static_cast<size_t>(s.device) >= devices.size()) return false;
  const std::string& kind = devices[static_cast<size_t>(s.device)].kind;
  if (kind == "cpu") {
    // float32 ops whose operands are of the result's shape, a single element, or (a binary op's)
    // broadcast to it (a row's mean or scale): what the CPU's kernel runs in blocks that stay in
    // L1, with no pass over memory between the members (a broadcast operand gathered for each
    // block). (The ops its block kernel computes: cpu::IsBlockOp, elementwise_fast.cc.)
    constexpr int32_t kFloat32 = static_cast<int32_t>(ir::DataType::kFloat32);
    const int y = s.outputs[0];
    if (!cpu::IsBlockOp(s.kernel) || g.values[static_cast<size_t>(y)].dtype != kFloat32) {
      return false;
    }
    for (int v : s.inputs) {
      if (v < 0 || g.values[static_cast<size_t>(v)].dtype != kFloat32) return false;
      const bool broadcast = s.inputs.size() == 2 && BroadcastsTo(g, v, y);
      if (!SameShape(g, v, y) && !AllOnes(g, v) && !broadcast) return false;
    }
  } else if (kind != "opencl" ||
             targets::opencl::FamilyOf(s.kernel) != targets::opencl::Family::kElementwise) {
    return false;
  }
  if (!s.subgraphs.empty() || !s.dims.empty()) return false;
  for (int v : s.inputs) {
    if (v < 0) return false;
  }
  return g.values[static_cast<size_t>(s.outputs[0])].rank >= 0;
}

// Whether value `a` broadcasts to value `b`'s shape with what the compiler knows: aligned from
// the last axis, each dim of `a` is 1 or `b`'s.
bool BroadcastsTo(const GraphSpec& g, int a, int b) {
  const ValueSpec& x = g.values[static_cast<size_t>(a)];
  const ValueSpec& y = g.values[static_cast<size_t>(b)];
  if (x.rank < 0 || y.rank < 0 || x.dims.size() > y.dims.size()) return false;
  size_t lead = y.dims.size() - x.dims.size();
  for (size_t j = 0; j < x.dims.size(); ++j) {
    if (!opencl::IsOne(g, x.dims[j]) && !opencl::SameDim(g, x.dims[j], y.dims[lead + j])) {
      return false;
    }
  }
  return true;
}

bool SameShape(const GraphSpec& g, int a, int b) {
  const ValueSpec& x = g.values[static_cast<size_t>(a)];
  const ValueSpec& y = g.values[static_cast<size_t>(b)];
  if (x.rank < 0 || x.rank != y.rank || x.dims.size() != y.dims.size()) return false;
  for (size_t j = 0; j < x.dims.size(); ++j) {
    if (!opencl::SameDim(g, x.dims[j], y.dims[j])) return false;
  }
  return true;
}

// The fused step of `members` (step indices in order; the last one's result is the output).
StepSpec FusedStep(const GraphSpec& g, const std::vector<int>& members) {
  const StepSpec& last = g.steps[static_cast<size_t>(members.back())];
  StepSpec fused;
  fused.kernel = std::string(cpu::kFusedElementwise);
  fused.device = last.device;
  fused.region = last.region;
  fused.outputs = last.outputs;
  std::vector<std::string> ops;
  std::vector<int64_t> arity, args, dtypes;
  std::vector<int> made;  // the value each member makes
  for (size_t m = 0; m < members.size(); ++m) {
    const StepSpec& s = g.steps[static_cast<size_t>(members[m])];
    ops.push_back(s.kernel);
    arity.push_back(static_cast<int64_t>(s.inputs.size()));
    dtypes.push_back(g.values[static_cast<size_t>(s.outputs[0])].dtype);
    for (int v : s.inputs) {
      auto inner = std::find(made.begin(), made.end(), v);
      if (inner != made.end()) {
        args.push_back(-1 - (inner - made.begin()));
        continue;
      }
      auto outer = std::find(fused.inputs.begin(), fused.inputs.end(), v);
      if (outer == fused.inputs.end()) {
        fused.inputs.push_back(v);
        fused.input_arity.push_back(1);
        outer = fused.inputs.end() - 1;
      }
      args.push_back(outer - fused.inputs.begin());
    }
    made.push_back(s.outputs[0]);
    for (const auto& [name, value] : s.attrs.items) {
      fused.attrs.Set(std::to_string(m) + ":" + name, value);
    }
    if (!s.source.empty()) fused.source += (fused.source.empty() ? "" : " + ") + s.source;
  }
  fused.attrs.Set("ops", ops);
  fused.attrs.Set("arity", arity);
  fused.attrs.Set("args", args);
  fused.attrs.Set("dtypes", dtypes);
  return fused;
}

}  // namespace

int FuseElementwise(const std::vector<DeviceSpec>& devices, GraphSpec& g) {
  size_t n = g.steps.size();
  // The step making each value, and how many times steps read it (a graph output: never fused).
  std::vector<int> maker(g.values.size(), -1), reads(g.values.size(), 0);
  for (size_t s = 0; s < n; ++s) {
    for (int v : g.steps[s].outputs) {
      if (v >= 0) maker[static_cast<size_t>(v)] = static_cast<int>(s);
    }
    std::vector<int> seen;
    for (int v : g.steps[s].inputs) {
      if (v < 0 || std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
      seen.push_back(v);
      ++reads[static_cast<size_t>(v)];
    }
  }
  for (int v : g.outputs) reads[static_cast<size_t>(v)] += 2;
  // members[s]: the steps fused into step s, in order (s itself last); empty once s joined
  // another.
  std::vector<std::vector<int>> members(n);
  std::vector<bool> joined(n, false);
  for (size_t s = 0; s < n; ++s) {
    const StepSpec& step = g.steps[s];
    if (!Fusable(devices, g, step)) continue;
    members[s] = {static_cast<int>(s)};
    for (int v : step.inputs) {
      int p = maker[static_cast<size_t>(v)];
      if (p < 0 || joined[static_cast<size_t>(p)] || reads[static_cast<size_t>(v)] != 1) continue;
      const StepSpec& producer = g.steps[static_cast<size_t>(p)];
      std::vector<int>& group = members[static_cast<size_t>(p)];
      if (group.empty() || producer.device != step.device || producer.region != step.region ||
          members[s].size() + group.size() > kMaxMembers) {
        continue;
      }
      bool same = SameShape(g, v, step.outputs[0]);
      if (!same && (OnCpu(devices, step) || group.size() > kMaxBroadcastMembers ||
                    !BroadcastsTo(g, v, step.outputs[0]))) {
        continue;
      }
      std::vector<int> merged;
      std::merge(group.begin(), group.end(), members[s].begin(), members[s].end(),
                 std::back_inserter(merged));
      members[s] = std::move(merged);
      group.clear();
      joined[static_cast<size_t>(p)] = true;
    }
  }
  std::vector<StepSpec> kept;
  int removed = 0;
  for (size_t s = 0; s < n; ++s) {
    if (joined[s]) {
      ++removed;
      continue;
    }
    if (members[s].size() > 1) {
      kept.push_back(FusedStep(g, members[s]));
    } else {
      kept.push_back(std::move(g.steps[s]));
    }
  }
  g.steps = std::move(kept);
  return removed;
}

}  // namespace quilt::compiler
