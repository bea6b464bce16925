// Small packages built by hand (plain tables, no IR) and tensor helpers for runtime tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "quilt/quilt.h"
#include "runtime/src/session.h"
#include "runtime/src/thread_pool.h"
#include "targets/package_spec.h"

namespace quilt::test {

// A package from its bytes (a failure to load fails the test and gives null).
inline std::shared_ptr<const rt::LoadedPackage> LoadPackage(const std::vector<uint8_t>& bytes) {
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p);
  EXPECT_TRUE(st.ok()) << st.message();
  return std::shared_ptr<const rt::LoadedPackage>(std::move(p));
}

// The threads of this process (Linux).
inline int ProcessThreads() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// A loop over [0, n) on `pool` (null: the calling thread), as kernels run theirs: every range in
// bounds and every index run exactly once.
inline void ExpectEachOnce(rt::ThreadPool* pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  rt::ParallelFor(pool, n, grain, [&](int64_t begin, int64_t end) {
    ASSERT_LE(0, begin);
    ASSERT_LT(begin, end);
    ASSERT_LE(end, n);
    for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i << " of " << n;
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

// A named input over `data` (borrowed: it must outlive the run), float32, int64 or int32.
template <typename T>
inline rt::NamedTensor Input(const std::string& name, std::vector<T>& data, rt::Shape shape) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int64_t> ||
                std::is_same_v<T, int32_t>);
  rt::NamedTensor t;
  t.name = name;
  t.tensor.dtype = std::is_same_v<T, float>     ? rt::DType::kFloat32
                   : std::is_same_v<T, int64_t> ? rt::DType::kInt64
                                                : rt::DType::kInt32;
  t.tensor.shape = std::move(shape);
  t.tensor.data = data.data();
  return t;
}

inline std::vector<float> Floats(const rt::OwnedTensor& t) {
  std::vector<float> v(t.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

// Runs `session` through the C API on one float32 input and returns output 0's values (none,
// with a failure recorded, where the run fails).
inline std::vector<float> RunThroughCApi(const quilt_session_t* session, const char* name,
                                         std::vector<float> x, std::vector<int64_t> shape) {
  quilt_tensor_t in = {name,         QUILT_DTYPE_F32, static_cast<int32_t>(shape.size()),
                       shape.data(), x.data(),        x.size() * sizeof(float)};
  quilt_outputs_t* outs = nullptr;
  quilt_status_t* st = quilt_session_run(session, &in, 1, &outs);
  if (st) {
    ADD_FAILURE() << quilt_status_message(st);
    quilt_status_free(st);
    return {};
  }
  quilt_tensor_t y;
  std::vector<float> values;
  if (quilt_outputs_get(outs, 0, &y) == nullptr) {
    const float* v = static_cast<const float*>(y.data);
    values.assign(v, v + y.byte_size / sizeof(float));
  } else {
    ADD_FAILURE() << "no output 0";
  }
  quilt_outputs_free(outs);
  return values;
}

}  // namespace quilt::test
