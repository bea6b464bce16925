#include "runtime/src/device/cpu_device.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "quilt/package_generated.h"
#include "runtime/src/block_pool.h"
#include "runtime/src/device/host_step.h"
#include "runtime/src/thread_pool.h"

namespace quilt::rt {
namespace {

// Host memory from the device's block pool, given back when the buffer dies. The buffer holds
// the pool, so a run's output handed to the caller may outlive the session.
class PoolBuffer final : public Buffer {
 public:
  PoolBuffer(std::shared_ptr<BlockPool> pool, BlockPool::Block block, uint64_t size)
      : Buffer(size), pool_(std::move(pool)), block_(std::move(block)) {}
  ~PoolBuffer() override { pool_->Give(std::move(block_)); }
  uint8_t* host() const override { return block_.mem.get(); }
  bool outlives_device() const override { return true; }

 private:
  std::shared_ptr<BlockPool> pool_;
  BlockPool::Block block_;
};

// Host memory someone else owns (the package's constants, a caller's input).
class BorrowedBuffer final : public Buffer {
 public:
  BorrowedBuffer(const void* host, uint64_t size)
      : Buffer(size), host_(static_cast<uint8_t*>(const_cast<void*>(host))) {}
  uint8_t* host() const override { return host_; }

 private:
  uint8_t* host_;
};

// Memory for the buffer objects the device hands out (a run makes one for each input it imports
// and each value sized only when it runs; a loop's body, at every iteration): blocks of the size
// first asked for, kept for the next object, so that a run in steady state does not allocate
// them. The allocators hold the pool, so it lives as long as its last object.
class ObjectPool {
 public:
  ~ObjectPool() {
    for (void* p : free_) ::operator delete(p);
  }
  void* Take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (size_ == 0) size_ = bytes;
      if (bytes == size_ && !free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
    }
    return ::operator new(bytes);
  }
  void Give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes == size_ && free_.size() < kMostKept) {
        free_.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  static constexpr size_t kMostKept = 4096;
  std::mutex mu_;
  size_t size_ = 0;
  std::vector<void*> free_;
};

template <class T>
struct PoolAllocator {
  using value_type = T;
  explicit PoolAllocator(std::shared_ptr<ObjectPool> p) : pool(std::move(p)) {}
  template <class U>
  PoolAllocator(const PoolAllocator<U>& other) : pool(other.pool) {}  // NOLINT: rebinding
  T* allocate(size_t n) { return static_cast<T*>(pool->Take(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { pool->Give(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>& other) const {
    return pool == other.pool;
  }
  std::shared_ptr<ObjectPool> pool;
};

uint8_t* Resolve(const BufferRef& ref) { return HostAddress(ref); }

class CpuStep final : public PreparedStep {
 public:
  CpuStep(KernelFn fn, const pkg::Step& step) : fn(fn), index(step.attrs()) {}
  KernelFn fn;
  mutable StepCache cache;  // what the kernel derives from its constant inputs
  AttrIndex index;          // its attributes, for the kernel's lookups at every run
};

// Work runs as it is given, on the calling thread and the run's thread pool.
class DoneEvent final : public Event {
 public:
  Status Wait() override { return Status::Ok(); }
};

class CpuQueue final : public Queue {
 public:
  CpuQueue(SessionPools& pools, int threads)
      : pools_(pools), pool_(pools.Take()), context_(Resolve, threads, pool_) {}
  ~CpuQueue() override { pools_.Give(pool_); }

  Status Run(const PreparedStep& step, const StepArgs& args) override {
    const auto& cpu = static_cast<const CpuStep&>(step);
    return context_.Run(cpu.fn, args, &cpu.cache, &cpu.index);
  }
  Status Copy(BufferRef src, BufferRef dst) override {
    if (src.size) std::memmove(HostAddress(dst), HostAddress(src), src.size);
    return Status::Ok();
  }
  Status Write(const void* host, BufferRef dst) override {
    if (dst.size) std::memcpy(HostAddress(dst), host, dst.size);
    return Status::Ok();
  }
  Status Read(BufferRef src, void* host) override {
    if (src.size) std::memcpy(host, HostAddress(src), src.size);
    return Status::Ok();
  }
  Status Signal(std::unique_ptr<Event>* out) override {
    *out = std::make_unique<DoneEvent>();
    return Status::Ok();
  }
  // Work runs on the calling thread, so waiting for the event is waiting on this thread.
  Status Wait(Event& event) override { return event.Wait(); }
  Status Finish() override { return Status::Ok(); }
  Status WaitOnHost() override { return Status::Ok(); }  // its work is done as it is given

 private:
  SessionPools& pools_;
  ThreadPool* pool_;  // this run's threads (null with one thread)
  HostStepContext context_;
};

class CpuDevice final : public Device {
 public:
  CpuDevice(const DeviceOptions& options)
      : threads_(options.threads), pools_(options.threads, options.max_workers) {
    info_.kind = DeviceKind::kCpu;
    info_.id = 0;
    info_.name = "host CPU";
    info_.host_addressable = true;
    info_.buffer_alignment = 64;
  }
  const DeviceInfo& info() const override { return info_; }
  Status Allocate(uint64_t bytes, BufferPtr* out) override {
    BlockPool::Block block = pool_->Take(static_cast<size_t>(bytes));
    if (!block.mem) {
      return Status::Error("out of memory allocating " + std::to_string(bytes) + " bytes");
    }
    *out = std::allocate_shared<PoolBuffer>(PoolAllocator<PoolBuffer>(buffers_), pool_,
                                            std::move(block), bytes);
    return Status::Ok();
  }
  Status Import(const void* host, uint64_t bytes, BufferPtr* out) override {
    *out =
        std::allocate_shared<BorrowedBuffer>(PoolAllocator<BorrowedBuffer>(borrowed_), host, bytes);
    return Status::Ok();
  }
  Status Prepare(const pkg::Step& step, const Executable* /*code*/,
                 std::unique_ptr<PreparedStep>* out) const override {
    KernelFn fn;
    std::string_view name;
    QUILT_RETURN_IF_ERROR(FindHostKernel(step, DeviceKind::kCpu, &fn, &name));
    *out = std::make_unique<CpuStep>(fn, step);
    return Status::Ok();
  }
  Status CreateQueue(std::unique_ptr<Queue>* out) override {
    *out = std::make_unique<CpuQueue>(pools_, threads_);
    return Status::Ok();
  }

 private:
  DeviceInfo info_;
  int threads_;
  std::shared_ptr<BlockPool> pool_ = std::make_shared<BlockPool>();  // kept between runs
  SessionPools pools_;  // worker threads, one set per concurrent run
  // The buffer objects' memory, by kind.
  std::shared_ptr<ObjectPool> buffers_ = std::make_shared<ObjectPool>();
  std::shared_ptr<ObjectPool> borrowed_ = std::make_shared<ObjectPool>();
};

}  // namespace

Status CreateCpuDevice(int /*id*/, const DeviceOptions& options, std::unique_ptr<Device>* out) {
  *out = std::make_unique<CpuDevice>(options);
  return Status::Ok();
}

}  // namespace quilt::rt
