// What the tools do with paths that are not regular files (a directory, a FIFO) where they
// expect one, and with failures that surface as exceptions: a message naming the path and what
// it is, exit 1, and never a hang or an abort.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"

namespace {

namespace fs = std::filesystem;

using quilt::testing::RunTool;
using quilt::testing::ToolOptions;
using quilt::testing::ToolResult;

class InputFiles : public quilt::testing::ToolTest {
 protected:
  // A FIFO nobody writes to: opening it for reading blocks until a writer comes.
  std::string Fifo(const std::string& name) {
    std::string path = Path(name);
    EXPECT_EQ(mkfifo(path.c_str(), 0600), 0) << path;
    return path;
  }
  std::string Dir(const std::string& name) {
    fs::create_directories(Path(name));
    return Path(name);
  }
  // A package with static input shapes; inputs need not be given.
  std::string Package() {
    ToolResult c = RunTool("quiltc", Model() + " -o " + Path("m.quilt") + " --input-shape a:2,3");
    EXPECT_EQ(c.code, 0) << c.Describe();
    return Path("m.quilt");
  }

  // `tool args` ends with exit 1 and a message that `path` is `what`, within the timeout.
  static void ExpectRefused(const std::string& tool, const std::string& args,
                            const std::string& path, const std::string& what) {
    ToolOptions o;
    o.timeout_seconds = 20;
    ToolResult r = RunTool(tool, args, o);
    EXPECT_TRUE(r.FailedCleanly()) << tool << " " << args << ": " << r.Describe();
    EXPECT_EQ(r.code, 1) << tool << " " << args << ": " << r.Describe();
    EXPECT_NE(r.out.find("'" + path + "': it is " + what + ", not a file"), std::string::npos)
        << tool << " " << args << ": " << r.out;
  }
};

constexpr const char* kFifo = "a FIFO (named pipe)";
constexpr const char* kDir = "a directory";

TEST_F(InputFiles, QuiltcRefusesAFifoOrADirectoryAsTheModel) {
  std::string fifo = Fifo("f.onnx"), dir = Dir("d.onnx");
  ExpectRefused("quiltc", fifo + " -o " + Path("m.quilt"), fifo, kFifo);
  ExpectRefused("quiltc", dir + " -o " + Path("m.quilt"), dir, kDir);
  EXPECT_FALSE(fs::exists(Path("m.quilt")));
}

TEST_F(InputFiles, QuiltInspectRefusesAFifoOrADirectoryAsAModelOrAPackage) {
  for (const char* name : {"f.onnx", "f.quilt"}) {
    std::string fifo = Fifo(name);
    ExpectRefused("quilt-inspect", fifo, fifo, kFifo);
  }
  for (const char* name : {"d.onnx", "d.quilt"}) {
    std::string dir = Dir(name);
    ExpectRefused("quilt-inspect", dir, dir, kDir);
  }
}

TEST_F(InputFiles, QuiltOptRefusesAFifoOrADirectoryAsItsInputOrExpectedFile) {
  std::string ir = std::string(QUILT_TEST_DATA) + "/ir/rfc_module.qir";
  for (const char* name : {"f.qir", "f.onnx"}) {
    std::string fifo = Fifo(name);
    ExpectRefused("quilt-opt", fifo, fifo, kFifo);
  }
  std::string dir = Dir("d.qir");
  ExpectRefused("quilt-opt", dir, dir, kDir);
  ExpectRefused("quilt-opt", ir + " --check-equal " + dir, dir, kDir);
  std::string expected_fifo = Fifo("expected.qir");
  ExpectRefused("quilt-opt", ir + " --check-equal " + expected_fifo, expected_fifo, kFifo);
}

TEST_F(InputFiles, QuiltRunRefusesAFifoOrADirectoryAsThePackage) {
  std::string fifo = Fifo("f.quilt"), dir = Dir("d.quilt");
  ExpectRefused("quilt-run", fifo, fifo, kFifo);
  ExpectRefused("quilt-run", dir, dir, kDir);
}

TEST_F(InputFiles, QuiltRunRefusesAFifoOrADirectoryAsAnInputFile) {
  std::string package = Package();
  for (const char* name : {"f.npy", "f.npz", "f.pb"}) {
    std::string fifo = Fifo(name);
    ExpectRefused("quilt-run", package + " --input a=" + fifo, fifo, kFifo);
  }
  std::string fifo = Path("f.npz");
  ExpectRefused("quilt-run", package + " --inputs " + fifo, fifo, kFifo);
  for (const char* name : {"d.npy", "d.npz", "d.pb"}) {
    std::string dir = Dir(name);
    ExpectRefused("quilt-run", package + " --input a=" + dir, dir, kDir);
  }
}

TEST_F(InputFiles, QuiltRunSaysWhenTheOutputDirIsAFile) {
  std::string package = Package();
  std::string file = Write("out", "a file");
  ToolResult r = RunTool("quilt-run", package + " --output-dir " + file);
  EXPECT_TRUE(r.FailedCleanly()) << r.Describe();
  EXPECT_NE(r.out.find("quilt-run: error: --output-dir '" + file + "': "), std::string::npos)
      << r.out;
  r = RunTool("quilt-run", package + " --output-dir " + file + "/below");
  EXPECT_TRUE(r.FailedCleanly()) << r.Describe();
  EXPECT_NE(r.out.find("quilt-run: error: --output-dir '" + file + "/below': "), std::string::npos)
      << r.out;
}

// An allocation that fails (random values for an input of 3e12 floats, past the default arena
// limit, which is raised) is a message, not an abort. AddressSanitizer's allocator reports a failed
// allocation and stops the process itself, before any handler: there the test cannot run.
TEST_F(InputFiles, QuiltRunSaysWhenMemoryRunsOut) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer ends the process on a failed allocation itself";
#endif
  ToolResult c =
      RunTool("quiltc", Model() + " -o " + Path("m.quilt") + " --input-shape a:1000000000000,3");
  ASSERT_EQ(c.code, 0) << c.Describe();
  ToolResult r =
      RunTool("quilt-run", Path("m.quilt") + " --max-arena-bytes 16T --max-run-bytes 16T");
  EXPECT_TRUE(r.FailedCleanly()) << r.Describe();
  EXPECT_EQ(r.code, 1) << r.Describe();
  EXPECT_NE(r.out.find("quilt-run: error: out of memory"), std::string::npos) << r.out;
}

}  // namespace
