// What the OpenCL kernel tests share (opencl_emit_test.cc, opencl_half_test.cc): inputs made of
// distinct values, and a model compiled for OpenCL alone (--strict: every op runs generated
// OpenCL C) and for the CPU, both run on the same inputs, the CPU's reference kernels giving the
// expected values. OPENCL_OR_SKIP skips a test, saying why, where no OpenCL device opens.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runtime/src/device/device.h"
#include "runtime/src/session.h"

namespace quilt::opencl_test {

#define OPENCL_OR_SKIP()                                                                        \
  std::unique_ptr<rt::Device> device_;                                                          \
  if (rt::Status st_ = rt::CreateDevice(rt::DeviceKind::kOpenCl, 0, {}, &device_); !st_.ok()) { \
    GTEST_SKIP() << "no OpenCL device here: " << st_.message();                                 \
  }

// An input tensor that owns its bytes.
struct Input {
  std::string name;
  rt::DType dtype;
  rt::Shape shape;
  std::vector<uint8_t> bytes;
};

// Distinct values of both signs, not in order; `drift` times the index added (0: as many of each
// sign when shift is 11 * scale).
Input Floats(const std::string& name, rt::Shape shape, float scale = 0.37f, float shift = 1.3f,
             float drift = 0.01f);
// float16 values: Floats' values (rounded to float16), then `special` ones over the first.
Input Halves(const std::string& name, rt::Shape shape, const std::vector<float>& special = {},
             float scale = 0.37f, float shift = 1.3f);
Input Int64s(const std::string& name, const std::vector<int64_t>& v, rt::Shape shape = {});
// A float32 constant of `shape` as IR text, holding the values Floats gives.
std::string ConstFloats(const std::vector<int64_t>& shape, float scale = 0.37f, float shift = 1.3f);
// The inputs as a session takes them (pointing into their bytes).
std::vector<rt::NamedTensor> Named(const std::vector<Input>& inputs);
// Compiles `model` for `devices` and runs it on `inputs`; counts its dispatch steps.
void CompileAndRun(const std::string& model, std::vector<std::string> devices, bool strict,
                   const std::vector<Input>& inputs, std::vector<rt::OwnedTensor>* out,
                   int* dispatches);
// Runs `model` on OpenCL alone and on the CPU: at least `min_dispatches` steps of generated code
// (and at most `max_dispatches`), and the same outputs (float32 within 1e-5 + 1e-4 relative, NaN
// where the CPU has NaN; float16 within `half_ulps` units in the last place, NaN where the CPU has
// NaN; other types exact).
void ExpectOpenClMatchesCpu(const std::string& model, const std::vector<Input>& inputs,
                            int min_dispatches,
                            int max_dispatches = std::numeric_limits<int>::max(),
                            int half_ulps = 0);

}  // namespace quilt::opencl_test
