// A session's runs in steady state allocate nothing: after the first runs, a run of the same shapes
// takes its values' memory, its buffer objects, its kernels' scratch and its shapes from what the
// session, its devices and the calling threads kept. This binary interposes the C allocator
// (malloc and its kin, which operator new and the runtime's own buffers call) to count the calls a
// run makes; it is left out of the sanitizer builds, whose allocator it would displace.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/src/session.h"
#include "tests/runtime/onnx_session.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/runtime/text_session.h"
#include "tests/test_util.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

extern "C" {
void* malloc(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** p, size_t alignment, size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  *p = __libc_memalign(alignment, n);
  return *p ? 0 : 12;  // ENOMEM
}
}

namespace quilt {
namespace {

// Convs of the three kinds the CPU runs (a dense 3x3 in the channel-blocked layout with its
// neighbours, a depthwise one, a 1x1), a matmul of broadcast batches, a transpose, a softmax, a
// layer norm, a reshape and broadcast elementwise steps: the shapes a step derives (strides,
// broadcasts, outputs) and the attributes it reads at every run.
constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 16, 12, 12), "float32"), q: R.Tensor((2, 3, 5, 8), "float32")):
        w1 = R.full(R.shape([32, 16, 3, 3]), R.const(0.125, "float32"), dtype="float32")
        a = R.nn.conv2d(x, w1, padding=[1, 1, 1, 1])
        b = R.nn.relu(a)
        w2 = R.full(R.shape([32, 1, 3, 3]), R.const(0.25, "float32"), dtype="float32")
        c = R.nn.conv2d(b, w2, padding=[1, 1, 1, 1], groups=32)
        w3 = R.full(R.shape([16, 32, 1, 1]), R.const(0.5, "float32"), dtype="float32")
        d = R.nn.conv2d(c, w3)
        e = R.add(d, x)
        f = R.reshape(e, R.shape([1, 16, 144]))
        g = R.permute_dims(f, axes=[0, 2, 1])
        k = R.permute_dims(q, axes=[0, 1, 3, 2])
        s = R.matmul(q, k)
        t = R.nn.softmax(s, axis=-1)
        gamma = R.full(R.shape([16]), R.const(1.5, "float32"), dtype="float32")
        beta = R.full(R.shape([16]), R.const(0.25, "float32"), dtype="float32")
        h = R.nn.layer_norm(g, gamma, beta, [-1], epsilon=0.001)
        m = R.multiply(t, R.const([1.0, 2.0, 3.0, 4.0, 5.0], "float32"))
        return (h, m)
)";

std::unique_ptr<rt::Session> OpenSession(int threads) {
  rt::SessionOptions options;
  options.threads = threads;
  return test::SessionFromText(kModel, options);
}

// The fewest allocations of 5 runs of `s` on `inputs` (-1, with the failure recorded, where a run
// fails): with 2 threads, a worker's kept buffers grow the first time it takes a kind of unit,
// which the warm-up runs may not all have given it.
long FewestAllocations(rt::Session& s, const std::vector<rt::NamedTensor>& inputs,
                       std::vector<rt::OwnedTensor>* out) {
  long made = -1;
  for (int run = 0; run < 5; ++run) {
    long before = g_allocations.load();
    rt::Status st = s.Run(inputs, out);
    long n = g_allocations.load() - before;
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return -1;
    made = made < 0 ? n : std::min(made, n);
  }
  return made;
}

// The counter counts: allocations the test makes itself are seen (through a volatile pointer, so
// that the compiler may not drop the pair).
TEST(SteadyState, TheCounterSeesAllocations) {
  void* (*volatile alloc)(size_t) = std::malloc;
  void* (*volatile aligned)(size_t, size_t) = std::aligned_alloc;
  long before = g_allocations.load();
  void* p = alloc(100);
  void* q = aligned(64, 256);
  long seen = g_allocations.load() - before;
  std::free(p);
  std::free(q);
  EXPECT_EQ(seen, 2);
}

TEST(SteadyState, ARunOfTheSameShapesAllocatesNothing) {
  for (int threads : {1, 2}) {
    std::unique_ptr<rt::Session> s = OpenSession(threads);
    ASSERT_TRUE(s);
    std::vector<float> x(16 * 12 * 12), q(2 * 3 * 5 * 8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
    for (size_t i = 0; i < q.size(); ++i) q[i] = 0.02f * static_cast<float>(i % 31) - 0.3f;
    std::vector<rt::NamedTensor> inputs = {test::Input("x", x, {1, 16, 12, 12}),
                                           test::Input("q", q, {2, 3, 5, 8})};
    std::vector<rt::OwnedTensor> out, first;
    for (int warm = 0; warm < 3; ++warm) {
      rt::Status st = s->Run(inputs, &out);
      ASSERT_TRUE(st.ok()) << st.message();
      if (warm == 0) first = out;
    }
    long made = FewestAllocations(*s, inputs, &out);
    std::printf("%d thread(s): %ld allocations in a steady-state run\n", threads, made);
    EXPECT_EQ(made, 0) << threads << " thread(s): allocations in a steady-state run";
    // The run computed what the first did (the outputs are real, not left over).
    ASSERT_EQ(out.size(), 2u);
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].shape, first[i].shape);
      EXPECT_EQ(out[i].data, first[i].data);
    }
  }
}

// A model's control steps: a Loop whose body carries h and makes a scan element from it and the
// iteration, an If over the loop's result, and a Scan over the rows of x that carries their sum
// and scans them doubled. ONNX opset 13.
testing::OnnxGraph ControlFlowModel() {
  using onnx::TensorProto;
  using testing::Dim;
  testing::OnnxGraph body(13);
  body.Input("i", TensorProto::INT64, {}).Input("c", TensorProto::BOOL, {});
  body.Input("h_in", TensorProto::FLOAT, {1, 2});
  body.Initializer<float>("half", TensorProto::FLOAT, {}, {0.5f});
  body.Initializer<float>("one", TensorProto::FLOAT, {}, {1.0f});
  body.Node("Identity", {"c"}, {"c_out"}, "keep");
  body.Node("Mul", {"h_in", "half"}, {"hh"}, "decay");
  body.Node("Add", {"hh", "one"}, {"h_out"}, "step");
  testing::SetInt(body.Node("Cast", {"i"}, {"fi"}, "iteration"), "to", TensorProto::FLOAT);
  body.Node("Add", {"h_out", "fi"}, {"y"}, "element");
  body.Output("c_out", TensorProto::BOOL, std::vector<Dim>{});
  body.Output("h_out", TensorProto::FLOAT, std::vector<Dim>{1, 2});
  body.Output("y", TensorProto::FLOAT, std::vector<Dim>{1, 2});

  testing::OnnxGraph then_branch(13), else_branch(13);
  then_branch.Initializer<float>("three", TensorProto::FLOAT, {}, {3.0f});
  then_branch.Node("Mul", {"h_last", "three"}, {"z_then"}, "triple");
  then_branch.Output("z_then", TensorProto::FLOAT, std::vector<Dim>{1, 2});
  else_branch.Node("Neg", {"h_last"}, {"z_else"}, "negate");
  else_branch.Output("z_else", TensorProto::FLOAT, std::vector<Dim>{1, 2});

  testing::OnnxGraph scan_body(13);
  scan_body.Input("s_in", TensorProto::FLOAT, {3}).Input("row", TensorProto::FLOAT, {3});
  scan_body.Initializer<float>("two", TensorProto::FLOAT, {}, {2.0f});
  scan_body.Node("Add", {"s_in", "row"}, {"s_out"}, "sum");
  scan_body.Node("Mul", {"row", "two"}, {"r2"}, "double");
  scan_body.Output("s_out", TensorProto::FLOAT, std::vector<Dim>{3});
  scan_body.Output("r2", TensorProto::FLOAT, std::vector<Dim>{3});

  testing::OnnxGraph g(13);
  g.Input("n", TensorProto::INT64, {}).Input("go", TensorProto::BOOL, {});
  g.Input("h", TensorProto::FLOAT, {1, 2}).Input("flag", TensorProto::BOOL, {});
  g.Input("s", TensorProto::FLOAT, {3}).Input("x", TensorProto::FLOAT, {4, 3});
  testing::SetGraph(g.Node("Loop", {"n", "go", "h"}, {"h_last", "ys"}, "loop"), "body",
                    *body.graph());
  onnx::NodeProto& branch = g.Node("If", {"flag"}, {"z"}, "branch");
  testing::SetGraph(branch, "then_branch", *then_branch.graph());
  testing::SetGraph(branch, "else_branch", *else_branch.graph());
  onnx::NodeProto& scan = g.Node("Scan", {"s", "x"}, {"s_last", "rows2"}, "scan");
  testing::SetInt(scan, "num_scan_inputs", 1);
  testing::SetGraph(scan, "body", *scan_body.graph());
  g.Output("ys", TensorProto::FLOAT).Output("z", TensorProto::FLOAT);
  g.Output("s_last", TensorProto::FLOAT).Output("rows2", TensorProto::FLOAT);
  return g;
}

// The control steps keep what their iterations write over (the carried state, an iteration's
// outputs, the scan outputs' elements, the branch's outputs) for the next run: a run of the same
// shapes allocates nothing. The outputs are checked against the model's arithmetic in double.
TEST(SteadyState, ARunOfLoopsScansAndBranchesAllocatesNothing) {
  testing::OnnxGraph g = ControlFlowModel();
  for (int threads : {1, 2}) {
    rt::SessionOptions options;
    options.threads = threads;
    std::unique_ptr<rt::Session> s = test::SessionFromOnnx(g, options);
    ASSERT_TRUE(s);
    int64_t n = 5;
    bool go = true;
    std::vector<float> h = {1.0f, -2.0f}, sum0 = {0.5f, 0.0f, -1.0f};
    std::vector<float> x(12);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 1.0f;
    for (bool flag : {true, false}) {
      std::vector<rt::NamedTensor> inputs = {
          {"n", {rt::DType::kInt64, {}, &n}}, {"go", {rt::DType::kBool, {}, &go}},
          test::Input("h", h, {1, 2}),        {"flag", {rt::DType::kBool, {}, &flag}},
          test::Input("s", sum0, {3}),        test::Input("x", x, {4, 3})};
      std::vector<rt::OwnedTensor> out;
      for (int warm = 0; warm < 3; ++warm) {
        rt::Status st = s->Run(inputs, &out);
        ASSERT_TRUE(st.ok()) << st.message();
      }
      long made = FewestAllocations(*s, inputs, &out);
      EXPECT_EQ(made, 0) << threads << " thread(s), flag " << flag
                         << ": allocations in a steady-state run";
      // The model's arithmetic in double.
      std::vector<double> ys, hd = {h[0], h[1]};
      for (int64_t it = 0; it < n; ++it) {
        for (double& v : hd) v = v * 0.5 + 1.0;
        for (double v : hd) ys.push_back(v + static_cast<double>(it));
      }
      std::vector<double> z = {flag ? 3 * hd[0] : -hd[0], flag ? 3 * hd[1] : -hd[1]};
      std::vector<double> last = {sum0[0], sum0[1], sum0[2]}, rows2;
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 3; ++c) {
          last[c] += x[r * 3 + c];
          rows2.push_back(2.0 * x[r * 3 + c]);
        }
      }
      ASSERT_EQ(out.size(), 4u);
      EXPECT_EQ(out[0].shape, (rt::Shape{n, 1, 2}));
      EXPECT_EQ(out[3].shape, (rt::Shape{4, 3}));
      const std::vector<double>* want[4] = {&ys, &z, &last, &rows2};
      for (size_t o = 0; o < 4; ++o) {
        std::vector<float> got = test::Floats(out[o]);
        ASSERT_EQ(got.size(), want[o]->size()) << out[o].name;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_NEAR(got[i], (*want[o])[i], 1e-5) << out[o].name << " " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace quilt
