#include "targets/block_layout.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include "targets/cpu/kernels/conv_blocked.h"

namespace quilt::compiler {
namespace {

constexpr int32_t kFloat32 = static_cast<int32_t>(ir::DataType::kFloat32);
constexpr int64_t kBlock = cpu::nn::kChannelBlock;
// The most channels of NCHW data a blocked conv reads (its first layer's image).
constexpr int64_t kMaxNchwChannels = 4;

// c channels rounded up to whole blocks.
int64_t Padded(int64_t c) { return (c + kBlock - 1) / kBlock * kBlock; }

// Whether c channels may be held blocked: in whole blocks, or the last one padded (zeros, or what
// a step makes of them: values no conv reads, its weights of them zeros) where the padding is at
// most half the channels, so that a conv over them does at most 1.5x the multiply-adds of each
// side's channels (12 and 24 channels take 16 and 32; 8, 10 or 20 would take 1.6-2x).
bool BlockableChannels(int64_t c) { return c > 0 && (c % kBlock == 0 || 2 * Padded(c) <= 3 * c); }

using Buffers = std::vector<std::shared_ptr<const std::vector<uint8_t>>>;

class Blocking {
 public:
  Blocking(PackageSpec& spec, GraphSpec& g, int winograd_tile)
      : devices_(spec.devices),
        buffers_(spec.buffers),
        graphs_(spec.graphs),
        g_(g),
        winograd_tile_(winograd_tile) {}

  int Run() {
    const size_t nv = g_.values.size(), ns = g_.steps.size();
    reads_.assign(nv, {});
    maker_.assign(nv, -1);
    output_.assign(nv, false);
    for (int v : g_.outputs) output_[static_cast<size_t>(v)] = true;
    for (size_t s = 0; s < ns; ++s) {
      const StepSpec& step = g_.steps[s];
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        if (step.inputs[i] >= 0) reads_[static_cast<size_t>(step.inputs[i])].push_back({s, i});
      }
      for (int v : step.outputs) maker_[static_cast<size_t>(v)] = static_cast<int>(s);
    }
    // The convs that may run blocked, joined where one's result is another's data or residual.
    conv_.assign(ns, {});
    for (size_t s = 0; s < ns; ++s) conv_[s] = Eligible(s);
    JoinChains();
    Prune();
    std::vector<bool> blocked = Decide();
    // A group that does not pay may hold chains that would, joined through steps other than
    // convs (a text detector's backbone and neck through the neck's resizes and adds): those
    // steps leave it, and the groups are formed and weighed again (once: what is left are convs
    // and the steps between them in groups that paid).
    bool parted = false;
    for (size_t s = 0; s < ns; ++s) {
      if (conv_[s].ok && !blocked[s] && conv_[s].role != Role::kConv) {
        conv_[s].ok = false;
        parted = true;
      }
    }
    if (parted) {
      JoinChains();
      Prune();
      blocked = Decide();
    }
    int count = 0;
    for (size_t s = 0; s < ns; ++s) count += blocked[s] ? 1 : 0;
    if (count == 0) return 0;
    Rewrite(blocked);
    return count;
  }

 private:
  // A step of a chain: a conv; a max pool; a gate (a multiply of data by a value per channel, as
  // a squeeze-and-excite block ends); a global average pool (its blocked data's means, (N, C, 1,
  // 1), are the same floats in either layout: its result stays as it is, no blocked value, and
  // nothing joins a chain through it).
  // Also an elementwise add, subtract or multiply of operands of the result's shape, a concat and
  // a split along the channels, the last two of 16k channels each (kShaped: every input and result
  // blocked, the kernel the same over the blocked shape, a concat's or split's axis that of the
  // blocks).
  // And a resize of the height and width (kResize: its data blocked; roi, scales and sizes as they
  // are, for the data's NCHW view).
  enum class Role { kConv, kMaxPool, kGate, kMean, kShaped, kResize };
  struct Conv {
    bool ok = false;
    Role role = Role::kConv;
    int data = 0;  // the position of its blocked data (a gate's: either)
    bool depthwise = false;
    bool nchw_data = false;  // a first layer: its data read as it is, its result blocked
    int residual = -1;       // the residual's input position, if any
    std::vector<int64_t> w;
    // The weight's shape as the blocked kernel reads it: w with the output channels, and the
    // input channels of blocked data, padded to whole blocks (zero weights).
    std::vector<int64_t> padded_w;
    // Where the output channels are padded: the epilogue's inputs of a value per channel
    // (constants, padded too: their input positions), and whether each is a divisor (padded
    // with ones, else zeros).
    std::vector<std::pair<int, bool>> per_channel;
  };

  // Dim d's value where it is known when compiling, else -1.
  int64_t IntDim(int d) const {
    const DimSpec& dim = g_.dims[static_cast<size_t>(d)];
    return dim.kind == pkg::DimKind::Int && dim.value > 0 ? dim.value : -1;
  }

  // Whether v is a float32 tensor of rank `rank` (its dims in g_.dims), its dim 1 known.
  bool FloatOfRank(const ValueSpec& v, int rank) const {
    return v.dtype == kFloat32 && v.rank == rank && v.dims.size() == static_cast<size_t>(rank) &&
           IntDim(v.dims[1]) > 0;
  }

  // Whether dims a and b are the same: the same symbol or the same known size.
  bool SameDim(int a, int b) const {
    if (a == b) return true;
    const DimSpec &p = g_.dims[static_cast<size_t>(a)], &q = g_.dims[static_cast<size_t>(b)];
    if (p.kind == q.kind && p.a == q.a && p.b == q.b && p.value == q.value) return true;
    return IntDim(a) >= 0 && IntDim(a) == IntDim(b);
  }

  // Whether a and b have the same shape: each dim the same symbol or the same known size.
  bool SameShape(const ValueSpec& a, const ValueSpec& b) const {
    if (a.dims.size() != b.dims.size()) return false;
    for (size_t i = 0; i < a.dims.size(); ++i) {
      if (!SameDim(a.dims[i], b.dims[i])) return false;
    }
    return true;
  }

  const ValueSpec& Value(int v) const { return g_.values[static_cast<size_t>(v)]; }

  // Whether a step's strides are absent (ones) or each 1 or 2.
  static bool StridesAtMostTwo(const StepSpec& step) {
    const auto* list = step.attrs.Get<std::vector<int64_t>>("strides");
    return !list ||
           std::all_of(list->begin(), list->end(), [](int64_t v) { return v == 1 || v == 2; });
  }

  // Whether a step's list attribute is absent (its default, ones) or all ones.
  static bool AllOnes(const StepSpec& step, const std::string& name) {
    const auto* list = step.attrs.Get<std::vector<int64_t>>(name);
    return !list || std::all_of(list->begin(), list->end(), [](int64_t v) { return v == 1; });
  }

  // Whether step s may run blocked, and as what: kernel steps on a CPU device only.
  Conv Eligible(size_t s) const {
    const StepSpec& step = g_.steps[s];
    Conv c;
    if (step.kind != pkg::StepKind::Kernel ||
        devices_[static_cast<size_t>(step.device)].kind != "cpu") {
      return c;
    }
    if (step.kernel == "nn.max_pool2d") return EligiblePool(s);
    if (step.kernel == "nn.adaptive_avg_pool2d") return EligibleMean(s);
    if (step.kernel == "image.resize") return EligibleResize(s);
    if (step.kernel == "add" || step.kernel == "subtract" || step.kernel == "multiply" ||
        step.kernel == "concat" || step.kernel == "split") {
      Conv shaped = EligibleShaped(s);
      if (shaped.ok || step.kernel != "multiply") return shaped;
      return EligibleGate(s);
    }
    if (step.kernel != "nn.conv2d" || step.outputs.size() != 1 || step.inputs.size() < 2 ||
        step.inputs[0] < 0 || step.inputs[1] < 0) {
      return c;
    }
    const ValueSpec &x = Value(step.inputs[0]), &w = Value(step.inputs[1]),
                    &y = Value(step.outputs[0]);
    if (!FloatOfRank(x, 4) || !FloatOfRank(w, 4) || !FloatOfRank(y, 4)) return c;
    for (int d : w.dims) c.w.push_back(IntDim(d));
    if (c.w[0] < 0 || c.w[2] < 0 || c.w[3] < 0) return c;
    // The weight: a constant with its values, read by this step alone.
    if (w.kind != pkg::ValueKind::Constant || w.buffer < 0 ||
        w.buffer >= static_cast<int>(buffers_.size()) || !buffers_[static_cast<size_t>(w.buffer)] ||
        buffers_[static_cast<size_t>(w.buffer)]->size() !=
            static_cast<size_t>(c.w[0] * c.w[1] * c.w[2] * c.w[3]) * sizeof(float) ||
        reads_[static_cast<size_t>(step.inputs[1])].size() != 1 ||
        output_[static_cast<size_t>(step.inputs[1])]) {
      return c;
    }
    const int64_t* groups_attr = step.attrs.Get<int64_t>("groups");
    const int64_t groups = groups_attr ? *groups_attr : 1;
    const int64_t ci = IntDim(x.dims[1]), co = c.w[0];
    if (!BlockableChannels(co) || IntDim(y.dims[1]) != co) return c;
    // Data of a few channels (a network's first layer, 3 for an image) is read as it is.
    c.nchw_data = ci <= kMaxNchwChannels;
    if ((c.nchw_data && groups != 1) || (!c.nchw_data && !BlockableChannels(ci))) return c;
    if (groups == 1) {
      if (c.w[1] != ci) return c;
    } else if (!(groups == ci && co == ci && c.w[1] == 1)) {
      return c;
    }
    c.depthwise = groups != 1;
    // A dense conv's output channels padded by at most 15% (42 to 48, 28 to 32, 200 to 208).
    if (!c.depthwise && co % kBlock != 0 && 100 * Padded(co) > 115 * co) return c;
    // Dense convs of blocked data: 1x1; 3x3 of unit strides and dilations, which the kernel runs
    // as Winograd on blocked data where the image has enough tiles; 3x3 of stride 2 (a YOLO
    // backbone's downsampling), directly: nudenet-320n's 0.68-0.85 of the NCHW GEMM's time each,
    // ddddocr-det's 0.82-0.84. (Other windows' GEMM paths on NCHW outrun the blocked direct
    // kernel: opennsfw's 3x3 convs by that kernel, before Winograd, cost it 16%.)
    if (!c.depthwise && !c.nchw_data && (c.w[2] != 1 || c.w[3] != 1) &&
        !(c.w[2] == 3 && c.w[3] == 3 && StridesAtMostTwo(step) && AllOnes(step, "dilation"))) {
      return c;
    }
    const int64_t* residual = step.attrs.Get<int64_t>("residual");
    if (residual && *residual != 0) {
      const int p = ConvResidualInput(step);
      if (p < 0) return c;
      const ValueSpec& r = Value(step.inputs[static_cast<size_t>(p)]);
      if (r.dtype != kFloat32 || !SameShape(r, y)) return c;
      c.residual = p;
    }
    c.padded_w = c.w;
    c.padded_w[0] = Padded(co);
    if (!c.nchw_data && !c.depthwise) c.padded_w[1] = Padded(ci);
    if (c.padded_w[0] != co && !PerChannelInputs(step, co, &c.per_channel)) return c;
    c.ok = true;
    return c;
  }

  // The epilogue's inputs of conv `step` that hold a value per output channel (of co): their
  // positions, and whether each is a divisor (post letter 'd'). False where one of them is not a
  // constant with its values (its padding could not be laid out when compiling).
  bool PerChannelInputs(const StepSpec& step, int64_t co,
                        std::vector<std::pair<int, bool>>* out) const {
    const std::string* post_attr = step.attrs.Get<std::string>("post");
    const std::string post = post_attr ? *post_attr : "";
    const int n = static_cast<int>(step.inputs.size()), residual = ConvResidualInput(step);
    const int first_post = n - static_cast<int>(post.size());
    for (int p = 2; p < n; ++p) {
      const int v = step.inputs[static_cast<size_t>(p)];
      if (v < 0 || p == residual) continue;
      const ValueSpec& t = Value(v);
      if (t.dtype != kFloat32 || t.dims.size() != static_cast<size_t>(t.rank)) return false;
      int64_t count = 1;
      for (int d : t.dims) {
        if (IntDim(d) < 0) return false;
        count *= IntDim(d);
      }
      if (count == 1) continue;  // one value for every channel
      if (count != co || t.kind != pkg::ValueKind::Constant || t.buffer < 0 ||
          t.buffer >= static_cast<int>(buffers_.size()) ||
          !buffers_[static_cast<size_t>(t.buffer)] ||
          buffers_[static_cast<size_t>(t.buffer)]->size() !=
              static_cast<size_t>(co) * sizeof(float)) {
        return false;
      }
      out->push_back({p, p >= first_post && post[static_cast<size_t>(p - first_post)] == 'd'});
    }
    return true;
  }

  // A float32 2-D max pool of channels BlockableChannels (known when compiling), its only result
  // the pooled values: the same pool over blocked data (nn.max_pool2d_nchw16c), where it lies
  // between blocked convs (a ResNet's first layer and its first block).
  Conv EligiblePool(size_t s) const {
    return WithRole(Role::kMaxPool, DataThrough(s) && g_.steps[s].inputs.size() == 1);
  }

  // A float32 average pool of such channels to one pixel (global: ONNX's GlobalAveragePool): the
  // means of blocked data, where its data is a chain's.
  Conv EligibleMean(size_t s) const {
    if (!DataThrough(s) || g_.steps[s].inputs.size() != 1) return {};
    const ValueSpec& y = Value(g_.steps[s].outputs[0]);
    return WithRole(Role::kMean, IntDim(y.dims[2]) == 1 && IntDim(y.dims[3]) == 1);
  }

  // A float32 resize of (N, C, H, W) data to a result of its batch and channels (its other
  // inputs, roi, scales and sizes, read as they are).
  Conv EligibleResize(size_t s) const {
    if (!DataThrough(s)) return {};
    const StepSpec& step = g_.steps[s];
    return WithRole(Role::kResize,
                    SameDim(Value(step.inputs[0]).dims[0], Value(step.outputs[0]).dims[0]));
  }

  // Whether step s makes one result from its data (input 0), both float32 (N, C, H, W) of the
  // same C, BlockableChannels (a pool's or a resize's shapes).
  bool DataThrough(size_t s) const {
    const StepSpec& step = g_.steps[s];
    return step.outputs.size() == 1 && !step.inputs.empty() && BlockableValue(step.inputs[0]) &&
           BlockableValue(step.outputs[0]) &&
           IntDim(Value(step.inputs[0]).dims[1]) == IntDim(Value(step.outputs[0]).dims[1]);
  }

  static Conv WithRole(Role role, bool ok) {
    Conv c;
    c.ok = ok;
    c.role = role;
    return c;
  }

  // Whether v is float32 (N, C, H, W) of C known when compiling and BlockableChannels; with
  // `whole`, C a multiple of 16.
  bool BlockableValue(int v, bool whole = false) const {
    if (v < 0) return false;
    const ValueSpec& x = Value(v);
    return FloatOfRank(x, 4) && BlockableChannels(IntDim(x.dims[1])) &&
           (!whole || IntDim(x.dims[1]) % kBlock == 0);
  }

  // The channel axis of a concat or split (its "axis" attribute 1, or -3 of rank 4).
  static bool ChannelAxis(const StepSpec& step) {
    const int64_t* axis = step.attrs.Get<int64_t>("axis");
    return axis && (*axis == 1 || *axis == -3);
  }

  // An elementwise add, subtract or multiply of float32 (N, C, H, W) operands of the result's
  // shape; a concat of such tensors of 16k channels along the channels; a split of one along
  // them into such parts (padding inside the channels would move them).
  Conv EligibleShaped(size_t s) const {
    const StepSpec& step = g_.steps[s];
    Conv c;
    if (step.inputs.empty() || step.outputs.empty()) return c;
    const bool whole = step.kernel == "concat" || step.kernel == "split";
    for (int v : step.inputs)
      if (!BlockableValue(v, whole)) return c;
    for (int v : step.outputs)
      if (!BlockableValue(v, whole)) return c;
    if (step.kernel == "concat" || step.kernel == "split") {
      if (!ChannelAxis(step) || (step.kernel == "split" && step.inputs.size() != 1) ||
          (step.kernel == "concat" && step.outputs.size() != 1)) {
        return c;
      }
    } else {
      const ValueSpec& y = Value(step.outputs[0]);
      if (step.inputs.size() != 2 || step.outputs.size() != 1 ||
          !SameShape(Value(step.inputs[0]), y) || !SameShape(Value(step.inputs[1]), y)) {
        return c;
      }
    }
    return WithRole(Role::kShaped, true);
  }

  // A float32 multiply of data (N, 16k, H, W) by a gate of one value per channel, (C, 1, 1),
  // (1, C, 1, 1) or (N, C, 1, 1), the result of the data's shape: the gate read as it is (the
  // same floats as blocked).
  Conv EligibleGate(size_t s) const {
    const StepSpec& step = g_.steps[s];
    Conv c;
    if (step.outputs.size() != 1 || step.inputs.size() != 2 || step.inputs[0] < 0 ||
        step.inputs[1] < 0) {
      return c;
    }
    const ValueSpec& y = Value(step.outputs[0]);
    if (!BlockableValue(step.outputs[0])) return c;
    for (int p = 0; p < 2; ++p) {
      const ValueSpec &x = Value(step.inputs[static_cast<size_t>(p)]),
                      &gate = Value(step.inputs[static_cast<size_t>(1 - p)]);
      if (x.dtype != kFloat32 || !SameShape(x, y) || gate.dtype != kFloat32 ||
          (gate.rank != 3 && gate.rank != 4) ||
          gate.dims.size() != static_cast<size_t>(gate.rank)) {
        continue;
      }
      const size_t r = gate.dims.size();
      const bool per_image =
          r == 3 || IntDim(gate.dims[0]) == 1 || SameDim(gate.dims[0], y.dims[0]);
      if (per_image && IntDim(gate.dims[r - 3]) == IntDim(y.dims[1]) &&
          IntDim(gate.dims[r - 2]) == 1 && IntDim(gate.dims[r - 1]) == 1) {
        c = WithRole(Role::kGate, true);
        c.data = p;
        return c;
      }
    }
    return c;
  }

  // The input positions of conv s that read blocked values: its data (but NCHW data) and its
  // residual.
  std::vector<int> BlockedInputs(size_t s) const {
    std::vector<int> p;
    if (conv_[s].role == Role::kShaped) {  // every input
      for (size_t i = 0; i < g_.steps[s].inputs.size(); ++i) p.push_back(static_cast<int>(i));
      return p;
    }
    if (!conv_[s].nchw_data) p.push_back(conv_[s].data);
    if (conv_[s].residual >= 0) p.push_back(conv_[s].residual);
    return p;
  }

  // Whether a result of step s is read other than as a blocked input of a step of its group, or
  // is a graph output.
  bool ReadOutside(size_t s) const {
    for (int v : g_.steps[s].outputs) {
      if (ValueReadOutside(s, v)) return true;
    }
    return false;
  }
  bool ValueReadOutside(size_t s, int v) const {
    if (output_[static_cast<size_t>(v)]) return true;
    for (const auto& [r, i] : reads_[static_cast<size_t>(v)]) {
      if (!conv_[r].ok || Root(r) != Root(s)) return true;
      bool blocked_input = false;
      for (int p : BlockedInputs(r)) blocked_input |= static_cast<size_t>(p) == i;
      if (!blocked_input) return true;
    }
    return false;
  }

  // The step that makes v blocked in a chain, or -1 (made by no step that may run blocked, or by
  // a global average pool, whose result is not blocked).
  int MakerOfBlocked(int v) const {
    const int m = maker_[static_cast<size_t>(v)];
    return m >= 0 && conv_[static_cast<size_t>(m)].ok &&
                   conv_[static_cast<size_t>(m)].role != Role::kMean
               ? m
               : -1;
  }

  // A step other than a conv whose result leaves its chain, of data all there in NCHW anyway
  // (each read outside the chain, or made outside it), would add a transform and spare none:
  // it stays as it is (a residual squeeze-and-excite block's x + x * gate where x is read
  // elsewhere too). The groups formed again where one did.
  void Prune() {
    bool pruned = false;
    for (size_t s = 0; s < g_.steps.size(); ++s) {
      const Role role = conv_[s].role;
      if (!conv_[s].ok || role == Role::kConv || role == Role::kMean || !ReadOutside(s)) continue;
      bool spares = false;
      for (int p : BlockedInputs(s)) {
        const int v = g_.steps[s].inputs[static_cast<size_t>(p)], m = MakerOfBlocked(v);
        spares |= m >= 0 && Root(static_cast<size_t>(m)) == Root(s) &&
                  !ValueReadOutside(static_cast<size_t>(m), v);
      }
      if (!spares) {
        conv_[s].ok = false;
        pruned = true;
      }
    }
    if (pruned) JoinChains();
  }

  // An image's elements of (N, C, H, W) value v (its multiply-adds for a conv's result, its
  // weight's shape w), or -1 where a dim is not known when compiling.
  double ImageElements(int v, const std::vector<int64_t>& w = {1, 1, 1, 1}) const {
    double n = 1;
    for (size_t d = 1; d < 4; ++d) {
      const int64_t dim = IntDim(Value(v).dims[d]);
      if (dim < 0) return -1;
      n *= static_cast<double>(dim) * static_cast<double>(w[d]);
    }
    return n;
  }

  // Which steps run blocked: those of the groups with at least two convs, at least twice as
  // many convs as values crossing their edge, and, where their shapes are known when compiling,
  // at least kMinMacsPerCrossing multiply-adds of their convs for each element of those values:
  // a transform moves each element once through memory (0.8 ns an element measured, PP-OCRv3
  // det's 32 x 192 x 384 into blocks in 1.8 ms), where the convs' faster kernels over blocked
  // data save a fraction of theirs (a few hundred picoseconds for each multiply-add at 30-80
  // GFLOP/s). Measured on PP-OCRv3 det, whose backbone of 16-120 channels, padded, joined one
  // group of 24 convs and 10 crossings, 42 multiply-adds an element: its changed steps 9.6 -> 13.8
  // ms at one thread, the transforms 0.15 -> 4.2 ms of it (the convs 7.2 -> 6.9); the groups
  // blocked in the zoo have 159 (PP-OCRv4 det) to over 20,000 (opennsfw).
  static constexpr double kMinMacsPerCrossing = 100;
  std::vector<bool> Decide() const {
    const size_t ns = g_.steps.size();
    std::vector<int> convs(ns, 0);
    std::vector<std::set<int>> crossing(ns);
    std::vector<double> macs(ns, 0);  // -1: not known
    for (size_t s = 0; s < ns; ++s) {
      if (!conv_[s].ok) continue;
      size_t root = Root(s);
      if (conv_[s].role == Role::kConv) {
        ++convs[root];
        const double m = ImageElements(g_.steps[s].outputs[0], conv_[s].w);
        macs[root] = m < 0 || macs[root] < 0 ? -1 : macs[root] + m;
      }
      for (int p : BlockedInputs(s)) {
        int v = g_.steps[s].inputs[static_cast<size_t>(p)];
        int m = MakerOfBlocked(v);
        if (m < 0 || Root(static_cast<size_t>(m)) != root) crossing[root].insert(v);
      }
      if (conv_[s].role != Role::kMean) {
        for (int v : g_.steps[s].outputs) {
          if (ValueReadOutside(s, v)) crossing[root].insert(v);
        }
      }
    }
    std::vector<bool> pays(ns, false);
    for (size_t root = 0; root < ns; ++root) {
      if (convs[root] < 2 || convs[root] < 2 * static_cast<int>(crossing[root].size())) continue;
      double elements = 0;
      for (int v : crossing[root]) {
        const double e = ImageElements(v);
        elements = e < 0 || elements < 0 ? -1 : elements + e;
      }
      pays[root] = macs[root] < 0 || elements < 0 || macs[root] >= kMinMacsPerCrossing * elements;
    }
    std::vector<bool> blocked(ns, false);
    for (size_t s = 0; s < ns; ++s) blocked[s] = conv_[s].ok && pays[Root(s)];
    return blocked;
  }

  // The groups of the steps that may run blocked: joined where one's result is another's
  // blocked input.
  void JoinChains() {
    parent_.resize(g_.steps.size());
    std::iota(parent_.begin(), parent_.end(), size_t{0});
    for (size_t s = 0; s < g_.steps.size(); ++s) {
      if (!conv_[s].ok) continue;
      for (int p : BlockedInputs(s)) {
        int m = MakerOfBlocked(g_.steps[s].inputs[static_cast<size_t>(p)]);
        if (m >= 0) Join(s, static_cast<size_t>(m));
      }
    }
  }

  size_t Root(size_t s) const {
    while (parent_[s] != s) s = parent_[s];
    return s;
  }
  void Join(size_t a, size_t b) { parent_[Root(a)] = Root(b); }

  int Dim(int64_t value) {
    g_.dims.push_back({pkg::DimKind::Int, 0, 0, value});
    return static_cast<int>(g_.dims.size()) - 1;
  }

  // A new intermediate value: `like` (N, C, H, W) blocked, (N, C / 16 rounded up, H, W, 16),
  // named after it.
  int BlockedValue(const ValueSpec& like, int device) {
    const int64_t channels = IntDim(like.dims[1]);
    ValueSpec v;
    v.name = like.name + ".nchw16c";
    v.kind = pkg::ValueKind::Intermediate;
    v.dtype = kFloat32;
    v.rank = 5;
    v.dims = {like.dims[0], Dim(Padded(channels) / kBlock), like.dims[2], like.dims[3],
              Dim(kBlock)};
    v.device = device;
    // Planned where its size is known when compiling, as the value it stands for (with its
    // padding).
    v.byte_size =
        like.byte_size > 0 ? like.byte_size / channels * Padded(channels) : like.byte_size;
    g_.values.push_back(std::move(v));
    return static_cast<int>(g_.values.size()) - 1;
  }

  // A concat's or split's attributes over blocked data: axis 1 (the blocks'), a split's parts in
  // blocks (their boundaries, whatever way the step gave them).
  void SetBlockAxis(StepSpec& step) {
    if (step.kernel != "concat" && step.kernel != "split") return;
    step.attrs.Set("axis", int64_t{1});
    if (step.kernel == "split") {
      std::vector<int64_t> bounds;
      int64_t at = 0;
      for (size_t i = 0; i + 1 < step.outputs.size(); ++i) {
        at += IntDim(Value(step.outputs[i]).dims[1]);  // the blocked value's dim 1: blocks
        bounds.push_back(at);
      }
      step.attrs.Set("indices_or_sections", bounds);
      step.attrs.Set("sections", int64_t{0});
    }
  }

  // Whether a value other than v holds v's buffer (in any graph).
  bool BufferShared(const ValueSpec& v) const {
    for (const GraphSpec& g : graphs_) {
      for (const ValueSpec& other : g.values) {
        if (&other != &v && (other.buffer == v.buffer || other.default_buffer == v.buffer)) {
          return true;
        }
      }
    }
    return false;
  }

  // Constant value v's bytes replaced by `floats` (rank 1): in place of its values where no other
  // value holds the buffer (else the package would carry both), else as a buffer of its own.
  void ReplaceConstant(ValueSpec& v, const std::vector<float>& floats) {
    auto bytes = std::make_shared<std::vector<uint8_t>>(floats.size() * sizeof(float));
    std::memcpy(bytes->data(), floats.data(), bytes->size());
    if (BufferShared(v)) {
      v.buffer = static_cast<int>(buffers_.size());
      buffers_.push_back(std::move(bytes));
    } else {
      buffers_[static_cast<size_t>(v.buffer)] = std::move(bytes);
    }
    v.rank = 1;
    v.dims = {Dim(static_cast<int64_t>(floats.size()))};
    v.byte_size = static_cast<int64_t>(floats.size() * sizeof(float));
  }

  // Conv s's weight laid out as its blocked kernel reads it, in place of its values: padded with
  // zero weights to its padded shape, then BlockConvWeight's order.
  void LayOutWeight(size_t s) {
    const Conv& c = conv_[s];
    ValueSpec& w = g_.values[static_cast<size_t>(g_.steps[s].inputs[1])];
    const std::vector<uint8_t>& bytes = *buffers_[static_cast<size_t>(w.buffer)];
    const std::vector<int64_t>& pw = c.padded_w;
    const int64_t taps = pw[2] * pw[3], count = pw[0] * pw[1] * taps;
    std::vector<float> in(static_cast<size_t>(count), 0.0f), out(static_cast<size_t>(count));
    const auto* values = reinterpret_cast<const float*>(bytes.data());
    for (int64_t o = 0; o < c.w[0]; ++o)
      for (int64_t i = 0; i < c.w[1]; ++i)
        std::memcpy(&in[static_cast<size_t>((o * pw[1] + i) * taps)],
                    values + (o * c.w[1] + i) * taps, static_cast<size_t>(taps) * sizeof(float));
    cpu::nn::BlockConvWeight(in.data(), pw[0], pw[1], taps, c.depthwise, out.data(),
                             c.nchw_data ? pw[1] : kBlock);
    ReplaceConstant(w, out);
  }

  // Conv s's epilogue inputs of a value per output channel padded as its output channels: ones
  // for a divisor, else zeros (the padding lanes' values finite, read by no conv). In place where
  // this step alone reads the value, else as a value of its own.
  void PadPerChannelInputs(size_t s) {
    StepSpec& step = g_.steps[s];
    for (const auto& [p, divisor] : conv_[s].per_channel) {
      int v = step.inputs[static_cast<size_t>(p)];
      const auto* values =
          reinterpret_cast<const float*>(buffers_[static_cast<size_t>(Value(v).buffer)]->data());
      std::vector<float> padded(static_cast<size_t>(conv_[s].padded_w[0]), divisor ? 1.0f : 0.0f);
      std::copy_n(values, conv_[s].w[0], padded.begin());
      const bool alone =
          reads_[static_cast<size_t>(v)].size() == 1 && !output_[static_cast<size_t>(v)];
      if (!alone) {  // a copy (its buffer then shared: a buffer of its own)
        ValueSpec copy = Value(v);
        copy.name += ".padded";
        g_.values.push_back(std::move(copy));
        v = static_cast<int>(g_.values.size()) - 1;
        step.inputs[static_cast<size_t>(p)] = v;
      }
      ReplaceConstant(g_.values[static_cast<size_t>(v)], padded);
    }
  }

  void Rewrite(const std::vector<bool>& blocked) {
    const size_t ns = g_.steps.size();
    std::vector<std::vector<StepSpec>> before(ns), after(ns);
    // The blocked form of each value, per group (a value entering two groups is blocked for
    // each). A conv's result is made blocked by its conv; a value first met as an input was made
    // outside the group (a reader runs after its maker), so it enters through a transform made
    // before this, its first reader in the group.
    std::map<std::pair<size_t, int>, int> blocked_of;
    for (size_t s = 0; s < ns; ++s) {
      if (!blocked[s]) continue;
      const size_t root = Root(s);
      StepSpec& step = g_.steps[s];
      // Its result's channels (a mean's and a resize's, for their kernels where the blocks are
      // padded).
      const int64_t channels = IntDim(Value(step.outputs[0]).dims[1]);
      for (int p : BlockedInputs(s)) {
        int v = step.inputs[static_cast<size_t>(p)];
        auto [it, entering] = blocked_of.try_emplace({root, v}, -1);
        if (entering) {
          it->second = BlockedValue(Value(v), step.device);
          before[s].push_back(OneInputStep(std::string(cpu::nn::kToNchw16c), step, v, it->second));
        }
        step.inputs[static_cast<size_t>(p)] = it->second;
      }
      if (conv_[s].role == Role::kMean) {
        step.kernel = std::string(cpu::nn::kGlobalAvgPoolNchw16c);
        step.attrs.Set("channels", channels);
        continue;
      }
      for (int& y : step.outputs) {
        const int yb = BlockedValue(Value(y), step.device);
        blocked_of[{root, y}] = yb;
        if (ValueReadOutside(s, y)) {
          after[s].push_back(OneInputStep(std::string(cpu::nn::kFromNchw16c), step, yb, y));
          after[s].back().attrs.Set("channels", IntDim(Value(y).dims[1]));
        }
        y = yb;
      }
      if (conv_[s].role == Role::kShaped) {
        SetBlockAxis(step);
        continue;
      }
      if (conv_[s].role == Role::kResize) {
        step.kernel = std::string(cpu::nn::kResizeNchw16c);
        step.attrs.Set("channels", channels);
        continue;
      }
      if (conv_[s].role == Role::kMaxPool) {
        step.kernel = std::string(cpu::nn::kMaxPoolNchw16c);
        continue;
      }
      if (conv_[s].role == Role::kGate) {
        // The kernel's inputs: data, then gate.
        if (conv_[s].data == 1) std::swap(step.inputs[0], step.inputs[1]);
        step.kernel = std::string(cpu::nn::kGateNchw16c);
        continue;
      }
      step.kernel = std::string(cpu::nn::kConvNchw16c);
      // Over padded channels where a count is not a multiple of 16: the weight's shape, a
      // depthwise conv's groups and the epilogue's values per channel as padded.
      step.attrs.Set("weight_shape", conv_[s].padded_w);
      if (!conv_[s].depthwise) {
        step.attrs.Set(std::string(cpu::nn::kWeightGroupBlocks), cpu::nn::kBlocksPerGroup);
        // A 3x3 of unit strides and dilations, which the kernel may run as Winograd.
        if (winograd_tile_ != 2 && conv_[s].padded_w[2] == 3 && conv_[s].padded_w[3] == 3 &&
            AllOnes(step, "strides") && AllOnes(step, "dilation")) {
          step.attrs.Set(std::string(cpu::nn::kWinogradTile), int64_t{winograd_tile_});
        }
      } else {
        step.attrs.Set("groups", conv_[s].padded_w[0]);
      }
      LayOutWeight(s);
      PadPerChannelInputs(s);
    }
    std::vector<StepSpec> steps;
    steps.reserve(ns + 8);
    for (size_t s = 0; s < ns; ++s) {
      for (StepSpec& t : before[s]) steps.push_back(std::move(t));
      steps.push_back(std::move(g_.steps[s]));
      for (StepSpec& t : after[s]) steps.push_back(std::move(t));
    }
    g_.steps = std::move(steps);
  }

  const std::vector<DeviceSpec>& devices_;
  Buffers& buffers_;
  const std::deque<GraphSpec>& graphs_;
  GraphSpec& g_;
  const int winograd_tile_;
  std::vector<std::vector<std::pair<size_t, size_t>>> reads_;  // (step, input position)
  std::vector<int> maker_;
  std::vector<bool> output_;
  std::vector<Conv> conv_;
  std::vector<size_t> parent_;
};

}  // namespace

int BlockConvLayouts(PackageSpec& spec, GraphSpec& g, int winograd_tile) {
  return Blocking(spec, g, winograd_tile).Run();
}

int ConvResidualInput(const StepSpec& step) {
  const int64_t* residual = step.attrs.Get<int64_t>("residual");
  if (!residual || *residual == 0) return -1;
  const std::string* act = step.attrs.Get<std::string>("activation");
  const std::string* post = step.attrs.Get<std::string>("post");
  const int slope = act && *act == "prelu" ? 1 : 0;
  const int p =
      static_cast<int>(step.inputs.size()) - 1 - slope - static_cast<int>(post ? post->size() : 0);
  return p >= 2 && step.inputs[static_cast<size_t>(p)] >= 0 ? p : -1;
}

}  // namespace quilt::compiler
