// The OpenCL device plug-in on whatever OpenCL the machine has (PoCL in CI): buffers through its
// queue, events across queues, and packages whose dispatch steps run OpenCL C from the package,
// checked against values computed here by hand. Skips, saying why, where no OpenCL device opens.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/src/device/device.h"
#include "runtime/src/device/plugin.h"
#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "targets/package_writer.h"
#include "tests/runtime/opencl_test_util.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/test_util.h"

namespace quilt {
namespace {

std::unique_ptr<rt::Device> OpenClOrSkip(std::string* why) {
  std::unique_ptr<rt::Device> device;
  rt::Status st = rt::CreateDevice(rt::DeviceKind::kOpenCl, 0, {}, &device);
  if (!st.ok()) *why = st.message();
  return device;
}

#define OPENCL_OR_SKIP(device)                              \
  std::string why_;                                         \
  std::unique_ptr<rt::Device> device = OpenClOrSkip(&why_); \
  if (!device) GTEST_SKIP() << "no OpenCL device here: " << why_

TEST(OpenCl, TheDeviceIsNamedAndItsMemoryOpaque) {
  OPENCL_OR_SKIP(cl);
  EXPECT_EQ(cl->info().kind, rt::DeviceKind::kOpenCl);
  EXPECT_FALSE(cl->info().name.empty());
  EXPECT_FALSE(cl->info().host_addressable);
  rt::BufferPtr b;
  ASSERT_TRUE(cl->Allocate(64, &b).ok());
  EXPECT_EQ(b->host(), nullptr);
}

TEST(OpenCl, AMissingDeviceNumberListsTheDevicesThereAre) {
  OPENCL_OR_SKIP(cl);
  std::unique_ptr<rt::Device> none;
  rt::Status st = rt::CreateDevice(rt::DeviceKind::kOpenCl, 99, {}, &none);
  EXPECT_NE(st.message().find("no OpenCL device 99; this machine has "), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("0: " + cl->info().name), std::string::npos) << st.message();
}

TEST(OpenCl, BytesMoveThroughTheQueueInOrder) {
  OPENCL_OR_SKIP(cl);
  std::unique_ptr<rt::Queue> q;
  ASSERT_TRUE(cl->CreateQueue(&q).ok());
  rt::BufferPtr a, b, c;
  ASSERT_TRUE(cl->Allocate(256, &a).ok());
  ASSERT_TRUE(cl->Allocate(256, &b).ok());
  std::vector<uint8_t> bytes(100);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_TRUE(q->Write(bytes.data(), {a.get(), 16, 100}).ok());
  std::fill(bytes.begin(), bytes.end(), 0);  // the write took its bytes when it returned
  ASSERT_TRUE(q->Copy({a.get(), 16, 100}, {b.get(), 128, 100}).ok());
  // A constant imported from host memory.
  std::vector<uint8_t> constant(40, 0x5a);
  ASSERT_TRUE(cl->Import(constant.data(), constant.size(), &c).ok());
  std::vector<uint8_t> back(100), back_c(40);
  ASSERT_TRUE(q->Read({b.get(), 128, 100}, back.data()).ok());
  ASSERT_TRUE(q->Read({c.get(), 0, 40}, back_c.data()).ok());
  std::unique_ptr<rt::Event> done;
  ASSERT_TRUE(q->Signal(&done).ok());
  ASSERT_TRUE(done->Wait().ok());
  for (size_t i = 0; i < back.size(); ++i) {
    ASSERT_EQ(back[i], static_cast<uint8_t>(i * 7 + 3)) << i;
  }
  EXPECT_EQ(back_c, constant);
}

TEST(OpenCl, AQueueWaitsForAnotherQueuesEvent) {
  OPENCL_OR_SKIP(cl);
  std::unique_ptr<rt::Queue> q1, q2;
  ASSERT_TRUE(cl->CreateQueue(&q1).ok());
  ASSERT_TRUE(cl->CreateQueue(&q2).ok());
  const uint64_t n = 1 << 20;
  rt::BufferPtr a, b;
  ASSERT_TRUE(cl->Allocate(n, &a).ok());
  ASSERT_TRUE(cl->Allocate(n, &b).ok());
  std::vector<uint8_t> bytes(n, 0x11);
  ASSERT_TRUE(q1->Write(bytes.data(), {a.get(), 0, n}).ok());
  std::unique_ptr<rt::Event> written;
  ASSERT_TRUE(q1->Signal(&written).ok());
  ASSERT_TRUE(q2->Wait(*written).ok());
  ASSERT_TRUE(q2->Copy({a.get(), 0, n}, {b.get(), 0, n}).ok());
  std::vector<uint8_t> back(n, 0);
  ASSERT_TRUE(q2->Read({b.get(), 0, n}, back.data()).ok());
  ASSERT_TRUE(q2->Finish().ok());
  EXPECT_EQ(back, bytes);
}

TEST(OpenCl, ADispatchStepRunsThePackagesKernel) {
  OPENCL_OR_SKIP(cl);
  std::unique_ptr<rt::Session> s;
  rt::Status st = Open(AxpbPackage(kAxpb, "axpb"), &s);
  ASSERT_TRUE(st.ok()) << st.message();
  // 15 elements: the grid is rounded up to 16 (local size 8) and the kernel stops at n.
  for (int64_t n : {5, 1, 0, 40}) {
    std::vector<float> x(static_cast<size_t>(n * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 3;
    std::vector<rt::OwnedTensor> out;
    st = s->Run({test::Input("x", x, {n, 3})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape, (rt::Shape{n, 3}));
    std::vector<float> y = test::Floats(out[0]);
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], 2 * x[i] + 1) << "n " << n << ", " << i;
  }
}

TEST(OpenCl, AFailingBuildReportsTheDriversLog) {
  OPENCL_OR_SKIP(cl);
  std::string broken = kAxpb;
  broken.replace(broken.find("2.0f * xp[i]"), 12, "2.0f * xq[i]");
  std::unique_ptr<rt::Session> s;
  rt::Status st = Open(AxpbPackage(broken, "axpb"), &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("code section 0 (opencl-c for 'opencl'): building the OpenCL "
                              "program on " +
                              cl->info().name),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("the build log:"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("xq"), std::string::npos) << st.message();
}

TEST(OpenCl, AKernelWhoseParametersBreakTheConventionIsRefusedAtCreation) {
  OPENCL_OR_SKIP(cl);
  std::string source = kAxpb;
  source.replace(source.find(", long n)"), 9, ")");
  source.replace(source.find("if (i >= n) return;"), 19, "");
  std::unique_ptr<rt::Session> s;
  rt::Status st = Open(AxpbPackage(source, "axpb"), &s);
  EXPECT_NE(st.message().find("step 1 (axpb, node 'axpb0'): kernel 'axpb' takes 4 arguments; "
                              "the step passes 5"),
            std::string::npos)
      << st.message();
}

// The compiler's side: `--device opencl --device llvm` on a model whose ops OpenCL all takes (a
// broadcast add, relu, a scale, sigmoid, softmax: more than the few cheap ops that stay with the
// host).
constexpr const char* kElementwiseModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), b: R.Tensor((1, 3), "float32")):
        a = R.add(x, b)
        r = R.nn.relu(a)
        s = R.multiply(r, R.const(2.0, "float32"))
        g = R.sigmoid(s)
        p = R.nn.softmax(g, axis=1)
        return p
)";

// Runs the compiled kElementwiseModel for two batch sizes against a float64 reference.
void CheckElementwiseModel(const rt::Session& s) {
  std::vector<float> b = {0.5f, -1, 2};
  for (int64_t n : {2, 7}) {
    std::vector<float> x(static_cast<size_t>(n * 3));
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.7f * static_cast<float>(i % 5) - 1.2f;
    std::vector<rt::OwnedTensor> out;
    rt::Status st = s.Run({test::Input("x", x, {n, 3}), test::Input("b", b, {1, 3})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<float> y = test::Floats(out[0]);
    ASSERT_EQ(y.size(), x.size());
    // The reference in double: softmax over each row of sigmoid(2 * relu(x + b)).
    for (int64_t row = 0; row < n; ++row) {
      double e[3], sum = 0;
      for (int j = 0; j < 3; ++j) {
        double v = 2 * std::max(0.0, static_cast<double>(x[row * 3 + j]) + b[j]);
        v = 1 / (1 + std::exp(-v));
        sum += e[j] = std::exp(v);
      }
      for (int j = 0; j < 3; ++j) EXPECT_NEAR(y[row * 3 + j], e[j] / sum, 1e-6) << row << ", " << j;
    }
  }
}

// kElementwiseModel compiled as `quiltc --device opencl --device llvm` does.
std::vector<uint8_t> CompileElementwiseModel() {
  compiler::CompileOptions options;
  options.devices = {"opencl", "llvm"};
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(kElementwiseModel), options);
  EXPECT_TRUE(c) << c.error().ToString();
  return c ? c->package : std::vector<uint8_t>();
}

TEST(OpenCl, CompiledElementwiseOpsRunAsGeneratedCode) {
  OPENCL_OR_SKIP(cl);
  std::vector<uint8_t> package = CompileElementwiseModel();
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(package.data(), package.size(), &p);
  ASSERT_TRUE(st.ok()) << st.message();
  // One OpenCL C section with an entry per OpenCL step; those steps dispatch it. The chain of
  // four elementwise ops is one fused step (one kernel), the softmax another.
  const pkg::Package& root = p->root();
  ASSERT_TRUE(root.code());
  ASSERT_EQ(root.code()->size(), 1u);
  EXPECT_EQ(root.code()->Get(0)->format()->str(), "opencl-c");
  EXPECT_EQ(root.code()->Get(0)->entry_points()->size(), 2u);
  std::vector<std::string> ops;
  for (const pkg::Step* step : *root.graphs()->Get(0)->steps()) {
    if (step->kind() != pkg::StepKind::Dispatch) continue;
    ops.push_back(step->op()->str());
    EXPECT_EQ(root.devices()->Get(step->device())->kind()->str(), "opencl");
    if (ops.back() == "fused_elementwise") {
      rt::AttrView attrs(step->attrs());
      auto members = attrs.Strs("ops");
      EXPECT_EQ(members, (std::vector<std::string_view>{"add", "nn.relu", "multiply", "sigmoid"}));
    }
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"fused_elementwise", "nn.softmax"}));
  std::unique_ptr<rt::Session> s;
  st = rt::Session::Create(std::move(p), {}, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(s->notes().empty());
  CheckElementwiseModel(*s);
}

TEST(OpenCl, AFailingBuildHandsTheDevicesStepsToTheCpu) {
  OPENCL_OR_SKIP(cl);
  std::vector<uint8_t> package = CompileElementwiseModel();
  // Break the generated code in the package's bytes: the driver refuses to build it (loaded
  // unverified: the package's checksum would refuse the changed bytes first).
  std::string bytes(package.begin(), package.end());
  size_t at = bytes.find("inline float q_relu(float x) { return");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(bytes.find("return", at), 6, "retrun");
  auto open = [&](bool strict, std::unique_ptr<rt::Session>* s) {
    std::unique_ptr<rt::LoadedPackage> p;
    rt::LoadOptions unverified;
    unverified.verify_checksum = false;
    rt::Status st = rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p, unverified);
    if (!st.ok()) return st;
    rt::SessionOptions so;
    so.strict = strict;
    return rt::Session::Create(std::move(p), so, s);
  };
  std::unique_ptr<rt::Session> s;
  rt::Status st = open(true, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("code section 0 (opencl-c for 'opencl'): building the OpenCL "
                              "program on "),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("retrun"), std::string::npos) << "the build log: " << st.message();
  // Not strict: the session opens, says why the OpenCL steps run on the CPU, and computes the
  // same values (the fused chain with the CPU's fused_elementwise kernel).
  st = open(false, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(s->notes().size(), 1u);
  EXPECT_NE(s->notes()[0].find("device 0 ('opencl'): code section 0 (opencl-c for 'opencl') did "
                               "not load (building the OpenCL program on "),
            std::string::npos)
      << s->notes()[0];
  EXPECT_NE(s->notes()[0].find("steps run on the CPU instead"), std::string::npos) << s->notes()[0];
  CheckElementwiseModel(*s);
}

TEST(OpenCl, ADeviceNumberChoosesTheMachinesDevice) {
  OPENCL_OR_SKIP(cl);
  for (const char* device : {"opencl:0", "opencl -device=0", "opencl:7"}) {
    compiler::CompileOptions options;
    options.devices = {device, "llvm"};
    Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(kElementwiseModel), options);
    ASSERT_TRUE(c) << device << ": " << c.error().ToString();
    std::unique_ptr<rt::LoadedPackage> p;
    ASSERT_TRUE(rt::LoadedPackage::FromMemory(c->package.data(), c->package.size(), &p).ok());
    EXPECT_EQ(p->root().devices()->Get(0)->id(), device == std::string("opencl:7") ? 7 : 0);
    std::unique_ptr<rt::Session> s;
    rt::Status st = rt::Session::Create(std::move(p), {}, &s);
    if (device != std::string("opencl:7")) {
      ASSERT_TRUE(st.ok()) << device << ": " << st.message();
      CheckElementwiseModel(*s);
      continue;
    }
    // This machine has no eighth OpenCL device: the session names the devices there are.
    EXPECT_NE(st.message().find("the package runs steps on device 'opencl -device=7': no OpenCL "
                                "device 7; this machine has "),
              std::string::npos)
        << st.message();
  }
  compiler::CompileOptions options;
  options.devices = {"opencl:x"};
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(kElementwiseModel), options);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "--device opencl:x: after ':' comes a device number");
}

std::string RunCommand(const std::string& cmd, int* code) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  if (!f) return out;
  char buf[256];
  while (fgets(buf, sizeof(buf), f)) out += buf;
  *code = WEXITSTATUS(pclose(f));
  return out;
}

TEST(OpenCl, WhereNoOpenClPlatformIsInstalledTheSessionSaysSo) {
  // The ICD loader pointed at an empty vendor folder: the machine seems to have no OpenCL.
  OPENCL_OR_SKIP(cl);
  std::string dir = ::testing::TempDir() + "/no-icd";
  std::string package = ::testing::TempDir() + "/axpb.quilt";
  compiler::PackageSpec spec = AxpbPackage(kAxpb, "axpb");
  spec.graphs[0].dims[0] = {pkg::DimKind::Int, 0, 0, 4};  // x: (4, 3), so quilt-run makes it
  spec.graphs[0].symbols.clear();
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  FILE* f = fopen(package.c_str(), "wb");
  ASSERT_TRUE(f);
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  int code = 0;
  RunCommand("mkdir -p " + dir, &code);
  std::string out = RunCommand(
      "OCL_ICD_VENDORS=" + dir + " " + QUILT_BIN_DIR "/quilt-run " + package + " --iterations 1",
      &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("the package runs steps on device 'opencl': this machine has no OpenCL "
                     "platform"),
            std::string::npos)
      << out;
  // With the ICD there, the same package runs.
  out = RunCommand(std::string(QUILT_BIN_DIR) + "/quilt-run " + package + " --iterations 1", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("latency over 1 runs"), std::string::npos) << out;
}

TEST(OpenCl, TheRuntimeLibraryDoesNotLinkOpenCl) {
  // The plug-in does; the runtime opens it only for a package with OpenCL steps.
  EXPECT_EQ(rt::DevicePluginFile(rt::DeviceKind::kOpenCl), "libquilt_opencl.so");
  int code = 0;
  std::string out = RunCommand(std::string("ldd ") + QUILT_LIB_DIR + "/libquilt.so", &code);
  EXPECT_NE(out.find("libc.so"), std::string::npos) << out;
  EXPECT_EQ(out.find("OpenCL"), std::string::npos) << out;
}

}  // namespace
}  // namespace quilt
