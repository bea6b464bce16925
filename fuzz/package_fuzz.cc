// Fuzzes the package loader and what runs a package: LoadedPackage::FromMemory (the checksum is
// skipped, so that mutated bytes reach the FlatBuffers verifier and the semantic check), then
// Session::Create on the CPU and one run with small inputs. A package that passes the checks must
// run or fail with a status, never crash, hang or allocate without bound: the session's limits
// (SessionLimits) are set below the fuzzer's memory limit, and the run has a time budget, as an
// application that runs packages it did not make would set them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/src/package.h"
#include "runtime/src/session.h"

namespace {

using namespace quilt::rt;

// At most this many elements per input: a run on small inputs.
constexpr int64_t kMaxInputElements = 4096;

// Small values that are valid indices and sizes for most ops, and nonzero divisors.
void Fill(DType dtype, int64_t n, std::vector<uint8_t>* bytes) {
  bytes->assign(DTypeBytes(dtype, n), 0);
  for (int64_t i = 0; i < n; ++i) {
    int v = static_cast<int>(i % 3) + 1;
    uint8_t* at = bytes->data();
    switch (dtype) {
      case DType::kFloat32: {
        float f = 0.5f * static_cast<float>(v);
        std::memcpy(at + 4 * i, &f, 4);
        break;
      }
      case DType::kFloat64: {
        double d = 0.5 * v;
        std::memcpy(at + 8 * i, &d, 8);
        break;
      }
      case DType::kFloat16: {
        uint16_t h = FloatToHalf(0.5f * static_cast<float>(v));
        std::memcpy(at + 2 * i, &h, 2);
        break;
      }
      case DType::kInt64: {
        int64_t x = v;
        std::memcpy(at + 8 * i, &x, 8);
        break;
      }
      case DType::kInt32: {
        int32_t x = v;
        std::memcpy(at + 4 * i, &x, 4);
        break;
      }
      case DType::kBool:
      case DType::kUInt8:
      case DType::kInt8:
        at[i] = static_cast<uint8_t>(v & 1);
        break;
      default:  // other types: zeros
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LoadOptions load;
  load.verify_checksum = false;
  std::unique_ptr<LoadedPackage> package;
  Status st = LoadedPackage::FromMemory(data, size, &package, load);
  if (!st.ok()) {
    if (st.message().empty()) {
      std::fprintf(stderr, "a refused package without a message\n");
      std::abort();
    }
    return 0;
  }
  SessionOptions options;
  options.devices = {"cpu"};
  // Kernels may hold temporaries of a few times their output's size beyond these.
  options.limits.max_arena_bytes = uint64_t{64} << 20;
  options.limits.max_run_bytes = uint64_t{64} << 20;
  options.limits.max_loop_iterations = 10'000;
  std::unique_ptr<Session> session;
  if (!Session::Create(std::move(package), options, &session).ok()) return 0;

  std::vector<std::vector<uint8_t>> storage;
  std::vector<NamedTensor> inputs;
  for (const TensorSignature& sig : session->inputs()) {
    if (DTypeBits(sig.dtype) == 0) return 0;
    NamedTensor t;
    t.name = sig.name;
    t.tensor.dtype = sig.dtype;
    int64_t n = 1;
    for (int64_t d : sig.dims) {
      int64_t dim = d < 0 ? 2 : d;  // symbolic dims: 2
      t.tensor.shape.push_back(dim);
      if (dim != 0 && n > kMaxInputElements / dim) return 0;
      n *= dim;
    }
    storage.emplace_back();
    Fill(sig.dtype, n, &storage.back());
    inputs.push_back(std::move(t));
  }
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i].tensor.data = storage[i].data();
  std::vector<OwnedTensor> outputs;
  RunControl control;
  control.CancelAfter(std::chrono::seconds(2));
  (void)session->Run(inputs, &outputs, nullptr, &control);
  return 0;
}
