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
  EXPECT_TRUE(cpu->Prepare(step, &prepared).ok());
  EXPECT_TRUE(prepared);
  spec.graphs[0].steps[0].kernel = "nn.frobnicate";
  bytes = compiler::WritePackage(spec);
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  rt::Status st = cpu->Prepare(*p->root().graphs()->Get(0)->steps()->Get(0), &prepared);
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
  spec.devices[0] = {"opencl", "opencl", 0};
  EXPECT_EQ(CreateSession(spec, {}).message(),
            "the package runs steps on device 'opencl': device kind 'opencl' is not available "
            "in this runtime");
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

}  // namespace
}  // namespace quilt
