// quiltc, quilt-run and quilt-inspect on packages, as a user runs them: exit codes, messages,
// files written, and results checked against hand-computed values.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/importers/onnx_test_util.h"
#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"
#include "tools/tensor_io.h"

namespace {

namespace fs = std::filesystem;

using Result = quilt::testing::ToolResult;

Result Tool(const std::string& name, const std::string& args, const std::string& env = "") {
  return quilt::testing::RunTool(name, args, env);
}

using quilt::testing::ReadAll;
using quilt::testing::StoredZip;

class QuiltcTest : public quilt::testing::ToolTest {};

TEST_F(QuiltcTest, CompilesAndRunsWithNpyInputs) {
  std::string model = Model();
  Result c = Tool("quiltc", model + " -o " + Path("m.quilt"));
  ASSERT_EQ(c.code, 0) << c.out;
  std::string a = Npy("a.npy", {0, 1, 2, 3, 4, 5}, {2, 3});
  std::string b = Npy("b.npy", {1, 1, 1}, {1, 3});
  Result r = Tool("quilt-run", Path("m.quilt") + " --input a=" + a + " --input b=" + b +
                                   " --output-dir " + Path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("y/out: float32 (2, 3)"), std::string::npos) << r.out;
  quilt::Expected<quilt::rt::OwnedTensor> y = quilt::tools::ReadNpy(Path("out/y_out.npy"));
  ASSERT_TRUE(y) << y.error().ToString();
  ASSERT_EQ(y->shape, (quilt::rt::Shape{2, 3}));
  std::vector<float> got(6);
  std::memcpy(got.data(), y->data.data(), 24);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], i + 1.0f, 1e-5) << i;
}

TEST_F(QuiltcTest, ProfileTimesEveryStepAndWritesAChromeTrace) {
  ASSERT_EQ(Tool("quiltc", Model() + " -o " + Path("m.quilt")).code, 0);
  std::string a = Npy("a.npy", {0, 1, 2, 3, 4, 5}, {2, 3});
  std::string b = Npy("b.npy", {1, 1, 1}, {1, 3});
  Result r = Tool("quilt-run", Path("m.quilt") + " --input a=" + a + " --input b=" + b +
                                   " --profile " + Path("trace.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile: median of 10 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("time by op"), std::string::npos) << r.out;
  // The add (b broadcast to a's rows), the sqrt and the multiply run as one fused step, named by
  // the three nodes.
  EXPECT_NE(r.out.find("fused_elementwise on llvm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node 'add0 + sqrt0 + mul0'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("y/out: float32 (2, 3)"), std::string::npos) << r.out;
  std::string trace = ReadAll(Path("trace.json"));
  EXPECT_EQ(trace.find("{\"traceEvents\": ["), 0u) << trace;
  EXPECT_NE(trace.find("{\"name\": \"fused_elementwise\", \"cat\": \"kernel\", \"ph\": \"X\""),
            std::string::npos)
      << trace;
  EXPECT_NE(trace.find("\"node\": \"add0 + sqrt0 + mul0\""), std::string::npos) << trace;
  EXPECT_NE(trace.find("\"thread_name\""), std::string::npos) << trace;
  // A file that cannot be written is an error, named.
  r = Tool("quilt-run", Path("m.quilt") + " --input a=" + a + " --input b=" + b + " --profile " +
                            Path("no/such/dir/trace.json"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(
      r.out.find("cannot write the profile '" + Path("no/such/dir/trace.json") + "': its folder"),
      std::string::npos)
      << r.out;
}

TEST_F(QuiltcTest, RunsOnAnNpzOfAllInputs) {
  ASSERT_EQ(Tool("quiltc", Model() + " -o " + Path("m.quilt")).code, 0);
  quilt::rt::OwnedTensor a, b;
  a.dtype = b.dtype = quilt::rt::DType::kFloat32;
  a.shape = {1, 3};
  b.shape = {1, 3};
  std::vector<float> av = {3, 8, 15}, bv = {1, 1, 1};
  a.data.resize(12), b.data.resize(12);
  std::memcpy(a.data.data(), av.data(), 12);
  std::memcpy(b.data.data(), bv.data(), 12);
  std::string npz = Write("in.npz", StoredZip({{"a.npy", quilt::tools::NpyBytes(a)},
                                               {"b.npy", quilt::tools::NpyBytes(b)}}));
  Result r = Tool("quilt-run", Path("m.quilt") + " --inputs " + npz);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("y/out: float32 (1, 3) [4, 9, 16]"), std::string::npos) << r.out;
}

TEST_F(QuiltcTest, CompilingTwiceGivesIdenticalBytes) {
  std::string model = Model();
  ASSERT_EQ(Tool("quiltc", model + " -o " + Path("1.quilt")).code, 0);
  ASSERT_EQ(Tool("quiltc", model + " -o " + Path("2.quilt")).code, 0);
  EXPECT_EQ(ReadAll(Path("1.quilt")), ReadAll(Path("2.quilt")));
}

TEST_F(QuiltcTest, InputShapeFixesSymbolicDims) {
  Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --input-shape a:4,3");
  ASSERT_EQ(c.code, 0) << c.out;
  Result i = Tool("quilt-inspect", Path("m.quilt"));
  ASSERT_EQ(i.code, 0) << i.out;
  EXPECT_NE(i.out.find("a: float32 (4, 3)"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("y/out: float32 (4, 3)"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("package format 2.4"), std::string::npos) << i.out;
  // The one region partition made, kept in the package with its steps.
  EXPECT_NE(i.out.find("regions: 1\n  0: on llvm, steps 0-"), std::string::npos) << i.out;
  // Static shapes: quilt-run fills missing inputs with random values and times runs.
  Result r = Tool("quilt-run", Path("m.quilt") + " --iterations 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("using random values"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency over 3 runs (ms): min"), std::string::npos) << r.out;
}

TEST_F(QuiltcTest, UnsupportedOpsAreNamedWithTheirNodes) {
  quilt::testing::OnnxGraph g;
  g.Input("x", onnx::TensorProto::FLOAT, {int64_t{2}}).Output("y", onnx::TensorProto::FLOAT);
  g.Node("Bernoulli", {"x"}, {"y"}, "coin");
  Result c = Tool("quiltc", Write("bad.onnx", g.Bytes()) + " -o " + Path("bad.quilt"));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("coin"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("Bernoulli"), std::string::npos) << c.out;
  EXPECT_FALSE(fs::exists(Path("bad.quilt")));
}

TEST_F(QuiltcTest, InspectingAModelGivesQuiltcsVerdict) {
  // Every op has a converter, but the Reshape cannot be imported: quilt-inspect must say what
  // quiltc says, not "unsupported: none".
  quilt::testing::OnnxGraph g;
  g.Input("x", onnx::TensorProto::FLOAT, {int64_t{4}}).Output("y", onnx::TensorProto::FLOAT);
  g.Initializer<int64_t>("shape", onnx::TensorProto::INT64, {2}, {3, 5});
  g.Node("Reshape", {"x", "shape"}, {"y"}, "to_3x5");
  std::string bad = Write("bad.onnx", g.Bytes());
  Result i = Tool("quilt-inspect", bad);
  EXPECT_EQ(i.code, 1) << i.out;
  EXPECT_NE(i.out.find("compiles: no"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("node 'to_3x5' (Reshape"), std::string::npos) << i.out;
  Result c = Tool("quiltc", bad + " -o " + Path("bad.quilt"));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("node 'to_3x5' (Reshape"), std::string::npos) << c.out;
  Result ok = Tool("quilt-inspect", Model());
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("compiles: yes"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("placement:"), std::string::npos) << ok.out;
}

TEST_F(QuiltcTest, InputValueFreezesAnInput) {
  // b frozen to (1, 1, 1): the package takes a alone, and y = a + 1.
  Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --input-value b=1,1,1");
  ASSERT_EQ(c.code, 0) << c.out;
  Result i = Tool("quilt-inspect", Path("m.quilt"));
  ASSERT_EQ(i.code, 0) << i.out;
  EXPECT_EQ(i.out.find("b: float32"), std::string::npos) << i.out;
  std::string a = Npy("a.npy", {0, 1, 2, 3, 4, 5}, {2, 3});
  Result r =
      Tool("quilt-run", Path("m.quilt") + " --input a=" + a + " --output-dir " + Path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  quilt::Expected<quilt::rt::OwnedTensor> y = quilt::tools::ReadNpy(Path("out/y_out.npy"));
  ASSERT_TRUE(y) << y.error().ToString();
  std::vector<float> got(6);
  std::memcpy(got.data(), y->data.data(), 24);
  for (int k = 0; k < 6; ++k) EXPECT_FLOAT_EQ(got[k], k + 1.0f) << k;
  Result bad = Tool("quiltc", Model() + " -o " + Path("m2.quilt") + " --input-value b=one");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("expected NAME=V,V"), std::string::npos) << bad.out;
  Result wrong = Tool("quiltc", Model() + " -o " + Path("m3.quilt") + " --input-value b=1,2");
  EXPECT_EQ(wrong.code, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("graph input 'b': the input has 3 elements, 2 values given"),
            std::string::npos)
      << wrong.out;
}

TEST_F(QuiltcTest, RefusesToOverwriteTheModel) {
  std::string model = Model();
  std::string before = ReadAll(model);
  Result c = Tool("quiltc", model + " -o " + model);
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_EQ(ReadAll(model), before);
}

TEST_F(QuiltcTest, BadInputShapeIsAUsageError) {
  Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --input-shape a=4x3");
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_NE(c.out.find("expected NAME:D,D"), std::string::npos) << c.out;
}

// --cpu-winograd-tile takes 2 and 4 (its effect on a package: block_layout_test); any other value
// is a usage error that names the option, and writes nothing.
TEST_F(QuiltcTest, CpuWinogradTileTakesTwoOrFour) {
  for (const char* tile : {"2", "4"}) {
    Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --cpu-winograd-tile " + tile);
    EXPECT_EQ(c.code, 0) << c.out;
  }
  Result bad = Tool("quiltc", Model() + " -o " + Path("bad.quilt") + " --cpu-winograd-tile 6");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--cpu-winograd-tile: 6 not in {2,4}"), std::string::npos) << bad.out;
  EXPECT_FALSE(fs::exists(Path("bad.quilt")));
}

TEST_F(QuiltcTest, MissingSymbolicInputNamesItsDims) {
  ASSERT_EQ(Tool("quiltc", Model() + " -o " + Path("m.quilt")).code, 0);
  std::string b = Npy("b.npy", {1, 1, 1}, {1, 3});
  Result r = Tool("quilt-run", Path("m.quilt") + " --input b=" + b);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("input 'a' is not given and its shape is not static (a: float32 (n, 3))"),
            std::string::npos)
      << r.out;
}

TEST_F(QuiltcTest, WrongInputShapeIsARunError) {
  ASSERT_EQ(Tool("quiltc", Model() + " -o " + Path("m.quilt")).code, 0);
  std::string a = Npy("a.npy", {0, 1, 2, 3}, {2, 2});
  std::string b = Npy("b.npy", {1, 1, 1}, {1, 3});
  Result r = Tool("quilt-run", Path("m.quilt") + " --input a=" + a + " --input b=" + b);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("input 'a' dim 1 is 2, expected 3"), std::string::npos) << r.out;
}

TEST_F(QuiltcTest, DamagedPackageIsRefused) {
  std::string path = Write("junk.quilt", "definitely not a package");
  Result r = Tool("quilt-run", path);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("not a quilt package"), std::string::npos) << r.out;
}

}  // namespace

namespace {

TEST_F(QuiltcTest, PrintsThePlacementSummaryAndWritesEveryReport) {
  std::string args = Model() + " -o " + Path("m.quilt") + " --report " + Path("p.txt") +
                     " --report " + Path("p.dot") + " --report " + Path("p.json");
  Result c = Tool("quiltc", args);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("placement: 3 ops on 1 device, 1 region, 0 copies, 0 fallbacks"),
            std::string::npos)
      << c.out;
  EXPECT_NE(ReadAll(Path("p.txt")).find("  mul0  R.multiply  llvm  first choice"),
            std::string::npos)
      << ReadAll(Path("p.txt"));
  EXPECT_NE(ReadAll(Path("p.dot")).find("subgraph cluster_0"), std::string::npos);
  EXPECT_NE(ReadAll(Path("p.json")).find("\"op\": \"sqrt\""), std::string::npos);
  // The placement travels in the package; quilt-inspect shows it.
  Result i = Tool("quilt-inspect", Path("m.quilt"));
  EXPECT_NE(i.out.find("placement: 3 ops on 1 device"), std::string::npos) << i.out;
}

TEST_F(QuiltcTest, AReportWithAnUnknownExtensionIsAUsageError) {
  Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --report " + Path("p.html"));
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.out.find("must end in .txt, .dot or .json"), std::string::npos) << c.out;
}

TEST_F(QuiltcTest, StrictFailsOnEveryFallbackAndNamesTheNodes) {
  // No CUDA kernels exist yet: every op falls back to the CPU, which --strict refuses.
  Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --device cuda --strict");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.out.find("--strict: 3 op(s) fell back"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("node 'sqrt0' (R.sqrt) on llvm"), std::string::npos) << c.out;
  EXPECT_FALSE(fs::exists(Path("m.quilt")));
  // Without --strict the same model compiles, runs on the CPU and says why.
  c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --device cuda");
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("fallback: 1 x R.sqrt: cuda (id 0, global): no CUDA kernel for R.sqrt yet"),
            std::string::npos)
      << c.out;
}

// A package compiled with --portable runs where the OpenCL it was compiled for is absent: the ICD
// loader is pointed at an empty vendor folder (as on a machine without any OpenCL driver), the
// session runs the OpenCL steps on the CPU and says so; without --portable the same run is refused.
TEST_F(QuiltcTest, APortablePackageRunsWhereOpenClIsAbsent) {
  // y = softmax(sigmoid(relu(sqrt(a + b) * 2)), axis 1): ops OpenCL takes, more than the few
  // cheap ones that would stay with the host.
  quilt::testing::OnnxGraph g;
  g.Input("a", onnx::TensorProto::FLOAT, {std::string("n"), int64_t{3}})
      .Input("b", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{3}})
      .Output("y/out", onnx::TensorProto::FLOAT);
  g.Node("Add", {"a", "b"}, {"t"}, "add0");
  g.Node("Sqrt", {"t"}, {"u"}, "sqrt0");
  g.Node("Add", {"u", "u"}, {"v"}, "twice0");
  g.Node("Relu", {"v"}, {"r"}, "relu0");
  g.Node("Sigmoid", {"r"}, {"s"}, "sigmoid0");
  quilt::testing::SetInt(g.Node("Softmax", {"s"}, {"y/out"}, "softmax0"), "axis", 1);
  std::string model = Write("model.onnx", g.Bytes());
  std::string args = " --device opencl --device llvm -o ";
  Result c = Tool("quiltc", model + args + Path("p.quilt") + " --portable");
  ASSERT_EQ(c.code, 0) << c.out;
  ASSERT_EQ(Tool("quiltc", model + args + Path("plain.quilt")).code, 0);
  Result i = Tool("quilt-inspect", Path("p.quilt"));
  ASSERT_EQ(i.code, 0) << i.out;
  EXPECT_NE(i.out.find("0: opencl (opencl 0); portable: where it is absent, its steps run on the "
                       "CPU"),
            std::string::npos)
      << i.out;
  EXPECT_NE(i.out.find("on opencl:"), std::string::npos) << "the ops are OpenCL's: " << i.out;
  i = Tool("quilt-inspect", Path("plain.quilt"));
  EXPECT_EQ(i.out.find("portable"), std::string::npos) << i.out;

  fs::create_directories(dir_ / "no-icd");
  std::string no_opencl = "OCL_ICD_VENDORS=" + Path("no-icd");
  std::vector<float> a = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, b = {3, 0.5f, 7};
  std::string inputs = " --input a=" + Npy("a.npy", a, {4, 3}) +
                       " --input b=" + Npy("b.npy", b, {1, 3}) + " --output-dir " + Path("out");
  Result r = Tool("quilt-run", Path("plain.quilt") + inputs, no_opencl);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("the package runs steps on device 'opencl': "), std::string::npos) << r.out;
  r = Tool("quilt-run", Path("p.quilt") + inputs + " --strict", no_opencl);
  EXPECT_EQ(r.code, 1) << "strict: the absent device is an error: " << r.out;
  r = Tool("quilt-run", Path("p.quilt") + inputs, no_opencl);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("quilt-run: note: device 0 ('opencl') is not available here ("),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the package is portable: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" steps run on the CPU instead"), std::string::npos) << r.out;
  quilt::Expected<quilt::rt::OwnedTensor> y = quilt::tools::ReadNpy(Path("out/y_out.npy"));
  ASSERT_TRUE(y) << y.error().ToString();
  ASSERT_EQ(y->shape, (quilt::rt::Shape{4, 3}));
  std::vector<float> got(12);
  std::memcpy(got.data(), y->data.data(), 48);
  // The reference in double.
  for (int row = 0; row < 4; ++row) {
    double e[3], sum = 0;
    for (int j = 0; j < 3; ++j) {
      double t = a[static_cast<size_t>(row * 3 + j)] + static_cast<double>(b[j]);
      double v = std::max(0.0, std::sqrt(t) * 2);
      sum += e[j] = std::exp(1 / (1 + std::exp(-v)));
    }
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(got[static_cast<size_t>(row * 3 + j)], e[j] / sum, 1e-6) << row << ", " << j;
    }
  }
}

TEST_F(QuiltcTest, PlacementRulesAreCheckedAndBadOnesNamed) {
  Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --place op:Sqrt=llvm");
  EXPECT_EQ(c.code, 0) << c.out;
  c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --place op:Conv=llvm");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.out.find("--place op:Conv=llvm: the rule matches no op"), std::string::npos) << c.out;
  c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --place node:add0=opencl");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.out.find("\"opencl\" names no entry"), std::string::npos) << c.out;
}

// Exporters often leave nodes unnamed: rules by op type find them, and rules by node name find
// them by the name the importer gives them ("OpType#index").
TEST_F(QuiltcTest, PlacementRulesFindUnnamedNodes) {
  quilt::testing::OnnxGraph g;
  g.Input("a", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}})
      .Output("y", onnx::TensorProto::FLOAT);
  g.Node("Sqrt", {"a"}, {"u"}).clear_name();
  g.Node("Neg", {"u"}, {"y"}).clear_name();
  std::string model = Write("unnamed.onnx", g.Bytes());
  std::string out = " -o " + Path("m.quilt") + " --device llvm --device llvm ";
  Result c = Tool("quiltc", model + out + "--place op:Sqrt=llvm:1 --report " + Path("r.txt"));
  ASSERT_EQ(c.code, 0) << c.out;
  std::string report = ReadAll(Path("r.txt"));
  EXPECT_NE(report.find("u  Sqrt#0  R.sqrt  llvm:1  placement rule"), std::string::npos) << report;
  c = Tool("quiltc", model + out + "--place 'node:Neg#1=llvm:1' --report " + Path("r.txt"));
  ASSERT_EQ(c.code, 0) << c.out;
  report = ReadAll(Path("r.txt"));
  EXPECT_NE(report.find("y  Neg#1  R.negative  llvm:1  placement rule"), std::string::npos)
      << report;
}

TEST_F(QuiltcTest, PrintIrAfterAllShowsEachStep) {
  Result c = Tool("quiltc", Model() + " -o " + Path("m.quilt") + " --print-ir-after-all");
  ASSERT_EQ(c.code, 0) << c.out;
  size_t last = 0;
  for (const char* step : {"import", "update-vdevice", "realize-vdevice", "assign", "simplify",
                           "fold-constants", "partition", "insert-device-copies"}) {
    size_t at = c.out.find(std::string("# ----- IR after ") + step + " -----");
    EXPECT_NE(at, std::string::npos) << step;
    EXPECT_GE(at, last) << step;
    last = at;
  }
  EXPECT_NE(c.out.find("R.func_attr({\"vdevice\": \"llvm\", \"codegen\": \"llvm\"})"),
            std::string::npos);
}

}  // namespace
