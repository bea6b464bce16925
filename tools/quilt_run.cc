// quilt-run: run a quilt package.
//
//   quilt-run OUT.quilt [--input NAME=FILE.npy]... [--inputs FILE.npz] [--output-dir DIR]
//             [--warmup W --iterations N] [--threads T] [--strict] [--code-cache DIR]
//
// Inputs come from .npy, .npz or ONNX .pb files; an input not given gets seeded random values
// when its shape is static (as trtexec does), else it is an error naming the symbolic dims.
// Prints each output's shape and first values, writes them as DIR/NAME.npy, and with
// --iterations prints min, median, mean and p90 latency. Exit 0, 1 on a failed load or run, 2 for
// bad usage.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>

#include "runtime/src/session.h"
#include "tools/cli.h"
#include "tools/tensor_io.h"

namespace {

using quilt::rt::DType;
using quilt::rt::OwnedTensor;

std::string FileName(const std::string& name) {
  std::string s;
  for (char c : name)
    s.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_');
  return s.empty() ? "output" : s;
}

bool RandomFill(const quilt::rt::TensorSignature& sig, OwnedTensor* t) {
  if (sig.rank < 0) return false;
  for (const std::string& n : sig.dim_names) {
    if (!n.empty()) return false;
  }
  t->name = sig.name;
  t->dtype = sig.dtype;
  t->shape = sig.dims;
  int64_t n = 1;
  for (int64_t d : sig.dims) n *= d;
  t->data.assign(quilt::rt::DTypeBytes(sig.dtype, n), 0);
  std::mt19937 rng(1234);
  if (sig.dtype == DType::kFloat32) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    auto* p = reinterpret_cast<float*>(t->data.data());
    for (int64_t i = 0; i < n; ++i) p[i] = u(rng);
  } else if (sig.dtype == DType::kInt64) {
    auto* p = reinterpret_cast<int64_t*>(t->data.data());
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(rng() % 10);
  }
  return true;
}

std::string Preview(const OwnedTensor& t) {
  std::string s;
  int64_t n = static_cast<int64_t>(t.data.size() / std::max(1, quilt::rt::DTypeBits(t.dtype) / 8));
  for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i) {
    char buf[32];
    if (t.dtype == DType::kFloat32) {
      float v;
      std::memcpy(&v, t.data.data() + 4 * i, 4);
      std::snprintf(buf, sizeof buf, "%.6g", v);
    } else if (t.dtype == DType::kInt64) {
      int64_t v;
      std::memcpy(&v, t.data.data() + 8 * i, 8);
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else {
      return "";
    }
    s += (i ? ", " : "") + std::string(buf);
  }
  return "[" + s + (n > 8 ? ", ..." : "") + "]";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quilt-run: run a quilt package"};
  std::string package, npz, output_dir, code_cache;
  std::vector<std::string> input_args;
  int warmup = 0, iterations = 0, threads = 1;
  bool strict = false;
  app.add_option("package", package, "compiled package (.quilt)")->required();
  app.add_option("--input", input_args, "NAME=FILE (.npy or .pb)");
  app.add_option("--inputs", npz, "every input from one .npz (member name = input name)");
  app.add_option("--output-dir", output_dir, "write each output as DIR/NAME.npy");
  app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::NonNegativeNumber);
  app.add_option("--iterations", iterations, "timed runs")->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "threads per run")->check(CLI::PositiveNumber);
  app.add_flag("--strict", strict,
               "fail when a device's code does not load (or a portable package's accelerator is "
               "absent), instead of running its steps on the CPU");
  app.add_option("--code-cache", code_cache,
                 "keep the binaries of the device code built at session creation (OpenCL "
                 "programs) in this folder, keyed by device, driver and source, so the next "
                 "session skips the build");
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  std::unique_ptr<quilt::rt::LoadedPackage> loaded;
  quilt::rt::Status st = quilt::rt::LoadedPackage::FromFile(package, &loaded);
  if (!st.ok()) {
    std::cerr << "quilt-run: error: " << st.message() << "\n";
    return 1;
  }
  quilt::rt::SessionOptions options;
  options.threads = threads;
  options.strict = strict;
  options.code_cache_dir = code_cache;
  std::unique_ptr<quilt::rt::Session> session;
  auto created = std::chrono::steady_clock::now();
  st = quilt::rt::Session::Create(std::move(loaded), options, &session);
  if (!st.ok()) {
    std::cerr << "quilt-run: error: " << st.message() << "\n";
    return 1;
  }
  for (const std::string& note : session->notes()) std::cerr << "quilt-run: note: " << note << "\n";
  if (iterations > 0) {
    std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - created;
    std::cerr << "quilt-run: session created in " << std::fixed << std::setprecision(1)
              << ms.count() << " ms (devices, code builds, constants)\n";
  }
  std::vector<OwnedTensor> given;
  if (!npz.empty()) {
    auto all = quilt::tools::ReadNpz(npz);
    if (!all) {
      std::cerr << "quilt-run: error: " << all.error().ToString() << "\n";
      return 1;
    }
    given = std::move(*all);
  }
  for (const std::string& arg : input_args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "quilt-run: error: --input '" << arg << "': expected NAME=FILE\n";
      return 2;
    }
    auto t = quilt::tools::ReadTensors(arg.substr(eq + 1));
    if (!t) {
      std::cerr << "quilt-run: error: " << t.error().ToString() << "\n";
      return 1;
    }
    (*t)[0].name = arg.substr(0, eq);
    given.push_back(std::move((*t)[0]));
  }
  for (const auto& sig : session->inputs()) {
    bool have = std::any_of(given.begin(), given.end(),
                            [&](const OwnedTensor& t) { return t.name == sig.name; });
    if (have || sig.has_default) continue;
    OwnedTensor t;
    if (!RandomFill(sig, &t)) {
      std::cerr << "quilt-run: error: input '" << sig.name << "' is not given and its shape is not "
                << "static (" << sig.ToString() << "); pass it with --input or --inputs\n";
      return 1;
    }
    std::cerr << "quilt-run: input '" << sig.name << "' not given: using random values\n";
    given.push_back(std::move(t));
  }
  std::vector<quilt::rt::NamedTensor> inputs;
  for (OwnedTensor& t : given) {
    quilt::rt::NamedTensor n;
    n.name = t.name;
    n.tensor.dtype = t.dtype;
    n.tensor.shape = t.shape;
    n.tensor.data = t.data.data();
    inputs.push_back(std::move(n));
  }
  std::vector<OwnedTensor> outputs;
  for (int i = 0; i < warmup; ++i) {
    st = session->Run(inputs, &outputs);
    if (!st.ok()) break;
  }
  std::vector<double> times;
  int runs = std::max(1, iterations);
  for (int i = 0; i < runs && st.ok(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    st = session->Run(inputs, &outputs);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!st.ok()) {
    std::cerr << "quilt-run: error: " << st.message() << "\n";
    return 1;
  }
  for (const OwnedTensor& o : outputs) {
    std::cout << o.name << ": " << quilt::rt::DTypeName(o.dtype) << " "
              << quilt::rt::ShapeString(o.shape) << " " << Preview(o) << "\n";
    if (output_dir.empty()) continue;
    std::filesystem::create_directories(output_dir);
    quilt::Status w = quilt::tools::WriteNpy(output_dir + "/" + FileName(o.name) + ".npy", o);
    if (!w) {
      std::cerr << "quilt-run: error: " << w.error().ToString() << "\n";
      return 1;
    }
  }
  if (iterations > 0) {
    std::sort(times.begin(), times.end());
    double mean = 0;
    for (double t : times) mean += t;
    mean /= static_cast<double>(times.size());
    auto pct = [&](double p) {
      return times[std::min(times.size() - 1, static_cast<size_t>(p * (times.size() - 1) + 0.5))];
    };
    std::printf("latency over %zu runs (ms): min %.3f  median %.3f  mean %.3f  p90 %.3f\n",
                times.size(), times.front(), pct(0.5), mean, pct(0.9));
  }
  return 0;
}
