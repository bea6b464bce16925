// Loop-invariant steps of a while_loop body run in the loop's first iteration only: a step that
// reads only captured values, carried values the body passes through unchanged, or constants
// (an exporter's weight transposed in the body, its product with a captured input) is computed
// once and its result held for the other iterations, which compute what the model says. A carried
// value passed through unchanged is kept by the loop, not copied back each iteration.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "importers/onnx/importer.h"
#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/importers/onnx_test_util.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt::compiler {
namespace {

using onnx::TensorProto;
using quilt::testing::OnnxGraph;

// h <- 0.5 * h + x . w^T for n iterations: w (2 x 3) carried through unchanged, x (1 x 3) read
// from the outer graph, h (1 x 2) carried.
OnnxGraph Model() {
  OnnxGraph body(13);
  body.Input("i", TensorProto::INT64, {}).Input("c", TensorProto::BOOL, {});
  body.Input("h_in", TensorProto::FLOAT, {1, 2}).Input("w_in", TensorProto::FLOAT, {2, 3});
  body.Initializer<float>("half", TensorProto::FLOAT, {}, {0.5f});
  body.Node("Identity", {"c"}, {"c_out"}, "keep");
  body.Node("Transpose", {"w_in"}, {"wt"}, "transpose");
  body.Node("MatMul", {"x", "wt"}, {"p"}, "project");
  body.Node("Mul", {"h_in", "half"}, {"hh"}, "decay");
  body.Node("Add", {"hh", "p"}, {"h_out"}, "step");
  body.Output("c_out", TensorProto::BOOL, std::vector<testing::Dim>{});
  body.Output("h_out", TensorProto::FLOAT, std::vector<testing::Dim>{1, 2});
  body.Output("w_in", TensorProto::FLOAT, std::vector<testing::Dim>{2, 3});
  OnnxGraph g(13);
  g.Input("n", TensorProto::INT64, {}).Input("go", TensorProto::BOOL, {});
  g.Input("h", TensorProto::FLOAT, {1, 2}).Input("w", TensorProto::FLOAT, {2, 3});
  g.Input("x", TensorProto::FLOAT, {1, 3});
  onnx::NodeProto& loop = g.Node("Loop", {"n", "go", "h", "w"}, {"h_last", "w_last"}, "loop");
  onnx::AttributeProto* a = loop.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = *body.graph();
  g.Output("h_last", TensorProto::FLOAT);
  g.Output("w_last", TensorProto::FLOAT);
  return g;
}

TEST(LoopInvariants, ComputedOnceAndHeldForTheOtherIterations) {
  OnnxGraph g = Model();
  std::string bytes = g.Bytes();
  Expected<ir::IRModule> mod =
      importers::onnx::ImportOnnxBytes(bytes.data(), bytes.size(), "", "loop.onnx", {});
  ASSERT_TRUE(mod) << mod.error().ToString();
  Expected<Compiled> c = Compile(*mod, {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::LoadedPackage> loaded;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(c->package.data(), c->package.size(), &loaded).ok());
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(std::move(loaded), {}, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  for (int64_t n : {1, 5, 9}) {
    bool go = true;
    std::vector<float> h = {1.0f, -2.0f}, w = {0.5f, -1, 2, 3, 0.25f, -0.75f};
    std::vector<float> x = {0.1f * static_cast<float>(n), -0.4f, 1.5f};
    std::vector<rt::OwnedTensor> out;
    rt::RunProfile profile;
    st = s->Run({{"n", {rt::DType::kInt64, {}, &n}},
                 {"go", {rt::DType::kBool, {}, &go}},
                 test::Input("h", h, {1, 2}),
                 test::Input("w", w, {2, 3}),
                 test::Input("x", x, {1, 3})},
                &out, &profile);
    ASSERT_TRUE(st.ok()) << st.message();
    double want[2] = {h[0], h[1]};
    for (int64_t it = 0; it < n; ++it) {
      for (int j = 0; j < 2; ++j) {
        double p = 0;
        for (int k = 0; k < 3; ++k) p += double{x[k]} * w[j * 3 + k];
        want[j] = 0.5 * want[j] + p;
      }
    }
    ASSERT_EQ(out.size(), 2u);
    // w, carried through unchanged: kept by the loop rather than read back each iteration.
    EXPECT_EQ(test::Floats(out[1]), w) << "n " << n;
    std::vector<float> got = test::Floats(out[0]);
    ASSERT_EQ(got.size(), 2u);
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(got[j], want[j], 1e-5) << "n " << n << ", " << j;
    // The transpose and the product ran once; the decay and the add in every iteration.
    std::map<std::string, int> runs;
    for (const rt::StepProfile& step : profile.steps) ++runs[step.node];
    EXPECT_EQ(runs["transpose"], 1) << "n " << n;
    EXPECT_EQ(runs["project"], 1) << "n " << n;
    EXPECT_EQ(runs["decay"], n);
    EXPECT_EQ(runs["step"], n);
  }
}

}  // namespace
}  // namespace quilt::compiler
