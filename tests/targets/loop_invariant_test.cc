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

#include "runtime/src/session.h"
#include "tests/importers/onnx_test_util.h"
#include "tests/runtime/onnx_session.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt::compiler {
namespace {

using onnx::TensorProto;
using quilt::testing::OnnxGraph;
using quilt::testing::SetGraph;

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
  SetGraph(g.Node("Loop", {"n", "go", "h", "w"}, {"h_last", "w_last"}, "loop"), "body",
           *body.graph());
  g.Output("h_last", TensorProto::FLOAT);
  g.Output("w_last", TensorProto::FLOAT);
  return g;
}

// Adds one run to each node a profiled step names: a fused step names its members' nodes,
// joined by " + ".
void CountNodes(const std::string& nodes, std::map<std::string, int>* runs) {
  for (size_t at = 0;;) {
    size_t plus = nodes.find(" + ", at);
    ++(*runs)[nodes.substr(at, plus == std::string::npos ? std::string::npos : plus - at)];
    if (plus == std::string::npos) return;
    at = plus + 3;
  }
}

TEST(LoopInvariants, ComputedOnceAndHeldForTheOtherIterations) {
  OnnxGraph g = Model();
  std::unique_ptr<rt::Session> s = test::SessionFromOnnx(g);
  ASSERT_TRUE(s);
  rt::Status st = rt::Status::Ok();
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
    for (const rt::StepProfile& step : profile.steps) CountNodes(step.node, &runs);
    EXPECT_EQ(runs["transpose"], 1) << "n " << n;
    EXPECT_EQ(runs["project"], 1) << "n " << n;
    EXPECT_EQ(runs["decay"], n);
    EXPECT_EQ(runs["step"], n);
  }
}

// h <- 0.5 * (h . w + h . v + h . u) for n iterations, h (1 x 2) carried; w (2 x 2) a weight of
// the model handed to the body as loop state (carried through unchanged, as paddle2onnx's
// decoders take theirs), v the same from an input of the model, u a weight the body reads from
// the outer graph (captured).
OnnxGraph WeightsAsLoopState() {
  OnnxGraph body(13);
  body.Input("i", TensorProto::INT64, {}).Input("c", TensorProto::BOOL, {});
  body.Input("h_in", TensorProto::FLOAT, {1, 2}).Input("w_in", TensorProto::FLOAT, {2, 2});
  body.Input("v_in", TensorProto::FLOAT, {2, 2});
  body.Initializer<float>("half", TensorProto::FLOAT, {}, {0.5f});
  body.Node("Identity", {"c"}, {"c_out"}, "keep");
  body.Node("MatMul", {"h_in", "w_in"}, {"a"}, "by_w");
  body.Node("MatMul", {"h_in", "v_in"}, {"b"}, "by_v");
  body.Node("MatMul", {"h_in", "u"}, {"d"}, "by_u");
  body.Node("Add", {"a", "b"}, {"ab"}, "sum1");
  body.Node("Add", {"ab", "d"}, {"abd"}, "sum2");
  body.Node("Mul", {"abd", "half"}, {"h_out"}, "scale");
  body.Output("c_out", TensorProto::BOOL, std::vector<testing::Dim>{});
  body.Output("h_out", TensorProto::FLOAT, std::vector<testing::Dim>{1, 2});
  body.Output("w_in", TensorProto::FLOAT, std::vector<testing::Dim>{2, 2});
  body.Output("v_in", TensorProto::FLOAT, std::vector<testing::Dim>{2, 2});
  OnnxGraph g(13);
  g.Input("n", TensorProto::INT64, {}).Input("go", TensorProto::BOOL, {});
  g.Input("h", TensorProto::FLOAT, {1, 2}).Input("v", TensorProto::FLOAT, {2, 2});
  g.Initializer<float>("w", TensorProto::FLOAT, {2, 2}, {0.5f, -1.0f, 0.75f, 0.25f});
  g.Initializer<float>("u", TensorProto::FLOAT, {2, 2}, {-0.25f, 0.5f, 1.0f, -0.5f});
  SetGraph(g.Node("Loop", {"n", "go", "h", "w", "v"}, {"h_last", "w_last", "v_last"}, "loop"),
           "body", *body.graph());
  g.Output("h_last", TensorProto::FLOAT);
  g.Output("w_last", TensorProto::FLOAT);
  g.Output("v_last", TensorProto::FLOAT);
  return g;
}

// A weight of the model that the body takes as loop state, or captures, is the same in every
// iteration of every run: the matmuls by w and u keep their packed weight for the session. The
// one by v, which comes from an input, must not: runs with other v compute with theirs.
TEST(LoopInvariants, WeightsHandedToTheBodyAsLoopStateAreKeptOnlyWhereTheyAreTheModels) {
  OnnxGraph g = WeightsAsLoopState();
  std::unique_ptr<rt::Session> s = test::SessionFromOnnx(g);
  ASSERT_TRUE(s);
  rt::Status st = rt::Status::Ok();
  const double w[4] = {0.5, -1, 0.75, 0.25}, u[4] = {-0.25, 0.5, 1, -0.5};
  for (int run = 0; run < 4; ++run) {
    int64_t n = 1 + run % 3;
    bool go = true;
    std::vector<float> h = {1.0f + 0.5f * static_cast<float>(run), -2.0f};
    std::vector<float> v = {0.25f * static_cast<float>(run), 1.0f - static_cast<float>(run), 0.5f,
                            -0.125f * static_cast<float>(run + 1)};
    std::vector<rt::OwnedTensor> out;
    st = s->Run({{"n", {rt::DType::kInt64, {}, &n}},
                 {"go", {rt::DType::kBool, {}, &go}},
                 test::Input("h", h, {1, 2}),
                 test::Input("v", v, {2, 2})},
                &out);
    ASSERT_TRUE(st.ok()) << st.message();
    double want[2] = {h[0], h[1]};
    for (int64_t it = 0; it < n; ++it) {
      double next[2];
      for (int j = 0; j < 2; ++j) {
        double sum = 0;
        for (int k = 0; k < 2; ++k) sum += want[k] * (w[k * 2 + j] + v[k * 2 + j] + u[k * 2 + j]);
        next[j] = 0.5 * sum;
      }
      want[0] = next[0];
      want[1] = next[1];
    }
    ASSERT_EQ(out.size(), 3u);
    std::vector<float> got = test::Floats(out[0]);
    ASSERT_EQ(got.size(), 2u);
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(got[j], want[j], 1e-5) << "run " << run << ", " << j;
    EXPECT_EQ(test::Floats(out[2]), v) << "run " << run;
  }
}

// h <- 0.5 * h + sum over rows of x . w^T for n iterations, x (T x 3) read from the outer graph,
// T known only when running; w (2 x 3) carried, handed back as paddle2onnx's decoders hand their
// weights back: Squeeze(Unsqueeze(w) + 0.0). The importer makes that w itself (an add of zero
// and a reshape back to w's shape are w), so the body passes w through and the transpose, the
// product and its sum, of T rows, run in the first iteration only.
OnnxGraph SymbolicInvariantsThroughNoops() {
  OnnxGraph body(13);
  body.Input("i", TensorProto::INT64, {}).Input("c", TensorProto::BOOL, {});
  body.Input("h_in", TensorProto::FLOAT, {1, 2}).Input("w_in", TensorProto::FLOAT, {2, 3});
  body.Initializer<float>("half", TensorProto::FLOAT, {}, {0.5f});
  body.Initializer<float>("zero", TensorProto::FLOAT, {}, {0.0f});
  body.Initializer<int64_t>("axis0", TensorProto::INT64, {1}, {0});
  body.Node("Identity", {"c"}, {"c_out"}, "keep");
  body.Node("Unsqueeze", {"w_in", "axis0"}, {"wu"}, "unsqueeze");
  body.Node("Add", {"wu", "zero"}, {"wz"}, "add_zero");
  body.Node("Squeeze", {"wz", "axis0"}, {"w_out"}, "squeeze");
  body.Node("Transpose", {"w_in"}, {"wt"}, "transpose");
  body.Node("MatMul", {"x", "wt"}, {"p"}, "project");
  body.Node("ReduceSum", {"p", "axis0"}, {"ps"}, "total");
  body.Node("Mul", {"h_in", "half"}, {"hh"}, "decay");
  body.Node("Add", {"hh", "ps"}, {"h_out"}, "step");
  body.Output("c_out", TensorProto::BOOL, std::vector<testing::Dim>{});
  body.Output("h_out", TensorProto::FLOAT, std::vector<testing::Dim>{1, 2});
  body.Output("w_out", TensorProto::FLOAT, std::vector<testing::Dim>{2, 3});
  OnnxGraph g(13);
  g.Input("n", TensorProto::INT64, {}).Input("go", TensorProto::BOOL, {});
  g.Input("h", TensorProto::FLOAT, {1, 2}).Input("w", TensorProto::FLOAT, {2, 3});
  g.Input("x", TensorProto::FLOAT, {"T", 3});
  SetGraph(g.Node("Loop", {"n", "go", "h", "w"}, {"h_last", "w_last"}, "loop"), "body",
           *body.graph());
  g.Output("h_last", TensorProto::FLOAT);
  g.Output("w_last", TensorProto::FLOAT);
  return g;
}

TEST(LoopInvariants, OfSymbolicShapeThroughAnExportersNoopsComputedOnce) {
  OnnxGraph g = SymbolicInvariantsThroughNoops();
  std::unique_ptr<rt::Session> s = test::SessionFromOnnx(g);
  ASSERT_TRUE(s);
  for (int64_t rows : {1, 4, 2}) {
    for (int64_t n : {1, 6}) {
      bool go = true;
      std::vector<float> h = {1.0f, -2.0f}, w = {0.5f, -1, 2, 3, 0.25f, -0.75f};
      std::vector<float> x;
      for (int64_t r = 0; r < rows * 3; ++r) x.push_back(0.25f * static_cast<float>(r % 5) - 0.5f);
      std::vector<rt::OwnedTensor> out;
      rt::RunProfile profile;
      rt::Status st = s->Run({{"n", {rt::DType::kInt64, {}, &n}},
                              {"go", {rt::DType::kBool, {}, &go}},
                              test::Input("h", h, {1, 2}),
                              test::Input("w", w, {2, 3}),
                              test::Input("x", x, {rows, 3})},
                             &out, &profile);
      ASSERT_TRUE(st.ok()) << st.message();
      double want[2] = {h[0], h[1]};
      for (int64_t it = 0; it < n; ++it) {
        for (int j = 0; j < 2; ++j) {
          double p = 0;
          for (int64_t r = 0; r < rows; ++r)
            for (int k = 0; k < 3; ++k) p += double{x[r * 3 + k]} * w[j * 3 + k];
          want[j] = 0.5 * want[j] + p;
        }
      }
      ASSERT_EQ(out.size(), 2u);
      EXPECT_EQ(test::Floats(out[1]), w) << "rows " << rows << ", n " << n;
      std::vector<float> got = test::Floats(out[0]);
      ASSERT_EQ(got.size(), 2u);
      for (int j = 0; j < 2; ++j)
        EXPECT_NEAR(got[j], want[j], 1e-5) << "rows " << rows << ", n " << n;
      std::map<std::string, int> runs;
      for (const rt::StepProfile& step : profile.steps) CountNodes(step.node, &runs);
      EXPECT_EQ(runs["project"], 1) << "rows " << rows << ", n " << n;
      EXPECT_EQ(runs["total"], 1) << "rows " << rows << ", n " << n;
      EXPECT_EQ(runs["add_zero"], 0) << "rows " << rows << ", n " << n;
      EXPECT_EQ(runs["squeeze"], 0) << "rows " << rows << ", n " << n;
      EXPECT_EQ(runs["decay"], n);
      EXPECT_EQ(runs["step"], n);
    }
  }
}

}  // namespace
}  // namespace quilt::compiler
