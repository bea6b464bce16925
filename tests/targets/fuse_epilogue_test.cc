// Conv epilogue fusion: which chains fuse (counted in the lowered steps), and the fused package
// computes what the unfused one does.
#include "targets/fuse_epilogue.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt::compiler {
namespace {

using quilt::testing::Parse;

// A nested list of random values of `shape` as IR text.
std::string Values(std::mt19937& rng, const std::vector<int>& shape, size_t axis = 0) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::ostringstream s;
  s.precision(9);
  s << "[";
  for (int i = 0; i < shape[axis]; ++i) {
    s << (i ? ", " : "");
    if (axis + 1 == shape.size()) {
      s << d(rng);
    } else {
      s << Values(rng, shape, axis + 1);
    }
  }
  s << "]";
  return s.str();
}

std::string Const(std::mt19937& rng, const std::vector<int>& shape) {
  return "R.const(" + Values(rng, shape) + ", \"float32\")";
}

// conv + bias (1, M, 1, 1) + relu; depthwise conv + bias (M, 1, 1) + clip; conv + bias +
// hardswish; conv + an add of a parameter; conv + bias + clip without a lower bound.
std::string Model(std::mt19937& rng) {
  return R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 9, 11), "float32"), p: R.Tensor((1, 4, 1, 1), "float32")):
        c1 = R.nn.conv2d(x, )" +
         Const(rng, {8, 3, 3, 3}) + R"(, strides=[2, 2], padding=[1, 1, 1, 1])
        a1 = R.add(c1, )" +
         Const(rng, {1, 8, 1, 1}) + R"()
        r1 = R.nn.relu(a1)
        c2 = R.nn.conv2d(r1, )" +
         Const(rng, {8, 1, 3, 3}) + R"(, padding=[1, 1, 1, 1], groups=8)
        a2 = R.add()" +
         Const(rng, {8, 1, 1}) + R"(, c2)
        k2 = R.clip(a2, min=-0.25, max=0.5)
        c3 = R.nn.conv2d(k2, )" +
         Const(rng, {4, 8, 1, 1}) + R"()
        a3 = R.add(c3, )" +
         Const(rng, {1, 4, 1, 1}) + R"()
        h3 = R.add(a3, R.const(3.0, "float32"))
        k3 = R.clip(h3, min=0.0, max=6.0)
        m3 = R.multiply(a3, k3)
        c4 = R.nn.conv2d(m3, )" +
         Const(rng, {4, 4, 1, 1}) + R"()
        a4 = R.add(c4, p)
        c5 = R.nn.conv2d(a4, )" +
         Const(rng, {4, 4, 3, 3}) + R"(, padding=[1, 1, 1, 1])
        a5 = R.add(c5, )" +
         Const(rng, {1, 4, 1, 1}) + R"()
        k5 = R.clip(a5, max=0.1)
        return k5
)";
}

struct Built {
  std::vector<uint8_t> package;
  int steps = 0, fused = 0;  // fused: conv steps with a bias input
  int affine = 0;            // conv steps with the attribute affine
  int post = 0;              // conv steps with the attribute post
  std::string kernels;
};

Built Build(const ir::IRModule& mod, bool fuse) {
  // Epilogue fusion alone: the elementwise steps it leaves stay steps of their own (the CPU's
  // elementwise fusion, which would join them, has its own tests: fuse_elementwise_test.cc), and
  // the adds and multiplies after a conv stay ops (fold-constants, which would fold them into the
  // conv's weight and bias, has its own: fold_constants_test.cc).
  CompileOptions options;
  options.fold_constants = false;
  options.lower.fuse_epilogues = fuse;
  options.lower.fuse_elementwise = false;
  Built b;
  Expected<Compiled> c = Compile(mod, options);
  EXPECT_TRUE(c) << c.error().ToString();
  if (!c) return b;
  b.package = c->package;
  LowerOptions lower;
  lower.fuse_epilogues = fuse;
  lower.fuse_elementwise = false;
  Expected<PackageSpec> spec = Lower(c->module, lower);
  EXPECT_TRUE(spec) << spec.error().ToString();
  if (!spec) return b;
  for (const StepSpec& s : spec->graphs[0].steps) {
    ++b.steps;
    b.kernels += (b.kernels.empty() ? "" : " ") + s.kernel;
    if (s.kernel == "nn.conv2d" && s.inputs.size() == 3) ++b.fused;
    if (s.kernel == "nn.conv2d" && s.attrs.Get<std::string>("affine")) ++b.affine;
    if (s.kernel == "nn.conv2d" && s.attrs.Get<std::string>("post")) ++b.post;
  }
  return b;
}

// `mod` compiled and lowered with the epilogues fused.
Expected<PackageSpec> LowerFused(const ir::IRModule& mod) {
  Expected<Compiled> compiled = Compile(mod, {});
  if (!compiled) return compiled.error();
  LowerOptions lower;
  lower.fuse_epilogues = true;
  return Lower(compiled->module, lower);
}

std::vector<std::vector<float>> RunPackage(const std::vector<uint8_t>& package,
                                           std::vector<rt::NamedTensor> inputs) {
  std::unique_ptr<rt::LoadedPackage> loaded;
  rt::Status st = rt::LoadedPackage::FromMemory(package.data(), package.size(), &loaded);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return {};
  std::shared_ptr<const rt::LoadedPackage> p(std::move(loaded));
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(p, {}, &s).ok());
  if (!s) return {};
  std::vector<rt::OwnedTensor> out;
  st = s->Run(inputs, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<std::vector<float>> values;
  for (const rt::OwnedTensor& t : out) values.push_back(test::Floats(t));
  return values;
}

void ExpectClose(const std::vector<std::vector<float>>& got,
                 const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].size(), want[o].size());
    for (size_t i = 0; i < got[o].size(); ++i) {
      if (got[o][i] == want[o][i]) continue;  // infinities too
      EXPECT_NEAR(got[o][i], want[o][i], 1e-5 + 1e-4 * std::abs(want[o][i]))
          << "output " << o << ", element " << i;
    }
  }
}

// The fused package computes what the plain one does on a random input "x" of `shape`, values in
// [-range, range].
void ExpectFusedComputesThePlain(const Built& plain, const Built& fused, std::vector<int64_t> shape,
                                 std::mt19937& rng, float range = 4.0f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> x(static_cast<size_t>(n));
  std::uniform_real_distribution<float> d(-range, range);
  for (float& v : x) v = d(rng);
  std::vector<std::vector<float>> want = RunPackage(plain.package, {test::Input("x", x, shape)});
  ExpectClose(RunPackage(fused.package, {test::Input("x", x, shape)}), want);
}

// y = b * clip(b + 3, 0, 6) (PaddleOCR's hardswish written out) after a step writing b: lines of
// IR text, each indented.
const std::string kHardSwishOfB =
    "        a = R.add(b, R.const(3.0, \"float32\"))\n"
    "        k = R.clip(a, min=0.0, max=6.0)\n"
    "        y = R.multiply(b, k)\n";

// A module whose main convolves x (1, 3, 7, 6) by `weight` (padding 1) into h, then runs `body`
// (lines of IR text, the first unindented).
ir::IRModule ConvThen(const std::string& weight, const std::string& body) {
  return Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 7, 6), "float32")):
        h = R.nn.conv2d(x, )" +
               weight + R"(, padding=[1, 1, 1, 1])
        )" + body +
               "\n");
}

// `mod` built plain and fused: the fused one has `steps` steps and computes what the plain one
// does. The fused build, for more checks.
Built ExpectFusedSteps(const ir::IRModule& mod, int steps, std::mt19937& rng,
                       const std::string& what) {
  Built plain = Build(mod, false);
  Built fused = Build(mod, true);
  EXPECT_EQ(fused.steps, steps) << what << ": " << fused.kernels;
  ExpectFusedComputesThePlain(plain, fused, {1, 3, 7, 6}, rng);
  return fused;
}

TEST(FuseEpilogue, FusedConvsComputeWhatTheUnfusedOnesDo) {
  std::mt19937 rng(5);
  ir::IRModule mod = Parse(Model(rng));
  Built plain = Build(mod, false);
  Built fused = Build(mod, true);
  // conv, add, relu | conv, add, clip | conv, add, add, clip, multiply | conv, add | conv, add,
  // clip.
  EXPECT_EQ(plain.steps, 16) << plain.kernels;
  EXPECT_EQ(plain.fused, 0);
  // The first three chains and the last become one step each.
  EXPECT_EQ(fused.steps, 6) << fused.kernels;
  EXPECT_EQ(fused.fused, 4) << fused.kernels;
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<float> x(2 * 3 * 9 * 11), p(4);
    std::uniform_real_distribution<float> d(-2, 2);
    for (float& v : x) v = d(rng);
    for (float& v : p) v = d(rng);
    auto inputs = [&] {
      return std::vector<rt::NamedTensor>{test::Input("x", x, {2, 3, 9, 11}),
                                          test::Input("p", p, {1, 4, 1, 1})};
    };
    std::vector<std::vector<float>> want = RunPackage(plain.package, inputs());
    ASSERT_EQ(want.size(), 1u);
    ASSERT_EQ(want[0].size(), 2u * 4 * 5 * 6);
    ExpectClose(RunPackage(fused.package, inputs()), want);
  }
}

// A conv result whose dims are symbols (an exporter's names for a model of dynamic shape), read by
// the add of a per-channel bias whose result has other symbols on the channel dim: the conv's
// channels come from its weight, and the bias joins the conv. Built as a lowered graph: its
// steps conv (x, w) -> y, add (y, b) -> z, relu (z) -> r.
TEST(FuseEpilogue, SymbolicChannelsTakeTheBias) {
  GraphSpec g;
  g.symbols = {"n", "c_d1", "z_d1", "h", "w"};
  auto sym = [&](int s) {
    g.dims.push_back({pkg::DimKind::Sym, s, 0, 0});
    return static_cast<int>(g.dims.size()) - 1;
  };
  auto num = [&](int64_t v) {
    g.dims.push_back({pkg::DimKind::Int, 0, 0, v});
    return static_cast<int>(g.dims.size()) - 1;
  };
  int n = sym(0), cd = sym(1), zd = sym(2), h = sym(3), w = sym(4);
  int five = num(5), three = num(3), one = num(1);
  constexpr int32_t kF32 = static_cast<int32_t>(ir::DataType::kFloat32);
  auto value = [&](pkg::ValueKind kind, std::vector<int> dims, int buffer = -1) {
    ValueSpec v;
    v.kind = kind;
    v.dtype = kF32;
    v.rank = static_cast<int>(dims.size());
    v.dims = std::move(dims);
    v.buffer = buffer;
    g.values.push_back(v);
    return static_cast<int>(g.values.size()) - 1;
  };
  using pkg::ValueKind;
  int x = value(ValueKind::Input, {n, three, h, w});
  int wt = value(ValueKind::Constant, {five, three, one, one}, 0);
  int bias = value(ValueKind::Constant, {one, five, one, one}, 1);
  int y = value(ValueKind::Intermediate, {n, cd, h, w});
  int z = value(ValueKind::Intermediate, {n, zd, h, w});
  int r = value(ValueKind::Intermediate, {n, zd, h, w});
  g.inputs = {x};
  g.outputs = {r};
  g.steps.push_back({"nn.conv2d", 0, {x, wt}, {1, 1}, {y}});
  g.steps.push_back({"add", 0, {y, bias}, {1, 1}, {z}});
  g.steps.push_back({"nn.relu", 0, {z}, {1}, {r}});
  Buffers buffers = {std::make_shared<const std::vector<uint8_t>>(15 * 4, 0),
                     std::make_shared<const std::vector<uint8_t>>(5 * 4, 0)};
  std::vector<DeviceSpec> devices = {{"llvm", "cpu"}};
  EXPECT_EQ(FuseConvEpilogues(devices, buffers, g), 2);
  // The conv takes the bias and the relu, and writes r.
  const StepSpec& conv = g.steps[0];
  EXPECT_EQ(conv.inputs, (std::vector<int>{x, wt, bias}));
  EXPECT_EQ(conv.outputs, (std::vector<int>{r}));
}

// ONNX HardSwish (nn.hard_swish), SiLU (r * sigmoid(r), operands either way) and a sigmoid after
// a conv and its bias join the conv on the CPU; a sigmoid read elsewhere too stays, and so does
// one of a value that is also an output; a GELU stays. The fused package computes what the
// unfused one does.
TEST(FuseEpilogue, OnnxHardSwishSiluAndSigmoidJoinTheConv) {
  std::mt19937 rng(19);
  const std::string weight = Const(rng, {4, 3, 3, 3}), bias = Const(rng, {1, 4, 1, 1});
  struct Case {
    std::string body;
    int steps;  // after fusion
  };
  const std::vector<Case> cases = {
      {"y = R.nn.hard_swish(a)\n        return y", 1},
      {"s = R.sigmoid(a)\n        y = R.multiply(a, s)\n        return y", 1},
      {"s = R.sigmoid(a)\n        y = R.multiply(s, a)\n        return y", 1},
      {"s = R.sigmoid(a)\n        y = R.multiply(a, s)\n        return (y, s)", 3},
      {"s = R.sigmoid(a)\n        return s", 1},
      {"g = R.nn.gelu(a)\n        return g", 2},
      {"s = R.sigmoid(a)\n        return (s, a)", 2},
  };
  for (const Case& c : cases) {
    ExpectFusedSteps(ConvThen(weight, "a = R.add(h, " + bias + ")\n        " + c.body), c.steps,
                     rng, c.body);
  }
}

// A value of the chain that is a graph output stays: the chain stops before it is eliminated.
TEST(FuseEpilogue, GraphOutputsAreNotFusedAway) {
  std::mt19937 rng(9);
  std::string head = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 5, 5), "float32")):
        c = R.nn.conv2d(x, )" +
                     Const(rng, {3, 2, 3, 3}) +
                     R"()
        a = R.add(c, )" +
                     Const(rng, {1, 3, 1, 1}) +
                     R"()
        r = R.nn.relu(a)
)";
  struct Case {
    std::string ret;
    int steps;  // after fusion
  };
  for (const Case& c : {Case{"r", 1}, Case{"(a, r)", 2}, Case{"(c, r)", 3}}) {
    ir::IRModule mod = Parse(head + "        return " + c.ret + "\n");
    Built plain = Build(mod, false);
    Built fused = Build(mod, true);
    EXPECT_EQ(fused.steps, c.steps) << c.ret << ": " << fused.kernels;
    ExpectFusedComputesThePlain(plain, fused, {1, 2, 5, 5}, rng, 2.0f);
  }
}

// The hardswish chain after a conv (with or without a bias, operands in either order) joins it;
// a chain whose values are graph outputs or read elsewhere, or whose constants differ, stays.
TEST(FuseEpilogue, HardSwishChains) {
  std::mt19937 rng(13);
  const std::string weight = Const(rng, {3, 2, 3, 3}), bias = Const(rng, {1, 3, 1, 1});
  struct Case {
    std::string body;
    int steps;  // after fusion
  };
  const std::string three = "R.const(3.0, \"float32\")";
  const std::vector<Case> cases = {
      {"a = R.add(r, " + three +
           ")\n        k = R.clip(a, min=0.0, max=6.0)\n"
           "        y = R.multiply(r, k)\n        return y",
       1},
      {"a = R.add(" + three +
           ", r)\n        k = R.clip(a, min=0.0, max=6.0)\n"
           "        y = R.multiply(k, r)\n        return y",
       1},
      // Graph outputs inside the chain.
      {"a = R.add(r, " + three +
           ")\n        k = R.clip(a, min=0.0, max=6.0)\n"
           "        y = R.multiply(r, k)\n        return (y, r)",
       4},
      {"a = R.add(r, " + three +
           ")\n        k = R.clip(a, min=0.0, max=6.0)\n"
           "        y = R.multiply(r, k)\n        return (y, a)",
       4},
      {"a = R.add(r, " + three +
           ")\n        k = R.clip(a, min=0.0, max=6.0)\n"
           "        y = R.multiply(r, k)\n        return (y, k)",
       4},
      // A value read outside the chain.
      {"a = R.add(r, " + three +
           ")\n        k = R.clip(a, min=0.0, max=6.0)\n"
           "        y = R.multiply(r, k)\n        z = R.add(y, k)\n        return z",
       5},
      // Other constants.
      {"a = R.add(r, R.const(2.0, \"float32\"))\n        k = R.clip(a, min=0.0, max=6.0)\n"
       "        y = R.multiply(r, k)\n        return y",
       4},
      {"a = R.add(r, " + three +
           ")\n        k = R.clip(a, min=0.0, max=5.0)\n"
           "        y = R.multiply(r, k)\n        return y",
       4},
  };
  for (bool with_bias : {true, false}) {
    for (const Case& c : cases) {
      std::string conv = "R.nn.conv2d(x, " + weight + ", padding=[1, 1, 1, 1])";
      std::string text =
          R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 6, 7), "float32")):
)" +
          (with_bias ? "        h = " + conv + "\n        r = R.add(h, " + bias + ")\n"
                     : "        r = " + conv + "\n") +
          "        " + c.body + "\n";
      ir::IRModule mod = Parse(text);
      Built plain = Build(mod, false);
      Built fused = Build(mod, true);
      EXPECT_EQ(fused.steps, c.steps) << c.body << ": " << fused.kernels;
      EXPECT_EQ(fused.fused, with_bias ? 1 : 0) << c.body << ": " << fused.kernels;
      ExpectFusedComputesThePlain(plain, fused, {1, 2, 6, 7}, rng);
    }
  }
}

// Adds and multiplies by constants after a conv (a batch norm's scale and shift as exporters
// write them, a learnable affine block's of one value for every channel), up to three, then a
// hardswish, join the conv on the CPU in their order; a multiply by a tensor of the conv's whole
// shape, or one whose operand is read elsewhere too, stays, and a fourth stays out. The fused
// package computes what the unfused one does.
TEST(FuseEpilogue, AddsAndMultipliesByConstantsJoinTheConv) {
  std::mt19937 rng(23);
  const std::string weight = Const(rng, {4, 3, 3, 3}), scale = Const(rng, {1, 4, 1, 1}),
                    shift = Const(rng, {4, 1, 1}), whole = Const(rng, {1, 4, 7, 6});
  const std::string one = "R.const(1.5, \"float32\")", other = "R.const([-0.25], \"float32\")";
  struct Case {
    std::string body;
    int steps, affine;  // after fusion: steps, and conv steps with the attribute affine
  };
  const std::vector<Case> cases = {
      {"m = R.multiply(h, " + scale + ")\n        b = R.add(m, " + shift + ")\n" + kHardSwishOfB +
           "        return y",
       1, 1},
      {"m = R.multiply(" + scale + ", h)\n        b = R.add(" + shift + ", m)\n" + kHardSwishOfB +
           "        return y",
       1, 1},
      {"m = R.multiply(h, " + scale + ")\n        return m", 1, 1},
      {"b = R.multiply(h, " + scale + ")\n" + kHardSwishOfB + "        return y", 1, 1},
      // A bias, then a learnable affine block (rank 0 and rank 1 constants of one value).
      {"c = R.add(h, " + shift + ")\n        m = R.multiply(c, " + one +
           ")\n        b = R.add(m, " + other + ")\n" + kHardSwishOfB + "        return y",
       1, 1},
      // A lone bias takes no attribute; a fourth constant stays out.
      {"b = R.add(h, " + shift + ")\n" + kHardSwishOfB + "        return y", 1, 0},
      {"c = R.add(h, " + shift + ")\n        m = R.multiply(c, " + one +
           ")\n        d = R.add(m, " + other + ")\n        e = R.multiply(d, " + scale +
           ")\n        return e",
       2, 1},
      // Not per channel; the conv's result read elsewhere too.
      {"m = R.multiply(h, " + whole + ")\n        return m", 2, 0},
      {"m = R.multiply(h, " + scale + ")\n        return (m, h)", 2, 0},
  };
  for (const Case& c : cases) {
    Built fused = ExpectFusedSteps(ConvThen(weight, c.body), c.steps, rng, c.body);
    EXPECT_EQ(fused.affine, c.affine) << c.body << ": " << fused.kernels;
  }
}

// After a fused activation, up to three adds, multiplies and divides (by the constant) by
// constants join the conv on the CPU: a MobileOne block's hardswish written out, its division by 6
// and its learnable affine block. A division of the constant by the result stays.
TEST(FuseEpilogue, AddsMultipliesAndDividesAfterTheActivationJoinTheConv) {
  std::mt19937 rng(29);
  const std::string weight = Const(rng, {4, 3, 3, 3}), shift = Const(rng, {4, 1, 1});
  const std::string six = "R.const(6.0, \"float32\")", one = "R.const([1.25], \"float32\")",
                    other = "R.const(-0.5, \"float32\")";
  const std::string head = "c = R.add(h, " + shift +
                           ")\n        a = R.add(c, R.const(3.0, \"float32\"))\n"
                           "        k = R.clip(a, min=0.0, max=6.0)\n"
                           "        r = R.multiply(c, k)\n";
  struct Case {
    std::string body;
    int steps, post;  // after fusion
  };
  const std::vector<Case> cases = {
      {"d = R.divide(r, " + six + ")\n        m = R.multiply(d, " + one + ")\n        y = R.add(" +
           other + ", m)\n        return y",
       1, 1},
      {"d = R.divide(r, " + six + ")\n        return d", 1, 1},
      {"d = R.divide(" + six + ", r)\n        return d", 2, 0},
      {"d = R.divide(r, " + six + ")\n        return (d, r)", 2, 0},
  };
  for (const Case& c : cases) {
    Built fused =
        ExpectFusedSteps(ConvThen(weight, head + "        " + c.body), c.steps, rng, c.body);
    EXPECT_EQ(fused.post, c.post) << c.body << ": " << fused.kernels;
  }
}

// A LeakyRelu, or a PReLU on the channel axis with a constant slope of one value per channel or
// of one, joins the conv on the CPU, then maximums and minimums with constants after it (a
// Keras export's LeakyRelu and Max with a floor). A slope of another shape, a slope the run
// gives, a PReLU on another axis, and a maximum whose first operand is a constant holding a zero
// (where +0 against -0 would show the operands' order) stay.
TEST(FuseEpilogue, LeakyReluPReluMaximumsAndMinimumsJoinTheConv) {
  std::mt19937 rng(31);
  const std::string weight = Const(rng, {4, 3, 3, 3}), shift = Const(rng, {4, 1, 1});
  const std::string slope = Const(rng, {4}), floor = "R.const(-0.125, \"float32\")",
                    ceiling = Const(rng, {1, 4, 1, 1}), zero = "R.const([0.0], \"float32\")";
  const std::string biased = "c = R.add(h, " + shift + ")\n        ";
  struct Case {
    std::string body;
    int steps, post;  // after fusion
    std::string activation;
  };
  const std::vector<Case> cases = {
      {"r = R.nn.leakyrelu(c, alpha=0.2)\n        return r", 1, 0, "leaky_relu"},
      {"r = R.nn.leakyrelu(c)\n        return r", 1, 0, "leaky_relu"},
      {"r = R.nn.prelu(c, " + slope + ")\n        return r", 1, 0, "prelu"},
      {"r = R.nn.prelu(c, R.const([0.3], \"float32\"))\n        return r", 1, 0, "prelu"},
      {"r = R.nn.leakyrelu(c, alpha=0.2)\n        m = R.maximum(r, " + floor +
           ")\n        n = R.minimum(" + ceiling + ", m)\n        return n",
       1, 1, "leaky_relu"},
      {"r = R.nn.prelu(c, " + slope + ")\n        m = R.maximum(r, " + zero + ")\n        return m",
       1, 1, "prelu"},
      // Stay: the maximum's constant first and holding a zero; the slope not per channel; the
      // slope an input of the run (p); the prelu's axis not the channels.
      {"r = R.nn.leakyrelu(c, alpha=0.2)\n        m = R.maximum(" + zero + ", r)\n        return m",
       2, 0, "leaky_relu"},
      {"r = R.nn.prelu(c, " + Const(rng, {6}) + ", axis=3)\n        return r", 2, 0, ""},
  };
  for (const Case& c : cases) {
    ir::IRModule mod = ConvThen(weight, biased + c.body);
    Built fused = ExpectFusedSteps(mod, c.steps, rng, c.body);
    EXPECT_EQ(fused.post, c.post) << c.body << ": " << fused.kernels;
    Expected<PackageSpec> spec = LowerFused(mod);
    ASSERT_TRUE(spec) << spec.error().ToString();
    const std::string* act = spec->graphs[0].steps[0].attrs.Get<std::string>("activation");
    EXPECT_EQ(act ? *act : "", c.activation) << c.body;
  }
  // A slope the run gives stays a step of its own.
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 7, 6), "float32"), p: R.Tensor((4,), "float32")):
        h = R.nn.conv2d(x, )" +
                           weight +
                           R"(, padding=[1, 1, 1, 1])
        r = R.nn.prelu(h, p)
        return r
)");
  EXPECT_EQ(Build(mod, true).steps, 2);
}

// On the CPU a residual add (another value of the conv result's shape, ready before the conv)
// joins the conv between its bias and its relu: from a graph input, and from an earlier conv's
// result, in either operand order. A residual that broadcasts, or one computed after the conv,
// stays an add. Every fused package computes what the plain one does.
TEST(FuseEpilogue, ResidualAddsJoinTheConv) {
  std::mt19937 rng(23);
  const std::string w1 = Const(rng, {4, 3, 3, 3}), w2 = Const(rng, {4, 3, 3, 3}),
                    b1 = Const(rng, {1, 4, 1, 1}), b2 = Const(rng, {1, 4, 1, 1});
  struct Case {
    std::string body;
    int steps;     // after fusion
    int residual;  // conv steps with the attribute residual
  };
  const std::string head = "h1 = R.nn.conv2d(x, " + w1 + ", padding=[1, 1, 1, 1])\n        ";
  const std::vector<Case> cases = {
      {"h = R.nn.conv2d(x, " + w2 + ", padding=[1, 1, 1, 1])\n        c = R.add(h, " + b2 +
           ")\n        a = R.add(c, p)\n        r = R.nn.relu(a)\n        return r",
       1, 1},
      {head + "h2 = R.nn.conv2d(x, " + w2 + ", padding=[1, 1, 1, 1])\n        c = R.add(h2, " + b2 +
           ")\n        a = R.add(h1, c)\n        r = R.nn.relu(a)\n        return r",
       2, 1},
      // The first conv's result is the residual of the second, whose own result comes first.
      {head + "c1 = R.add(h1, " + b1 + ")\n        h2 = R.nn.conv2d(x, " + w2 +
           ", padding=[1, 1, 1, 1])\n        a = R.add(c1, h2)\n        return a",
       2, 1},
      // Stay: a residual of shape (1, 4, 1, 1), which broadcasts.
      {"h = R.nn.conv2d(x, " + w2 +
           ", padding=[1, 1, 1, 1])\n        a = R.add(h, q)\n        r = "
           "R.nn.relu(a)\n        return r",
       3, 0},
  };
  for (const Case& c : cases) {
    ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 7, 6), "float32"), p: R.Tensor((1, 4, 7, 6), "float32"), q: R.Tensor((1, 4, 1, 1), "float32")):
        )" + c.body + "\n");
    Built plain = Build(mod, false);
    Built fused = Build(mod, true);
    EXPECT_EQ(fused.steps, c.steps) << c.body << ": " << fused.kernels;
    Expected<PackageSpec> spec = LowerFused(mod);
    ASSERT_TRUE(spec) << spec.error().ToString();
    int residual = 0;
    for (const StepSpec& st : spec->graphs[0].steps)
      residual += st.attrs.Get<int64_t>("residual") != nullptr;
    EXPECT_EQ(residual, c.residual) << c.body;
    std::uniform_real_distribution<float> d(-2, 2);
    std::vector<float> x(3 * 7 * 6), pv(4 * 7 * 6), qv(4);
    for (float& v : x) v = d(rng);
    for (float& v : pv) v = d(rng);
    for (float& v : qv) v = d(rng);
    auto inputs = [&] {
      return std::vector<rt::NamedTensor>{test::Input("x", x, {1, 3, 7, 6}),
                                          test::Input("p", pv, {1, 4, 7, 6}),
                                          test::Input("q", qv, {1, 4, 1, 1})};
    };
    ExpectClose(RunPackage(fused.package, inputs()), RunPackage(plain.package, inputs()));
  }
}

// `body` as the main of a module of inputs x and p (lines of IR text, the first unindented),
// built plain and fused: the fused package's steps run `kernels`, and it computes what the plain
// one does on random inputs.
void ExpectFusedKernelsComputeThePlain(const std::string& body, const rt::Shape& x_shape,
                                       const rt::Shape& p_shape, const std::string& kernels,
                                       std::mt19937& rng) {
  auto type = [](const rt::Shape& shape) {
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return "R.Tensor((" + dims + "), \"float32\")";
  };
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: )" + type(x_shape) +
                           ", p: " + type(p_shape) + R"():
        )" + body + "\n");
  Built plain = Build(mod, false);
  Built fused = Build(mod, true);
  EXPECT_EQ(fused.kernels, kernels) << body;
  std::uniform_real_distribution<float> d(-2, 2);
  auto count = [](const rt::Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return static_cast<size_t>(n);
  };
  std::vector<float> x(count(x_shape)), p(count(p_shape));
  for (float& v : x) v = d(rng);
  for (float& v : p) v = d(rng);
  auto inputs = [&] {
    return std::vector<rt::NamedTensor>{test::Input("x", x, x_shape), test::Input("p", p, p_shape)};
  };
  ExpectClose(RunPackage(fused.package, inputs()), RunPackage(plain.package, inputs()));
}

// On the CPU the epilogue joins the conv through a squeeze or reshape that keeps the images and
// channels (TensorFlow's Conv1D: a conv of height 1, a squeeze of the height, the bias add, the
// activation): the view then ends the chain. A view that moves the channels, a view's result read
// twice, and a residual add after a view stay as they are. Every fused package computes what the
// plain one does, at two images.
TEST(FuseEpilogue, EpiloguesJoinTheConvThroughAViewOfItsChannels) {
  std::mt19937 rng(31);
  const std::string w = Const(rng, {4, 3, 1, 3}), bias = Const(rng, {4, 1}),
                    scale = Const(rng, {1, 4, 1}), flat = Const(rng, {1, 4, 1});
  const std::string conv = "h = R.nn.conv2d(x, " + w + ", padding=[0, 1, 0, 1])\n        ";
  struct Case {
    std::string body;
    std::string kernels;  // after fusion
  };
  const std::vector<Case> cases = {
      {conv + "s = R.squeeze(h, axis=[2])\n        b = R.add(s, " + bias +
           ")\n        r = R.nn.relu(b)\n        return r",
       "nn.conv2d squeeze"},
      {conv + "s = R.reshape(h, (2, 4, 9))\n        m = R.multiply(s, " + scale +
           ")\n        b = R.add(m, " + flat + ")\n" + kHardSwishOfB + "        return y",
       "nn.conv2d reshape"},
      // Stay: the channels moved; the view's result read twice; a residual after the view.
      {conv + "s = R.reshape(h, (4, 2, 9))\n        b = R.add(s, " + Const(rng, {2, 1}) +
           ")\n        return b",
       "nn.conv2d reshape add"},
      {conv + "s = R.squeeze(h, axis=[2])\n        b = R.add(s, " + bias +
           ")\n        return (b, s)",
       "nn.conv2d squeeze add"},
      {conv + "s = R.squeeze(h, axis=[2])\n        b = R.add(s, p)\n        return b",
       "nn.conv2d squeeze add"},
  };
  for (const Case& c : cases) {
    ExpectFusedKernelsComputeThePlain(c.body, {2, 3, 1, 9}, {2, 4, 9}, c.kernels, rng);
  }
}

// A module whose main runs `body` on x (2, 5, 7) (lines of IR text, the first unindented).
ir::IRModule Elementwise(const std::string& body) {
  return Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 5, 7), "float32")):
        )" + body +
               "\n");
}

// On the CPU a transposed conv takes its epilogue as a conv does: a bias and a relu (a decoder's
// upsampling, its batch norm folded into the bias), a per-channel scale, shift and hardswish, a
// residual before a clip, a bias and a sigmoid (a DBNet head's last layer). The fused package
// computes what the plain one does.
TEST(FuseEpilogue, TransposedConvsTakeTheirEpilogues) {
  std::mt19937 rng(43);
  const std::string w = Const(rng, {3, 4, 4, 4}), bias = Const(rng, {1, 4, 1, 1}),
                    scale = Const(rng, {4, 1, 1});
  const std::string up =
      "h = R.nn.conv2d_transpose(x, " + w + ", strides=[2, 2], padding=[1, 1, 1, 1])\n        ";
  struct Case {
    std::string body;
    std::string kernels;  // after fusion
  };
  const std::vector<Case> cases = {
      {up + "b = R.add(h, " + bias + ")\n        r = R.nn.relu(b)\n        return r",
       "nn.conv2d_transpose"},
      {up + "m = R.multiply(h, " + scale + ")\n        b = R.add(m, " + bias + ")\n" +
           kHardSwishOfB + "        return y",
       "nn.conv2d_transpose"},
      {up + "b = R.add(h, p)\n        r = R.clip(b, min=-0.5, max=0.5)\n        return r",
       "nn.conv2d_transpose"},
      {up + "b = R.add(h, " + bias + ")\n        s = R.sigmoid(b)\n        return s",
       "nn.conv2d_transpose"},
  };
  for (const Case& c : cases) {
    ExpectFusedKernelsComputeThePlain(c.body, {2, 3, 5, 6}, {2, 4, 10, 12}, c.kernels, rng);
  }
}

// On the CPU a matmul's bias (one value per column: shape (n), (1, n) or (1, 1, n), either
// operand of the add) joins it, and a relu, clip, sigmoid or SiLU after it too: one
// step, whose values are the plain package's bit for bit (the same float sums, each function its
// kernel's). A constant that is not one per column, a product read twice, a B of one dim, and a
// relu or sigmoid whose input is also an output and a GELU stay as they are.
TEST(FuseEpilogue, AMatmulTakesItsBiasAndActivation) {
  std::mt19937 rng(37);
  const std::string w = Const(rng, {7, 6}), bias = Const(rng, {6}), row = Const(rng, {1, 6}),
                    deep = Const(rng, {1, 1, 6}), whole = Const(rng, {5, 6});
  const std::string mm = "y = R.matmul(x, " + w + ")\n        ";
  struct Case {
    std::string body;
    std::string kernels;  // after fusion
  };
  const std::vector<Case> cases = {
      {mm + "b = R.add(y, " + bias + ")\n        r = R.nn.relu(b)\n        return r", "matmul"},
      {mm + "b = R.add(" + row +
           ", y)\n        r = R.clip(b, min=-0.5, max=0.25)\n        return r",
       "matmul"},
      {mm + "b = R.add(y, " + deep + ")\n        return b", "matmul"},
      {mm + "b = R.add(y, " + whole + ")\n        return b", "matmul add"},
      {mm + "b = R.add(y, " + bias + ")\n        return (b, y)", "matmul add"},
      {"y = R.matmul(x, " + Const(rng, {7}) + ")\n        b = R.add(y, " + Const(rng, {5}) +
           ")\n        return b",
       "matmul add"},
      {mm + "b = R.add(y, " + bias + ")\n        r = R.nn.relu(b)\n        return (r, b)",
       "matmul nn.relu"},
      {mm + "b = R.add(y, " + bias + ")\n        g = R.nn.gelu(b)\n        return g",
       "matmul nn.gelu"},
      {mm + "b = R.add(y, " + bias + ")\n        s = R.sigmoid(b)\n        return (s, b)",
       "matmul sigmoid"},
      {mm + "b = R.add(" + row + ", y)\n        s = R.sigmoid(b)\n        return s", "matmul"},
      {mm + "b = R.add(y, " + bias +
           ")\n        s = R.sigmoid(b)\n        m = R.multiply(s, b)\n        return m",
       "matmul"},
  };
  for (const Case& c : cases) {
    ir::IRModule mod = Elementwise(c.body);
    Built plain = Build(mod, false);
    Built fused = Build(mod, true);
    EXPECT_EQ(fused.kernels, c.kernels) << c.body;
    std::uniform_real_distribution<float> d(-2, 2);
    std::vector<float> x(2 * 5 * 7);
    for (float& v : x) v = d(rng);
    std::vector<std::vector<float>> want =
        RunPackage(plain.package, {test::Input("x", x, {2, 5, 7})});
    std::vector<std::vector<float>> got =
        RunPackage(fused.package, {test::Input("x", x, {2, 5, 7})});
    ASSERT_EQ(got.size(), want.size()) << c.body;
    for (size_t o = 0; o < got.size(); ++o) {
      ASSERT_EQ(got[o].size(), want[o].size()) << c.body;
      for (size_t i = 0; i < got[o].size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[o][i]), std::bit_cast<uint32_t>(want[o][i]))
            << c.body << ": output " << o << ", element " << i;
      }
    }
  }
}

// GELU as exporters write it out of erf becomes one nn.gelu step on the CPU: x * 1/sqrt(2) or
// x / sqrt(2) (the constants as float32 rounds them), + 1, then (x * 0.5) * a, (x * a) * 0.5 or
// x * (a * 0.5), operands in either order. Its values against GELU in double (within the fast
// kernels' tolerance) and against the unfused package. Chains that differ stay as they are.
TEST(FuseEpilogue, GeluWrittenOutOfErfBecomesOneStep) {
  std::mt19937 rng(17);
  const std::string half = "R.const(0.5, \"float32\")", one = "R.const(1.0, \"float32\")";
  const std::string inv = "R.const(0.70710677, \"float32\")",
                    root = "R.const(1.4142135, \"float32\")";
  struct Case {
    std::string body;
    int steps;  // after fusion
  };
  const std::string scaled = "t = R.multiply(x, " + inv + ")\n        e = R.erf(t)\n        ";
  const std::string divided = "t = R.divide(x, " + root + ")\n        e = R.erf(t)\n        ";
  const std::vector<Case> cases = {
      // Keras and TensorFlow's exports: h = x * 0.5, y = h * (1 + erf(x * 0.7071...)).
      {"h = R.multiply(x, " + half + ")\n        " + scaled + "a = R.add(" + one +
           ", e)\n        y = R.multiply(h, a)\n        return y",
       1},
      // PyTorch's: y = (x * (erf(x / 1.4142...) + 1)) * 0.5.
      {divided + "a = R.add(e, " + one +
           ")\n        m = R.multiply(x, a)\n        y = R.multiply(m, " + half +
           ")\n        return y",
       1},
      // y = x * ((1 + erf(...)) * 0.5), the multiplies' operands the other way round.
      {"t = R.multiply(" + inv + ", x)\n        e = R.erf(t)\n        a = R.add(e, " + one +
           ")\n        q = R.multiply(" + half +
           ", a)\n        y = R.multiply(q, x)\n        return y",
       1},
      // Stay: another scale; an add of 2; a value between that is also an output; a half
      // of another value.
      {"t = R.multiply(x, R.const(0.7, \"float32\"))\n        e = R.erf(t)\n        a = R.add(e, " +
           one + ")\n        m = R.multiply(x, a)\n        y = R.multiply(m, " + half +
           ")\n        return y",
       5},
      {divided +
           "a = R.add(e, R.const(2.0, \"float32\"))\n        m = R.multiply(x, a)\n        y = "
           "R.multiply(m, " +
           half + ")\n        return y",
       5},
      {divided + "a = R.add(e, " + one +
           ")\n        m = R.multiply(x, a)\n        y = R.multiply(m, " + half +
           ")\n        return (y, a)",
       5},
      {"r = R.erf(x)\n        h = R.multiply(r, " + half + ")\n        " + scaled + "a = R.add(" +
           one + ", e)\n        y = R.multiply(h, a)\n        return y",
       6},
  };
  for (const Case& c : cases) {
    ir::IRModule mod = Elementwise(c.body);
    Built plain = Build(mod, false);
    Built fused = Build(mod, true);
    EXPECT_EQ(fused.steps, c.steps) << c.body << ": " << fused.kernels;
    EXPECT_EQ(fused.kernels.find("nn.gelu") != std::string::npos, c.steps == 1)
        << c.body << ": " << fused.kernels;
    ExpectFusedComputesThePlain(plain, fused, {2, 5, 7}, rng);
    if (c.steps != 1) continue;
    std::vector<float> x(70);
    std::uniform_real_distribution<float> d(-6, 6);
    for (float& v : x) v = d(rng);
    std::vector<std::vector<float>> got =
        RunPackage(fused.package, {test::Input("x", x, {2, 5, 7})});
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      double v = x[i], want = v / 2 * (1 + std::erf(v / std::sqrt(2.0)));
      EXPECT_NEAR(got[0][i], want, 1e-5 + 1e-4 * std::abs(want)) << c.body << ", x " << v;
    }
  }
}

// Only float32 convs fuse.
TEST(FuseEpilogue, OtherElementTypesStay) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float64")):
        c = R.nn.conv2d(x, R.const([[[[1.0, 2.0]]], [[[3.0, -1.0]]]], "float64"))
        a = R.add(c, R.const([[[[1.0]], [[2.0]]]], "float64"))
        r = R.nn.relu(a)
        return r
)");
  EXPECT_EQ(Build(mod, true).steps, 3);
}

}  // namespace
}  // namespace quilt::compiler
