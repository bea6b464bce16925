// A session: a loaded package made ready to run on this machine's devices. Creation checks
// everything static (devices present, a kernel for every step) so that a run only checks what
// depends on the data. `Run` is const and keeps all per-run state in its own workspace, so many
// threads may run one session at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "runtime/src/kernel.h"
#include "runtime/src/package.h"

namespace quilt::rt {

// Limits a session keeps, each with a default safe for any model we know; creation or a run past
// one fails with a StatusCode::kLimit status that names the limit and how to raise it.
struct SessionLimits {
  // SessionOptions::threads at most.
  int max_threads = 256;
  // Worker threads of all the session's concurrent runs together (a run of T threads has T - 1):
  // a run that would start more computes on its calling thread alone (not an error).
  int max_workers = 1024;
  // Iterations of one while_loop (ONNX Loop) in one run.
  int64_t max_loop_iterations = 10'000'000;
  // Bytes of a device's arena (the memory plan's working memory of one run), as the package
  // states it: a damaged or hostile package is refused at creation, not at its first run.
  uint64_t max_arena_bytes = uint64_t{64} << 30;
  // Bytes one run holds at once on all its devices: its arenas and the values outside them
  // (data-dependent shapes, loop bodies), subgraphs included.
  uint64_t max_run_bytes = uint64_t{1} << 40;
};

// A caller's handle on runs in flight (Session::Run with a control): Cancel, from any thread,
// makes each run using it stop before its next step (or loop iteration) and return a
// StatusCode::kCancelled status. A control stays cancelled; use a new one for later runs.
class RunControl {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  // Cancels runs still going `timeout` after this call (a run's own time budget).
  void CancelAfter(std::chrono::nanoseconds timeout) {
    deadline_.store((std::chrono::steady_clock::now() + timeout).time_since_epoch().count(),
                    std::memory_order_relaxed);
  }
  bool cancelled() const {
    if (cancelled_.load(std::memory_order_relaxed)) return true;
    int64_t deadline = deadline_.load(std::memory_order_relaxed);
    return deadline != kNone &&
           std::chrono::steady_clock::now().time_since_epoch().count() >= deadline;
  }

 private:
  static constexpr int64_t kNone = INT64_MAX;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> deadline_{kNone};
};

struct SessionOptions {
  int threads = 1;
  SessionLimits limits;
  // Where devices cache the binaries of the code they build (DeviceOptions::code_cache_dir).
  std::string code_cache_dir;
  // Device kinds the session may use ("cpu", "cuda", "opencl"); empty: every kind.
  std::vector<std::string> devices;
  // Devices of the package (by index) run by the opaque test device instead of their own kind:
  // for tests of the executor (see runtime/src/device/test_device.h).
  std::vector<int> run_on_test_device;
  // A device whose code does not load (an OpenCL program that fails to build) hands its steps to
  // the CPU, which runs each with the library kernel of its op; notes() says so. So does an
  // accelerator that is absent here when the package is portable (quiltc --portable). Strict:
  // both are errors instead.
  bool strict = false;
};

// One input or output of the entry graph as the package declares it; symbolic dims as -1 with
// their names in `dim_names` ("" for static dims).
struct TensorSignature {
  std::string name;
  DType dtype = DType::kVoid;
  int rank = -1;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
  bool has_default = false;
  std::string ToString() const;  // "x: float32 (n, 3, 224, 224)"
};

struct NamedTensor {
  std::string name;
  Tensor tensor;  // borrowed: must stay valid during the run
};

// An output's bytes: a vector of its own, or memory of the run's handed over whole (Hold), so
// that a host output is neither copied nor freed and allocated again at every run: the memory
// goes back to its session's pool when this lets it go. Read it as a vector of bytes; a copy of
// it is a copy of the bytes, and changing its size or contents (resize, assign, clear) first
// gives held memory up for a vector of its own.
class OutputBytes {
 public:
  OutputBytes() = default;
  OutputBytes(std::vector<uint8_t> bytes) : own_(std::move(bytes)) {}  // NOLINT: as a vector
  OutputBytes(const OutputBytes& other) : own_(other.begin(), other.end()) {}
  OutputBytes(OutputBytes&& other) noexcept = default;
  OutputBytes& operator=(const OutputBytes& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  OutputBytes& operator=(OutputBytes&& other) noexcept = default;
  OutputBytes& operator=(std::vector<uint8_t> bytes) {
    Drop();
    own_ = std::move(bytes);
    return *this;
  }

  // Takes `size` bytes at `data`, which `owner` keeps alive, in place of what this held.
  void Hold(std::shared_ptr<const void> owner, uint8_t* data, size_t size) {
    own_.clear();
    held_ = std::shared_ptr<uint8_t>(std::move(owner), data);
    held_size_ = size;
  }
  bool held() const { return held_ != nullptr; }

  uint8_t* data() { return held_ ? held_.get() : own_.data(); }
  const uint8_t* data() const { return held_ ? held_.get() : own_.data(); }
  size_t size() const { return held_ ? held_size_ : own_.size(); }
  bool empty() const { return size() == 0; }
  uint8_t* begin() { return data(); }
  uint8_t* end() { return data() + size(); }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size(); }
  uint8_t& operator[](size_t i) { return data()[i]; }
  const uint8_t& operator[](size_t i) const { return data()[i]; }

  template <std::input_iterator It>
  void assign(It first, It last) {
    Drop();
    own_.assign(first, last);
  }
  void assign(size_t n, uint8_t value) {
    Drop();
    own_.assign(n, value);
  }
  void resize(size_t n) {  // keeps the first bytes, as a vector's resize
    if (held_) own_.assign(held_.get(), held_.get() + std::min(n, held_size_));
    Drop();
    own_.resize(n);
  }
  void clear() {
    Drop();
    own_.clear();
  }

  friend bool operator==(const OutputBytes& a, const OutputBytes& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  void Drop() {
    held_.reset();
    held_size_ = 0;
  }
  std::vector<uint8_t> own_;
  // Set: the bytes are here (pointing into the owner Hold took, which it keeps), not own_.
  std::shared_ptr<uint8_t> held_;
  size_t held_size_ = 0;
};

struct OwnedTensor {
  std::string name;
  DType dtype = DType::kVoid;
  Shape shape;
  OutputBytes data;
};

// Where a profiled run spent its time, step by step (Session::Run with a profile). Each step is
// timed from when the executor starts it until its device has finished it: the run waits for
// every queue after each step, so a profiled run is slower than a plain one, and its steps do not
// overlap.
struct StepProfile {
  int graph = 0;        // 0: the entry graph; others: subgraphs (If branches, loop bodies)
  int step = 0;         // index in its graph
  std::string kind;     // "kernel", "dispatch", "copy", "control"
  std::string op;       // the op ("nn.conv2d"), or the builtin ("copy", "if", "shape_expr")
  std::string node;     // the ONNX node it came from; may be empty
  std::string device;   // the target of the device that ran it ("opencl", "llvm")
  double start_us = 0;  // from the start of the run
  double duration_us = 0;
};

struct RunProfile {
  std::vector<StepProfile> steps;
  double total_us = 0;
};

class Session {
 public:
  ~Session();
  static Status Create(std::shared_ptr<const LoadedPackage> package, const SessionOptions& options,
                       std::unique_ptr<Session>* out);
  const std::vector<TensorSignature>& inputs() const { return inputs_; }
  const std::vector<TensorSignature>& outputs() const { return outputs_; }
  Status Run(const std::vector<NamedTensor>& inputs, std::vector<OwnedTensor>* outputs) const;
  // The same, timing each step into `profile` (see StepProfile).
  Status Run(const std::vector<NamedTensor>& inputs, std::vector<OwnedTensor>* outputs,
             RunProfile* profile, const RunControl* control = nullptr) const;
  // What creation decided that the package did not say: a device whose steps run on the CPU
  // instead, and why. Empty when everything runs where the package placed it.
  const std::vector<std::string>& notes() const { return notes_; }

  struct Plans;  // what creation made ready: devices, constants, prepared steps

 private:
  Session() = default;
  Status CheckInputs(const std::vector<NamedTensor>& inputs,
                     std::vector<const Tensor*>* by_position) const;
  std::string SignatureText() const;

  std::shared_ptr<const LoadedPackage> package_;
  SessionOptions options_;
  std::vector<TensorSignature> inputs_, outputs_;
  std::vector<std::string> notes_;
  std::unique_ptr<Plans> plans_;
};

}  // namespace quilt::rt
