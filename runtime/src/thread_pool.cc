#include "runtime/src/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>

namespace quilt::rt {
namespace {

// The unit index of a loop that has ended: above any unit count.
constexpr uint64_t kClosed = 0xffffffffu;

// How long an idle worker (or a thread waiting for the workers) spins before it sleeps.
constexpr auto kSpinTime = std::chrono::microseconds(100);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until pred() holds or kSpinTime has passed; true when pred() holds.
template <typename P>
bool SpinUntil(P&& pred) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (pred()) return true;
    CpuRelax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kSpinTime) return pred();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  try {
    workers_.reserve(threads > 1 ? static_cast<size_t>(threads - 1) : 0);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  } catch (const std::exception&) {
    // std::system_error (no more threads) or bad_alloc: run with the workers already started.
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// Claims and runs ranges of the loop of `generation` until none is left.
void ThreadPool::Work(uint32_t generation) {
  const int64_t spread = 2 * static_cast<int64_t>(threads());
  uint64_t v = next_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(v >> 32) != generation) return;
    int64_t index = static_cast<int64_t>(v & 0xffffffffu);
    // Acquire: a unit count of the next loop is only seen once this loop is closed (Run), so a
    // compare-and-swap on this loop's `v` then fails.
    int64_t units = units_.load(std::memory_order_acquire);
    if (index >= units) return;
    int64_t take = std::max<int64_t>(1, (units - index) / spread);
    if (!next_.compare_exchange_weak(v, v + static_cast<uint64_t>(take),
                                     std::memory_order_acq_rel)) {
      continue;
    }
    // The range is ours: the loop cannot end (nor its fields change) before it completes.
    int64_t begin = index * unit_;
    int64_t end = std::min(n_, (index + take) * unit_);
    body_.call(body_.fn, begin, end);
    completed_.fetch_add(take, std::memory_order_acq_rel);
    v = next_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop() {
  uint32_t seen = 0;
  auto fresh = [&] {
    return static_cast<uint32_t>(next_.load(std::memory_order_acquire) >> 32) != seen ||
           stop_.load(std::memory_order_acquire);
  };
  for (;;) {
    if (!SpinUntil(fresh)) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleepers_;
      cv_.wait(lock, fresh);
      --sleepers_;
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = static_cast<uint32_t>(next_.load(std::memory_order_acquire) >> 32);
    Work(seen);
  }
}

void ThreadPool::Run(int64_t n, int64_t grain, Body body) {
  // Units of `grain` indices, fewer and longer where their count would not fit below kClosed.
  constexpr int64_t kMaxUnits = int64_t{1} << 30;
  int64_t unit = std::max(grain, (n + kMaxUnits - 1) / kMaxUnits);
  int64_t units = (n + unit - 1) / unit;
  bool expected = false;
  if (workers_.empty() || units <= 1 ||
      !busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
    body.call(body.fn, 0, n);
    return;
  }
  n_ = n;
  unit_ = unit;
  body_ = body;
  completed_.store(0, std::memory_order_relaxed);
  // Release: published after the last loop was closed (below), see Work.
  units_.store(units, std::memory_order_release);
  ++generation_;
  if (generation_ == 0) ++generation_;  // 0 is what a new worker has seen
  uint32_t generation = generation_;
  next_.store(static_cast<uint64_t>(generation) << 32, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sleepers_ > 0) cv_.notify_all();
  }
  Work(generation);
  auto done = [&] { return completed_.load(std::memory_order_acquire) == units; };
  while (!SpinUntil(done)) std::this_thread::yield();
  // Closed: no index of this generation is below a unit count any more. A worker that read this
  // loop's last `next_` before it ended could otherwise see the next loop's larger unit count
  // and claim more units of this generation (its compare-and-swap still matching), running the
  // next loop's body and counting extra units, after which that loop never completes.
  next_.store((static_cast<uint64_t>(generation) << 32) | kClosed, std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
}

SessionPools::SessionPools(int threads, int max_workers)
    : threads_(threads), max_workers_(max_workers) {
  if (threads_ > 1) Give(Take());
}

SessionPools::~SessionPools() = default;

ThreadPool* SessionPools::Take() {
  if (threads_ <= 1) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) {
    ThreadPool* p = free_.back();
    free_.pop_back();
    return p;
  }
  if (workers_ + threads_ - 1 > max_workers_) return nullptr;
  all_.push_back(std::make_unique<ThreadPool>(threads_));
  workers_ += all_.back()->threads() - 1;
  return all_.back().get();
}

void SessionPools::Give(ThreadPool* pool) {
  if (!pool) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(pool);
}

}  // namespace quilt::rt
