// The package format on plain tables: written by the compiler's writer, read by the runtime's
// loader, which refuses damaged or inconsistent files with a message and never crashes.
#include "runtime/src/package.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "runtime/src/checksum.h"
#include "runtime/src/dims.h"
#include "runtime/src/session.h"
#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt {
namespace {

using rt::LoadedPackage;

std::string LoadError(const std::vector<uint8_t>& bytes, const rt::LoadOptions& options = {}) {
  std::unique_ptr<LoadedPackage> p;
  rt::Status st = LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p, options);
  return st.ok() ? "" : st.message();
}

// The load error of a package whose fields a test changed in place, its checksum written again
// (so that the check under test, not the checksum, refuses it).
std::string ResealedLoadError(std::vector<uint8_t> bytes) {
  size_t body = bytes.size() - rt::kChecksumBytes;
  rt::WriteChecksumFooter(bytes.data(), body, bytes.data() + body);
  return LoadError(bytes);
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

// From a file, read (the default) or mapped.
TEST(Package, LoadsFromAFile) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  std::string path = ::testing::TempDir() + "/add.quilt";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  for (bool map : {false, true}) {
    rt::LoadOptions options;
    options.map_file = map;
    std::unique_ptr<LoadedPackage> p;
    rt::Status st = LoadedPackage::FromFile(path, &p, options);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(p->BufferSize(0), 12u);
    float first;
    std::memcpy(&first, p->BufferData(0), 4);
    EXPECT_EQ(first, 1.0f);
  }
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

// Every changed byte is refused by the checksum; unverified, the checks behind it still never let
// a damaged package crash the loader, a session or a run.
TEST(Package, FlippedBytesNeverCrashTheLoader) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  rt::LoadOptions unverified;
  unverified.verify_checksum = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> damaged = bytes;
    damaged[i] ^= 0xff;
    EXPECT_NE(LoadError(damaged), "") << "byte " << i << " flipped, and the package loaded";
    std::unique_ptr<LoadedPackage> p;
    if (!LoadedPackage::FromMemory(damaged.data(), damaged.size(), &p, unverified).ok()) continue;
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
  EXPECT_NE(LoadError(compiler::WritePackage(spec)).find("code section 0 refers to a missing"),
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
  root->mutable_version()->mutate_minor(0);
  std::string e = ResealedLoadError(bytes);
  EXPECT_NE(e.find("format " + std::to_string(rt::kFormatMajor + 1) + ".0"), std::string::npos)
      << e;
  EXPECT_NE(e.find("reads format " + std::to_string(rt::kFormatMajor) + "."), std::string::npos)
      << e;
}

TEST(Package, OlderMajorVersionIsRefusedWithAdvice) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  pkg::GetMutablePackage(bytes.data())->mutable_version()->mutate_major(rt::kFormatMajor - 1);
  pkg::GetMutablePackage(bytes.data())->mutable_version()->mutate_minor(0);
  std::string e = ResealedLoadError(bytes);
  EXPECT_NE(e.find("format " + std::to_string(rt::kFormatMajor - 1) + ".0"), std::string::npos)
      << e;
  EXPECT_NE(e.find("compile the model again"), std::string::npos) << e;
}

TEST(Package, StepKindMustAgreeWithItsName) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].steps[0].kind = pkg::StepKind::Copy;  // an add called a copy
  std::string e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (add): a Copy step that names no Copy builtin"), std::string::npos) << e;
  spec = test::AddConstantPackage();
  spec.graphs[0].steps[0].kernel = "shape_expr";  // a builtin's name on a kernel step
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("a Kernel step names the builtin 'shape_expr'"), std::string::npos) << e;
  // A kind past the list (a damaged byte), on a copy step (a kind that is stored).
  spec = test::AddConstantPackage();
  compiler::GraphSpec& g = spec.graphs[0];
  g.values.push_back(g.values[2]);
  compiler::StepSpec copy{"copy", 0, {2}, {1}, {3}};
  copy.kind = pkg::StepKind::Copy;
  g.steps.push_back(copy);
  g.outputs = {3};
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  ASSERT_EQ(LoadError(bytes), "");
  auto* step = pkg::GetMutablePackage(bytes.data())
                   ->mutable_graphs()
                   ->GetMutableObject(0)
                   ->mutable_steps()
                   ->GetMutableObject(1);
  ASSERT_TRUE(step->mutate_kind(static_cast<pkg::StepKind>(9)));
  e = ResealedLoadError(bytes);
  EXPECT_NE(e.find("step 1 (copy): unknown step kind 9"), std::string::npos) << e;
}

// Two kernel steps labelled with two partition regions, on one device.
compiler::PackageSpec TwoRegionPackage() {
  compiler::PackageSpec spec = test::AddConstantPackage();
  compiler::GraphSpec& g = spec.graphs[0];
  auto f32 = static_cast<int32_t>(rt::DType::kFloat32);
  g.values.push_back({"z", pkg::ValueKind::Intermediate, f32, 2, {0, 1}});
  compiler::StepSpec mul{"multiply", 0, {2, 2}, {1, 1}, {3}};
  g.steps[0].region = "main_region0";
  mul.region = "main_region1";
  g.steps.push_back(mul);
  g.outputs = {3};
  return spec;
}

TEST(Package, RegionsAreKeptInStepOrder) {
  std::vector<uint8_t> bytes = compiler::WritePackage(TwoRegionPackage());
  std::unique_ptr<LoadedPackage> p;
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  const auto* regions = p->root().graphs()->Get(0)->regions();
  ASSERT_TRUE(regions);
  ASSERT_EQ(regions->size(), 2u);
  EXPECT_EQ(regions->Get(0)->name()->str(), "main_region0");
  EXPECT_EQ(regions->Get(1)->name()->str(), "main_region1");
  EXPECT_EQ(regions->Get(1)->first_step(), 1);
  EXPECT_EQ(regions->Get(1)->num_steps(), 1);
  // One label for both: one region.
  compiler::PackageSpec spec = TwoRegionPackage();
  spec.graphs[0].steps[1].region = "main_region0";
  bytes = compiler::WritePackage(spec);
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  EXPECT_EQ(p->root().graphs()->Get(0)->regions()->size(), 1u);
}

TEST(Package, RegionsOutOfOrderOrHoldingAnotherDevicesStepsAreRefused) {
  std::vector<uint8_t> bytes = compiler::WritePackage(TwoRegionPackage());
  auto regions = [&] {
    return pkg::GetMutablePackage(bytes.data())
        ->mutable_graphs()
        ->GetMutableObject(0)
        ->mutable_regions();
  };
  ASSERT_TRUE(regions()->GetMutableObject(1)->mutate_first_step(0));
  std::string e = ResealedLoadError(bytes);
  EXPECT_NE(e.find("region 1 'main_region1': steps 0 + 1 are out of order, overlap"),
            std::string::npos)
      << e;
  bytes = compiler::WritePackage(TwoRegionPackage());
  ASSERT_TRUE(regions()->GetMutableObject(1)->mutate_num_steps(2));  // past the last step
  e = ResealedLoadError(bytes);
  EXPECT_NE(e.find("region 1 'main_region1': steps 1 + 2 are out of order, overlap another region "
                   "or lie outside the graph"),
            std::string::npos)
      << e;
  // A region that holds a step of another device.
  compiler::PackageSpec spec = TwoRegionPackage();
  spec.devices.push_back({"llvm", "cpu", 1});
  spec.graphs[0].arena_bytes = {0, 0};
  spec.graphs[0].steps[1].device = 1;
  bytes = compiler::WritePackage(spec);
  ASSERT_EQ(LoadError(bytes), "");
  ASSERT_TRUE(regions()->GetMutableObject(1)->mutate_device(0));
  e = ResealedLoadError(bytes);
  EXPECT_NE(e.find("region 1 'main_region1' on device 0 holds step 1 (multiply, a Kernel step on "
                   "device 1), which does not belong in it"),
            std::string::npos)
      << e;
}

TEST(Package, DispatchStepsNameAnEntryOfTheirDevicesCode) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.buffers.push_back(std::make_shared<std::vector<uint8_t>>(16, ' '));
  spec.code.push_back({0, "opencl-c", 1, {"add_f32"}, "opencl"});
  compiler::StepSpec& step = spec.graphs[0].steps[0];
  step.kind = pkg::StepKind::Dispatch;
  step.kernel = "add_f32";
  step.code = 0;
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<LoadedPackage> p;
  rt::Status st = LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p);
  ASSERT_TRUE(st.ok()) << st.message();
  // The CPU loads no OpenCL C: the session says which section and why, at creation.
  std::unique_ptr<rt::Session> s;
  st = rt::Session::Create(std::move(p), {}, &s);
  EXPECT_NE(st.message().find("code section 0 (opencl-c for 'opencl'): the CPU device runs no "
                              "generated code of format 'opencl-c'"),
            std::string::npos)
      << st.message();
  step.kernel = "mul_f32";
  std::string e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (mul_f32): code section 0 has no entry point 'mul_f32'"),
            std::string::npos)
      << e;
  step.kernel = "add_f32";
  step.code = 3;
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("dispatches code section 3, which the package lacks"), std::string::npos) << e;
  step.code = 0;
  spec.devices.push_back({"opencl", "opencl", 0});
  spec.code[0].device = 1;
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (add_f32) on device 0 dispatches code for device 1"), std::string::npos)
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

// A changed constant (one weight) is named as damage; the same bytes load when the caller skips
// the checksum, and then compute with the changed weight.
TEST(Package, AChangedWeightIsNamedAsDamage) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  const pkg::Package* root = pkg::GetPackage(bytes.data());
  float two = 2.0f;  // the constant is (1, 2, 3): its first element becomes 2
  std::memcpy(bytes.data() + root->data_offset() + root->buffers()->Get(0)->offset(), &two, 4);
  std::string e = LoadError(bytes);
  EXPECT_NE(e.find("package in memory is damaged: its checksum does not match its bytes"),
            std::string::npos)
      << e;
  rt::LoadOptions unverified;
  unverified.verify_checksum = false;
  std::unique_ptr<LoadedPackage> p;
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p, unverified).ok());
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(std::move(p), {}, &s).ok());
  std::vector<float> x = {0, 0, 0};
  std::vector<rt::OwnedTensor> out;
  ASSERT_TRUE(s->Run({test::Input("x", x, {1, 3})}, &out).ok());
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{2, 2, 3}));
}

// A package of format 2.2 (no checksum footer) loads only when the caller skips the checksum; a
// footer cut off a 2.3 package is damage either way.
TEST(Package, AnOlderMinorVersionLoadsOnlyUnverified) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - rt::kChecksumBytes);
  rt::LoadOptions unverified;
  unverified.verify_checksum = false;
  EXPECT_NE(LoadError(cut).find("its checksum footer is missing"), std::string::npos)
      << LoadError(cut);
  EXPECT_NE(LoadError(cut, unverified).find("its checksum footer is missing"), std::string::npos);
  pkg::GetMutablePackage(cut.data())->mutable_version()->mutate_minor(rt::kFormatMinorChecksum - 1);
  std::string e = LoadError(cut);
  EXPECT_NE(e.find("has package format 2.2, which carries no checksum to verify: compile the model "
                   "again"),
            std::string::npos)
      << e;
  EXPECT_EQ(LoadError(cut, unverified), "");
}

// A file read at load is the package's own copy: the file truncated, then rewritten with other
// bytes, under a live session changes none of its results.
TEST(Package, AFileChangedUnderALiveSessionChangesNothing) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  std::string path = ::testing::TempDir() + "/changing.quilt";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  std::unique_ptr<LoadedPackage> p;
  ASSERT_TRUE(LoadedPackage::FromFile(path, &p).ok());
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(std::move(p), {}, &s).ok());
  std::vector<float> x = {0, 0, 0};
  std::vector<rt::OwnedTensor> out;
  { std::ofstream truncate(path, std::ios::binary | std::ios::trunc); }
  ASSERT_TRUE(s->Run({test::Input("x", x, {1, 3})}, &out).ok());
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1, 2, 3}));
  std::vector<uint8_t> other(bytes.size(), 0x7f);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(other.data()),
             static_cast<std::streamsize>(other.size()));
  ASSERT_TRUE(s->Run({test::Input("x", x, {1, 3})}, &out).ok());
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{1, 2, 3}));
}

// A kernel step carries only attributes its op takes (and those lowering adds): a kernel would
// ignore any other, so a damaged name ("mode" read as "mdoe") would silently change what runs.
TEST(Package, AnUnknownAttributeOfAKnownOpIsRefused) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  compiler::StepSpec& step = spec.graphs[0].steps[0];
  EXPECT_EQ(LoadError(compiler::WritePackage(spec)), "");
  step.attrs.Set("axis", int64_t{1});
  std::string e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (add): unknown attribute 'axis' of add (it takes none)"),
            std::string::npos)
      << e;
  step.attrs = {};
  step.kernel = "take";
  step.attrs.Set("axis", int64_t{0});
  step.attrs.Set("mode", std::string("fast"));
  EXPECT_EQ(LoadError(compiler::WritePackage(spec)), "");
  step.attrs = {};
  step.attrs.Set("axis", int64_t{0});
  step.attrs.Set("mdoe", std::string("fast"));
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (take): unknown attribute 'mdoe' of take (it takes axis, mode)"),
            std::string::npos)
      << e;
  // Lowering's own: a conv's fused activation; a fused chain's members, each against its op.
  step.kernel = "nn.conv2d";
  step.attrs = {};
  step.attrs.Set("strides", std::vector<int64_t>{1, 1});
  step.attrs.Set("activation", std::string("relu"));
  EXPECT_EQ(LoadError(compiler::WritePackage(spec)), "");
  step.kernel = "fused_elementwise";
  step.attrs = {};
  step.attrs.Set("ops", std::vector<std::string>{"add", "clip"});
  step.attrs.Set("1:min", 0.0);
  EXPECT_EQ(LoadError(compiler::WritePackage(spec)), "");
  step.attrs.Set("0:min", 0.0);
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("unknown attribute 'min' of add"), std::string::npos) << e;
  step.attrs = {};
  step.attrs.Set("ops", std::vector<std::string>{"add", "clip"});
  step.attrs.Set("2:min", 0.0);
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("attribute '2:min' names no member of its 2 ops"), std::string::npos) << e;
}

// A kernel step gives as many arguments as its op takes (a fused conv up to eight more, the
// constants of its epilogue, a residual and a prelu's slope), and
// only control steps have subgraphs, as many as their builtin runs: the executor relies on both.
TEST(Package, ArgumentAndSubgraphCountsMustFitTheStep) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].steps[0].input_arity = {2};  // both inputs as one argument
  std::string e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (add): add takes 2 argument(s), the step gives 1"), std::string::npos)
      << e;
  spec = test::AddConstantPackage();
  spec.graphs[0].steps[0].kernel = "nn.conv2d";
  spec.graphs[0].steps[0].inputs = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  spec.graphs[0].steps[0].input_arity = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("nn.conv2d takes 2 to 10 argument(s), the step gives 11"), std::string::npos)
      << e;
  spec.graphs[0].steps[0].inputs = {0, 1, 1};
  spec.graphs[0].steps[0].input_arity = {1, 1, 1};
  EXPECT_EQ(LoadError(compiler::WritePackage(spec)), "");
  spec.graphs[0].steps[0].inputs = {0, 1, 1, 1};
  spec.graphs[0].steps[0].input_arity = {1, 1, 1, 1};
  EXPECT_EQ(LoadError(compiler::WritePackage(spec)), "");
  // A kernel step that names a subgraph; an if with one branch.
  spec = test::AddConstantPackage();
  spec.graphs.push_back(spec.graphs[0]);
  spec.graphs[0].steps[0].subgraphs = {1};
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (add) has 1 subgraph(s), expected 0"), std::string::npos) << e;
  spec.graphs[0].steps[0].kernel = "if";
  spec.graphs[0].steps[0].kind = pkg::StepKind::Control;
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (if) has 1 subgraph(s), expected 2"), std::string::npos) << e;
  spec.graphs[0].steps[0].subgraphs = {1, 1};
  spec.graphs[0].steps[0].input_arity = {1, 0, 1};
  e = LoadError(compiler::WritePackage(spec));
  EXPECT_NE(e.find("step 0 (if): expected 2 argument groups, got 3"), std::string::npos) << e;
}

// Dim expressions share subexpressions (a DAG): 400 nodes each reading the one before twice
// evaluate in their number of steps, not 2^400, and read shortened in messages; arithmetic that
// overflows 64 bits is unknown, never undefined.
TEST(Dims, ASharedExpressionDagEvaluatesOnceAndOverflowIsUnknown) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  std::vector<compiler::DimSpec>& dims = spec.graphs[0].dims;
  int first = static_cast<int>(dims.size());
  dims.push_back({pkg::DimKind::Max, 0, 0, 0});  // max(n, n)
  for (int k = 1; k < 400; ++k)
    dims.push_back({pkg::DimKind::Max, first + k - 1, first + k - 1, 0});
  int dag = static_cast<int>(dims.size()) - 1;
  dims.push_back({pkg::DimKind::Int, 0, 0, int64_t{1} << 62});
  int big = static_cast<int>(dims.size()) - 1;
  dims.push_back({pkg::DimKind::Mul, big, 0, 0});  // 2^62 * n
  int product = static_cast<int>(dims.size()) - 1;
  dims.push_back({pkg::DimKind::Add, big, big, 0});  // 2^63
  int sum = static_cast<int>(dims.size()) - 1;
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<LoadedPackage> p;
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  rt::DimEnv env(*p->root().graphs()->Get(0));
  EXPECT_FALSE(env.Eval(dag).has_value());
  ASSERT_TRUE(env.Match(0, 3, "x dim 0").ok());
  EXPECT_EQ(env.Eval(dag), 3);
  EXPECT_EQ(env.Eval(product), std::nullopt) << "2^62 * 3 overflows";
  EXPECT_EQ(env.Eval(sum), std::nullopt) << "2^62 + 2^62 overflows";
  std::string text = env.DimString(dag);
  EXPECT_LT(text.size(), 2000u);
  EXPECT_NE(text.find("max(max("), std::string::npos) << text;
  EXPECT_NE(text.find("..."), std::string::npos) << text;
  rt::Status st = env.Match(dag, 4, "y dim 0");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("y dim 0 is 4, expected max("), std::string::npos) << st.message();
}

}  // namespace
}  // namespace quilt
