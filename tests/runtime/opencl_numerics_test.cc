// Numerics the OpenCL kernels must share with the CPU: division and square root correctly rounded
// (OpenCL allows 2.5 and 3 ulp unless a program asks otherwise, and GPU drivers take it; a
// quantization scale one ulp off then moves values across a rounding step, as ONNX's
// DynamicQuantizeLinear showed on a GPU). Checked bit for bit against the float64 result rounded
// to float32, which is the correctly rounded float32 result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/src/device/device.h"
#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt {
namespace {

constexpr const char* kDivideSqrt = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")):
        q = R.divide(x, y)
        r = R.sqrt(x)
        return (q, r)
)";

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(OpenClNumerics, DivisionAndSqrtAreCorrectlyRounded) {
  std::unique_ptr<rt::Device> cl;
  rt::Status st = rt::CreateDevice(rt::DeviceKind::kOpenCl, 0, {}, &cl);
  if (!st.ok()) GTEST_SKIP() << "no OpenCL device here: " << st.message();
  compiler::CompileOptions options;
  options.devices = {"opencl"};
  options.strict = true;  // both ops on OpenCL, or no package
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(kDivideSqrt), options);
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::LoadedPackage> p;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(c->package.data(), c->package.size(), &p).ok());
  std::unique_ptr<rt::Session> s;
  st = rt::Session::Create(std::move(p), {}, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  // Quotients and roots spread over many binades, from a fixed generator.
  std::vector<float> x, y;
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  for (int i = 0; i < 20000; ++i) {
    float a = static_cast<float>(next() % 1000000 + 1) *
              std::ldexp(1.0f, static_cast<int>(next() % 40) - 20);
    float b = static_cast<float>(next() % 1000 + 1) *
              std::ldexp(1.0f, static_cast<int>(next() % 20) - 10);
    x.push_back(a);
    y.push_back(b);
  }
  auto n = static_cast<int64_t>(x.size());
  std::vector<rt::OwnedTensor> out;
  st = s->Run({test::Input("x", x, {n}), test::Input("y", y, {n})}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<float> q = test::Floats(out[0]), r = test::Floats(out[1]);
  ASSERT_EQ(q.size(), x.size());
  int wrong_q = 0, wrong_r = 0;
  std::string first;
  for (size_t i = 0; i < x.size(); ++i) {
    float want_q = static_cast<float>(static_cast<double>(x[i]) / static_cast<double>(y[i]));
    float want_r = static_cast<float>(std::sqrt(static_cast<double>(x[i])));
    if (Bits(q[i]) != Bits(want_q) && wrong_q++ == 0) {
      first += " " + std::to_string(x[i]) + " / " + std::to_string(y[i]);
    }
    if (Bits(r[i]) != Bits(want_r) && wrong_r++ == 0)
      first += " sqrt(" + std::to_string(x[i]) + ")";
  }
  EXPECT_EQ(wrong_q, 0) << "quotients not correctly rounded on " << cl->info().name << ":" << first;
  EXPECT_EQ(wrong_r, 0) << "roots not correctly rounded on " << cl->info().name << ":" << first;
}

}  // namespace
}  // namespace quilt
