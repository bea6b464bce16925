// The thread pool: every index runs exactly once, loops started from several threads or from
// inside a loop are safe, one thread starts no threads, sessions run from many threads at once.
#include "runtime/src/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/src/session.h"
#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt::rt {
namespace {

using test::ExpectEachOnce;
using test::ProcessThreads;

// The thread count once it has settled at `want`, or after a second: a joined thread may still be
// listed for a moment while the kernel finishes its exit.
int ThreadsSettlingAt(int want) {
  int n = ProcessThreads();
  for (int i = 0; i < 1000 && n != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = ProcessThreads();
  }
  return n;
}

// The thread count when it has stayed the same for 10 ms (threads of earlier tests gone).
int SettledThreads() {
  int n = ProcessThreads();
  for (int same = 0; same < 10;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    int m = ProcessThreads();
    same = m == n ? same + 1 : 0;
    n = m;
  }
  return n;
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1000, 4097}) {
      for (int64_t grain : {1, 3, 100}) ExpectEachOnce(&pool, n, grain);
    }
  }
  ExpectEachOnce(nullptr, 33, 1);
}

// The ranges a loop ran, each with the thread that ran it: sorted by where they start.
struct Ran {
  int64_t begin, end;
  std::thread::id thread;
};

std::vector<Ran> RangesOf(ThreadPool* pool, int64_t n, int64_t grain) {
  std::mutex mu;
  std::vector<Ran> ranges;
  pool->ParallelFor(n, grain, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    ranges.push_back({b, e, std::this_thread::get_id()});
  });
  std::sort(ranges.begin(), ranges.end(),
            [](const Ran& x, const Ran& y) { return x.begin < y.begin; });
  return ranges;
}

// Two threads: the units are dealt in two contiguous shares, the calling thread's first. In
// each share its owner's ranges come first, claimed from the front (half of what was left each
// time, rounded up: the exact sizes where the other thread took none of the share), and the
// other thread's, taken from the end, come after them; no range crosses from one share into the
// other.
TEST(ThreadPool, EachThreadRunsItsShareFromTheFrontAndTakesFromTheOthersEnd) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 20; ++round) {
    for (int64_t n : {2, 3, 10, 1000, 4097}) {
      for (int64_t grain : {1, 7}) {
        std::vector<Ran> ranges = RangesOf(&pool, n, grain);
        const int64_t units = (n + grain - 1) / grain;
        if (units <= 1) continue;               // one range, on the calling thread
        const int64_t cut = units / 2 * grain;  // where the worker's share starts
        SCOPED_TRACE(testing::Message() << "n " << n << " grain " << grain);
        int64_t at = 0;
        for (int share = 0; share < 2; ++share) {
          const int64_t start = share == 0 ? 0 : cut, stop = share == 0 ? cut : n;
          bool owner_turn = true, taken = false;
          std::vector<int64_t> owned;
          for (const Ran& r : ranges) {
            if (r.begin < start || r.begin >= stop) continue;
            ASSERT_EQ(r.begin, at);
            ASSERT_EQ(r.begin % grain, 0);
            ASSERT_LE(r.end, stop) << "a range crosses into the next share";
            at = r.end;
            bool by_owner = share == 0 ? r.thread == caller : r.thread != caller;
            if (by_owner) {
              ASSERT_TRUE(owner_turn) << "the owner ran " << r.begin << " after another thread";
              owned.push_back(r.end - r.begin);
            } else {
              owner_turn = false;
              taken = true;
            }
          }
          ASSERT_EQ(at, stop);
          if (!taken) {
            for (int64_t left = stop - start; const int64_t size : owned) {
              int64_t half = ((left + grain - 1) / grain + 1) / 2 * grain;
              EXPECT_EQ(size, std::min(half, left)) << "share " << share;
              left -= size;
            }
          }
        }
      }
    }
  }
}

// A thread whose share is done takes from the end of another's: the worker's every range takes
// 100 ms, so the calling thread (done with its own share long before) runs the last units of
// the worker's share, or all of them where the worker has not started.
TEST(ThreadPool, AThreadDoneWithItsShareTakesFromTheEndOfAnothers) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex mu;
  std::vector<int64_t> by_caller;
  pool.ParallelFor(8, 1, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() != caller) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t i = b; i < e; ++i) by_caller.push_back(i);
  });
  std::sort(by_caller.begin(), by_caller.end());
  ASSERT_FALSE(by_caller.empty());
  EXPECT_EQ(by_caller.back(), 7);
  EXPECT_GT(by_caller.size(), 4u) << "the calling thread ran only its own share";
}

TEST(ThreadPool, UsesTheWorkers) {
  ThreadPool pool(3);
  std::mutex mu;
  std::vector<std::thread::id> ids;
  // Enough slow chunks that every thread takes one.
  for (int attempt = 0; attempt < 50 && ids.size() < 2; ++attempt) {
    ids.clear();
    pool.ParallelFor(12, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard<std::mutex> lock(mu);
      if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
        ids.push_back(std::this_thread::get_id());
    });
  }
  EXPECT_GE(ids.size(), 2u);
}

TEST(ThreadPool, OneThreadStartsNoThreads) {
  int before = SettledThreads();
  ThreadPool pool(1);
  SessionPools pools(1, 1024);
  EXPECT_EQ(pools.Take(), nullptr);
  EXPECT_EQ(ProcessThreads(), before);
  {
    ThreadPool three(3);
    EXPECT_EQ(ThreadsSettlingAt(before + 2), before + 2);
  }
  EXPECT_EQ(ThreadsSettlingAt(before), before);
}

// Concurrent runs of a session of 3 threads each take a pool of 2 workers, up to the session's
// limit on workers in all: past it a run gets no pool (its loops run on its calling thread).
TEST(ThreadPool, SessionPoolsStopAtTheirWorkerLimit) {
  SessionPools pools(3, 5);
  ThreadPool* a = pools.Take();
  ThreadPool* b = pools.Take();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(pools.Take(), nullptr) << "6 workers would pass the limit of 5";
  pools.Give(a);
  EXPECT_EQ(pools.Take(), a);
  pools.Give(a);
  pools.Give(b);
}

TEST(ThreadPool, NestedLoopsRunInline) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(10, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.ParallelFor(10, 1, [&](int64_t b2, int64_t e2) {
        for (int64_t j = b2; j < e2; ++j) sum.fetch_add(i * 10 + j);
      });
    }
  });
  EXPECT_EQ(sum.load(), 99 * 100 / 2);
}

TEST(ThreadPool, LoopsFromSeveralThreadsAtOnce) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 300; ++round) {
        int64_t n = 1 + (round * 7 + t) % 200;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) failures += hits[i].load() != 1;
      }
    });
  }
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, ManyShortLoops) {
  ThreadPool pool(2);
  int64_t total = 0;
  for (int round = 0; round < 20000; ++round) {
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(4, 1, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
    total += sum.load();
  }
  EXPECT_EQ(total, 4 * 20000);
}

// Loops back to back whose unit counts alternate small and large: a worker still looking at a
// loop that has just ended must not take units of it that only the next loop's count allows
// (it ran the next loop's body and counted units too many, and that loop then never
// finished: a hang under load). Each loop covers every index once; the whole run finishes.
TEST(ThreadPool, ConsecutiveLoopsOfGrowingSizeNeverTakeAnExtraChunk) {
  auto run = std::async(std::launch::async, [] {
    ThreadPool pool(3);
    int64_t failures = 0;
    for (int round = 0; round < 1000000; ++round) {
      int64_t n = round % 2 == 0 ? 2 : 12;
      std::atomic<int> hits[12] = {};
      pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
      });
      for (int64_t i = 0; i < 12; ++i) failures += hits[i].load() != (i < n ? 1 : 0);
    }
    return failures;
  });
  if (run.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    ADD_FAILURE() << "1000000 loops did not finish in 120 s: a loop never completed";
    std::fflush(nullptr);
    std::_Exit(1);  // the pool's threads cannot be joined
  }
  EXPECT_EQ(run.get(), 0);
}

TEST(ThreadPool, SessionRunsFromManyThreadsWithTheirOwnWorkers) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<LoadedPackage> loaded;
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &loaded).ok());
  std::shared_ptr<const LoadedPackage> package = std::move(loaded);
  int before = SettledThreads();
  SessionOptions options;
  options.threads = 3;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(package, options, &session).ok());
  EXPECT_EQ(ThreadsSettlingAt(before + 2), before + 2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        std::vector<float> x = {float(t), float(round), 0};
        std::vector<OwnedTensor> out;
        if (!session->Run({test::Input("x", x, {1, 3})}, &out).ok()) {
          ++failures;
          continue;
        }
        std::vector<float> y = test::Floats(out[0]);
        failures += y != std::vector<float>{float(t) + 1, float(round) + 2, 3};
      }
    });
  }
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
  session.reset();
  EXPECT_EQ(ThreadsSettlingAt(before), before);
}

}  // namespace
}  // namespace quilt::rt
