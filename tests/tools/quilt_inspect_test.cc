// quilt-inspect --kernels: the CPU kernels a package may run, the list a runtime built with
// chosen kernels takes (QUILT_KERNELS, runtime/README.md). scripts/check-selective-runtime.sh
// builds such a runtime from this list and runs the package with it.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"

namespace {

using Result = quilt::testing::ToolResult;

Result Tool(const std::string& name, const std::string& args) {
  return quilt::testing::RunTool(name, args, "");
}

class QuiltInspectTest : public quilt::testing::ToolTest {};

// A matmul in the main graph, an exp and a relu in the branches of an If (subgraphs).
constexpr char kBranches[] = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 4), "float32"), flag: R.Tensor((), "bool")):
        y = R.matmul(x, w)
        if flag:
            e = R.exp(y)
            z = e
        else:
            r = R.nn.relu(y)
            z = r
        return z
)";

// On OpenCL: a matmul, a sigmoid-multiply chain (fused into one step) and a max.
constexpr char kFused[] = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 4), "float32")):
        y = R.matmul(x, w)
        s = R.sigmoid(y)
        z = R.multiply(y, s)
        m = R.max(z, axis=[1])
        return m
)";

TEST_F(QuiltInspectTest, KernelsListsTheKernelsOfEveryGraph) {
  std::string module = Write("branches.qir", kBranches);
  Result c = Tool("quiltc", module + " -o " + Path("b.quilt"));
  ASSERT_EQ(c.code, 0) << c.out;
  Result r = Tool("quilt-inspect", Path("b.quilt") + " --kernels");
  ASSERT_EQ(r.code, 0) << r.out;
  // The if step is the executor's own; its branches' kernels are listed.
  EXPECT_EQ(r.out, "exp\nmatmul\nnn.relu\n");
}

TEST_F(QuiltInspectTest, KernelsListsDispatchedOpsAndTheMembersOfFusedSteps) {
  std::string module = Write("fused.qir", kFused);
  Result c = Tool("quiltc", module + " -o " + Path("f.quilt") + " --device opencl --portable");
  ASSERT_EQ(c.code, 0) << c.out;
  Result steps = Tool("quilt-inspect", Path("f.quilt") + " --steps");
  ASSERT_EQ(steps.code, 0) << steps.out;
  ASSERT_NE(steps.out.find("fused_elementwise (code"), std::string::npos) << steps.out;
  // Where the OpenCL device is absent, the CPU runs each step with its op's kernel, and a fused
  // step with its members' kernels.
  Result r = Tool("quilt-inspect", Path("f.quilt") + " --kernels");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "fused_elementwise\nmatmul\nmax\nmultiply\nsigmoid\n");
}

TEST_F(QuiltInspectTest, KernelsOfAModelIsBadUsage) {
  std::string model = Model();
  Result r = Tool("quilt-inspect", model + " --kernels");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("quilt-inspect: error: --kernels lists a package's kernels; " + model +
                       " is not a package (.quilt): compile it with quiltc first"),
            std::string::npos)
      << r.out;
}

}  // namespace
