// The OpenCL program binary cache (SessionOptions::code_cache_dir): a session writes the binary
// of each program it builds, keyed by device, driver, build options and source; a later session
// builds from that binary instead of the source; a damaged entry is rebuilt from source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "quilt/quilt.h"
#include "runtime/src/device/device.h"
#include "tests/runtime/opencl_test_util.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The cache's one entry in `dir` (the test fails when there is not exactly one).
fs::path OnlyEntry(const fs::path& dir) {
  std::vector<fs::path> entries;
  if (fs::exists(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  }
  EXPECT_EQ(entries.size(), 1u) << dir;
  return entries.empty() ? fs::path() : entries[0];
}

// Runs the axpb-shaped package of `s` on x = (0, 1, ..., 5) and returns y.
std::vector<float> RunOnce(const rt::Session& s) {
  std::vector<float> x = {0, 1, 2, 3, 4, 5};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s.Run({test::Input("x", x, {2, 3})}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return st.ok() ? test::Floats(out[0]) : std::vector<float>();
}

class OpenClCache : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    std::unique_ptr<rt::Device> cl;
    rt::Status st = rt::CreateDevice(rt::DeviceKind::kOpenCl, 0, {}, &cl);
    if (!st.ok()) GTEST_SKIP() << "no OpenCL device here: " << st.message();
    dir_ = fs::path(::testing::TempDir()) / ("quilt-code-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<float> Run(const std::string& source, const fs::path& dir) {
    rt::SessionOptions options;
    options.code_cache_dir = dir.string();
    std::unique_ptr<rt::Session> s;
    rt::Status st = Open(AxpbPackage(source, "axpb"), &s, options);
    EXPECT_TRUE(st.ok()) << st.message();
    return st.ok() ? RunOnce(*s) : std::vector<float>();
  }

  fs::path dir_;
};

std::vector<float> Axpb(float a) {
  std::vector<float> y;
  for (int i = 0; i < 6; ++i) y.push_back(a * static_cast<float>(i) + 1);
  return y;
}

TEST_F(OpenClCache, ALaterSessionBuildsFromTheCachedBinary) {
  EXPECT_EQ(Run(kAxpb, dir_ / "a"), Axpb(2));
  fs::path entry_a = OnlyEntry(dir_ / "a");
  std::string a = ReadFile(entry_a);
  // The entry names its key before the binary: the device (with its driver) and the source's hash.
  std::unique_ptr<rt::Device> cl;
  ASSERT_TRUE(rt::CreateDevice(rt::DeviceKind::kOpenCl, 0, {}, &cl).ok());
  EXPECT_EQ(a.find("quilt opencl program 1\n" + cl->info().name + "\n"), 0u);
  size_t key_end = a.find('\0');
  ASSERT_NE(key_end, std::string::npos);

  // A program that computes 3 x + 1, cached on its own; its binary put under axpb's key.
  std::string three = kAxpb;
  three.replace(three.find("2.0f * xp[i]"), 4, "3.0f");
  EXPECT_EQ(Run(three, dir_ / "b"), Axpb(3));
  std::string b = ReadFile(OnlyEntry(dir_ / "b"));
  std::ofstream(entry_a, std::ios::binary | std::ios::trunc)
      << a.substr(0, key_end + 1) + b.substr(b.find('\0') + 1);
  // axpb's session now runs the cached binary: the cache is read, not just written.
  EXPECT_EQ(Run(kAxpb, dir_ / "a"), Axpb(3));

  // A damaged binary under the right key: built from source again, and the entry mended.
  std::string damaged = a.substr(0, key_end + 1) + std::string(64, '\x5a');
  std::ofstream(entry_a, std::ios::binary | std::ios::trunc) << damaged;
  EXPECT_EQ(Run(kAxpb, dir_ / "a"), Axpb(2));
  EXPECT_EQ(ReadFile(entry_a), a);

  // Another source is another entry.
  EXPECT_EQ(Run(three, dir_ / "a"), Axpb(3));
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_ / "a")) ++n;
  EXPECT_EQ(n, 2u);
}

// The C API's session options name the folder too (quilt_session_options_t::code_cache_dir).
TEST_F(OpenClCache, TheCApiTakesTheFolder) {
  std::vector<uint8_t> bytes = compiler::WritePackage(AxpbPackage(kAxpb, "axpb"));
  quilt_package_t* pkg = nullptr;
  ASSERT_EQ(quilt_package_load_memory(bytes.data(), bytes.size(), &pkg), nullptr);
  quilt_session_options_t options{};
  std::string dir = (dir_ / "c").string();
  options.code_cache_dir = dir.c_str();
  options.strict = 1;
  quilt_session_t* session = nullptr;
  quilt_status_t* st = quilt_session_create(pkg, &options, &session);
  ASSERT_EQ(st, nullptr) << quilt_status_message(st);
  EXPECT_EQ(test::RunThroughCApi(session, "x", {0, 1, 2, 3, 4, 5}, {2, 3}), Axpb(2));
  quilt_session_free(session);
  quilt_package_free(pkg);
  EXPECT_EQ(ReadFile(OnlyEntry(dir_ / "c")).find("quilt opencl program 1\n"), 0u);
}

TEST_F(OpenClCache, AFolderThatCannotBeWrittenIsNoError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "not a folder";
  EXPECT_EQ(Run(kAxpb, dir_ / "file"), Axpb(2));
}

}  // namespace
}  // namespace quilt
