// The device seam: one explicit list of device kinds, the CPU device behind the interface the
// executor uses, and what a session says about devices it cannot have.
#include "runtime/src/device/device.h"

#include <gtest/gtest.h>

#include <set>

#include "runtime/src/session.h"
#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt {
namespace {

TEST(Device, KindsHaveOneNameEachAndParseBack) {
  std::set<std::string_view> names;
  for (rt::DeviceKind k : rt::kDeviceKinds) {
    std::string_view name = rt::DeviceKindName(k);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(rt::ParseDeviceKind(name), k) << name;
  }
  EXPECT_EQ(names, (std::set<std::string_view>{"cpu", "opencl", "cuda", "test"}));
  EXPECT_FALSE(rt::ParseDeviceKind("CPU"));
  EXPECT_FALSE(rt::ParseDeviceKind("llvm"));
  EXPECT_EQ(rt::DeviceKindList(), "cpu, opencl, cuda, test");
}

TEST(Device, TheCpuPreparesKnownKernelsAndRefusesOthers) {
  std::unique_ptr<rt::Device> cpu;
  ASSERT_TRUE(rt::CreateDevice(rt::DeviceKind::kCpu, 0, {}, &cpu).ok());
  EXPECT_EQ(cpu->info().kind, rt::DeviceKind::kCpu);
  EXPECT_TRUE(cpu->info().host_addressable);
  // A package with one step: its kernel prepared on the CPU, an unknown one refused by name.
  compiler::PackageSpec spec = test::AddConstantPackage();
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  const pkg::Step& step = *p->root().graphs()->Get(0)->steps()->Get(0);
  std::unique_ptr<rt::PreparedStep> prepared;
  EXPECT_TRUE(cpu->Prepare(step, nullptr, &prepared).ok());
  EXPECT_TRUE(prepared);
  spec.graphs[0].steps[0].kernel = "nn.frobnicate";
  bytes = compiler::WritePackage(spec);
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  rt::Status st = cpu->Prepare(*p->root().graphs()->Get(0)->steps()->Get(0), nullptr, &prepared);
  EXPECT_EQ(st.message(), "no CPU kernel for nn.frobnicate");
}

rt::Status CreateSession(const compiler::PackageSpec& spec, const rt::SessionOptions& options) {
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p);
  if (!st.ok()) return st;
  std::unique_ptr<rt::Session> s;
  return rt::Session::Create(std::move(p), options, &s);
}

TEST(Device, ASessionNamesTheDeviceItCannotHave) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  // CUDA's plug-in is not built here: the runtime says what it looked for and where.
  spec.devices[0] = {"cuda", "cuda", 0};
  std::string e = CreateSession(spec, {}).message();
  EXPECT_EQ(e.find("the package runs steps on device 'cuda': no CUDA device in this runtime: "
                   "libquilt_cuda.so was not found (looked in "),
            0u)
      << e;
  EXPECT_NE(e.find("set QUILT_PLUGIN_PATH to its folder"), std::string::npos) << e;
  spec.devices[0] = {"tpu -v4", "tpu", 0};
  EXPECT_EQ(CreateSession(spec, {}).message(),
            "the package runs steps on device 'tpu -v4' of kind 'tpu', which this runtime does "
            "not know (known: cpu, opencl, cuda, test)");
}

TEST(Device, SessionOptionsNameKnownKinds) {
  rt::SessionOptions options;
  options.devices = {"cpu", "gpu"};
  EXPECT_EQ(CreateSession(test::AddConstantPackage(), options).message(),
            "session options: unknown device kind 'gpu' (known: cpu, opencl, cuda, test)");
  options.devices = {"cpu"};
  EXPECT_TRUE(CreateSession(test::AddConstantPackage(), options).ok());
}

TEST(Device, TwoCpuVdevicesShareTheHost) {
  // A split across cpu:0 and cpu:1 (what --device llvm --device llvm makes) runs: both are
  // the host CPU.
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.devices.push_back({"llvm", "cpu", 1});
  spec.graphs[0].steps[0].device = 1;
  spec.graphs[0].values[2].device = 1;
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(std::move(p), {}, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<float> x = {10, 20, 30, 40, 50, 60};
  std::vector<rt::OwnedTensor> out;
  st = s->Run({test::Input("x", x, {2, 3})}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{11, 22, 33, 41, 52, 63}));
}

// The opaque test device: its buffers have no host address, fresh memory reads as 0xff, and
// nothing runs until an event is waited for.
TEST(TestDevice, MemoryIsOpaqueAndWorkRunsOnlyWhenWaitedFor) {
  std::unique_ptr<rt::Device> dev;
  ASSERT_TRUE(rt::CreateDevice(rt::DeviceKind::kTest, 0, {}, &dev).ok());
  EXPECT_FALSE(dev->info().host_addressable);
  std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6, 7, 8};
  rt::BufferPtr a, b;
  ASSERT_TRUE(dev->Import(bytes.data(), bytes.size(), &a).ok());
  ASSERT_TRUE(dev->Allocate(8, &b).ok());
  EXPECT_EQ(a->host(), nullptr);
  EXPECT_EQ(b->host(), nullptr);
  std::unique_ptr<rt::Queue> q;
  ASSERT_TRUE(dev->CreateQueue(&q).ok());
  std::vector<uint8_t> fresh(8, 0), copied(8, 0);
  ASSERT_TRUE(q->Read({b.get(), 0, 8}, fresh.data()).ok());
  ASSERT_TRUE(q->Copy({a.get(), 2, 4}, {b.get(), 4, 4}).ok());
  ASSERT_TRUE(q->Read({b.get(), 0, 8}, copied.data()).ok());
  // A write takes its bytes at once: changing them afterwards changes nothing.
  std::vector<uint8_t> patch = {9, 9};
  ASSERT_TRUE(q->Write(patch.data(), {b.get(), 0, 2}).ok());
  patch = {0, 0};
  std::vector<uint8_t> patched(8, 0);
  ASSERT_TRUE(q->Read({b.get(), 0, 8}, patched.data()).ok());
  // Buffers dropped by their owner live on while work still reads them.
  a.reset();
  b.reset();
  EXPECT_EQ(fresh, std::vector<uint8_t>(8, 0)) << "nothing runs before a wait";
  std::unique_ptr<rt::Event> done;
  ASSERT_TRUE(q->Signal(&done).ok());
  ASSERT_TRUE(done->Wait().ok());
  EXPECT_EQ(fresh, std::vector<uint8_t>(8, 0xff));
  EXPECT_EQ(copied, (std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 3, 4, 5, 6}));
  EXPECT_EQ(patched, (std::vector<uint8_t>{9, 9, 0xff, 0xff, 3, 4, 5, 6}));
  EXPECT_TRUE(q->Finish().ok());
}

rt::Status RunOnce(const compiler::PackageSpec& spec, const rt::SessionOptions& options,
                   std::vector<float> x, std::vector<rt::OwnedTensor>* out) {
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  QUILT_RETURN_IF_ERROR(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p));
  std::unique_ptr<rt::Session> s;
  QUILT_RETURN_IF_ERROR(rt::Session::Create(std::move(p), options, &s));
  return s->Run({test::Input("x", x, {2, 3})}, out);
}

TEST(TestDevice, RunsAPackageAsTheCpuDoes) {
  rt::SessionOptions options;
  options.run_on_test_device = {0};
  std::vector<rt::OwnedTensor> out;
  rt::Status st = RunOnce(test::AddConstantPackage(), options, {10, 20, 30, 40, 50, 60}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{11, 22, 33, 41, 52, 63}));
  EXPECT_EQ(out[0].name, "y");
}

TEST(TestDevice, AStepReadingAnotherDevicesValueIsRefusedAtCreation) {
  // The add runs on device 1 but reads x and c of device 0 with no copy: fine while both are
  // the host CPU, refused once device 1 is a device of its own.
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.devices.push_back({"llvm", "cpu", 1});
  spec.graphs[0].steps[0].device = 1;
  spec.graphs[0].values[2].device = 1;
  rt::SessionOptions options;
  options.run_on_test_device = {1};
  std::vector<rt::OwnedTensor> out;
  EXPECT_EQ(RunOnce(spec, options, {1, 2, 3, 4, 5, 6}, &out).message(),
            "step 0 (add, node 'add0') on device 1 reads value 0 'x', which lives on device 0: "
            "the package lacks a copy");
  options.run_on_test_device = {2};
  EXPECT_EQ(RunOnce(spec, options, {1, 2, 3, 4, 5, 6}, &out).message(),
            "session options: the package has no device 2 to run on the test device");
}

TEST(TestDevice, AKernelErrorFoundLateNamesItsStep) {
  // A gather whose index is out of range for the data only shows when the work runs (at the
  // end of the run), and still names the step and node.
  compiler::PackageSpec spec = test::AddConstantPackage();
  compiler::GraphSpec& g = spec.graphs[0];
  auto i64 = static_cast<int32_t>(rt::DType::kInt64);
  auto f32 = static_cast<int32_t>(rt::DType::kFloat32);
  g.dims.push_back({pkg::DimKind::Int, 0, 0, 2});
  compiler::ValueSpec idx{"idx", pkg::ValueKind::Constant, i64, 1, {3}};
  idx.buffer = 1;
  compiler::ValueSpec z{"z", pkg::ValueKind::Intermediate, f32, 2, {0, 3}};
  g.values.push_back(idx);
  g.values.push_back(z);
  compiler::StepSpec gather;
  gather.kernel = "take";
  gather.inputs = {2, 3};
  gather.input_arity = {1, 1};
  gather.outputs = {4};
  gather.attrs.Set("axis", int64_t{1});
  gather.source = "gather0";
  g.steps.push_back(gather);
  g.outputs = {4};
  std::vector<int64_t> iv = {0, 7};
  auto ib = std::make_shared<std::vector<uint8_t>>(16);
  std::memcpy(ib->data(), iv.data(), 16);
  spec.buffers.push_back(ib);
  std::vector<rt::OwnedTensor> out;
  rt::Status cpu = RunOnce(spec, {}, {1, 2, 3, 4, 5, 6}, &out);
  EXPECT_NE(cpu.message().find("step 1 (take, node 'gather0')"), std::string::npos)
      << cpu.message();
  rt::SessionOptions options;
  options.run_on_test_device = {0};
  rt::Status late = RunOnce(spec, options, {1, 2, 3, 4, 5, 6}, &out);
  EXPECT_NE(late.message().find("take, node 'gather0', run late on the test device"),
            std::string::npos)
      << late.message();
  // The same words for what is wrong.
  EXPECT_NE(late.message().find(cpu.message().substr(cpu.message().find("): ") + 3)),
            std::string::npos)
      << late.message() << " / " << cpu.message();
  iv = {0, 2};
  std::memcpy(ib->data(), iv.data(), 16);
  ASSERT_TRUE(RunOnce(spec, options, {1, 2, 3, 4, 5, 6}, &out).ok());
  EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{2, 6, 5, 9}));
}

}  // namespace
}  // namespace quilt
