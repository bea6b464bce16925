// The 8-bit GEMM (targets/cpu/kernels/int8_gemm.h) against plain integer loops.
#include "targets/cpu/kernels/int8_gemm.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "runtime/src/thread_pool.h"

namespace quilt::cpu {
namespace {

int64_t Value(uint8_t b, bool is_unsigned) { return is_unsigned ? b : static_cast<int8_t>(b); }

// Takes the AVX2 tiles (not VNNI's) while it lives.
class VnniOff {
 public:
  VnniOff() { SetInt8VnniAllowedForTesting(false); }
  ~VnniOff() { SetInt8VnniAllowedForTesting(true); }
  VnniOff(const VnniOff&) = delete;
  VnniOff& operator=(const VnniOff&) = delete;
};

// Every size from the tiles' edges (rows 1 to 9, columns across a panel and a pair, reductions
// not a multiple of 4), both operand signednesses, extreme bytes, one thread and three; on the
// VNNI tiles and the AVX2 ones where the CPU has both.
void ExpectIntegerLoops() {
  std::mt19937 rng(7);
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{1, 1, 1},   {9, 33, 5},   {8, 32, 4},    {7, 17, 13},   {3, 70, 300},
                        {16, 16, 1}, {2, 5, 1027}, {28, 100, 64}, {1, 2048, 512}};
  rt::ThreadPool three(3);
  for (const Case& c : cases) {
    for (bool rows_unsigned : {true, false}) {
      for (bool extreme : {false, true}) {
        std::vector<uint8_t> a(static_cast<size_t>(c.m * c.k)), b(static_cast<size_t>(c.k * c.n));
        for (uint8_t& v : a) v = extreme ? (rows_unsigned ? 255 : 0x80) : rng() & 255;
        for (uint8_t& v : b) v = extreme ? (rows_unsigned ? 0x80 : 255) : rng() & 255;
        Int8Rows rows;
        PackInt8Rows(a.data(), c.m, c.k, c.k, false, &rows);
        for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
          Int8Panels panels;
          PackInt8Panels(b.data(), c.k, c.n, c.n, false, &panels, pool);
          std::vector<int32_t> got(static_cast<size_t>(c.m * (c.n + 3)), -1);
          Int8Gemm(rows, panels, rows_unsigned, got.data(), c.n + 3, pool);
          std::string what = "m n k " + std::to_string(c.m) + " " + std::to_string(c.n) + " " +
                             std::to_string(c.k) + (rows_unsigned ? " uint8 rows" : " int8 rows");
          for (int64_t i = 0; i < c.m; ++i) {
            for (int64_t j = 0; j < c.n; ++j) {
              int64_t want = 0;
              for (int64_t p = 0; p < c.k; ++p) {
                want +=
                    Value(a[i * c.k + p], rows_unsigned) * Value(b[p * c.n + j], !rows_unsigned);
              }
              ASSERT_EQ(got[i * (c.n + 3) + j], want) << what << " at " << i << ", " << j;
            }
            // Nothing past the n columns of a row is written.
            for (int64_t j = c.n; j < c.n + 3; ++j) ASSERT_EQ(got[i * (c.n + 3) + j], -1) << what;
          }
        }
      }
    }
  }
}

TEST(Int8Gemm, MatchesIntegerLoops) {
  if (!HasInt8Dot()) {
    GTEST_SKIP() << "this CPU has neither AVX-512 VNNI nor AVX2: the int8 GEMM does not run";
  }
  {
    SCOPED_TRACE(Int8GemmOnVnni() ? "VNNI tiles" : "AVX2 tiles");
    ExpectIntegerLoops();
  }
  if (Int8GemmOnVnni()) {
    VnniOff off;
    ASSERT_FALSE(Int8GemmOnVnni());
    SCOPED_TRACE("AVX2 tiles");
    ExpectIntegerLoops();
  }
}

// Packing with flip adds 128 to every byte; the row and column sums read the bytes as signed or
// unsigned.
TEST(Int8Gemm, PackingFlipsAndSums) {
  std::mt19937 rng(9);
  int64_t k = 7, n = 21;
  std::vector<uint8_t> src(static_cast<size_t>(k * n));
  for (uint8_t& v : src) v = rng() & 255;
  Int8Panels panels;
  PackInt8Panels(src.data(), k, n, n, true, &panels, nullptr);
  std::vector<int64_t> cols;
  Int8ColumnSums(panels, false, &cols);
  for (int64_t j = 0; j < n; ++j) {
    int64_t want = 0;
    for (int64_t p = 0; p < k; ++p) want += int64_t{src[p * n + j]} - 128;  // uint8 read, less 128
    EXPECT_EQ(cols[j], want) << "column " << j;
  }
  Int8Rows rows;
  PackInt8Rows(src.data(), k, n, n, true, &rows);
  std::vector<int64_t> sums;
  Int8RowSums(rows, true, &sums);
  for (int64_t i = 0; i < k; ++i) {
    int64_t want = 0;
    for (int64_t j = 0; j < n; ++j) want += static_cast<int8_t>(src[i * n + j]) + 128;
    EXPECT_EQ(sums[i], want) << "row " << i;
  }
}

}  // namespace
}  // namespace quilt::cpu
