// Sessions: input checks that list the expected signature, symbolic dims bound from inputs and
// checked across them, and one session run from many threads at once.
#include "runtime/src/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "targets/package_writer.h"
#include "tests/runtime/runtime_test_util.h"

namespace quilt {
namespace {

// z = (a + b) * a with a, b: float32 (n, 3): two inputs sharing the symbol n.
compiler::PackageSpec TwoInputPackage() {
  compiler::PackageSpec spec = test::AddConstantPackage();
  compiler::GraphSpec& g = spec.graphs[0];
  auto f32 = static_cast<int32_t>(rt::DType::kFloat32);
  g.values = {{"a", pkg::ValueKind::Input, f32, 2, {0, 1}},
              {"b", pkg::ValueKind::Input, f32, 2, {0, 1}},
              {"t", pkg::ValueKind::Intermediate, f32, 2, {0, 1}},
              {"z", pkg::ValueKind::Intermediate, f32, 2, {0, 1}}};
  g.inputs = {0, 1};
  g.outputs = {3};
  compiler::StepSpec add{"add", 0, {0, 1}, {1, 1}, {2}};
  compiler::StepSpec mul{"multiply", 0, {2, 0}, {1, 1}, {3}};
  g.steps = {add, mul};
  spec.buffers.clear();
  return spec;
}

std::unique_ptr<rt::Session> Open(const compiler::PackageSpec& spec) {
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  EXPECT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(std::move(p), {}, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

std::string RunError(const rt::Session& s, const std::vector<rt::NamedTensor>& in) {
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s.Run(in, &out);
  return st.ok() ? "" : st.message();
}

// A profiled run times each step in order and computes what a plain run does.
TEST(Session, AProfiledRunTimesEachStep) {
  compiler::PackageSpec spec = TwoInputPackage();
  spec.graphs[0].steps[0].source = "add0";
  std::unique_ptr<rt::Session> s = Open(spec);
  std::vector<float> a(3000, 2.0f), b(3000, 0.5f);
  std::vector<rt::NamedTensor> in = {test::Input("a", a, {1000, 3}),
                                     test::Input("b", b, {1000, 3})};
  std::vector<rt::OwnedTensor> plain, profiled;
  ASSERT_TRUE(s->Run(in, &plain).ok());
  rt::RunProfile profile;
  profile.steps.resize(7);  // a profile is filled afresh
  rt::Status st = s->Run(in, &profiled, &profile);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(profiled[0]), test::Floats(plain[0]));
  EXPECT_EQ(test::Floats(profiled[0])[2999], 5.0f);  // (2 + 0.5) * 2
  ASSERT_EQ(profile.steps.size(), 2u);
  const rt::StepProfile& add = profile.steps[0];
  const rt::StepProfile& mul = profile.steps[1];
  EXPECT_EQ(add.op, "add");
  EXPECT_EQ(add.kind, "kernel");
  EXPECT_EQ(add.node, "add0");
  EXPECT_EQ(add.device, "llvm");
  EXPECT_EQ(add.step, 0);
  EXPECT_EQ(mul.op, "multiply");
  EXPECT_EQ(mul.step, 1);
  EXPECT_GT(add.duration_us, 0);
  EXPECT_GE(mul.start_us, add.start_us + add.duration_us);  // in order, not overlapping
  EXPECT_GE(profile.total_us, mul.start_us + mul.duration_us);
}

TEST(Session, ReportsItsSignature) {
  auto s = Open(TwoInputPackage());
  ASSERT_EQ(s->inputs().size(), 2u);
  EXPECT_EQ(s->inputs()[0].ToString(), "a: float32 (n, 3)");
  EXPECT_EQ(s->outputs()[0].name, "z");
}

TEST(Session, MissingInputListsTheSignature) {
  auto s = Open(TwoInputPackage());
  std::vector<float> a(6);
  std::string e = RunError(*s, {test::Input("a", a, {2, 3})});
  EXPECT_EQ(e, "input 'b' is missing; the model takes a: float32 (n, 3), b: float32 (n, 3)");
}

TEST(Session, UnknownInputNameIsAnError) {
  auto s = Open(TwoInputPackage());
  std::vector<float> a(6);
  EXPECT_NE(RunError(*s, {test::Input("q", a, {2, 3})}).find("no input named 'q'"),
            std::string::npos);
}

TEST(Session, WrongDtypeRankOrStaticDimIsAnError) {
  auto s = Open(TwoInputPackage());
  std::vector<float> a(6), b(6);
  rt::NamedTensor ia = test::Input("a", a, {2, 3});
  rt::NamedTensor ib = test::Input("b", b, {2, 3});
  ib.tensor.dtype = rt::DType::kInt32;
  EXPECT_EQ(RunError(*s, {ia, ib}), "input 'b' is int32, expected b: float32 (n, 3)");
  ib = test::Input("b", b, {6});
  EXPECT_EQ(RunError(*s, {ia, ib}), "input 'b' has rank 1, expected b: float32 (n, 3)");
  ib = test::Input("b", b, {3, 2});
  EXPECT_EQ(RunError(*s, {ia, ib}), "input 'b' dim 0 is 3, expected n = 2");
}

TEST(Session, SymbolicDimsMustAgreeAcrossInputs) {
  auto s = Open(TwoInputPackage());
  std::vector<float> a(6), b(9);
  std::string e = RunError(*s, {test::Input("a", a, {2, 3}), test::Input("b", b, {3, 3})});
  EXPECT_EQ(e, "input 'b' dim 0 is 3, expected n = 2");
}

TEST(Session, StepErrorsNameTheStepAndNode) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  // The compiler claims y has 4 columns; the kernel makes 3.
  spec.graphs[0].dims.push_back({pkg::DimKind::Int, 0, 0, 4});
  spec.graphs[0].values[2].dims = {0, 3};
  auto s = Open(spec);
  std::vector<float> x(3);
  EXPECT_EQ(RunError(*s, {test::Input("x", x, {1, 3})}),
            "step 0 (add, node 'add0'): output 0 dim 1 is 3, expected 4");
}

TEST(Session, UnknownKernelIsRefusedAtCreation) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  spec.graphs[0].steps[0].kernel = "nn.frobnicate";
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(std::move(p), {}, &s);
  EXPECT_EQ(st.message(), "no CPU kernel for step 0 (nn.frobnicate, node 'add0')");
}

// A package with many steps of a kernel the runtime lacks (one built with chosen kernels): the
// message names the first four and counts the rest.
TEST(Session, ManyStepsWithoutAKernelAreNamedFourAndCounted) {
  compiler::PackageSpec spec = test::AddConstantPackage();
  compiler::GraphSpec& g = spec.graphs[0];
  // A chain of six steps: y = f(x, c), then each reads the value before it and c.
  compiler::StepSpec first = g.steps[0];
  first.kernel = "nn.frobnicate";
  g.steps.clear();
  std::vector<std::string> names;
  int last = 2;  // y
  for (int i = 0; i < 6; ++i) {
    compiler::StepSpec step = first;
    step.source = "f" + std::to_string(i);
    if (i > 0) {
      compiler::ValueSpec y = g.values[2];
      y.name = "y" + std::to_string(i);
      g.values.push_back(y);
      step.inputs = {last, 1};
      last = static_cast<int>(g.values.size()) - 1;
      step.outputs = {last};
    }
    g.steps.push_back(step);
    names.push_back("step " + std::to_string(i) + " (nn.frobnicate, node 'f" + std::to_string(i) +
                    "')");
  }
  g.outputs = {last};
  std::vector<uint8_t> bytes = compiler::WritePackage(spec);
  std::unique_ptr<rt::LoadedPackage> p;
  rt::Status st = rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p);
  ASSERT_TRUE(st.ok()) << st.message();
  std::unique_ptr<rt::Session> s;
  st = rt::Session::Create(std::move(p), {}, &s);
  EXPECT_EQ(st.message(), "no CPU kernel for " + names[0] + ", " + names[1] + ", " + names[2] +
                              ", " + names[3] + " and 2 more steps");
}

TEST(Session, DisallowedDeviceIsRefused) {
  std::vector<uint8_t> bytes = compiler::WritePackage(test::AddConstantPackage());
  std::unique_ptr<rt::LoadedPackage> p;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &p).ok());
  rt::SessionOptions options;
  options.devices = {"cuda"};
  std::unique_ptr<rt::Session> s;
  EXPECT_NE(rt::Session::Create(std::move(p), options, &s).message().find("do not allow"),
            std::string::npos);
}

TEST(Session, EightThreadsRunOneSessionAtOnceWithIdenticalResults) {
  auto s = Open(TwoInputPackage());
  constexpr int kThreads = 8, kRuns = 50;
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread its own batch size: the symbol n differs per run.
      int n = 1 + t;
      std::vector<float> a(3 * n), b(3 * n);
      for (int i = 0; i < 3 * n; ++i) {
        a[i] = static_cast<float>(i);
        b[i] = static_cast<float>(t);
      }
      for (int r = 0; r < kRuns; ++r) {
        std::vector<rt::OwnedTensor> out;
        rt::Status st = s->Run({test::Input("a", a, {n, 3}), test::Input("b", b, {n, 3})}, &out);
        if (!st.ok()) {
          errors[t] = st.message();
          return;
        }
        std::vector<float> z = test::Floats(out[0]);
        if (r > 0 && z != results[t]) {
          errors[t] = "run " + std::to_string(r) + " differs";
          return;
        }
        results[t] = z;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(errors[t], "") << "thread " << t;
    ASSERT_EQ(results[t].size(), static_cast<size_t>(3 * (t + 1)));
    for (int i = 0; i < 3 * (t + 1); ++i) {
      EXPECT_EQ(results[t][i],
                (static_cast<float>(i) + static_cast<float>(t)) * static_cast<float>(i));
    }
  }
}

// Runs one after another reuse the state a finished run leaves (its values' vectors): batch sizes
// that grow and shrink, and a run refused after it bound an input, leave nothing behind that the
// next one reads.
TEST(Session, RunsAfterOthersOfOtherShapesAndAFailureComputeTheirOwn) {
  auto s = Open(TwoInputPackage());
  for (int n : {3, 1, 5, 0, 2, 5, 1}) {
    if (n == 0) {  // b's n disagrees with a's: refused once a is bound
      std::vector<float> a(6), b(9);
      EXPECT_NE(RunError(*s, {test::Input("a", a, {2, 3}), test::Input("b", b, {3, 3})}), "");
      continue;
    }
    std::vector<float> a(3 * n), b(3 * n);
    for (int i = 0; i < 3 * n; ++i) {
      a[i] = static_cast<float>(i + n);
      b[i] = static_cast<float>(2 * i - n);
    }
    std::vector<rt::OwnedTensor> out;
    rt::Status st = s->Run({test::Input("a", a, {n, 3}), test::Input("b", b, {n, 3})}, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape, (rt::Shape{n, 3}));
    std::vector<float> z = test::Floats(out[0]);
    ASSERT_EQ(z.size(), static_cast<size_t>(3 * n));
    for (int i = 0; i < 3 * n; ++i)
      EXPECT_EQ(z[i], (a[i] + b[i]) * a[i]) << "n " << n << " at " << i;
  }
}

// A run holds at most SessionLimits::max_run_bytes at once (arenas and values outside them),
// refused with a limit status naming the value and the limit; and a run control's time budget
// cancels a run still going when it runs out.
TEST(Session, RunMemoryLimitAndTimeBudget) {
  std::vector<uint8_t> bytes = compiler::WritePackage(TwoInputPackage());
  std::unique_ptr<rt::LoadedPackage> loaded;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &loaded).ok());
  std::shared_ptr<const rt::LoadedPackage> p(std::move(loaded));
  std::vector<float> a(12, 1.0f), b(12, 2.0f);
  std::vector<rt::NamedTensor> in = {test::Input("a", a, {4, 3}), test::Input("b", b, {4, 3})};
  rt::SessionOptions options;
  options.limits.max_run_bytes = 96;  // t and z of 48 bytes each fit, not a third value
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(p, options, &s).ok());
  std::vector<rt::OwnedTensor> out;
  rt::Status st = s->Run(in, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(test::Floats(out[0])[0], 3.0f);
  options.limits.max_run_bytes = 60;
  ASSERT_TRUE(rt::Session::Create(p, options, &s).ok());
  st = s->Run(in, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), rt::StatusCode::kLimit);
  EXPECT_NE(st.message().find("output 0 of shape (4, 3) needs 48 bytes, and the run holds 48: "
                              "past its limit of 60 (SessionLimits::max_run_bytes"),
            std::string::npos)
      << st.message();
  ASSERT_TRUE(rt::Session::Create(p, {}, &s).ok());
  rt::RunControl control;
  control.CancelAfter(std::chrono::nanoseconds(0));
  st = s->Run(in, &out, nullptr, &control);
  EXPECT_EQ(st.code(), rt::StatusCode::kCancelled) << st.message();
  rt::RunControl later;
  later.CancelAfter(std::chrono::hours(1));
  EXPECT_TRUE(s->Run(in, &out, nullptr, &later).ok());
}

// One run control shared by runs on four threads (each run on a pool of 3 threads), cancelled
// from the main thread while they go: every run ends either right, with the values computed, or
// with the cancelled status, and every run after the cancel is cancelled. (ThreadSanitizer runs
// this in scripts/test.sh.)
TEST(Session, ACancelFromAnotherThreadStopsEveryRunSharingTheControl) {
  rt::SessionOptions options;
  options.threads = 3;
  std::vector<uint8_t> bytes = compiler::WritePackage(TwoInputPackage());
  std::unique_ptr<rt::LoadedPackage> loaded;
  ASSERT_TRUE(rt::LoadedPackage::FromMemory(bytes.data(), bytes.size(), &loaded).ok());
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(std::move(loaded), options, &s).ok());
  constexpr int kThreads = 4;
  rt::RunControl control;
  std::atomic<int> runs{0};
  std::atomic<bool> cancelled{false};
  std::vector<std::string> errors(kThreads);
  std::vector<int> after_cancel(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> a(3 * 64), b(3 * 64, static_cast<float>(t));
      for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7);
      for (int r = 0; r < 100000 && after_cancel[t] < 3; ++r) {
        bool was_cancelled = cancelled.load();
        std::vector<rt::OwnedTensor> out;
        rt::Status st = s->Run({test::Input("a", a, {64, 3}), test::Input("b", b, {64, 3})}, &out,
                               nullptr, &control);
        runs.fetch_add(1);
        if (st.code() == rt::StatusCode::kCancelled) {
          ++after_cancel[t];
          continue;
        }
        if (!st.ok()) {
          errors[t] = st.message();
          return;
        }
        if (was_cancelled) {
          errors[t] = "a run begun after the cancel completed";
          return;
        }
        std::vector<float> z = test::Floats(out[0]);
        for (size_t i = 0; i < z.size(); ++i) {
          if (z[i] != (a[i] + static_cast<float>(t)) * a[i]) {
            errors[t] = "element " + std::to_string(i) + " is " + std::to_string(z[i]);
            return;
          }
        }
      }
    });
  }
  while (runs.load() < 40) std::this_thread::yield();
  control.Cancel();
  cancelled.store(true);
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(after_cancel[t], 3) << "thread " << t;
  }
}

}  // namespace
}  // namespace quilt
