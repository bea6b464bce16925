// The threads of a run: a fixed set of workers that split a parallel loop with the thread that
// starts it.
//
//   pool.ParallelFor(rows, /*grain=*/4, [&](int64_t begin, int64_t end) { ... });
//
// A pool of T threads starts T - 1 workers; the thread calling ParallelFor is the T-th. A pool of
// 1 starts none and runs every loop on the calling thread. Between loops the workers spin for a
// short while (a run's loops come in quick succession), then sleep on a condition variable, so
// an idle pool costs no CPU time.
//
// One loop runs at a time: a loop started while the pool is busy (by another thread, or from
// inside a range of the running loop) runs on its calling thread alone. A session gives each of
// its concurrent runs a pool of its own (SessionPools), so that case only arises for nested loops.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace quilt::rt {

class ThreadPool {
 public:
  // Starts threads - 1 workers; where the system refuses one, the pool keeps those it has (at
  // least the calling thread): fewer threads, never a half-built pool.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads a loop runs on: the workers and the calling thread.
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint ranges that cover [0, n), each at least `grain` long (the
  // last may be shorter), and returns when every call has returned. The loop's units of `grain`
  // indices are dealt out in `threads()` contiguous shares, the calling thread's first and each
  // worker's in its order, and each thread claims its own share from the front, half of what is
  // left of it at a time. A thread whose share is done takes from the end of another's, half of
  // what is left there: so the threads finish together when the work is uneven or a thread
  // starts late, and where it is even each thread runs the same part of every loop of the same
  // size, which keeps consecutive layers' data in the cache of the core that wrote it.
  template <typename F>
  void ParallelFor(int64_t n, int64_t grain, F&& fn) {
    if (n <= 0) return;
    using Fn = std::remove_reference_t<F>;
    Body body{const_cast<void*>(static_cast<const void*>(&fn)),
              [](void* f, int64_t b, int64_t e) { (*static_cast<Fn*>(f))(b, e); }};
    Run(n, grain < 1 ? 1 : grain, body);
  }

 private:
  struct Body {
    void* fn = nullptr;
    void (*call)(void*, int64_t, int64_t) = nullptr;
  };
  void Run(int64_t n, int64_t grain, Body body);
  void Work(int self);
  void WorkerLoop(int self);
  void RunUnits(int64_t first, int64_t count);

  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> stop_{false};
  // The running loop, split into units of `unit_` indices (the last may be shorter). Each
  // thread's share is a slot holding the units left in it, [begin, end) as end << 32 | begin:
  // its owner claims from the front and others from the end, each by a compare-and-swap on the
  // slot, so every claim is of units a slot still held at that moment, whichever loop that was
  // (a thread still looking at the loop before takes part in this one correctly). Units are
  // below 2^31. `completed_` counts the units run.
  struct alignas(64) Slot {
    std::atomic<uint64_t> range{0};
  };
  std::unique_ptr<Slot[]> slots_;
  std::atomic<int64_t> completed_{0};
  int64_t n_ = 0, unit_ = 1;
  Body body_;
  // A loop's number: workers wait for it to change.
  std::atomic<uint32_t> generation_{0};
  // Sleeping workers wait on cv_ under mu_ for a new generation.
  std::mutex mu_;
  std::condition_variable cv_;
  int sleepers_ = 0;
};

// fn(begin, end) over [0, n) on `pool`, or on the calling thread alone when it is null.
template <typename F>
void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  if (pool == nullptr || pool->threads() == 1 || n <= grain) {
    fn(int64_t{0}, n);
    return;
  }
  pool->ParallelFor(n, grain, fn);
}

// The pools of one session: a run takes a pool for its duration and gives it back, so runs on
// several threads at once each get their own workers. The first pool starts with the session;
// more start only when runs overlap, and stay for later runs, up to `max_workers` workers in
// all: past that a run gets no pool and computes on its calling thread. With threads = 1 there
// are none.
class SessionPools {
 public:
  SessionPools(int threads, int max_workers);
  ~SessionPools();
  // Null when the session has one thread.
  ThreadPool* Take();
  void Give(ThreadPool* pool);

 private:
  int threads_;
  int max_workers_;
  int workers_ = 0;
  std::mutex mu_;
  std::vector<std::unique_ptr<ThreadPool>> all_;
  std::vector<ThreadPool*> free_;
};

}  // namespace quilt::rt
