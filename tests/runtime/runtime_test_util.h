// Small packages built by hand (plain tables, no IR) and tensor helpers for runtime tests.
#pragma once

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/src/session.h"
#include "targets/package_spec.h"

namespace quilt::test {

// The threads of this process (Linux).
inline int ProcessThreads() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// y = x + c, x: float32 (n, 3), c = [1, 2, 3]: one symbol, one constant, one step.
inline compiler::PackageSpec AddConstantPackage() {
  compiler::PackageSpec spec;
  spec.devices.push_back({"llvm", "cpu", 0});
  compiler::GraphSpec g;
  g.name = "main";
  g.symbols = {"n"};
  g.dims = {
      {pkg::DimKind::Sym, 0, 0, 0}, {pkg::DimKind::Int, 0, 0, 3}, {pkg::DimKind::Int, 0, 0, 1}};
  auto f32 = static_cast<int32_t>(rt::DType::kFloat32);
  compiler::ValueSpec x{"x", pkg::ValueKind::Input, f32, 2, {0, 1}};
  compiler::ValueSpec c{"c", pkg::ValueKind::Constant, f32, 2, {2, 1}};
  c.buffer = 0;
  compiler::ValueSpec y{"y", pkg::ValueKind::Intermediate, f32, 2, {0, 1}};
  g.values = {x, c, y};
  g.inputs = {0};
  g.outputs = {2};
  compiler::StepSpec add;
  add.kernel = "add";
  add.inputs = {0, 1};
  add.input_arity = {1, 1};
  add.outputs = {2};
  add.source = "add0";
  g.steps = {add};
  g.arena_bytes = {0};
  spec.graphs.push_back(g);
  std::vector<float> cv = {1, 2, 3};
  auto bytes = std::make_shared<std::vector<uint8_t>>(12);
  std::memcpy(bytes->data(), cv.data(), 12);
  spec.buffers.push_back(bytes);
  return spec;
}

// A named input over `data` (borrowed: it must outlive the run), float32 or int64.
template <typename T>
inline rt::NamedTensor Input(const std::string& name, std::vector<T>& data, rt::Shape shape) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int64_t>);
  rt::NamedTensor t;
  t.name = name;
  t.tensor.dtype = std::is_same_v<T, float> ? rt::DType::kFloat32 : rt::DType::kInt64;
  t.tensor.shape = std::move(shape);
  t.tensor.data = data.data();
  return t;
}

inline std::vector<float> Floats(const rt::OwnedTensor& t) {
  std::vector<float> v(t.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

}  // namespace quilt::test
