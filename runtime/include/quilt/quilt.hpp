// C++ wrapper of the C API (quilt.h): RAII handles, errors as quilt::Exception.
//
//   quilt::Package package = quilt::Package::LoadFile("model.quilt");
//   quilt::Session session(package);
//   std::vector<float> pixels(1 * 3 * 48 * 192);
//   auto outputs = session.Run({quilt::Input("x", pixels.data(), {1, 3, 48, 192})});
//   const float* scores = outputs[0].Data<float>();
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "quilt/quilt.h"

namespace quilt {

class Exception : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void Check(quilt_status_t* st) {
  if (!st) return;
  std::string message = quilt_status_message(st);
  quilt_status_free(st);
  throw Exception(message);
}
}  // namespace detail

// An input: a borrowed view of caller memory.
struct InputTensor {
  std::string name;
  quilt_dtype_t dtype;
  std::vector<int64_t> shape;
  const void* data;
  size_t byte_size;
};

inline InputTensor Input(std::string name, const float* data, std::vector<int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return {std::move(name), QUILT_DTYPE_F32, std::move(shape), data, n * sizeof(float)};
}

// An output: owns its memory.
struct OutputTensor {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  template <typename T>
  const T* Data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

class Package {
 public:
  static Package LoadFile(const std::string& path) {
    quilt_package_t* p = nullptr;
    detail::Check(quilt_package_load_file(path.c_str(), &p));
    return Package(p);
  }
  static Package LoadMemory(const void* data, size_t size) {
    quilt_package_t* p = nullptr;
    detail::Check(quilt_package_load_memory(data, size, &p));
    return Package(p);
  }
  const quilt_package_t* get() const { return handle_.get(); }

 private:
  explicit Package(quilt_package_t* p) : handle_(p, quilt_package_free) {}
  std::shared_ptr<quilt_package_t> handle_;
};

class Session {
 public:
  explicit Session(const Package& package, int threads = 1, const char* devices = nullptr)
      : Session(package, Options(threads, devices)) {}
  // Every option (quilt_session_options_t: limits, the code cache's folder, strict).
  Session(const Package& package, const quilt_session_options_t& options) {
    quilt_session_t* s = nullptr;
    detail::Check(quilt_session_create(package.get(), &options, &s));
    handle_.reset(s, quilt_session_free);
  }
  std::vector<quilt_tensor_info_t> Inputs() const { return Infos(true); }
  std::vector<quilt_tensor_info_t> Outputs() const { return Infos(false); }

  // Thread-safe.
  std::vector<OutputTensor> Run(const std::vector<InputTensor>& inputs) const {
    std::vector<quilt_tensor_t> c;
    for (const InputTensor& in : inputs) {
      c.push_back({in.name.c_str(), in.dtype, static_cast<int32_t>(in.shape.size()),
                   in.shape.data(), in.data, in.byte_size});
    }
    quilt_outputs_t* raw = nullptr;
    detail::Check(quilt_session_run(handle_.get(), c.data(), c.size(), &raw));
    std::unique_ptr<quilt_outputs_t, void (*)(quilt_outputs_t*)> outs(raw, quilt_outputs_free);
    std::vector<OutputTensor> result;
    for (size_t i = 0; i < quilt_outputs_count(raw); ++i) {
      quilt_tensor_t t;
      detail::Check(quilt_outputs_get(raw, i, &t));
      const auto* b = static_cast<const uint8_t*>(t.data);
      result.push_back({t.name, t.dtype, std::vector<int64_t>(t.shape, t.shape + t.rank),
                        std::vector<uint8_t>(b, b + t.byte_size)});
    }
    return result;
  }

 private:
  static quilt_session_options_t Options(int threads, const char* devices) {
    quilt_session_options_t options{};
    options.threads = threads;
    options.devices = devices;
    return options;
  }
  std::vector<quilt_tensor_info_t> Infos(bool inputs) const {
    size_t n = inputs ? quilt_session_input_count(handle_.get())
                      : quilt_session_output_count(handle_.get());
    std::vector<quilt_tensor_info_t> infos(n);
    for (size_t i = 0; i < n; ++i) {
      detail::Check(inputs ? quilt_session_input_info(handle_.get(), i, &infos[i])
                           : quilt_session_output_info(handle_.get(), i, &infos[i]));
    }
    return infos;
  }
  std::shared_ptr<quilt_session_t> handle_;
};

}  // namespace quilt
