#include "targets/pack_weights.h"

#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "targets/cpu/kernels/gemm.h"

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

// Whether `step` is a CPU matmul of float32 operands and output that reads value `v` as B alone.
bool TakesPackedB(const PackageSpec& spec, const GraphSpec& g, const StepSpec& step, int v) {
  if (step.kind != pkg::StepKind::Kernel || step.kernel != "matmul" || step.inputs.size() != 2 ||
      step.outputs.size() != 1 || step.inputs[1] != v || step.inputs[0] == v ||
      spec.devices[static_cast<size_t>(step.device)].kind != "cpu" || step.attrs.Find("packed_b")) {
    return false;
  }
  return step.inputs[0] >= 0 &&
         g.values[static_cast<size_t>(step.inputs[0])].dtype == kFloat32 &&
         g.values[static_cast<size_t>(step.outputs[0])].dtype == kFloat32;
}

}  // namespace

int PackMatmulWeights(PackageSpec& spec) {
  // How many values and code sections name each buffer: only a buffer of one value is rewritten.
  std::vector<int> buffer_uses(spec.buffers.size(), 0);
  auto use = [&](int b) {
    if (b >= 0 && static_cast<size_t>(b) < buffer_uses.size()) ++buffer_uses[static_cast<size_t>(b)];
  };
  for (const GraphSpec& g : spec.graphs) {
    for (const ValueSpec& v : g.values) {
      use(v.buffer);
      use(v.default_buffer);
    }
  }
  for (const TargetCodeSpec& c : spec.code) use(c.buffer);

  int packed = 0;
  for (GraphSpec& g : spec.graphs) {
    // The steps that read each value (step, input position); graph inputs and outputs are out.
    std::map<int, std::vector<std::pair<size_t, size_t>>> readers;
    for (size_t s = 0; s < g.steps.size(); ++s) {
      for (size_t i = 0; i < g.steps[s].inputs.size(); ++i) {
        if (g.steps[s].inputs[i] >= 0) readers[g.steps[s].inputs[i]].push_back({s, i});
      }
    }
    for (int v : g.outputs) readers.erase(v);
    for (auto& [v, reads] : readers) {
      ValueSpec& value = g.values[static_cast<size_t>(v)];
      std::vector<int64_t> shape;
      if (value.kind != pkg::ValueKind::Constant || value.dtype != kFloat32 || value.buffer < 0 ||
          value.default_buffer >= 0 || buffer_uses[static_cast<size_t>(value.buffer)] != 1 ||
          spec.devices[static_cast<size_t>(value.device)].kind != "cpu" ||
          !StaticShape(g, value, &shape) || shape.size() < 2) {
        continue;
      }
      int64_t k = shape[shape.size() - 2], n = shape.back(), matrices = 1;
      for (size_t i = 0; i + 2 < shape.size(); ++i) matrices *= shape[i];
      const auto& bytes = spec.buffers[static_cast<size_t>(value.buffer)];
      if (k == 0 || n <= cpu::kGemmPanel / 3 || !bytes ||
          bytes->size() != static_cast<size_t>(matrices * k * n) * sizeof(float)) {
        continue;
      }
      bool all = true;
      for (const auto& [s, i] : reads) all = all && TakesPackedB(spec, g, g.steps[s], v);
      if (!all) continue;

      // The matrices' panels, one matrix after another.
      int64_t per_matrix = cpu::PackedBFloats(k, n);
      std::vector<float> b(static_cast<size_t>(matrices * k * n));
      std::memcpy(b.data(), bytes->data(), bytes->size());
      std::vector<float> panels(static_cast<size_t>(matrices * per_matrix));
      for (int64_t m = 0; m < matrices; ++m) {
        cpu::PackBPanels(cpu::MatrixB(b.data() + m * k * n, k, n), k, n,
                         panels.data() + m * per_matrix);
      }
      auto out = std::make_shared<std::vector<uint8_t>>(panels.size() * sizeof(float));
      std::memcpy(out->data(), panels.data(), out->size());
      spec.buffers[static_cast<size_t>(value.buffer)] = std::move(out);
      g.dims.push_back({pkg::DimKind::Int, 0, 0, matrices * per_matrix});
      value.rank = 1;
      value.dims = {static_cast<int>(g.dims.size()) - 1};
      value.byte_size = matrices * per_matrix * static_cast<int64_t>(sizeof(float));
      for (const auto& [s, i] : reads) g.steps[s].attrs.Set("packed_b", shape);
      ++packed;
    }
  }
  return packed;
}

}  // namespace quilt::compiler
