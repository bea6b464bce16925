// quilt-run: run a quilt package.
//
//   quilt-run OUT.quilt [--input NAME=FILE.npy]... [--inputs FILE.npz] [--output-dir DIR]
//             [--warmup W --iterations N] [--threads T] [--strict] [--code-cache DIR]
//             [--profile TRACE.json]
//
// Inputs come from .npy, .npz or ONNX .pb files (--input NAME=FILE.npz takes the member NAME,
// or the archive's only member); an input not given gets seeded random values when its shape is
// static (as trtexec does), else it is an error naming the symbolic dims. Prints each output's
// shape and first values, writes them into DIR as NAME.npy (NAME with every character but
// letters, digits and '-' replaced by '_', made unique; the file of each output is printed), and
// with --iterations prints min, median, mean and p90 latency. Exit 0, 1 on a failed load or run
// or a file that cannot be read or written, 2 for bad usage.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "runtime/src/session.h"
#include "tools/cli.h"
#include "tools/files.h"
#include "tools/tensor_io.h"

namespace {

using quilt::rt::DType;
using quilt::rt::OwnedTensor;

// The most threads, warmup and timed runs quilt-run takes: beyond, a typo rather than a plan.
constexpr int kMaxThreads = 1024;
constexpr int kMaxRuns = 1000000;

// File names in --output-dir for the outputs `names`, in order: each name with every character
// but letters, digits and '-' replaced by '_' (so none leaves the folder or hides as a dot
// file), cut to a length every file system takes, and numbered where two would meet (compared
// without case, for file systems that ignore it).
std::vector<std::string> OutputFileNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::set<std::string> used;
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  for (const std::string& name : names) {
    std::string base;
    for (char c : name.substr(0, 200))
      base.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_');
    if (base.empty()) base = "output";
    std::string file = base;
    for (int k = 2; used.count(lower(file)); ++k) file = base + "_" + std::to_string(k);
    used.insert(lower(file));
    out.push_back(file + ".npy");
  }
  return out;
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
  for (int64_t d : sig.dims) {
    // More elements than an int64 counts cannot be held in memory either.
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) throw std::bad_alloc();
  }
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

// A string as a JSON string literal.
std::string Json(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// `profile` as a Chrome trace (chrome://tracing, Perfetto): one track per device.
std::string ChromeTrace(const quilt::rt::RunProfile& profile) {
  std::string out = "{\"traceEvents\": [\n";
  std::vector<std::string> tracks;
  for (size_t i = 0; i < profile.steps.size(); ++i) {
    const quilt::rt::StepProfile& p = profile.steps[i];
    size_t tid = std::find(tracks.begin(), tracks.end(), p.device) - tracks.begin();
    if (tid == tracks.size()) tracks.push_back(p.device);
    char times[96];
    std::snprintf(times, sizeof(times), "\"ts\": %.3f, \"dur\": %.3f", p.start_us, p.duration_us);
    out += "  {\"name\": " + Json(p.op) + ", \"cat\": " + Json(p.kind) +
           ", \"ph\": \"X\", \"pid\": 0, \"tid\": " + std::to_string(tid) + ", " + times +
           ", \"args\": {\"node\": " + Json(p.node) + ", \"graph\": " + std::to_string(p.graph) +
           ", \"step\": " + std::to_string(p.step) + "}},\n";
  }
  for (size_t t = 0; t < tracks.size(); ++t) {
    out +=
        "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " + std::to_string(t) +
        ", \"args\": {\"name\": " + Json(tracks[t]) + "}}" + (t + 1 < tracks.size() ? ",\n" : "\n");
  }
  return out + "]}\n";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The median of each step over `runs`, then the time by op and device and the costliest steps.
void PrintProfile(const std::vector<quilt::rt::RunProfile>& runs, std::ostream& os) {
  std::map<std::pair<int, int>, std::vector<double>> by_step;
  std::vector<double> totals;
  for (const quilt::rt::RunProfile& r : runs) {
    totals.push_back(r.total_us);
    for (const quilt::rt::StepProfile& p : r.steps) {
      by_step[{p.graph, p.step}].push_back(p.duration_us);
    }
  }
  const quilt::rt::RunProfile& last = runs.back();
  struct Row {
    double us;
    const quilt::rt::StepProfile* step;
  };
  std::vector<Row> rows;
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> by_op;
  double sum = 0;
  for (const quilt::rt::StepProfile& p : last.steps) {
    double us = Median(by_step[{p.graph, p.step}]);
    rows.push_back({us, &p});
    auto& o = by_op[{p.op, p.device}];
    o.first += us;
    o.second += 1;
    sum += us;
  }
  double total = Median(totals);
  char line[256];
  std::snprintf(line, sizeof(line),
                "profile: median of %zu runs, each step waited for: %.3f ms a run, %.3f ms in "
                "its steps\n",
                runs.size(), total / 1000, sum / 1000);
  os << line << "  time by op (ms, % of the steps, steps):\n";
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [key, v] : by_op) {
    std::snprintf(line, sizeof(line), "%10.3f %5.1f%% %5d  %s on %s", v.first / 1000,
                  sum > 0 ? 100 * v.first / sum : 0.0, v.second, key.first.c_str(),
                  key.second.c_str());
    ops.push_back({v.first, line});
  }
  std::sort(ops.rbegin(), ops.rend());
  for (size_t i = 0; i < ops.size() && i < 15; ++i) os << "  " << ops[i].second << "\n";
  os << "  costliest steps (ms):\n";
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.us > b.us; });
  for (size_t i = 0; i < rows.size() && i < 10; ++i) {
    const quilt::rt::StepProfile& p = *rows[i].step;
    std::snprintf(line, sizeof(line), "%10.3f  graph %d step %d: %s on %s", rows[i].us / 1000,
                  p.graph, p.step, p.op.c_str(), p.device.c_str());
    os << "  " << line << (p.node.empty() ? "" : ", node '" + p.node + "'") << "\n";
  }
}

int Fail(const std::string& message) {
  std::cerr << "quilt-run: error: " << message << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"quilt-run: run a quilt package"};
  std::string package, npz, output_dir, code_cache, profile_file;
  std::vector<std::string> input_args;
  int warmup = 0, iterations = 0, threads = 1;
  bool strict = false, skip_checksum = false, map_file = false;
  quilt::rt::SessionLimits limits;
  std::string max_arena_bytes, max_run_bytes;
  double run_timeout = 0;
  app.add_option("package", package, "compiled package (.quilt)")->required();
  app.add_option("--input", input_args,
                 "NAME=FILE: .npy, .pb, or .npz (its member NAME, or its only member)");
  app.add_option("--inputs", npz, "every input from one .npz (member name = input name)");
  app.add_option("--output-dir", output_dir,
                 "write each output as DIR/NAME.npy (NAME made a safe, unique file name)");
  app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(0, kMaxRuns));
  app.add_option("--iterations", iterations, "timed runs")->check(CLI::Range(0, kMaxRuns));
  app.add_option("--threads", threads, "threads per run")->check(CLI::Range(1, kMaxThreads));
  app.add_flag("--strict", strict,
               "fail when a device's code does not load (or a portable package's accelerator is "
               "absent), instead of running its steps on the CPU");
  app.add_flag("--skip-checksum", skip_checksum,
               "load without verifying the package's checksum (for a package verified before, "
               "on storage nothing else writes)");
  app.add_flag("--map-file", map_file,
               "map the package file instead of reading it into memory (the file must then not "
               "change while the tool runs)");
  app.add_option("--max-threads", limits.max_threads,
                 "the most --threads a session accepts (default " +
                     std::to_string(limits.max_threads) + ")")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--max-workers", limits.max_workers,
                 "the most worker threads of all concurrent runs together (default " +
                     std::to_string(limits.max_workers) + ")")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--max-loop-iterations", limits.max_loop_iterations,
                 "the most iterations of one Loop in a run (default " +
                     std::to_string(limits.max_loop_iterations) + ")")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 62));
  app.add_option("--max-arena-bytes", max_arena_bytes,
                 "the largest working memory a package may plan on a device (default 64G)")
      ->check(quilt::tools::ByteSize());
  app.add_option("--max-run-bytes", max_run_bytes,
                 "the most memory one run may hold on all devices (default 1T)")
      ->check(quilt::tools::ByteSize());
  app.add_option("--run-timeout", run_timeout,
                 "cancel a run still going after this many seconds (it then fails)")
      ->check(CLI::Range(0.001, 1e6));
  app.add_option("--code-cache", code_cache,
                 "keep the binaries of the device code built at session creation (OpenCL "
                 "programs) in this folder, keyed by device, driver and source, so the next "
                 "session skips the build");
  app.add_option("--profile", profile_file,
                 "after the timed runs, time every step of 10 more runs (each step waited for "
                 "on its device, so slower than a plain run): the median time by op and the "
                 "costliest steps to stderr, the last run as a Chrome trace (chrome://tracing, "
                 "Perfetto) to this .json file");
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  std::vector<std::pair<std::string, std::string>> input_files;  // name, file
  for (const std::string& arg : input_args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
      std::cerr << "quilt-run: error: --input '" << arg << "': expected NAME=FILE\n";
      return 2;
    }
    input_files.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
  }
  // Every path before the package loads: a FIFO would block its reader forever, and an output
  // that cannot be written is better said before the runs than after.
  if (quilt::Status s = quilt::tools::CheckInputFile(package, "the package"); !s) {
    return Fail(s.error().ToString());
  }
  if (!profile_file.empty()) {
    if (quilt::Status s = quilt::tools::CheckOutputFile(profile_file, "the profile"); !s) {
      return Fail(s.error().ToString());
    }
  }
  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec || !std::filesystem::is_directory(output_dir, ec)) {
      return Fail("--output-dir '" + output_dir +
                  "': " + (ec ? ec.message() : "exists and is not a directory"));
    }
  }
  if (!max_arena_bytes.empty()) {
    limits.max_arena_bytes = *quilt::tools::ParseByteSize(max_arena_bytes);
  }
  if (!max_run_bytes.empty()) limits.max_run_bytes = *quilt::tools::ParseByteSize(max_run_bytes);
  quilt::rt::LoadOptions load_options;
  load_options.verify_checksum = !skip_checksum;
  load_options.map_file = map_file;
  std::unique_ptr<quilt::rt::LoadedPackage> loaded;
  quilt::rt::Status st = quilt::rt::LoadedPackage::FromFile(package, &loaded, load_options);
  if (!st.ok()) {
    std::cerr << "quilt-run: error: " << st.message() << "\n";
    return 1;
  }
  quilt::rt::SessionOptions options;
  options.threads = threads;
  options.strict = strict;
  options.code_cache_dir = code_cache;
  options.limits = limits;
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
    if (!all) return Fail("--inputs: " + all.error().ToString());
    given = std::move(*all);
  }
  for (const auto& [name, file] : input_files) {
    auto t = quilt::tools::ReadInputTensor(file, name);
    if (!t) return Fail("--input " + name + ": " + t.error().ToString());
    given.push_back(std::move(*t));
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
  // One run, cancelled past --run-timeout.
  auto run = [&](quilt::rt::RunProfile* profile) {
    if (run_timeout <= 0) return session->Run(inputs, &outputs, profile);
    quilt::rt::RunControl control;
    control.CancelAfter(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(run_timeout)));
    quilt::rt::Status s = session->Run(inputs, &outputs, profile, &control);
    if (s.code() == quilt::rt::StatusCode::kCancelled) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g", run_timeout);
      return quilt::rt::Status::Error(s.message() + " (--run-timeout " + seconds + " s)", s.code());
    }
    return s;
  };
  for (int i = 0; i < warmup; ++i) {
    st = run(nullptr);
    if (!st.ok()) break;
  }
  std::vector<double> times;
  int runs = std::max(1, iterations);
  times.reserve(static_cast<size_t>(runs));  // no allocation between the timed runs
  for (int i = 0; i < runs && st.ok(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    st = run(nullptr);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!st.ok()) {
    std::cerr << "quilt-run: error: " << st.message() << "\n";
    return 1;
  }
  std::vector<std::string> names;
  for (const OwnedTensor& o : outputs) names.push_back(o.name);
  std::vector<std::string> files = OutputFileNames(names);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OwnedTensor& o = outputs[i];
    std::cout << o.name << ": " << quilt::rt::DTypeName(o.dtype) << " "
              << quilt::rt::ShapeString(o.shape) << " " << Preview(o) << "\n";
    if (output_dir.empty()) continue;
    std::string path = output_dir + "/" + files[i];
    quilt::Status w = quilt::tools::WriteNpy(path, o);
    if (!w) return Fail("output '" + o.name + "': " + w.error().ToString());
    std::cerr << "quilt-run: output '" << o.name << "' written to " << path << "\n";
  }
  if (!profile_file.empty()) {
    std::vector<quilt::rt::RunProfile> profiles(10);
    for (quilt::rt::RunProfile& p : profiles) {
      st = run(&p);
      if (!st.ok()) {
        std::cerr << "quilt-run: error: " << st.message() << "\n";
        return 1;
      }
    }
    quilt::Status w = quilt::tools::WriteFileAtomically(profile_file, ChromeTrace(profiles.back()),
                                                        "the profile");
    if (!w) return Fail(w.error().ToString());
    PrintProfile(profiles, std::cerr);
    std::cerr << "quilt-run: wrote the profile of the last run to " << profile_file << "\n";
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

}  // namespace

int main(int argc, char** argv) {
  return quilt::tools::RunMain("quilt-run", [&] { return Main(argc, argv); });
}
