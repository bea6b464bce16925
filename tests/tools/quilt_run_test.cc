// quilt-run's inputs by name: the .npz member an --input takes.
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

}  // namespace
