// A fixture for the tools' tests: a fresh folder per test, a small ONNX model, and writers for
// the files the tools read (.npy, zip archives as numpy's savez writes them).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "tests/importers/onnx_test_util.h"
#include "tests/tools/tool_runner.h"
#include "tools/tensor_io.h"

namespace quilt::testing {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A zip archive of stored members (CRCs left 0: not checked), as numpy's savez writes them; with
// `claimed_sizes`, the directory's sizes of each member are those instead of the real ones.
inline std::string StoredZip(const std::vector<std::pair<std::string, std::string>>& members,
                             const std::vector<uint64_t>& claimed_sizes = {}, int method = 0) {
  auto le = [](std::string& s, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string zip, dir;
  for (size_t m = 0; m < members.size(); ++m) {
    const auto& [name, data] = members[m];
    uint64_t size = m < claimed_sizes.size() ? claimed_sizes[m] : data.size();
    uint64_t offset = zip.size();
    le(zip, 0x04034b50, 4);
    le(zip, 20, 2), le(zip, 0, 2), le(zip, method, 2), le(zip, 0, 4), le(zip, 0, 4);
    le(zip, data.size(), 4), le(zip, size, 4), le(zip, name.size(), 2), le(zip, 0, 2);
    zip += name + data;
    le(dir, 0x02014b50, 4);
    le(dir, 20, 2), le(dir, 20, 2), le(dir, 0, 2), le(dir, method, 2), le(dir, 0, 4);
    le(dir, 0, 4);
    le(dir, data.size(), 4), le(dir, size, 4), le(dir, name.size(), 2);
    le(dir, 0, 2), le(dir, 0, 2), le(dir, 0, 2), le(dir, 0, 2), le(dir, 0, 4), le(dir, offset, 4);
    dir += name;
  }
  uint64_t dir_offset = zip.size();
  zip += dir;
  le(zip, 0x06054b50, 4), le(zip, 0, 2), le(zip, 0, 2), le(zip, members.size(), 2);
  le(zip, members.size(), 2), le(zip, dir.size(), 4), le(zip, dir_offset, 4), le(zip, 0, 2);
  return zip;
}

// A .npy file's bytes with a header written by hand: `header` is the dict's text.
inline std::string NpyWithHeader(const std::string& header, const std::string& data) {
  std::string h = header;
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(h.size() & 0xff));
  out.push_back(static_cast<char>(h.size() >> 8));
  return out + h + data;
}

class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("quilt_tools_") + info->test_suite_name() + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // y = sqrt(a + b) * sqrt(a + b), a: float32 (n, 3), b: float32 (1, 3).
  std::string Model() {
    OnnxGraph g;
    g.Input("a", onnx::TensorProto::FLOAT, {std::string("n"), int64_t{3}})
        .Input("b", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{3}})
        .Output("y/out", onnx::TensorProto::FLOAT);
    g.Node("Add", {"a", "b"}, {"t"}, "add0");
    g.Node("Sqrt", {"t"}, {"u"}, "sqrt0");
    g.Node("Mul", {"u", "u"}, {"y/out"}, "mul0");
    return Write("model.onnx", g.Bytes());
  }

  // y = log(a + b) * log(a + b): values between the steps, which the session plans into its
  // arena (a log joins no fused step).
  std::string ModelWithIntermediates() {
    OnnxGraph g;
    g.Input("a", onnx::TensorProto::FLOAT, {std::string("n"), int64_t{3}})
        .Input("b", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{3}})
        .Output("y/out", onnx::TensorProto::FLOAT);
    g.Node("Add", {"a", "b"}, {"t"}, "add0");
    g.Node("Log", {"t"}, {"u"}, "log0");
    g.Node("Mul", {"u", "u"}, {"y/out"}, "mul0");
    return Write("model_intermediates.onnx", g.Bytes());
  }

  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = Path(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  static rt::OwnedTensor Floats(const std::vector<float>& v, rt::Shape shape) {
    rt::OwnedTensor t;
    t.dtype = rt::DType::kFloat32;
    t.shape = std::move(shape);
    t.data.resize(v.size() * 4);
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
  }

  std::string Npy(const std::string& name, const std::vector<float>& v, rt::Shape shape) {
    return Write(name, tools::NpyBytes(Floats(v, std::move(shape))));
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // The names in the test's folder, sorted.
  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::filesystem::path dir_;
};

}  // namespace quilt::testing
