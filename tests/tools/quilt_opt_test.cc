// quilt-opt as a user runs it: exit codes, messages and --check-equal, through the real binary.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/test_util.h"
#include "tests/tools/tool_runner.h"

namespace {

using Result = quilt::testing::ToolResult;

Result QuiltOpt(const std::string& args) { return quilt::testing::RunTool("quilt-opt", args); }

std::string Data(const char* name) { return quilt::testing::DataPath(std::string("ir/") + name); }

std::string TempFile(const std::string& name, const std::string& text) {
  std::string path = (std::filesystem::temp_directory_path() / ("quilt_opt_test_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

TEST(QuiltOpt, PrintsParsableIr) {
  Result r = QuiltOpt(Data("rfc_module.qir"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("s: R.Tensor((2, 3), \"float32\", \"cuda\") = R.add(s1, c)"),
            std::string::npos)
      << r.out;
  quilt::Expected<quilt::ir::IRModule> mod = quilt::ir::ParseModule(r.out);
  EXPECT_TRUE(mod) << mod.error().ToString();
}

TEST(QuiltOpt, NormalizeMatchesTheExpectedFile) {
  Result r = QuiltOpt(Data("rfc_normalize_before.qir") + " --pass normalize --check-equal " +
                      Data("rfc_normalize_after.qir"));
  EXPECT_EQ(r.code, 0) << r.out;
}

// Every before/expected pair of the examples, through the binary as a user runs it.
TEST(QuiltOpt, ReproducesTheVDevicePairs) {
  struct Pair {
    const char* before;
    const char* pass;
    const char* expected;
  };
  for (const Pair& p : {
           Pair{"rfc_to_vdevice.qir", "realize-vdevice", "rfc_to_vdevice_expected.qir"},
           Pair{"rfc_realize_before.qir", "realize-vdevice", "rfc_realize_expected.qir"},
           Pair{"update_vdevice_before.qir",
                "'update-vdevice{index=1 target=\"cuda -arch=sm_80\"}'",
                "update_vdevice_expected.qir"},
       }) {
    Result r =
        QuiltOpt(Data(p.before) + " --pass " + p.pass + " --check-equal " + Data(p.expected));
    EXPECT_EQ(r.code, 0) << p.before << "\n" << r.out;
  }
}

TEST(QuiltOpt, RealizeConflictIsAnInputError) {
  Result r = QuiltOpt(Data("rfc_hint_conflict.qir") + " --pass realize-vdevice");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("binding 'c'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("R.hint_on_device at 'a'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("R.hint_on_device at 'b'"), std::string::npos) << r.out;
}

TEST(QuiltOpt, CheckEqualPrintsADiffAndFails) {
  Result r = QuiltOpt(Data("rfc_to_vdevice.qir") + " --check-equal " +
                      Data("rfc_to_vdevice_expected.qir"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("not structurally equal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+ "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- "), std::string::npos) << r.out;
}

TEST(QuiltOpt, PrintIrAfterAll) {
  Result r =
      QuiltOpt(Data("rfc_module.qir") + " --pass normalize --pass normalize --print-ir-after-all");
  ASSERT_EQ(r.code, 0) << r.out;
  size_t first = r.out.find("# ----- IR after normalize -----");
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# ----- IR after normalize -----", first + 1), std::string::npos);
}

TEST(QuiltOpt, UnknownPassIsAUsageError) {
  Result r = QuiltOpt(Data("rfc_module.qir") + " --pass frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown pass 'frobnicate' (known: normalize, update-vdevice"),
            std::string::npos)
      << r.out;
}

TEST(QuiltOpt, UnknownOptionIsAUsageError) {
  EXPECT_EQ(QuiltOpt(Data("rfc_module.qir") + " --pass 'normalize{x=1}'").code, 2);
  EXPECT_EQ(QuiltOpt(Data("rfc_module.qir") + " --frobnicate").code, 2);
  EXPECT_EQ(QuiltOpt("").code, 2);  // no input
}

TEST(QuiltOpt, ParseErrorNamesFileLineAndColumn) {
  std::string path =
      TempFile("bad.qir",
               "@I.ir_module\nclass Module:\n    @R.function\n    def f(x: R.Tensor((2,), "
               "\"float32\")):\n        y = R.nope(x)\n        return y\n");
  Result r = QuiltOpt(path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(path + ":5:13: unknown op R.nope"), std::string::npos) << r.out;
}

TEST(QuiltOpt, MissingInputIsAnInputError) {
  Result r = QuiltOpt("/nonexistent/file.qir");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("cannot read '/nonexistent/file.qir'"), std::string::npos) << r.out;
}

TEST(QuiltOpt, WritesOutputFileAndRefusesToOverwriteTheInput) {
  std::string in = TempFile("in.qir", quilt::testing::ReadData("ir/rfc_module.qir"));
  std::string out = (std::filesystem::temp_directory_path() / "quilt_opt_test_out.qir").string();
  std::filesystem::remove(out);
  ASSERT_EQ(QuiltOpt(in + " -o " + out).code, 0);
  EXPECT_TRUE(std::filesystem::exists(out));
  std::string before = quilt::testing::ReadData("ir/rfc_module.qir");
  Result r = QuiltOpt(in + " -o " + in);
  EXPECT_EQ(r.code, 2) << r.out;
  std::ifstream f(in);
  std::string after((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, before);
}

}  // namespace
