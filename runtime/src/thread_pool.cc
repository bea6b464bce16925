#include "runtime/src/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>

namespace quilt::rt {
namespace {

// A slot's units [begin, end), packed as end << 32 | begin.
constexpr uint64_t Pack(int64_t begin, int64_t end) {
  return static_cast<uint64_t>(end) << 32 | static_cast<uint64_t>(begin);
}
constexpr int64_t Begin(uint64_t v) { return static_cast<int64_t>(v & 0xffffffffu); }
constexpr int64_t End(uint64_t v) { return static_cast<int64_t>(v >> 32); }

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

ThreadPool::ThreadPool(int threads) : slots_(new Slot[threads > 1 ? threads : 1]) {
  try {
    workers_.reserve(threads > 1 ? static_cast<size_t>(threads - 1) : 0);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
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

void ThreadPool::RunUnits(int64_t first, int64_t count) {
  // The units are ours: the loop cannot end (nor its fields change) before they complete.
  body_.call(body_.fn, first * unit_, std::min(n_, (first + count) * unit_));
  completed_.fetch_add(count, std::memory_order_acq_rel);
}

// Runs thread `self`'s share from its front, then takes from the end of the others' shares,
// until every share is empty.
void ThreadPool::Work(int self) {
  const int threads = this->threads();
  for (;;) {
    // Acquire (here and in every compare-and-swap): a slot's units are published after the
    // loop's fields (Run).
    std::atomic<uint64_t>& own = slots_[self].range;
    uint64_t v = own.load(std::memory_order_acquire);
    while (Begin(v) < End(v)) {
      int64_t take = (End(v) - Begin(v) + 1) / 2;
      if (!own.compare_exchange_weak(v, v + static_cast<uint64_t>(take),
                                     std::memory_order_acq_rel)) {
        continue;
      }
      RunUnits(Begin(v), take);
      v = own.load(std::memory_order_acquire);
    }
    bool took = false;
    for (int k = 1; k < threads && !took; ++k) {
      std::atomic<uint64_t>& other = slots_[(self + k) % threads].range;
      uint64_t w = other.load(std::memory_order_acquire);
      while (Begin(w) < End(w)) {
        int64_t take = std::max<int64_t>(1, (End(w) - Begin(w)) / 2);
        if (other.compare_exchange_weak(w, Pack(Begin(w), End(w) - take),
                                        std::memory_order_acq_rel)) {
          RunUnits(End(w) - take, take);
          took = true;
          break;
        }
      }
    }
    if (!took) return;
  }
}

void ThreadPool::WorkerLoop(int self) {
  uint32_t seen = 0;
  auto fresh = [&] {
    return generation_.load(std::memory_order_acquire) != seen ||
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
    seen = generation_.load(std::memory_order_acquire);
    Work(self);
  }
}

void ThreadPool::Run(int64_t n, int64_t grain, Body body) {
  // Units of `grain` indices, fewer and longer where their count would not fit in a slot.
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
  // Every slot is empty (the last loop completed); a thread still looking at that loop may
  // claim from a slot as soon as it is filled, which is a claim in this loop.
  const int threads = this->threads();
  for (int t = 0; t < threads; ++t) {
    slots_[t].range.store(Pack(units * t / threads, units * (t + 1) / threads),
                          std::memory_order_release);
  }
  generation_.fetch_add(1, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sleepers_ > 0) cv_.notify_all();
  }
  Work(0);
  auto done = [&] { return completed_.load(std::memory_order_acquire) == units; };
  while (!SpinUntil(done)) std::this_thread::yield();
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
