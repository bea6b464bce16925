// The OpenCL device (libquilt_opencl.so), through the OpenCL ICD loader: whatever OpenCL
// platforms the machine has (PoCL on a CPU, a GPU's driver) are its devices, numbered in
// platform order. Buffers are cl_mem; each run has one in-order command queue per device;
// events are OpenCL events (an event of another device is waited for on the host). Code comes
// from the package: an "opencl-c" section is built once per session into a program, and its
// dispatch steps run its kernels under the convention of dispatch.h.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quilt/package_generated.h"
#include "runtime/src/device/device.h"
#include "runtime/src/device/plugin.h"
#include "targets/opencl/device/dispatch.h"

namespace quilt::rt {
namespace {

const char* ErrorName(cl_int e) {
  switch (e) {
    case CL_DEVICE_NOT_FOUND:
      return "CL_DEVICE_NOT_FOUND";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
      return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
      return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:
      return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
      return "CL_INVALID_VALUE";
    case CL_INVALID_KERNEL_NAME:
      return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS:
      return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE:
      return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE:
      return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_BUFFER_SIZE:
      return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_ARG_SIZE:
      return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_ARG_VALUE:
      return "CL_INVALID_ARG_VALUE";
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return nullptr;
  }
}

Status ClError(const std::string& what, cl_int e) {
  const char* name = ErrorName(e);
  return Status::Error(what + " failed: OpenCL error " + std::to_string(e) +
                       (name ? std::string(" (") + name + ")" : ""));
}

#define QUILT_CL(call, what)                        \
  do {                                              \
    cl_int _e = (call);                             \
    if (_e != CL_SUCCESS) return ClError(what, _e); \
  } while (0)

// A string property through OpenCL's two-call protocol (size, then bytes); "" when absent.
template <typename Get>
std::string InfoString(Get get) {
  size_t n = 0;
  if (get(0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  get(n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string DeviceString(cl_device_id d, cl_device_info what) {
  return InfoString(
      [&](size_t n, void* v, size_t* r) { return clGetDeviceInfo(d, what, n, v, r); });
}

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  return InfoString(
      [&](size_t n, void* v, size_t* r) { return clGetPlatformInfo(p, what, n, v, r); });
}

// FNV-1a, 64 bits: names a cache entry. The entry also holds its whole key, checked on reading,
// so a collision costs a rebuild, never a wrong program.
uint64_t Fnv64(std::string_view bytes, uint64_t h = 1469598103934665603ull) {
  for (char c : bytes) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The program binary cache: one file per (device, driver, build options, source), holding the
// key, a NUL, then the driver's binary. Written to a temporary name and renamed, so concurrent
// sessions never read half a file.
class ProgramCache {
 public:
  ProgramCache(const std::string& dir, const std::string& device, const std::string& options,
               std::string_view source) {
    if (dir.empty()) return;
    key_ = "quilt opencl program 1\n" + device + "\n" + options + "\n" + Hex(Fnv64(source)) + " " +
           std::to_string(source.size());
    path_ = (std::filesystem::path(dir) / (Hex(Fnv64(key_)) + ".clbin")).string();
  }

  // The cached binary, or empty when there is none (or another key's).
  std::string Read() const {
    if (path_.empty()) return "";
    std::ifstream in(path_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() <= key_.size() + 1 || bytes.compare(0, key_.size(), key_) != 0 ||
        bytes[key_.size()] != '\0') {
      return "";
    }
    return bytes.substr(key_.size() + 1);
  }

  void Write(cl_program program) const {
    if (path_.empty()) return;
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) !=
            CL_SUCCESS ||
        size == 0) {
      return;
    }
    std::string binary(size, '\0');
    unsigned char* ptr = reinterpret_cast<unsigned char*>(binary.data());
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) {
      return;
    }
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
    std::string tmp = path_ + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(key_.data(), static_cast<std::streamsize>(key_.size()));
      out.put('\0');
      out.write(binary.data(), static_cast<std::streamsize>(binary.size()));
      if (!out) {
        out.close();
        std::filesystem::remove(tmp, ec);
        return;
      }
    }
    std::filesystem::rename(tmp, path_, ec);
    if (ec) std::filesystem::remove(tmp, ec);
  }

 private:
  std::string key_, path_;
};

// Every OpenCL device of the machine, in platform order: what `opencl:N` numbers.
struct ClDeviceEntry {
  cl_platform_id platform;
  cl_device_id device;
  std::string name;
};

Status ListDevices(std::vector<ClDeviceEntry>* out) {
  cl_uint num_platforms = 0;
  cl_int e = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (e == -1001 || (e == CL_SUCCESS && num_platforms == 0)) {
    return Status::Error(
        "this machine has no OpenCL platform (no ICD registered under "
        "/etc/OpenCL/vendors, or OCL_ICD_VENDORS points elsewhere)");
  }
  QUILT_CL(e, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(num_platforms);
  QUILT_CL(clGetPlatformIDs(num_platforms, platforms.data(), nullptr), "clGetPlatformIDs");
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
    std::vector<cl_device_id> devices(n);
    QUILT_CL(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, devices.data(), nullptr), "clGetDeviceIDs");
    for (cl_device_id d : devices) {
      out->push_back({p, d,
                      DeviceString(d, CL_DEVICE_NAME) + " (" + PlatformString(p, CL_PLATFORM_NAME) +
                          ", " + DeviceString(d, CL_DRIVER_VERSION) + ")"});
    }
  }
  return Status::Ok();
}

class ClBuffer final : public Buffer {
 public:
  ClBuffer(cl_mem mem, uint64_t size) : Buffer(size), mem_(mem) {}
  ~ClBuffer() override { clReleaseMemObject(mem_); }
  cl_mem mem() const { return mem_; }

 private:
  cl_mem mem_;
};

cl_mem MemOf(const BufferRef& ref) { return static_cast<ClBuffer*>(ref.buffer)->mem(); }

class ClEvent final : public Event {
 public:
  explicit ClEvent(cl_event e) : event_(e) {}
  ~ClEvent() override { clReleaseEvent(event_); }
  Status Wait() override {
    QUILT_CL(clWaitForEvents(1, &event_), "waiting for an OpenCL event");
    return Status::Ok();
  }
  cl_event event() const { return event_; }

 private:
  cl_event event_;
};

class ClProgram final : public Executable {
 public:
  explicit ClProgram(cl_program p) : program_(p) {}
  ~ClProgram() override { clReleaseProgram(program_); }
  cl_program program() const { return program_; }

 private:
  cl_program program_;
};

// A dispatch step: its kernel object (arguments are set and the launch enqueued under the lock,
// since runs of one session may share it), and its launch shape.
class ClStep final : public PreparedStep {
 public:
  ClStep(cl_kernel k, std::vector<size_t> local, std::string what, bool checked)
      : kernel_(k), local_(std::move(local)), what_(std::move(what)), checked_(checked) {}
  ~ClStep() override { clReleaseKernel(kernel_); }
  cl_kernel kernel() const { return kernel_; }
  const std::vector<size_t>& local() const { return local_; }
  const std::string& what() const { return what_; }
  // Whether the kernel checks its indices and reports through the run's error word.
  bool checked() const { return checked_; }
  std::mutex& mutex() const { return mutex_; }

 private:
  cl_kernel kernel_;
  std::vector<size_t> local_;
  std::string what_;
  bool checked_;
  mutable std::mutex mutex_;
};

class ClQueue final : public Queue {
 public:
  explicit ClQueue(cl_command_queue q) : queue_(q) {}
  ~ClQueue() override {
    clFinish(queue_);
    if (error_) clReleaseMemObject(error_);
    clReleaseCommandQueue(queue_);
  }

  Status Run(const PreparedStep& prepared, const StepArgs& args) override {
    const auto& step = static_cast<const ClStep&>(prepared);
    std::vector<size_t> global, local;
    size_t rank = step.local().empty() ? 1 : step.local().size();
    if (args.dims.size() < rank) {
      return Status::Error(step.what() + ": its launch needs " + std::to_string(rank) +
                           " dims, the step has " + std::to_string(args.dims.size()));
    }
    for (size_t i = 0; i < rank; ++i) {
      size_t n = static_cast<size_t>(args.dims[i]);
      if (n == 0) return Status::Ok();  // nothing to compute
      size_t l = step.local().empty() ? 0 : step.local()[i];
      global.push_back(l ? (n + l - 1) / l * l : n);
      local.push_back(l);
    }
    std::lock_guard<std::mutex> lock(step.mutex());
    cl_kernel k = step.kernel();
    cl_uint arg = 0;
    auto tensor = [&](const DeviceTensor* t) -> Status {
      cl_mem mem = t ? MemOf(t->data) : nullptr;
      cl_ulong offset = t ? t->data.offset : 0;
      QUILT_CL(clSetKernelArg(k, arg++, sizeof(cl_mem), t ? &mem : nullptr),
               step.what() + ": setting argument " + std::to_string(arg - 1));
      QUILT_CL(clSetKernelArg(k, arg++, sizeof(cl_ulong), &offset),
               step.what() + ": setting argument " + std::to_string(arg - 1));
      return Status::Ok();
    };
    for (const DeviceTensor* t : args.inputs) QUILT_RETURN_IF_ERROR(tensor(t));
    for (const DeviceTensor* t : args.outputs) QUILT_RETURN_IF_ERROR(tensor(t));
    for (int64_t d : args.dims) {
      cl_long v = d;
      QUILT_CL(clSetKernelArg(k, arg++, sizeof(cl_long), &v),
               step.what() + ": setting argument " + std::to_string(arg - 1));
    }
    if (step.checked()) {
      // The run's error word (made zero on first use) and this launch's number in it.
      if (!error_) {
        cl_context context = nullptr;
        QUILT_CL(
            clGetCommandQueueInfo(queue_, CL_QUEUE_CONTEXT, sizeof(context), &context, nullptr),
            "finding the OpenCL queue's context");
        uint8_t zeros[kDispatchErrorBytes] = {};
        cl_int e = CL_SUCCESS;
        error_ = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                kDispatchErrorBytes, zeros, &e);
        if (e != CL_SUCCESS) return ClError("allocating the run's OpenCL error word", e);
      }
      checked_.push_back(&step);
      cl_int seq = static_cast<cl_int>(checked_.size());
      QUILT_CL(clSetKernelArg(k, arg++, sizeof(cl_mem), &error_),
               step.what() + ": setting argument " + std::to_string(arg - 1));
      QUILT_CL(clSetKernelArg(k, arg++, sizeof(cl_int), &seq),
               step.what() + ": setting argument " + std::to_string(arg - 1));
    }
    QUILT_CL(
        clEnqueueNDRangeKernel(queue_, k, static_cast<cl_uint>(rank), nullptr, global.data(),
                               step.local().empty() ? nullptr : local.data(), 0, nullptr, nullptr),
        step.what() + ": launching");
    return Status::Ok();
  }

  Status Copy(BufferRef src, BufferRef dst) override {
    if (src.size == 0) return Status::Ok();
    QUILT_CL(clEnqueueCopyBuffer(queue_, MemOf(src), MemOf(dst), src.offset, dst.offset, src.size,
                                 0, nullptr, nullptr),
             "an OpenCL copy");
    return Status::Ok();
  }

  // The bytes are copied aside and handed to the driver without blocking; the copy is freed
  // when the write is done.
  Status Write(const void* host, BufferRef dst) override {
    if (dst.size == 0) return Status::Ok();
    auto* staged = new std::vector<uint8_t>(static_cast<const uint8_t*>(host),
                                            static_cast<const uint8_t*>(host) + dst.size);
    cl_event done = nullptr;
    cl_int e = clEnqueueWriteBuffer(queue_, MemOf(dst), CL_FALSE, dst.offset, dst.size,
                                    staged->data(), 0, nullptr, &done);
    if (e != CL_SUCCESS) {
      delete staged;
      return ClError("an OpenCL write", e);
    }
    e = clSetEventCallback(
        done, CL_COMPLETE,
        [](cl_event, cl_int, void* data) { delete static_cast<std::vector<uint8_t>*>(data); },
        staged);
    clReleaseEvent(done);
    if (e != CL_SUCCESS) return ClError("an OpenCL write's completion callback", e);
    return Status::Ok();
  }

  Status Read(BufferRef src, void* host) override {
    if (src.size == 0) return Status::Ok();
    QUILT_CL(clEnqueueReadBuffer(queue_, MemOf(src), CL_FALSE, src.offset, src.size, host, 0,
                                 nullptr, nullptr),
             "an OpenCL read");
    return Status::Ok();
  }

  Status Signal(std::unique_ptr<Event>* out) override {
    cl_event e = nullptr;
    QUILT_CL(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &e), "an OpenCL marker");
    clFlush(queue_);  // the work before it starts now, not when someone waits
    *out = std::make_unique<ClEvent>(e);
    return Status::Ok();
  }

  Status Wait(Event& event) override {
    if (auto* cl = dynamic_cast<ClEvent*>(&event)) {
      cl_event e = cl->event();
      QUILT_CL(clEnqueueBarrierWithWaitList(queue_, 1, &e, nullptr), "an OpenCL barrier");
      return Status::Ok();
    }
    // Another device's event: the work given after this may not start before it, so wait now.
    return event.Wait();
  }

  Status Finish() override {
    QUILT_CL(clFinish(queue_), "finishing the OpenCL queue");
    if (!error_) return Status::Ok();
    uint8_t word[kDispatchErrorBytes] = {};
    QUILT_CL(
        clEnqueueReadBuffer(queue_, error_, CL_TRUE, 0, sizeof(word), word, 0, nullptr, nullptr),
        "reading the run's OpenCL error word");
    int32_t seq = 0, kind = 0;
    int64_t index = 0, size = 0;
    std::memcpy(&seq, word, 4);
    std::memcpy(&kind, word + 4, 4);
    std::memcpy(&index, word + 8, 8);
    std::memcpy(&size, word + 16, 8);
    if (seq <= 0) return Status::Ok();
    std::string what = static_cast<size_t>(seq) <= checked_.size()
                           ? checked_[static_cast<size_t>(seq) - 1]->what()
                           : "a checked kernel (launch " + std::to_string(seq) + ")";
    if (kind == 1) return Status::Error(what + ": cannot pad an empty axis in this mode");
    return Status::Error(what + ": index " + std::to_string(index) +
                         " is out of bounds for an axis of size " + std::to_string(size));
  }

 private:
  cl_command_queue queue_;
  cl_mem error_ = nullptr;  // the run's error word, once a checked kernel runs
  // The checked launches, by q_seq - 1 (the session's prepared steps outlive its runs' queues).
  std::vector<const ClStep*> checked_;
};

class ClDevice final : public Device {
 public:
  ClDevice(int id, const ClDeviceEntry& entry, cl_context context, std::string cache_dir)
      : device_(entry.device), context_(context), cache_dir_(std::move(cache_dir)) {
    info_.kind = DeviceKind::kOpenCl;
    info_.id = id;
    info_.name = entry.name;
    info_.host_addressable = false;
    cl_uint align_bits = 0;
    clGetDeviceInfo(device_, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits,
                    nullptr);
    info_.buffer_alignment = std::max<uint64_t>(64, align_bits / 8);
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(device_, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr);
    options_ = kBuildOptions;
    if (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) options_ += kCorrectlyRoundedDivideSqrt;
  }
  ~ClDevice() override { clReleaseContext(context_); }

  const DeviceInfo& info() const override { return info_; }

  Status Allocate(uint64_t bytes, BufferPtr* out) override {
    cl_int e = CL_SUCCESS;
    // OpenCL refuses empty buffers; an empty tensor still gets a handle.
    cl_mem mem =
        clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<uint64_t>(bytes, 1), nullptr, &e);
    if (e != CL_SUCCESS) {
      return ClError("allocating " + std::to_string(bytes) + " bytes on " + info_.name, e);
    }
    *out = std::make_shared<ClBuffer>(mem, bytes);
    return Status::Ok();
  }

  Status Import(const void* host, uint64_t bytes, BufferPtr* out) override {
    if (bytes == 0) return Allocate(0, out);
    cl_int e = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                                const_cast<void*>(host), &e);
    if (e != CL_SUCCESS) {
      return ClError("copying " + std::to_string(bytes) + " bytes to " + info_.name, e);
    }
    *out = std::make_shared<ClBuffer>(mem, bytes);
    return Status::Ok();
  }

  Status Load(const CodeBlob& code, std::unique_ptr<Executable>* out) override {
    if (code.format != "opencl-c") {
      return Status::Error("the OpenCL device runs code of format 'opencl-c', not '" +
                           std::string(code.format) + "'");
    }
    const char* source = reinterpret_cast<const char*>(code.bytes);
    size_t length = code.size;
    ProgramCache cache(cache_dir_, info_.name, options_, std::string_view(source, length));
    if (cl_program cached = FromBinary(cache.Read())) {
      *out = std::make_unique<ClProgram>(cached);
      return Status::Ok();
    }
    cl_int e = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(context_, 1, &source, &length, &e);
    if (e != CL_SUCCESS) return ClError("clCreateProgramWithSource", e);
    auto holder = std::make_unique<ClProgram>(program);
    e = clBuildProgram(program, 1, &device_, options_.c_str(), nullptr, nullptr);
    if (e != CL_SUCCESS) {
      std::string log = InfoString([&](size_t n, void* v, size_t* r) {
        return clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, n, v, r);
      });
      while (!log.empty() && log.back() == '\n') log.pop_back();
      return Status::Error(ClError("building the OpenCL program on " + info_.name, e).message() +
                           "; the build log:\n" + log);
    }
    cache.Write(program);
    *out = std::move(holder);
    return Status::Ok();
  }

  // A program built from a cached binary; null when there is none or the driver refuses it (a
  // damaged or stale entry), and then the source is built again.
  cl_program FromBinary(const std::string& binary) const {
    if (binary.empty()) return nullptr;
    size_t size = binary.size();
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    cl_int status = CL_SUCCESS, e = CL_SUCCESS;
    cl_program program =
        clCreateProgramWithBinary(context_, 1, &device_, &size, &bytes, &status, &e);
    if (e != CL_SUCCESS || status != CL_SUCCESS) {
      if (program) clReleaseProgram(program);
      return nullptr;
    }
    if (clBuildProgram(program, 1, &device_, options_.c_str(), nullptr, nullptr) != CL_SUCCESS) {
      clReleaseProgram(program);
      return nullptr;
    }
    return program;
  }

  Status Prepare(const pkg::Step& step, const Executable* code,
                 std::unique_ptr<PreparedStep>* out) const override {
    std::string name = step.kernel() ? step.kernel()->str() : "";
    if (step.kind() != pkg::StepKind::Dispatch || !code) {
      return Status::Error("the OpenCL device has no library kernel for " + name);
    }
    std::string what = name;
    if (step.source() && step.source()->size()) what += ", node '" + step.source()->str() + "'";
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(static_cast<const ClProgram*>(code)->program(), name.c_str(), &e);
    if (e != CL_SUCCESS) return ClError("finding kernel '" + name + "' in its program", e);
    std::vector<size_t> local;
    bool checked = false;
    if (step.attrs()) {
      for (const pkg::Attr* a : *step.attrs()) {
        if (!a->name()) continue;
        if (a->name()->string_view() == kDispatchLocalAttr && a->ints()) {
          for (int64_t l : *a->ints()) local.push_back(static_cast<size_t>(l));
        }
        if (a->name()->string_view() == kDispatchCheckedAttr) {
          checked =
              (a->type() == pkg::AttrType::Bool || a->type() == pkg::AttrType::Int) && a->i() != 0;
        }
      }
    }
    auto prepared = std::make_unique<ClStep>(k, local, what, checked);
    // The kernel's parameters must be what the convention passes: (buffer, offset) per input and
    // output, then one long per dim of the step (and the error word and launch number when it
    // checks).
    cl_uint num_args = 0;
    clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(num_args), &num_args, nullptr);
    size_t want = 2 * (step.inputs()->size() + step.outputs()->size()) +
                  (step.dims() ? step.dims()->size() : 0) + (checked ? 2 : 0);
    if (num_args != want) {
      return Status::Error("kernel '" + name + "' takes " + std::to_string(num_args) +
                           " arguments; the step passes " + std::to_string(want) +
                           " (a buffer and an offset per tensor, a long per dim" +
                           (checked ? ", the error word and the launch number" : "") + ")");
    }
    if (!local.empty() &&
        (local.size() > 3 || (step.dims() && step.dims()->size() < local.size()))) {
      return Status::Error("kernel '" + name + "': a local size of rank " +
                           std::to_string(local.size()) + " needs as many dims");
    }
    *out = std::move(prepared);
    return Status::Ok();
  }

  Status CreateQueue(std::unique_ptr<Queue>* out) override {
    cl_int e = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueue(context_, device_, 0, &e);
    if (e != CL_SUCCESS) return ClError("creating a queue on " + info_.name, e);
    *out = std::make_unique<ClQueue>(q);
    return Status::Ok();
  }

 private:
  DeviceInfo info_;
  cl_device_id device_;
  cl_context context_;
  std::string cache_dir_;  // program binaries (DeviceOptions::code_cache_dir); empty: none
  std::string options_;    // the build options for this device
};

Status CreateClDevice(int id, const DeviceOptions& options, std::unique_ptr<Device>* out) {
  std::vector<ClDeviceEntry> devices;
  QUILT_RETURN_IF_ERROR(ListDevices(&devices));
  if (id < 0 || id >= static_cast<int>(devices.size())) {
    std::string list;
    for (size_t i = 0; i < devices.size(); ++i) {
      list += (i ? "; " : "") + std::to_string(i) + ": " + devices[i].name;
    }
    return Status::Error("no OpenCL device " + std::to_string(id) + "; this machine has " +
                         std::to_string(devices.size()) + " (" + list + ")");
  }
  cl_int e = CL_SUCCESS;
  cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(devices[id].platform), 0};
  cl_context context = clCreateContext(props, 1, &devices[id].device, nullptr, nullptr, &e);
  if (e != CL_SUCCESS) return ClError("creating a context on " + devices[id].name, e);
  *out = std::make_unique<ClDevice>(id, devices[id], context, options.code_cache_dir);
  return Status::Ok();
}

const DevicePlugin kPlugin = {kDevicePluginAbi, DeviceKind::kOpenCl, &CreateClDevice};

}  // namespace
}  // namespace quilt::rt

extern "C" __attribute__((visibility("default"))) const quilt::rt::DevicePlugin*
quilt_device_plugin() {
  return &quilt::rt::kPlugin;
}
