#include "targets/fuse_epilogue.h"

#include <optional>
#include <string>

#include "ir/dtype.h"

namespace quilt::compiler {
namespace {

class Fusion {
 public:
  Fusion(const std::vector<DeviceSpec>& devices, GraphSpec& g) : devices_(devices), g_(g) {
    reads_.assign(g.values.size(), 0);
    reader_.assign(g.values.size(), -1);
    for (int s = 0; s < static_cast<int>(g.steps.size()); ++s) {
      for (int v : g.steps[static_cast<size_t>(s)].inputs) {
        if (v < 0) continue;
        ++reads_[static_cast<size_t>(v)];
        reader_[static_cast<size_t>(v)] = s;
      }
    }
    for (int v : g.outputs) reads_[static_cast<size_t>(v)] += 2;  // never fused away
  }

  int Run() {
    std::vector<bool> removed(g_.steps.size(), false);
    int count = 0;
    for (size_t s = 0; s < g_.steps.size(); ++s) {
      StepSpec& conv = g_.steps[s];
      if (removed[s] || !Fusable(conv)) continue;
      // The bias add.
      int add = SoleReader(conv, conv.outputs[0], "add");
      if (add < 0) continue;
      StepSpec& a = g_.steps[static_cast<size_t>(add)];
      int v = conv.outputs[0];
      if (a.inputs.size() != 2) continue;
      int bias = a.inputs[0] == v ? a.inputs[1] : a.inputs[0];
      if (!PerChannel(bias, v) || !SameType(v, a.outputs[0])) continue;
      conv.inputs.push_back(bias);
      conv.input_arity.push_back(1);
      conv.outputs = a.outputs;
      removed[static_cast<size_t>(add)] = true;
      ++count;
      // The activation.
      int out = conv.outputs[0];
      int act = SoleReader(conv, out, "nn.relu");
      if (act < 0) act = SoleReader(conv, out, "clip");
      if (act < 0) continue;
      StepSpec& r = g_.steps[static_cast<size_t>(act)];
      if (r.inputs.size() != 1 || !SameType(out, r.outputs[0])) continue;
      if (r.kernel == "nn.relu") {
        conv.attrs.Set("activation", std::string("relu"));
      } else {
        const double* lo = r.attrs.Get<double>("min");
        const double* hi = r.attrs.Get<double>("max");
        conv.attrs.Set("activation", std::string("clip"));
        if (lo) conv.attrs.Set("activation_min", *lo);
        if (hi) conv.attrs.Set("activation_max", *hi);
      }
      conv.outputs = r.outputs;
      removed[static_cast<size_t>(act)] = true;
      ++count;
    }
    std::vector<StepSpec> kept;
    for (size_t s = 0; s < g_.steps.size(); ++s) {
      if (!removed[s]) kept.push_back(std::move(g_.steps[s]));
    }
    g_.steps = std::move(kept);
    return count;
  }

 private:
  static constexpr int32_t kFloat32 = static_cast<int32_t>(ir::DataType::kFloat32);

  const ValueSpec& Value(int v) const { return g_.values[static_cast<size_t>(v)]; }

  // A float32 convolution on a CPU device, without an epilogue yet.
  bool Fusable(const StepSpec& s) const {
    if (s.kernel != "nn.conv1d" && s.kernel != "nn.conv2d" && s.kernel != "nn.conv3d") {
      return false;
    }
    if (s.device < 0 || s.device >= static_cast<int>(devices_.size()) ||
        devices_[static_cast<size_t>(s.device)].kind != "cpu") {
      return false;
    }
    return s.inputs.size() == 2 && s.outputs.size() == 1 && Value(s.outputs[0]).dtype == kFloat32;
  }

  // The step that alone reads `v` (once), when it runs `kernel` on the device of `producer`.
  int SoleReader(const StepSpec& producer, int v, const char* kernel) const {
    if (reads_[static_cast<size_t>(v)] != 1) return -1;
    int r = reader_[static_cast<size_t>(v)];
    const StepSpec& step = g_.steps[static_cast<size_t>(r)];
    if (step.kernel != kernel || step.device != producer.device || step.outputs.size() != 1) {
      return -1;
    }
    return r;
  }

  bool SameDim(int a, int b) const {
    if (a == b) return true;
    const DimSpec& x = g_.dims[static_cast<size_t>(a)];
    const DimSpec& y = g_.dims[static_cast<size_t>(b)];
    if (x.kind != y.kind) return false;
    switch (x.kind) {
      case pkg::DimKind::Int:
        return x.value == y.value;
      case pkg::DimKind::Sym:
        return g_.symbols[static_cast<size_t>(x.a)] == g_.symbols[static_cast<size_t>(y.a)];
      default:
        return SameDim(x.a, y.a) && SameDim(x.b, y.b);
    }
  }

  bool SameType(int a, int b) const {
    const ValueSpec& x = Value(a);
    const ValueSpec& y = Value(b);
    if (x.dtype != y.dtype || x.rank < 0 || x.rank != y.rank || x.device != y.device) return false;
    for (int i = 0; i < x.rank; ++i) {
      if (!SameDim(x.dims[static_cast<size_t>(i)], y.dims[static_cast<size_t>(i)])) return false;
    }
    return true;
  }

  std::optional<int64_t> IntDim(int d) const {
    const DimSpec& dim = g_.dims[static_cast<size_t>(d)];
    if (dim.kind != pkg::DimKind::Int) return std::nullopt;
    return dim.value;
  }

  // A float32 constant of shape (1, M, 1, ...) or (M, 1, ...) against the conv result `v`
  // (N, M, spatial...), on its device.
  bool PerChannel(int bias, int v) const {
    if (bias < 0) return false;
    const ValueSpec& b = Value(bias);
    const ValueSpec& y = Value(v);
    if (b.kind != pkg::ValueKind::Constant || b.dtype != kFloat32 || b.device != y.device ||
        y.rank < 2 || b.rank < y.rank - 1 || b.rank > y.rank) {
      return false;
    }
    std::optional<int64_t> m = IntDim(y.dims[1]);
    if (!m) return false;
    for (int i = 0; i < b.rank; ++i) {
      std::optional<int64_t> d = IntDim(b.dims[static_cast<size_t>(i)]);
      int axis = i + y.rank - b.rank;
      if (!d || *d != (axis == 1 ? *m : 1)) return false;
    }
    return true;
  }

  const std::vector<DeviceSpec>& devices_;
  GraphSpec& g_;
  std::vector<int> reads_, reader_;
};

}  // namespace

int FuseConvEpilogues(const std::vector<DeviceSpec>& devices, GraphSpec& g) {
  return Fusion(devices, g).Run();
}

}  // namespace quilt::compiler
