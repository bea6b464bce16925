// The package format on plain tables: written by the compiler's writer, read by the runtime's
// loader, which refuses damaged or inconsistent files with a message and never crashes.
#include "runtime/src/package.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "runtime/src/session.h"
#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt {
namespace {

using rt::LoadedPackage;

std::string LoadError(const std::vector<uint8_t>& bytes) {
  std::unique_ptr<LoadedPackage> p;
  rt::Status st = LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p);
  return st.ok() ? "" : st.message();
}

TEST(Package, WrittenPackageLoadsAndRuns) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  std::unique_ptr<LoadedPackage> p;
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(std::move(p), {}, &s).ok());
  std::vector<float> x = {0, 0, 0, 1, 1, 1};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run({test::Input("x", x, {2, 3})}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "y");
  EXPECT_EQ(out[0].shape, (rt::Shape{2, 3}));
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1, 2, 3, 2, 3, 4}));
}

TEST(Package, LoadsFromAMappedFile) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  std::string path = ::testing::TempDir() + "/add.quilt";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::unique_ptr<LoadedPackage> p;
  rt::Status st = LoadedPackage::FromFile(path, &p);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(p->BufferSize(0), 12u);
  float first;
  std::memcpy(&first, p->BufferData(0), 4);
  EXPECT_EQ(first, 1.0f);
}

TEST(Package, WritingTwiceGivesIdenticalBytes) {
  EXPECT_EQ(compiler::WritePackage(test::AddConstantPackage()),
            compiler::WritePackage(test::AddConstantPackage()));
}

TEST(Package, ConstantsAre64ByteAligned) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.buffers.push_back(std::make_shared<std::vector<uint8_t>>(5, 7));
  spec.buffers.push_back(std::make_shared<std::vector<uint8_t>>(100, 9));
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  const pkg::Package* root = pkg::GetPackage(bytes.data());
  EXPECT_EQ(root->data_offset() % 64, 0u);
  for (const pkg::Buffer* b : *root->buffers()) EXPECT_EQ(b->offset() % 64, 0u);
  EXPECT_EQ(bytes[root->data_offset() + root->buffers()->Get(2)->offset() + 99], 9);
}

TEST(Package, EveryTruncationIsRefusedWithoutACrash) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(LoadError(prefix), "") << "prefix of " << n << " bytes loaded";
  }
}

TEST(Package, FlippedBytesNeverCrashTheLoader) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> damaged = bytes;
    damaged[i] ^= 0xff;
    std::unique_ptr<LoadedPackage> p;
    if (!LoadedPackage::FromMemory(damaged.data(), damaged.size(), &p).ok()) continue;
    // What loads must be safe to open and run (or refuse to run).
    std::unique_ptr<rt::Session> s;
    if (!rt::Session::Create(std::move(p), {}, &s).ok()) continue;
    std::vector<float> x = {0, 0, 0};
    std::vector<rt::OwnedTensor> out;
    (void)s->Run({test::Input("x", x, {1, 3})}, &out);
  }
}

TEST(Package, TargetCodeIsKeptAndChecked) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.buffers.push_back(std::make_shared<std::vector<uint8_t>>(16, 0x90));
  spec.code.push_back({0, "elf-object", 1, {"fused_0"}});
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<LoadedPackage> p;
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  ASSERT_EQ(p->root().code()->size(), 1u);
  EXPECT_EQ(p->root().code()->Get(0)->format()->str(), "elf-object");
  EXPECT_EQ(p->BufferSize(1), 16u);
  spec.code[0].buffer = 7;
  EXPECT_NE(LoadError(compiler::WritePackage(spec)).find("target code refers to a missing"),
            std::string::npos);
}

TEST(Package, NotAPackageSaysSo) {
  std::vector<uint8_t> junk(64, 'a');
  EXPECT_NE(LoadError(junk).find("not a quilt package"), std::string::npos) << LoadError(junk);
  EXPECT_NE(LoadError({}).find("no bytes"), std::string::npos);
}

TEST(Package, NewerMajorVersionIsRefusedNamingBothVersions) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  pkg::Package* root = pkg::GetMutablePackage(bytes.data());
  root->mutable_version()->mutate_major(rt::kFormatMajor + 1);
  std::string e = LoadError(bytes);
  EXPECT_NE(e.find("format " + std::to_string(rt::kFormatMajor + 1) + ".0"), std::string::npos)
      << e;
  EXPECT_NE(e.find("reads format " + std::to_string(rt::kFormatMajor) + "."), std::string::npos)
      << e;
}

TEST(Package, StepReadingAValueNotYetDefinedIsRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].steps[0].inputs[0] = 2;  // its own output
  EXPECT_NE(LoadError(compiler::WritePackage(spec)).find("before it is defined"),
            std::string::npos);
}

TEST(Package, ValueIndexOutOfRangeIsRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].steps[0].inputs[1] = 99;
  EXPECT_NE(LoadError(compiler::WritePackage(spec)).find("refers to value 99"), std::string::npos);
}

TEST(Package, ConstantWhoseBufferDoesNotMatchItsShapeIsRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.buffers[0] = std::make_shared<std::vector<uint8_t>>(8);
  std::string e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("buffer holds 8 bytes, dtype and shape need 12"), std::string::npos) << e;
}

TEST(Package, DimReferringToALaterDimIsRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].dims.push_back({pkg::DimKind::Add, 5, 0, 0});
  EXPECT_NE(LoadError(compiler::WritePackage(spec)).find("later or missing dim"),
            std::string::npos);
}

TEST(Package, ArenaOffsetsOutsideTheArenaAreRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].values[2].dims = {2, 1};  // (1, 3): 12 bytes
  spec.graphs[0].values[2].arena_offset = 64;
  spec.graphs[0].values[2].byte_size = 12;
  spec.graphs[0].arena_bytes = {64};
  EXPECT_NE(LoadError(compiler::WritePackage(spec)).find("outside its device's arena"),
            std::string::npos);
}

TEST(Package, ArenaLargerThanItsValuesIsRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].values[2].dims = {2, 1};
  spec.graphs[0].values[2].arena_offset = 0;
  spec.graphs[0].values[2].byte_size = 12;
  spec.graphs[0].arena_bytes = {int64_t{1} << 39};
  std::string e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("an arena of 549755813888 bytes for values of 64"), std::string::npos) << e;
}

TEST(Package, StaticSizeThatDisagreesWithTheDimsIsRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].values[2].dims = {2, 1};
  spec.graphs[0].values[2].byte_size = 4096;
  std::string e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("its size does not match its dtype and dims"), std::string::npos) << e;
}

}  // namespace
}  // namespace quilt
