// Sessions made and dropped many times over, through the C++ classes and the C API, on success
// and on the error paths: under the sanitizer build (build-asan, ASAN_OPTIONS=detect_leaks=1)
// LeakSanitizer reports anything a session, its thread pool, its prepared steps or a refusal
// leaves behind; elsewhere they check that each of many sessions still computes the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "quilt/quilt.h"
#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt {
namespace {

constexpr int kRounds = 100;

// Constant steps (hoisted: run once at creation, held by the session), a matmul, a fused
// epilogue and a softmax: what a session prepares and owns.
constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32")):
        w = R.astype(R.const([[1, -2], [3, 4], [-5, 6]], "int8"), dtype="float32")
        ws = R.multiply(w, R.const(0.5, "float32"))
        y = R.matmul(x, ws)
        b = R.add(y, R.const([1.0, 2.0], "float32"))
        z = R.nn.relu(b)
        s = R.nn.softmax(z, axis=-1)
        return s
)";

std::vector<uint8_t> Package() {
  compiler::CompileOptions options;
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(kModel), options);
  EXPECT_TRUE(c) << c.error().ToString();
  return c ? c->package : std::vector<uint8_t>{};
}

std::vector<float> RunOnce(const rt::Session& s) {
  std::vector<float> x = {1, 0.5f, -1, 2, 0, 0.25f};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s.Run({test::Input("x", x, {2, 3})}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out.empty() ? std::vector<float>{} : test::Floats(out[0]);
}

// A session of the package `bytes` with `threads` threads; null (and a failure) where it is
// not made.
std::unique_ptr<rt::Session> OpenSession(const std::vector<uint8_t>& bytes, int threads) {
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return nullptr;
  rt::SessionOptions options;
  options.threads = threads;
  std::unique_ptr<rt::Session> s;
  st = rt::Session::Create(std::move(p), options, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

TEST(SessionLifetime, ManySessionsMadeRunAndDropped) {
  std::vector<uint8_t> bytes = Package();
  ASSERT_FALSE(bytes.empty());
  std::vector<float> first;
  for (int round = 0; round < kRounds; ++round) {
    // With and without a thread pool.
    std::unique_ptr<rt::Session> s = OpenSession(bytes, 1 + round % 3);
    ASSERT_TRUE(s) << "round " << round;
    std::vector<float> y = RunOnce(*s);
    if (round == 0) first = y;
    ASSERT_EQ(y, first) << "round " << round;
  }
}

TEST(SessionLifetime, ManySessionsOfOnePackage) {
  std::vector<uint8_t> bytes = Package();
  ASSERT_FALSE(bytes.empty());
  std::unique_ptr<rt::LoadedPackage> loaded;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &loaded).ok());
  std::shared_ptr<const rt::LoadedPackage> package = std::move(loaded);
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<rt::Session> s;
    ASSERT_TRUE(rt::Session::Create(package, {}, &s).ok());
    if (round % 10 == 0) RunOnce(*s);
  }
  EXPECT_EQ(package.use_count(), 1);
}

TEST(SessionLifetime, RefusedSessionsAndPackagesLeaveNothing) {
  std::vector<uint8_t> bytes = Package();
  ASSERT_FALSE(bytes.empty());
  std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + bytes.size() / 2);
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<rt::LoadedPackage> p;
    EXPECT_FALSE(rt::LoadedPackage::FromMemory(truncated.data(), truncated.size(), &p).ok());
    ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
    rt::SessionOptions options;
    options.devices = {"opencl"};  // the package's steps run on the CPU: refused
    std::unique_ptr<rt::Session> s;
    EXPECT_FALSE(rt::Session::Create(std::move(p), options, &s).ok());
  }
}

TEST(SessionLifetime, ManySessionsThroughTheCApi) {
  std::vector<uint8_t> bytes = Package();
  ASSERT_FALSE(bytes.empty());
  std::vector<float> x = {1, 0.5f, -1, 2, 0, 0.25f};
  const int64_t shape[] = {2, 3};
  quilt_tensor_t input = {"x", QUILT_DTYPE_F32, 2, shape, x.data(), x.size() * sizeof(float)};
  for (int round = 0; round < kRounds; ++round) {
    quilt_package_t* package = nullptr;
    ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &package), nullptr);
    quilt_session_options_t options{};
    options.threads = 1 + round % 2;
    options.devices = "cpu";
    quilt_session_t* session = nullptr;
    ASSERT_EQ(quilt_session_create(package, &options, &session), nullptr);
    // The session keeps the package alive: the caller's handle may go first.
    quilt_package_free(package);
    quilt_outputs_t* outputs = nullptr;
    ASSERT_EQ(quilt_session_run(session, &input, 1, &outputs), nullptr);
    EXPECT_EQ(quilt_outputs_count(outputs), 1u);
    quilt_outputs_free(outputs);
    // A refused run returns a status the caller frees.
    quilt_status_t* refused = quilt_session_run(session, nullptr, 0, &outputs);
    ASSERT_NE(refused, nullptr);
    quilt_status_free(refused);
    quilt_session_free(session);
  }
}

// kModel's output for the rows of x, in float64.
std::vector<double> Reference(const std::vector<float>& x) {
  const double w[3][2] = {{1, -2}, {3, 4}, {-5, 6}};
  std::vector<double> out;
  for (size_t r = 0; r + 3 <= x.size(); r += 3) {
    double z[2];
    for (int j = 0; j < 2; ++j) {
      double y = 1.0 + j;
      for (int k = 0; k < 3; ++k) y += x[r + k] * w[k][j] * 0.5;
      z[j] = std::max(y, 0.0);
    }
    double m = std::max(z[0], z[1]);
    double e0 = std::exp(z[0] - m), e1 = std::exp(z[1] - m);
    out.push_back(e0 / (e0 + e1));
    out.push_back(e1 / (e0 + e1));
  }
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6) << what << " [" << i << "]";
}

// A run's host output is its value's own memory, handed over rather than copied: it stays good
// after the session and its package are gone (LeakSanitizer and AddressSanitizer watch the
// memory going back to a pool that outlived its device), and an output the caller keeps is not
// the memory a later run writes.
TEST(SessionLifetime, OutputsOutliveTheSessionAndLaterRuns) {
  std::vector<uint8_t> bytes = Package();
  ASSERT_FALSE(bytes.empty());
  for (int threads : {1, 2}) {
    std::vector<float> x1 = {1, 0.5f, -1, 2, 0, 0.25f}, x2 = {-3, 1, 2, 0.5f, 0.5f, 0.5f};
    std::vector<rt::OwnedTensor> kept, out;
    {
      std::unique_ptr<rt::Session> s = OpenSession(bytes, threads);
      ASSERT_TRUE(s);
      rt::Status st = s->Run({test::Input("x", x1, {2, 3})}, &kept);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(kept.size(), 1u);
      EXPECT_TRUE(kept[0].data.held()) << "the output was copied, not handed over";
      for (int run = 0; run < 3; ++run) {
        st = s->Run({test::Input("x", x2, {2, 3})}, &out);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(out.size(), 1u);
        EXPECT_NE(out[0].data.data(), kept[0].data.data());
        ExpectNear(test::Floats(out[0]), Reference(x2), "a later run");
        ExpectNear(test::Floats(kept[0]), Reference(x1), "the kept output, after a later run");
      }
      // A copy of an output is a copy of its bytes.
      rt::OwnedTensor copy = kept[0];
      EXPECT_FALSE(copy.data.held());
      copy.data[0] = 0xff;
      EXPECT_NE(copy.data, kept[0].data);
    }
    ExpectNear(test::Floats(kept[0]), Reference(x1), "after the session is gone");
    ExpectNear(test::Floats(out[0]), Reference(x2), "after the session is gone");
    // Resized, an output keeps its first bytes in memory of its own.
    std::vector<float> before = test::Floats(out[0]);
    out[0].data.resize(out[0].data.size() + 4);
    EXPECT_FALSE(out[0].data.held());
    out[0].data.resize(out[0].data.size() - 4);
    EXPECT_EQ(test::Floats(out[0]), before);
  }
}

// What the run does not own whole is copied: an output that is the caller's input, one that is
// a constant of the package, and a value returned twice (two outputs, not one memory).
TEST(SessionLifetime, OutputsTheRunDoesNotOwnAreCopied) {
  constexpr const char* kShared = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        y = R.multiply(x, R.const(2.0, "float32"))
        return (x, y, y, R.const([7.0, 8.0], "float32"))
)";
  compiler::CompileOptions options;
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(kShared), options);
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::Session> s = OpenSession(c->package, 1);
  ASSERT_TRUE(s);
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run({test::Input("x", x, {2, 3})}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(out.size(), 4u);
  std::vector<float> doubled = {2, 4, 6, 8, 10, 12};
  EXPECT_NE(static_cast<const void*>(out[0].data.data()), static_cast<const void*>(x.data()));
  EXPECT_NE(out[1].data.data(), out[2].data.data());
  x.assign(6, -1.f);   // the caller's input changes after the run: its output does not
  out[1].data[0] = 0;  // nor does one output change with the other
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(test::Floats(out[2]), doubled);
  EXPECT_EQ(test::Floats(out[3]), (std::vector<float>{7, 8}));
  // The package's constant is as it was for the next run.
  st = s->Run({test::Input("x", x, {2, 3})}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[3]), (std::vector<float>{7, 8}));
  EXPECT_EQ(test::Floats(out[1]), std::vector<float>(6, -2.f));
}

// Through the C API: the outputs stay good after their session is freed.
TEST(SessionLifetime, CApiOutputsOutliveTheirSession) {
  std::vector<uint8_t> bytes = Package();
  ASSERT_FALSE(bytes.empty());
  std::vector<float> x = {1, 0.5f, -1, 2, 0, 0.25f};
  const int64_t shape[] = {2, 3};
  quilt_tensor_t input = {"x", QUILT_DTYPE_F32, 2, shape, x.data(), x.size() * sizeof(float)};
  quilt_package_t* package = nullptr;
  ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &package), nullptr);
  quilt_session_options_t options{};
  quilt_session_t* session = nullptr;
  ASSERT_EQ(quilt_session_create(package, &options, &session), nullptr);
  quilt_package_free(package);
  quilt_outputs_t* outputs = nullptr;
  ASSERT_EQ(quilt_session_run(session, &input, 1, &outputs), nullptr);
  quilt_session_free(session);
  quilt_tensor_t y;
  ASSERT_EQ(quilt_outputs_get(outputs, 0, &y), nullptr);
  ASSERT_EQ(y.byte_size, 4 * sizeof(float));
  const auto* v = static_cast<const float*>(y.data);
  ExpectNear(std::vector<float>(v, v + 4), Reference(x), "after quilt_session_free");
  quilt_outputs_free(outputs);
}

}  // namespace
}  // namespace quilt
