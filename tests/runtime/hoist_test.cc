// Steps that read constants alone run once, when the session is created: the runs skip them (a
// profile lists no such step) and compute what the package says, run after run.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/runtime/text_session.h"
#include "tests/test_util.h"

namespace quilt {
namespace {

// A weight stored as int8 and scaled (dequantized) before a matmul; a constant-only sum that is
// a graph output (stays in the run: outputs are made by every run); and an input-dependent add.
constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32")):
        w = R.astype(R.const([[1, -2], [3, 4], [-5, 6]], "int8"), dtype="float32")
        ws = R.multiply(w, R.const(0.5, "float32"))
        y = R.matmul(x, ws)
        k = R.add(R.const([1.0, 2.0], "float32"), R.const([3.0, 4.5], "float32"))
        z = R.add(y, k)
        return (z, k)
)";

TEST(Hoist, ConstantStepsRunOnceAtCreation) {
  std::unique_ptr<rt::Session> s = test::SessionFromText(kModel);
  ASSERT_TRUE(s);
  rt::Status st = rt::Status::Ok();
  const double w[3][2] = {{0.5, -1}, {1.5, 2}, {-2.5, 3}};
  const double k[2] = {4, 6.5};
  for (int64_t n : {2, 5, 1}) {
    std::vector<float> x(static_cast<size_t>(n * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 1.0f;
    std::vector<rt::OwnedTensor> out;
    rt::RunProfile profile;
    st = s->Run({test::Input("x", x, {n, 3})}, &out, &profile);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 2u);
    std::vector<float> z = test::Floats(out[0]), kk = test::Floats(out[1]);
    ASSERT_EQ(z.size(), static_cast<size_t>(n * 2));
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < 2; ++j) {
        double want = k[j];
        for (int c3 = 0; c3 < 3; ++c3) want += x[static_cast<size_t>(i * 3 + c3)] * w[c3][j];
        EXPECT_NEAR(z[static_cast<size_t>(i * 2 + j)], want, 1e-5) << i << ", " << j;
      }
    }
    EXPECT_EQ(kk, (std::vector<float>{4.0f, 6.5f}));
    // The run: the matmul, the add of k, and k itself (a graph output); not the astype or the
    // multiply of the weight.
    std::vector<std::string> ops;
    for (const rt::StepProfile& step : profile.steps) ops.push_back(step.op);
    EXPECT_EQ(ops, (std::vector<std::string>{"matmul", "add", "add"}));
  }
}

// Kernels keep what they derive from constant inputs (a packed weight) for the session: the
// matmul by a constant weight is packed once, the one by an input never. Runs with other inputs
// then compute with those inputs, not with what an earlier run packed.
constexpr const char* kTwoMatmuls = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3, 30), "float32")):
        w = R.const([[1.0, -2.0, 0.5], [3.0, 4.0, -1.5], [-5.0, 6.0, 2.0]], "float32")
        a = R.matmul(x, w)
        b = R.matmul(a, y)
        return b
)";

TEST(Hoist, KernelsKeepOnlyWhatConstantInputsDetermine) {
  std::unique_ptr<rt::Session> s = test::SessionFromText(kTwoMatmuls);
  ASSERT_TRUE(s);
  rt::Status st = rt::Status::Ok();
  const double w[3][3] = {{1, -2, 0.5}, {3, 4, -1.5}, {-5, 6, 2}};
  for (int run = 0; run < 3; ++run) {
    std::vector<float> x(6), y(90);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i) - 1.0f + run;
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 7 + run * 13) % 11) - 5;
    std::vector<rt::OwnedTensor> out;
    st = s->Run({test::Input("x", x, {2, 3}), test::Input("y", y, {3, 30})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<float> b = test::Floats(out[0]);
    ASSERT_EQ(b.size(), 60u);
    for (int i = 0; i < 2; ++i) {
      double a[3] = {0, 0, 0};
      for (int j = 0; j < 3; ++j) {
        for (int q = 0; q < 3; ++q) a[j] += x[static_cast<size_t>(i * 3 + q)] * w[q][j];
      }
      for (int j = 0; j < 30; ++j) {
        double want = 0;
        for (int q = 0; q < 3; ++q) want += a[q] * y[static_cast<size_t>(q * 30 + j)];
        EXPECT_NEAR(b[static_cast<size_t>(i * 30 + j)], want, 1e-4 * (1 + std::abs(want)))
            << "run " << run << ", " << i << ", " << j;
      }
    }
  }
}

}  // namespace
}  // namespace quilt
