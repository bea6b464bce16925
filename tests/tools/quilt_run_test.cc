// quilt-run's inputs and outputs by name: the .npz member an --input takes, the file each output
// is written to, and --input-shape names checked against the model.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/importers/onnx_test_util.h"
#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"
#include "tools/tensor_io.h"

namespace {

namespace fs = std::filesystem;

using quilt::testing::RunTool;
using quilt::testing::StoredZip;
using quilt::testing::ToolResult;

class QuiltRun : public quilt::testing::ToolTest {
 protected:
  std::string Package() {
    ToolResult c = RunTool("quiltc", Model() + " -o " + Path("m.quilt"));
    EXPECT_EQ(c.code, 0) << c.Describe();
    return Path("m.quilt");
  }
  std::string Member(const std::vector<float>& v, quilt::rt::Shape shape) {
    return quilt::tools::NpyBytes(Floats(v, std::move(shape)));
  }
  static std::vector<float> Values(const quilt::rt::OwnedTensor& t) {
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
  }
};

// b comes first in the archive: an --input a=... that took the first member would get b's
// (1, 3) ones instead of a's (2, 3) values.
TEST_F(QuiltRun, AnInputFromAnNpzTakesTheMemberOfItsName) {
  std::string package = Package();
  std::string npz = Write("in.npz", StoredZip({{"b.npy", Member({1, 1, 1}, {1, 3})},
                                               {"a.npy", Member({0, 1, 2, 3, 4, 5}, {2, 3})}}));
  ToolResult r = RunTool("quilt-run", package + " --input a=" + npz + " --input b=" + npz +
                                          " --output-dir " + Path("out"));
  ASSERT_EQ(r.code, 0) << r.Describe();
  EXPECT_NE(r.out.find("y/out: float32 (2, 3) [1, 2, 3, 4, 5, 6]"), std::string::npos) << r.out;
}

TEST_F(QuiltRun, AnInputFromAnNpzOfOneMemberTakesIt) {
  std::string package = Package();
  std::string a = Write("a.npz", StoredZip({{"arr_0.npy", Member({3, 8, 15}, {1, 3})}}));
  std::string b = Write("b.npz", StoredZip({{"arr_0.npy", Member({1, 1, 1}, {1, 3})}}));
  ToolResult r = RunTool("quilt-run", package + " --input a=" + a + " --input b=" + b);
  ASSERT_EQ(r.code, 0) << r.Describe();
  EXPECT_NE(r.out.find("y/out: float32 (1, 3) [4, 9, 16]"), std::string::npos) << r.out;
}

TEST_F(QuiltRun, AnInputFromAnNpzWithoutItsMemberListsTheMembers) {
  std::string package = Package();
  std::string npz = Write("in.npz", StoredZip({{"x.npy", Member({1, 1, 1}, {1, 3})},
                                               {"z.npy", Member({1, 1, 1}, {1, 3})}}));
  ToolResult r = RunTool("quilt-run", package + " --input a=" + npz);
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("quilt-run: error: --input a: " + npz +
                       ": no member named 'a' (the members: x, z)"),
            std::string::npos)
      << r.out;
}

// Output names that meet as file names ('/' and '.' become '_'; case aside, for file systems
// that ignore it): each output gets its own file, none outside the folder, and the tool says
// which file holds which output.
TEST_F(QuiltRun, OutputsWhoseFileNamesMeetAreWrittenToFilesOfTheirOwn) {
  quilt::testing::OnnxGraph g;
  g.Input("x", onnx::TensorProto::FLOAT, {int64_t{3}})
      .Output("a/b", onnx::TensorProto::FLOAT)
      .Output("a_b", onnx::TensorProto::FLOAT)
      .Output("A.b", onnx::TensorProto::FLOAT)
      .Output("../up", onnx::TensorProto::FLOAT);
  g.Node("Neg", {"x"}, {"a/b"}, "neg");
  g.Node("Sqrt", {"x"}, {"a_b"}, "sqrt");
  g.Node("Add", {"x", "x"}, {"A.b"}, "twice");
  g.Node("Mul", {"x", "x"}, {"../up"}, "square");
  ASSERT_EQ(RunTool("quiltc", Write("m.onnx", g.Bytes()) + " -o " + Path("m.quilt")).code, 0);
  std::string x = Npy("x.npy", {1, 4, 9}, {3});
  ToolResult r =
      RunTool("quilt-run", Path("m.quilt") + " --input x=" + x + " --output-dir " + Path("out"));
  ASSERT_EQ(r.code, 0) << r.Describe();
  struct Want {
    const char* output;
    const char* file;
    std::vector<float> values;
  };
  for (const Want& w :
       {Want{"a/b", "a_b.npy", {-1, -4, -9}}, Want{"a_b", "a_b_2.npy", {1, 2, 3}},
        Want{"A.b", "A_b_3.npy", {2, 8, 18}}, Want{"../up", "___up.npy", {1, 16, 81}}}) {
    std::string path = Path("out/") + w.file;
    EXPECT_NE(r.out.find("quilt-run: output '" + std::string(w.output) + "' written to " + path),
              std::string::npos)
        << w.output << ": " << r.out;
    quilt::Expected<quilt::rt::OwnedTensor> t = quilt::tools::ReadNpy(path);
    ASSERT_TRUE(t) << t.error().ToString();
    EXPECT_EQ(Values(*t), w.values) << w.output;
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(Path("out"))) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_EQ(files.size(), 4u);
  EXPECT_FALSE(fs::exists(Path("up.npy")));
}

// quiltc and quilt-inspect take --input-shape; a name the model has no input of is refused,
// naming the inputs it has.
TEST_F(QuiltRun, InputShapeForANameThatIsNoInputIsRefused) {
  std::string model = Model();
  for (const char* tool : {"quiltc", "quilt-inspect"}) {
    std::string args = model + " --input-shape c:2,3";
    if (std::string(tool) == "quiltc") args += " -o " + Path("m.quilt");
    ToolResult r = RunTool(tool, args);
    EXPECT_EQ(r.code, 1) << tool << ": " << r.Describe();
    EXPECT_NE(r.out.find("an input shape names 'c', which is not a graph input (the inputs: a, b)"),
              std::string::npos)
        << tool << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(Path("m.quilt")));
}

}  // namespace
