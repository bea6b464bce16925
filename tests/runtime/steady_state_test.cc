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

#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
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
    // The fewest of 5 runs: with 2 threads, a worker's kept buffers grow the first time it takes
    // a kind of unit, which the warm-up runs may not all have given it.
    long made = -1;
    for (int run = 0; run < 5; ++run) {
      long before = g_allocations.load();
      rt::Status st = s->Run(inputs, &out);
      long n = g_allocations.load() - before;
      ASSERT_TRUE(st.ok()) << st.message();
      made = made < 0 ? n : std::min(made, n);
    }
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

}  // namespace
}  // namespace quilt
