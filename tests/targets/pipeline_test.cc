// The fixed pipeline end to end: the CPU as two devices (copies run, constants on both), golden
// placement reports, placement rules on an imported model, --strict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string_view>

#include "ir/op.h"
#include "passes/place_rules.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/importers/onnx_test_util.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt::compiler {
namespace {

using quilt::testing::Parse;

// x, k: (2, 3); w: (3, 3). a = x + k on cpu 1 (a hint), b = a @ w and c = b - k on the first
// entry, cpu 0. The host (the last CPU entry) is cpu 1, so the result comes back to it.
constexpr const char* kTwoCpus = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm", 0), I.vdevice("llvm", 1)]})

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 3), "float32")):
        k = R.const([[1, 2, 3], [4, 5, 6]], "float32")
        a = R.add(x, k)
        h = R.hint_on_device(a, tvm.cpu(1))
        b = R.matmul(h, w)
        c = R.subtract(b, k)
        return c
)";

TEST(Pipeline, TheCpuAsTwoDevicesRunsWithCopiesInPlace) {
  CompileOptions options;
  options.devices = {};  // the module's own list
  Expected<Compiled> c = Compile(Parse(kTwoCpus), options);
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  const pkg::Graph& g = *p->root().graphs()->Get(0);
  // Steps on both devices, copies between them, and the constant k on both.
  int copies = 0, on0 = 0, on1 = 0, k_values = 0;
  for (const pkg::Step* s : *g.steps()) {
    if (s->kernel()->str() == "copy") ++copies;
    (s->device() == 0 ? on0 : on1) += 1;
  }
  for (const pkg::Value* v : *g.values()) {
    if (v->kind() == pkg::ValueKind::Constant && v->byte_size() == 24) ++k_values;
  }
  EXPECT_GE(copies, 2);
  EXPECT_GT(on0, 0);
  EXPECT_GT(on1, 0);
  EXPECT_EQ(k_values, 2);
  ASSERT_EQ(g.arena_bytes()->size(), 2u);
  // Partition's regions survive, one per device here, named after partition's functions; the
  // copies lie between them and every other step inside one of its own device.
  ASSERT_TRUE(g.regions());
  std::vector<int> region_of(g.steps()->size(), -1);
  std::set<int> region_devices;
  for (uint32_t r = 0; r < g.regions()->size(); ++r) {
    const pkg::Region* region = g.regions()->Get(r);
    EXPECT_NE(region->name()->str().find("region"), std::string::npos) << region->name()->str();
    region_devices.insert(region->device());
    for (int i = 0; i < region->num_steps(); ++i) region_of[region->first_step() + i] = r;
  }
  EXPECT_EQ(region_devices, (std::set<int>{0, 1}));
  for (uint32_t i = 0; i < g.steps()->size(); ++i) {
    const pkg::Step* st = g.steps()->Get(i);
    if (st->kernel()->str() == "copy") {
      EXPECT_EQ(st->kind(), pkg::StepKind::Copy) << i;
      EXPECT_EQ(region_of[i], -1) << "copy step " << i << " inside a region";
      continue;
    }
    EXPECT_EQ(st->kind(), pkg::StepKind::Kernel) << i;
    ASSERT_GE(region_of[i], 0) << "step " << i << " in no region";
    EXPECT_EQ(g.regions()->Get(region_of[i])->device(), st->device()) << i;
  }

  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  std::vector<float> x = {1, -2, 3, 0.5f, 4, -1};
  std::vector<float> w = {1, 0, 2, -1, 3, 0, 0.5f, 1, -2};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run({test::Input("x", x, {2, 3}), test::Input("w", w, {3, 3})}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(out.size(), 1u);
  // The reference, by hand: c = (x + k) @ w - k.
  std::vector<float> k = {1, 2, 3, 4, 5, 6}, want(6);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      float sum = 0;
      for (int t = 0; t < 3; ++t) sum += (x[i * 3 + t] + k[i * 3 + t]) * w[t * 3 + j];
      want[i * 3 + j] = sum - k[i * 3 + j];
    }
  }
  std::vector<float> got = test::Floats(out[0]);
  ASSERT_EQ(got.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

// A reshape on the CPU whose data input dies there takes that input's memory, and its copy is
// skipped; one whose input is read later gets memory of its own. The result, by hand.
constexpr const char* kReshapes = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        a = R.nn.relu(x)
        r = R.reshape(a, (3, 2))
        b = R.multiply(r, r)
        s = R.reshape(b, (6,))
        t = R.reshape(b, (2, 3))
        v = R.reshape(s, (2, 3))
        u = R.add(v, t)
        return u
)";

TEST(Pipeline, AReshapeWhoseInputDiesThereTakesItsMemory) {
  Expected<Compiled> c = Compile(Parse(kReshapes), CompileOptions{});
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  const pkg::Graph& g = *p->root().graphs()->Get(0);
  // Each reshape step's input and output offsets, in step order.
  std::vector<std::pair<int64_t, int64_t>> reshapes;
  for (const pkg::Step* st : *g.steps()) {
    if (st->kernel()->str() != "reshape") continue;
    const pkg::Value* in = g.values()->Get(st->inputs()->Get(0));
    const pkg::Value* out = g.values()->Get(st->outputs()->Get(0));
    ASSERT_GE(in->arena_offset(), 0);
    ASSERT_GE(out->arena_offset(), 0);
    reshapes.emplace_back(in->arena_offset(), out->arena_offset());
  }
  ASSERT_EQ(reshapes.size(), 4u);
  EXPECT_EQ(reshapes[0].first, reshapes[0].second);  // r: a dies here
  EXPECT_NE(reshapes[1].first, reshapes[1].second);  // s: b is read again by t
  EXPECT_EQ(reshapes[2].first, reshapes[2].second);  // t: b's last reader
  EXPECT_EQ(reshapes[3].first, reshapes[3].second);  // v: s dies here

  std::unique_ptr<rt::Session> session;
  ASSERT_TRUE(rt::Session::Create(p, {}, &session).ok());
  std::vector<float> x = {1, -2, 3, 0.5f, 4, -1};
  for (int run = 0; run < 2; ++run) {
    std::vector<rt::OwnedTensor> out;
    rt::Status st = session->Run({test::Input("x", x, {2, 3})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> got = test::Floats(out[0]);
    ASSERT_EQ(got.size(), 6u);
    for (int i = 0; i < 6; ++i) {
      float a = x[i] > 0 ? x[i] : 0.0f;
      EXPECT_EQ(got[i], 2 * a * a) << "run " << run << ", element " << i;
    }
  }
}

// The arena offsets of each `kernel` step's inputs and outputs, in step order (-1: not in the
// arena).
struct StepOffsets {
  std::vector<int64_t> in, out;
};
std::vector<StepOffsets> OffsetsOf(const pkg::Graph& g, std::string_view kernel) {
  std::vector<StepOffsets> steps;
  for (const pkg::Step* st : *g.steps()) {
    if (st->kernel()->string_view() != kernel) continue;
    StepOffsets& s = steps.emplace_back();
    for (int v : *st->inputs()) s.in.push_back(g.values()->Get(v)->arena_offset());
    for (int v : *st->outputs()) s.out.push_back(g.values()->Get(v)->arena_offset());
  }
  return steps;
}

// A CPU split with nothing but dims of 1 before its axis leaves its parts in its input's memory
// (each at a multiple of 64 bytes), and its copies are skipped: a part may then be written over
// in place where the input is read no more (e over p1), not where the input is read later (g
// over q1, while h still reads b). A part at 32 bytes into its input, and the parts of a split
// of two images, get memory of their own. The results, by hand (the concats keep e and g in the
// arena: a graph output is not).
constexpr const char* kSplits = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 2, 4), "float32"), y: R.Tensor((2, 8, 2, 4), "float32")):
        a = R.nn.relu(x)
        p = R.split(a, indices_or_sections=[2, 6], axis=1)
        p0 = p[0]
        p1 = p[1]
        p2 = p[2]
        e = R.multiply(p1, p1)
        ee = R.concat((e, e), axis=1)
        f = R.add(p0, p2)
        b = R.negative(x)
        q = R.split(b, indices_or_sections=[2], axis=1)
        q0 = q[0]
        q1 = q[1]
        g = R.multiply(q1, q1)
        gg = R.concat((g, g), axis=1)
        h = R.multiply(b, b)
        k = R.add(q0, q0)
        c = R.abs(x)
        u = R.split(c, indices_or_sections=[1], axis=1)
        u0 = u[0]
        u1 = u[1]
        m = R.add(u1, u1)
        o = R.negative(u0)
        n = R.nn.relu(y)
        w = R.split(n, indices_or_sections=[4], axis=1)
        w0 = w[0]
        w1 = w[1]
        z = R.subtract(w0, w1)
        return (ee, f, gg, h, k, o, m, z)
)";

TEST(Pipeline, ASplitOfOneImageLeavesItsPartsInItsInput) {
  Expected<Compiled> c = Compile(Parse(kSplits), CompileOptions{});
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  const pkg::Graph& g = *p->root().graphs()->Get(0);
  // Per split step in order: its input's offset and its parts'.
  std::vector<std::pair<int64_t, std::vector<int64_t>>> splits;
  for (const StepOffsets& st : OffsetsOf(g, "split")) splits.emplace_back(st.in[0], st.out);
  // The offsets of the squares' input and output (e = p1 * p1, g = q1 * q1, h = b * b).
  std::vector<std::pair<int64_t, int64_t>> squares;
  for (const StepOffsets& st : OffsetsOf(g, "multiply")) squares.emplace_back(st.in[0], st.out[0]);
  ASSERT_EQ(splits.size(), 4u);
  for (const auto& [in, parts] : splits) {
    ASSERT_GE(in, 0);
    for (int64_t part : parts) ASSERT_GE(part, 0);
  }
  EXPECT_EQ(splits[0].second,
            (std::vector<int64_t>{splits[0].first, splits[0].first + 64, splits[0].first + 192}));
  EXPECT_EQ(splits[1].second, (std::vector<int64_t>{splits[1].first, splits[1].first + 64}));
  // Parts of 32 bytes: the first is in place, the second (at 32 bytes) is not.
  EXPECT_EQ(splits[2].second[0], splits[2].first);
  EXPECT_NE(splits[2].second[1], splits[2].first + 32);
  for (int64_t part : splits[3].second) EXPECT_NE(part, splits[3].first);  // two images
  ASSERT_EQ(squares.size(), 3u);
  EXPECT_EQ(squares[0].first, squares[0].second);  // e over p1: a dies at the split
  EXPECT_NE(squares[1].first, squares[1].second);  // g beside q1: h reads b later

  std::unique_ptr<rt::Session> session;
  ASSERT_TRUE(rt::Session::Create(p, {}, &session).ok());
  std::vector<float> x(64), y(128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 3 == 0 ? -0.5f : 0.25f) * float(i % 11);
  for (size_t i = 0; i < y.size(); ++i) y[i] = (i % 4 == 1 ? -0.75f : 0.5f) * float(i % 13);
  for (int run = 0; run < 2; ++run) {
    std::vector<rt::OwnedTensor> out;
    rt::Status st =
        session->Run({test::Input("x", x, {1, 8, 2, 4}), test::Input("y", y, {2, 8, 2, 4})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 8u);
    std::vector<std::vector<float>> got;
    for (const rt::OwnedTensor& t : out) got.push_back(test::Floats(t));
    auto relu = [](float v) { return v > 0 ? v : 0.0f; };
    // Channel c's 8 floats of x start at 8 c.
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(got[0][i], relu(x[16 + i % 32]) * relu(x[16 + i % 32])) << i;
    }
    for (int i = 0; i < 16; ++i) EXPECT_EQ(got[1][i], relu(x[i]) + relu(x[48 + i])) << i;
    for (int i = 0; i < 96; ++i) EXPECT_EQ(got[2][i], x[16 + i % 48] * x[16 + i % 48]) << i;
    for (int i = 0; i < 64; ++i) EXPECT_EQ(got[3][i], x[i] * x[i]) << i;
    for (int i = 0; i < 16; ++i) EXPECT_EQ(got[4][i], -x[i] - x[i]) << i;
    for (int i = 0; i < 8; ++i) EXPECT_EQ(got[5][i], -std::abs(x[i])) << i;
    for (int i = 0; i < 56; ++i) EXPECT_EQ(got[6][i], 2 * std::abs(x[8 + i])) << i;
    for (int img = 0; img < 2; ++img) {
      for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(got[7][img * 32 + i], relu(y[img * 64 + i]) - relu(y[img * 64 + 32 + i]))
            << "image " << img << ", element " << i;
      }
    }
  }
}

// A CPU concat of one image has its inputs made in their places in its result (each at a
// multiple of 64 bytes), and skips their copies: inputs that steps make and nothing wrote in
// place, each once (not o twice, nor the graph input x); a concat's result may be such an input
// of another (pq in t). Its result may be written over in place where no input is read after it
// (o over c), not where one is (g beside k: h reads e). A concat of two images copies. The
// results, by hand.
constexpr const char* kConcats = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 2, 4), "float32"), y: R.Tensor((2, 4, 2, 4), "float32")):
        a = R.nn.relu(x)
        b = R.negative(x)
        c = R.concat((a, b), axis=1)
        o = R.multiply(c, c)
        oo = R.concat((o, o), axis=1)
        e = R.abs(x)
        k = R.concat((e, x), axis=1)
        g = R.multiply(k, k)
        h = R.add(e, e)
        gg = R.concat((g, g), axis=1)
        m = R.nn.relu(y)
        n = R.negative(y)
        z = R.concat((m, n), axis=1)
        p = R.add(x, x)
        q = R.multiply(x, x)
        pq = R.concat((p, q), axis=1)
        r = R.subtract(x, e)
        t = R.concat((pq, r), axis=1)
        tt = R.concat((t, t), axis=1)
        return (oo, gg, h, z, tt)
)";

TEST(Pipeline, AConcatOfOneImageHasItsInputsMadeInTheirPlaces) {
  Expected<Compiled> c = Compile(Parse(kConcats), CompileOptions{});
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  const pkg::Graph& g = *p->root().graphs()->Get(0);
  // Per concat step in order: its result's offset and its inputs'.
  std::vector<std::pair<int64_t, std::vector<int64_t>>> concats;
  for (const StepOffsets& st : OffsetsOf(g, "concat")) concats.emplace_back(st.out[0], st.in);
  // The offsets of the squares' input and output (o = c * c, g = k * k, q = x * x).
  std::vector<std::pair<int64_t, int64_t>> squares;
  for (const StepOffsets& st : OffsetsOf(g, "multiply")) squares.emplace_back(st.in[0], st.out[0]);
  ASSERT_EQ(concats.size(), 8u);
  using Offsets = std::vector<int64_t>;
  const int64_t c_at = concats[0].first, k_at = concats[2].first, pq_at = concats[5].first,
                t_at = concats[6].first;
  ASSERT_GE(c_at, 0);
  EXPECT_EQ(concats[0].second, (Offsets{c_at, c_at + 256}));             // a, b
  for (int64_t in : concats[1].second) EXPECT_NE(in, concats[1].first);  // o twice
  EXPECT_EQ(concats[2].second, (Offsets{k_at, -1}));                     // e, x
  for (int64_t in : concats[3].second) EXPECT_NE(in, concats[3].first);  // g twice
  EXPECT_NE(concats[4].second[0], concats[4].first);                     // two images
  EXPECT_NE(concats[4].second[1], concats[4].first + 512);
  EXPECT_EQ(concats[5].second, (Offsets{pq_at, pq_at + 256}));  // p, q
  EXPECT_EQ(concats[6].second, (Offsets{t_at, t_at + 512}));    // pq, r
  EXPECT_EQ(pq_at, t_at);
  ASSERT_EQ(squares.size(), 3u);
  EXPECT_EQ(squares[0].first, squares[0].second);  // o over c: a and b are read no more
  EXPECT_NE(squares[1].first, squares[1].second);  // g beside k: h reads e after

  std::unique_ptr<rt::Session> session;
  ASSERT_TRUE(rt::Session::Create(p, {}, &session).ok());
  std::vector<float> x(64), y(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 3 == 0 ? -0.5f : 0.25f) * float(i % 11);
  for (size_t i = 0; i < y.size(); ++i) y[i] = (i % 4 == 1 ? -0.75f : 0.5f) * float(i % 13);
  auto relu = [](float v) { return v > 0 ? v : 0.0f; };
  for (int run = 0; run < 2; ++run) {
    std::vector<rt::OwnedTensor> out;
    rt::Status st =
        session->Run({test::Input("x", x, {1, 8, 2, 4}), test::Input("y", y, {2, 4, 2, 4})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 5u);
    std::vector<std::vector<float>> got;
    for (const rt::OwnedTensor& t : out) got.push_back(test::Floats(t));
    ASSERT_EQ(got[0].size(), 256u);
    ASSERT_EQ(got[4].size(), 384u);
    for (int i = 0; i < 256; ++i) {  // oo = [o; o], o = [relu(x); -x]^2
      const int j = i % 128;
      const float v = j < 64 ? relu(x[j]) : -x[j - 64];
      EXPECT_EQ(got[0][i], v * v) << i;
    }
    for (int i = 0; i < 256; ++i) EXPECT_EQ(got[1][i], x[i % 64] * x[i % 64]) << i;
    for (int i = 0; i < 64; ++i) EXPECT_EQ(got[2][i], std::abs(x[i]) + std::abs(x[i])) << i;
    for (int img = 0; img < 2; ++img) {
      for (int i = 0; i < 64; ++i) {
        const float v = y[img * 32 + i % 32];
        EXPECT_EQ(got[3][img * 64 + i], i < 32 ? relu(v) : -v) << img << ", " << i;
      }
    }
    for (int i = 0; i < 384; ++i) {  // tt = [t; t], t = [x + x; x * x; x - |x|]
      const int j = i % 192;
      const float v = x[j % 64];
      EXPECT_EQ(got[4][i], j < 64 ? v + v : j < 128 ? v * v : v - std::abs(v)) << i;
    }
  }
}

// Two extents the compiler cannot prove equal: the sum's shape is (broadcast(n, m), 4), which the
// runtime evaluates for each run, zeros included; a pair that does not broadcast is refused.
constexpr const char* kSymbolicSum = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", 4), "float32"), b: R.Tensor(("m", 4), "float32")):
        c = R.add(a, b)
        d = R.nn.relu(c)
        return d
)";

TEST(Pipeline, SymbolicExtentsBroadcastAsTheRunBindsThem) {
  Expected<Compiled> c = Compile(Parse(kSymbolicSum), CompileOptions{});
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  std::unique_ptr<rt::Session> session;
  ASSERT_TRUE(rt::Session::Create(p, {}, &session).ok());
  auto values = [](int64_t rows, float base) {
    std::vector<float> v(static_cast<size_t>(rows * 4));
    for (size_t i = 0; i < v.size(); ++i) v[i] = base + (i % 3 == 0 ? -1.0f : 1.0f) * i;
    return v;
  };
  for (auto [n, m] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {3, 1}, {3, 3}, {0, 1}, {1, 0}, {1, 1}}) {
    std::vector<float> a = values(n, 0.5f), b = values(m, -2.0f);
    std::vector<rt::OwnedTensor> out;
    rt::Status st = session->Run({test::Input("a", a, {n, 4}), test::Input("b", b, {m, 4})}, &out);
    ASSERT_TRUE(st.ok()) << "n = " << n << ", m = " << m << ": " << st.message();
    ASSERT_EQ(out.size(), 1u);
    int64_t rows = (n == 0 || m == 0) ? 0 : std::max(n, m);
    EXPECT_EQ(out[0].shape, (rt::Shape{rows, 4})) << "n = " << n << ", m = " << m;
    std::vector<float> got = test::Floats(out[0]);
    ASSERT_EQ(got.size(), static_cast<size_t>(rows * 4));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < 4; ++j) {
        float sum = a[static_cast<size_t>((n == 1 ? 0 : r) * 4 + j)] +
                    b[static_cast<size_t>((m == 1 ? 0 : r) * 4 + j)];
        EXPECT_EQ(got[static_cast<size_t>(r * 4 + j)], sum > 0 ? sum : 0.0f)
            << "n = " << n << ", m = " << m << ", row " << r << ", column " << j;
      }
    }
  }
  std::vector<float> a = values(2, 0.0f), b = values(3, 0.0f);
  std::vector<rt::OwnedTensor> out;
  rt::Status st = session->Run({test::Input("a", a, {2, 4}), test::Input("b", b, {3, 4})}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("(add): shapes (2, 4) and (3, 4) do not broadcast"),
            std::string::npos)
      << st.message();
}

// "kind:N" and "kind -device=N" name the machine's device N: the package's device id, which the
// runtime opens.
constexpr const char* kRelu = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        y = R.nn.relu(x)
        return y
)";

TEST(Pipeline, ADeviceNumberBecomesThePackagesDeviceId) {
  for (auto [device, id] : std::vector<std::pair<std::string, int>>{
           {"opencl:3", 3}, {"opencl -device=2", 2}, {"opencl", 0}}) {
    CompileOptions options;
    options.devices = {device, "llvm"};
    Expected<Compiled> c = Compile(Parse(kRelu), options);
    ASSERT_TRUE(c) << device << ": " << c.error().ToString();
    std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->root().devices()->Get(0)->kind()->str(), "opencl") << device;
    EXPECT_EQ(p->root().devices()->Get(0)->id(), id) << device;
  }
  CompileOptions options;
  options.devices = {"opencl:x"};
  Expected<Compiled> c = Compile(Parse(kRelu), options);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "--device opencl:x: after ':' comes a device number");
  options.devices = {"opencl -device=one"};
  c = Compile(Parse(kRelu), options);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("-device=one is not a device number"), std::string::npos)
      << c.error().message;
}

// A fake CUDA that runs only `ops`; the CPU runs everything.
std::function<targets::Support(const ir::VDevice&, const ir::CallNode&)> FakeCuda(
    std::set<std::string> ops) {
  return [ops](const ir::VDevice& d, const ir::CallNode& call) {
    if (d.target.DeviceType() == "cpu") return targets::Support::Yes();
    std::string name = call.op() ? call.op()->name : "call";
    if (ops.count(name)) return targets::Support::Yes();
    return targets::Support::No("the fake " + d.target.kind + " has no " + name);
  };
}

constexpr const char* kChain = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), "float32"), w1: R.Tensor((4, 3, 3, 3), "float32"), w2: R.Tensor((4, 4, 1, 1), "float32")):
        a = R.nn.conv2d(x, w1)
        b = R.nn.relu(a)
        c = R.nn.softmax(b, axis=1)
        d = R.nn.conv2d(c, w2)
        e = R.nn.relu(d)
        return e
)";

void CheckGolden(const std::string& name, const std::string& got) {
  std::string path = quilt::testing::DataPath("report/" + name);
  if (std::getenv("QUILT_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << got;
    return;
  }
  EXPECT_EQ(got, quilt::testing::ReadData("report/" + name))
      << "the " << name << " report changed; QUILT_UPDATE_GOLDEN=1 rewrites it";
}

TEST(Pipeline, ReportsMatchTheirGoldenFiles) {
  CompileOptions options;
  options.devices = {"cuda", "llvm"};
  options.supports = FakeCuda({"nn.conv2d", "nn.relu"});
  Expected<Compiled> c = Compile(Parse(kChain), options, "chain.onnx");
  ASSERT_TRUE(c) << c.error().ToString();
  CheckGolden("chain.txt", ReportText(c->report));
  CheckGolden("chain.dot", ReportDot(c->report));
  CheckGolden("chain.json", ReportJson(c->report));
  CheckGolden("chain_summary.txt", ReportSummary(c->report));
  // The text report travels in the package.
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p && p->root().metadata() && p->root().metadata()->placement_report());
  EXPECT_EQ(p->root().metadata()->placement_report()->str(), ReportText(c->report));
}

TEST(Pipeline, StrictListsEveryFallback) {
  CompileOptions options;
  options.devices = {"cuda", "llvm"};
  options.strict = true;
  options.supports = FakeCuda({"nn.conv2d", "nn.relu"});
  Expected<Compiled> c = Compile(Parse(kChain), options);
  ASSERT_FALSE(c);
  std::string e = c.error().ToString();
  EXPECT_NE(e.find("--strict: 1 op(s) fell back"), std::string::npos) << e;
  EXPECT_NE(e.find("'c' (R.nn.softmax) on llvm (id 0, global): cuda (id 0, global): the fake "
                   "cuda has no nn.softmax"),
            std::string::npos)
      << e;
}

TEST(Pipeline, PrintsTheModuleAfterEachStep) {
  CompileOptions options;
  std::vector<std::string> steps;
  options.after_step = [&](const std::string& step, const ir::IRModule&) { steps.push_back(step); };
  ASSERT_TRUE(Compile(Parse(kChain), options));
  EXPECT_EQ(steps,
            (std::vector<std::string>{"update-vdevice", "realize-vdevice", "assign", "simplify",
                                      "fold-constants", "partition", "insert-device-copies"}));
}

// /backbone/relu -> /backbone/neg -> /head/exp -> /head/softmax
Expected<ir::IRModule> RulesModel() {
  quilt::testing::OnnxGraph g(17);
  g.Input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{4}});
  g.Node("Relu", {"x"}, {"r"}).set_name("/backbone/relu");
  g.Node("Neg", {"r"}, {"n"}).set_name("/backbone/neg");
  g.Node("Exp", {"n"}, {"e"}).set_name("/head/exp");
  g.Node("Softmax", {"e"}, {"y"}).set_name("/head/softmax");
  g.Output("y", onnx::TensorProto::FLOAT);
  return g.Import();
}

// The device name of each ONNX node after compiling with `rules`.
Expected<std::map<std::string, std::string>> Placed(std::vector<std::string> rules) {
  Expected<ir::IRModule> mod = RulesModel();
  if (!mod) return mod.error();
  CompileOptions options;
  options.devices = {"cuda", "llvm"};
  options.place = std::move(rules);
  options.supports = FakeCuda({"nn.relu", "negative", "exp", "nn.softmax"});
  options.max_fragment_ops = 0;  // the rules alone decide
  Expected<Compiled> c = Compile(*mod, options);
  if (!c) return c.error();
  std::map<std::string, std::string> out;
  for (const auto& p : c->report.ops) {
    out[p.node] = c->report.devices[static_cast<size_t>(p.device)].name + "/" +
                  std::string(passes::WhyName(p.why));
  }
  return out;
}

TEST(Pipeline, PlacementRulesByOpTypeNodeGlobAndRegion) {
  Expected<std::map<std::string, std::string>> p = Placed({});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ((*p)["/head/softmax"], "cuda/first choice");
  p = Placed({"op:Softmax=llvm"});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ((*p)["/head/softmax"], "llvm/placement rule");
  EXPECT_EQ((*p)["/head/exp"], "cuda/first choice");
  p = Placed({"node:/backbone/*=llvm"});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ((*p)["/backbone/relu"], "llvm/placement rule");
  EXPECT_EQ((*p)["/backbone/neg"], "llvm/placement rule");
  EXPECT_EQ((*p)["/head/exp"], "cuda/first choice");
  p = Placed({"region:/backbone/neg../head/exp=llvm"});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ((*p)["/backbone/relu"], "cuda/first choice");
  EXPECT_EQ((*p)["/backbone/neg"], "llvm/placement rule");
  EXPECT_EQ((*p)["/head/exp"], "llvm/placement rule");
  EXPECT_EQ((*p)["/head/softmax"], "cuda/first choice");
}

std::string RuleError(std::vector<std::string> rules) {
  Expected<std::map<std::string, std::string>> p = Placed(std::move(rules));
  if (p) {
    ADD_FAILURE() << "the rules were accepted";
    return "";
  }
  return p.error().ToString();
}

TEST(Pipeline, BadPlacementRulesAreRefusedWithTheirReason) {
  EXPECT_NE(RuleError({"op:Conv=llvm"}).find("--place op:Conv=llvm: the rule matches no op"),
            std::string::npos);
  EXPECT_NE(RuleError({"node:/neck/*=llvm"}).find("matches no op"), std::string::npos);
  EXPECT_NE(RuleError({"region:/head/exp../backbone/relu=llvm"})
                .find("node '/backbone/relu' does not depend on node '/head/exp'"),
            std::string::npos);
  EXPECT_NE(RuleError({"region:/nope../head/exp=llvm"}).find("no node named '/nope'"),
            std::string::npos);
  EXPECT_NE(RuleError({"op:Relu=opencl"}).find("\"opencl\" names no entry"), std::string::npos);
  EXPECT_NE(RuleError({"Relu=llvm"}).find("expected op:TYPE=DEVICE"), std::string::npos);
  EXPECT_NE(RuleError({"layer:x=llvm"}).find("unknown rule kind 'layer'"), std::string::npos);
  EXPECT_NE(RuleError({"op:Relu=llvm", "node:/backbone/relu=cuda"})
                .find("ask for node '/backbone/relu' on two devices"),
            std::string::npos);
  // A module without a function has nothing to place: an error, not a crash.
  Expected<ir::IRModule> empty = passes::ApplyPlacementRules(ir::IRModule{}, {"op:Relu=llvm"});
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("the module has no function to place"), std::string::npos)
      << empty.error().message;
}

}  // namespace
}  // namespace quilt::compiler
