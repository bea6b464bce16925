// Constant matmul weights stored packed for the CPU's GEMM (targets/pack_weights.h): which
// constants are packed, what the package holds for them, and that the package computes what the
// unpacked one does, bit for bit, and what a float64 evaluation does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "runtime/src/session.h"
#include "targets/compile.h"
#include "targets/cpu/kernels/gemm.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt::compiler {
namespace {

std::vector<float> Random(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A nested list literal of `v` in shape `dims`.
std::string Literal(const std::vector<float>& v, const std::vector<int64_t>& dims, size_t dim = 0,
                    size_t* at = nullptr) {
  size_t start = 0;
  if (!at) at = &start;
  std::ostringstream out;
  out.precision(9);
  out << "[";
  for (int64_t i = 0; i < dims[dim]; ++i) {
    if (i) out << ", ";
    if (dim + 1 == dims.size()) {
      out << v[(*at)++];
    } else {
      out << Literal(v, dims, dim + 1, at);
    }
  }
  out << "]";
  return out.str();
}

struct Weights {
  std::vector<float> w, wb, v, u;
};

// x @ w (w 10 x 30: packed), y @ wb (2 x 10 x 25: packed), x @ v (10 x 8: too few columns),
// x @ u with u also added to z (read by another op): not packed.
std::string Module(const Weights& c) {
  return R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 10), "float32"), y: R.Tensor((2, 4, 10), "float32"), z: R.Tensor((10, 12), "float32")):
        w = R.const()" +
         Literal(c.w, {10, 30}) + R"(, "float32")
        wb = R.const()" +
         Literal(c.wb, {2, 10, 25}) + R"(, "float32")
        v = R.const()" +
         Literal(c.v, {10, 8}) + R"(, "float32")
        u = R.const()" +
         Literal(c.u, {10, 12}) + R"(, "float32")
        a = R.matmul(x, w)
        b = R.matmul(y, wb)
        c = R.matmul(x, v)
        d = R.matmul(x, u)
        e = R.add(u, z)
        return (a, b, c, d, e)
)";
}

// `mod` compiled with `options`, and again without packed weights.
void CompileBoth(const ir::IRModule& mod, CompileOptions options, std::vector<uint8_t>* packed,
                 std::vector<uint8_t>* plain) {
  Expected<Compiled> with = Compile(mod, options);
  ASSERT_TRUE(with) << with.error().ToString();
  *packed = with->package;
  options.lower.pack_weights = false;
  Expected<Compiled> without = Compile(mod, options);
  ASSERT_TRUE(without) << without.error().ToString();
  *plain = without->package;
}

std::vector<std::vector<float>> RunPackage(const std::vector<uint8_t>& package,
                                           std::vector<float>& x, std::vector<float>& y,
                                           std::vector<float>& z) {
  std::unique_ptr<rt::Session> s;
  rt::SessionOptions options;
  options.threads = 2;
  EXPECT_TRUE(rt::Session::Create(test::LoadPackage(package), options, &s).ok());
  if (!s) return {};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run({test::Input("x", x, {3, 10}), test::Input("y", y, {2, 4, 10}),
                          test::Input("z", z, {10, 12})},
                         &out);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<std::vector<float>> values;
  for (const rt::OwnedTensor& t : out) values.push_back(test::Floats(t));
  return values;
}

// C (m x n) = A (m x k) B (k x n) in float64.
std::vector<double> Product(const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) c[i * n + j] += double{a[i * k + p]} * b[p * n + j];
    }
  }
  return c;
}

TEST(PackWeights, ConstantMatmulWeightsAreStoredAsTheGemmsPanels) {
  std::mt19937 rng(61);
  Weights c{Random(rng, 300), Random(rng, 500), Random(rng, 80), Random(rng, 120)};
  ir::IRModule mod = testing::Parse(Module(c));
  std::vector<uint8_t> packed, plain;
  ASSERT_NO_FATAL_FAILURE(CompileBoth(mod, CompileOptions(), &packed, &plain));

  // The package: the matmuls reading w and wb have packed_b, their B a 1-D value of panels.
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(packed);
  ASSERT_TRUE(p);
  const pkg::Graph& g = *p->root().graphs()->Get(0);
  std::vector<std::vector<int64_t>> shapes;
  int matmuls = 0;
  for (const pkg::Step* s : *g.steps()) {
    if (s->kernel()->str() != "matmul") continue;
    ++matmuls;
    rt::AttrView attrs(s->attrs());
    const pkg::Value* b = g.values()->Get(static_cast<uint32_t>(s->inputs()->Get(1)));
    if (!attrs.Has("packed_b")) {
      EXPECT_EQ(b->dims()->size(), 2u) << "an unpacked B keeps its shape";
      continue;
    }
    auto shape = attrs.Ints("packed_b");
    ASSERT_GE(shape.size(), 2u);
    int64_t k = shape[shape.size() - 2], n = shape.back();
    int64_t matrices = shape.size() == 3 ? shape[0] : 1;
    EXPECT_EQ(b->kind(), pkg::ValueKind::Constant);
    EXPECT_EQ(b->dims()->size(), 1u);
    EXPECT_EQ(b->byte_size(), matrices * cpu::PackedBFloats(k, n) * 4);
    shapes.push_back(shape.ToVector());
  }
  EXPECT_EQ(matmuls, 4);
  EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{{10, 30}, {2, 10, 25}}));
  EXPECT_LE(packed.size(), plain.size() + 4096)
      << "the panels replace the weights; they do not sit beside them";

  // Both packages compute the same, bit for bit, and what float64 does.
  std::vector<float> x = Random(rng, 30), y = Random(rng, 80), z = Random(rng, 120);
  std::vector<std::vector<float>> got = RunPackage(packed, x, y, z);
  std::vector<std::vector<float>> want = RunPackage(plain, x, y, z);
  ASSERT_EQ(got.size(), 5u);
  ASSERT_EQ(got, want);
  std::vector<std::vector<double>> exact = {Product(x.data(), c.w.data(), 3, 10, 30),
                                            {},
                                            Product(x.data(), c.v.data(), 3, 10, 8),
                                            Product(x.data(), c.u.data(), 3, 10, 12),
                                            {}};
  for (int i = 0; i < 2; ++i) {
    std::vector<double> part = Product(y.data() + i * 40, c.wb.data() + i * 250, 4, 10, 25);
    exact[1].insert(exact[1].end(), part.begin(), part.end());
  }
  for (size_t i = 0; i < 120; ++i) exact[4].push_back(double{c.u[i]} + z[i]);
  for (size_t o = 0; o < 5; ++o) {
    ASSERT_EQ(got[o].size(), exact[o].size()) << "output " << o;
    for (size_t i = 0; i < exact[o].size(); ++i) {
      EXPECT_NEAR(got[o][i], exact[o][i], 1e-5) << "output " << o << ", element " << i;
    }
  }
}

// An int8 weight scaled to float when the session is created (the steps it runs once then): B
// packed there by a matmul_pack_b step after the multiply making it, the matmul reading the
// panels. A B made from an input, or also read by another op, is not.
constexpr const char* kScaled = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 10), "float32"), z: R.Tensor((10, 30), "float32")):
        q = R.const(Q, "int8")
        s = R.const(S, "float32")
        f = R.astype(q, "float32")
        w = R.multiply(f, s)
        u = R.multiply(f, R.const(2.0, "float32"))
        t = R.multiply(z, s)
        a = R.matmul(x, w)
        b = R.matmul(x, u)
        c = R.add(u, z)
        d = R.matmul(x, t)
        return (a, b, c, d)
)";

TEST(PackWeights, AWeightMadeWhenTheSessionIsCreatedIsPackedThere) {
  std::mt19937 rng(67);
  std::vector<float> q(300), s = Random(rng, 10);
  std::uniform_int_distribution<int> i8(-128, 127);
  for (float& v : q) v = static_cast<float>(i8(rng));
  std::string text = kScaled;
  std::string q_text = Literal(q, {10, 30});
  text.replace(text.find("Q"), 1, q_text);
  text.replace(text.find("S, \""), 1, Literal(s, {10, 1}));
  ir::IRModule mod = testing::Parse(text);
  CompileOptions options;
  options.fold_constants = false;
  std::vector<uint8_t> packed, plain;
  ASSERT_NO_FATAL_FAILURE(CompileBoth(mod, options, &packed, &plain));

  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(packed);
  ASSERT_TRUE(p);
  const pkg::Graph& g = *p->root().graphs()->Get(0);
  int packs = 0, packed_matmuls = 0;
  for (uint32_t i = 0; i < g.steps()->size(); ++i) {
    const pkg::Step* step = g.steps()->Get(i);
    if (step->kernel()->str() == "matmul_pack_b") {
      ++packs;
      // Right after the multiply making B; its output the 1-D panels.
      ASSERT_GT(i, 0u);
      EXPECT_EQ(g.steps()->Get(i - 1)->kernel()->str(), "multiply");
      const pkg::Value* out = g.values()->Get(static_cast<uint32_t>(step->outputs()->Get(0)));
      EXPECT_EQ(out->dims()->size(), 1u);
      EXPECT_EQ(out->byte_size(), cpu::PackedBFloats(10, 30) * 4);
    }
    if (step->kernel()->str() == "matmul" && rt::AttrView(step->attrs()).Has("packed_b")) {
      ++packed_matmuls;
      EXPECT_EQ(rt::AttrView(step->attrs()).Ints("packed_b"), (std::vector<int64_t>{10, 30}));
    }
  }
  EXPECT_EQ(packs, 1);
  EXPECT_EQ(packed_matmuls, 1);

  std::vector<float> x = Random(rng, 30), z = Random(rng, 300);
  auto run = [&](const std::vector<uint8_t>& package) {
    std::unique_ptr<rt::Session> session;
    EXPECT_TRUE(rt::Session::Create(test::LoadPackage(package), {}, &session).ok());
    std::vector<std::vector<float>> values;
    for (int r = 0; r < 2 && session; ++r) {  // the held panels read again by a second run
      std::vector<rt::OwnedTensor> out;
      rt::Status st =
          session->Run({test::Input("x", x, {3, 10}), test::Input("z", z, {10, 30})}, &out);
      EXPECT_TRUE(st.ok()) << st.message();
      for (const rt::OwnedTensor& t : out) values.push_back(test::Floats(t));
    }
    return values;
  };
  std::vector<std::vector<float>> got = run(packed), want = run(plain);
  ASSERT_EQ(got.size(), 8u);
  ASSERT_EQ(got, want);
  std::vector<float> w(300), u(300), t(300);
  for (size_t i = 0; i < 300; ++i) {
    w[i] = q[i] * s[i / 30];
    u[i] = q[i] * 2.0f;
    t[i] = z[i] * s[i / 30];
  }
  std::vector<std::vector<double>> exact = {Product(x.data(), w.data(), 3, 10, 30),
                                            Product(x.data(), u.data(), 3, 10, 30),
                                            {},
                                            Product(x.data(), t.data(), 3, 10, 30)};
  for (size_t i = 0; i < 300; ++i) exact[2].push_back(double{u[i]} + z[i]);
  for (size_t o = 0; o < 8; ++o) {
    for (size_t i = 0; i < exact[o % 4].size(); ++i) {
      EXPECT_NEAR(got[o][i], exact[o % 4][i], 1e-3) << "output " << o << ", element " << i;
    }
  }
}

// Subnormal values of constant weights (targets/pack_weights.h, FlushSubnormalWeights): a conv's
// weight and a matmul's B lose theirs, a constant that an add reads as well keeps every bit; the
// package computes what a float64 evaluation with the weights as given does.
TEST(PackWeights, SubnormalWeightsAreFlushedWhereOnlyProductsReadThem) {
  std::mt19937 rng(71);
  std::vector<float> w = Random(rng, 6 * 5 * 9), b = Random(rng, 300), u = Random(rng, 120);
  const float tiny[] = {1e-40f, -3e-39f, 7e-45f, -1.1e-38f};
  auto sprinkle = [&](std::vector<float>& v, size_t every) {
    for (size_t i = 0; i < v.size(); i += every) v[i] = tiny[i / every % 4];
  };
  sprinkle(w, 7);
  sprinkle(b, 5);
  sprinkle(u, 9);
  ASSERT_EQ(std::fpclassify(w[0]), FP_SUBNORMAL);
  const std::string text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 5, 6, 6), "float32"), y: R.Tensor((3, 10), "float32"), z: R.Tensor((10, 12), "float32")):
        w = R.const()" + Literal(w, {6, 5, 3, 3}) +
                           R"(, "float32")
        b = R.const()" + Literal(b, {10, 30}) +
                           R"(, "float32")
        u = R.const()" + Literal(u, {10, 12}) +
                           R"(, "float32")
        c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
        d = R.matmul(y, b)
        e = R.matmul(y, u)
        f = R.add(u, z)
        return (c, d, e, f)
)";
  ir::IRModule mod = testing::Parse(text);
  // The subnormal floats of each float32 buffer of the package `options` lower to.
  auto subnormals = [&](bool flush, std::vector<size_t>* counts,
                        std::vector<std::vector<float>>* buffers) {
    CompileOptions options;
    options.lower.flush_subnormal_weights = flush;
    Expected<Compiled> compiled = Compile(mod, options);
    ASSERT_TRUE(compiled) << compiled.error().ToString();
    Expected<PackageSpec> spec = Lower(compiled->module, options.lower);
    ASSERT_TRUE(spec) << spec.error().ToString();
    for (const GraphSpec& g : spec->graphs) {
      for (const ValueSpec& v : g.values) {
        if (v.kind != pkg::ValueKind::Constant || v.buffer < 0 ||
            v.dtype != static_cast<int32_t>(ir::DataType::kFloat32)) {
          continue;
        }
        const auto& bytes = *spec->buffers[static_cast<size_t>(v.buffer)];
        std::vector<float> f(bytes.size() / 4);
        std::memcpy(f.data(), bytes.data(), f.size() * 4);
        size_t n = 0;
        for (float x : f) n += std::fpclassify(x) == FP_SUBNORMAL;
        counts->push_back(n);
        buffers->push_back(std::move(f));
      }
    }
  };
  std::vector<size_t> kept, flushed;
  std::vector<std::vector<float>> kept_buffers, flushed_buffers;
  ASSERT_NO_FATAL_FAILURE(subnormals(false, &kept, &kept_buffers));
  ASSERT_NO_FATAL_FAILURE(subnormals(true, &flushed, &flushed_buffers));
  auto sum = [](const std::vector<size_t>& v) {
    size_t s = 0;
    for (size_t x : v) s += x;
    return s;
  };
  // Unflushed, the package holds every subnormal given: 39 + 60 + 14.
  EXPECT_EQ(sum(kept), 39u + 60u + 14u);
  // Flushed, only u's, its values bit for bit as given.
  EXPECT_EQ(sum(flushed), 14u);
  bool u_intact = false;
  for (const std::vector<float>& f : flushed_buffers) {
    u_intact |= f.size() == u.size() && std::memcmp(f.data(), u.data(), u.size() * 4) == 0;
  }
  EXPECT_TRUE(u_intact) << "the constant an add reads as well keeps its bits";

  // The flushed package against float64 with the weights as given.
  std::vector<float> x = Random(rng, 2 * 5 * 36), y = Random(rng, 30), z = Random(rng, 120);
  CompileOptions options;
  Expected<Compiled> compiled = Compile(mod, options);
  ASSERT_TRUE(compiled);
  std::unique_ptr<rt::Session> session;
  ASSERT_TRUE(rt::Session::Create(test::LoadPackage(compiled->package), {}, &session).ok());
  std::vector<rt::OwnedTensor> out;
  rt::Status st = session->Run({test::Input("x", x, {2, 5, 6, 6}), test::Input("y", y, {3, 10}),
                                test::Input("z", z, {10, 12})},
                               &out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(out.size(), 4u);
  std::vector<double> conv(2 * 6 * 36, 0.0);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 6; ++o)
      for (int i = 0; i < 5; ++i)
        for (int r = 0; r < 6; ++r)
          for (int c = 0; c < 6; ++c)
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                int iy = r + ky - 1, ix = c + kx - 1;
                if (iy < 0 || iy >= 6 || ix < 0 || ix >= 6) continue;
                conv[((n * 6 + o) * 6 + r) * 6 + c] +=
                    double{x[((n * 5 + i) * 6 + iy) * 6 + ix]} * w[((o * 5 + i) * 3 + ky) * 3 + kx];
              }
  std::vector<std::vector<double>> exact = {conv, Product(y.data(), b.data(), 3, 10, 30),
                                            Product(y.data(), u.data(), 3, 10, 12)};
  for (size_t k = 0; k < exact.size(); ++k) {
    std::vector<float> got = test::Floats(out[k]);
    ASSERT_EQ(got.size(), exact[k].size()) << "output " << k;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], exact[k][i], 1e-5 + 1e-5 * std::abs(exact[k][i]))
          << "output " << k << ", element " << i;
    }
  }
}

}  // namespace
}  // namespace quilt::compiler
