// quiltc on modules in the text form: a TVMScript module as TVM 0.27 prints it compiles and runs
// (checked against a float64 evaluation); what cannot run is an error naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"
#include "tools/tensor_io.h"

namespace {

using Result = quilt::testing::ToolResult;

Result Tool(const std::string& name, const std::string& args) {
  return quilt::testing::RunTool(name, args, "");
}

class QuiltcTextTest : public quilt::testing::ToolTest {};

// As TVM 0.27 prints it (`Module.script()`), canonical target dict included.
constexpr char kTvmModule[] = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "mtriple": "x86_64-conda-linux-gnu", "tag": ""}, 0, "global")]})
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), w: R.Tensor((3, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        with R.dataflow():
            y: R.Tensor((2, 4), dtype="float32") = R.matmul(x, w, out_dtype=None)
            z: R.Tensor((2, 4), dtype="float32") = R.nn.relu(y)
            s: R.Tensor((2, 4), dtype="float32") = R.nn.softmax(z, axis=-1)
            R.output(s)
        return s
)";

TEST_F(QuiltcTextTest, CompilesATvmScriptModuleAndRunsIt) {
  std::string module = Write("module.py", kTvmModule);
  Result c = Tool("quiltc", module + " -o " + Path("m.quilt"));
  ASSERT_EQ(c.code, 0) << c.out;
  // The module's own vdevice list is kept, its target as TVM wrote it.
  EXPECT_NE(c.out.find("llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu -tag="), std::string::npos)
      << c.out;
  std::vector<float> x = {0.0f, 0.5f, -1.0f, 2.0f, 0.25f, 1.5f};
  std::vector<float> w = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f,
                          0.7f, -0.8f, 0.9f, 1.0f, -1.1f, 0.2f};
  ASSERT_TRUE(quilt::tools::WriteNpy(Path("x.npy"), Floats(x, {2, 3})));
  ASSERT_TRUE(quilt::tools::WriteNpy(Path("w.npy"), Floats(w, {3, 4})));
  Result r = Tool("quilt-run", Path("m.quilt") + " --input x=" + Path("x.npy") +
                                   " --input w=" + Path("w.npy") + " --output-dir " + Path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  quilt::Expected<quilt::rt::OwnedTensor> s = quilt::tools::ReadNpy(Path("out/s.npy"));
  ASSERT_TRUE(s) << s.error().ToString();
  ASSERT_EQ(s->shape, (quilt::rt::Shape{2, 4}));
  std::vector<float> got(8);
  std::memcpy(got.data(), s->data.data(), 32);
  // float64: softmax(relu(x @ w)) along the last axis.
  for (int i = 0; i < 2; ++i) {
    double z[4], sum = 0;
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += double(x[i * 3 + k]) * double(w[k * 4 + j]);
      z[j] = std::exp(std::max(acc, 0.0));
      sum += z[j];
    }
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(got[i * 4 + j], z[j] / sum, 1e-6) << i << "," << j;
  }
}

TEST_F(QuiltcTextTest, ACallOfAPrimFuncIsAnErrorNamingItAndTheDevice) {
  // TIR is carried, not compiled: the prim_func and its call parse and print back, and compiling
  // says which prim_func has no kernel on which device.
  std::string module = Write("tir.qir", R"(@I.ir_module
class Module:
    @T.prim_func
    def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
)");
  Result opt = Tool("quilt-opt", module);
  ASSERT_EQ(opt.code, 0) << opt.out;
  EXPECT_NE(opt.out.find("    @T.prim_func\n    def add_one("), std::string::npos) << opt.out;
  EXPECT_NE(opt.out.find("                B[vi] = A[vi] + T.float32(1)\n"), std::string::npos)
      << opt.out;
  EXPECT_NE(opt.out.find("R.call_tir(cls.add_one, (x,), out_ty=R.Tensor((4,), \"float32\"))"),
            std::string::npos)
      << opt.out;
  Result c = Tool("quiltc", module + " -o " + Path("m.quilt"));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("R.call_tir of prim_func 'add_one': no kernel for this prim_func on "
                       "device llvm"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("tir.qir"), std::string::npos) << c.out;
  EXPECT_FALSE(std::filesystem::exists(Path("m.quilt")));
}

TEST_F(QuiltcTextTest, AMatchCastRunsAsItsValueOrIsAnErrorWhereItNarrows) {
  // b's cast says what is known of x: it is x. a's gives y's free dim a number, which the
  // package cannot check at run time yet: an error naming the binding, not a silent pass.
  std::string module = Write("cast.qir", R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("m", 2), "float32")):
        m = T.int64()
        b = R.match_cast(x, R.Tensor((m, 2), "float32"))
        c = R.add(b, b)
        return c
)");
  ASSERT_EQ(Tool("quiltc", module + " -o " + Path("m.quilt")).code, 0);
  ASSERT_TRUE(quilt::tools::WriteNpy(Path("x.npy"), Floats({1, 2, 3, 4, 5, 6}, {3, 2})));
  Result r = Tool("quilt-run",
                  Path("m.quilt") + " --input x=" + Path("x.npy") + " --output-dir " + Path("out"));
  ASSERT_EQ(r.code, 0) << r.out;
  quilt::Expected<quilt::rt::OwnedTensor> c = quilt::tools::ReadNpy(Path("out/c.npy"));
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_EQ(c->shape, (quilt::rt::Shape{3, 2}));
  std::vector<float> got(6);
  std::memcpy(got.data(), c->data.data(), 24);
  EXPECT_EQ(got, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  std::string narrow = Write("narrow.qir", R"(@I.ir_module
class Module:
    @R.function
    def main(y: R.Tensor(("m", 2), "float32")):
        a = R.match_cast(y, R.Tensor((3, 2), "float32"))
        c = R.add(a, a)
        return c
)");
  Result e = Tool("quiltc", narrow + " -o " + Path("n.quilt"));
  EXPECT_EQ(e.code, 1) << e.out;
  EXPECT_NE(e.out.find("a: R.match_cast narrows R.Tensor((m, 2), \"float32\", \"llvm\") to "
                       "R.Tensor((3, 2), \"float32\", \"llvm\")"),
            std::string::npos)
      << e.out;
}

TEST_F(QuiltcTextTest, ABatchNormInTrainingFormIsRefusedNotRunAsInference) {
  // TVM's batch_norm defaults to training=True (batch statistics); running it with the moving
  // statistics would be a silent wrong answer.
  std::string module = Write("bn.qir", R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 3), "float32"), m: R.Tensor((2,), "float32")):
        t = R.nn.batch_norm(x, m, m, m, m, axis=1)
        y = t[0]
        return y
)");
  Result c = Tool("quiltc", module + " -o " + Path("m.quilt"));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("R.nn.batch_norm with training=True (batch statistics): no CPU kernel"),
            std::string::npos)
      << c.out;
}

TEST_F(QuiltcTextTest, TheVDevicesMemoryScopeReachesThePackage) {
  std::string module = Write("scoped.qir", R"(@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global.scratch")]})
    @R.function
    def main(x: R.Tensor((4,), "float32", "llvm:0:global.scratch")):
        y = R.exp(x)
        return y
)");
  ASSERT_EQ(Tool("quiltc", module + " -o " + Path("m.quilt")).code, 0);
  Result i = Tool("quilt-inspect", Path("m.quilt"));
  ASSERT_EQ(i.code, 0) << i.out;
  EXPECT_NE(i.out.find("0: llvm (cpu 0, memory scope global.scratch)"), std::string::npos) << i.out;
  // --device replaces the module's list; a tensor placed on an entry it drops is not moved
  // silently.
  Result c = Tool("quiltc", module + " -o " + Path("g.quilt") + " --device llvm");
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("drops vdevice llvm (id 0, global.scratch), which function 'main', "
                       "parameter 'x' is on"),
            std::string::npos)
      << c.out;
}

TEST_F(QuiltcTextTest, ErrorsNameTheFileAndWhatIsWrong) {
  std::string bad = Write("bad.qir", R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        y = R.frobnicate(x)
        return y
)");
  Result c = Tool("quiltc", bad + " -o " + Path("m.quilt"));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find(bad + ":5:13: unknown op R.frobnicate"), std::string::npos) << c.out;
  std::string no_main = Write("nomain.qir", R"(@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((4,), "float32")):
        return x
)");
  c = Tool("quiltc", no_main + " -o " + Path("m.quilt"));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("has no function 'main' to compile (it has: f)"), std::string::npos)
      << c.out;
  c = Tool("quiltc", no_main + " -o " + Path("m.quilt") + " --input-shape x:4");
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_NE(c.out.find("--input-shape and --input-value apply to ONNX models"), std::string::npos)
      << c.out;
}

// A branch whose last binding is a call (`z = R.exp(x)`, as TVM prints a branch) is a block
// ending in that call: normalization binds it, as TVM's does, and the package runs either branch.
constexpr char kBranchEndingInACall[] = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 2), "float32"), flag: R.Tensor((), "bool")):
        if flag:
            z = R.exp(x)
        else:
            z = R.nn.relu(x)
        return z
)";

TEST_F(QuiltcTextTest, ABranchEndingInACallCompilesAndRuns) {
  std::string module = Write("branch.qir", kBranchEndingInACall);
  Result c = Tool("quiltc", module + " -o " + Path("m.quilt"));
  ASSERT_EQ(c.code, 0) << c.out;
  std::vector<float> x = {-1.5f, 0.0f, 0.5f, 2.0f};
  ASSERT_TRUE(quilt::tools::WriteNpy(Path("x.npy"), Floats(x, {2, 2})));
  for (bool flag : {true, false}) {
    quilt::rt::OwnedTensor f;
    f.dtype = quilt::rt::DType::kBool;
    f.data = {static_cast<uint8_t>(flag)};
    ASSERT_TRUE(quilt::tools::WriteNpy(Path("flag.npy"), f));
    std::string out = Path(flag ? "then" : "else");
    Result r = Tool("quilt-run", Path("m.quilt") + " --input x=" + Path("x.npy") +
                                     " --input flag=" + Path("flag.npy") + " --output-dir " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    quilt::Expected<quilt::rt::OwnedTensor> z = quilt::tools::ReadNpy(out + "/z.npy");
    ASSERT_TRUE(z) << z.error().ToString();
    ASSERT_EQ(z->shape, (quilt::rt::Shape{2, 2}));
    std::vector<float> got(4);
    std::memcpy(got.data(), z->data.data(), 16);
    for (int i = 0; i < 4; ++i) {
      double want = flag ? std::exp(double(x[i])) : std::max(double(x[i]), 0.0);
      EXPECT_NEAR(got[i], want, 1e-6 * std::max(1.0, want)) << flag << " " << i;
    }
  }
}

}  // namespace
