// quilt-gemm-bench: its usage errors, and its table for a small shape (values any: a benchmark).
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/tool_runner.h"

namespace {

using quilt::testing::RunTool;

// A malformed or impossible shape and a thread count out of range are bad usage (exit 2),
// named in the message.
TEST(GemmBenchTest, BadShapesAndThreadCountsAreBadUsage) {
  for (const char* shape : {"0x4x4", "4x4", "4x4x4x4", "axbxc", "4x4x-1", "2000000x4x4"}) {
    auto r = RunTool("quilt-gemm-bench", std::string("--shape ") + shape + " --runs 1");
    EXPECT_EQ(r.code, 2) << shape << ": " << r.out;
    EXPECT_TRUE(r.FailedCleanly()) << r.out;
    EXPECT_NE(r.out.find(shape), std::string::npos) << r.out;
  }
  auto r = RunTool("quilt-gemm-bench", "--shape 4x4x4 --threads 0");
  EXPECT_EQ(r.code, 2) << r.out;
}

// One shape at 1 and 3 threads: a row per thread count, each with the three ways measured.
TEST(GemmBenchTest, ATableRowPerShapeAndThreadCount) {
  auto r = RunTool("quilt-gemm-bench", "--shape 9x50x30 --threads 1 --threads 3 --runs 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("| 9 x 50 x 30 | 1 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 9 x 50 x 30 | 3 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("multiply-add peak"), std::string::npos) << r.out;
}

}  // namespace
