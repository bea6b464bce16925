// quilt-gemm-bench: this CPU's float32 multiply-add peak per core, and the CPU runtime's GEMM
// (the product behind its matmul and convolution kernels) on given shapes, as GFLOP/s and as a
// share of that peak. A benchmark, never a test: min and median of repeated runs.
//
//   quilt-gemm-bench [--shape MxNxK]... [--threads T]... [--runs N]
//
// The peak is a loop of 12 independent multiply-add chains on registers alone, 16 lanes wide where
// the CPU has AVX-512 and 8 where it has AVX2 and FMA (each measured where the CPU has it). The
// GEMM runs each shape three ways: B packed by the product as it goes (a convolution's im2col
// view, an activation), A and B packed ahead (a constant weight on each side), and B's rows read
// where they are (SgemmRows, a convolution on its padded grid), each on a matrix of random values
// whose rows start on 64-byte boundaries.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/src/thread_pool.h"
#include "targets/cpu/kernels/gemm.h"
#include "tools/cli.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

#if defined(__x86_64__) && defined(__GNUC__)
// Multiply-adds (one rounding each, as the kernels' are) on kChains independent accumulators,
// `rounds` times: GFLOP/s.
constexpr int kChains = 12;

__attribute__((target("avx2,fma,avx512f"))) double Peak512(int64_t rounds) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
  auto t0 = Clock::now();
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], b, c);
  }
  double s = Seconds(t0);
  volatile float sink = 0;  // the sums used, so that the loop stays
  for (int i = 0; i < kChains; ++i) {
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[i]);
    sink = sink + lanes[0];
  }
  return 2.0 * 16 * kChains * static_cast<double>(rounds) / s * 1e-9;
}

__attribute__((target("avx2,fma"))) double Peak256(int64_t rounds) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-7f);
  auto t0 = Clock::now();
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], b, c);
  }
  double s = Seconds(t0);
  volatile float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    float lanes[8];
    _mm256_storeu_ps(lanes, acc[i]);
    sink = sink + lanes[0];
  }
  return 2.0 * 8 * kChains * static_cast<double>(rounds) / s * 1e-9;
}

// The best of five runs of about 0.2 s each.
double Peak(double (*fn)(int64_t)) {
  int64_t rounds = 1 << 20;
  auto t0 = Clock::now();
  fn(rounds);
  double once = std::max(Seconds(t0), 1e-6);
  rounds = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(rounds) * 0.2 / once));
  double best = 0;
  for (int i = 0; i < 5; ++i) best = std::max(best, fn(rounds));
  return best;
}
#endif

struct Shape {
  int64_t m = 0, n = 0, k = 0;
};

// "MxNxK" with each at least 1 and the product's floats below 2^31.
bool ParseShape(const std::string& text, Shape* s) {
  long long m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3) return false;
  if (m < 1 || n < 1 || k < 1 || m > (1 << 20) || n > (1 << 20) || k > (1 << 20)) return false;
  if (m * k > (1LL << 31) || k * n > (1LL << 31) || m * n > (1LL << 31)) return false;
  *s = {m, n, k};
  return true;
}

// A buffer of n floats whose first is on a 64-byte boundary.
struct Aligned {
  explicit Aligned(int64_t n) : storage(static_cast<size_t>(n + 16)) {
    data = storage.data();
    while (reinterpret_cast<uintptr_t>(data) % 64 != 0) ++data;
  }
  std::vector<float> storage;
  float* data;
};

int Main(int argc, char** argv) {
  CLI::App app{"quilt-gemm-bench: the CPU's multiply-add peak and the runtime's GEMM on it"};
  std::vector<std::string> shape_args;
  std::vector<int> thread_counts;
  int runs = 20;
  app.add_option("--shape", shape_args, "MxNxK, C (M x N) = A (M x K) B (K x N); repeatable")
      ->type_name("MxNxK");
  app.add_option("--threads", thread_counts, "thread counts to run at (default 1 and 2)")
      ->check(CLI::Range(1, 256));
  app.add_option("--runs", runs, "timed runs of each shape and way (default 20)")
      ->check(CLI::Range(1, 100000));
  if (auto code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  std::vector<Shape> shapes;
  for (const std::string& text : shape_args) {
    Shape s;
    if (!ParseShape(text, &s)) {
      std::fprintf(stderr,
                   "quilt-gemm-bench: error: --shape '%s' is not MxNxK of positive sizes up to "
                   "2^20 (and 2^31 floats per matrix)\n",
                   text.c_str());
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    // Large GEMMs, and the shapes of the zoo's convolutions as GEMMs (output channels x
    // positions x input channels times taps).
    shapes = {{1024, 1024, 1024}, {512, 3136, 512}, {256, 784, 64},   {64, 784, 256},
              {128, 3136, 32},    {512, 196, 128},  {256, 147, 2304}, {64, 12880, 147}};
  }
  if (thread_counts.empty()) thread_counts = {1, 2};

  double peak = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    double p256 = Peak(Peak256);
    std::printf("multiply-add peak, one core, 8 lanes (AVX2 + FMA): %.1f GFLOP/s\n", p256);
    peak = p256;
  }
  if (__builtin_cpu_supports("avx512f")) {
    double p512 = Peak(Peak512);
    std::printf("multiply-add peak, one core, 16 lanes (AVX-512): %.1f GFLOP/s\n", p512);
    peak = std::max(peak, p512);
  }
#endif
  if (peak == 0) std::printf("multiply-add peak: not measured on this CPU\n");
  std::printf("GEMM kernels: %s\n\n", quilt::cpu::HasAvx512Gemm() ? "16-lane (AVX-512)" : "8-lane");
  std::printf(
      "| M x N x K | threads | B packed by the product | A and B packed ahead | B's rows in "
      "place |\n|---|---|---|---|---|\n");

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    Aligned a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
    for (int64_t i = 0; i < s.m * s.k; ++i) a.data[i] = dist(rng);
    for (int64_t i = 0; i < s.k * s.n; ++i) b.data[i] = dist(rng);
    quilt::cpu::PackedA packed_a(a.data, s.k, s.m, s.k);
    quilt::cpu::MatrixB matrix_b(b.data, s.k, s.n);
    quilt::cpu::PackedB packed_b(matrix_b, s.k, s.n);
    std::vector<int64_t> offs(static_cast<size_t>(s.k));
    for (int64_t p = 0; p < s.k; ++p) offs[static_cast<size_t>(p)] = p * s.n;
    const double flops =
        2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    for (int threads : thread_counts) {
      std::unique_ptr<quilt::rt::ThreadPool> pool;
      if (threads > 1) pool = std::make_unique<quilt::rt::ThreadPool>(threads);
      std::string cells;
      for (int way = 0; way < 3; ++way) {
        auto once = [&] {
          if (way == 0) {
            quilt::cpu::Sgemm(s.m, s.n, s.k, a.data, s.k, matrix_b, c.data, s.n, pool.get());
          } else if (way == 1) {
            quilt::cpu::Sgemm(s.m, s.n, s.k, a.data, s.k, packed_b, c.data, s.n, pool.get(),
                              nullptr, &packed_a);
          } else {
            quilt::cpu::SgemmRows(s.m, s.n, s.k, a.data, s.k, b.data, offs.data(), c.data, s.n,
                                  pool.get());
          }
        };
        for (int w = 0; w < 3; ++w) once();
        std::vector<double> times;
        for (int r = 0; r < runs; ++r) {
          auto t0 = Clock::now();
          once();
          times.push_back(Seconds(t0));
        }
        std::sort(times.begin(), times.end());
        double best = flops / times.front() * 1e-9, median = flops / times[times.size() / 2] * 1e-9;
        char cell[96];
        if (peak > 0) {
          std::snprintf(cell, sizeof cell, " %.1f / %.1f (%.0f%%) |", best, median,
                        100.0 * best / (peak * threads));
        } else {
          std::snprintf(cell, sizeof cell, " %.1f / %.1f |", best, median);
        }
        cells += cell;
      }
      std::printf("| %lld x %lld x %lld | %d |%s\n", static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k), threads, cells.c_str());
    }
  }
  std::printf(
      "\nGFLOP/s, best / median of %d runs after 3 warm-up runs; %% of the peak times the "
      "threads, of the best.\n",
      runs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return quilt::tools::RunMain("quilt-gemm-bench", [&] { return Main(argc, argv); });
}
