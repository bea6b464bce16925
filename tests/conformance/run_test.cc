// Every ONNX backend node test shipped by the `onnx` package, compiled for the CPU and run in
// this one process through the compiler and runtime libraries, compared with its expected
// outputs: floats within rtol 1e-3 + atol 1e-5 (NaN matches NaN), integers and booleans exact.
//
// Each test ends as pass, fail (wrong values, or an error while compiling or running) or
// unsupported (an op the importer leaves out or with no CPU kernel yet). The results by test
// and a table by op go to the build folder (conformance_results.txt, conformance_report.md).
// tests/conformance/run_baseline.txt lists every test: "pass", or why it does not pass yet. The
// test fails when a test listed as passing does not, and when fewer than 90% of the tests outside
// the importer's left-out categories pass. The baseline only improves: regenerate it from
// build/conformance_baseline.txt (written by each run) when tests start passing.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "importers/onnx/tensor.h"
#include "runtime/src/device/device.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/conformance/node_tests.h"

namespace {

namespace fs = std::filesystem;
using namespace quilt::conformance;
using quilt::rt::DType;

struct Result {
  enum Kind { kPass, kFail, kUnsupported } kind = kPass;
  std::string reason;
  int copies = 0;      // copy steps between devices in the package
  int dispatches = 0;  // steps running generated code
  int kernels = 0;     // steps running a library kernel
};

Result Fail(std::string why) { return {Result::kFail, std::move(why)}; }
Result Unsupported(std::string why) { return {Result::kUnsupported, std::move(why)}; }

// Element i of a float-like tensor as double; nullopt for non-float types.
std::optional<double> FloatAt(DType t, const uint8_t* p, int64_t i) {
  switch (t) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::kFloat64: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return t == DType::kFloat16 ? quilt::rt::HalfToFloat(v) : quilt::rt::BFloat16ToFloat(v);
    }
    default:
      return std::nullopt;
  }
}

std::string Compare(const quilt::rt::OwnedTensor& got, const onnx::TensorProto& want_proto) {
  quilt::Expected<quilt::importers::onnx::TensorData> want =
      quilt::importers::onnx::ReadTensor(want_proto, "");
  if (!want) return "cannot read the expected output: " + want.error().ToString();
  auto want_dtype = static_cast<DType>(want->dtype);
  if (got.dtype != want_dtype) {
    return "dtype " + std::string(quilt::rt::DTypeName(got.dtype)) + ", expected " +
           std::string(quilt::rt::DTypeName(want_dtype));
  }
  if (got.shape != want->shape) {
    return "shape " + quilt::rt::ShapeString(got.shape) + ", expected " +
           quilt::rt::ShapeString(want->shape);
  }
  const std::vector<uint8_t>& w = *want->bytes;
  if (got.data.size() != w.size()) return "byte size differs";
  int64_t n = 1;
  for (int64_t d : got.shape) n *= d;
  if (n == 0 || !FloatAt(got.dtype, w.data(), 0)) {
    if (got.data != w) {
      size_t i = 0;
      while (i < w.size() && got.data[i] == w[i]) ++i;
      return "differs at byte " + std::to_string(i);
    }
    return "";
  }
  for (int64_t i = 0; i < n; ++i) {
    double a = *FloatAt(got.dtype, got.data.data(), i);
    double b = *FloatAt(got.dtype, w.data(), i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(b) && a == b) continue;
    if (!(std::abs(a - b) <= 1e-5 + 1e-3 * std::abs(b))) {
      return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " +
             std::to_string(b);
    }
  }
  return "";
}

// Splits a model across the CPU seen as two devices: device 0 takes the ops whose name hashes
// odd, device 1 (the host) the rest, so most models run with copies between the two.
void SplitAcrossTwoCpus(quilt::ir::IRModule* mod, quilt::compiler::CompileOptions* options) {
  quilt::ir::Target llvm = *quilt::ir::Target::Parse("llvm");
  mod->vdevices = {quilt::ir::VDevice{llvm, 0, "global"}, quilt::ir::VDevice{llvm, 1, "global"}};
  options->devices = {};
  options->max_fragment_ops = 0;
  options->supports = [](const quilt::ir::VDevice& d, const quilt::ir::CallNode& call) {
    if (d.vdevice_id == 1 || !call.op()) return quilt::targets::Support::Yes();
    uint32_t h = 2166136261u;
    for (char c : call.op()->name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
    if (h % 2) return quilt::targets::Support::Yes();
    return quilt::targets::Support::No("left to the other device by the split test");
  };
}

// How a test's model is run: on the CPU alone; split across the CPU seen as two devices; split
// between the CPU and the opaque test device (the second's ops run on the test device); compiled
// for `--device opencl --device llvm` (OpenCL takes what it can, the CPU the rest); the same with
// `--place node:NAME=llvm` rules forcing every second node onto the CPU; or
// `--device opencl --strict` (every op on OpenCL, or the compile fails).
enum class Mode { kCpu, kSplitCpus, kSplitTestDevice, kOpenClAndCpu, kOpenClPlaced, kOpenClStrict };

// The --place rules of kOpenClPlaced: `node:NAME=llvm` for every second node of the model's
// graph (by index: a model of one node keeps it on OpenCL where OpenCL takes it), so models of
// several nodes run cut between OpenCL and the CPU by rule, with copies at every cut. An unnamed
// node is named as the importer names it: "OpType#index".
std::vector<std::string> PlaceEverySecondNodeOnTheCpu(const onnx::ModelProto& m) {
  std::vector<std::string> rules;
  for (int i = 1; i < m.graph().node_size(); i += 2) {
    const onnx::NodeProto& n = m.graph().node(i);
    std::string name = n.name().empty() ? n.op_type() + "#" + std::to_string(i) : n.name();
    std::string glob;  // the name itself, its glob characters escaped
    for (char c : name) {
      if (std::strchr("*?[]\\", c)) glob += '\\';
      glob += c;
    }
    rules.push_back("node:" + glob + "=llvm");
  }
  return rules;
}

Result RunOne(const fs::path& dir, bool left_out, Mode mode = Mode::kCpu) {
  onnx::ModelProto m;
  {
    std::ifstream in(dir / "model.onnx", std::ios::binary);
    if (!m.ParseFromIstream(&in)) return Fail("cannot read model.onnx");
  }
  quilt::importers::onnx::ImportOptions options = PinShapeInputs(dir);
  quilt::Expected<quilt::ir::IRModule> mod =
      quilt::importers::onnx::ImportOnnxFile((dir / "model.onnx").string(), options);
  if (!mod) {
    // The importer's left-out categories (inference_baseline.txt) are unsupported by design.
    if (left_out || mod.error().message.find("unsupported") != std::string::npos) {
      return Unsupported("import: " + mod.error().ToString());
    }
    return Fail("import: " + mod.error().ToString());
  }
  quilt::compiler::CompileOptions copts;
  if (mode == Mode::kSplitCpus || mode == Mode::kSplitTestDevice) SplitAcrossTwoCpus(&*mod, &copts);
  if (mode == Mode::kOpenClAndCpu || mode == Mode::kOpenClPlaced)
    copts.devices = {"opencl", "llvm"};
  if (mode == Mode::kOpenClPlaced) copts.place = PlaceEverySecondNodeOnTheCpu(m);
  if (mode == Mode::kOpenClStrict) {
    copts.devices = {"opencl"};
    copts.strict = true;
  }
  quilt::Expected<std::vector<uint8_t>> bytes = quilt::compiler::CompileModule(*mod, copts);
  // A rule for a node that yields no op (Constant, Shape, Identity) is refused, as it would be
  // from a user: leave it out and compile again.
  while (!bytes && mode == Mode::kOpenClPlaced &&
         bytes.error().message.find("the rule matches no op") != std::string::npos) {
    auto unmatched = std::find_if(copts.place.begin(), copts.place.end(), [&](const auto& r) {
      return bytes.error().message.find("--place " + r + ":") != std::string::npos;
    });
    if (unmatched == copts.place.end()) break;
    copts.place.erase(unmatched);
    bytes = quilt::compiler::CompileModule(*mod, copts);
  }
  if (!bytes) {
    const std::string& message = bytes.error().message;
    if (mode == Mode::kOpenClStrict || message.find("no CPU kernel") != std::string::npos ||
        message.find("not supported") != std::string::npos) {
      return Unsupported("compile: " + bytes.error().ToString());
    }
    return Fail("compile: " + bytes.error().ToString());
  }
  std::unique_ptr<quilt::rt::LoadedPackage> pkg;
  quilt::rt::Status st = quilt::rt::LoadedPackage::FromMemory(bytes->data(), bytes->size(), &pkg);
  if (!st.ok()) return Fail("load: " + st.message());
  int copies = 0, dispatches = 0, kernels = 0;
  for (const quilt::pkg::Graph* g : *pkg->root().graphs()) {
    for (const quilt::pkg::Step* s : *g->steps()) {
      dispatches += s->kind() == quilt::pkg::StepKind::Dispatch;
      kernels += s->kind() == quilt::pkg::StepKind::Kernel;
      copies += s->kernel()->str() == "copy" && s->inputs()->size() == 1 &&
                g->values()->Get(s->inputs()->Get(0))->device() != s->device();
    }
  }
  std::unique_ptr<quilt::rt::Session> session;
  quilt::rt::SessionOptions session_options;
  if (mode == Mode::kSplitTestDevice) session_options.run_on_test_device = {0};
  // On OpenCL a program the driver fails to build is an error here, not a quiet run on the CPU
  // that would pass for the kernel.
  session_options.strict =
      mode == Mode::kOpenClAndCpu || mode == Mode::kOpenClPlaced || mode == Mode::kOpenClStrict;
  st = quilt::rt::Session::Create(std::move(pkg), session_options, &session);
  if (!st.ok()) return Fail("session: " + st.message());
  // Inputs: the graph inputs that are neither initializers nor pinned, in order.
  std::set<std::string> initializers;
  for (const auto& t : m.graph().initializer()) initializers.insert(t.name());
  fs::path data = dir / "test_data_set_0";
  std::vector<quilt::importers::onnx::TensorData> held;
  std::vector<quilt::rt::NamedTensor> inputs;
  int j = 0;
  for (const auto& input : m.graph().input()) {
    if (initializers.count(input.name())) continue;
    fs::path p = data / ("input_" + std::to_string(j++) + ".pb");
    if (options.input_values.count(input.name())) continue;
    onnx::TensorProto t;
    if (!fs::exists(p)) continue;  // an optional input left out
    if (!ReadTensorProto(p, &t)) return Fail("cannot read " + p.string());
    auto td = quilt::importers::onnx::ReadTensor(t, "");
    if (!td) return Fail("input: " + td.error().ToString());
    held.push_back(*td);
    quilt::rt::NamedTensor n;
    n.name = input.name();
    n.tensor.dtype = static_cast<DType>(td->dtype);
    n.tensor.shape = td->shape;
    n.tensor.data = const_cast<uint8_t*>(held.back().bytes->data());
    inputs.push_back(std::move(n));
  }
  std::vector<quilt::rt::OwnedTensor> outputs;
  st = session->Run(inputs, &outputs);
  if (!st.ok()) return Fail("run: " + st.message());
  for (size_t i = 0;; ++i) {
    fs::path p = data / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) {
      if (i != outputs.size())
        return Fail("the package returns " + std::to_string(outputs.size()) + " outputs");
      break;
    }
    onnx::TensorProto t;
    if (!ReadTensorProto(p, &t)) return Fail("cannot read " + p.string());
    if (i >= outputs.size()) return Fail("missing output " + std::to_string(i));
    std::string diff = Compare(outputs[i], t);
    if (!diff.empty()) return Fail("output " + std::to_string(i) + ": " + diff);
  }
  Result pass;
  pass.copies = copies;
  pass.dispatches = dispatches;
  pass.kernels = kernels;
  return pass;
}

// `fs::path root`: the folder of the rendered node tests. Where they can be rendered they must be
// there (a build that forgot them cannot pass); elsewhere the test skips and says why.
#ifdef QUILT_NODE_TESTS_REQUIRED
#define NODE_TESTS_OR_SKIP(root)       \
  fs::path root = QUILT_NODE_TEST_DIR; \
  if (!fs::exists(root))               \
  FAIL() << "no node tests at " << root << ": build the onnx_node_tests target"
#else
#define NODE_TESTS_OR_SKIP(root)       \
  fs::path root = QUILT_NODE_TEST_DIR; \
  if (!fs::exists(root))               \
  GTEST_SKIP() << "no node tests at " << root << ": run scripts/setup.sh and rebuild"
#endif

TEST(OnnxNodeTests, RunOnCpuMatchExpectedOutputs) {
  NODE_TESTS_OR_SKIP(root);
  std::string src = QUILT_SOURCE_DIR;
  std::map<std::string, std::string> baseline =
      ReadBaseline(src + "/tests/conformance/run_baseline.txt");
  std::map<std::string, std::string> left_out =
      ReadBaseline(src + "/tests/conformance/inference_baseline.txt");
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) {
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GT(dirs.size(), 1000u) << "too few node tests in " << root;
  int counts[3] = {0, 0, 0};
  int counted = 0, counted_pass = 0;
  std::vector<std::string> regressions;
  std::map<std::string, std::array<int, 3>> by_op;
  std::ostringstream results, pass_list, new_baseline;
  for (const fs::path& d : dirs) {
    std::string name = d.filename().string();
    Result r = RunOne(d, left_out.count(name) > 0);
    ++counts[r.kind];
    by_op[OpTypes(d / "model.onnx")][r.kind]++;
    if (!left_out.count(name)) {
      ++counted;
      counted_pass += r.kind == Result::kPass;
    }
    static const char* kNames[] = {"pass", "fail", "unsupported"};
    // One line per test: the lines of a message (one per node) joined.
    std::string reason = r.reason;
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    results << name << "\t" << kNames[r.kind] << "\t" << reason << "\n";
    if (r.kind == Result::kPass) pass_list << name << "\n";
    // The reason without the build folder's path, for a baseline that reads the same anywhere.
    std::string where = d.string() + "/model.onnx: ";
    std::string portable = reason;
    for (size_t at; (at = portable.find(where)) != std::string::npos;)
      portable.erase(at, where.size());
    new_baseline << name << "\t"
                 << (r.kind == Result::kPass ? "pass" : kNames[r.kind] + (": " + portable)) << "\n";
    auto listed = baseline.find(name);
    if (r.kind != Result::kPass && listed != baseline.end() && listed->second == "pass") {
      regressions.push_back(name + ": " + reason);
    }
  }
  std::string bin = QUILT_BINARY_DIR;
  std::ostringstream report;
  report << "# ONNX node tests run on the CPU\n\n"
         << counts[0] << " pass, " << counts[1] << " fail, " << counts[2] << " unsupported of "
         << dirs.size() << "; outside the left-out categories " << counted_pass << " of " << counted
         << " pass\n\n| ops | pass | fail | unsupported |\n| --- | --- | --- | --- |\n";
  for (const auto& [ops, c] : by_op) {
    report << "| " << ops << " | " << c[0] << " | " << c[1] << " | " << c[2] << " |\n";
  }
  std::ofstream(bin + "/conformance_report.md") << report.str();
  std::ofstream(bin + "/conformance_results.txt") << results.str();
  std::ofstream(bin + "/conformance_passing.txt") << pass_list.str();
  std::ofstream(bin + "/conformance_baseline.txt")
      << "# Every ONNX node test run on the CPU: pass, or why not (tab-separated).\n"
      << "# Generated from build/conformance_baseline.txt; a test listed as pass must keep "
         "passing.\n"
      << new_baseline.str();
  std::printf(
      "node tests on cpu: %d pass, %d fail, %d unsupported; %d of %d (%.1f%%) outside the "
      "left-out categories pass; report in %s/conformance_report.md\n",
      counts[0], counts[1], counts[2], counted_pass, counted,
      100.0 * counted_pass / std::max(1, counted), bin.c_str());
  std::string list;
  for (size_t i = 0; i < regressions.size() && i < 40; ++i) list += "  " + regressions[i] + "\n";
  EXPECT_TRUE(regressions.empty())
      << regressions.size() << " tests of run_baseline.txt do not pass:\n"
      << list;
}

// Runs every test the baseline lists as passing in `mode`; all must pass, most with copies.
void RunSplit(Mode mode, const std::string& what) {
  NODE_TESTS_OR_SKIP(root);
  std::map<std::string, std::string> baseline =
      ReadBaseline(std::string(QUILT_SOURCE_DIR) + "/tests/conformance/run_baseline.txt");
  int run = 0, with_copies = 0, with_dispatches = 0, split = 0;
  std::vector<std::string> failures;
  for (const auto& [name, status] : baseline) {
    if (status != "pass" || !fs::exists(root / name / "model.onnx")) continue;
    Result r = RunOne(root / name, false, mode);
    ++run;
    with_copies += r.copies > 0;
    with_dispatches += r.dispatches > 0;
    split += r.dispatches > 0 && r.kernels > 0;
    if (r.kind != Result::kPass) failures.push_back(name + ": " + r.reason);
  }
  std::printf(
      "node tests split %s: %d run, %zu fail, %d with copies, %d running generated code, %d of "
      "them library kernels too\n",
      what.c_str(), run, failures.size(), with_copies, with_dispatches, split);
  std::string list;
  for (size_t i = 0; i < failures.size() && i < 40; ++i) list += "  " + failures[i] + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " tests fail when split " << what << ":\n"
                                << list;
  EXPECT_GT(run, 1000);
  if (mode == Mode::kSplitCpus || mode == Mode::kSplitTestDevice) {
    EXPECT_GT(with_copies, run / 2) << "the split should put most models on both devices";
    return;
  }
  // OpenCL takes only the ops it has code for: at least as many tests as when this was written
  // (floors that only move up as kernels land). They moved down once, by the import's folding of
  // float arithmetic on constants (FoldFloatConstants): five tests whose only work OpenCL ran
  // was such arithmetic (the scale 1 / sqrt(head size) from a Shape, through Cast, Sqrt and Div,
  // in test_attention_4d_fp16_expanded,
  // test_attention_4d_gqa_with_past_and_present_fp16_expanded,
  // test_flexattention_double_expanded_ver26 and test_linear_attention_fp16_expanded; the
  // arithmetic on test_range_int32_type_negative_delta_expanded's frozen integer inputs, cast to
  // float) have none left at run time,
  // and test_flexattention_relative_positional has no OpenCL step left under the placement rules.
  // float16 tensors' elementwise ops and moves on OpenCL took it from 1006 to 1028; every
  // other family on float16 (softmax, convs, pooling, attention, ...) to 1034.
  if (mode == Mode::kOpenClAndCpu) {
    constexpr int kOpenClFloor = 1034;
    EXPECT_GE(with_dispatches, kOpenClFloor) << "fewer node tests run OpenCL code than before";
  }
  if (mode == Mode::kOpenClPlaced) {
    constexpr int kPlacedSplitFloor = 248;
    EXPECT_GE(split, kPlacedSplitFloor)
        << "fewer node tests run split between OpenCL and the CPU by rule than before";
  }
}

// Whether every input (not an initializer) and output of the test's model is a float32 tensor.
bool AllFloat32(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream in(model, std::ios::binary);
  if (!m.ParseFromIstream(&in)) return false;
  std::set<std::string> initializers;
  for (const auto& t : m.graph().initializer()) initializers.insert(t.name());
  auto f32 = [](const onnx::ValueInfoProto& v) {
    return v.type().has_tensor_type() &&
           v.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT;
  };
  for (const auto& v : m.graph().input()) {
    if (!initializers.count(v.name()) && !f32(v)) return false;
  }
  for (const auto& v : m.graph().output()) {
    if (!f32(v)) return false;
  }
  return m.graph().output_size() > 0;
}

// Every test that passes on the CPU passes too when its ops are split across the CPU seen as two
// devices: copies between them, constants on each, an arena per device.
TEST(OnnxNodeTests, SplitAcrossTwoCpuDevicesMatchesToo) {
  RunSplit(Mode::kSplitCpus, "across two CPU devices");
}

// And when one of the two is the opaque test device: memory the executor cannot touch, work
// run late. A copy, wait or host read the executor forgets shows here as a wrong value.
TEST(OnnxNodeTests, SplitBetweenCpuAndOpaqueTestDeviceMatchesToo) {
  RunSplit(Mode::kSplitTestDevice, "between the CPU and the test device");
}

// Compiled for OpenCL and the CPU, as `quiltc --device opencl --device llvm` does: every test
// that passes on the CPU passes with OpenCL computing the ops it has code for (on PoCL in CI).
// Runs alone (ctest RUN_SERIAL): PoCL's threads would fight ctest's for the cores.
#define OPENCL_OR_SKIP(cl)                                                                        \
  std::unique_ptr<quilt::rt::Device> cl;                                                          \
  if (quilt::rt::Status st = quilt::rt::CreateDevice(quilt::rt::DeviceKind::kOpenCl, 0, {}, &cl); \
      !st.ok())                                                                                   \
  GTEST_SKIP() << "no OpenCL device here: " << st.message()

TEST(OnnxNodeTests, OnOpenClAndCpuMatchToo) {
  OPENCL_OR_SKIP(cl);
  RunSplit(Mode::kOpenClAndCpu, "between OpenCL (" + cl->info().name + ") and the CPU");
}

// The same with `--place node:NAME=llvm` rules that send every second node to the CPU, the second
// device: models of several nodes run cut by rule, with copies at each cut.
TEST(OnnxNodeTests, OnOpenClAndCpuSplitByPlacementRulesMatchToo) {
  OPENCL_OR_SKIP(cl);
  RunSplit(Mode::kOpenClPlaced, "between OpenCL and the CPU by --place rules");
}

// `--device opencl --strict`: every op of a float32 node test on OpenCL, or the compile fails.
// tests/conformance/opencl_strict_baseline.txt lists each float32 test that passes on the CPU:
// "pass", or why not yet. A test listed as passing must keep passing; the baseline only improves
// (regenerate it from build/opencl_strict_baseline.txt, written by each run).
TEST(OnnxNodeTests, OnOpenClAloneStrictHoldItsBaseline) {
  OPENCL_OR_SKIP(cl);
  NODE_TESTS_OR_SKIP(root);
  std::string src = QUILT_SOURCE_DIR;
  std::map<std::string, std::string> cpu =
      ReadBaseline(src + "/tests/conformance/run_baseline.txt");
  std::map<std::string, std::string> baseline =
      ReadBaseline(src + "/tests/conformance/opencl_strict_baseline.txt");
  int run = 0, pass = 0;
  std::vector<std::string> regressions, wrong;
  std::ostringstream new_baseline;
  for (const auto& [name, status] : cpu) {
    fs::path model = root / name / "model.onnx";
    if (status != "pass" || !fs::exists(model) || !AllFloat32(model)) continue;
    Result r = RunOne(root / name, false, Mode::kOpenClStrict);
    ++run;
    pass += r.kind == Result::kPass;
    // The reason on one line, without the build folder's path.
    std::string reason = r.reason;
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    std::string where = (root / name).string() + "/model.onnx: ";
    for (size_t at; (at = reason.find(where)) != std::string::npos;) reason.erase(at, where.size());
    if (r.kind == Result::kFail) wrong.push_back(name + ": " + reason);
    new_baseline << name << "\t" << (r.kind == Result::kPass ? "pass" : reason) << "\n";
    auto listed = baseline.find(name);
    if (r.kind != Result::kPass && listed != baseline.end() && listed->second == "pass") {
      regressions.push_back(name + ": " + reason);
    }
  }
  std::ofstream(std::string(QUILT_BINARY_DIR) + "/opencl_strict_baseline.txt")
      << "# Each float32 ONNX node test that passes on the CPU, compiled with `--device opencl "
         "--strict`:\n# pass, or why not (tab-separated). Generated from "
         "build/opencl_strict_baseline.txt; a test\n# listed as pass must keep passing.\n"
      << new_baseline.str();
  std::printf("node tests on OpenCL alone (--strict, %s): %d of %d float32 tests pass (%.1f%%)\n",
              cl->info().name.c_str(), pass, run, 100.0 * pass / std::max(1, run));
  std::string list;
  for (size_t i = 0; i < regressions.size() && i < 40; ++i) list += "  " + regressions[i] + "\n";
  EXPECT_TRUE(regressions.empty())
      << regressions.size() << " tests of opencl_strict_baseline.txt do not pass:\n"
      << list;
  // A compile that OpenCL refuses is "not yet"; a wrong value or a failed run is a defect.
  list.clear();
  for (size_t i = 0; i < wrong.size() && i < 40; ++i) list += "  " + wrong[i] + "\n";
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " tests fail on OpenCL alone:\n" << list;
  EXPECT_GT(run, 500);
}

}  // namespace
