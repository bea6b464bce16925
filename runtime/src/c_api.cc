// The C API over the C++ runtime: handles wrap shared objects, errors become statuses, and no
// exception crosses the boundary.
#include <cstring>
#include <memory>
#include <new>
#include <sstream>

#include "quilt/quilt.h"
#include "runtime/src/package.h"
#include "runtime/src/session.h"

struct quilt_status {
  std::string message;
  quilt_status_code_t code = QUILT_STATUS_ERROR;
};
struct quilt_run_control {
  quilt::rt::RunControl control;
};
struct quilt_package {
  std::shared_ptr<const quilt::rt::LoadedPackage> package;
};
struct quilt_session {
  std::unique_ptr<quilt::rt::Session> session;
  // C views of the signature, built once.
  struct Info {
    std::vector<const char*> dim_names;
  };
  std::vector<Info> inputs, outputs;
};
struct quilt_outputs {
  std::vector<quilt::rt::OwnedTensor> tensors;
};

namespace {

using quilt::rt::Status;

quilt_status_t* ToC(const Status& st) {
  if (st.ok()) return nullptr;
  quilt_status_code_t code = st.code() == quilt::rt::StatusCode::kCancelled ? QUILT_STATUS_CANCELLED
                             : st.code() == quilt::rt::StatusCode::kLimit   ? QUILT_STATUS_LIMIT
                                                                            : QUILT_STATUS_ERROR;
  return new (std::nothrow) quilt_status{st.message(), code};
}

quilt_status_t* Error(const char* message) { return new (std::nothrow) quilt_status{message}; }

template <typename F>
quilt_status_t* Guard(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Error("out of memory");
  } catch (const std::exception& e) {
    return Error(e.what());
  } catch (...) {
    return Error("internal error");
  }
}

void FillInfo(const quilt::rt::TensorSignature& sig, const quilt_session::Info& names,
              quilt_tensor_info_t* out) {
  out->name = sig.name.c_str();
  out->dtype = static_cast<int32_t>(sig.dtype);
  out->rank = sig.rank;
  out->dims = sig.dims.data();
  out->dim_names = names.dim_names.data();
  out->has_default = sig.has_default ? 1 : 0;
}

std::vector<quilt_session::Info> NamesOf(const std::vector<quilt::rt::TensorSignature>& sigs) {
  std::vector<quilt_session::Info> infos;
  for (const auto& sig : sigs) {
    quilt_session::Info info;
    for (const std::string& n : sig.dim_names)
      info.dim_names.push_back(n.empty() ? nullptr : n.c_str());
    infos.push_back(std::move(info));
  }
  return infos;
}

}  // namespace

extern "C" {

const char* quilt_status_message(const quilt_status_t* status) {
  return status ? status->message.c_str() : "ok";
}
void quilt_status_free(quilt_status_t* status) { delete status; }

const char* quilt_version(void) { return "0.1.0"; }
const char* quilt_package_format_version(void) {
  static const std::string version =
      std::to_string(quilt::rt::kFormatMajor) + "." + std::to_string(quilt::rt::kFormatMinor);
  return version.c_str();
}

quilt_status_t* quilt_package_load_file(const char* path, quilt_package_t** out_package) {
  return quilt_package_load_file_flags(path, 0, out_package);
}

quilt_status_t* quilt_package_load_file_flags(const char* path, unsigned flags,
                                              quilt_package_t** out_package) {
  if (!path || !out_package) return Error("quilt_package_load_file: null argument");
  *out_package = nullptr;
  constexpr unsigned kKnown = QUILT_LOAD_SKIP_CHECKSUM | QUILT_LOAD_MAP_FILE;
  if (flags & ~kKnown) {
    return Error(("quilt_package_load_file_flags: unknown flags " + std::to_string(flags & ~kKnown))
                     .c_str());
  }
  return Guard([&]() -> quilt_status_t* {
    std::unique_ptr<quilt::rt::LoadedPackage> p;
    quilt::rt::LoadOptions options;
    options.verify_checksum = !(flags & QUILT_LOAD_SKIP_CHECKSUM);
    options.map_file = (flags & QUILT_LOAD_MAP_FILE) != 0;
    Status st = quilt::rt::LoadedPackage::FromFile(path, &p, options);
    if (!st.ok()) return ToC(st);
    *out_package = new quilt_package{std::move(p)};
    return nullptr;
  });
}

quilt_status_t* quilt_package_load_memory(const void* data, size_t size,
                                          quilt_package_t** out_package) {
  if (!out_package) return Error("quilt_package_load_memory: null argument");
  *out_package = nullptr;
  return Guard([&]() -> quilt_status_t* {
    std::unique_ptr<quilt::rt::LoadedPackage> p;
    Status st = quilt::rt::LoadedPackage::FromMemory(data, size, &p);
    if (!st.ok()) return ToC(st);
    *out_package = new quilt_package{std::move(p)};
    return nullptr;
  });
}

void quilt_package_free(quilt_package_t* package) { delete package; }

quilt_status_t* quilt_session_create(const quilt_package_t* package,
                                     const quilt_session_options_t* options,
                                     quilt_session_t** out_session) {
  if (!package || !out_session) return Error("quilt_session_create: null argument");
  *out_session = nullptr;
  return Guard([&]() -> quilt_status_t* {
    quilt::rt::SessionOptions opts;
    if (options) {
      opts.threads = options->threads == 0 ? 1 : options->threads;
      if (options->max_threads > 0) opts.limits.max_threads = options->max_threads;
      if (options->max_loop_iterations > 0) {
        opts.limits.max_loop_iterations = options->max_loop_iterations;
      }
      if (options->max_arena_bytes > 0) {
        opts.limits.max_arena_bytes = static_cast<uint64_t>(options->max_arena_bytes);
      }
      if (options->max_workers > 0) opts.limits.max_workers = options->max_workers;
      if (options->max_run_bytes > 0) {
        opts.limits.max_run_bytes = static_cast<uint64_t>(options->max_run_bytes);
      }
      if (options->code_cache_dir) opts.code_cache_dir = options->code_cache_dir;
      opts.strict = options->strict != 0;
      if (options->devices) {
        std::stringstream ss(options->devices);
        std::string kind;
        while (std::getline(ss, kind, ',')) {
          if (!kind.empty()) opts.devices.push_back(kind);
        }
      }
    }
    auto s = std::make_unique<quilt_session>();
    Status st = quilt::rt::Session::Create(package->package, opts, &s->session);
    if (!st.ok()) return ToC(st);
    s->inputs = NamesOf(s->session->inputs());
    s->outputs = NamesOf(s->session->outputs());
    *out_session = s.release();
    return nullptr;
  });
}

void quilt_session_free(quilt_session_t* session) { delete session; }

size_t quilt_session_input_count(const quilt_session_t* session) {
  return session ? session->session->inputs().size() : 0;
}
size_t quilt_session_output_count(const quilt_session_t* session) {
  return session ? session->session->outputs().size() : 0;
}

size_t quilt_session_note_count(const quilt_session_t* session) {
  return session ? session->session->notes().size() : 0;
}

const char* quilt_session_note(const quilt_session_t* session, size_t index) {
  if (!session || index >= session->session->notes().size()) return nullptr;
  return session->session->notes()[index].c_str();
}

quilt_status_t* quilt_session_input_info(const quilt_session_t* session, size_t index,
                                         quilt_tensor_info_t* out_info) {
  if (!session || !out_info) return Error("quilt_session_input_info: null argument");
  if (index >= session->inputs.size()) return Error("quilt_session_input_info: index out of range");
  FillInfo(session->session->inputs()[index], session->inputs[index], out_info);
  return nullptr;
}

quilt_status_t* quilt_session_output_info(const quilt_session_t* session, size_t index,
                                          quilt_tensor_info_t* out_info) {
  if (!session || !out_info) return Error("quilt_session_output_info: null argument");
  if (index >= session->outputs.size()) {
    return Error("quilt_session_output_info: index out of range");
  }
  FillInfo(session->session->outputs()[index], session->outputs[index], out_info);
  return nullptr;
}

quilt_status_code_t quilt_status_code(const quilt_status_t* status) {
  return status ? status->code : QUILT_STATUS_OK;
}

quilt_run_control_t* quilt_run_control_create(void) {
  return new (std::nothrow) quilt_run_control_t;
}
void quilt_run_control_cancel(quilt_run_control_t* control) {
  if (control) control->control.Cancel();
}
void quilt_run_control_cancel_after(quilt_run_control_t* control, int64_t milliseconds) {
  if (control) control->control.CancelAfter(std::chrono::milliseconds(milliseconds));
}
void quilt_run_control_free(quilt_run_control_t* control) { delete control; }

quilt_status_t* quilt_session_run(const quilt_session_t* session, const quilt_tensor_t* inputs,
                                  size_t num_inputs, quilt_outputs_t** out_outputs) {
  return quilt_session_run_with(session, inputs, num_inputs, nullptr, out_outputs);
}

quilt_status_t* quilt_session_run_with(const quilt_session_t* session, const quilt_tensor_t* inputs,
                                       size_t num_inputs, const quilt_run_control_t* control,
                                       quilt_outputs_t** out_outputs) {
  if (!session || !out_outputs || (num_inputs && !inputs)) {
    return Error("quilt_session_run: null argument");
  }
  *out_outputs = nullptr;
  return Guard([&]() -> quilt_status_t* {
    std::vector<quilt::rt::NamedTensor> named;
    for (size_t i = 0; i < num_inputs; ++i) {
      const quilt_tensor_t& in = inputs[i];
      if (!in.name) return Error("quilt_session_run: an input has no name");
      if (in.rank < 0 || (in.rank > 0 && !in.shape)) {
        return ToC(Status::Error("input '" + std::string(in.name) + "': bad rank or shape"));
      }
      quilt::rt::NamedTensor t;
      t.name = in.name;
      if (!quilt::rt::IsValidDType(in.dtype)) {
        return ToC(Status::Error("input '" + t.name + "': unknown element type " +
                                 std::to_string(in.dtype)));
      }
      t.tensor.dtype = static_cast<quilt::rt::DType>(in.dtype);
      t.tensor.shape.assign(in.shape, in.shape + in.rank);
      t.tensor.data = const_cast<void*>(in.data);
      for (int64_t d : t.tensor.shape) {
        if (d < 0) return ToC(Status::Error("input '" + t.name + "' has a negative dim"));
      }
      std::optional<size_t> need = quilt::rt::CheckedByteSize(t.tensor.dtype, t.tensor.shape);
      if (!need) {
        return ToC(Status::Error("input '" + t.name + "': its shape " +
                                 quilt::rt::ShapeString(t.tensor.shape) +
                                 " has a dim past 2^50 or more than 2^50 elements, the most a "
                                 "tensor holds"));
      }
      if (*need != in.byte_size) {
        return ToC(Status::Error("input '" + t.name + "': " + std::to_string(in.byte_size) +
                                 " bytes given, its dtype and shape need " +
                                 std::to_string(*need)));
      }
      named.push_back(std::move(t));
    }
    auto out = std::make_unique<quilt_outputs>();
    Status st =
        session->session->Run(named, &out->tensors, nullptr, control ? &control->control : nullptr);
    if (!st.ok()) return ToC(st);
    *out_outputs = out.release();
    return nullptr;
  });
}

size_t quilt_outputs_count(const quilt_outputs_t* outputs) {
  return outputs ? outputs->tensors.size() : 0;
}

quilt_status_t* quilt_outputs_get(const quilt_outputs_t* outputs, size_t index,
                                  quilt_tensor_t* out_tensor) {
  if (!outputs || !out_tensor) return Error("quilt_outputs_get: null argument");
  if (index >= outputs->tensors.size()) return Error("quilt_outputs_get: index out of range");
  const quilt::rt::OwnedTensor& t = outputs->tensors[index];
  out_tensor->name = t.name.c_str();
  out_tensor->dtype = static_cast<int32_t>(t.dtype);
  out_tensor->rank = static_cast<int32_t>(t.shape.size());
  out_tensor->shape = t.shape.data();
  out_tensor->data = t.data.data();
  out_tensor->byte_size = t.data.size();
  return nullptr;
}

void quilt_outputs_free(quilt_outputs_t* outputs) { delete outputs; }

}  // extern "C"
