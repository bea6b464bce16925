// Chains of CPU convolutions in the channel-blocked layout (targets/block_layout.h): which convs
// run blocked, where the layout's transforms go, that the weights are laid out in place of their
// values, and that the package computes what the NCHW one does, its outputs under their names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <utility>

#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt::compiler {
namespace {

std::vector<float> Random(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// `R.const(...)` of v in shape dims.
std::string Const(const std::vector<float>& v, const std::vector<int64_t>& dims) {
  std::ostringstream out;
  out.precision(9);
  size_t at = 0;
  std::function<void(size_t)> list = [&](size_t d) {
    out << "[";
    for (int64_t i = 0; i < dims[d]; ++i) {
      if (i) out << ", ";
      if (d + 1 == dims.size()) {
        out << v[at++];
      } else {
        list(d + 1);
      }
    }
    out << "]";
  };
  out << "R.const(";
  list(0);
  out << ", \"float32\")";
  return out.str();
}

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A pointwise conv with a bias and relu, a depthwise conv of stride 2 (also a graph output), a
// pointwise conv with the depthwise one's result as its residual, another, a dense 3x3 (blocked
// Winograd on a batch of 3, 27 tiles; on one image the direct blocked kernel with AVX-512,
// Winograd without), a depthwise 3x3
// and a last pointwise conv (a graph output): seven convs, three values crossing the group's
// edge. Beside them a conv of 24 output channels and a dense 5x5 conv reading the depthwise
// conv's result, which stay NCHW, and a dense 3x3 conv of stride 2 reading it, which joins the
// chain (the direct blocked kernel). A symbolic batch.
std::string Module(std::mt19937& rng) {
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  return R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 16, 9, 11), "float32")):
        a = R.nn.conv2d(x, )" +
         c({32, 16, 1, 1}) + R"()
        a2 = R.add(a, )" +
         c({1, 32, 1, 1}) + R"()
        a3 = R.nn.relu(a2)
        dw = R.nn.conv2d(a3, )" +
         c({32, 1, 3, 3}) + R"(, strides=[2, 2], padding=[1, 1, 1, 1], groups=32)
        d = R.nn.conv2d(dw, )" +
         c({32, 32, 1, 1}) + R"()
        e = R.add(d, dw)
        f = R.nn.conv2d(e, )" +
         c({32, 32, 1, 1}) + R"()
        f2 = R.nn.conv2d(f, )" +
         c({32, 32, 3, 3}) + R"(, padding=[1, 1, 1, 1])
        h = R.nn.conv2d(f2, )" +
         c({32, 1, 3, 3}) + R"(, padding=[1, 1, 1, 1], groups=32)
        k = R.nn.conv2d(h, )" +
         c({16, 32, 1, 1}) + R"()
        g = R.nn.conv2d(x, )" +
         c({24, 16, 1, 1}) + R"()
        m = R.nn.conv2d(dw, )" +
         c({16, 32, 3, 3}) + R"(, strides=[2, 2], padding=[1, 1, 1, 1])
        m5 = R.nn.conv2d(dw, )" +
         c({16, 32, 5, 5}) + R"(, padding=[2, 2, 2, 2])
        return (k, dw, g, m, m5)
)";
}

std::vector<rt::OwnedTensor> RunPackage(const std::vector<uint8_t>& package, std::vector<float>& x,
                                        const std::vector<int64_t>& shape, int threads) {
  std::unique_ptr<rt::Session> s;
  rt::SessionOptions options;
  options.threads = threads;
  EXPECT_TRUE(rt::Session::Create(test::LoadPackage(package), options, &s).ok());
  if (!s) return {};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run({test::Input("x", x, shape)}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

// The module compiled with the layout off (plain) and on (blocked); a failure is reported and
// gives nothing.
std::optional<std::pair<Compiled, Compiled>> CompileBoth(const ir::IRModule& mod) {
  CompileOptions options;
  options.lower.block_layout = false;
  Expected<Compiled> plain = Compile(mod, options);
  options.lower.block_layout = true;
  Expected<Compiled> blocked = Compile(mod, options);
  if (!plain || !blocked) {
    ADD_FAILURE() << (plain ? blocked.error().ToString() : plain.error().ToString());
    return std::nullopt;
  }
  return std::make_pair(std::move(*plain), std::move(*blocked));
}

// The blocked package computes what the NCHW one does, its outputs under the same names: input x
// of `image` dims (after the batch) at batches `batches`, on one thread and two.
void ExpectValuesOfPlain(const Compiled& plain, const Compiled& blocked, std::mt19937& rng,
                         const std::vector<int64_t>& image, std::vector<int64_t> batches = {1, 2}) {
  for (int64_t n : batches) {
    std::vector<int64_t> shape = {n};
    shape.insert(shape.end(), image.begin(), image.end());
    std::vector<float> x = Random(rng, size_t(Count(shape)));
    std::vector<rt::OwnedTensor> want = RunPackage(plain.package, x, shape, 1);
    ASSERT_FALSE(want.empty());
    for (int threads : {1, 2}) {
      std::vector<rt::OwnedTensor> got = RunPackage(blocked.package, x, shape, threads);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        EXPECT_EQ(got[o].name, want[o].name);
        EXPECT_EQ(got[o].shape, want[o].shape);
        std::vector<float> a = test::Floats(got[o]), b = test::Floats(want[o]);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          ASSERT_NEAR(a[i], b[i], 1e-5 + 1e-5 * std::abs(b[i]))
              << "output " << want[o].name << ", batch " << n << ", " << threads
              << " thread(s), element " << i;
        }
      }
    }
  }
}

// The kernels of the package's main graph that are convs, pools, multiplies or layout transforms,
// in order.
std::vector<std::string> ChainKernels(const std::vector<uint8_t>& package,
                                      const std::vector<std::string>& parts = {
                                          "conv", "layout", "pool", "multiply"}) {
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(package);
  std::vector<std::string> kernels;
  if (!p) return kernels;
  for (const pkg::Step* s : *p->root().graphs()->Get(0)->steps()) {
    std::string k = s->kernel()->str();
    for (const std::string& part : parts) {
      if (k.find(part) != std::string::npos) {
        kernels.push_back(k);
        break;
      }
    }
  }
  return kernels;
}

TEST(BlockLayout, ConvChainsRunBlockedWithTransformsAtTheirEdges) {
  std::mt19937 rng(71);
  ir::IRModule mod = testing::Parse(Module(rng));
  std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(mod);
  ASSERT_TRUE(both);
  const Compiled &plain = both->first, &blocked = both->second;

  // The steps: the seven convs of the chain and the strided dense 3x3 conv blocked, x blocked
  // once before them, the three results read outside (graph outputs) back in NCHW right after
  // their convs; the 24-channel conv and the 5x5 conv not.
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(blocked.package);
  ASSERT_TRUE(p);
  const pkg::Graph& g = *p->root().graphs()->Get(0);
  std::vector<std::string> kernels;
  for (const pkg::Step* s : *g.steps()) {
    std::string k = s->kernel()->str();
    if (k.find("conv") != std::string::npos || k.find("layout") != std::string::npos) {
      kernels.push_back(k);
    }
    if (k == "nn.conv2d_nchw16c") {
      const pkg::Value* w = g.values()->Get(static_cast<uint32_t>(s->inputs()->Get(1)));
      EXPECT_EQ(w->kind(), pkg::ValueKind::Constant);
      EXPECT_EQ(w->dims()->size(), 1u) << "the weight laid out for the blocked kernel";
      EXPECT_EQ(g.values()->Get(static_cast<uint32_t>(s->outputs()->Get(0)))->dims()->size(), 5u);
    }
  }
  EXPECT_EQ(kernels,
            (std::vector<std::string>{"layout_to_nchw16c", "nn.conv2d_nchw16c", "nn.conv2d_nchw16c",
                                      "layout_from_nchw16c", "nn.conv2d_nchw16c",
                                      "nn.conv2d_nchw16c", "nn.conv2d_nchw16c", "nn.conv2d_nchw16c",
                                      "nn.conv2d_nchw16c", "layout_from_nchw16c", "nn.conv2d",
                                      "nn.conv2d_nchw16c", "layout_from_nchw16c", "nn.conv2d"}));
  EXPECT_LE(blocked.package.size(), plain.package.size() + 4096)
      << "the laid-out weights replace the weights; they do not sit beside them";

  // The same values as the NCHW package, under the same names, at symbolic batches of 1 and 3,
  // on one thread and two.
  ExpectValuesOfPlain(plain, blocked, rng, {16, 9, 11}, {1, 3});
}

// A ResNet's stem: a first layer of NCHW data (7x7, stride 2), a max pool, then pointwise convs.
// The pool runs on blocked data between them (nn.max_pool2d_nchw16c), so the whole chain is one
// group: no transform before the pool's reader, one after the last conv; the values are the NCHW
// package's.
TEST(BlockLayout, AMaxPoolBetweenConvsRunsBlocked) {
  std::mt19937 rng(73);
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  ir::IRModule mod = testing::Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 21, 46), "float32")):
        a = R.nn.conv2d(x, )" + c({32, 3, 7, 7}) +
                                    R"(, strides=[2, 2], padding=[3, 3, 3, 3])
        b = R.nn.relu(a)
        p = R.nn.max_pool2d(b, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
        d = R.nn.conv2d(p, )" + c({32, 32, 1, 1}) +
                                    R"()
        e = R.nn.conv2d(d, )" + c({16, 32, 1, 1}) +
                                    R"()
        return e
)");
  std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(mod);
  ASSERT_TRUE(both);
  const Compiled &plain = both->first, &blocked = both->second;
  EXPECT_EQ(
      ChainKernels(blocked.package),
      (std::vector<std::string>{"nn.conv2d_nchw16c", "nn.max_pool2d_nchw16c", "nn.conv2d_nchw16c",
                                "nn.conv2d_nchw16c", "layout_from_nchw16c"}));
  ExpectValuesOfPlain(plain, blocked, rng, {3, 21, 46});
}

// Squeeze-and-excite blocks (a global average pool, two small convs, a gate multiplying the
// data), as MobileNetV3 and PP-LCNet end their stages: the pool reads the chain's blocked data
// (its (N, C, 1, 1) result the same floats in either layout) and the gate multiplies blocked data
// (by a gate of (N, C, 1, 1), multiply's second operand and then its first), so the chain goes on
// through them with no transform; the small convs on the pooled values stay NCHW. A gate whose
// result leaves the chain (for a sigmoid) while its data is there in NCHW anyway (a graph
// output) stays a multiply. The values are the NCHW package's at batch 1 and 2, 1 and 2 threads.
TEST(BlockLayout, SqueezeAndExciteBlocksRunBlocked) {
  std::mt19937 rng(74);
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  ir::IRModule mod = testing::Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 12, 10), "float32")):
        a = R.nn.conv2d(x, )" + c({32, 3, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1])
        m = R.nn.adaptive_avg_pool2d(a, output_size=[1, 1])
        s = R.nn.conv2d(m, )" + c({8, 32, 1, 1}) +
                                    R"()
        r = R.nn.relu(s)
        t = R.nn.conv2d(r, )" + c({32, 8, 1, 1}) +
                                    R"()
        g = R.nn.hard_sigmoid(t, alpha=0.2, beta=0.5)
        y = R.multiply(a, g)
        d = R.nn.conv2d(y, )" + c({32, 1, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1], groups=32)
        m2 = R.nn.adaptive_avg_pool2d(d, output_size=[1, 1])
        g2 = R.sigmoid(m2)
        k = R.multiply(g2, d)
        e = R.nn.conv2d(k, )" + c({16, 32, 1, 1}) +
                                    R"()
        f = R.nn.adaptive_avg_pool2d(e, output_size=[1, 1])
        h = R.sigmoid(f)
        q = R.multiply(e, h)
        z = R.sigmoid(q)
        return (z, e)
)");
  std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(mod);
  ASSERT_TRUE(both);
  const Compiled &plain = both->first, &blocked = both->second;
  // (The NCHW multiply joins the sigmoid after it in one fused step, its gate broadcast.)
  EXPECT_EQ(ChainKernels(blocked.package, {"conv", "layout", "pool", "multiply", "fused"}),
            (std::vector<std::string>{
                "nn.conv2d_nchw16c", "nn.global_avg_pool2d_nchw16c", "nn.conv2d", "nn.conv2d",
                "multiply_channels_nchw16c", "nn.conv2d_nchw16c", "nn.global_avg_pool2d_nchw16c",
                "multiply_channels_nchw16c", "nn.conv2d_nchw16c", "layout_from_nchw16c",
                "nn.global_avg_pool2d_nchw16c", "fused_elementwise"}));
  ExpectValuesOfPlain(plain, blocked, rng, {3, 12, 10});
}

// A YOLO-style block (a conv, a split along the channels into two halves, two 3x3 convs on one
// of them, an add of it and their result, a concat of the three, a conv), then a nearest 2x
// upsampling, a split at given channels and a subtract of the parts before a last conv: the
// split, add, concat, resize and subtract run on the blocked values (the concat's and splits'
// axis that of the blocks, the parts counted in blocks; the resize of the data's NCHW view), so
// the whole is one chain: one transform in, one out.
// The values are the NCHW package's at batch 1 and 2, 1 and 2 threads.
TEST(BlockLayout, SplitsConcatsAndSumsJoinTheChain) {
  std::mt19937 rng(75);
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  ir::IRModule mod = testing::Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 16, 10, 12), "float32")):
        a = R.nn.conv2d(x, )" + c({32, 16, 1, 1}) +
                                    R"()
        p = R.split(a, [], sections=2, axis=1)
        s0 = p[0]
        s1 = p[1]
        b = R.nn.conv2d(s1, )" + c({16, 16, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1])
        d = R.nn.conv2d(b, )" + c({16, 16, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1])
        r = R.nn.relu(d)
        e = R.add(s1, r)
        f = R.concat((s0, s1, e), axis=-3)
        g = R.nn.conv2d(f, )" + c({48, 48, 1, 1}) +
                                    R"()
        gr = R.image.resize(g, R.const([], "float32"), R.const([1.0, 1.0, 2.0, 2.0], "float32"), R.const([], "int64"), mode="nearest", nearest_mode="floor", coordinate_transformation_mode="asymmetric")
        q = R.split(gr, indices_or_sections=[32], axis=1)
        q0 = q[0]
        q1 = q[1]
        h = R.nn.conv2d(q1, )" + c({32, 16, 1, 1}) +
                                    R"()
        t = R.subtract(q0, h)
        k = R.nn.conv2d(t, )" + c({16, 32, 1, 1}) +
                                    R"()
        return k
)");
  std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(mod);
  ASSERT_TRUE(both);
  const Compiled &plain = both->first, &blocked = both->second;
  EXPECT_EQ(
      ChainKernels(blocked.package,
                   {"conv", "layout", "split", "concat", "add", "subtract", "resize"}),
      (std::vector<std::string>{
          "layout_to_nchw16c", "nn.conv2d_nchw16c", "split", "nn.conv2d_nchw16c",
          "nn.conv2d_nchw16c", "add", "concat", "nn.conv2d_nchw16c", "image.resize2d_nchw16c",
          "split", "nn.conv2d_nchw16c", "subtract", "nn.conv2d_nchw16c", "layout_from_nchw16c"}));
  ExpectValuesOfPlain(plain, blocked, rng, {16, 10, 12});
}

// A chain of four convs that pays alone, joined through a resize and an add to values that cross
// its edge (another input, a result read by a conv of 24 channels and returned) into a group
// that does not: the resize and add leave the group, and the four convs run blocked without
// them (one transform in, one out, before the resize).
TEST(BlockLayout, AChainThatPaysIsKeptFromAGroupThatDoesNot) {
  std::mt19937 rng(77);
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  ir::IRModule mod = testing::Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64, 8, 8), "float32"), w: R.Tensor(("n", 64, 16, 16), "float32")):
        a = R.nn.conv2d(x, )" + c({64, 64, 1, 1}) +
                                    R"()
        b = R.nn.conv2d(a, )" + c({64, 64, 1, 1}) +
                                    R"()
        d = R.nn.conv2d(b, )" + c({64, 64, 1, 1}) +
                                    R"()
        e = R.nn.conv2d(d, )" + c({64, 64, 1, 1}) +
                                    R"()
        u = R.image.resize(e, R.const([], "float32"), R.const([1.0, 1.0, 2.0, 2.0], "float32"), R.const([], "int64"), mode="nearest", nearest_mode="floor", coordinate_transformation_mode="asymmetric")
        q = R.add(u, w)
        k = R.nn.conv2d(q, )" + c({24, 64, 1, 1}) +
                                    R"()
        return (k, q)
)");
  std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(mod);
  ASSERT_TRUE(both);
  EXPECT_EQ(ChainKernels(both->second.package, {"conv", "layout", "add", "resize"}),
            (std::vector<std::string>{"layout_to_nchw16c", "nn.conv2d_nchw16c", "nn.conv2d_nchw16c",
                                      "nn.conv2d_nchw16c", "nn.conv2d_nchw16c",
                                      "layout_from_nchw16c", "image.resize", "add", "nn.conv2d"}));
}

// A chain of four pointwise convs over a plane of 8 x 8 runs blocked where its convs do at least
// 100 multiply-adds for each element transformed at its edge: of 64 channels (4 x 64 x 64 x 64
// against 2 x 64 x 64 elements, 128 each), not of 16 (32 each; it passed the count of convs and
// crossings alone). A symbolic batch: the rule counts an image.
TEST(BlockLayout, ChainsOfFewMultiplyAddsAnElementStayNchw) {
  for (int64_t channels : {16, 64}) {
    std::mt19937 rng(78);
    auto c = [&](std::vector<int64_t> dims) {
      return Const(Random(rng, size_t(Count(dims))), dims);
    };
    const std::string ch = std::to_string(channels);
    std::string text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", )" +
                       ch + R"(, 8, 8), "float32")):
        a = R.nn.conv2d(x, )" +
                       c({channels, channels, 1, 1}) + R"()
        b = R.nn.conv2d(a, )" +
                       c({channels, channels, 1, 1}) + R"()
        d = R.nn.conv2d(b, )" +
                       c({channels, channels, 1, 1}) + R"()
        e = R.nn.conv2d(d, )" +
                       c({channels, channels, 1, 1}) + R"()
        return e
)";
    std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(testing::Parse(text));
    ASSERT_TRUE(both);
    const std::vector<std::string> want =
        channels == 64
            ? std::vector<std::string>{"layout_to_nchw16c", "nn.conv2d_nchw16c",
                                       "nn.conv2d_nchw16c", "nn.conv2d_nchw16c",
                                       "nn.conv2d_nchw16c", "layout_from_nchw16c"}
            : std::vector<std::string>{"nn.conv2d", "nn.conv2d", "nn.conv2d", "nn.conv2d"};
    EXPECT_EQ(ChainKernels(both->second.package), want) << channels << " channels";
  }
}

// Channel counts not a multiple of 16 run blocked over padded blocks (the last block's lanes past
// them zeros, or values no conv reads): a pointwise conv of 24 input channels to 56 with a bias
// and relu (its weight and bias padded to 64 channels), a depthwise 3x3 over the 56 (padded
// groups), a pointwise conv of 56 to 56 plus the same bias (its constant read by both convs:
// padded as a copy for each), a squeeze-and-excite block (the mean of 56
// channels, NCHW convs, a gate of 56), a pointwise conv to 28 (a padding of 4: at most 15%, a
// dense conv's most) with a prelu of a slope per channel and a divide by a value per channel
// after it (padded with ones), a nearest 2x upsampling of the 28 and a 3x3 conv of 28 -> 28
// (back to 28 NCHW channels after it). Its reader, a pointwise conv to 24 channels (a padding of
// a third), stays NCHW. The values are the NCHW package's at batch 1 and 2, 1 and 2 threads.
TEST(BlockLayout, ChannelsNotAMultipleOf16RunOverPaddedBlocks) {
  std::mt19937 rng(79);
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  std::vector<float> divisor = Random(rng, 28);
  for (float& v : divisor) v = v < 0 ? v - 0.5f : v + 0.5f;  // 0.5 or more from 0
  ir::IRModule mod = testing::Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 24, 9, 11), "float32")):
        bias = )" + c({1, 56, 1, 1}) +
                                    R"(
        a = R.nn.conv2d(x, )" + c({56, 24, 1, 1}) +
                                    R"()
        a2 = R.add(a, bias)
        a4 = R.nn.relu(a2)
        d = R.nn.conv2d(a4, )" + c({56, 1, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1], groups=56)
        e = R.nn.conv2d(d, )" + c({56, 56, 1, 1}) +
                                    R"()
        e2 = R.add(e, bias)
        m = R.nn.adaptive_avg_pool2d(e2, output_size=[1, 1])
        s = R.nn.conv2d(m, )" + c({8, 56, 1, 1}) +
                                    R"()
        r = R.nn.relu(s)
        t = R.nn.conv2d(r, )" + c({56, 8, 1, 1}) +
                                    R"()
        g = R.sigmoid(t)
        y = R.multiply(e2, g)
        p = R.nn.conv2d(y, )" + c({28, 56, 1, 1}) +
                                    R"()
        p2 = R.nn.prelu(p, )" + c({28}) +
                                    R"(, axis=1)
        p3 = R.divide(p2, )" + Const(divisor, {1, 28, 1, 1}) +
                                    R"()
        u = R.image.resize(p3, R.const([], "float32"), R.const([1.0, 1.0, 2.0, 2.0], "float32"), R.const([], "int64"), mode="nearest", nearest_mode="floor", coordinate_transformation_mode="asymmetric")
        k = R.nn.conv2d(u, )" + c({28, 28, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1])
        z = R.nn.conv2d(k, )" + c({24, 28, 1, 1}) +
                                    R"()
        return z
)");
  std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(mod);
  ASSERT_TRUE(both);
  const Compiled &plain = both->first, &blocked = both->second;
  EXPECT_EQ(ChainKernels(blocked.package, {"conv", "layout", "pool", "multiply", "resize"}),
            (std::vector<std::string>{"layout_to_nchw16c", "nn.conv2d_nchw16c", "nn.conv2d_nchw16c",
                                      "nn.conv2d_nchw16c", "nn.global_avg_pool2d_nchw16c",
                                      "nn.conv2d", "nn.conv2d", "multiply_channels_nchw16c",
                                      "nn.conv2d_nchw16c", "image.resize2d_nchw16c",
                                      "nn.conv2d_nchw16c", "layout_from_nchw16c", "nn.conv2d"}));
  // The padded steps' attributes and constants.
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(blocked.package);
  ASSERT_TRUE(p);
  const pkg::Graph& graph = *p->root().graphs()->Get(0);
  std::vector<std::string> convs;
  for (const pkg::Step* step : *graph.steps()) {
    if (step->kernel()->str() != "nn.conv2d_nchw16c") continue;
    std::string seen;
    for (uint32_t i = 2; i < step->inputs()->size(); ++i) {
      const pkg::Value* v = graph.values()->Get(static_cast<uint32_t>(step->inputs()->Get(i)));
      seen += std::to_string(v->byte_size() / 4) + " ";
    }
    convs.push_back(seen);
  }
  // a: a bias of 64; d: none; e: a bias of 64; p: a slope and a divisor of 32; k: none.
  EXPECT_EQ(convs, (std::vector<std::string>{"64 ", "", "64 ", "32 32 ", ""}));
  ExpectValuesOfPlain(plain, blocked, rng, {24, 9, 11});
}

// quiltc --cpu-winograd-tile 4 (LowerOptions::winograd_tile): the blocked dense 3x3 convs of unit
// strides ask for F(4x4, 3x3) (their winograd_tile attribute), the others (1x1, a 3x3 of stride 2,
// a depthwise 3x3) ask nothing, nor does any step by default. The package's values are the NCHW
// package's within F(4x4)'s rounding, which follows the sums' terms rather than each result: within
// 5e-6 of the largest magnitude of the output (of 30 and 230 here; the most seen 2.2e-6 of it, the
// F(2x2) package's 4.3e-7), and not the F(2x2) package's bits (its 20 x 20 convs ran F(4x4)).
// Images of 20 x 20.
TEST(BlockLayout, AWinogradTileOf4IsAskedOfTheDense3x3Convs) {
  std::mt19937 rng(93);
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  ir::IRModule mod = testing::Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 32, 20, 20), "float32")):
        a = R.nn.conv2d(x, )" + c({32, 32, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1])
        a2 = R.nn.relu(a)
        b = R.nn.conv2d(a2, )" + c({48, 32, 1, 1}) +
                                    R"()
        d = R.nn.conv2d(b, )" + c({48, 1, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1], groups=48)
        e = R.nn.conv2d(d, )" + c({32, 48, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1])
        f = R.nn.conv2d(e, )" + c({32, 32, 3, 3}) +
                                    R"(, strides=[2, 2], padding=[1, 1, 1, 1])
        g = R.nn.conv2d(f, )" + c({16, 32, 1, 1}) +
                                    R"()
        return (e, g)
)");
  std::optional<std::pair<Compiled, Compiled>> both = CompileBoth(mod);
  ASSERT_TRUE(both);
  CompileOptions options;
  options.lower.winograd_tile = 4;
  Expected<Compiled> four = Compile(mod, options);
  ASSERT_TRUE(four) << four.error().ToString();
  // Each blocked conv's winograd_tile (0: none), in the order of the steps.
  auto tiles = [](const std::vector<uint8_t>& package) {
    std::vector<int64_t> seen;
    std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(package);
    if (!p) return seen;
    for (const pkg::Step* step : *p->root().graphs()->Get(0)->steps()) {
      if (step->kernel()->str() == "nn.conv2d_nchw16c")
        seen.push_back(rt::AttrView(step->attrs()).Int("winograd_tile", 0));
    }
    return seen;
  };
  EXPECT_EQ(tiles(four->package), (std::vector<int64_t>{4, 0, 0, 4, 0, 0}));
  EXPECT_EQ(tiles(both->second.package), (std::vector<int64_t>{0, 0, 0, 0, 0, 0}));
  for (int64_t n : {1, 2}) {
    const std::vector<int64_t> shape = {n, 32, 20, 20};
    std::vector<float> x = Random(rng, size_t(Count(shape)));
    std::vector<rt::OwnedTensor> want = RunPackage(both->first.package, x, shape, 1);
    std::vector<rt::OwnedTensor> f2 = RunPackage(both->second.package, x, shape, 1);
    ASSERT_EQ(want.size(), 2u);
    ASSERT_EQ(f2.size(), 2u);
    for (int threads : {1, 2}) {
      std::vector<rt::OwnedTensor> got = RunPackage(four->package, x, shape, threads);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        EXPECT_EQ(got[o].name, want[o].name);
        EXPECT_EQ(got[o].shape, want[o].shape);
        std::vector<float> a = test::Floats(got[o]), b = test::Floats(want[o]);
        ASSERT_EQ(a.size(), b.size());
        float scale = 0;
        for (float v : b) scale = std::max(scale, std::abs(v));
        for (size_t i = 0; i < a.size(); ++i) {
          ASSERT_NEAR(a[i], b[i], 5e-6 * scale)
              << "output " << want[o].name << ", batch " << n << ", " << threads
              << " thread(s), element " << i << " (the output's largest magnitude " << scale << ")";
        }
        EXPECT_NE(a, test::Floats(f2[o])) << "output " << want[o].name << ", batch " << n;
      }
    }
  }
}

// A lone conv, and a chain whose every conv has a value crossing its edge, stay NCHW: the
// transforms would cost what blocking saves.
TEST(BlockLayout, LoneConvsStayNchw) {
  std::mt19937 rng(72);
  auto c = [&](std::vector<int64_t> dims) { return Const(Random(rng, size_t(Count(dims))), dims); };
  ir::IRModule mod = testing::Parse(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 16, 8, 8), "float32")):
        a = R.nn.conv2d(x, )" + c({16, 16, 3, 3}) +
                                    R"(, padding=[1, 1, 1, 1])
        b = R.nn.relu(a)
        d = R.nn.conv2d(b, )" + c({32, 16, 1, 1}) +
                                    R"()
        e = R.sigmoid(d)
        return (a, e)
)");
  CompileOptions options;
  options.lower.block_layout = true;
  Expected<Compiled> compiled = Compile(mod, options);
  ASSERT_TRUE(compiled) << compiled.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(compiled->package);
  ASSERT_TRUE(p);
  for (const pkg::Step* s : *p->root().graphs()->Get(0)->steps()) {
    EXPECT_EQ(s->kernel()->str().find("nchw16c"), std::string::npos) << s->kernel()->str();
  }
}

}  // namespace
}  // namespace quilt::compiler
