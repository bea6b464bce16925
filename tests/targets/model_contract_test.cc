// What real models need from the whole pipeline, ONNX model to run: output names that survive
// every pass and device configuration, an If whose untaken branch does not fit the model's
// shapes, inputs frozen at compile time, shape computations the importer resolves, a Gemm
// weight transposed once. Results are checked against values computed by hand.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/importers/onnx_test_util.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt::compiler {
namespace {

using onnx::TensorProto;
using quilt::testing::CountingLoop;
using quilt::testing::OnnxGraph;
using quilt::testing::SetGraph;
using quilt::testing::SetInt;
using quilt::testing::SetInts;
using quilt::testing::SetString;

Expected<Compiled> CompileGraph(const OnnxGraph& g, const CompileOptions& options) {
  std::string bytes = g.Bytes();
  Expected<ir::IRModule> mod =
      importers::onnx::ImportOnnxBytes(bytes.data(), bytes.size(), "", "test.onnx", options.import);
  if (!mod) return mod.error();
  return Compile(*mod, options);
}

// A session on the package, null (with a failure recorded) when it does not load or open.
std::unique_ptr<rt::Session> OpenSession(const std::vector<uint8_t>& package) {
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(package);
  if (!p) return nullptr;
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(p, {}, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return st.ok() ? std::move(s) : nullptr;
}

std::vector<std::string> OutputNames(const rt::LoadedPackage& p) {
  const pkg::Graph& g = *p.root().graphs()->Get(0);
  std::vector<std::string> names;
  for (int v : *g.outputs()) names.push_back(g.values()->Get(v)->name()->str());
  return names;
}

std::vector<std::string> InputNames(const rt::LoadedPackage& p) {
  const pkg::Graph& g = *p.root().graphs()->Get(0);
  std::vector<std::string> names;
  for (int v : *g.inputs()) names.push_back(g.values()->Get(v)->name()->str());
  return names;
}

// Three outputs named like the fallback names a package once made up, in another order:
// output_2 = x + 1, output_0 = x * 2, output_1 = relu(x) (its last binding renamed by the
// importer), and x itself.
OnnxGraph ThreeOutputs() {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  g.Initializer<float>("one", TensorProto::FLOAT, {}, {1.0f});
  g.Initializer<float>("two", TensorProto::FLOAT, {}, {2.0f});
  g.Node("Add", {"x", "one"}, {"output_2"}, "add");
  g.Node("Mul", {"x", "two"}, {"output_0"}, "mul");
  g.Node("Relu", {"x"}, {"r"}, "relu");
  g.Node("Identity", {"r"}, {"output_1"}, "id");
  g.Output("output_2", TensorProto::FLOAT).Output("output_0", TensorProto::FLOAT);
  g.Output("output_1", TensorProto::FLOAT).Output("x", TensorProto::FLOAT);
  return g;
}

void ExpectThreeOutputsRun(const std::vector<uint8_t>& package) {
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(package);
  ASSERT_TRUE(p);
  EXPECT_EQ(OutputNames(*p), (std::vector<std::string>{"output_2", "output_0", "output_1", "x"}));
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  std::vector<float> x = {-1, 0, 1, 2, -3, 4};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run({test::Input("x", x, {2, 3})}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(out.size(), 4u);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(test::Floats(out[0])[i], x[i] + 1) << i;
    EXPECT_EQ(test::Floats(out[1])[i], x[i] * 2) << i;
    EXPECT_EQ(test::Floats(out[2])[i], std::max(x[i], 0.0f)) << i;
    EXPECT_EQ(test::Floats(out[3])[i], x[i]) << i;
  }
}

TEST(ModelContract, OutputNamesSurviveTheCpu) {
  Expected<Compiled> c = CompileGraph(ThreeOutputs(), {});
  ASSERT_TRUE(c) << c.error().ToString();
  ExpectThreeOutputsRun(c->package);
}

// An add of zero, a multiply by one and a reshape back to a value's shape are that value (the
// importer reads them as it): `same` = x + 0 keeps its own name as a graph output, `twice` = 2 *
// Squeeze(Unsqueeze(x * 1)) reads x itself, and `wide` = x + zeros of a larger shape is an add
// (its result has another shape than x).
TEST(ModelContract, AddsOfZeroAndReshapesBackAreTheValueAndKeepOutputNames) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 3});
  g.Initializer<float>("zero", TensorProto::FLOAT, {}, {0.0f});
  g.Initializer<float>("one", TensorProto::FLOAT, {}, {1.0f});
  g.Initializer<float>("two", TensorProto::FLOAT, {}, {2.0f});
  g.Initializer<float>("zeros", TensorProto::FLOAT, {2, 3}, {0, 0, 0, 0, 0, 0});
  g.Initializer<int64_t>("axis0", TensorProto::INT64, {1}, {0});
  g.Node("Add", {"x", "zero"}, {"same"}, "add_zero");
  g.Node("Mul", {"one", "x"}, {"m"}, "times_one");
  g.Node("Unsqueeze", {"m", "axis0"}, {"u"}, "unsqueeze");
  g.Node("Squeeze", {"u", "axis0"}, {"s"}, "squeeze");
  g.Node("Mul", {"s", "two"}, {"twice"}, "double");
  g.Node("Add", {"x", "zeros"}, {"wide"}, "widen");
  g.Output("same", TensorProto::FLOAT).Output("twice", TensorProto::FLOAT);
  g.Output("wide", TensorProto::FLOAT);
  Expected<Compiled> c = CompileGraph(g, {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  EXPECT_EQ(OutputNames(*p), (std::vector<std::string>{"same", "twice", "wide"}));
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  std::vector<float> x = {1.5f, -0.25f, 3.0f};
  std::vector<rt::OwnedTensor> out;
  rt::RunProfile profile;
  rt::Status st = s->Run({test::Input("x", x, {1, 3})}, &out, &profile);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(test::Floats(out[0]), x);
  EXPECT_EQ(test::Floats(out[1]), (std::vector<float>{3.0f, -0.5f, 6.0f}));
  EXPECT_EQ(out[2].shape, (rt::Shape{2, 3}));
  EXPECT_EQ(test::Floats(out[2]), (std::vector<float>{1.5f, -0.25f, 3.0f, 1.5f, -0.25f, 3.0f}));
  std::map<std::string, int> runs;
  for (const rt::StepProfile& step : profile.steps) ++runs[step.node];
  EXPECT_EQ(runs["times_one"], 0);
  EXPECT_EQ(runs["unsqueeze"], 0);
  EXPECT_EQ(runs["squeeze"], 0);
}

// Resize (nearest) of x to the height and width of another input, sizes computed as exporters
// compute them (Concat of Shape slices): the sizes are a shape the package computes when running,
// and the result is checked against them.
TEST(ModelContract, ResizeToAnotherInputsHeightAndWidth) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 1, "h", "w"});
  g.Input("ref", TensorProto::FLOAT, {"n", 2, "h2", "w2"});
  quilt::testing::AddResizeToHeightAndWidthOfRef(g, "resize");
  g.Output("y", TensorProto::FLOAT);
  Expected<Compiled> c = CompileGraph(g, {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::Session> s = OpenSession(c->package);
  ASSERT_TRUE(s);
  std::vector<float> x = {1, 2, 3, 4};
  // Nearest, half-pixel centres rounded half to floor (Resize's defaults): 2 x 2 -> 4 x 3 takes
  // rows 0, 0, 1, 1 (centres -0.25, 0.25, 0.75, 1.25) and columns 0, 0, 1 (-1/6, 0.5, 7/6), as
  // ONNX Runtime does.
  for (int64_t w2 : {3, 2}) {
    std::vector<float> ref(static_cast<size_t>(2 * 4 * w2), 0.0f);
    std::vector<rt::OwnedTensor> out;
    rt::Status st =
        s->Run({test::Input("x", x, {1, 1, 2, 2}), test::Input("ref", ref, {1, 2, 4, w2})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape, (rt::Shape{1, 1, 4, w2}));
    std::vector<float> want = w2 == 3 ? std::vector<float>{1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4}
                                      : std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4};
    EXPECT_EQ(test::Floats(out[0]), want) << "w2 " << w2;
  }
}

TEST(ModelContract, OutputNamesSurviveASplitAcrossTwoDevices) {
  // The CPU seen as two devices (the host is the second), ops on both: copies between them, and
  // no device suffix on any name.
  CompileOptions options;
  options.devices = {"llvm", "llvm"};
  options.place = {"op:Add=llvm:0", "op:Relu=llvm:0", "op:Mul=llvm:1"};
  Expected<Compiled> c = CompileGraph(ThreeOutputs(), options);
  ASSERT_TRUE(c) << c.error().ToString();
  // Each rule put its op on the vdevice it names, the second of two on one physical device
  // included, and the report says a rule did it.
  ASSERT_EQ(c->report.devices.size(), 2u);
  std::map<std::string, std::string> where;
  for (const passes::OpPlacement& op : c->report.ops) {
    if (op.why != passes::OpPlacement::Why::kPinned) continue;
    where[op.op] = c->report.devices[static_cast<size_t>(op.device)].name;
  }
  EXPECT_EQ(where, (std::map<std::string, std::string>{
                       {"add", "llvm"}, {"nn.relu", "llvm"}, {"multiply", "llvm:1"}}));
  ExpectThreeOutputsRun(c->package);
}

// A module in the text form names its outputs by the variables it returns, items of a tuple
// returned as they are (`s[0]`) included: s_0, s_1. Placed on the first of two CPU devices, its
// results are copied to the host, and those copies' names (a_llvm) must not leak out.
TEST(ModelContract, ATextModulesOutputsKeepTheirVariablesNames) {
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), "float32")):
        s = R.split(x, indices_or_sections=2, axis=1)
        a = R.add(x, x)
        return (a, s[0], s[1])
)";
  for (const std::vector<std::string>& devices :
       {std::vector<std::string>{"llvm"}, std::vector<std::string>{"llvm", "llvm"}}) {
    CompileOptions options;
    options.devices = devices;
    Expected<Compiled> c = Compile(testing::Parse(kModel), options);
    ASSERT_TRUE(c) << c.error().ToString();
    std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
    ASSERT_TRUE(p);
    EXPECT_EQ(OutputNames(*p), (std::vector<std::string>{"a", "s_0", "s_1"})) << devices.size();
    std::unique_ptr<rt::Session> s;
    ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
    std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<rt::OwnedTensor> out;
    rt::Status st = s->Run({test::Input("x", x, {2, 4})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
    EXPECT_EQ(test::Floats(out[1]), (std::vector<float>{1, 2, 5, 6}));
    EXPECT_EQ(test::Floats(out[2]), (std::vector<float>{3, 4, 7, 8}));
  }
}

// If on a run-time condition whose else branch reshapes x to (3, 5): impossible for x of 8
// elements. The then branch (x * 2) compiles and runs; the else branch fails when taken, naming
// the nested node and the If.
OnnxGraph IfWithAnInvalidBranch() {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {2, 4}).Input("c", TensorProto::BOOL, {});
  g.Initializer<float>("two", TensorProto::FLOAT, {}, {2.0f});
  g.Initializer<int64_t>("bad_shape", TensorProto::INT64, {2}, {3, 5});
  onnx::GraphProto then_g, else_g;
  {
    onnx::NodeProto* n = then_g.add_node();
    n->set_op_type("Mul");
    n->set_name("double_it");
    n->add_input("x");
    n->add_input("two");
    n->add_output("t");
    then_g.add_output()->set_name("t");
  }
  {
    onnx::NodeProto* n = else_g.add_node();
    n->set_op_type("Reshape");
    n->set_name("reshape_8k");
    n->add_input("x");
    n->add_input("bad_shape");
    n->add_output("e");
    else_g.add_output()->set_name("e");
  }
  auto& n = g.Node("If", {"c"}, {"y"}, "switch_rate");
  SetGraph(n, "then_branch", then_g);
  SetGraph(n, "else_branch", else_g);
  g.Output("y", TensorProto::FLOAT);
  return g;
}

rt::NamedTensor BoolInput(const std::string& name, uint8_t* v) {
  rt::NamedTensor t;
  t.name = name;
  t.tensor.dtype = rt::DType::kBool;
  t.tensor.shape = {};
  t.tensor.data = v;
  return t;
}

TEST(ModelContract, AnIfBranchInvalidForTheShapesFailsOnlyWhenTaken) {
  Expected<Compiled> c = CompileGraph(IfWithAnInvalidBranch(), {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::Session> s = OpenSession(c->package);
  ASSERT_TRUE(s);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t yes = 1, no = 0;
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run({test::Input("x", x, {2, 4}), BoolInput("c", &yes)}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<float> got = test::Floats(out[0]);
  ASSERT_EQ(got.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(got[i], 2 * x[i]);
  st = s->Run({test::Input("x", x, {2, 4}), BoolInput("c", &no)}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("else_branch"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("switch_rate"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("reshape_8k"), std::string::npos) << st.message();
}

TEST(ModelContract, AnInputFrozenAtCompileTimeDecidesTheIf) {
  // c frozen to false: the else branch is the one imported, and it cannot be: the error names
  // the nested node and the If.
  CompileOptions options;
  options.import.input_values["c"].numbers = {0};
  Expected<Compiled> bad = CompileGraph(IfWithAnInvalidBranch(), options);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().location.find("node 'reshape_8k'"), std::string::npos)
      << bad.error().ToString();
  EXPECT_NE(bad.error().message.find("switch_rate"), std::string::npos) << bad.error().ToString();
  // c frozen to true: only the then branch, and c leaves the signature.
  options.import.input_values["c"].numbers = {1};
  Expected<Compiled> c = CompileGraph(IfWithAnInvalidBranch(), options);
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  EXPECT_EQ(InputNames(*p), (std::vector<std::string>{"x"}));
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<rt::OwnedTensor> out;
  ASSERT_TRUE(s->Run({test::Input("x", x, {2, 4})}, &out).ok());
  EXPECT_EQ(test::Floats(out[0])[7], 16.0f);
}

// Tile's repeats computed at run time (SLANet tiles inside its decoding Loop with a count
// taken from the loop state): the output shape follows the repeats of each run.
TEST(ModelContract, TileRepeatsKnownOnlyAtRunTime) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("r", TensorProto::INT64, {2});
  g.Node("Tile", {"x", "r"}, {"y"}, "tile");
  g.Output("y", TensorProto::FLOAT);
  Expected<Compiled> c = CompileGraph(g, {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::Session> s = OpenSession(c->package);
  ASSERT_TRUE(s);
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto run = [&](std::vector<int64_t> r, std::vector<rt::OwnedTensor>* out) {
    return s->Run({test::Input("x", x, {2, 3}), test::Input("r", r, {2})}, out);
  };
  std::vector<rt::OwnedTensor> out;
  rt::Status st = run({2, 1}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out[0].shape, (rt::Shape{4, 3}));
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
  st = run({1, 2}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out[0].shape, (rt::Shape{2, 6}));
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  st = run({0, 3}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out[0].shape, (rt::Shape{0, 9}));
  st = run({-1, 1}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("non-negative"), std::string::npos) << st.message();
}

// Gather indices known only at run time: a negative one counts from the end (as ONNX defines),
// one outside [-n, n) fails the run naming the index, never read as some other element.
TEST(ModelContract, GatherIndicesKnownOnlyAtRunTimeAreChecked) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("i", TensorProto::INT64, {2});
  SetInt(g.Node("Gather", {"x", "i"}, {"y"}, "gather"), "axis", 1);
  g.Output("y", TensorProto::FLOAT);
  Expected<Compiled> c = CompileGraph(g, {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::Session> s = OpenSession(c->package);
  ASSERT_TRUE(s);
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto run = [&](std::vector<int64_t> i, std::vector<rt::OwnedTensor>* out) {
    return s->Run({test::Input("x", x, {2, 3}), test::Input("i", i, {2})}, out);
  };
  std::vector<rt::OwnedTensor> out;
  rt::Status st = run({2, -3}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{3, 1, 6, 4}));
  st = run({-1, 0}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{3, 1, 6, 4}));
  for (int64_t bad : {3, -4, 1000}) {
    st = run({0, bad}, &out);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("index " + std::to_string(bad) + " is out of bounds"),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("gather"), std::string::npos) << st.message();
  }
}

// Reshape to a shape known only at run time (allowzero = 0): a 0 copies the data's dim at that
// position, as when the shape is known at compile time; with allowzero = 1 it is a 0.
TEST(ModelContract, ReshapeToAShapeKnownOnlyAtRunTimeCopiesZeros) {
  for (int64_t allowzero : {0, 1}) {
    OnnxGraph g(14);
    g.Input("x", TensorProto::FLOAT, {2, 3, 4}).Input("s", TensorProto::INT64, {3});
    SetInt(g.Node("Reshape", {"x", "s"}, {"y"}, "reshape"), "allowzero", allowzero);
    g.Output("y", TensorProto::FLOAT);
    Expected<Compiled> c = CompileGraph(g, {});
    ASSERT_TRUE(c) << c.error().ToString();
    std::unique_ptr<rt::Session> s = OpenSession(c->package);
    ASSERT_TRUE(s);
    std::vector<float> x(24);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    auto run = [&](std::vector<int64_t> shape, std::vector<rt::OwnedTensor>* out) {
      return s->Run({test::Input("x", x, {2, 3, 4}), test::Input("s", shape, {3})}, out);
    };
    std::vector<rt::OwnedTensor> out;
    rt::Status st = run({0, 4, -1}, &out);
    if (allowzero) {
      ASSERT_FALSE(st.ok()) << "24 elements do not fit (0, 4, -1)";
      st = run({0, 4, 0}, &out);
      EXPECT_FALSE(st.ok()) << "24 elements do not fit (0, 4, 0)";
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(out[0].shape, (rt::Shape{2, 4, 3}));
    EXPECT_EQ(test::Floats(out[0]), x);
    st = run({0, 0, -1}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(out[0].shape, (rt::Shape{2, 3, 4}));
    st = run({1, 0, 0}, &out);
    EXPECT_FALSE(st.ok()) << "(1, 3, 4) holds 12 elements, not 24";
  }
}

// A static shape past what the runtime takes (2^50 elements) is refused when compiling, naming
// the value, not in a package the runtime then refuses; a product past 64 bits never wraps.
TEST(ModelContract, AShapeTooLargeForTheRuntimeIsRefusedAtCompileTime) {
  for (int64_t side : {int64_t{1} << 26, int64_t{1} << 40}) {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {side, side});
    g.Node("Relu", {"x"}, {"y"}, "relu");
    g.Output("y", TensorProto::FLOAT);
    Expected<Compiled> c = CompileGraph(g, {});
    ASSERT_FALSE(c) << side;
    EXPECT_NE(
        c.error().ToString().find("graph input 'x' has static dims of more than 2^50 elements"),
        std::string::npos)
        << c.error().ToString();
  }
}

rt::Status RunCountingLoop(const rt::Session& s, int64_t n, std::vector<rt::OwnedTensor>* out,
                           const rt::RunControl* control = nullptr) {
  bool go = true;
  float y = 0;
  rt::NamedTensor tn{"n", {rt::DType::kInt64, {}, &n}};
  rt::NamedTensor tg{"go", {rt::DType::kBool, {}, &go}};
  rt::NamedTensor ty{"y", {rt::DType::kFloat32, {1}, &y}};
  return s.Run({tn, tg, ty}, out, nullptr, control);
}

// Limits with safe defaults, each refused with a status of its own kind that names the limit:
// a loop's iterations, threads per run. A run cancelled from another thread stops with a
// cancelled status, and the session runs on afterwards.
TEST(ModelContract, LimitsAndCancellationStopARunWithTheirOwnStatus) {
  Expected<Compiled> c = CompileGraph(CountingLoop(), {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  rt::SessionOptions options;
  options.limits.max_loop_iterations = 1000;
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, options, &s).ok());
  std::vector<rt::OwnedTensor> out;
  rt::Status st = RunCountingLoop(*s, 1000, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1000}));
  st = RunCountingLoop(*s, 1001, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), rt::StatusCode::kLimit);
  EXPECT_NE(st.message().find("the loop reached 1000 iterations, its limit "
                              "(SessionLimits::max_loop_iterations"),
            std::string::npos)
      << st.message();
  // The default limit (10^7) lets a loop of 2^62 trips run long enough to be cancelled.
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  rt::RunControl control;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    control.Cancel();
  });
  st = RunCountingLoop(*s, int64_t{1} << 62, &out, &control);
  canceller.join();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), rt::StatusCode::kCancelled) << st.message();
  EXPECT_NE(st.message().find("the run was cancelled"), std::string::npos) << st.message();
  st = RunCountingLoop(*s, 3, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{3}));
  options = {};
  options.threads = 100'000;
  st = rt::Session::Create(p, options, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), rt::StatusCode::kLimit);
  EXPECT_NE(st.message().find("100000 threads per run, past the limit of 256"), std::string::npos)
      << st.message();
}

TEST(ModelContract, AFrozenValueMustFitTheInput) {
  CompileOptions options;
  options.import.input_values["c"].numbers = {1, 0};
  Expected<Compiled> c = CompileGraph(IfWithAnInvalidBranch(), options);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("graph input 'c'"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("2 values given"), std::string::npos) << c.error().message;
  options.import.input_values.clear();
  options.import.input_values["sr"].numbers = {16000};
  c = CompileGraph(IfWithAnInvalidBranch(), options);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("'sr', which is not a graph input (the inputs: x, c)"),
            std::string::npos)
      << c.error().message;
}

TEST(ModelContract, AGemmWeightIsTransposedOnceAtCompileTime) {
  // y = x @ W^T + b with W (3, 2) stored transposed: no permute_dims step in the package.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 2});
  g.Initializer<float>("W", TensorProto::FLOAT, {3, 2}, {1, 2, 3, 4, 5, 6});
  g.Initializer<float>("b", TensorProto::FLOAT, {3}, {0.5f, -1, 2});
  auto& n = g.Node("Gemm", {"x", "W", "b"}, {"y"}, "fc");
  SetInt(n, "transB", 1);
  g.Output("y", TensorProto::FLOAT);
  Expected<Compiled> c = CompileGraph(g, {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  for (const pkg::Step* s : *p->root().graphs()->Get(0)->steps()) {
    EXPECT_NE(s->kernel()->str(), "permute_dims");
  }
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  std::vector<float> x = {1, -1};
  std::vector<rt::OwnedTensor> out;
  ASSERT_TRUE(s->Run({test::Input("x", x, {1, 2})}, &out).ok());
  // Rows of W: (1, 2), (3, 4), (5, 6): x . row = -1, -1, -1; plus b.
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{-0.5f, -2, 1}));
}

TEST(ModelContract, ReflectPadAmountsComputedAsPyTorchExportsThem) {
  // PyTorch's reflect-pad export: pads (0, 0, 1, 2) as rows of (begin, end) per dim, reversed
  // with a Slice of step -1, transposed, flattened, then Pad. The importer must know the pads.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {1, 4});
  g.Initializer<int64_t>("p", TensorProto::INT64, {4}, {1, 2, 0, 0});
  g.Initializer<int64_t>("shape2", TensorProto::INT64, {2}, {-1, 2});
  g.Initializer<int64_t>("start", TensorProto::INT64, {1}, {-1});
  g.Initializer<int64_t>("end", TensorProto::INT64, {1}, {-9223372036854775807LL});
  g.Initializer<int64_t>("axis0", TensorProto::INT64, {1}, {0});
  g.Initializer<int64_t>("step", TensorProto::INT64, {1}, {-1});
  g.Initializer<int64_t>("flat", TensorProto::INT64, {1}, {-1});
  g.Node("Reshape", {"p", "shape2"}, {"p2"}, "rows");
  g.Node("Slice", {"p2", "start", "end", "axis0", "step"}, {"rev"}, "reverse");
  auto& t = g.Node("Transpose", {"rev"}, {"tr"}, "transpose");
  SetInts(t, "perm", {1, 0});
  g.Node("Reshape", {"tr", "flat"}, {"pads"}, "flatten");
  auto& pad = g.Node("Pad", {"x", "pads"}, {"y"}, "pad");
  SetString(pad, "mode", "reflect");
  g.Output("y", TensorProto::FLOAT);
  // rows ((1, 2), (0, 0)) reversed: ((0, 0), (1, 2)); transposed: ((0, 1), (0, 2)); flat:
  // (0, 1, 0, 2): dim 1 padded by 1 before and 2 after.
  Expected<Compiled> c = CompileGraph(g, {});
  ASSERT_TRUE(c) << c.error().ToString();
  std::unique_ptr<rt::Session> s = OpenSession(c->package);
  ASSERT_TRUE(s);
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<rt::OwnedTensor> out;
  ASSERT_TRUE(s->Run({test::Input("x", x, {1, 4})}, &out).ok());
  EXPECT_EQ(out[0].shape, (rt::Shape{1, 7}));
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{2, 1, 2, 3, 4, 3, 2}));
}

TEST(ModelContract, APlacementRuleMovesAnOpWithATupleResult) {
  // Split (a tuple result) pinned to the CPU's first device of two, the rest on the host:
  // the rule must pin the op itself, and the halves come back right.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {4});
  auto& n = g.Node("Split", {"x"}, {"a", "b"}, "halves");
  SetInt(n, "axis", 0);
  g.Node("Neg", {"b"}, {"nb"}, "neg");
  g.Output("a", TensorProto::FLOAT).Output("nb", TensorProto::FLOAT);
  CompileOptions options;
  options.devices = {"llvm", "llvm"};
  options.place = {"op:Split=llvm:0", "op:Neg=llvm:1"};
  Expected<Compiled> c = CompileGraph(g, options);
  ASSERT_TRUE(c) << c.error().ToString();
  bool split_placed = false;
  for (const auto& op : c->report.ops) {
    if (op.node != "halves") continue;
    split_placed = op.device == 0 && op.why == passes::OpPlacement::Why::kPinned;
  }
  EXPECT_TRUE(split_placed) << ReportText(c->report);
  std::shared_ptr<const rt::LoadedPackage> p = test::LoadPackage(c->package);
  ASSERT_TRUE(p);
  EXPECT_EQ(OutputNames(*p), (std::vector<std::string>{"a", "nb"}));
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<rt::OwnedTensor> out;
  ASSERT_TRUE(s->Run({test::Input("x", x, {4})}, &out).ok());
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(test::Floats(out[1]), (std::vector<float>{-3, -4}));
}

}  // namespace
}  // namespace quilt::compiler
