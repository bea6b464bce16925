// Sessions made and dropped many times over, through the C++ classes and the C API, on success
// and on the error paths: under the sanitizer build (build-asan, ASAN_OPTIONS=detect_leaks=1)
// LeakSanitizer reports anything a session, its thread pool, its prepared steps or a refusal
// leaves behind; elsewhere they check that each of many sessions still computes the same.
#include <gtest/gtest.h>

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

TEST(SessionLifetime, ManySessionsMadeRunAndDropped) {
  std::vector<uint8_t> bytes = Package();
  ASSERT_FALSE(bytes.empty());
  std::vector<float> first;
  for (int round = 0; round < kRounds; ++round) {
    std::unique_ptr<rt::LoadedPackage> p;
    ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
    rt::SessionOptions options;
    options.threads = 1 + round % 3;  // with and without a thread pool
    std::unique_ptr<rt::Session> s;
    rt::Status st = rt::Session::Create(std::move(p), options, &s);
    ASSERT_TRUE(st.ok()) << st.message();
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

}  // namespace
}  // namespace quilt
