#include "targets/pack_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/linalg.h"

namespace quilt::compiler {
namespace {

constexpr int32_t kFloat32 = static_cast<int32_t>(ir::DataType::kFloat32);

// The dims of `v` where every one is known when compiling.
bool StaticShape(const GraphSpec& g, const ValueSpec& v, std::vector<int64_t>* shape) {
  if (v.rank < 0 || v.dims.size() != static_cast<size_t>(v.rank)) return false;
  shape->clear();
  for (int d : v.dims) {
    const DimSpec& dim = g.dims[static_cast<size_t>(d)];
    if (dim.kind != pkg::DimKind::Int || dim.value < 0) return false;
    shape->push_back(dim.value);
  }
  return true;
}

// Whether `step` is a CPU matmul of float32 operands and output that reads value `v` as B alone
// (and, with a fused bias, the bias after it).
bool TakesPackedB(const std::vector<DeviceSpec>& devices, const GraphSpec& g, const StepSpec& step,
                  int v) {
  const size_t inputs = step.attrs.Find("bias") ? 3 : 2;
  if (step.kind != pkg::StepKind::Kernel || step.kernel != "matmul" ||
      step.inputs.size() != inputs || (inputs == 3 && step.inputs[2] == v) ||
      step.outputs.size() != 1 || step.inputs[1] != v || step.inputs[0] == v ||
      devices[static_cast<size_t>(step.device)].kind != "cpu" || step.attrs.Find("packed_b")) {
    return false;
  }
  return step.inputs[0] >= 0 && g.values[static_cast<size_t>(step.inputs[0])].dtype == kFloat32 &&
         g.values[static_cast<size_t>(step.outputs[0])].dtype == kFloat32;
}

// The steps that read each value of `g` (step, input position), less its outputs.
std::map<int, std::vector<std::pair<size_t, size_t>>> Readers(const GraphSpec& g) {
  std::map<int, std::vector<std::pair<size_t, size_t>>> readers;
  for (size_t s = 0; s < g.steps.size(); ++s) {
    for (size_t i = 0; i < g.steps[s].inputs.size(); ++i) {
      if (g.steps[s].inputs[i] >= 0) readers[g.steps[s].inputs[i]].push_back({s, i});
    }
  }
  for (int v : g.outputs) readers.erase(v);
  return readers;
}

// k and n of a float32 B of static shape `shape` worth packing: more columns than the GEMM's
// dot-product path takes, and a reduction.
bool WorthPacking(const std::vector<int64_t>& shape) {
  return shape.size() >= 2 && shape[shape.size() - 2] > 0 && shape.back() > cpu::kGemmPanel / 3;
}

// The matrices of a B of shape [..., k, n].
int64_t Matrices(const std::vector<int64_t>& shape) {
  int64_t matrices = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) matrices *= shape[i];
  return matrices;
}

// Whether every one of `reads` (step, input position) is a matmul that takes value `v` as its B
// packed (TakesPackedB).
bool AllTakePackedB(const std::vector<DeviceSpec>& devices, const GraphSpec& g,
                    const std::vector<std::pair<size_t, size_t>>& reads, int v) {
  for (const auto& [s, i] : reads) {
    if (!TakesPackedB(devices, g, g.steps[s], v)) return false;
  }
  return true;
}

// How many values and code sections name each buffer of `spec`.
std::vector<int> BufferUses(const PackageSpec& spec) {
  std::vector<int> uses(spec.buffers.size(), 0);
  auto use = [&](int b) {
    if (b >= 0 && static_cast<size_t>(b) < uses.size()) ++uses[static_cast<size_t>(b)];
  };
  for (const GraphSpec& g : spec.graphs) {
    for (const ValueSpec& v : g.values) {
      use(v.buffer);
      use(v.default_buffer);
    }
  }
  for (const TargetCodeSpec& c : spec.code) use(c.buffer);
  return uses;
}

// Whether `value` is a float32 constant of a CPU device with a buffer of its own (no other value
// or code section names it, no default): one that may be rewritten in place.
bool OwnCpuFloatConstant(const PackageSpec& spec, const std::vector<int>& buffer_uses,
                         const ValueSpec& value) {
  return value.kind == pkg::ValueKind::Constant && value.dtype == kFloat32 && value.buffer >= 0 &&
         value.default_buffer < 0 && buffer_uses[static_cast<size_t>(value.buffer)] == 1 &&
         spec.devices[static_cast<size_t>(value.device)].kind == "cpu";
}

// Value `value` made the 1-D float32 panels of a B of shape `shape`, and its readers told so.
void AsPanels(GraphSpec& g, ValueSpec& value, const std::vector<int64_t>& shape,
              const std::vector<std::pair<size_t, size_t>>& reads) {
  int64_t floats = Matrices(shape) * cpu::PackedBFloats(shape[shape.size() - 2], shape.back());
  g.dims.push_back({pkg::DimKind::Int, 0, 0, floats});
  value.dtype = kFloat32;
  value.rank = 1;
  value.dims = {static_cast<int>(g.dims.size()) - 1};
  value.byte_size = floats * static_cast<int64_t>(sizeof(float));
  for (const auto& [s, i] : reads) g.steps[s].attrs.Set("packed_b", shape);
}

}  // namespace

int PackDerivedMatmulWeights(const std::vector<DeviceSpec>& devices, GraphSpec& g) {
  // The values a session makes when it is created: those of library kernels and copies reading
  // only constants and such values (at least one), of static shapes, no graph output.
  std::vector<bool> same(g.values.size(), false), output(g.values.size(), false);
  for (int v : g.outputs) output[static_cast<size_t>(v)] = true;
  for (size_t v = 0; v < g.values.size(); ++v) {
    same[v] = g.values[v].kind == pkg::ValueKind::Constant;
  }
  std::vector<int> maker(g.values.size(), -1);
  std::vector<int64_t> shape;
  for (size_t s = 0; s < g.steps.size(); ++s) {
    const StepSpec& step = g.steps[s];
    for (int v : step.outputs) maker[static_cast<size_t>(v)] = static_cast<int>(s);
    bool hoisted = (step.kind == pkg::StepKind::Kernel || step.kind == pkg::StepKind::Dispatch ||
                    step.kernel == "copy") &&
                   !step.inputs.empty();
    for (int v : step.inputs) hoisted = hoisted && (v < 0 || same[static_cast<size_t>(v)]);
    for (int v : step.outputs) {
      const ValueSpec& value = g.values[static_cast<size_t>(v)];
      hoisted = hoisted && !output[static_cast<size_t>(v)] && value.dtype != 0 &&
                StaticShape(g, value, &shape);
    }
    if (!hoisted) continue;
    for (int v : step.outputs) same[static_cast<size_t>(v)] = true;
  }

  // The readers take the panels first; the packing steps go in after, the last first, so that
  // the step indices the readers were found at hold until then.
  std::vector<std::pair<int, StepSpec>> packs;
  for (auto& [v, reads] : Readers(g)) {
    const ValueSpec& value = g.values[static_cast<size_t>(v)];
    int s = maker[static_cast<size_t>(v)];
    if (value.kind != pkg::ValueKind::Intermediate || !same[static_cast<size_t>(v)] || s < 0 ||
        value.dtype != kFloat32 || devices[static_cast<size_t>(value.device)].kind != "cpu" ||
        g.steps[static_cast<size_t>(s)].kind != pkg::StepKind::Kernel ||
        !StaticShape(g, value, &shape) || !WorthPacking(shape)) {
      continue;
    }
    if (!AllTakePackedB(devices, g, reads, v)) continue;
    ValueSpec panels;
    panels.name = value.name + ".panels";
    panels.device = value.device;
    int p = static_cast<int>(g.values.size());
    g.values.push_back(std::move(panels));
    AsPanels(g, g.values.back(), shape, reads);
    for (const auto& [r, i] : reads) g.steps[r].inputs[1] = p;
    const StepSpec& make = g.steps[static_cast<size_t>(s)];
    packs.emplace_back(s, OneInputStep(std::string(cpu::kMatmulPackB), make, v, p));
  }
  // Each right after the step making its B.
  std::stable_sort(packs.begin(), packs.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [s, pack] : packs) g.steps.insert(g.steps.begin() + s + 1, std::move(pack));
  return static_cast<int>(packs.size());
}

int PackMatmulWeights(PackageSpec& spec) {
  const std::vector<int> buffer_uses = BufferUses(spec);

  int packed = 0;
  for (GraphSpec& g : spec.graphs) {
    for (auto& [v, reads] : Readers(g)) {
      ValueSpec& value = g.values[static_cast<size_t>(v)];
      std::vector<int64_t> shape;
      if (!OwnCpuFloatConstant(spec, buffer_uses, value) || !StaticShape(g, value, &shape) ||
          !WorthPacking(shape)) {
        continue;
      }
      int64_t k = shape[shape.size() - 2], n = shape.back(), matrices = Matrices(shape);
      const auto& bytes = spec.buffers[static_cast<size_t>(value.buffer)];
      if (!bytes || bytes->size() != static_cast<size_t>(matrices * k * n) * sizeof(float) ||
          !AllTakePackedB(spec.devices, g, reads, v)) {
        continue;
      }
      // The matrices' panels, one matrix after another.
      std::vector<float> b(static_cast<size_t>(matrices * k * n));
      std::memcpy(b.data(), bytes->data(), bytes->size());
      std::vector<float> panels(static_cast<size_t>(matrices * cpu::PackedBFloats(k, n)));
      cpu::PackBMatrices(b.data(), matrices, k, n, panels.data());
      auto out = std::make_shared<std::vector<uint8_t>>(panels.size() * sizeof(float));
      std::memcpy(out->data(), panels.data(), out->size());
      spec.buffers[static_cast<size_t>(value.buffer)] = std::move(out);
      AsPanels(g, value, shape, reads);
      ++packed;
    }
  }
  return packed;
}

namespace {

// Whether input `i` of `step` is a product's weight (FlushSubnormalWeights).
bool ReadsAsWeight(const StepSpec& step, size_t i) {
  if (step.kind != pkg::StepKind::Kernel) return false;
  const std::string& k = step.kernel;
  if (k == "nn.conv1d" || k == "nn.conv2d" || k == "nn.conv3d" || k == "nn.conv2d_nchw16c" ||
      k == "nn.conv1d_transpose" || k == "nn.conv2d_transpose" || k == "nn.conv3d_transpose") {
    return i == 1;
  }
  if (k == "matmul") return i <= 1;
  if (k == "nn.lstm" || k == "nn.gru" || k == "nn.rnn") return i == 1 || i == 2;
  return false;
}

}  // namespace

int FlushSubnormalWeights(PackageSpec& spec) {
  const std::vector<int> buffer_uses = BufferUses(spec);
  int flushed = 0;
  for (GraphSpec& g : spec.graphs) {
    for (auto& [v, reads] : Readers(g)) {
      const ValueSpec& value = g.values[static_cast<size_t>(v)];
      if (!OwnCpuFloatConstant(spec, buffer_uses, value)) continue;
      bool weight = !reads.empty();
      for (const auto& [s, i] : reads) weight = weight && ReadsAsWeight(g.steps[s], i);
      const auto& bytes = spec.buffers[static_cast<size_t>(value.buffer)];
      if (!weight || !bytes || bytes->size() % sizeof(float) != 0) continue;
      std::vector<float> w(bytes->size() / sizeof(float));
      std::memcpy(w.data(), bytes->data(), bytes->size());
      bool any = false;
      for (float& x : w) {
        if (std::fpclassify(x) == FP_SUBNORMAL) {
          x = std::signbit(x) ? -0.0f : 0.0f;
          any = true;
        }
      }
      if (!any) continue;
      auto out = std::make_shared<std::vector<uint8_t>>(bytes->size());
      std::memcpy(out->data(), w.data(), out->size());
      spec.buffers[static_cast<size_t>(value.buffer)] = std::move(out);
      ++flushed;
    }
  }
  return flushed;
}

}  // namespace quilt::compiler
