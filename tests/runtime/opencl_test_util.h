// Hand-built packages with OpenCL dispatch steps, for the OpenCL device tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt {

// y = 2 x + 1 on OpenCL, x: float32 (n, 3) given on the host and y returned to it: copy in, one
// dispatch step of the package's OpenCL C, copy out.
constexpr const char* kAxpb = R"(
__kernel void axpb(__global const float* x, ulong xo, __global float* y, ulong yo, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  __global const float* xp = (__global const float*)((__global const char*)x + xo);
  __global float* yp = (__global float*)((__global char*)y + yo);
  yp[i] = 2.0f * xp[i] + 1.0f;
}
)";

inline compiler::PackageSpec AxpbPackage(const std::string& source, const std::string& entry) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.devices.push_back({"opencl", "opencl", 0});
  compiler::GraphSpec& g = spec.graphs[0];
  auto f32 = static_cast<int32_t>(rt::DType::kFloat32);
  g.dims.push_back({pkg::DimKind::Mul, 0, 1, 0});  // dim 3: n * 3
  g.values = {{"x", pkg::ValueKind::Input, f32, 2, {0, 1}, 0},
              {"x_cl", pkg::ValueKind::Intermediate, f32, 2, {0, 1}, 1},
              {"y_cl", pkg::ValueKind::Intermediate, f32, 2, {0, 1}, 1},
              {"y", pkg::ValueKind::Intermediate, f32, 2, {0, 1}, 0}};
  g.inputs = {0};
  g.outputs = {3};
  compiler::StepSpec in{"copy", 1, {0}, {1}, {1}};
  in.kind = pkg::StepKind::Copy;
  compiler::StepSpec run{entry, 1, {1}, {1}, {2}};
  run.kind = pkg::StepKind::Dispatch;
  run.code = 0;
  run.dims = {3};
  run.attrs.Set("local", std::vector<int64_t>{8});
  run.source = "axpb0";
  compiler::StepSpec out{"copy", 0, {2}, {1}, {3}};
  out.kind = pkg::StepKind::Copy;
  g.steps = {in, run, out};
  g.arena_bytes = {0, 0};
  spec.buffers = {std::make_shared<std::vector<uint8_t>>(source.begin(), source.end())};
  spec.code.push_back({1, "opencl-c", 0, {entry}, "opencl"});
  return spec;
}

inline rt::Status Open(const compiler::PackageSpec& spec, std::unique_ptr<rt::Session>* s,
                       const rt::SessionOptions& options = {}) {
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  QUILT_RETURN_IF_ERROR(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p));
  return rt::Session::Create(std::move(p), options, s);
}

}  // namespace quilt
