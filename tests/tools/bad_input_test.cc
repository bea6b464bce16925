// Every tool against a table of bad inputs and bad flags: each case ends with a message and exit
// 1 (an error in the input) or 2 (bad usage), never by a signal, a sanitizer report or a hang.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/tools/tool_runner.h"
#include "tests/tools/tool_test_util.h"

namespace {

using quilt::testing::ReadAll;
using quilt::testing::RunTool;
using quilt::testing::ToolOptions;
using quilt::testing::ToolResult;

struct Case {
  std::string args;
  int code;             // 1 or 2
  std::string message;  // a part of what the tool must print
};

class BadInput : public quilt::testing::ToolTest {
 protected:
  void SetUp() override {
    ToolTest::SetUp();
    model_ = Model();
    ToolResult c = RunTool("quiltc", model_ + " -o " + Path("m.quilt"));
    ASSERT_EQ(c.code, 0) << c.Describe();
    package_ = Path("m.quilt");
    qir_ = Write("m.qir", ReadAll(std::string(QUILT_TEST_DATA) + "/ir/rfc_module.qir"));
    std::filesystem::create_directories(Path("dir"));
    ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
    // A socket file (a device such as /dev/zero would do too, but a tool that lost the check
    // would then read it without end).
    socket_ = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(socket_, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string socket_path = Path("socket");
    ASSERT_LT(socket_path.size(), sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    ASSERT_EQ(bind(socket_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    Write("empty", "");
    Write("garbage",
          "\x7f"
          "ELF\x01\x02 this is no model, no package, no tensor \xff\xfe");
    // Real files cut in half.
    std::string m = ReadAll(model_), p = ReadAll(package_), q = ReadAll(qir_);
    Write("half.onnx", m.substr(0, m.size() / 2));
    Write("half.quilt", p.substr(0, p.size() / 2));
    Write("half.qir", q.substr(0, q.size() / 2));
    std::string npy = Npy("a.npy", {0, 1, 2, 3, 4, 5}, {2, 3});
    Write("half.npy", ReadAll(npy).substr(0, ReadAll(npy).size() - 5));
    std::string zip = quilt::testing::StoredZip({{"a.npy", ReadAll(npy)}});
    Write("half.npz", zip.substr(0, zip.size() / 2));
    Write("garbage.npz", std::string(64, 'P'));
    Write("garbage.pb", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff");
  }

  // Runs every case of `tool`; the message is looked for in the output.
  void Check(const std::string& tool, const std::vector<Case>& cases) {
    ToolOptions o;
    o.timeout_seconds = 30;
    for (const Case& c : cases) {
      SCOPED_TRACE(tool + " " + c.args);
      ToolResult r = RunTool(tool, c.args, o);
      EXPECT_TRUE(r.FailedCleanly()) << r.Describe();
      EXPECT_EQ(r.code, c.code) << r.Describe();
      EXPECT_NE(r.out.find(c.message), std::string::npos) << "wanted '" << c.message << "' in:\n"
                                                          << r.out;
    }
  }

  // The same bad paths, whatever the tool: the message says what is wrong with each.
  std::vector<Case> BadPaths(const std::string& before, const std::string& after,
                             const std::string& ext) const {
    return {
        {before + Path("missing" + ext) + after, 1, "No such file or directory"},
        {before + Path("dir") + after, 1, "it is a directory, not a file"},
        {before + Path("fifo") + after, 1, "it is a FIFO (named pipe), not a file"},
        {before + Path("socket") + after, 1, "it is a socket, not a file"},
    };
  }

  void TearDown() override {
    if (socket_ >= 0) close(socket_);
    ToolTest::TearDown();
  }

  std::string model_, package_, qir_;
  int socket_ = -1;
};

TEST_F(BadInput, Quiltc) {
  std::string out = " -o " + Path("out.quilt");
  std::vector<Case> cases = BadPaths("", out, ".onnx");
  std::vector<Case> more = {
      {Path("empty") + out, 1, "quiltc: error: "},
      {Path("garbage") + out, 1, "quiltc: error: "},
      {Path("half.onnx") + out, 1, "quiltc: error: "},
      {Path("m.quilt") + out, 1, "quiltc: error: "},
      {model_, 2, "--output is required"},
      {"", 2, "model is required"},
      {model_ + out + " --frobnicate", 2, "--frobnicate"},
      {model_ + out + " --input-shape a:-1,3", 2, "expected NAME:D,D"},
      {model_ + out + " --input-shape a:99999999999999999999,3", 2, "expected NAME:D,D"},
      {model_ + out + " --input-shape :3", 2, "expected NAME:D,D"},
      {model_ + out + " --input-shape a", 2, "expected NAME:D,D"},
      {model_ + out + " --input-shape a:x", 2, "expected NAME:D,D"},
      {model_ + out + " --input-shape a:2,4", 1, "quiltc: error: "},
      {model_ + out + " --input-shape zz:1,3", 1, "which is not a graph input"},
      {model_ + out + " --input-value b=", 2, "expected NAME=V,V"},
      {model_ + out + " --input-value b=1,2,3,4", 1, "graph input 'b'"},
      {model_ + out + " --device frobnicator", 1, "quiltc: error: "},
      {model_ + out + " --place nonsense", 1, "quiltc: error: "},
      {model_ + out + " --report " + Path("r.html"), 2, "must end in .txt, .dot or .json"},
      {model_ + out + " --report " + Path("dir/no/r.json"), 1, "cannot write the report"},
      {model_ + " -o " + Path("dir"), 1, "it is a directory, not a file"},
      {model_ + " -o " + Path("fifo"), 1, "it is a FIFO (named pipe), not a file"},
      {model_ + " -o " + Path("missing/out.quilt"), 1, "No such file or directory"},
      {model_ + " -o " + model_, 2, "is the model itself"},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  Check("quiltc", cases);
  EXPECT_FALSE(std::filesystem::exists(Path("out.quilt")));
}

TEST_F(BadInput, QuiltRun) {
  std::vector<Case> cases = BadPaths("", "", ".quilt");
  std::string in = " --input b=" + Npy("b.npy", {1, 1, 1}, {1, 3}) + " --input a=";
  for (const Case& c : BadPaths(package_ + in, "", ".npy")) cases.push_back(c);
  for (const Case& c : BadPaths(package_ + " --inputs ", "", ".npz")) cases.push_back(c);
  std::vector<Case> more = {
      {Path("empty"), 1, "is empty, not a quilt package"},
      {Path("garbage"), 1, "quilt-run: error: "},
      {Path("half.quilt"), 1, "quilt-run: error: "},
      {model_, 1, "quilt-run: error: "},
      {"", 2, "package is required"},
      {package_ + " --frobnicate", 2, "--frobnicate"},
      {package_ + " --threads -1", 2, "--threads"},
      {package_ + " --threads 0", 2, "--threads"},
      {package_ + " --threads 100000", 2, "--threads"},
      {package_ + " --threads 99999999999999999999", 2, "--threads"},
      {package_ + " --threads many", 2, "--threads"},
      {package_ + " --iterations -1", 2, "--iterations"},
      {package_ + " --iterations 2147483647", 2, "--iterations"},
      {package_ + " --warmup 99999999999", 2, "--warmup"},
      {package_ + " --input a", 2, "expected NAME=FILE"},
      {package_ + " --input =x.npy", 2, "expected NAME=FILE"},
      {package_ + " --input a=", 2, "expected NAME=FILE"},
      {package_ + in + Path("empty"), 1, "not a .npy file"},
      {package_ + in + Path("garbage"), 1, "not a .npy file"},
      {package_ + in + Path("half.npy"), 1, "holds 19 data bytes"},
      {package_ + in + Path("half.npz"), 1, "not an .npz archive"},
      {package_ + in + Path("garbage.npz"), 1, "not an .npz archive"},
      {package_ + in + Path("empty.npz"), 1, "No such file or directory"},
      {package_ + in + Path("garbage.pb"), 1, "not an ONNX TensorProto"},
      {package_ + in + Path("half.qir"), 1, "not a .npy file"},
      {package_ + " --inputs " + Path("half.npz"), 1, "not an .npz archive"},
      {package_ + in + Npy("a22.npy", {1, 2, 3, 4}, {2, 2}), 1, "input 'a' dim 1 is 2, expected 3"},
      {package_ + in + Path("a.npy") + " --input zz=" + Path("b.npy"), 1, "no input named 'zz'"},
      {package_ + " --output-dir " + Path("empty"), 1, "--output-dir"},
      {package_ + " --profile " + Path("dir"), 1, "it is a directory, not a file"},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  Check("quilt-run", cases);
}

TEST_F(BadInput, QuiltInspect) {
  std::vector<Case> cases = BadPaths("", "", ".onnx");
  for (const Case& c : BadPaths("", "", ".quilt")) cases.push_back(c);
  Write("empty.quilt", "");
  Write("garbage.quilt", ReadAll(Path("garbage")));
  std::vector<Case> more = {
      {Path("empty"), 1, "quilt-inspect: error: "},
      {Path("garbage"), 1, "quilt-inspect: error: "},
      {Path("half.onnx"), 1, "quilt-inspect: error: "},
      {Path("empty.quilt"), 1, "is empty, not a quilt package"},
      {Path("garbage.quilt"), 1, "quilt-inspect: error: "},
      {Path("half.quilt"), 1, "quilt-inspect: error: "},
      {"", 2, "file is required"},
      {model_ + " --frobnicate", 2, "--frobnicate"},
      {model_ + " --input-shape a:-1", 2, "expected NAME:D,D"},
      {model_ + " --input-shape zz:1,3", 1, "which is not a graph input"},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  Check("quilt-inspect", cases);
}

TEST_F(BadInput, QuiltOpt) {
  std::vector<Case> cases = BadPaths("", "", ".qir");
  for (const Case& c : BadPaths("", "", ".onnx")) {
    if (c.args.ends_with(".onnx")) cases.push_back(c);  // the others are the .qir cases again
  }
  for (const Case& c : BadPaths(qir_ + " --check-equal ", "", ".qir")) cases.push_back(c);
  Write("garbage.onnx", ReadAll(Path("garbage")));
  std::vector<Case> more = {
      {Path("empty"), 1, "quilt-opt: error: "},
      {Path("garbage"), 1, "quilt-opt: error: "},
      {Path("garbage.onnx"), 1, "quilt-opt: error: "},
      {Path("half.onnx"), 1, "quilt-opt: error: "},
      {Path("half.qir"), 1, "quilt-opt: error: "},
      {Path("m.quilt"), 1, "quilt-opt: error: "},
      {"", 2, "input is required"},
      {qir_ + " --frobnicate", 2, "--frobnicate"},
      {qir_ + " --pass frobnicate", 2, "unknown pass 'frobnicate'"},
      {qir_ + " --pass 'normalize{'", 2, "quilt-opt: error: "},
      {qir_ + " --check-equal " + Path("half.qir"), 1, "quilt-opt: error: "},
      {qir_ + " -o " + Path("dir"), 1, "it is a directory, not a file"},
      {qir_ + " -o " + Path("missing/out.qir"), 1, "No such file or directory"},
      {qir_ + " -o " + qir_, 2, "refusing to overwrite the input file"},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  Check("quilt-opt", cases);
}

}  // namespace
