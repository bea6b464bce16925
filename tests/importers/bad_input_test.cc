// Bad input: each case is a crafted model; the importer must answer with a diagnostic that
// names the place and the problem, never crash, hang or allocate hugely.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;
using quilt::testing::ExpectImportError;
using quilt::testing::OnnxGraph;
using quilt::testing::SetFloat;
using quilt::testing::SetInt;

std::string ImportBytesError(const std::string& bytes) {
  Expected<ir::IRModule> mod = ImportOnnxBytes(bytes.data(), bytes.size(), "", "m.onnx");
  EXPECT_FALSE(mod);
  return mod ? "" : mod.error().ToString();
}

OnnxGraph SmallModel() {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {4});
  std::vector<float> w(256, 0.5f);
  g.Initializer<float>("w", TensorProto::FLOAT, {256}, w);
  g.Node("Relu", {"x"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  return g;
}

TEST(BadInput, EmptyFile) { EXPECT_EQ(ImportBytesError(""), "m.onnx: the file is empty"); }

TEST(BadInput, NotAProtobuf) {
  EXPECT_NE(ImportBytesError("this is not an onnx model\n").find("not a valid ONNX model"),
            std::string::npos);
}

TEST(BadInput, TruncatedFile) {
  std::string bytes = SmallModel().Bytes();
  std::string error = ImportBytesError(bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(error.find("not a valid ONNX model"), std::string::npos) << error;
}

TEST(BadInput, EveryPrefixOfAModelIsHandled) {
  // No prefix may crash; each either imports or gives a diagnostic.
  std::string bytes = SmallModel().Bytes();
  for (size_t n = 0; n < bytes.size(); n += 7) {
    std::string prefix = bytes.substr(0, n);
    Expected<ir::IRModule> mod = ImportOnnxBytes(prefix.data(), prefix.size(), "", "m.onnx");
    if (!mod) {
      EXPECT_FALSE(mod.error().message.empty());
    }
  }
}

TEST(BadInput, GraphCycle) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Add", {"x", "b"}, {"a"}, "first");
  g.Node("Relu", {"a"}, {"b"}, "second");
  g.Output("b", TensorProto::FLOAT);
  ExpectImportError(g, {"the graph has a cycle through nodes 'first', 'second'"});
}

TEST(BadInput, InputThatNobodyProduces) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Add", {"x", "ghost"}, {"y"}, "adder");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(
      g, {"node 'adder' (Add) reads 'ghost', which no node, graph input or initializer produces"});
}

TEST(BadInput, TwoProducersOfOneName) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Relu", {"x"}, {"y"}, "one");
  g.Node("Exp", {"x"}, {"y"}, "two");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"value 'y' is produced twice: by node 'one' and by node 'two'"});
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {2});
  h.Node("Relu", {"x"}, {"x"}, "overwrites_input");
  h.Output("x", TensorProto::FLOAT);
  ExpectImportError(h, {"value 'x' is produced twice: by a graph input or initializer"});
}

TEST(BadInput, WrongArity) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Add", {"x"}, {"y"}, "lonely");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"node 'lonely' (Add, opset 13)", "takes 2 inputs, got 1"});
}

TEST(BadInput, MissingAndMistypedAttributes) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Cast", {"x"}, {"y"}, "cast");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"node 'cast' (Cast, opset 13)", "missing required attribute 'to'"});
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {2, 2});
  SetFloat(h.Node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1.0f);
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h,
                    {"node 'sm' (Softmax, opset 13)", "attribute 'axis' is float, expected int"});
  OnnxGraph u(13);
  u.Input("x", TensorProto::FLOAT, {2});
  SetInt(u.Node("Relu", {"x"}, {"y"}, "r"), "alpha", 1);
  u.Output("y", TensorProto::FLOAT);
  ExpectImportError(u, {"node 'r' (Relu, opset 13)", "unknown attribute 'alpha'"});
}

TEST(BadInput, AttributeValueOutOfRange) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  SetInt(g.Node("Concat", {"x", "x"}, {"y"}, "cat"), "axis", 2);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"node 'cat' (Concat, opset 13)", "axis 2 is out of range for rank 2"});
}

TEST(BadInput, RawDataSizeDisagreesWithShape) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {3});
  g.Initializer<float>("w", TensorProto::FLOAT, {3}, {1.0f, 2.0f});
  g.Node("Add", {"x", "w"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"tensor 'w': raw_data has 8 bytes, but shape and dtype need 12"});
}

// A tensor of typed values (float_data) whose shape claims 2^40 elements holds 3: refused by
// what is present, before 4 TiB are allocated for it.
TEST(BadInput, TypedValuesShortOfAHugeShapeAreRefusedBeforeAllocating) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {3});
  TensorProto* w = g.graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(int64_t{1} << 40);
  for (float v : {1.0f, 2.0f, 3.0f}) w->add_float_data(v);
  g.Node("Add", {"x", "w"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"tensor 'w': holds 3 values, but its shape (1099511627776,) needs "
                        "1099511627776"});
}

TEST(BadInput, NegativeAndOverflowingDims) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {3});
  g.Initializer<float>("w", TensorProto::FLOAT, {-3}, {});
  g.Node("Add", {"x", "w"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"tensor 'w': negative dimension -3"});
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {3});
  h.Initializer<float>("w", TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40}, {});
  h.Node("Add", {"x", "w"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"tensor 'w': more than 2^50 elements"});
  OnnxGraph i(13);
  i.Input("x", TensorProto::FLOAT, {int64_t{-2}});
  i.Node("Relu", {"x"}, {"y"});
  i.Output("y", TensorProto::FLOAT);
  ExpectImportError(i, {"graph input 'x' has negative dimension -2"});
}

// A node without its required input, at the newest opset (past the ONNX schemas this build may
// check input counts with): an error naming the node and the argument, never a null argument
// handed to shape inference. (The importer fuzzer's Unique at opset 28.)
TEST(BadInput, ARequiredInputLeftOutIsNamed) {
  OnnxGraph g(kMaxOpset);
  g.Input("x", TensorProto::FLOAT, {3});
  g.Node("Unique", {}, {"y"}, "uniq");
  g.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import({});
  ASSERT_FALSE(mod);
  std::string msg = mod.error().ToString();
  EXPECT_NE(msg.find("node 'uniq' (Unique, opset " + std::to_string(kMaxOpset) + ")"),
            std::string::npos)
      << msg;
  // Where the linked ONNX knows this opset its schema counts the inputs first.
  EXPECT_TRUE(msg.find("R.unique: argument 'x' is missing") != std::string::npos ||
              msg.find("takes 1 inputs, got 0") != std::string::npos)
      << msg;
}

TEST(BadInput, VersionsNewerThanSupported) {
  OnnxGraph g(kMaxOpset + 1);
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Relu", {"x"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"opset " + std::to_string(kMaxOpset + 1),
                        "newest this importer supports (" + std::to_string(kMaxOpset) + ")"});
  OnnxGraph h(13, kMaxIrVersion + 1);
  h.Input("x", TensorProto::FLOAT, {2});
  h.Node("Relu", {"x"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"IR version " + std::to_string(kMaxIrVersion + 1) + " is not supported",
                        "reads 3 to " + std::to_string(kMaxIrVersion)});
}

TEST(BadInput, EveryUnsupportedOpIsListedTogether) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("RandomNormalLike", {"x"}, {"r"}, "noise");
  g.Node("FancyOp", {"x"}, {"f"}, "fancy").set_domain("com.example");
  g.Node("Add", {"r", "f"}, {"y"}, "sum");
  g.Node("Frobnicate", {"y"}, {"z"}, "frob");
  g.Output("z", TensorProto::FLOAT);
  ExpectImportError(g, {"3 unsupported nodes:",
                        "node 'noise': RandomNormalLike (domain 'ai.onnx', opset 13): random "
                        "generators are left out",
                        "node 'fancy': FancyOp (domain 'com.example', opset 13): the model does "
                        "not import domain 'com.example'",
                        "node 'frob': Frobnicate (domain 'ai.onnx', opset 13)"});
}

TEST(BadInput, DefaultDomainNodesWithoutItsOpset) {
  OnnxGraph g(13);
  g.model().clear_opset_import();
  auto* op = g.model().add_opset_import();
  op->set_domain("com.microsoft");
  op->set_version(1);
  g.Input("x", TensorProto::FLOAT, {4});
  g.Node("Relu", {"x"}, {"y"}, "act");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(
      g, {"the model imports no opset for 'ai.onnx'", "only com.microsoft", "node 'act' (Relu)"});
}

TEST(BadInput, AnErrorInANestedBranchNamesTheNestedNode) {
  // If (condition known only at run time) whose both branches fail: the error names the node
  // inside the branch, and the If as the context.
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {4}).Input("c", TensorProto::BOOL, {});
  g.Initializer<int64_t>("bad", TensorProto::INT64, {2}, {3, 5});
  ::onnx::GraphProto branch;
  ::onnx::NodeProto* n = branch.add_node();
  n->set_op_type("Reshape");
  n->set_name("inner_reshape");
  n->add_input("x");
  n->add_input("bad");
  n->add_output("r");
  branch.add_output()->set_name("r");
  auto& node = g.Node("If", {"c"}, {"y"}, "outer_if");
  for (const char* name : {"then_branch", "else_branch"})
    quilt::testing::SetGraph(node, name, branch);
  g.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_FALSE(mod);
  EXPECT_NE(mod.error().location.find("node 'inner_reshape' (Reshape"), std::string::npos)
      << mod.error().ToString();
  EXPECT_NE(mod.error().message.find("in the then_branch of node 'outer_if' (If"),
            std::string::npos)
      << mod.error().ToString();
}

TEST(BadInput, RecursiveLocalFunctionHitsTheNestingLimit) {
  OnnxGraph g(13);
  auto* dom = g.model().add_opset_import();
  dom->set_domain("local");
  dom->set_version(1);
  ::onnx::FunctionProto* f = g.model().add_functions();
  f->set_name("Loopy");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  auto* op = f->add_opset_import();
  op->set_domain("local");
  op->set_version(1);
  ::onnx::NodeProto* inner = f->add_node();
  inner->set_op_type("Loopy");
  inner->set_domain("local");
  inner->add_input("a");
  inner->add_output("b");
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("Loopy", {"x"}, {"y"}, "call").set_domain("local");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"model-local functions nest deeper than 32"});
}

// F0 calls F1 twice, F1 calls F2 twice, ... F24 is one Relu: 2^24 nodes once inlined. Refused by
// the budget on inlined nodes (naming it) long before memory runs out.
TEST(BadInput, FunctionsThatMultiplyHitTheInliningBudget) {
  OnnxGraph g(13);
  auto* dom = g.model().add_opset_import();
  dom->set_domain("local");
  dom->set_version(1);
  constexpr int kLevels = 25;
  for (int i = 0; i < kLevels; ++i) {
    ::onnx::FunctionProto* f = g.model().add_functions();
    f->set_name("F" + std::to_string(i));
    f->set_domain("local");
    f->add_input("a");
    f->add_output("b");
    for (const char* d : {"", "local"}) {
      auto* op = f->add_opset_import();
      op->set_domain(d);
      op->set_version(d[0] ? 1 : 13);
    }
    if (i + 1 == kLevels) {
      ::onnx::NodeProto* n = f->add_node();
      n->set_op_type("Relu");
      n->add_input("a");
      n->add_output("b");
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      ::onnx::NodeProto* n = f->add_node();
      n->set_op_type("F" + std::to_string(i + 1));
      n->set_domain("local");
      n->add_input(k == 0 ? "a" : "m");
      n->add_output(k == 0 ? "m" : "b");
    }
  }
  g.Input("x", TensorProto::FLOAT, {2});
  g.Node("F0", {"x"}, {"y"}, "call").set_domain("local");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"inlining model-local functions makes more than 1000000 nodes",
                        "ImportOptions::max_inlined_nodes"});
  importers::onnx::ImportOptions small;
  small.max_inlined_nodes = 100;
  ExpectImportError(g, {"makes more than 100 nodes"}, small);
}

// If nested 32 deep: more protobuf message levels than protobuf's default limit of 100 (the
// generic "does not parse" once refused it), within this importer's. 150 deep passes the
// parser's limit for a nesting limit of 32, and is named as such.
::onnx::GraphProto NestedIfs(int depth) {
  ::onnx::GraphProto g;
  g.set_name("level" + std::to_string(depth));
  ::onnx::NodeProto* n = g.add_node();
  auto* out = g.add_output();
  out->set_name("y" + std::to_string(depth));
  out->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  if (depth == 0) {
    n->set_op_type("Identity");
    n->add_input("x");
    n->add_output("y0");
    return g;
  }
  n->set_op_type("If");
  n->set_name("if" + std::to_string(depth));
  n->add_input("c");
  n->add_output(out->name());
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = std::string(branch) == "then_branch" ? NestedIfs(depth - 1) : NestedIfs(0);
    // Each branch yields its own name.
    a->mutable_g()->mutable_output(0)->set_name(a->g().output(0).name());
  }
  return g;
}

TEST(BadInput, DeepButValidNestingParsesAndTooDeepSaysSo) {
  auto model = [](int depth) {
    OnnxGraph g(13);
    g.Input("c", TensorProto::BOOL, {}).Input("x", TensorProto::FLOAT, {2});
    *g.graph()->add_node() = NestedIfs(depth).node(0);
    g.Output("y" + std::to_string(depth), TensorProto::FLOAT);
    return g;
  };
  OnnxGraph deep = model(32);
  ASSERT_GT(deep.model().ByteSizeLong(), 0u);
  Expected<ir::IRModule> mod = deep.Import({});
  EXPECT_TRUE(mod) << mod.error().ToString();
  // 40 deep parses; the branch past the nesting limit is kept as a run-time failure (as a branch
  // that does not import is) that names the limit.
  Expected<ir::IRModule> forty = model(40).Import({});
  ASSERT_TRUE(forty) << forty.error().ToString();
  EXPECT_NE(ir::PrintModule(*forty).find("subgraphs nest deeper than 32"), std::string::npos);
  std::string bytes = model(150).Bytes();
  Expected<ir::IRModule> too_deep = ImportOnnxBytes(bytes.data(), bytes.size(), "", "m.onnx");
  ASSERT_FALSE(too_deep);
  EXPECT_NE(too_deep.error().ToString().find("the model's messages nest deeper than 320"),
            std::string::npos)
      << too_deep.error().ToString();
}

// The size limit is checked before a byte is read: a sparse file of 2 GiB is refused at once.
TEST(BadInput, AModelPastTheSizeLimitIsRefusedBeforeItIsRead) {
  std::string path = ::testing::TempDir() + "/huge.onnx";
  { std::ofstream(path, std::ios::binary) << "x"; }
  fs::resize_file(path, uint64_t{1} << 31);
  Expected<ir::IRModule> mod = ImportOnnxFile(path);
  ASSERT_FALSE(mod);
  EXPECT_NE(mod.error().ToString().find("the model is 2147483648 bytes, past the limit of "
                                        "2147483647 (protobuf's 2 GiB)"),
            std::string::npos)
      << mod.error().ToString();
  fs::remove(path);
  std::string small = ::testing::TempDir() + "/small.onnx";
  std::ofstream(small, std::ios::binary) << SmallModel().Bytes();
  importers::onnx::ImportOptions options;
  options.max_model_bytes = 100;
  mod = ImportOnnxFile(small, options);
  ASSERT_FALSE(mod);
  EXPECT_NE(mod.error().ToString().find(
                "past the limit of 100 (ImportOptions::max_model_bytes; quiltc --max-model-bytes)"),
            std::string::npos)
      << mod.error().ToString();
}

TEST(LocalFunctions, AreInlinedWithAttributeReferences) {
  OnnxGraph g(13);
  auto* dom = g.model().add_opset_import();
  dom->set_domain("local");
  dom->set_version(1);
  ::onnx::FunctionProto* f = g.model().add_functions();
  f->set_name("Scale");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  f->add_attribute("ax");
  auto* op = f->add_opset_import();
  op->set_version(13);
  ::onnx::NodeProto* inner = f->add_node();
  inner->set_op_type("Softmax");
  inner->add_input("a");
  inner->add_output("b");
  auto* ref = inner->add_attribute();
  ref->set_name("axis");
  ref->set_type(::onnx::AttributeProto::INT);
  ref->set_ref_attr_name("ax");
  g.Input("x", TensorProto::FLOAT, {2, 3});
  SetInt(g.Node("Scale", {"x"}, {"y"}, "call"), "ax", 0);
  auto& call = g.graph()->mutable_node()->at(0);
  call.set_domain("local");
  g.Output("y", TensorProto::FLOAT);
  quilt::testing::ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.softmax(x, axis=0)
        return y
)");
}

// External data: a model in a folder of its own with a data file beside it.
class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("quilt_ext_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "model" / "a");
    std::vector<float> w = {1, 2, 3, 4};
    std::ofstream(root_ / "model" / "w.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(w.data()), 16);
    std::ofstream(root_ / "secret.bin", std::ios::binary).write("0123456789abcdef", 16);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes model.onnx whose initializer `w` (4 floats) lives at `location`.
  std::string Model(const std::string& location, int64_t offset = 0, int64_t length = -1) {
    OnnxGraph g(13);
    g.Input("x", TensorProto::FLOAT, {4});
    TensorProto* t = g.graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(4);
    t->set_data_location(TensorProto::EXTERNAL);
    auto add = [&](const std::string& k, const std::string& v) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    if (offset) add("offset", std::to_string(offset));
    if (length >= 0) add("length", std::to_string(length));
    g.Node("Add", {"x", "w"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    std::string path = (root_ / "model" / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << g.Bytes();
    return path;
  }

  std::string Error(const std::string& path) {
    Expected<ir::IRModule> mod = ImportOnnxFile(path);
    EXPECT_FALSE(mod);
    return mod ? "" : mod.error().ToString();
  }

  fs::path root_;
};

TEST_F(ExternalData, ReadsDataInsideTheFolder) {
  Expected<ir::IRModule> mod = ImportOnnxFile(Model("w.bin"));
  ASSERT_TRUE(mod) << mod.error().ToString();
}

TEST_F(ExternalData, RefusesPathsLeavingTheFolder) {
  EXPECT_NE(Error(Model("../secret.bin")).find("leaves the model's folder"), std::string::npos);
  EXPECT_NE(Error(Model("a/../../secret.bin")).find("leaves the model's folder"),
            std::string::npos);
  EXPECT_NE(Error(Model((root_ / "secret.bin").string())).find("is absolute"), std::string::npos);
}

TEST_F(ExternalData, RefusesSymlinksAndHardlinks) {
  fs::create_symlink(root_ / "secret.bin", root_ / "model" / "link.bin");
  EXPECT_NE(Error(Model("link.bin")).find("is a symlink"), std::string::npos);
  fs::create_hard_link(root_ / "secret.bin", root_ / "model" / "hard.bin");
  EXPECT_NE(Error(Model("hard.bin")).find("is a hardlink"), std::string::npos);
}

TEST_F(ExternalData, MissingFileAndRangesOutsideIt) {
  EXPECT_NE(Error(Model("nothere.bin")).find("external data file 'nothere.bin' is missing"),
            std::string::npos);
  std::string e = Error(Model("w.bin", 8, 16));
  EXPECT_NE(e.find("(offset 8, length 16) is outside 'w.bin' (16 bytes)"), std::string::npos) << e;
  e = Error(Model("w.bin", 0, 8));
  EXPECT_NE(e.find("has 8 bytes, but its shape and dtype need 16"), std::string::npos) << e;
}

TEST_F(ExternalData, RefusedFromMemory) {
  std::string path = Model("w.bin");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Expected<ir::IRModule> mod = ImportOnnxBytes(bytes.data(), bytes.size(), "", "mem.onnx");
  ASSERT_FALSE(mod);
  EXPECT_NE(mod.error().ToString().find("the model was given from memory"), std::string::npos);
}

}  // namespace
}  // namespace quilt::importers::onnx
