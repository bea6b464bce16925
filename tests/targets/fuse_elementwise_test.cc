// Elementwise fusion (targets/fuse_elementwise.h): which steps join (the package's dispatch steps
// and their members), and the fused steps compute what the unfused ones do, both as OpenCL C
// (tests/targets/opencl_emit_test.cc) and with the CPU's fused_elementwise kernel, which runs
// the members' own kernels (here: the package's OpenCL device run by the opaque test device,
// which runs each step with its op's host kernel).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "quilt/package_generated.h"
#include "runtime/src/kernel.h"
#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt::compiler {
namespace {

// swish x * sigmoid(x) (x read twice, from outside); a normalization tail with broadcast inputs;
// a bool between (where of a comparison) and an integer one (astype there and back); a value
// read twice by one step; a value that is also a graph output (m: not fused); a value read by two
// steps (e: not fused); producers of a smaller shape that their reader broadcasts (p, and a
// squeeze-excite scale hs: fused; q, of 4 members: not); attributes of members (clip's bounds,
// leakyrelu's alpha, hard_sigmoid's).
constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 6), "float32"), mean: R.Tensor(("n", 4, 1), "float32"), rstd: R.Tensor(("n", 4, 1), "float32"), gamma: R.Tensor((6,), "float32"), g: R.Tensor((6,), "float32"), se: R.Tensor((1, 4, 1), "float32")):
        s = R.sigmoid(x)
        swish = R.multiply(x, s)
        d = R.subtract(x, mean)
        dn = R.multiply(d, rstd)
        dg = R.multiply(dn, gamma)
        norm = R.add(dg, R.const(0.25, "float32"))
        c = R.greater(x, R.const(0.0, "float32"))
        xs = R.multiply(x, R.const(0.1, "float32"))
        w = R.where(c, x, xs)
        i = R.astype(w, dtype="int32")
        i2 = R.add(i, R.const(3, "int32"))
        f = R.astype(i2, dtype="float32")
        t = R.add(x, R.const(1.0, "float32"))
        sq = R.multiply(t, t)
        cl = R.clip(sq, min=0.5, max=4.0)
        lr = R.nn.leakyrelu(cl, alpha=0.2)
        m = R.exp(x)
        ml = R.log(m)
        e = R.abs(x)
        e1 = R.negative(e)
        e2 = R.sqrt(e)
        p = R.sigmoid(g)
        xp = R.add(x, p)
        hs = R.nn.hard_sigmoid(se, alpha=0.25, beta=0.4)
        xh = R.multiply(x, hs)
        q1 = R.exp(g)
        q2 = R.negative(q1)
        q3 = R.abs(q2)
        q4 = R.sqrt(q3)
        xq = R.add(x, q4)
        return (swish, norm, f, lr, m, ml, e1, e2, xp, xh, xq)
)";

// The package's dispatch steps as "op" or "fused_elementwise[a,b,...]", in order.
std::vector<std::string> Dispatches(const std::vector<uint8_t>& package) {
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(package.data(), package.size(), &p);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<std::string> out;
  if (!p) return out;
  for (const pkg::Step* step : *p->root().graphs()->Get(0)->steps()) {
    if (step->kind() != pkg::StepKind::Dispatch) continue;
    std::string op = step->op()->str();
    if (op == "fused_elementwise") {
      rt::AttrView attrs(step->attrs());
      std::string members;
      for (std::string_view m : attrs.Strs("ops")) {
        members += (members.empty() ? "" : ",") + std::string(m);
      }
      op += "[" + members + "]";
    }
    out.push_back(op);
  }
  return out;
}

std::vector<uint8_t> Build(const char* model, std::vector<std::string> devices, bool fuse) {
  CompileOptions options;
  options.devices = std::move(devices);
  options.lower.fuse_elementwise = fuse;
  Expected<Compiled> c = Compile(testing::Parse(model), options);
  EXPECT_TRUE(c) << c.error().ToString();
  return c ? c->package : std::vector<uint8_t>();
}

TEST(FuseElementwise, JoinsChainsAndTreesOfOneShape) {
  std::vector<std::string> got = Dispatches(Build(kModel, {"opencl"}, true));
  std::vector<std::string> want = {
      "fused_elementwise[sigmoid,multiply]",
      "fused_elementwise[subtract,multiply,multiply,add]",
      "fused_elementwise[greater,multiply,where,astype,add,astype]",
      "fused_elementwise[add,multiply,clip,nn.leakyrelu]",
      "exp",
      "log",
      "abs",
      "negative",
      "sqrt",
      "fused_elementwise[sigmoid,add]",
      "fused_elementwise[nn.hard_sigmoid,multiply]",
      "fused_elementwise[exp,negative,abs,sqrt]",
      "add",
  };
  EXPECT_EQ(got, want);
  // Not fused: one dispatch per op.
  EXPECT_EQ(Dispatches(Build(kModel, {"opencl"}, false)).size(), 30u);
}

// The package's kernel steps (the CPU's) as "op" or "fused_elementwise[a,b,...]", in order.
std::vector<std::string> Kernels(const std::vector<uint8_t>& package) {
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(package.data(), package.size(), &p);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<std::string> out;
  if (!p) return out;
  for (const pkg::Step* step : *p->root().graphs()->Get(0)->steps()) {
    if (step->kind() != pkg::StepKind::Kernel) continue;
    std::string op = step->kernel()->str();
    if (op == "fused_elementwise") {
      std::string members;
      for (std::string_view m : rt::AttrView(step->attrs()).Strs("ops")) {
        members += (members.empty() ? "" : ",") + std::string(m);
      }
      op += "[" + members + "]";
    }
    out.push_back(op);
  }
  return out;
}

// On the CPU only float32 ops of its block kernel join, and only those whose operands are of the
// result's shape, a single element, or inputs of the step broadcast to it (gathered per block):
// the swish, the normalization tail (its mean, rstd and gamma broadcast), x + 1 squared, and the
// chain on g; not the comparison, the integer ops, clip, log, the hard sigmoid, nor the adds that
// broadcast a smaller producer (which would compute it again for every element).
TEST(FuseElementwise, OnTheCpuFloatChainsOfOneShapeJoin) {
  std::vector<std::string> fused;
  for (const std::string& k : Kernels(Build(kModel, {"llvm"}, true))) {
    if (k.starts_with("fused_elementwise")) fused.push_back(k);
  }
  EXPECT_EQ(fused, (std::vector<std::string>{"fused_elementwise[sigmoid,multiply]",
                                             "fused_elementwise[subtract,multiply,multiply,add]",
                                             "fused_elementwise[add,multiply]",
                                             "fused_elementwise[exp,negative,abs,sqrt]"}));
  for (const std::string& k : Kernels(Build(kModel, {"llvm"}, false))) {
    EXPECT_FALSE(k.starts_with("fused_elementwise")) << k;
  }
}

std::vector<rt::OwnedTensor> RunModel(const std::vector<uint8_t>& package, int64_t n,
                                      std::vector<int> on_test_device, int threads = 1) {
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(package.data(), package.size(), &p);
  EXPECT_TRUE(st.ok()) << st.message();
  rt::SessionOptions so;
  so.run_on_test_device = std::move(on_test_device);
  so.threads = threads;
  std::unique_ptr<rt::Session> s;
  st = rt::Session::Create(std::move(p), so, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<rt::OwnedTensor> out;
  if (!s) return out;
  auto values = [](size_t count, float scale, float shift) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i) {
      v[i] = scale * static_cast<float>((i * 7919) % 23) - shift + 0.01f * static_cast<float>(i);
    }
    return v;
  };
  std::vector<float> x = values(static_cast<size_t>(n * 24), 0.37f, 4.0f);
  std::vector<float> mean = values(static_cast<size_t>(n * 4), 0.1f, 1.0f);
  std::vector<float> rstd = values(static_cast<size_t>(n * 4), 0.2f, 0.5f);
  std::vector<float> gamma = values(6, 0.3f, 1.0f), g = values(6, 0.5f, 2.0f);
  std::vector<float> se = values(4, 1.5f, 3.0f);
  st = s->Run({test::Input("x", x, {n, 4, 6}), test::Input("mean", mean, {n, 4, 1}),
               test::Input("rstd", rstd, {n, 4, 1}), test::Input("gamma", gamma, {6}),
               test::Input("g", g, {6}), test::Input("se", se, {1, 4, 1})},
              &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

// The fused steps run by the CPU's fused_elementwise kernel give the unfused CPU package's
// values bit for bit: OpenCL's fused steps (run by the opaque test device with the CPU's
// kernels), those of one shape in blocks and the others member by member, and the CPU's own
// fused steps in blocks; each member computes as its own kernel does.
TEST(FuseElementwise, TheCpuKernelRunsTheMembersAsTheUnfusedStepsDo) {
  std::vector<uint8_t> opencl = Build(kModel, {"opencl"}, true);
  std::vector<uint8_t> cpu = Build(kModel, {"llvm"}, true);
  std::vector<uint8_t> unfused = Build(kModel, {"llvm"}, false);
  for (int64_t n : {1, 3, 2000}) {
    std::vector<rt::OwnedTensor> want = RunModel(unfused, n, {});
    for (int way = 0; way < 3; ++way) {
      // OpenCL's steps; the CPU's on one thread, and on three (blocks split among them)
      const bool on_cpu = way > 0;
      std::vector<rt::OwnedTensor> got =
          on_cpu ? RunModel(cpu, n, {}, way == 2 ? 3 : 1) : RunModel(opencl, n, {0});
      ASSERT_EQ(got.size(), 11u);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o) {
        std::string what = (on_cpu ? "cpu" : "opencl") +
                           std::string(way == 2 ? ", 3 threads" : "") + ", n " + std::to_string(n) +
                           ", output " + std::to_string(o);
        EXPECT_EQ(got[o].dtype, want[o].dtype) << what;
        EXPECT_EQ(got[o].shape, want[o].shape) << what;
        EXPECT_EQ(got[o].data, want[o].data) << what;
      }
    }
  }
}

}  // namespace
}  // namespace quilt::compiler
