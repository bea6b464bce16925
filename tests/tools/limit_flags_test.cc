// The limits as flags: every limit a message names ("quilt-run --max-threads") is a flag of that
// tool, refuses past its value with that message, and lets through what it is raised to; sizes
// take K/M/G/T; --run-timeout cancels a run; --skip-checksum loads a package whose checksum no
// longer matches.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/importers/onnx_test_util.h"
#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"
#include "tools/cli.h"
#include "tools/tensor_io.h"

namespace {

using onnx::TensorProto;
using quilt::testing::AddLoop;
using quilt::testing::CountingLoop;
using quilt::testing::CountingLoopBody;
using quilt::testing::OnnxGraph;
using quilt::testing::RunTool;
using quilt::testing::ToolResult;

// The same loop inside the body of another: subgraphs two deep.
OnnxGraph NestedLoops() {
  OnnxGraph outer_body(13);
  outer_body.Input("j", TensorProto::INT64, {}).Input("go", TensorProto::BOOL, {});
  outer_body.Input("z_in", TensorProto::FLOAT, {1});
  outer_body.Initializer<int64_t>("two", TensorProto::INT64, {}, {2});
  outer_body.Node("Identity", {"go"}, {"go_out"}, "keep_outer");
  AddLoop(outer_body, CountingLoopBody(), "two", "z_in", "z_out", "inner");
  outer_body.Output("go_out", TensorProto::BOOL, std::vector<quilt::testing::Dim>{});
  outer_body.Output("z_out", TensorProto::FLOAT, std::vector<quilt::testing::Dim>{1});
  OnnxGraph g(13);
  g.Input("n", TensorProto::INT64, {}).Input("go", TensorProto::BOOL, {});
  g.Input("y", TensorProto::FLOAT, {1});
  AddLoop(g, outer_body, "n", "y", "res", "outer");
  g.Output("res", TensorProto::FLOAT);
  return g;
}

class LimitFlags : public quilt::testing::ToolTest {
 protected:
  // quilt-run's arguments for the counting loop's inputs: n, go = true, y = 0.
  std::string LoopInputs(int64_t n) {
    quilt::rt::OwnedTensor tn, tgo, ty;
    tn.dtype = quilt::rt::DType::kInt64;
    tn.data.resize(8);
    std::memcpy(tn.data.data(), &n, 8);
    tgo.dtype = quilt::rt::DType::kBool;
    tgo.data = {1};
    ty = Floats({0}, {1});
    return " --input n=" + Write("n.npy", quilt::tools::NpyBytes(tn)) +
           " --input go=" + Write("go.npy", quilt::tools::NpyBytes(tgo)) +
           " --input y=" + Write("y.npy", quilt::tools::NpyBytes(ty));
  }
  std::string LoopPackage() {
    ToolResult c =
        RunTool("quiltc", Write("loop.onnx", CountingLoop().Bytes()) + " -o " + Path("loop.quilt"));
    EXPECT_EQ(c.code, 0) << c.Describe();
    return Path("loop.quilt");
  }
};

TEST(ByteSize, CountsWithBinarySuffixes) {
  using quilt::tools::ParseByteSize;
  EXPECT_EQ(ParseByteSize("1"), 1u);
  EXPECT_EQ(ParseByteSize("512M"), uint64_t{512} << 20);
  EXPECT_EQ(ParseByteSize("64g"), uint64_t{64} << 30);
  EXPECT_EQ(ParseByteSize("4T"), uint64_t{4} << 40);
  EXPECT_EQ(ParseByteSize("4194304T"), uint64_t{1} << 62);
  for (const char* bad :
       {"", "0", "-1", "1.5G", "12Q", "G", "1GB", "4194305T", "99999999999999999999", " 1"}) {
    EXPECT_FALSE(ParseByteSize(bad)) << bad;
  }
}

TEST_F(LimitFlags, LoopIterationsStopAtTheFlagsLimit) {
  std::string package = LoopPackage();
  std::string inputs = LoopInputs(50);
  ToolResult r = RunTool("quilt-run", package + inputs + " --max-loop-iterations 10");
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("SessionLimits::max_loop_iterations; quilt-run --max-loop-iterations"),
            std::string::npos)
      << r.out;
  r = RunTool("quilt-run", package + inputs + " --max-loop-iterations 50");
  EXPECT_EQ(r.code, 0) << r.Describe();
  EXPECT_NE(r.out.find("res: float32 (1,) [50]"), std::string::npos) << r.out;
}

// A loop of 10^9 iterations (fine by --max-loop-iterations) is cancelled by the timeout, with a
// message that names it; the tool exits 1 well before the loop could end.
TEST_F(LimitFlags, RunTimeoutCancelsALongRun) {
  std::string package = LoopPackage();
  ToolResult r = RunTool("quilt-run", package + LoopInputs(1'000'000'000) +
                                          " --max-loop-iterations 2000000000 --run-timeout 0.2");
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("(--run-timeout 0.2 s)"), std::string::npos) << r.out;
  EXPECT_EQ(RunTool("quilt-run", package + " --run-timeout 0").code, 2);
}

TEST_F(LimitFlags, ThreadsArenaAndRunBytesAreRaisedByTheirFlags) {
  // (A model with values between its steps: an arena to limit.)
  ToolResult c = RunTool(
      "quiltc", ModelWithIntermediates() + " -o " + Path("m.quilt") + " --input-shape a:2,3");
  ASSERT_EQ(c.code, 0) << c.Describe();
  std::string package = Path("m.quilt");
  struct Case {
    std::string refused, allowed, message;
  };
  for (const Case& k : {
           Case{"--threads 8 --max-threads 4", "--threads 8 --max-threads 8",
                "past the limit of 4 (SessionLimits::max_threads; quilt-run --max-threads)"},
           Case{"--max-arena-bytes 1", "--max-arena-bytes 1K",
                "past the limit of 1 (SessionLimits::max_arena_bytes; quilt-run "
                "--max-arena-bytes)"},
           Case{"--max-run-bytes 1", "--max-run-bytes 1M",
                "past its limit of 1 (SessionLimits::max_run_bytes; quilt-run --max-run-bytes)"},
       }) {
    ToolResult r = RunTool("quilt-run", package + " " + k.refused);
    EXPECT_EQ(r.code, 1) << k.refused << ": " << r.Describe();
    EXPECT_NE(r.out.find(k.message), std::string::npos) << k.refused << ": " << r.out;
    r = RunTool("quilt-run", package + " " + k.allowed);
    EXPECT_EQ(r.code, 0) << k.allowed << ": " << r.Describe();
  }
  for (const char* usage : {"--max-arena-bytes 12Q", "--max-run-bytes 0", "--max-threads 0",
                            "--max-loop-iterations 0", "--max-workers -1"}) {
    ToolResult r = RunTool("quilt-run", package + " " + usage);
    EXPECT_EQ(r.code, 2) << usage << ": " << r.Describe();
  }
}

// A byte of the package's footer changed: refused as damage, and loaded with --skip-checksum
// (the checksum covers the bytes; the package itself is intact).
TEST_F(LimitFlags, SkipChecksumLoadsAPackageWhoseChecksumNoLongerMatches) {
  ASSERT_EQ(RunTool("quiltc", Model() + " -o " + Path("m.quilt") + " --input-shape a:2,3").code, 0);
  std::string bytes = quilt::testing::ReadAll(Path("m.quilt"));
  bytes.back() = static_cast<char>(bytes.back() ^ 1);
  std::string package = Write("changed.quilt", bytes);
  ToolResult r = RunTool("quilt-run", package);
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << r.out;
  for (const char* flags : {" --skip-checksum", " --skip-checksum --map-file"}) {
    r = RunTool("quilt-run", package + flags);
    EXPECT_EQ(r.code, 0) << flags << ": " << r.Describe();
  }
}

TEST_F(LimitFlags, ImporterLimitsAreQuiltcFlags) {
  std::string model = Model();
  ToolResult r = RunTool("quiltc", model + " -o " + Path("m.quilt") + " --max-model-bytes 64");
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("past the limit of 64 (ImportOptions::max_model_bytes; quiltc "
                       "--max-model-bytes)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(RunTool("quiltc", model + " -o " + Path("m.quilt") + " --max-model-bytes 1K").code, 0);
  r = RunTool("quiltc", model + " -o " + Path("m.quilt") + " --max-model-bytes 2G");
  EXPECT_EQ(r.code, 2) << r.Describe();
  EXPECT_NE(r.out.find("at most 2147483647 bytes"), std::string::npos) << r.out;

  // Loops two deep: refused at one level of nesting, compiled at two.
  std::string nested = Write("nested.onnx", NestedLoops().Bytes());
  r = RunTool("quiltc", nested + " -o " + Path("n.quilt") + " --max-nesting 1");
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("subgraphs nest deeper than 1 (ImportOptions::max_nesting; quiltc "
                       "--max-nesting)"),
            std::string::npos)
      << r.out;
  r = RunTool("quiltc", nested + " -o " + Path("n.quilt") + " --max-nesting 2");
  ASSERT_EQ(r.code, 0) << r.Describe();
  // Each outer iteration adds 2: 3 of them give 6.
  r = RunTool("quilt-run", Path("n.quilt") + LoopInputs(3));
  EXPECT_EQ(r.code, 0) << r.Describe();
  EXPECT_NE(r.out.find("res: float32 (1,) [6]"), std::string::npos) << r.out;
  EXPECT_EQ(RunTool("quiltc", model + " -o " + Path("m.quilt") + " --max-nesting 0").code, 2);
  EXPECT_EQ(RunTool("quiltc", model + " -o " + Path("m.quilt") + " --max-inlined-nodes 0").code, 2);
}

}  // namespace
