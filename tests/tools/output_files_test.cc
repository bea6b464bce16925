// How the tools write their outputs: a unique temporary file beside the output, renamed over it;
// nothing else in the folder touched, nothing left behind on a failure, no directory replaced.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"

namespace {

namespace fs = std::filesystem;

using quilt::testing::ReadAll;
using quilt::testing::RunTool;
using quilt::testing::ToolOptions;
using quilt::testing::ToolResult;
using Names = std::vector<std::string>;

class OutputFiles : public quilt::testing::ToolTest {};

TEST_F(OutputFiles, QuiltcLeavesAFileNamedLikeItsOldTemporaryAlone) {
  std::string model = Model();
  // The name quiltc once wrote through: someone's file, kept byte for byte.
  std::string keep = std::string("precious\0bytes\n", 15);
  Write("m.quilt.tmp", keep);
  ToolResult c = RunTool("quiltc", model + " -o " + Path("m.quilt"));
  ASSERT_EQ(c.code, 0) << c.Describe();
  EXPECT_EQ(ReadAll(Path("m.quilt.tmp")), keep);
  EXPECT_EQ(Listing(), (Names{"m.quilt", "m.quilt.tmp", "model.onnx"}));
  // The package is whole: it loads, and it is what a compile to a fresh name writes.
  ASSERT_EQ(RunTool("quiltc", model + " -o " + Path("again.quilt")).code, 0);
  EXPECT_EQ(ReadAll(Path("m.quilt")), ReadAll(Path("again.quilt")));
  ToolResult i = RunTool("quilt-inspect", Path("m.quilt"));
  EXPECT_EQ(i.code, 0) << i.Describe();
}

TEST_F(OutputFiles, QuiltcReplacesAnOldPackageWhole) {
  std::string model = Model();
  Write("m.quilt", "an old package");
  ToolResult c = RunTool("quiltc", model + " -o " + Path("m.quilt"));
  ASSERT_EQ(c.code, 0) << c.Describe();
  ASSERT_EQ(RunTool("quiltc", model + " -o " + Path("fresh.quilt")).code, 0);
  EXPECT_EQ(ReadAll(Path("m.quilt")), ReadAll(Path("fresh.quilt")));
  EXPECT_EQ(Listing(), (Names{"fresh.quilt", "m.quilt", "model.onnx"}));
}

TEST_F(OutputFiles, QuiltcGivesThePackageTheModeOfANewFile) {
  ToolOptions o;
  o.shell = "umask 027";
  ASSERT_EQ(RunTool("quiltc", Model() + " -o " + Path("m.quilt"), o).code, 0);
  struct stat st;
  ASSERT_EQ(stat(Path("m.quilt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(OutputFiles, QuiltcIntoAMissingFolderSaysSoAndLeavesNothing) {
  std::string model = Model();
  ToolResult c = RunTool("quiltc", model + " -o " + Path("no/such/m.quilt"));
  EXPECT_EQ(c.code, 1) << c.Describe();
  EXPECT_NE(c.out.find("cannot write the package '" + Path("no/such/m.quilt") + "': its folder '" +
                       Path("no/such") + "': No such file or directory"),
            std::string::npos)
      << c.out;
  EXPECT_EQ(Listing(), (Names{"model.onnx"}));
}

// A write that fails halfway (past the file-size limit here; a full disk alike): the old
// package stays, the temporary file goes, and the tool says why instead of dying by SIGXFSZ.
TEST_F(OutputFiles, QuiltcWriteFailingHalfwayKeepsTheOldPackageAndNoTemporary) {
  std::string model = Model();
  ASSERT_EQ(RunTool("quiltc", model + " -o " + Path("big.quilt")).code, 0);
  ASSERT_GT(fs::file_size(Path("big.quilt")), 1024u) << "the test needs a package over 1 KiB";
  fs::remove(Path("big.quilt"));
  Write("m.quilt", "the old package");
  ToolOptions o;
  o.shell = "ulimit -f 1";  // 1 KiB
  ToolResult c = RunTool("quiltc", model + " -o " + Path("m.quilt"), o);
  EXPECT_TRUE(c.FailedCleanly()) << c.Describe();
  EXPECT_EQ(c.code, 1) << c.Describe();
  EXPECT_NE(
      c.out.find("cannot write the package '" + Path("m.quilt") + "': writing: File too large"),
      std::string::npos)
      << c.out;
  EXPECT_EQ(ReadAll(Path("m.quilt")), "the old package");
  EXPECT_EQ(Listing(), (Names{"m.quilt", "model.onnx"}));
}

TEST_F(OutputFiles, QuiltcRefusesADirectoryAsThePackageOrAReport) {
  std::string model = Model();
  fs::create_directories(Path("out.quilt/inside"));
  ToolResult c = RunTool("quiltc", model + " -o " + Path("out.quilt"));
  EXPECT_EQ(c.code, 1) << c.Describe();
  EXPECT_NE(c.out.find("cannot write the package '" + Path("out.quilt") +
                       "': it is a directory, not a file"),
            std::string::npos)
      << c.out;
  EXPECT_TRUE(fs::is_directory(Path("out.quilt/inside")));
  fs::create_directories(Path("r.json"));
  c = RunTool("quiltc", model + " -o " + Path("m.quilt") + " --report " + Path("r.json"));
  EXPECT_EQ(c.code, 1) << c.Describe();
  EXPECT_NE(
      c.out.find("cannot write the report '" + Path("r.json") + "': it is a directory, not a file"),
      std::string::npos)
      << c.out;
  EXPECT_FALSE(fs::exists(Path("m.quilt"))) << "refused before the compile";
}

// A FIFO, a socket or a device in the output's place is refused, not replaced by the rename (a
// FIFO of the test's own here: a device such as /dev/null would be replaced machine-wide were
// the check ever lost).
TEST_F(OutputFiles, QuiltcRefusesAFifoAsTheOutputRatherThanReplaceIt) {
  std::string model = Model();
  ASSERT_EQ(mkfifo(Path("m.quilt").c_str(), 0600), 0);
  ToolOptions o;
  o.timeout_seconds = 20;
  ToolResult c = RunTool("quiltc", model + " -o " + Path("m.quilt"), o);
  EXPECT_TRUE(c.FailedCleanly()) << c.Describe();
  EXPECT_EQ(c.code, 1) << c.Describe();
  EXPECT_NE(c.out.find("cannot write the package '" + Path("m.quilt") +
                       "': it is a FIFO (named pipe), not a file"),
            std::string::npos)
      << c.out;
  struct stat st;
  ASSERT_EQ(stat(Path("m.quilt").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(Listing(), (Names{"m.quilt", "model.onnx"}));
}

TEST_F(OutputFiles, QuiltOptWritesItsOutputWholeAndRefusesADirectory) {
  std::string ir =
      Write("in.qir", quilt::testing::ReadAll(std::string(QUILT_TEST_DATA) + "/ir/rfc_module.qir"));
  ToolResult r = RunTool("quilt-opt", ir + " -o " + Path("out.qir"));
  ASSERT_EQ(r.code, 0) << r.Describe();
  ToolResult printed = RunTool("quilt-opt", ir);
  EXPECT_EQ(ReadAll(Path("out.qir")), printed.out);
  EXPECT_EQ(Listing(), (Names{"in.qir", "out.qir"}));
  fs::create_directories(Path("dir.qir"));
  r = RunTool("quilt-opt", ir + " -o " + Path("dir.qir"));
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("cannot write '" + Path("dir.qir") + "': it is a directory, not a file"),
            std::string::npos)
      << r.out;
}

TEST_F(OutputFiles, QuiltRunRefusesADirectoryAsTheProfileBeforeRunning) {
  ASSERT_EQ(RunTool("quiltc", Model() + " -o " + Path("m.quilt") + " --input-shape a:1,3").code, 0);
  fs::create_directories(Path("trace.json"));
  ToolResult r = RunTool("quilt-run", Path("m.quilt") + " --profile " + Path("trace.json"));
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("cannot write the profile '" + Path("trace.json") +
                       "': it is a directory, not a file"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("y/out:"), std::string::npos) << "refused before the run: " << r.out;
}

}  // namespace
