// Thread creation refused by the system (EAGAIN, as at RLIMIT_NPROC or the kernel's thread limit):
// a pool keeps the workers it started and a session still runs, on fewer threads. This test
// binary interposes pthread_create, which std::thread calls, so that it fails once a budget of
// starts is spent; the budget is unlimited outside these tests.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <vector>

#include "runtime/src/session.h"
#include "runtime/src/thread_pool.h"
#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace {

// Threads that may still start; each start takes one, and a start past zero is refused.
std::atomic<int> g_starts_left{INT_MAX};
std::atomic<int> g_refused{0};

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) {
  using Fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static Fn next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_create"));
  if (g_starts_left.fetch_sub(1) <= 0) {
    g_starts_left.fetch_add(1);
    g_refused.fetch_add(1);
    return EAGAIN;
  }
  return next(thread, attr, start, arg);
}

namespace quilt::rt {
namespace {

using test::ExpectEachOnce;
using test::ProcessThreads;

// Allows `starts` thread starts for the test's duration.
class ThreadStartFailure : public ::testing::Test {
 protected:
  void Allow(int starts) {
    g_refused.store(0);
    g_starts_left.store(starts);
  }
  void TearDown() override { g_starts_left.store(INT_MAX); }
};

// The interposer is in effect: without it the other tests prove nothing.
TEST_F(ThreadStartFailure, TheSystemRefusesTheThreadPastTheBudget) {
  Allow(0);
  pthread_t t;
  EXPECT_EQ(pthread_create(
                &t, nullptr, [](void*) -> void* { return nullptr; }, nullptr),
            EAGAIN);
  bool threw = false;
  try {
    std::thread([] {}).join();
  } catch (const std::system_error&) {
    threw = true;
  }
  EXPECT_TRUE(threw) << "std::thread started a thread the budget refused";
  EXPECT_EQ(g_refused.load(), 2);
}

TEST_F(ThreadStartFailure, APoolKeepsTheWorkersItStarted) {
  int before = ProcessThreads();
  Allow(2);
  {
    ThreadPool pool(6);
    EXPECT_EQ(pool.threads(), 3) << "2 workers started, the third was refused";
    EXPECT_EQ(g_refused.load(), 1) << "the pool stops asking after the first refusal";
    EXPECT_EQ(ProcessThreads(), before + 2);
    for (int64_t n : {1, 7, 1000, 100000}) ExpectEachOnce(&pool, n, 1);
  }
  EXPECT_LE(ProcessThreads(), before + 2);
}

TEST_F(ThreadStartFailure, APoolWithNoWorkerRunsOnItsCaller) {
  Allow(0);
  ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 1);
  ExpectEachOnce(&pool, 1000, 1);
}

TEST_F(ThreadStartFailure, ASessionRunsWhenNoThreadStarts) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<LoadedPackage> loaded;
  ASSERT_TRUE(LoadedPackage::FromMemory(bytes.data(), bytes.size(), &loaded).ok());
  std::shared_ptr<const LoadedPackage> package = std::move(loaded);
  Allow(0);
  SessionOptions options;
  options.threads = 4;
  std::unique_ptr<Session> session;
  Status created = Session::Create(package, options, &session);
  ASSERT_TRUE(created.ok()) << created.message();
  EXPECT_GE(g_refused.load(), 1);
  for (int round = 0; round < 3; ++round) {
    std::vector<float> x = {1, float(round), -4};
    std::vector<OwnedTensor> out;
    Status ran = session->Run({test::Input("x", x, {1, 3})}, &out);
    ASSERT_TRUE(ran.ok()) << ran.message();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(test::Floats(out[0]), (std::vector<float>{2, float(round) + 2, -1}));
  }
}

}  // namespace
}  // namespace quilt::rt
