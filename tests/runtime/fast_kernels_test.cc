// The fast float32 kernels against the reference kernels they replace, on random shapes: odd
// sizes, strides, pads, dilations, groups, depthwise, 1x1, batches, 1 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "quilt/package_generated.h"
#include "runtime/src/kernel.h"
#include "runtime/src/thread_pool.h"
#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/image.h"
#include "targets/cpu/kernels/linalg.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/recurrent.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/simd.h"
#include "targets/cpu/kernels/util.h"
#include "tests/runtime/kernel_test_util.h"

namespace quilt::cpu {
namespace {

using namespace kernel_test;  // NOLINT(build/namespaces): the kernels' test helpers

// Runs `fast` and `reference` on the same inputs and compares (with 1 and `threads` threads).
// `positive`: inputs (by index) whose values must be positive.
void Compare(rt::KernelFn fast, rt::KernelFn reference, const std::vector<Shape>& shapes,
             Attrs& attrs, std::mt19937& rng, const std::string& what,
             const std::vector<size_t>& positive = {}, int threads = 3) {
  const rt::AttrView::List* list = attrs.Finish();
  std::vector<std::vector<float>> data;
  std::vector<Tensor> inputs;
  for (const Shape& s : shapes) data.push_back(Random(rng, Count(s)));
  for (size_t i : positive) {
    for (float& v : data[i]) v = std::abs(v) + 0.01f;
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(Tensor{DType::kFloat32, shapes[i], data[i].data()});
  }
  TestContext ref(inputs, list, nullptr);
  Status st = reference(ref);
  ASSERT_TRUE(st.ok()) << what << ": " << st.message();
  std::vector<float> want = ref.values();
  rt::ThreadPool several(threads);
  // Without a cache, then twice with every input constant and one cache (what the first run
  // keeps, the second reads).
  for (int pass = 0; pass < 3; ++pass) {
    rt::StepCache cache;
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &several}) {
      TestContext got(inputs, list, pool);
      if (pass > 0) got.SetCache(&cache, ~uint64_t{0});
      st = fast(got);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      ASSERT_EQ(got.out().shape, ref.out().shape) << what;
      std::vector<float> v = got.values();
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == want[i] || (std::isnan(v[i]) && std::isnan(want[i]))) continue;  // inf, NaN
        ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
            << what << ", element " << i << " of " << v.size() << ": " << v[i] << " vs " << want[i]
            << " (threads " << (pool ? threads : 1) << (pass ? ", cached" : "") << ")";
      }
    }
  }
}

void CheckConv(const ConvCase& c, std::mt19937& rng, int threads = 3) {
  Shape x, w;
  ConvShapes(c, &x, &w);
  Attrs attrs;
  ConvAttrs(c, attrs).Str("auto_pad", c.auto_pad);
  std::string what = "conv x (" + Join(x) + ") w (" + Join(w) + ") groups " +
                     std::to_string(c.groups) + " strides " + Join(c.stride) + " dilation " +
                     Join(c.dilation) + " pads " + Join(c.pads) + " " + c.auto_pad;
  Compare(nn::ConvFast, nn::ConvReference, {x, w}, attrs, rng, what, {}, threads);
}

// The window's lists are read from the step's attributes in place: one of the wrong length is
// refused with its name and both lengths; absent ones are their defaults (stride and dilation 1, no
// padding), as the same conv with them written out computes.
TEST(FastKernels, ConvWindowListsOfTheWrongLengthAreRefusedAndAbsentOnesDefault) {
  std::mt19937 rng(77);
  std::vector<float> x = Random(rng, 2 * 5 * 6), w = Random(rng, 3 * 2 * 3 * 3);
  std::vector<Tensor> inputs = {Tensor{DType::kFloat32, {1, 2, 5, 6}, x.data()},
                                Tensor{DType::kFloat32, {3, 2, 3, 3}, w.data()}};
  for (const char* name : {"strides", "dilation", "padding"}) {
    Attrs attrs;
    attrs.Ints(name, {1, 1, 1});
    TestContext ctx(inputs, attrs.Finish(), nullptr);
    rt::Status st = nn::ConvFast(ctx);
    EXPECT_EQ(st.message(), std::string(name) + " has 3 values, expected " +
                                (std::string(name) == "padding" ? "4" : "2"));
  }
  Attrs none, written;
  written.Ints("strides", {1, 1}).Ints("dilation", {1, 1}).Ints("padding", {0, 0, 0, 0});
  TestContext a(inputs, none.Finish(), nullptr), b(inputs, written.Finish(), nullptr);
  ASSERT_TRUE(nn::ConvFast(a).ok());
  ASSERT_TRUE(nn::ConvFast(b).ok());
  ASSERT_EQ(a.out().shape, (Shape{1, 3, 3, 4}));
  EXPECT_EQ(a.values(), b.values());
  // y[0, 0, 0, 0] by hand: the 2 x 3 x 3 window at the origin.
  double sum = 0;
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) sum += double{x[(c * 5 + i) * 6 + j]} * w[(c * 3 + i) * 3 + j];
    }
  }
  EXPECT_NEAR(a.values()[0], sum, 1e-5);
}

TEST(FastKernels, ConvMatchesTheReference) {
  std::mt19937 rng(1234);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 300; ++iter) {
    ConvCase c;
    int rank = iter % 7 == 0 ? 1 : (iter % 11 == 0 ? 3 : 2);
    c.n = pick(1, 3);
    int kind = static_cast<int>(pick(0, 5));
    if (kind == 0) {  // depthwise
      c.groups = pick(1, 17);
      c.cg = 1;
      c.og = pick(1, 2);
    } else if (kind == 1) {  // grouped
      c.groups = pick(2, 4);
      c.cg = pick(1, 6);
      c.og = pick(1, 7);
    } else {
      c.groups = 1;
      c.cg = pick(1, 20);
      c.og = pick(1, 40);
    }
    bool pointwise = kind == 2;
    if (iter % 13 == 5) c.auto_pad = iter % 2 ? "SAME_UPPER" : "SAME_LOWER";
    if (iter % 17 == 3) c.auto_pad = "VALID";
    for (int d = 0; d < rank; ++d) {
      int64_t k = pointwise ? 1 : pick(1, rank == 3 ? 3 : 5);
      int64_t s = pointwise ? 1 : pick(1, 3);
      int64_t dil = pointwise ? 1 : pick(1, 2);
      int64_t pb = pointwise ? 0 : pick(0, 2), pe = pointwise ? 0 : pick(0, 2);
      int64_t dk = (k - 1) * dil + 1;
      int64_t fits = c.auto_pad == "VALID" ? dk : std::max<int64_t>(1, dk - pb - pe);
      int64_t in = fits + pick(0, rank == 3 ? 6 : 30);
      c.in.push_back(in);
      c.kernel.push_back(k);
      c.stride.push_back(s);
      c.dilation.push_back(dil);
      c.pads.push_back(pb);
    }
    for (int d = 0; d < rank; ++d) {
      int64_t dk = (c.kernel[d] - 1) * c.dilation[d] + 1;
      int64_t pe = pointwise ? 0 : pick(0, 2);
      c.pads.push_back(std::max<int64_t>(pe, dk - c.in[d] - c.pads[d]));
    }
    CheckConv(c, rng);
    if (HasFatalFailure()) return;
  }
}

// A batch whose images do not share evenly among the threads (fewer than four a thread): as many
// as do run whole on each thread, the rest one at a time across the threads. 3 and 5 images at 2
// threads, 4 and 5 at 3: a 1x1 reading the channels in place, a 3x3 on the padded grid, one of
// stride 2 on the phase planes, and a kernel too wide for the grid (im2col).
TEST(FastKernels, ConvSplitsABatchIntoWholeImagesAndTheRest) {
  std::mt19937 rng(4321);
  for (auto [n, threads] : {std::pair{3, 2}, std::pair{5, 2}, std::pair{4, 3}, std::pair{5, 3}}) {
    CheckConv({n, 1, 24, 20, {16, 16}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng, threads);
    CheckConv({n, 1, 8, 12, {13, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng, threads);
    CheckConv({n, 1, 6, 10, {20, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, rng, threads);
    CheckConv({n, 1, 4, 6, {6, 60}, {3, 39}, {1, 1}, {1, 1}, {1, 19, 1, 19}}, rng, threads);
    if (HasFatalFailure()) return;
  }
}

TEST(FastKernels, ConvLargeBlocks) {
  std::mt19937 rng(99);
  // A long reduction (several slabs), many output channels (several row blocks), wide output.
  CheckConv({1, 1, 40, 70, {13, 29}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({2, 1, 150, 9, {7, 33}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({2, 1, 3, 16, {48, 96}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 24, 1, 1, {12, 48}, {5, 5}, {1, 2}, {1, 1}, {2, 2, 2, 2}}, rng);
  CheckConv({1, 8, 1, 3, {1, 1}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}}, rng);
  CheckConv({3, 1, 33, 5, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  // Images of few output positions sharing one GEMM, a panel spanning several of them: one input
  // channel and a long strided window (an STFT as a 1-d conv), 25 positions a 5 x 5 image (panels
  // of 24 columns cut across images), grouped, and an image of one position.
  CheckConv({5, 1, 1, 40, {320}, {64}, {32}, {1}, {16, 16}}, rng);
  CheckConv({7, 1, 3, 30, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({4, 3, 2, 5, {6}, {3}, {1}, {1}, {1, 1}}, rng);
  CheckConv({9, 1, 12, 33, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  // 3x3 with unit strides (Winograd F(2x2, 3x3)): odd outputs (tiles past the edge), uneven and
  // no padding, batches, an output of one pixel, enough tiles for several blocks.
  // (Winograd takes 24 output channels or more; the same windows with fewer run on the padded
  // grid.)
  CheckConv({2, 1, 8, 41, {7, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 2, 1}}, rng);
  CheckConv({1, 1, 16, 36, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({3, 1, 33, 33, {23, 23}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({2, 1, 8, 9, {7, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 2, 1}}, rng);
  CheckConv({3, 1, 33, 17, {23, 23}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({1, 1, 12, 64, {61, 45}, {3, 3}, {1, 1}, {1, 1}, {2, 2, 2, 2}}, rng);
  // More images than an output row is long (their im2col written image-innermost): a speech
  // model's encoder over 80 chunks of 4 frames, and its STFT (strided, one channel).
  CheckConv({80, 1, 129, 16, {4}, {3}, {1}, {1}, {1, 1}}, rng);
  CheckConv({20, 1, 1, 30, {640}, {256}, {128}, {1}, {0, 0}}, rng);
  // A 3 x 39 kernel (taps of the last dim past 16) over an image whose im2col is 936 x 5,120 (too
  // narrow for the padded grid: packed panel by panel).
  CheckConv({1, 1, 8, 8, {40, 128}, {3, 39}, {1, 1}, {1, 1}, {1, 19, 1, 19}}, rng);
  // A 1x1 kernel with only trailing pads: more outputs than inputs, the last reading padding.
  CheckConv({2, 1, 5, 3, {6, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 1, 2}}, rng);
  CheckConv({1, 1, 4, 4, {9}, {1}, {1}, {1}, {0, 1}}, rng);
  // A (k, 1) kernel over an (L, 1) image, and (1, k) over (1, L): the dims of one are dropped.
  CheckConv({2, 1, 6, 9, {40, 1}, {5, 1}, {1, 1}, {1, 1}, {2, 0, 2, 0}}, rng);
  CheckConv({1, 1, 4, 7, {1, 33}, {1, 3}, {1, 2}, {1, 1}, {0, 1, 0, 1}}, rng);
  CheckConv({1, 1, 3, 5, {1, 1, 19}, {1, 1, 3}, {2, 1, 1}, {1, 1, 1}, {0, 0, 1, 0, 1, 1}}, rng);
  // One input channel, not grouped, on a wide image: a GEMM of K = the kernel's size.
  CheckConv({1, 1, 1, 16, {31, 57}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  // Unit strides on the padded grid (rows of B read in place): a long reduction (a detector's 3x3
  // head, but of 23 output channels: its 24 take Winograd), a grid of 98 columns per row, a
  // partial last panel; grouped, dilated with uneven pads, and a 1-d convolution. Then the
  // detector's head itself as Winograd.
  CheckConv({1, 1, 96, 23, {24, 47}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 1, 96, 24, {24, 47}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({2, 3, 5, 6, {13, 29}, {3, 5}, {1, 1}, {2, 1}, {2, 0, 1, 3}}, rng);
  CheckConv({1, 1, 7, 9, {1, 300}, {1, 9}, {1, 1}, {1, 3}, {0, 12, 0, 12}}, rng);
  // Depthwise 3x3 and 5x5 with rows of 16 outputs or more, in blocks of 4 rows by 16 columns:
  // rows and columns not whole blocks, strides (1, 1), (2, 1), (1, 2) and (2, 2) (the last dim's
  // stride 2 as even and odd phases), two outputs per channel, uneven pads, pads wider than the
  // window, a row of exactly 16, and rows of phases with no inside run of 16 inputs.
  CheckConv({2, 5, 1, 1, {13, 37}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}}, rng);
  CheckConv({1, 3, 1, 2, {11, 40}, {3, 3}, {2, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 4, 1, 1, {9, 70}, {3, 3}, {1, 2}, {1, 1}, {1, 0, 1, 2}}, rng);
  CheckConv({2, 3, 1, 1, {10, 66}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 3, 2}}, rng);
  CheckConv({1, 2, 1, 1, {4, 18}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({1, 2, 1, 1, {6, 20}, {3, 3}, {1, 1}, {1, 1}, {3, 3, 3, 3}}, rng);
  CheckConv({1, 2, 1, 1, {5, 33}, {5, 5}, {2, 2}, {1, 1}, {5, 3, 4, 6}}, rng);
  // Planes of several strips (16 output rows at a unit stride, 8 strided), the last partial.
  CheckConv({1, 2, 1, 1, {37, 20}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}}, rng);
  CheckConv({1, 2, 1, 1, {40, 18}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 2, 2}}, rng);
  CheckConv({1, 3, 1, 1, {35, 16}, {3, 3}, {2, 1}, {1, 1}, {0, 1, 1, 1}}, rng);
  // Strided ones over small planes of 16 channels or more, sixteen channels at a time where the
  // CPU has AVX-512: a last block of 4 and of 2 channels, a stride along one dim, uneven pads,
  // dilation, a 1 x 1 output.
  CheckConv({2, 20, 1, 1, {14, 14}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}}, rng);
  CheckConv({1, 34, 1, 1, {9, 11}, {3, 3}, {2, 1}, {1, 1}, {1, 0, 1, 2}}, rng);
  CheckConv({3, 16, 1, 1, {10, 9}, {3, 3}, {2, 2}, {2, 2}, {2, 2, 1, 2}}, rng);
  CheckConv({1, 17, 1, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}}, rng);
  // Strided ones with rows shorter than a block (the block's other columns on zeros).
  CheckConv({1, 3, 1, 1, {14, 14}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}}, rng);
  CheckConv({2, 4, 1, 1, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 2, 1, 1, {9, 12}, {3, 3}, {1, 2}, {1, 1}, {1, 1, 1, 1}}, rng);
  // Batches whose images run one per thread, each with scratch of its own (a multiple of the
  // threads, or four images per thread or more): on the padded grid (a 1 x 3 kernel, and grouped
  // 3x3), and as im2col panels (strided, 13 images over 3 threads).
  CheckConv({6, 1, 5, 7, {20, 16}, {1, 3}, {1, 1}, {1, 1}, {0, 1, 0, 1}}, rng);
  CheckConv({3, 2, 3, 4, {17, 33}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({13, 1, 5, 6, {40, 30}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, rng);
  // k x 1 windows without padding, where the image is the grid and the product is written into
  // y in place: one image, grouped and dilated, and a batch of images one per thread.
  CheckConv({1, 1, 6, 9, {12, 7}, {3, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({1, 2, 3, 4, {15, 9}, {3, 1}, {1, 1}, {2, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({3, 1, 5, 6, {20, 12}, {3, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  // Strided windows on the grid of phase planes (each row of the im2col matrix one plane read
  // from an offset): a network's 7x7 stem of stride 2 (every phase read), a 1x1 of stride 2 (one
  // phase: the image subsampled, at odd sizes), a dilated 3x3 of stride 3 (a dilation of 2 reads
  // phases 0, 2 and 1), strides (2, 1) and (1, 3) with uneven pads, a strided 1-d window, and a
  // stride of 5 (past the phases' limit: im2col panels).
  CheckConv({2, 1, 3, 20, {45, 38}, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}}, rng);
  CheckConv({1, 1, 17, 30, {15, 13}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({1, 1, 5, 9, {31, 34}, {3, 3}, {3, 3}, {2, 2}, {2, 1, 0, 2}}, rng);
  CheckConv({1, 2, 4, 6, {21, 30}, {3, 5}, {2, 1}, {1, 1}, {1, 2, 0, 1}}, rng);
  CheckConv({2, 1, 6, 11, {26, 40}, {4, 3}, {1, 3}, {1, 1}, {0, 1, 2, 1}}, rng);
  CheckConv({1, 1, 4, 8, {200}, {9}, {2}, {1}, {4, 3}}, rng);
  CheckConv({1, 1, 3, 7, {33, 36}, {5, 5}, {5, 5}, {1, 1}, {1, 1, 1, 1}}, rng);
  // Grids whose product is computed a strip of output rows at a time (more than 2^18 floats):
  // unit strides (24 x 130 rows of 102: strips of 107 rows and 23), and strided (40 x 100 rows
  // of 76).
  CheckConv({1, 1, 5, 24, {130, 100}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 1, 3, 40, {200, 150}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, rng);
  // A first layer: 3x3 of stride 2 over one to four input channels, computed directly (blocks
  // of 4 output channels by 16 columns): output channels not a whole number of blocks, rows not
  // a whole number of columns, uneven pads, a batch.
  CheckConv({2, 1, 3, 16, {31, 50}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 1, 1, 6, {20, 17}, {3, 3}, {2, 2}, {1, 1}, {0, 1, 1, 0}}, rng);
  CheckConv({1, 1, 4, 5, {9, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 0, 1}}, rng);
  // Depthwise at unit strides over planes of fewer than 16 outputs, sixteen channels at a time
  // where the CPU has AVX-512: a speech model's 1-d window over 8 positions in a batch (258
  // channels: a last block of 2), a dilated one, and 3x3 over a 3 x 4 plane with uneven pads.
  CheckConv({3, 258, 1, 1, {8}, {5}, {1}, {1}, {2, 2}}, rng);
  CheckConv({2, 20, 1, 1, {9}, {3}, {1}, {2}, {2, 1}}, rng);
  CheckConv({1, 33, 1, 1, {3, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 1, 2}}, rng);
  // Pointwise over a batch of images of 8, 4 and 6 positions taken as one product (each input
  // channel's row of the matrix gathered from every image, each image's block of the product
  // scattered back): 1-d, 2 x 2 and 2 x 3, grouped.
  CheckConv({20, 1, 24, 16, {8}, {1}, {1}, {1}, {0, 0}}, rng);
  CheckConv({9, 1, 17, 30, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
  CheckConv({7, 2, 5, 3, {2, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}, rng);
}

// Windows some of whose taps read only padding for every output, which the GEMM path drops
// (3x3 over rows of one pixel: an OCR model's neck), against the reference: images sharing a
// GEMM, one image on the padded grid, a 1-d window left one tap wide, a dilated window, strides,
// groups. Then one step's cache across image sizes that drop taps of rows, of columns, of both or
// none, and that take Winograd or not, in several orders: each run computes with the weights its
// own path and window need.
TEST(FastKernels, ConvDropsTapsThatReadOnlyPadding) {
  std::mt19937 rng(31);
  CheckConv({2, 1, 16, 8, {1, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 1, 6, 5, {1, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 1, 4, 6, {1}, {3}, {1}, {1}, {1, 1}}, rng);
  CheckConv({1, 1, 3, 4, {2, 9}, {3, 3}, {1, 1}, {2, 2}, {2, 1, 2, 1}}, rng);
  CheckConv({2, 1, 5, 7, {1, 20}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, rng);
  CheckConv({1, 2, 3, 4, {12, 1}, {5, 3}, {1, 1}, {1, 1}, {2, 1, 2, 1}}, rng);
  CheckConv({3, 1, 9, 10, {1, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, rng);
  if (HasFatalFailure()) return;
  Attrs attrs;
  attrs.Int("groups", 1)
      .Ints("strides", {1, 1})
      .Ints("dilation", {1, 1})
      .Ints("padding", {1, 1, 1, 1})
      .Str("auto_pad", "NOTSET");
  const rt::AttrView::List* list = attrs.Finish();
  // Forty output channels. Six input channels: a GEMM step. Ten: a step that takes Winograd on
  // images of enough tiles (20 x 20) and the GEMM path on others, its cache holding both.
  using Size = std::pair<int64_t, int64_t>;
  struct Order {
    int64_t channels;
    std::vector<Size> sizes;
  };
  for (const Order& order : {Order{6, {{1, 33}, {9, 33}, {1, 33}, {9, 1}, {1, 1}}},
                             Order{6, {{9, 33}, {1, 33}, {9, 1}, {1, 1}, {9, 33}}},
                             Order{10, {{20, 20}, {4, 4}, {1, 33}, {20, 20}, {4, 4}}},
                             Order{10, {{1, 33}, {4, 4}, {20, 20}, {9, 1}, {20, 20}}}}) {
    int64_t c = order.channels;
    std::vector<float> w = Random(rng, 40 * c * 9);
    rt::StepCache cache;
    for (Size size : order.sizes) {
      Shape xs = {1, c, size.first, size.second};
      std::vector<float> x = Random(rng, Count(xs));
      std::vector<Tensor> inputs = {Tensor{DType::kFloat32, xs, x.data()},
                                    Tensor{DType::kFloat32, {40, c, 3, 3}, w.data()}};
      TestContext ref(inputs, list, nullptr);
      ASSERT_TRUE(nn::ConvReference(ref).ok());
      TestContext got(inputs, list, nullptr);
      got.SetCache(&cache, uint64_t{1} << 1);
      Status st = nn::ConvFast(got);
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<float> v = got.values(), want = ref.values();
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
            << c << " channels, image " << size.first << " x " << size.second
            << ", the cache's first image " << order.sizes[0].first << " x "
            << order.sizes[0].second << ", element " << i;
      }
    }
  }
}

// The fused epilogue: a per-channel bias (of shape (1, O, 1, 1) or (O,)), adds and multiplies
// before the activation (relu, clip, the hardswishes, silu, sigmoid, leaky_relu, prelu) and
// adds, multiplies, divides, maximums and minimums after it, on every path of the fast conv.
// A conv on each path of the fast conv, for the epilogue tests.
std::vector<ConvCase> EpiloguePaths() {
  return {
      {2, 1, 3, 5, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},    // GEMM
      {1, 1, 8, 24, {7, 13}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},   // pointwise
      {2, 6, 1, 1, {10, 19}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},   // depthwise, unit stride
      {1, 6, 1, 2, {9, 9}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}},     // depthwise, strided
      {2, 6, 1, 1, {10, 37}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},   // depthwise, blocks of 4x16
      {1, 4, 1, 1, {9, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},    // the same, strided
      {2, 3, 1, 1, {14, 14}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}},   // rows shorter than a block
      {2, 1, 3, 6, {17, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},   // a first layer, direct
      {1, 2, 3, 2, {8, 6}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}},     // grouped, dilated
      {2, 1, 2, 3, {17}, {3}, {1}, {1}, {1, 1}},                      // 1-d
      {2, 1, 16, 40, {2, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},   // few columns
      {1, 1, 4, 70, {13, 29}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},  // several blocks of C
      {6, 1, 1, 9, {40}, {8}, {4}, {1}, {2, 2}},                      // images share a GEMM
      {3, 2, 3, 4, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},     // the same, grouped
      {2, 1, 9, 40, {14, 27}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},  // Winograd
      {2, 18, 1, 1, {14, 14}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}},  // depthwise, 16 channels
      // More images than an output row is long: each image's plane of a channel read once for
      // its taps (a VAD's 1-d encoder; grouped and dilated 2-d; 512 taps, in chunks)
      {20, 1, 5, 6, {6}, {3}, {2}, {1}, {1, 1}},
      // (a unit stride: a tap whose outputs read one run of the plane copies it, its neighbours
      // reading padding gather; in 2-d the run spans rows)
      {20, 1, 5, 6, {4}, {3}, {1}, {1}, {1, 1}},
      {9, 1, 3, 4, {3, 4}, {1, 3}, {1, 1}, {1, 1}, {0, 1, 0, 1}},
      // (each image's rows of 1, 5, 6 and 8 positions moved into y by fixed-size copies)
      {7, 1, 3, 5, {5}, {5}, {1}, {1}, {0, 0}},
      {10, 1, 2, 3, {9}, {5}, {1}, {1}, {0, 0}},
      {10, 1, 2, 3, {8}, {3}, {1}, {1}, {0, 0}},
      {10, 1, 2, 3, {8}, {3}, {1}, {1}, {1, 1}},
      {9, 2, 3, 4, {3, 4}, {3, 3}, {1, 1}, {2, 2}, {2, 1, 2, 1}},
      {12, 1, 1, 3, {656}, {512}, {16}, {1}, {0, 0}},
      // A handful of output positions and rows enough for a panel: A^T laid out in the step's
      // cache (FewColumnsA), a 1-d window's columns read in place from the image laid out
      // (position, channel) (a VAD's encoder; a STFT's 258 filters, the image itself, their
      // reduction shortened: these epilogues' outputs cancel, and at 256 taps the float sums of
      // any order stray past the tolerance from the reference's; strided, grouped, padded at one
      // end, past both ends of the image with the taps that read padding alone dropped, past its
      // end alone, a single padded channel), a dilated 1-d window's gathered, an
      // im2col matrix (a 3-d window, which no grid takes), images sharing one product; and a
      // 2-d window whose grid rows make more columns than that (weights laid out, not used)
      {1, 1, 129, 128, {4}, {3}, {1}, {1}, {1, 1}},
      {1, 1, 1, 258, {320}, {64}, {64}, {1}, {0, 0}},
      {1, 1, 128, 64, {4}, {3}, {2}, {1}, {1, 1}},
      {1, 2, 40, 24, {5}, {3}, {1}, {1}, {2, 0}},
      {1, 1, 3, 24, {3}, {7}, {1}, {1}, {3, 3}},
      {1, 1, 8, 24, {4}, {5}, {1}, {1}, {1, 3}},
      {1, 1, 1, 24, {20}, {6}, {3}, {1}, {2, 1}},
      {1, 1, 16, 24, {9}, {3}, {1}, {2}, {0, 0}},
      {1, 1, 4, 32, {2, 3, 4}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}},
      {3, 1, 16, 40, {1, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 2, 12, 24, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
  };
}

TEST(FastKernels, ConvEpilogueMatchesTheReference) {
  std::mt19937 rng(11);
  const std::vector<ConvCase> cases = EpiloguePaths();
  struct Act {
    bool bias;
    std::string activation;
    std::vector<std::pair<std::string, double>> bounds;
    std::string affine = "";  // or the attribute affine: one input per letter, no bias
    bool one = false;         // the affine and post inputs one value for every channel
    std::string post = "";    // the attribute post: one input per letter after those
  };
  const std::vector<Act> acts = {
      {true, "", {}},
      {true, "relu", {}},
      {false, "relu", {}},
      {true, "clip", {{"activation_min", -0.3}, {"activation_max", 0.4}}},
      {true, "clip", {{"activation_max", 0.2}}},
      {false, "clip", {{"activation_min", 0.0}, {"activation_max", 6.0}}},
      {true, "hardswish", {}},
      {false, "hardswish", {}},
      {true, "hard_swish", {}},
      {false, "hard_swish", {}},
      {true, "silu", {}},
      {false, "silu", {}},
      {true, "sigmoid", {}},
      {false, "sigmoid", {}, "sb"},
      {true, "sigmoid", {}, "", false, "s"},
      {false, "hardswish", {}, "sb"},
      {false, "", {}, "s"},
      {false, "clip", {{"activation_min", -0.3}, {"activation_max", 0.4}}, "bsb"},
      {false, "relu", {}, "bss"},
      {false, "hardswish", {}, "bsb", true},
      {false, "", {}, "b", true},
      {false, "hardswish", {}, "bsb", true, "dsb"},
      {true, "relu", {}, "", false, "sd"},
      {false, "clip", {{"activation_max", 0.2}}, "s", false, "bbb"},
      {true, "leaky_relu", {{"activation_alpha", 0.2}}},
      {false, "leaky_relu", {}},  // alpha 0.01
      {true, "prelu", {}},
      {false, "prelu", {}, "bs", true},
      {true, "leaky_relu", {{"activation_alpha", 0.1}}, "", false, "x"},
      {true, "prelu", {}, "", false, "nxb"},
      {false, "relu", {}, "s", true, "xn"},
  };
  for (const ConvCase& c : cases) {
    for (const Act& act : acts) {
      Shape x, w;
      ConvShapes(c, &x, &w);
      Attrs attrs;
      ConvAttrs(c, attrs);
      if (!act.activation.empty()) attrs.Str("activation", act.activation);
      for (const auto& [name, v] : act.bounds) attrs.Float(name, v);
      std::vector<Shape> shapes = {x, w};
      Shape per_channel(x.size() - 1, 1);
      if (!act.one) per_channel[0] = w[0];  // (O, 1, ...), as the compiler passes the add's
      if (!act.affine.empty()) attrs.Str("affine", act.affine);
      for (size_t i = 0; i < act.affine.size(); ++i) shapes.push_back(per_channel);
      if (act.bias) shapes.push_back(per_channel);
      if (act.activation == "prelu") shapes.push_back(per_channel);  // the slope
      if (!act.post.empty()) attrs.Str("post", act.post);
      for (size_t i = 0; i < act.post.size(); ++i) shapes.push_back(per_channel);
      std::string what = "conv x (" + Join(x) + ") w (" + Join(w) + ") bias " +
                         (act.bias ? "yes" : "no") + " affine '" + act.affine + "'" +
                         (act.one ? " (one value)" : "") + " activation '" + act.activation +
                         "' post '" + act.post + "'";
      Compare(nn::ConvFast, nn::ConvReference, shapes, attrs, rng, what);
    }
  }
}

// The output dims of conv case c (explicit pads).
Shape ConvOutShape(const ConvCase& c) {
  Shape out = {c.n, c.groups * c.og};
  size_t rank = c.in.size();
  for (size_t d = 0; d < rank; ++d) {
    int64_t dk = (c.kernel[d] - 1) * c.dilation[d] + 1;
    out.push_back((c.in[d] + c.pads[d] + c.pads[rank + d] - dk) / c.stride[d] + 1);
  }
  return out;
}

// A residual input (attribute residual): a tensor of the output's shape added after the affine
// ops and before the activation, on every path of the fast conv (added as the GEMM writes y, or
// in a pass after the others), with a bias, affine ops, the activations and post ops around it,
// against the reference.
TEST(FastKernels, ConvResidualMatchesTheReference) {
  std::mt19937 rng(19);
  struct Act {
    std::string affine;  // none: no input before the residual
    std::string activation;
    std::string post = "";
  };
  const std::vector<Act> acts = {
      {"b", "relu"},       {"", ""},           {"bs", "hardswish"}, {"b", "silu"},
      {"b", "prelu", "x"}, {"s", "clip", "b"}, {"b", "sigmoid"},    {"", "sigmoid", "b"},
  };
  for (const ConvCase& c : EpiloguePaths()) {
    for (const Act& act : acts) {
      Shape x, w;
      ConvShapes(c, &x, &w);
      Attrs attrs;
      ConvAttrs(c, attrs).Int("residual", 1);
      if (!act.activation.empty()) attrs.Str("activation", act.activation);
      if (act.activation == "clip")
        attrs.Float("activation_min", -0.2).Float("activation_max", 0.3);
      std::vector<Shape> shapes = {x, w};
      Shape per_channel(x.size() - 1, 1);
      per_channel[0] = w[0];
      attrs.Str("affine", act.affine);
      for (size_t i = 0; i < act.affine.size(); ++i) shapes.push_back(per_channel);
      shapes.push_back(ConvOutShape(c));
      if (act.activation == "prelu") shapes.push_back(per_channel);
      if (!act.post.empty()) attrs.Str("post", act.post);
      for (size_t i = 0; i < act.post.size(); ++i) shapes.push_back(per_channel);
      std::string what = "conv x (" + Join(x) + ") w (" + Join(w) + ") affine '" + act.affine +
                         "' residual, activation '" + act.activation + "' post '" + act.post + "'";
      Compare(nn::ConvFast, nn::ConvReference, shapes, attrs, rng, what);
      if (HasFatalFailure()) return;
    }
  }
  // A residual of another shape is refused by both convs, with the shapes in the message.
  std::vector<float> xv(1 * 2 * 4 * 4, 1.0f), wv(3 * 2, 1.0f), r(3 * 4 * 3, 0.5f);
  Attrs attrs;
  const rt::AttrView::List* list = attrs.Int("residual", 1).Finish();
  std::vector<Tensor> in = {Tensor{DType::kFloat32, {1, 2, 4, 4}, xv.data()},
                            Tensor{DType::kFloat32, {3, 2, 1, 1}, wv.data()},
                            Tensor{DType::kFloat32, {1, 3, 4, 3}, r.data()}};
  for (rt::KernelFn fn : {nn::ConvFast, nn::ConvReference}) {
    TestContext ctx(in, list, nullptr);
    Status st = fn(ctx);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(
        st.message().find("residual input (1, 3, 4, 3) is not of the output's shape (1, 3, 4, 4)"),
        std::string::npos)
        << st.message();
  }
}

// Both convs refuse an epilogue input that does not fit its output channels (3 here): the
// data (1, 2, 4, 4), the weight (3, 2, 1, 1), then `extra` (none when its shape is empty); each
// message holds `want`.
void ExpectConvRefuses(const std::string& activation, const Shape& extra, const std::string& want) {
  std::vector<float> x(1 * 2 * 4 * 4, 1.0f), w(3 * 2 * 1 * 1, 1.0f), e(2, 0.5f);
  Attrs attrs;
  const rt::AttrView::List* list = attrs.Str("activation", activation).Finish();
  std::vector<Tensor> in = {Tensor{DType::kFloat32, {1, 2, 4, 4}, x.data()},
                            Tensor{DType::kFloat32, {3, 2, 1, 1}, w.data()}};
  if (!extra.empty()) in.push_back(Tensor{DType::kFloat32, extra, e.data()});
  for (rt::KernelFn fn : {nn::ConvFast, nn::ConvReference}) {
    TestContext ctx(in, list, nullptr);
    Status st = fn(ctx);
    EXPECT_FALSE(st.ok()) << activation << " with (" << Join(extra) << ")";
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  }
}

TEST(FastKernels, ConvRefusesASlopeOfTheWrongSizeOrNone) {
  ExpectConvRefuses("prelu", {2}, "(3) or one for all");
  ExpectConvRefuses("prelu", {}, "");
}

TEST(FastKernels, ConvRefusesABiasOfTheWrongSize) { ExpectConvRefuses("relu", {1, 2, 1, 1}, ""); }

// The matrix-vector product of a recurrent layer's batch of one, A laid out transposed in blocks
// of 64 columns (TransposedBlocks), against a double reference within the bound of a sum of k
// products rounded in order (k * 2^-24 times the sum of their magnitudes): full blocks, a last
// narrower one (columns by eight and one by one), reductions of one to 600, on one thread and on
// three (tasks of whole blocks; each sum in the order of p either way, so the same bits).
TEST(FastKernels, TransposedMatrixVectorMatchesTheReference) {
  std::mt19937 rng(5);
  rt::ThreadPool three(3);
  for (int64_t m : {1, 7, 8, 63, 64, 65, 200, 520}) {
    for (int64_t k : {1, 3, 64, 600}) {
      std::vector<float> a = Random(rng, m * k), x = Random(rng, k);
      std::vector<float> at = TransposedBlocks(a.data(), m, k);
      ASSERT_EQ(at.size(), a.size());
      std::vector<float> one;
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        std::vector<float> y(static_cast<size_t>(m), -7.0f);
        SgemvTransposed(m, k, at.data(), x.data(), y.data(), pool);
        for (int64_t j = 0; j < m; ++j) {
          double want = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            double t =
                static_cast<double>(a[static_cast<size_t>(j * k + p)]) * x[static_cast<size_t>(p)];
            want += t;
            magnitude += std::abs(t);
          }
          ASSERT_LE(std::abs(y[static_cast<size_t>(j)] - want),
                    static_cast<double>(k) * std::ldexp(1.0, -24) * magnitude + 1e-30)
              << "m " << m << " k " << k << " column " << j << (pool ? ", 3 threads" : "");
        }
        if (!pool) {
          one = y;
        } else {
          for (int64_t j = 0; j < m; ++j) {
            ASSERT_EQ(std::bit_cast<uint32_t>(one[static_cast<size_t>(j)]),
                      std::bit_cast<uint32_t>(y[static_cast<size_t>(j)]))
                << "m " << m << " k " << k << " column " << j << ": 1 and 3 threads differ";
          }
        }
      }
    }
  }
}

// Slices and transposes large enough to be copied on the step's threads (CopyStrided: rows of
// the merged view split among them; a single long run split into blocks), on one thread and on
// three, against the elements picked by hand.
TEST(FastKernels, LargeSlicesAndTransposesOnSeveralThreadsPickEveryElement) {
  rt::KernelFn slice = FindKernel("strided_slice");
  rt::KernelFn permute = FindKernel("permute_dims");
  ASSERT_NE(slice, nullptr);
  ASSERT_NE(permute, nullptr);
  rt::ThreadPool three(3);
  // x: (3, 322, 322), x[c][h][w] = c * 1e6 + h * 1000 + w (exact in float).
  const int64_t C = 3, H = 322, W = 322;
  std::vector<float> x(static_cast<size_t>(C * H * W));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        x[static_cast<size_t>((c * H + h) * W + w)] = float(c * 1000000 + h * 1000 + w);
  Tensor tx{DType::kFloat32, {C, H, W}, x.data()};
  auto value = [&](int64_t c, int64_t h, int64_t w) { return float(c * 1000000 + h * 1000 + w); };
  struct Case {
    std::string what;
    rt::KernelFn fn;
    std::function<void(Attrs&)> attrs;
    Shape out;
    std::function<float(int64_t, int64_t, int64_t)> want;  // at output (i, j, k)
  };
  std::vector<Case> cases = {
      // Every second row and column, from 1 (a space-to-depth's slice): strided rows.
      {"x[:, 1::2, 1::2]",
       slice,
       [](Attrs& a) {
         a.Ints("axes", {1, 2}).Ints("begin", {1, 1}).Ints("end", {H, W}).Ints("strides", {2, 2});
       },
       {C, 161, 161},
       [&](int64_t i, int64_t j, int64_t k) { return value(i, 1 + 2 * j, 1 + 2 * k); }},
      // Rows 5 to 300 whole: contiguous rows, merged into one long run per channel.
      {"x[:, 5:300, :]",
       slice,
       [](Attrs& a) {
         a.Ints("axes", {1}).Ints("begin", {5}).Ints("end", {300}).Ints("strides", {1});
       },
       {C, 295, W},
       [&](int64_t i, int64_t j, int64_t k) { return value(i, 5 + j, k); }},
      // The whole tensor from channel 1: one run of 2 * H * W elements, split into blocks.
      {"x[1:]",
       slice,
       [](Attrs& a) {
         a.Ints("axes", {0}).Ints("begin", {1}).Ints("end", {C}).Ints("strides", {1});
       },
       {C - 1, H, W},
       [&](int64_t i, int64_t j, int64_t k) { return value(1 + i, j, k); }},
      // Channels last: every element its own piece.
      {"permute (1, 2, 0)",
       permute,
       [](Attrs& a) {
         a.Ints("axes", {1, 2, 0});
       },
       {H, W, C},
       [&](int64_t i, int64_t j, int64_t k) { return value(k, i, j); }},
      // Rows and columns swapped.
      {"permute (0, 2, 1)",
       permute,
       [](Attrs& a) {
         a.Ints("axes", {0, 2, 1});
       },
       {C, W, H},
       [&](int64_t i, int64_t j, int64_t k) { return value(i, k, j); }},
  };
  for (const Case& cs : cases) {
    Attrs attrs;
    cs.attrs(attrs);
    const rt::AttrView::List* list = attrs.Finish();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext ctx({tx}, list, pool);
      Status st = cs.fn(ctx);
      ASSERT_TRUE(st.ok()) << cs.what << ": " << st.message();
      ASSERT_EQ(ctx.out().shape, cs.out) << cs.what;
      std::vector<float> got = ctx.values();
      for (int64_t i = 0; i < cs.out[0]; ++i)
        for (int64_t j = 0; j < cs.out[1]; ++j)
          for (int64_t k = 0; k < cs.out[2]; ++k) {
            size_t at = static_cast<size_t>((i * cs.out[1] + j) * cs.out[2] + k);
            ASSERT_EQ(got[at], cs.want(i, j, k)) << cs.what << " at (" << i << ", " << j << ", "
                                                 << k << ")" << (pool ? ", 3 threads" : "");
          }
    }
  }
}

// A concat large enough to be copied on the step's threads: along an axis with one outer step
// (its large pieces copied in blocks by CopyStrided) and along an inner one with many (split
// across them), on one thread and on three, against the elements placed by hand.
TEST(FastKernels, LargeConcatsOnSeveralThreadsPlaceEveryElement) {
  rt::KernelFn concat = FindKernel("concat");
  ASSERT_NE(concat, nullptr);
  rt::ThreadPool three(3);
  struct Case {
    Shape base;  // the shape of every tensor but along `axis`
    int64_t axis;
    std::vector<int64_t> sizes;  // each tensor's extent along `axis`
  };
  for (const Case& cs : {Case{{1, 0, 64, 64}, 1, {5, 17, 40}},
                         Case{{8, 4, 0, 32}, 2, {100, 157, 300}}, Case{{3, 0, 5}, 1, {9000, 7}}}) {
    std::vector<std::vector<float>> data;
    std::vector<Tensor> inputs;
    for (size_t t = 0; t < cs.sizes.size(); ++t) {
      Shape shape = cs.base;
      shape[static_cast<size_t>(cs.axis)] = cs.sizes[t];
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      data.emplace_back(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) data.back()[static_cast<size_t>(i)] = float(t * 1000000 + i);
      inputs.push_back(Tensor{DType::kFloat32, shape, data.back().data()});
    }
    int64_t outer = 1, inner = 1, total = 0;
    for (int64_t d = 0; d < cs.axis; ++d) outer *= cs.base[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(cs.axis) + 1; d < cs.base.size(); ++d) inner *= cs.base[d];
    for (int64_t e : cs.sizes) total += e;
    // Output element (o, a, i): tensor t's element (o, a - start of t, i).
    std::vector<float> want;
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t t = 0; t < cs.sizes.size(); ++t) {
        for (int64_t a = 0; a < cs.sizes[t] * inner; ++a) {
          want.push_back(data[t][static_cast<size_t>(o * cs.sizes[t] * inner + a)]);
        }
      }
    }
    ASSERT_EQ(static_cast<int64_t>(want.size()), outer * total * inner);
    Attrs attrs;
    attrs.Int("axis", cs.axis);
    const rt::AttrView::List* list = attrs.Finish();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext ctx(inputs, list, pool);
      ctx.SetVariadicFirst(static_cast<int>(inputs.size()));
      Status st = concat(ctx);
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<float> got = ctx.values();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i], want[i])
            << "axis " << cs.axis << ", element " << i << (pool ? ", 3 threads" : "");
      }
    }
  }
}

struct GemmCase {
  int64_t m, n, k;
};

// The epilogue CheckGemmWays gives the products: none; a bias, a residual and bounds; a bias and
// a hardswish; a bias and a silu; a scale, a bias, a residual, ONNX's HardSwish, then a maximum
// and two divides (by a value per row, by one for all); an add, a bias and a negative slope; a
// bias, a residual and a sigmoid; a bias, a sigmoid and a scale; a bias and bounds.
enum class GemmEpilogueKind {
  kNone,
  kBiasResidualClamp,
  kBiasClamp,
  kBiasHardSwish,
  kBiasSilu,
  kChain,
  kLeaky,
  kBiasResidualSigmoid,
  kBiasSigmoidScale
};

// C = A B for each case four ways (B packed by the product, A packed ahead, B's rows read in
// place, B packed ahead as a constant weight is), and for at most kFewColumns columns two more (A
// laid out as FewColumnsA, B packed or its rows read in place), on one thread and on three, with
// `kind`'s epilogue, against a double reference; and where the CPU has AVX-512, with the 16-lane
// kernels against the 8-lane ones, bit for bit.
void CheckGemmWays(const std::vector<GemmCase>& cases, std::mt19937& rng,
                   GemmEpilogueKind kind = GemmEpilogueKind::kNone) {
  rt::ThreadPool three(3);
  const bool both = HasAvx512Gemm();
  for (GemmCase cs : cases) {
    std::vector<float> a = Random(rng, cs.m * cs.k), b = Random(rng, cs.k * cs.n);
    std::vector<float> bias = Random(rng, cs.m), residual = Random(rng, cs.m * cs.n);
    std::vector<double> want(static_cast<size_t>(cs.m * cs.n), 0.0);
    for (int64_t i = 0; i < cs.m; ++i) {
      for (int64_t p = 0; p < cs.k; ++p) {
        for (int64_t j = 0; j < cs.n; ++j) {
          want[static_cast<size_t>(i * cs.n + j)] +=
              static_cast<double>(a[static_cast<size_t>(i * cs.k + p)]) *
              b[static_cast<size_t>(p * cs.n + j)];
        }
      }
    }
    GemmEpilogue epilogue;
    // Per row: a scale, an add before the bias; a maximum and a divisor after the activation.
    std::vector<float> scale = Random(rng, cs.m), add = Random(rng, cs.m),
                       floor = Random(rng, cs.m);
    std::vector<float> divisor(static_cast<size_t>(cs.m));
    static const float kOneDivisor = 6.0f;  // and one for every row
    for (float& d : divisor) d = std::uniform_real_distribution<float>(0.5f, 2.0f)(rng);
    if (kind != GemmEpilogueKind::kNone) {
      epilogue.bias = bias.data();
      for (int64_t i = 0; i < cs.m; ++i) {
        const auto r = static_cast<size_t>(i);
        for (int64_t j = 0; j < cs.n; ++j) {
          double& v = want[static_cast<size_t>(i * cs.n + j)];
          const double res = residual[static_cast<size_t>(i * cs.n + j)];
          if (kind == GemmEpilogueKind::kChain) v *= scale[r];
          if (kind == GemmEpilogueKind::kLeaky) v += add[r];
          v += bias[r];
          if (kind == GemmEpilogueKind::kBiasResidualClamp) {
            v = std::clamp(v + res, -0.5, 1.5);
          } else if (kind == GemmEpilogueKind::kBiasClamp) {
            v = std::clamp(v, -0.5, 1.5);
          } else if (kind == GemmEpilogueKind::kBiasHardSwish) {
            v = v * std::clamp(v + 3, 0.0, 6.0);
          } else if (kind == GemmEpilogueKind::kBiasSilu) {
            v = v / (1 + std::exp(-v));
          } else if (kind == GemmEpilogueKind::kBiasResidualSigmoid) {
            v = 1 / (1 + std::exp(-(v + res)));
          } else if (kind == GemmEpilogueKind::kBiasSigmoidScale) {
            v = scale[r] / (1 + std::exp(-v));
          } else if (kind == GemmEpilogueKind::kChain) {
            v += res;
            v = v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
            v = std::max<double>(v, floor[r]) / divisor[r] / kOneDivisor;
          } else {
            v = v < 0 ? v * 0.125 : v;
          }
        }
      }
    }
    if (kind == GemmEpilogueKind::kBiasResidualClamp || kind == GemmEpilogueKind::kChain ||
        kind == GemmEpilogueKind::kBiasResidualSigmoid) {
      epilogue.residual = residual.data();
      epilogue.residual_ld = cs.n;
    }
    if (kind == GemmEpilogueKind::kBiasResidualClamp || kind == GemmEpilogueKind::kBiasClamp) {
      epilogue.lo = -0.5f;
      epilogue.hi = 1.5f;
    }
    epilogue.hardswish = kind == GemmEpilogueKind::kBiasHardSwish;
    epilogue.smooth = kind == GemmEpilogueKind::kBiasSilu ? vmath::Smooth::kSilu
                      : kind == GemmEpilogueKind::kBiasResidualSigmoid ||
                              kind == GemmEpilogueKind::kBiasSigmoidScale
                          ? vmath::Smooth::kSigmoid
                          : vmath::Smooth::kNone;
    if (kind == GemmEpilogueKind::kBiasSigmoidScale) epilogue.post.Add('s', scale.data(), 1);
    if (kind == GemmEpilogueKind::kChain) {
      epilogue.pre.Add('s', scale.data(), 1);
      epilogue.hard_swish = true;
      epilogue.post.Add('x', floor.data(), 1);
      epilogue.post.Add('d', divisor.data(), 1);
      epilogue.post.Add('d', &kOneDivisor, 0);
    }
    if (kind == GemmEpilogueKind::kLeaky) {
      epilogue.pre.Add('b', add.data(), 1);
      epilogue.negative_slope = true;
      epilogue.alpha = 0.125f;
    }
    const GemmEpilogue* e = kind == GemmEpilogueKind::kNone ? nullptr : &epilogue;
    std::vector<int64_t> offs(static_cast<size_t>(cs.k));
    for (int64_t p = 0; p < cs.k; ++p) offs[static_cast<size_t>(p)] = p * cs.n;
    PackedA packed(a.data(), cs.k, cs.m, cs.k);
    FewColumnsA few(a.data(), cs.k, cs.m, cs.k);
    PackedB packed_b(MatrixB(b.data(), cs.k, cs.n), cs.k, cs.n);
    for (int how = 0; how < 6; ++how) {
      if ((how == 3 || how == 4) && cs.n > kFewColumns) continue;
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        auto run = [&](bool avx512) {
          SetAvx512GemmAllowedForTesting(avx512);
          std::vector<float> c(static_cast<size_t>(cs.m * cs.n), -7.0f);
          if (how == 0) {
            Sgemm(cs.m, cs.n, cs.k, a.data(), cs.k, MatrixB(b.data(), cs.k, cs.n), c.data(), cs.n,
                  pool, e);
          } else if (how == 1) {
            Sgemm(cs.m, cs.n, cs.k, a.data(), cs.k, MatrixB(b.data(), cs.k, cs.n), c.data(), cs.n,
                  pool, e, &packed);
          } else if (how == 2) {
            SgemmRows(cs.m, cs.n, cs.k, a.data(), cs.k, b.data(), offs.data(), c.data(), cs.n, pool,
                      e);
          } else if (how == 3) {
            SgemmFewColumns(cs.n, few, MatrixB(b.data(), cs.k, cs.n), c.data(), cs.n, pool, e);
          } else if (how == 5) {
            Sgemm(cs.m, cs.n, cs.k, a.data(), cs.k, packed_b, c.data(), cs.n, pool, e);
          } else if (how == 4) {
            SgemmRowsFewColumns(cs.n, few, b.data(), offs.data(), c.data(), cs.n, pool, e);
          }
          SetAvx512GemmAllowedForTesting(true);
          return c;
        };
        std::vector<float> wide = run(true), narrow = both ? run(false) : wide;
        std::string what = "gemm " + std::to_string(cs.m) + " x " + std::to_string(cs.n) + " x " +
                           std::to_string(cs.k) +
                           (how == 0   ? ""
                            : how == 1 ? ", A packed"
                            : how == 2 ? ", B in place"
                            : how == 3 ? ", A^T laid out"
                            : how == 4 ? ", A^T laid out, B in place"
                                       : ", B packed ahead") +
                           (pool ? ", 3 threads" : "");
        for (size_t i = 0; i < wide.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(narrow[i]))
              << what << ", element " << i << ": " << wide[i] << " vs " << narrow[i];
          ASSERT_LE(std::abs(wide[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
              << what << ", element " << i << ": " << wide[i] << " vs " << want[i];
        }
      }
    }
  }
}

// The AVX-512 block kernels (eight rows by 24 columns as 16 + 8 lanes, and by two panels of 24
// as three 16-lane vectors, and a block's last 2 to 7 rows by two panels) against the 8-lane one
// and a double reference: rows not a multiple of eight, last panels of fewer than 24 columns (a
// pair's second among them), reductions over several slabs of 128, B packed by the product or read
// in place (SgemmRows), A packed ahead or (16-lane kernel) read in place, on one thread and on
// three. Each sum runs over the reduction in the same order in both kernels, so their values are
// equal bit for bit.
TEST(FastKernels, Avx512GemmMatchesTheEightLaneKernel) {
  if (!HasAvx512Gemm())
    GTEST_SKIP() << "this CPU has no AVX-512 F and VL: only the 8-lane kernel runs";
  std::mt19937 rng(77);
  CheckGemmWays(
      {GemmCase{8, 24, 5}, GemmCase{13, 50, 130}, GemmCase{64, 24, 300}, GemmCase{67, 100, 129},
       GemmCase{9, 31, 1}, GemmCase{200, 75, 260}, GemmCase{16, 48, 128}, GemmCase{16, 40, 140},
       GemmCase{11, 37, 3},
       // partial panels stored through masks: 20 and 16 of 24 columns, 44 of 48, over
       // several slabs (each adding to C)
       GemmCase{16, 20, 300}, GemmCase{9, 16, 200}, GemmCase{24, 44, 257},
       // last rows of a block (2 to 7) by whole pairs of panels, in one 16-lane kernel:
       // a fifth row's sums in four sets as the 8-lane kernel's single row
       GemmCase{10, 48, 130}, GemmCase{14, 96, 300}, GemmCase{15, 52, 200}, GemmCase{12, 48, 50},
       GemmCase{6, 48, 129}, GemmCase{69, 48, 257},
       // fewer rows than a panel's four by B packed ahead (FewRowsPanel), one to three rows by
       // pairs of whole panels in one 16-lane kernel (a single row's sums in four sets as the
       // 8-lane kernel's, over reductions of every remainder by four)
       GemmCase{2, 96, 300}, GemmCase{3, 100, 140}, GemmCase{1, 50, 129}, GemmCase{3, 20, 7},
       GemmCase{1, 96, 258}, GemmCase{1, 148, 131}, GemmCase{1, 48, 4},
       // a single row's last panel alone, in 16 + 8, 16 or 8 lanes as its columns need (a dense
       // layer's 1536 -> 128: a whole panel and one of 8 after two pairs); short reductions
       GemmCase{1, 128, 1536}, GemmCase{1, 72, 130}, GemmCase{1, 64, 131}, GemmCase{1, 20, 9},
       GemmCase{1, 10, 3}, GemmCase{1, 16, 5}, GemmCase{1, 8, 133}},
      rng);
}

// Products of at most eight columns: dot products along A's rows, eight lanes at a time:
// matrix-vector products of rows by six and the rest, two to eight columns by three rows and the
// rest, reductions short of eight, of whole multiples and with a tail. And from A^T laid out
// (FewColumnsA): C^T of one to three rows (a panel at a time) and of four to eight (the block
// kernels; five to seven by whole pairs of panels in one), A^T of one panel, of several with a
// partial last one (258 rows: a STFT's filters),
// and of at most eight columns (taking the product's own few-columns path), a reduction over
// several slabs of 128, none at all.
TEST(FastKernels, GemmOfFewColumnsMatchesTheReference) {
  std::mt19937 rng(79);
  CheckGemmWays(
      {GemmCase{20, 1, 300}, GemmCase{7, 5, 47}, GemmCase{13, 8, 16}, GemmCase{9, 3, 5},
       GemmCase{40, 2, 129}, GemmCase{4, 7, 1}, GemmCase{12, 6, 64}, GemmCase{30, 4, 387},
       GemmCase{24, 3, 50}, GemmCase{258, 4, 256}, GemmCase{128, 8, 387}, GemmCase{64, 1, 384},
       GemmCase{100, 6, 0}, GemmCase{96, 5, 256}, GemmCase{100, 7, 300}, GemmCase{50, 6, 140}},
      rng);
}

// The epilogues applied by the AVX-512 block kernels as they store C (in the registers of the
// 8 x 48 kernel, on each other tile just after it), against the 8-lane kernel's pass over each
// block after it, bit for bit, and a double reference: tiles of every kernel (8 x 48, 8 x 24, the
// last rows, a pair's short second panel, narrow last columns), several slabs, several row blocks,
// no reduction at all (B's rows in place then none to read), products of few columns (A^T laid
// out: the bias and bounds applied as C^T is written into C, every other epilogue after), one
// thread and three. Each kind of epilogue: the bias, a residual and bounds (the 8 x 48 kernel's
// shortest); the bias and bounds alone; a hardswish; a silu
// (vmath's sigmoid on 16 lanes against the scalar loop's); affine ops before and after ONNX's
// HardSwish with a residual; an add and a leaky relu; a residual and a sigmoid (vmath's on 16
// lanes against the scalar loop's); a sigmoid and a scale after it.
TEST(FastKernels, GemmEpilogueMatchesTheReference) {
  std::mt19937 rng(80);
  const std::vector<GemmCase> cases = {
      GemmCase{67, 100, 129}, GemmCase{13, 50, 300}, GemmCase{130, 147, 40}, GemmCase{9, 31, 1},
      GemmCase{16, 96, 0},    GemmCase{20, 3, 33},   GemmCase{50, 4, 70},    GemmCase{40, 7, 0}};
  for (GemmEpilogueKind kind :
       {GemmEpilogueKind::kBiasResidualClamp, GemmEpilogueKind::kBiasClamp,
        GemmEpilogueKind::kBiasHardSwish, GemmEpilogueKind::kBiasSilu, GemmEpilogueKind::kChain,
        GemmEpilogueKind::kLeaky, GemmEpilogueKind::kBiasResidualSigmoid,
        GemmEpilogueKind::kBiasSigmoidScale}) {
    CheckGemmWays(cases, rng, kind);
  }
}

// A last panel of one to three columns runs along the reduction where it is 128 or longer, its
// sums split in 16 phases: reductions of whole multiples of 16 (the shortest, 128, among them)
// and with a tail, over several slabs; rows in several blocks of 64 and not a multiple of four
// or eight; a task's block all narrow (3 threads, 25 columns). Shorter reductions pad the last
// panel (127 just short of the narrow kernels, 33, 16, 7). Where the CPU has AVX-512, its kernels
// (A packed, or rows in place) give the 8-lane kernel's values bit for bit.
TEST(FastKernels, GemmNarrowLastColumnsMatchTheReference) {
  std::mt19937 rng(78);
  CheckGemmWays(
      {GemmCase{13, 25, 7}, GemmCase{70, 26, 16}, GemmCase{67, 49, 300}, GemmCase{130, 27, 1030},
       GemmCase{5, 51, 33}, GemmCase{150, 147, 2304}, GemmCase{40, 26, 128}, GemmCase{40, 75, 127}},
      rng);
}

void CheckMatmul(const Shape& a, const Shape& b, std::mt19937& rng) {
  Attrs attrs;
  Compare(MatmulFast, MatmulReference, {a, b}, attrs, rng,
          "matmul (" + Join(a) + ") x (" + Join(b) + ")");
}

TEST(FastKernels, MatmulMatchesTheReference) {
  std::mt19937 rng(42);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 150; ++iter) {
    int64_t m = pick(1, iter % 5 == 0 ? 150 : 40), k = pick(1, iter % 4 == 0 ? 300 : 50),
            n = pick(1, iter % 3 == 0 ? 260 : 30);
    Shape a = {m, k}, b = {k, n};
    if (iter % 6 == 1) {
      a.insert(a.begin(), pick(1, 3));
      b.insert(b.begin(), iter % 12 == 1 ? 1 : a[0]);
    }
    if (iter % 9 == 2) {
      a.insert(a.begin(), 2);
      a.insert(a.begin() + 1, 1);
      b.insert(b.begin(), 3);
    }
    if (iter % 10 == 3) a = {k};
    if (iter % 10 == 4) b = {k};
    CheckMatmul(a, b, rng);
    if (HasFatalFailure()) return;
  }
  // A wide B (4.2 million floats).
  CheckMatmul({5, 300}, {300, 14000}, rng);
  // Batches of products too large to count as small, run one per thread (a multiple of the
  // threads, and 13 products, over four per thread), or as many as share evenly so and the rest
  // each split across them (4 products: three, then one).
  CheckMatmul({3, 70, 65}, {3, 65, 64}, rng);
  CheckMatmul({13, 40, 70}, {13, 70, 100}, rng);
  CheckMatmul({4, 70, 65}, {4, 65, 64}, rng);
  CheckMatmul({0, 5}, {5, 7}, rng);
  CheckMatmul({4, 0}, {0, 30}, rng);
  CheckMatmul({4, 0}, {0, 3}, rng);
  CheckMatmul({130, 257}, {257, 301}, rng);
}

TEST(FastKernels, BinaryArithmeticMatchesTheReference) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const std::pair<rt::KernelFn, rt::KernelFn> ops[] = {{AddFast, AddReference},
                                                       {SubtractFast, SubtractReference},
                                                       {MultiplyFast, MultiplyReference},
                                                       {DivideFast, DivideReference},
                                                       {PowerFast, PowerReference}};
  for (int iter = 0; iter < 200; ++iter) {
    int rank = static_cast<int>(pick(0, 5));
    Shape out, a, b;
    for (int d = 0; d < rank; ++d) out.push_back(pick(1, d == rank - 1 ? 300 : 6));
    // Each operand: some dims broadcast (1), some leading dims dropped.
    for (Shape* s : {&a, &b}) {
      int drop = static_cast<int>(pick(0, rank));
      if (pick(0, 2) > 0) drop = 0;
      for (int d = drop; d < rank; ++d) s->push_back(pick(0, 3) == 0 ? 1 : out[d]);
    }
    if (iter % 10 == 0 && rank > 0) a = out, b = {out.back()};
    if (iter % 10 == 1 && rank > 1) a = out, b = {out[0], out[1], 1, 1, 1}, b.resize(rank, 1);
    auto [fast, reference] = ops[iter % 5];
    Attrs attrs;
    Compare(fast, reference, {a, b}, attrs, rng,
            "op " + std::to_string(iter % 5) + " (" + Join(a) + ") and (" + Join(b) + ")", {1});
    if (HasFatalFailure()) return;
  }
}

// `fast` on one thread and on three against `reference` (run once) on the same inputs: the same
// shape, element type `dtype` and every element (of C++ type T) equal.
template <typename T>
void ExpectTheReferenceExactly(rt::KernelFn fast, rt::KernelFn reference,
                               const std::vector<Tensor>& inputs, const rt::AttrView::List* list,
                               DType dtype, const std::string& what) {
  TestContext ref(inputs, list, nullptr);
  ASSERT_TRUE(reference(ref).ok()) << what;
  rt::ThreadPool three(3);
  for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
    TestContext got(inputs, list, pool);
    ASSERT_TRUE(fast(got).ok()) << what;
    ASSERT_EQ(got.out().shape, ref.out().shape) << what;
    ASSERT_EQ(got.out().dtype, dtype) << what;
    const T* x = static_cast<const T*>(got.out().data);
    const T* y = static_cast<const T*>(ref.out().data);
    for (int64_t i = 0; i < got.out().NumElements(); ++i) {
      ASSERT_EQ(x[i], y[i]) << what << " element " << i;
    }
  }
}

// add, subtract and multiply of int32 operands (a quantized conv's bias): broadcast as above,
// with values that overflow (the reference wraps), against the reference exactly.
TEST(FastKernels, IntBinaryArithmeticMatchesTheReference) {
  std::mt19937 rng(9);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const std::pair<rt::KernelFn, rt::KernelFn> ops[] = {{AddFast, AddReference},
                                                       {SubtractFast, SubtractReference},
                                                       {MultiplyFast, MultiplyReference}};
  const Shape shapes[][2] = {{{1, 24, 32, 112}, {1, 24, 1, 1}},
                             {{5, 7}, {5, 7}},
                             {{3, 1, 70000}, {}},
                             {{1}, {2, 3, 40000}},
                             {{6, 1, 9}, {1, 4, 9}}};
  for (int iter = 0; iter < 15; ++iter) {
    const Shape(&s)[2] = shapes[iter % 5];
    std::vector<int32_t> a(static_cast<size_t>(Count(s[0]))), b(static_cast<size_t>(Count(s[1])));
    for (int32_t& v : a) v = static_cast<int32_t>(pick(INT32_MIN, INT32_MAX));
    for (int32_t& v : b) v = static_cast<int32_t>(pick(-70000, 70000));
    std::vector<Tensor> inputs = {Tensor{DType::kInt32, s[0], a.data()},
                                  Tensor{DType::kInt32, s[1], b.data()}};
    Attrs attrs;
    const rt::AttrView::List* list = attrs.Finish();
    auto [fast, reference] = ops[iter % 3];
    ExpectTheReferenceExactly<int32_t>(
        fast, reference, inputs, list, DType::kInt32,
        "op " + std::to_string(iter % 3) + " (" + Join(s[0]) + ") and (" + Join(s[1]) + ")");
    if (HasFatalFailure()) return;
  }
}

// sqrt, floor, ceil, round, reciprocal, abs and negative of float32 bit for bit the reference's
// (each result is the same computed any way): NaN, infinities, signed zeros, halves (round to
// even), subnormals and large values, long enough to be split across threads.
TEST(FastKernels, ExactUnaryMatchesTheReference) {
  std::mt19937 rng(10);
  std::vector<float> x = Random(rng, 100000);
  for (size_t i = 0; i < x.size(); i += 7) x[i] *= 1e6f;
  for (size_t i = 3; i < x.size(); i += 11) x[i] = std::round(x[i] * 8) / 2;  // halves
  x.insert(x.end(), {0.0f, -0.0f, std::nanf(""), INFINITY, -INFINITY, 0.5f, 1.5f, 2.5f, -2.5f,
                     1e-40f, -1e-40f, 8388609.0f, 3e38f});
  const std::pair<rt::KernelFn, rt::KernelFn> ops[] = {{SqrtFast, SqrtReference},
                                                       {FloorFast, FloorReference},
                                                       {CeilFast, CeilReference},
                                                       {RoundFast, RoundReference},
                                                       {ReciprocalFast, ReciprocalReference},
                                                       {AbsFast, AbsReference},
                                                       {NegativeFast, NegativeReference}};
  std::vector<Tensor> inputs = {
      Tensor{DType::kFloat32, {static_cast<int64_t>(x.size())}, x.data()}};
  Attrs attrs;
  const rt::AttrView::List* list = attrs.Finish();
  rt::ThreadPool three(3);
  for (size_t o = 0; o < std::size(ops); ++o) {
    TestContext ref(inputs, list, nullptr);
    ASSERT_TRUE(ops[o].second(ref).ok());
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got(inputs, list, pool);
      ASSERT_TRUE(ops[o].first(got).ok());
      std::vector<float> v = got.values(), want = ref.values();
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
            << "op " << o << " of " << x[i] << ": " << v[i] << " vs " << want[i];
      }
    }
  }
}

// equal, less and greater of float32 (with NaN and signed zeros) and of int32 operands,
// broadcast, to bool: the reference's.
TEST(FastKernels, ComparisonsMatchTheReference) {
  std::mt19937 rng(12);
  const std::pair<rt::KernelFn, rt::KernelFn> ops[] = {
      {EqualFast, EqualReference}, {LessFast, LessReference}, {GreaterFast, GreaterReference}};
  const Shape shapes[][2] = {
      {{4, 2048, 1}, {257}}, {{3, 50000}, {3, 50000}}, {{7, 1}, {}}, {{2, 1, 9}, {1, 5, 9}}};
  for (int iter = 0; iter < 24; ++iter) {
    const Shape(&s)[2] = shapes[iter % 4];
    bool ints = iter % 2 == 1;
    std::vector<uint32_t> a(static_cast<size_t>(Count(s[0]))), b(static_cast<size_t>(Count(s[1])));
    const float specials[] = {0.0f, -0.0f, std::nanf(""), 1.0f, -1.0f, INFINITY};
    for (std::vector<uint32_t>* v : {&a, &b}) {
      for (uint32_t& e : *v) {
        e = ints ? static_cast<uint32_t>(rng() % 300)
                 : std::bit_cast<uint32_t>(specials[rng() % std::size(specials)]);
      }
    }
    DType t = ints ? DType::kInt32 : DType::kFloat32;
    std::vector<Tensor> inputs = {Tensor{t, s[0], a.data()}, Tensor{t, s[1], b.data()}};
    Attrs attrs;
    const rt::AttrView::List* list = attrs.Finish();
    auto [fast, reference] = ops[iter / 2 % 3];
    ExpectTheReferenceExactly<uint8_t>(fast, reference, inputs, list, DType::kBool,
                                       "op " + std::to_string(iter / 2 % 3) +
                                           (ints ? " int32" : " float32") + " (" + Join(s[0]) +
                                           ") and (" + Join(s[1]) + ")");
    if (HasFatalFailure()) return;
  }
}

// astype from bool reads each byte, any nonzero byte true: to float32, int32 and float64, long
// enough to be split across threads.
TEST(FastKernels, AstypeFromBoolReadsBytes) {
  rt::KernelFn astype = FindKernel("astype");
  ASSERT_NE(astype, nullptr);
  int64_t n = 100003;
  std::vector<uint8_t> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<uint8_t>(i % 5 == 0 ? 0 : i % 5 == 1 ? 1 : i);
  rt::ThreadPool three(3);
  for (DType to : {DType::kFloat32, DType::kInt32, DType::kFloat64}) {
    Attrs attrs;
    attrs.Dtype("dtype", to);
    const rt::AttrView::List* list = attrs.Finish();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext ctx({Tensor{DType::kBool, {n}, x.data()}}, list, pool);
      ASSERT_TRUE(astype(ctx).ok());
      ASSERT_EQ(ctx.out().dtype, to);
      for (int64_t i = 0; i < n; ++i) {
        double want = x[i] != 0 ? 1.0 : 0.0, got = 0;
        if (to == DType::kFloat32) got = static_cast<const float*>(ctx.out().data)[i];
        if (to == DType::kInt32) got = static_cast<const int32_t*>(ctx.out().data)[i];
        if (to == DType::kFloat64) got = static_cast<const double*>(ctx.out().data)[i];
        ASSERT_EQ(got, want) << "element " << i << " byte " << int{x[i]};
      }
    }
  }
}

// power with an exponent of one element 2 squares: the correctly rounded x * x, within an ulp of
// powf (the reference), and the same NaN, infinities and signed zeros.
TEST(FastKernels, PowerOfTwoSquares) {
  std::mt19937 rng(8);
  std::vector<float> x = Random(rng, 1000);
  for (float& v : x) v *= 1e3f;
  x.insert(x.end(), {0.0f, -0.0f, std::nanf(""), INFINITY, -INFINITY, 3e19f, -3e19f, 1e-30f});
  for (Shape bs : {Shape{}, Shape{1}, Shape{1, 1}}) {
    std::vector<float> two = {2.0f};
    Shape xs = {static_cast<int64_t>(x.size() / 2), 2};
    std::vector<Tensor> inputs = {Tensor{DType::kFloat32, xs, x.data()},
                                  Tensor{DType::kFloat32, bs, two.data()}};
    Attrs attrs;
    const rt::AttrView::List* list = attrs.Finish();
    TestContext fast(inputs, list, nullptr), ref(inputs, list, nullptr);
    ASSERT_TRUE(PowerFast(fast).ok());
    ASSERT_TRUE(PowerReference(ref).ok());
    ASSERT_EQ(fast.out().shape, ref.out().shape);
    std::vector<float> got = fast.values(), want = ref.values();
    for (size_t i = 0; i < x.size(); ++i) {
      float sq = x[i] * x[i];
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << x[i];
        continue;
      }
      EXPECT_EQ(std::memcmp(&got[i], &sq, sizeof sq), 0) << x[i];
      if (got[i] != want[i]) {
        EXPECT_LE(std::abs(got[i] - want[i]), std::abs(want[i]) * 1.2e-7f) << x[i];
      }
    }
  }
}

TEST(FastKernels, BatchNormMatchesTheReference) {
  std::mt19937 rng(11);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 60; ++iter) {
    Shape x = {pick(1, 3), pick(1, 20)};
    for (int64_t d = pick(0, 3); d > 0; --d) x.push_back(pick(1, 40));
    Attrs attrs;
    attrs.Int("axis", iter % 5 == 0 ? 1 - static_cast<int64_t>(x.size()) : 1);
    Shape p = {x[1]};
    Compare(nn::BatchNormFast, nn::BatchNorm, {x, p, p, p, p}, attrs, rng,
            "batch_norm (" + Join(x) + ")", {4});
    if (HasFatalFailure()) return;
  }
}

// A random pooling window for the iter-th case: rank 1 to 3, kernels up to 4, strides up to 3,
// dilations up to 2, pads up to half the kernel and one, an input at least the window.
struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, stride, dilation, pads;
};
PoolCase RandomPool(std::mt19937& rng, int iter) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int rank = iter % 5 == 0 ? 1 : (iter % 7 == 0 ? 3 : 2);
  PoolCase c;
  c.x = {pick(1, 2), pick(1, 5)};
  std::vector<int64_t> pads_end;
  for (int d = 0; d < rank; ++d) {
    int64_t k = pick(1, 4), dil = pick(1, 2), dk = (k - 1) * dil + 1;
    int64_t pb = pick(0, (k - 1) / 2 + 1), pe = pick(0, (k - 1) / 2 + 1);
    c.kernel.push_back(k);
    c.stride.push_back(pick(1, 3));
    c.dilation.push_back(dil);
    c.x.push_back(std::max<int64_t>(1, dk - pb - pe) + pick(0, rank == 3 ? 5 : 30));
    c.pads.push_back(pb);
    pads_end.push_back(pe);
  }
  c.pads.insert(c.pads.end(), pads_end.begin(), pads_end.end());
  return c;
}

TEST(FastKernels, MaxPoolMatchesTheReference) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 150; ++iter) {
    auto [x, kernel, stride, dilation, pads] = RandomPool(rng, iter);
    Attrs attrs;
    attrs.Ints("pool_size", kernel)
        .Ints("strides", stride)
        .Ints("dilation", dilation)
        .Ints("padding", pads)
        .Bool("ceil_mode", iter % 3 == 0);
    Compare(nn::MaxPoolFast, nn::MaxPool, {x}, attrs, rng,
            "max pool (" + Join(x) + ") kernel " + Join(kernel) + " strides " + Join(stride) +
                " dilation " + Join(dilation) + " pads " + Join(pads));
    if (HasFatalFailure()) return;
  }
}

// The fast average pool sums each window's cells in the reference's order and precision, so
// it gives the reference's values bit for bit.
void CheckAvgPoolExactly(const Shape& x, const std::vector<int64_t>& kernel,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation,
                         const std::vector<int64_t>& pads, bool ceil_mode, bool include_pad,
                         int specials, std::mt19937& rng) {
  std::vector<float> data = Random(rng, Count(x));
  for (size_t i = 0; i < data.size(); ++i) {
    if (specials == 1 && i % 29 == 7) data[i] = std::nanf("");
    if (specials == 2 && i % 31 == 3) data[i] = i % 2 ? INFINITY : -INFINITY;
    if (i % 7 == 2) data[i] *= 1e6f;  // magnitudes far apart: the order of the sum shows
  }
  Attrs attrs;
  attrs.Ints("pool_size", kernel)
      .Ints("strides", stride)
      .Ints("dilation", dilation)
      .Ints("padding", pads)
      .Bool("ceil_mode", ceil_mode)
      .Bool("count_include_pad", include_pad);
  const rt::AttrView::List* list = attrs.Finish();
  std::vector<Tensor> inputs = {Tensor{DType::kFloat32, x, data.data()}};
  std::string what = "avg pool (" + Join(x) + ") kernel " + Join(kernel) + " strides " +
                     Join(stride) + " dilation " + Join(dilation) + " pads " + Join(pads);
  TestContext ref(inputs, list, nullptr);
  ASSERT_TRUE(nn::AvgPool(ref).ok()) << what;
  std::vector<float> want = ref.values();
  rt::ThreadPool three(3);
  for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
    TestContext got(inputs, list, pool);
    ASSERT_TRUE(nn::AvgPoolFast(got).ok()) << what;
    ASSERT_EQ(got.out().shape, ref.out().shape) << what;
    std::vector<float> v = got.values();
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t a, b;
      std::memcpy(&a, &v[i], 4);
      std::memcpy(&b, &want[i], 4);
      if (std::isnan(v[i]) && std::isnan(want[i])) continue;
      ASSERT_EQ(a, b) << what << ", element " << i << ": " << v[i] << " vs " << want[i];
    }
  }
}

// With and without the padding counted, ceil mode, dilation, ranks 1 to 3, windows wholly in
// the padding, NaN and infinities.
TEST(FastKernels, AvgPoolMatchesTheReferenceExactly) {
  std::mt19937 rng(29);
  for (int iter = 0; iter < 150; ++iter) {
    auto [x, kernel, stride, dilation, pads] = RandomPool(rng, iter);
    CheckAvgPoolExactly(x, kernel, stride, dilation, pads, iter % 3 == 0, iter % 2 == 0, iter % 4,
                        rng);
    if (HasFatalFailure()) return;
  }
}

// Rows of one output (global pools, windows as wide as the row), taken eight planes at a time:
// plane counts not a multiple of eight, padding counted or not, NaN and infinities.
TEST(FastKernels, AvgPoolOfOneOutputPerRowMatchesTheReferenceExactly) {
  std::mt19937 rng(47);
  CheckAvgPoolExactly({2, 11, 7, 7}, {7, 7}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, false, 0, rng);
  CheckAvgPoolExactly({1, 9, 5, 6}, {3, 6}, {1, 1}, {1, 1}, {1, 0, 1, 0}, false, true, 1, rng);
  CheckAvgPoolExactly({1, 9, 5, 6}, {3, 6}, {2, 1}, {1, 1}, {1, 0, 1, 0}, true, false, 2, rng);
  CheckAvgPoolExactly({3, 5, 40}, {40}, {1}, {1}, {0, 0}, false, false, 1, rng);
  CheckAvgPoolExactly({1, 17, 3, 4, 5}, {2, 2, 5}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, false,
                      false, 0, rng);
}

TEST(FastKernels, ReluClipAndGlobalPoolMatchTheReference) {
  std::mt19937 rng(5);
  for (Shape x : {Shape{7}, Shape{2, 3, 5, 7}, Shape{1, 40000}, Shape{0, 3}}) {
    Attrs none;
    Compare(nn::ReluFast, nn::ReluReference, {x}, none, rng, "relu (" + Join(x) + ")");
    Attrs both, lo, hi, neither;
    both.Float("min", -0.3).Float("max", 0.45);
    lo.Float("min", 0.1);
    hi.Float("max", -0.2);
    Compare(ClipFast, ClipReference, {x}, both, rng, "clip both (" + Join(x) + ")");
    Compare(ClipFast, ClipReference, {x}, lo, rng, "clip min (" + Join(x) + ")");
    Compare(ClipFast, ClipReference, {x}, hi, rng, "clip max (" + Join(x) + ")");
    Compare(ClipFast, ClipReference, {x}, neither, rng, "clip (" + Join(x) + ")");
  }
  for (Shape x : {Shape{2, 3, 5, 7}, Shape{1, 4, 100}, Shape{2, 2, 3, 4, 5}, Shape{3, 2, 1, 1},
                  Shape{2, 16, 24, 96}}) {
    Attrs global;
    global.Ints("output_size", std::vector<int64_t>(x.size() - 2, 1));
    Compare(nn::AdaptiveAvgPoolFast, nn::AdaptiveAvgPool, {x}, global, rng,
            "global average pool (" + Join(x) + ")");
    Attrs other;
    other.Ints("output_size", std::vector<int64_t>(x.size() - 2, 2));
    if (x[2] >= 2) {
      Compare(nn::AdaptiveAvgPoolFast, nn::AdaptiveAvgPool, {x}, other, rng,
              "adaptive average pool (" + Join(x) + ")");
    }
  }
}

// RNN, GRU and LSTM in float32 against the double reference: every direction and layout,
// optional inputs present or left out, ragged sequence lengths, clip, input_forget,
// linear_before_reset, other activations, batches wide enough for the packed product; every
// output, with 1 and 3 threads.
TEST(FastKernels, RecurrentMatchesTheReference) {
  std::mt19937 rng(77);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  struct Kind {
    const char* name;
    rt::KernelFn fast, reference;
    int gates, acts, outputs;
    std::vector<std::string> defaults;
  };
  const Kind kinds[] = {
      {"rnn", rnn::RnnFast, rnn::RnnReference, 1, 1, 2, {"Tanh"}},
      {"gru", rnn::GruFast, rnn::GruReference, 3, 2, 2, {"Sigmoid", "Tanh"}},
      {"lstm", rnn::LstmFast, rnn::LstmReference, 4, 3, 3, {"Sigmoid", "Tanh", "Tanh"}},
  };
  for (int iter = 0; iter < 240; ++iter) {
    const Kind& kind = kinds[iter % 3];
    bool wide = iter % 20 < 2;
    int64_t dirs = pick(0, 2) == 2 ? 2 : 1;
    std::string direction = dirs == 2 ? "bidirectional" : (pick(0, 1) ? "reverse" : "forward");
    int64_t layout = pick(0, 1);
    int64_t S = pick(1, 6), N = wide ? pick(20, 40) : pick(1, 5);
    int64_t I = wide ? pick(20, 50) : pick(1, 12), H = wide ? pick(24, 48) : pick(1, 20);
    int64_t G = kind.gates * H;
    Shape xs = layout == 0 ? Shape{S, N, I} : Shape{N, S, I};
    Shape state = layout == 0 ? Shape{dirs, N, H} : Shape{N, dirs, H};
    std::vector<Shape> shapes = {xs, {dirs, G, I}, {dirs, G, H}, {dirs, 2 * G}, {N}, state};
    if (kind.outputs == 3) {
      shapes.push_back(state);
      shapes.push_back({dirs, 3 * H});
    }
    std::vector<std::vector<float>> data;
    for (const Shape& s : shapes) data.push_back(Random(rng, Count(s)));
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < shapes.size(); ++i) {
      inputs.push_back(Tensor{DType::kFloat32, shapes[i], data[i].data()});
    }
    // Optional inputs left out (rank 1, no elements) at random; sequence_lens int32.
    std::vector<int32_t> lens(static_cast<size_t>(N));
    for (int32_t& l : lens) l = static_cast<int32_t>(pick(0, 2) ? S : pick(0, S));
    inputs[4] = Tensor{DType::kInt32, {N}, lens.data()};
    std::string present;
    for (size_t i = 3; i < inputs.size(); ++i) {
      if (pick(0, 2) == 0) {
        inputs[i] = Tensor{DType::kFloat32, {0}, nullptr};
      } else {
        present += " " + std::to_string(i);
      }
    }
    Attrs attrs;
    attrs.Str("direction", direction).Int("layout", layout).Int("hidden_size", H);
    std::vector<std::string> acts;
    std::vector<double> alphas, betas;
    bool other = pick(0, 5) == 0;
    for (int64_t d = 0; d < dirs; ++d) {
      for (int a = 0; a < kind.acts; ++a) {
        // Another activation in the last slot (the cell's output; the RNN's only one), an
        // unbounded one only on small layers: a gate past [0, 1], or a large layer's growing
        // state, amplifies float's rounding past any tolerance, the algorithm being the same.
        static const char* kOthers[] = {"HardSigmoid", "ScaledTanh", "Softsign",
                                        "LeakyRelu",   "Relu",       "Elu"};
        bool last = a == kind.acts - 1;
        acts.push_back(other && last ? kOthers[pick(0, wide ? 2 : 5)] : kind.defaults[a]);
        alphas.push_back(acts.back() == "HardSigmoid" ? 0.2 : 0.5);
        betas.push_back(acts.back() == "HardSigmoid" ? 0.5 : 1.5);
      }
    }
    attrs.Strs("activations", acts)
        .Floats("activation_alpha", alphas)
        .Floats("activation_beta", betas);
    bool clip = pick(0, 4) == 0, forget = pick(0, 3) == 0, lbr = pick(0, 1) == 1;
    if (clip) attrs.Float("clip", 0.7);
    if (kind.outputs == 3 && forget) attrs.Bool("input_forget", true);
    if (kind.gates == 3 && lbr) attrs.Bool("linear_before_reset", true);
    const rt::AttrView::List* list = attrs.Finish();
    std::string what = std::string(kind.name) + " " + direction + " layout " +
                       std::to_string(layout) + " S N I H " + std::to_string(S) + " " +
                       std::to_string(N) + " " + std::to_string(I) + " " + std::to_string(H) +
                       " inputs present:" + present + (clip ? " clip" : "") +
                       (other ? " activation " + acts[0] : "");
    TestContext ref(inputs, list, nullptr, kind.outputs);
    Status st = kind.reference(ref);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    rt::ThreadPool three(3);
    // Without a cache, then twice with W and R constant and one cache (their packed copies, made
    // on the first run and read on the second).
    // The sums do not depend on the threads (a bidirectional layer's two directions side by
    // side on 3 threads): the outputs on 1 and 3 threads are the same bit for bit.
    rt::StepCache cache;
    for (int pass = 0; pass < 3; ++pass) {
      std::vector<std::vector<float>> one_thread;
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        TestContext got(inputs, list, pool, kind.outputs);
        if (pass > 0) got.SetCache(&cache, (uint64_t{1} << 1) | (uint64_t{1} << 2));
        st = kind.fast(got);
        ASSERT_TRUE(st.ok()) << what << ": " << st.message();
        for (int o = 0; o < kind.outputs; ++o) {
          ASSERT_EQ(got.out(o).shape, ref.out(o).shape) << what << ", output " << o;
          std::vector<float> v = got.values(o), want = ref.values(o);
          if (!pool) one_thread.push_back(v);
          if (pool) {
            ASSERT_EQ(v, one_thread[static_cast<size_t>(o)])
                << what << ", output " << o << ": 3 threads against 1";
          }
          for (size_t i = 0; i < v.size(); ++i) {
            ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
                << what << ", output " << o << " element " << i << ": " << v[i] << " vs " << want[i]
                << " (threads " << (pool ? 3 : 1) << (pass ? ", cached" : "") << ")";
          }
        }
      }
    }
  }
}

// A batch of one's standard LSTM keeps W^T in the step's cache, not W (its input projections go
// by step). A later run of the same step whose sequence is shorter than the input (not the
// standard cell then) finds no packed W and packs it as it runs: both runs against the reference,
// forward and bidirectional, with and without the cache.
TEST(FastKernels, ABatchOfOnesLstmRunsRaggedAfterItsCacheIsMade) {
  std::mt19937 rng(79);
  for (int64_t dirs : {1, 2}) {
    const int64_t S = 5, N = 1, I = 7, H = 6, G = 4 * H;
    std::vector<Shape> shapes = {{S, N, I}, {dirs, G, I}, {dirs, G, H}, {dirs, 2 * G}};
    std::vector<std::vector<float>> data;
    for (const Shape& sh : shapes) data.push_back(Random(rng, Count(sh)));
    Attrs attrs;
    std::vector<std::string> acts;
    for (int64_t d = 0; d < dirs; ++d) acts.insert(acts.end(), {"Sigmoid", "Tanh", "Tanh"});
    attrs.Str("direction", dirs == 2 ? "bidirectional" : "forward")
        .Int("layout", 0)
        .Int("hidden_size", H)
        .Strs("activations", acts)
        .Floats("activation_alpha", std::vector<double>(acts.size(), 0.0))
        .Floats("activation_beta", std::vector<double>(acts.size(), 0.0));
    const rt::AttrView::List* list = attrs.Finish();
    rt::StepCache cache;
    for (int32_t len : {5, 3}) {  // the full sequence first: the cache is made then
      std::vector<int32_t> lens = {len};
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < shapes.size(); ++i) {
        inputs.push_back(Tensor{DType::kFloat32, shapes[i], data[i].data()});
      }
      inputs.push_back(Tensor{DType::kInt32, {N}, lens.data()});
      TestContext ref(inputs, list, nullptr, 3);
      ASSERT_TRUE(rnn::LstmReference(ref).ok());
      TestContext got(inputs, list, nullptr, 3);
      got.SetCache(&cache, (uint64_t{1} << 1) | (uint64_t{1} << 2));
      ASSERT_TRUE(rnn::LstmFast(got).ok());
      for (int o = 0; o < 3; ++o) {
        std::vector<float> v = got.values(o), want = ref.values(o);
        ASSERT_EQ(v.size(), want.size());
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
              << "directions " << dirs << ", length " << len << ", output " << o << " element "
              << i;
        }
      }
    }
  }
}

// What the float path does not take goes to the reference, errors included: a hidden_size that
// R does not hold, float64.
TEST(FastKernels, RecurrentLeavesTheRestToTheReference) {
  std::vector<float> x(2 * 1 * 3), w(1 * 4 * 2 * 3), r(1 * 4 * 2 * 2);
  std::vector<Tensor> inputs = {Tensor{DType::kFloat32, {2, 1, 3}, x.data()},
                                Tensor{DType::kFloat32, {1, 8, 3}, w.data()},
                                Tensor{DType::kFloat32, {1, 8, 2}, r.data()}};
  Attrs attrs;
  attrs.Int("hidden_size", 3)
      .Strs("activations", {"Sigmoid", "Tanh", "Tanh"})
      .Floats("activation_alpha", {0, 0, 0})
      .Floats("activation_beta", {0, 0, 0});
  const rt::AttrView::List* list = attrs.Finish();
  TestContext ctx(inputs, list, nullptr, 3);
  Status st = rnn::LstmFast(ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("hidden_size 3 does not match R"), std::string::npos) << st.message();
  std::vector<double> xd(6, 0.5), wd(24, 0.25), rd(16, -0.5);
  std::vector<Tensor> doubles = {Tensor{DType::kFloat64, {2, 1, 3}, xd.data()},
                                 Tensor{DType::kFloat64, {1, 8, 3}, wd.data()},
                                 Tensor{DType::kFloat64, {1, 8, 2}, rd.data()}};
  Attrs attrs2;
  attrs2.Strs("activations", {"Sigmoid", "Tanh", "Tanh"})
      .Floats("activation_alpha", {0, 0, 0})
      .Floats("activation_beta", {0, 0, 0});
  const rt::AttrView::List* list2 = attrs2.Finish();
  TestContext got(doubles, list2, nullptr, 3);
  st = rnn::LstmFast(got);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(got.out(0).dtype, DType::kFloat64);
}

// CopyStrided against an element-by-element walk: views of a buffer with positive, negative,
// zero and contiguous strides, dims of 0 and 1, every element size the kernels use (and an odd
// one).
// CopyShort at every length up to a few vectors: whole vectors, an overlapping last one, pieces
// of 4, 2 and 1; nothing written past the end.
TEST(FastKernels, CopyShortCopiesExactlyNFloats) {
  std::vector<float> src(40);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) + 0.5f;
  for (int64_t n = 0; n <= 32; ++n) {
    std::vector<float> dst(48, -1.0f);
    CopyShort(src.data(), n, dst.data() + 1);
    EXPECT_EQ(dst[0], -1.0f) << "n " << n;
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dst[i + 1], src[i]) << "n " << n << ", element " << i;
    for (size_t i = n + 1; i < dst.size(); ++i)
      ASSERT_EQ(dst[i], -1.0f) << "n " << n << ", past " << i;
  }
}

TEST(FastKernels, CopyStridedMatchesAnElementWalk) {
  std::mt19937 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<uint8_t> buffer(1 << 24);
  for (uint8_t& b : buffer) b = static_cast<uint8_t>(pick(0, 255));
  for (int iter = 0; iter < 2000; ++iter) {
    size_t eb = std::vector<size_t>{1, 2, 4, 8, 3, 16}[static_cast<size_t>(pick(0, 5))];
    int rank = static_cast<int>(pick(0, 5));
    Shape shape(rank);
    std::vector<int64_t> strides(rank);
    int64_t dense = 1;
    for (int k = rank - 1; k >= 0; --k) {
      shape[k] = pick(0, 9) == 0 ? pick(0, 1) : pick(1, 4);
      int64_t kind = pick(0, 3);  // contiguous, strided, reversed, broadcast
      strides[k] = kind == 0 ? dense : kind == 1 ? dense * pick(2, 3) : kind == 2 ? -dense : 0;
      dense *= std::max<int64_t>(shape[k], 1) * 3;  // room for a stride of 3 x dense
    }
    // The first element in the middle of the buffer, so that negative strides stay inside.
    int64_t base = static_cast<int64_t>(buffer.size() / eb / 2);
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<uint8_t> got(static_cast<size_t>(count) * eb + 1, 0xAB), want(got);
    const uint8_t* src = buffer.data() + base * static_cast<int64_t>(eb);
    CopyStrided(src, shape, strides, eb, got.data());
    std::vector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t off = 0;
      for (int k = 0; k < rank; ++k) off += idx[k] * strides[k];
      ASSERT_LT(std::abs(off), base);
      std::memcpy(want.data() + i * eb, src + off * static_cast<int64_t>(eb), eb);
      for (int k = rank - 1; k >= 0 && ++idx[k] == shape[k]; --k) idx[k] = 0;
    }
    ASSERT_EQ(got, want) << "rank " << rank << " element size " << eb << " iteration " << iter;
  }
}

// CopyStrided of `src` (elements of eb bytes, shape and strides in elements) against an element
// walk, on one thread and on `pool`, nothing written past the end.
void ExpectCopyStridedWalks(const std::vector<uint8_t>& src, const Shape& shape,
                            const std::vector<int64_t>& strides, size_t eb, rt::ThreadPool& pool,
                            const std::string& what) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<uint8_t> want(static_cast<size_t>(count) * eb);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < shape.size(); ++k) off += idx[k] * strides[k];
    std::memcpy(want.data() + i * eb, src.data() + off * static_cast<int64_t>(eb), eb);
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0 && ++idx[k] == shape[k]; --k) {
      idx[k] = 0;
    }
  }
  for (rt::ThreadPool* p : {static_cast<rt::ThreadPool*>(nullptr), &pool}) {
    std::vector<uint8_t> got(want.size() + 1, 0xAB);
    CopyStrided(src.data(), shape, strides, eb, got.data(), p);
    EXPECT_EQ(got.back(), 0xAB) << "written past the end";
    got.pop_back();
    ASSERT_EQ(got, want) << "(" << Join(shape) << ") element size " << eb << ", " << what
                         << (p ? ", 3 threads" : "");
  }
}

// A transpose of the last two dims into a plane (a, b), element (i, j) from i + j * sb, the
// source's rows of a sb apart (a further apart than a row, at random), under 0 to 2 outer dims
// of random sizes, through ExpectCopyStridedWalks.
void ExpectTransposeWalks(std::mt19937& rng, size_t eb, int64_t a, int64_t b, rt::ThreadPool& pool,
                          const std::string& what) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int64_t sb = a + (pick(0, 1) ? 0 : pick(1, 5));
  int outer_rank = static_cast<int>(pick(0, 2));
  Shape shape;
  std::vector<int64_t> strides;
  int64_t plane = sb * b;
  for (int k = 0; k < outer_rank; ++k) {
    shape.push_back(pick(1, 3));
    strides.push_back(plane);
    plane *= shape.back();
  }
  shape.push_back(a);
  strides.push_back(1);
  shape.push_back(b);
  strides.push_back(sb);
  std::vector<uint8_t> src(static_cast<size_t>(plane) * eb);
  for (uint8_t& v : src) v = static_cast<uint8_t>(pick(0, 255));
  ExpectCopyStridedWalks(src, shape, strides, eb, pool,
                         std::to_string(a) + " x " + std::to_string(b) + ", columns " +
                             std::to_string(sb) + " apart, " + what);
}

// Transposes of the last two dims (the rows contiguous in the source, the columns strided),
// which CopyStrided runs in tiles of 8 x 8: sizes not multiples of the tile, columns further
// apart than a row (a slice's transpose), outer dims before them, every element size the tiles
// take, and planes large enough to split among 3 threads; against an element walk.
TEST(FastKernels, CopyStridedTransposesInTiles) {
  std::mt19937 rng(5);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  rt::ThreadPool three(3);
  for (int iter = 0; iter < 60; ++iter) {
    size_t eb = std::vector<size_t>{1, 2, 4, 8}[static_cast<size_t>(iter % 4)];
    bool large = iter % 10 == 9;
    int64_t a = large ? pick(90, 130) : pick(8, 40), b = large ? pick(90, 130) : pick(8, 40);
    ExpectTransposeWalks(rng, eb, a, b, three, "iteration " + std::to_string(iter));
    if (HasFatalFailure()) return;
  }
}

// The same transposes into output rows of 2 to 7 elements (NCHW data of a few channels made
// NHWC), each row's elements gathered, and into 2 to 7 long rows (NHWC made NCHW: each row a
// strided copy): 8 to 200 of the long dim, columns further apart than a row, outer dims before
// them, every element size, planes large enough to split among 3 threads.
TEST(FastKernels, CopyStridedTransposesIntoShortRows) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  rt::ThreadPool three(3);
  for (int iter = 0; iter < 192; ++iter) {
    size_t eb = std::vector<size_t>{1, 2, 4, 8}[static_cast<size_t>(iter / 2 % 4)];
    int64_t b = iter / 8 % 6 + 2;
    int64_t a = iter % 48 >= 46 ? pick(20000, 40000) : pick(8, 200);
    if (iter % 2 == 1) std::swap(a, b);  // few long rows
    ExpectTransposeWalks(rng, eb, a, b, three, "iteration " + std::to_string(iter));
    if (HasFatalFailure()) return;
  }
}

// Slices whose rows are short and contiguous (a few columns of each row: copied inline, 16 bytes
// at a time, then 8, then bytes), rows of 1 to 17 elements of 1, 2, 4 and 8 bytes (up to 64 bytes
// and past it), taken from an offset in longer rows, under up to two outer dims, against an
// element walk.
TEST(FastKernels, CopyStridedCopiesShortRows) {
  std::mt19937 rng(6);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  rt::ThreadPool three(3);
  for (int iter = 0; iter < 80; ++iter) {
    size_t eb = std::vector<size_t>{1, 2, 4, 8}[static_cast<size_t>(iter % 4)];
    int64_t cols = iter / 4 % 17 + 1, row = cols + pick(1, 5), first = pick(0, row - cols);
    Shape shape;
    std::vector<int64_t> strides;
    int64_t floats = row;
    for (int k = static_cast<int>(pick(1, 2)); k > 0; --k) {
      shape.insert(shape.begin(), pick(1, 40));
      strides.insert(strides.begin(), floats);
      floats *= shape.front();
    }
    shape.push_back(cols);
    strides.push_back(1);
    std::vector<uint8_t> all(static_cast<size_t>(floats) * eb);
    for (uint8_t& v : all) v = static_cast<uint8_t>(pick(0, 255));
    std::vector<uint8_t> src(all.begin() + static_cast<int64_t>(first * eb), all.end());
    ExpectCopyStridedWalks(src, shape, strides, eb, three,
                           "rows of " + std::to_string(row) + " from " + std::to_string(first));
    if (HasFatalFailure()) return;
  }
}

// pad (copying rows whole) against an element walk that finds each source index by repeated
// reflection, clamping or wrapping: every mode, growing and cropping pads, empty axes in constant
// mode, trailing axes not padded, 1-, 2- and 8-byte elements.
TEST(FastKernels, PadMatchesAnElementWalk) {
  std::mt19937 rng(21);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  rt::KernelFn pad = FindKernel("nn.pad");
  ASSERT_NE(pad, nullptr);
  const char* modes[] = {"constant", "edge", "reflect", "wrap"};
  for (int iter = 0; iter < 600; ++iter) {
    std::string mode = modes[iter % 4];
    DType dtype = std::vector<DType>{DType::kFloat32, DType::kUInt8, DType::kInt64,
                                     DType::kFloat16}[static_cast<size_t>(pick(0, 3))];
    size_t eb = rt::DTypeBytes(dtype, 1);
    int rank = static_cast<int>(pick(0, 4));
    Shape in(rank), out(rank);
    std::vector<int64_t> width(2 * rank);
    for (int k = 0; k < rank; ++k) {
      in[k] = mode == "constant" && pick(0, 7) == 0 ? 0 : pick(1, 5);
      for (int e = 0; e < 2; ++e) {
        // Cropping at most what the axis has, growing up to three times it (reflect: less
        // than the axis, as ONNX asks).
        int64_t grow = mode == "reflect" ? in[k] - 1 : 3 * in[k] + (mode == "constant" ? 3 : 0);
        width[2 * k + e] = pick(0, 3) == 0 ? -pick(0, in[k] / 2) : pick(0, grow);
      }
      out[k] = in[k] + width[2 * k] + width[2 * k + 1];
    }
    // Trailing axes left as they are (constant mode reads them as part of the axis before).
    for (int k = rank - 1; k >= 1 && k >= rank - 1 - iter % 3 && iter % 7 < 3; --k) {
      width[2 * k] = width[2 * k + 1] = 0;
      out[k] = in[k];
    }
    int64_t count = 1;
    for (int64_t d : in) count *= d;
    std::vector<uint8_t> x(static_cast<size_t>(count) * eb + 1), fill(eb);
    for (uint8_t& v : x) v = static_cast<uint8_t>(pick(0, 255));
    for (uint8_t& v : fill) v = static_cast<uint8_t>(pick(0, 255));
    Attrs attrs;
    attrs.Ints("pad_width", width).Str("pad_mode", mode);
    const rt::AttrView::List* list = attrs.Finish();
    TestContext ctx({Tensor{dtype, in, x.data()}, Tensor{dtype, {}, fill.data()}}, list, nullptr);
    Status st = pad(ctx);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(ctx.out().shape, out);
    const auto* got = static_cast<const uint8_t*>(ctx.out().data);
    std::vector<int64_t> strides(rank), idx(rank, 0);
    for (int k = rank - 1, acc = 1; k >= 0; --k) {
      strides[k] = acc;
      acc *= static_cast<int>(in[k]);
    }
    int64_t total = ctx.out().NumElements();
    for (int64_t i = 0; i < total; ++i) {
      int64_t off = 0;
      bool outside = false;
      for (int k = 0; k < rank; ++k) {
        int64_t p = idx[k] - width[2 * k], n = in[k];
        if (mode == "constant") {
          outside |= p < 0 || p >= n;
        } else if (mode == "edge") {
          p = std::clamp<int64_t>(p, 0, n - 1);
        } else if (mode == "wrap") {
          while (p < 0) p += n;
          while (p >= n) p -= n;
        } else {
          while (n > 1 && (p < 0 || p >= n)) p = p < 0 ? -p : 2 * (n - 1) - p;
          if (n == 1) p = 0;
        }
        off += p * strides[k];
      }
      const uint8_t* want = outside ? fill.data() : x.data() + off * static_cast<int64_t>(eb);
      ASSERT_EQ(std::memcmp(got + i * static_cast<int64_t>(eb), want, eb), 0)
          << mode << " in (" << Join(in) << ") pads (" << Join(width) << ") element " << i;
      for (int k = rank - 1; k >= 0 && ++idx[k] == out[k]; --k) idx[k] = 0;
    }
  }
}

// The distance in ulps between two floats of one sign (or both zero).
int64_t UlpDistance(float a, float b) {
  auto key = [](float f) {
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};  // monotonic in f, -0 == +0
  };
  return std::abs(key(a) - key(b));
}

// The float32 exp, log, tanh, sigmoid and erf kernels (vmath.h, as built for the kernels:
// vectorized, with FMA where the CPU has it) against double precision rounded to float, over 3
// million inputs: a dense grid of the range where each function varies, random bit patterns of
// every exponent, and the edges (zeros, infinities, NaN, the overflow and underflow thresholds,
// subnormals). The bounds are what this code measures, a little rounded up: a change that loses
// accuracy fails here.
TEST(FastKernels, VectorMathIsWithinAFewUlps) {
  std::vector<float> xs;
  for (int i = -2000000; i <= 2000000; i += 2) xs.push_back(static_cast<float>(i) * 1e-5f);
  std::mt19937 rng(17);
  for (int i = 0; i < 1000000; ++i)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (float f :
       {0.0f,       -0.0f,  INFINITY,   -INFINITY, std::nanf(""), -std::nanf(""), 88.72283f,
        88.72284f,  88.7f,  -87.33654f, -103.9f,   -104.0f,       -110.0f,        1e-45f,
        -1e-45f,    1e-38f, 0.625f,     -0.625f,   1.0f,          -1.0f,          3.92f,
        3.9199998f, 9.0f,   44.0f,      -44.0f}) {
    xs.push_back(f);
  }
  struct Fn {
    const char* name;
    rt::KernelFn fast;
    double (*exact)(double);
    int64_t max_ulps;
    double abs_floor;  // where |value| >= 0.25, differences below this pass whatever the ulps
  };
  const Fn fns[] = {
      {"exp", ExpFast, [](double x) { return std::exp(x); }, 2, 0.0},
      {"log", LogFast, [](double x) { return std::log(x); }, 2, 0.0},
      {"tanh", TanhFast, [](double x) { return std::tanh(x); }, 2, 0.0},
      {"sigmoid", SigmoidFast, [](double x) { return 1 / (1 + std::exp(-x)); }, 3, 0.0},
      {"erf", ErfFast, [](double x) { return std::erf(x); }, 3, 1.2e-7},
  };
  Attrs none;
  const rt::AttrView::List* list = none.Finish();
  for (const Fn& fn : fns) {
    TestContext ctx({Tensor{DType::kFloat32, {static_cast<int64_t>(xs.size())}, xs.data()}}, list,
                    nullptr);
    ASSERT_TRUE(fn.fast(ctx).ok());
    std::vector<float> got = ctx.values();
    int64_t worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      float x = xs[i];
      float want = static_cast<float>(fn.exact(static_cast<double>(x)));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[i])) << fn.name << "(" << x << ") = " << got[i];
        continue;
      }
      if (got[i] == want) continue;
      ASSERT_FALSE(std::isnan(got[i])) << fn.name << "(" << x << ")";
      if (std::abs(want) >= 0.25f && std::abs(static_cast<double>(got[i]) - want) <= fn.abs_floor) {
        continue;
      }
      ASSERT_EQ(std::signbit(got[i]), std::signbit(want)) << fn.name << "(" << x << ")";
      int64_t d = UlpDistance(got[i], want);
      if (d > worst) worst = d, worst_x = x;
    }
    EXPECT_LE(worst, fn.max_ulps) << fn.name << ": " << worst << " ulps at " << worst_x;
    std::printf("vmath %s: at most %lld ulps (at %g)\n", fn.name, static_cast<long long>(worst),
                static_cast<double>(worst_x));
  }
}

// The float32 kernels exp, log, tanh, sigmoid and erf run vmath, and other dtypes the reference.
TEST(FastKernels, TranscendentalKernelsMatchTheReference) {
  std::mt19937 rng(19);
  const std::pair<rt::KernelFn, rt::KernelFn> ops[] = {{ExpFast, ExpReference},
                                                       {LogFast, LogReference},
                                                       {TanhFast, TanhReference},
                                                       {SigmoidFast, SigmoidReference},
                                                       {ErfFast, ErfReference}};
  for (auto [fast, reference] : ops) {
    for (Shape x : {Shape{7}, Shape{2, 3, 50}, Shape{1, 70000}, Shape{0, 3}}) {
      Attrs none;
      Compare(fast, reference, {x}, none, rng, "(" + Join(x) + ")");
    }
  }
}

// layer_norm over trailing axes (one, two, all; parameters of the normalized shape, with or
// without leading 1s), and the cases the fast path hands to the reference: axes that are not a
// trailing run, a parameter that varies across rows.
TEST(FastKernels, LayerNormMatchesTheReference) {
  std::mt19937 rng(23);
  struct Case {
    Shape x;
    std::vector<int64_t> axes;
    Shape param;
  };
  const Case cases[] = {
      {{2, 5, 384}, {-1}, {384}},
      {{3, 7}, {1}, {1, 7}},
      {{2, 3, 4, 5}, {2, 3}, {4, 5}},
      {{6, 17}, {0, 1}, {6, 17}},
      {{1, 128, 33}, {-1}, {1, 1, 33}},
      {{4, 1}, {-1}, {1}},
      {{2, 3, 4}, {0, 2}, {2, 1, 4}},
      {{2, 3, 4}, {-1}, {2, 3, 4}},
      {{0, 8}, {-1}, {8}},
      {{2, 3, 4, 5}, {2, 3}, {}},
      {{2, 3, 4, 5}, {2, 3}, {1, 1}},
      {{2, 3, 4, 5}, {2, 3}, {1, 5}},
  };
  for (const Case& c : cases) {
    Attrs attrs;
    attrs.Ints("axes", c.axes).Float("epsilon", 1e-5);
    // gamma of the case's shape; beta of it, or a scalar.
    for (Shape beta : {c.param, Shape{}}) {
      Compare(nn::LayerNormFast, nn::LayerNorm, {c.x, c.param, beta}, attrs, rng,
              "layer_norm (" + Join(c.x) + ") axes (" + Join(c.axes) + ") gamma (" + Join(c.param) +
                  ") beta (" + Join(beta) + ")");
    }
  }
}

// Maxima, minima, sums, means, sums of squares and l1 / l2 norms of float32 over trailing axes
// (rows), over one block between kept axes (lanes) and over others (the reference's walk),
// keepdims or not.
TEST(FastKernels, ReductionsMatchTheReference) {
  std::mt19937 rng(37);
  struct Case {
    Shape x;
    std::vector<int64_t> axes;  // empty: every axis
  };
  const Case cases[] = {{{197, 384}, {-1}},   {{2, 3, 5, 7}, {2, 3}}, {{4, 1, 9}, {1, 2}},
                        {{3, 4, 5}, {1}},     {{6, 1000}, {}},        {{2, 7, 1, 1}, {1}},
                        {{1, 33, 3}, {0, 2}}, {{5, 300, 11}, {1, 2}}, {{2, 6, 7, 3}, {1, 2}},
                        {{1, 1536, 128}, {1}}};
  for (const char* op :
       {"max", "min", "sum", "mean", "reduce_l1", "reduce_l2", "reduce_sum_square"}) {
    rt::KernelFn fast = FindKernel(op), reference = ReduceReference(op);
    ASSERT_TRUE(fast && reference) << op;
    for (const Case& c : cases) {
      for (bool keepdims : {false, true}) {
        Attrs attrs;
        if (!c.axes.empty()) attrs.Ints("axis", c.axes);
        attrs.Bool("keepdims", keepdims);
        Compare(fast, reference, {c.x}, attrs, rng,
                std::string(op) + " (" + Join(c.x) + ") axes (" + Join(c.axes) + ")" +
                    (keepdims ? " keepdims" : ""));
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Maxima and minima over one block of axes between kept ones (a global max pool over a
// sequence: lanes side by side, 32 and 8 at a time, then one by one) of data holding NaN and
// signed zeros: the reference's values bit for bit (of equal zeros, the first), NaN where it gives
// NaN; one thread and three.
TEST(FastKernels, MaxAndMinAcrossRowsKeepTheReferencesNaNAndZeros) {
  std::mt19937 rng(41);
  rt::ThreadPool three(3);
  for (const char* op : {"max", "min"}) {
    rt::KernelFn fast = FindKernel(op), reference = ReduceReference(op);
    ASSERT_TRUE(fast && reference) << op;
    for (const Shape& x : {Shape{3, 50, 45}, Shape{2, 7, 300}, Shape{1, 9, 4, 40}}) {
      std::vector<float> data = Random(rng, Count(x));
      for (size_t i = 0; i < data.size(); ++i) {
        if (i % 97 == 13) data[i] = std::nanf("");
        // Runs of zeros of either sign in some lanes: which comes first decides.
        if (i % 45 < 3 || i % 300 == 7) data[i] = (i / 45) % 2 ? -0.0f : 0.0f;
      }
      Attrs attrs;
      attrs.Ints("axis", x.size() == 4 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1});
      attrs.Bool("keepdims", false);
      const rt::AttrView::List* list = attrs.Finish();
      std::vector<Tensor> inputs = {Tensor{DType::kFloat32, x, data.data()}};
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        TestContext ref(inputs, list, nullptr), got(inputs, list, pool);
        ASSERT_TRUE(reference(ref).ok());
        ASSERT_TRUE(fast(got).ok());
        std::vector<float> v = got.values(), want = ref.values();
        ASSERT_EQ(v.size(), want.size());
        int nans = 0;
        for (size_t i = 0; i < v.size(); ++i) {
          if (std::isnan(want[i])) {
            ++nans;
            EXPECT_TRUE(std::isnan(v[i])) << op << " (" << Join(x) << "), element " << i;
          } else {
            EXPECT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
                << op << " (" << Join(x) << "), element " << i << ": " << v[i] << " vs " << want[i];
          }
        }
        EXPECT_GT(nans, 0) << "the data reach NaN in some outputs";
        EXPECT_LT(nans, static_cast<int>(v.size())) << "and not in all";
      }
    }
  }
}

// Max pooling of planes holding NaN and signed zeros: the fast paths (the window walk, the
// two-pass separable one) give the reference's values, NaN where it gives NaN.
TEST(FastKernels, MaxPoolKeepsTheReferencesNaNAndZeros) {
  std::mt19937 rng(61);
  struct Case {
    std::vector<int64_t> kernel, stride, pads;
  };
  const Case cases[] = {{{3, 3}, {1, 1}, {1, 1, 1, 1}},  // the window walk
                        {{5, 5}, {1, 1}, {2, 2, 2, 2}},  // two passes
                        {{4, 4}, {2, 2}, {0, 0, 1, 1}},
                        {{4, 5}, {1, 3}, {1, 0, 0, 2}},
                        {{9, 9}, {1, 1}, {4, 4, 4, 4}},
                        {{1, 3}, {1, 2}, {0, 1, 0, 1}},
                        // windows of 2 or 3 columns, strides 1 and 2 (a row's cells in registers)
                        {{2, 2}, {2, 2}, {0, 0, 1, 1}},
                        {{2, 2}, {1, 1}, {1, 0, 0, 1}},
                        {{3, 3}, {2, 2}, {1, 1, 1, 1}},
                        // MTCNN's: padded at the end (SAME_UPPER), and none
                        {{3, 3}, {2, 2}, {0, 0, 1, 1}},
                        {{3, 3}, {2, 2}, {0, 0, 0, 0}}};
  // Rows of a few outputs, rows long enough that their windows run in vector lanes (eight and
  // four at a time), and rows of 10 or 11 outputs rounded up (ceil_mode) or padded at the end, as
  // MTCNN's pools are.
  for (const Case& c : cases) {
    for (const Shape& x :
         {Shape{1, 3, 9, 11}, Shape{1, 2, 7, 75}, Shape{2, 2, 22, 21}, Shape{1, 4, 22, 22}}) {
      std::vector<float> data = Random(rng, Count(x));
      for (size_t i = 0; i < data.size(); ++i) {
        if (i % 7 == 3) data[i] = std::nanf("");
        if (i % 11 == 5) data[i] = i % 2 ? -0.0f : 0.0f;
      }
      Attrs attrs;
      attrs.Ints("pool_size", c.kernel)
          .Ints("strides", c.stride)
          .Ints("dilation", {1, 1})
          .Ints("padding", c.pads)
          .Bool("ceil_mode", x[3] == 21);
      const rt::AttrView::List* list = attrs.Finish();
      std::vector<Tensor> inputs = {Tensor{DType::kFloat32, x, data.data()}};
      TestContext ref(inputs, list, nullptr), got(inputs, list, nullptr);
      ASSERT_TRUE(nn::MaxPool(ref).ok());
      ASSERT_TRUE(nn::MaxPoolFast(got).ok());
      std::vector<float> v = got.values(), want = ref.values();
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < v.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(v[i])) << "kernel " << Join(c.kernel) << ", element " << i;
        } else {
          EXPECT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
              << "kernel " << Join(c.kernel) << ", element " << i << ": " << v[i] << " vs "
              << want[i];
        }
      }
    }
  }
}

// Max pools whose windows tile the rows (strides equal to the window, no padding): the fast path
// that walks every plane's output rows as one run (and a one-row window over rows it covers
// whole as one long row), eight outputs at a time for windows two columns wide. Against the
// reference bit for bit, NaN where it gives NaN, with NaN and signed zeros throughout; rows of
// fewer and more than eight outputs with a tail, columns and rows left over past the last
// window, one thread and three.
TEST(FastKernels, TilingMaxPoolsMatchTheReferenceExactly) {
  std::mt19937 rng(67);
  rt::ThreadPool three(3);
  struct Case {
    Shape x;
    std::vector<int64_t> kernel;
  };
  const Case cases[] = {
      {{3, 5, 6, 34}, {1, 2}},   // one long row: 17 outputs a row, rows run together
      {{2, 4, 5, 35}, {1, 2}},   // a column past the last window: row by row
      {{2, 6, 14, 32}, {2, 2}},  // oww-embedding's pool in small: 16 outputs a row
      {{1, 3, 9, 21}, {2, 2}},   // a row and a column left over; 10 outputs a row
      {{2, 2, 12, 7}, {2, 2}},   // 3 outputs a row: the tail alone
      {{1, 4, 9, 30}, {3, 3}},  {{2, 3, 8, 12}, {2, 1}},  {{2, 3, 7, 13}, {3, 1}},
      {{1, 2, 5, 27}, {1, 3}},  {{1, 3, 10, 33}, {2, 3}}, {{1, 2, 9, 20}, {3, 2}},
  };
  for (const Case& c : cases) {
    std::vector<float> data = Random(rng, Count(c.x));
    for (size_t i = 0; i < data.size(); ++i) {
      if (i % 13 == 4) data[i] = std::nanf("");
      if (i % 5 == 2) data[i] = i % 2 ? -0.0f : 0.0f;
    }
    Attrs attrs;
    attrs.Ints("pool_size", c.kernel)
        .Ints("strides", c.kernel)
        .Ints("dilation", {1, 1})
        .Ints("padding", {0, 0, 0, 0})
        .Bool("ceil_mode", false);
    const rt::AttrView::List* list = attrs.Finish();
    std::vector<Tensor> inputs = {Tensor{DType::kFloat32, c.x, data.data()}};
    TestContext ref(inputs, list, nullptr);
    ASSERT_TRUE(nn::MaxPool(ref).ok());
    const std::vector<float> want = ref.values();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got(inputs, list, pool);
      ASSERT_TRUE(nn::MaxPoolFast(got).ok());
      const std::vector<float> v = got.values();
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < v.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(v[i]))
              << "x " << Join(c.x) << " kernel " << Join(c.kernel) << ", element " << i;
        } else {
          EXPECT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
              << "x " << Join(c.x) << " kernel " << Join(c.kernel) << ", element " << i << ": "
              << v[i] << " vs " << want[i];
        }
      }
    }
  }
}

// Adaptive max pooling of 1 to 3 dims, windows from the whole plane to one cell, with NaN (first
// or later in a window), signed zeros (a window whose greatest is zero, -0 or 0 first) and
// negatives, and planes with no cells (every window empty): bit for bit the reference's walk.
TEST(FastKernels, AdaptiveMaxPoolMatchesTheReferenceExactly) {
  std::mt19937 rng(71);
  struct Case {
    Shape x;
    std::vector<int64_t> out;
  };
  const Case cases[] = {{{2, 3, 37}, {1}},        {{2, 3, 37}, {5}},
                        {{1, 4, 37}, {1}},        {{1, 3, 37}, {37}},
                        {{1, 2, 9, 11}, {1, 1}},  {{1, 2, 9, 11}, {3, 4}},
                        {{2, 1, 9, 11}, {9, 11}}, {{1, 1, 4, 5, 6}, {2, 3, 2}},
                        {{4, 512, 508}, {1}},     {{1, 2, 0}, {3}},
                        {{1, 2, 0, 4}, {2, 2}}};
  for (const Case& c : cases) {
    std::vector<float> data = Random(rng, Count(c.x));
    for (size_t i = 0; i < data.size(); ++i) {
      if (i % 13 == 3) data[i] = std::nanf("");
      if (i % 11 == 5) data[i] = i % 2 ? -0.0f : 0.0f;
      if (i % 17 < 6) data[i] = -std::abs(data[i]);  // runs whose greatest is a zero
    }
    if (c.x == Shape{1, 4, 37}) {
      // Windows whose greatest is zero, one zero of each sign, in either order, the later of the
      // two in an earlier lane of eight: the first in the walk's order is the result.
      std::fill(data.begin(), data.end(), -1.0f);
      data[5] = -0.0f;
      data[8] = 0.0f;
      data[37 + 5] = 0.0f;
      data[37 + 8] = -0.0f;
    }
    Attrs attrs;
    attrs.Ints("output_size", c.out);
    const rt::AttrView::List* list = attrs.Finish();
    std::vector<Tensor> inputs = {Tensor{DType::kFloat32, c.x, data.data()}};
    TestContext ref(inputs, list, nullptr), got(inputs, list, nullptr);
    ASSERT_TRUE(nn::AdaptiveMaxPool(ref).ok());
    ASSERT_TRUE(nn::AdaptiveMaxPoolFast(got).ok());
    std::vector<float> v = got.values(), want = ref.values();
    ASSERT_EQ(got.out().shape, ref.out().shape);
    for (size_t i = 0; i < v.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(v[i])) << "x (" << Join(c.x) << "), element " << i;
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
            << "x (" << Join(c.x) << ") out (" << Join(c.out) << "), element " << i << ": " << v[i]
            << " vs " << want[i];
      }
    }
  }
}

// Resize of the last two axes (the plane path) in
// every mode, and of a leading axis (the general walk), against the reference walk: the same sums
// in the same order, so the same values exactly.
TEST(FastKernels, ResizeMatchesTheReferenceExactly) {
  std::mt19937 rng(31);
  struct Case {
    Shape x;
    std::vector<double> scales;
    std::string mode, ctm, nearest_mode;
  };
  const Case cases[] = {
      {{1, 3, 5, 7}, {1, 1, 2, 2}, "nearest", "asymmetric", "floor"},
      // whole-number upsampling (each input column repeated: copied as runs), and by 2 with
      // half-pixel centres (not runs of the same column)
      {{1, 2, 3, 5}, {1, 1, 4, 4}, "nearest", "asymmetric", "floor"},
      {{1, 2, 4, 6}, {1, 1, 2, 2}, "nearest", "half_pixel", "round_prefer_floor"},
      {{2, 2, 6, 5}, {1, 1, 3, 0.5}, "nearest", "half_pixel", "round_prefer_ceil"},
      {{1, 2, 4, 4}, {1, 1, 1.5, 2.5}, "nearest", "align_corners", "round_prefer_floor"},
      {{1, 4, 9, 11}, {1, 1, 2, 2}, "linear", "half_pixel", ""},
      {{1, 2, 8, 6}, {1, 1, 0.5, 1.75}, "linear", "pytorch_half_pixel", ""},
      {{3, 5, 7}, {1, 2, 2}, "linear", "align_corners", ""},
      {{1, 1, 6, 6}, {1, 1, 1.6, 0.7}, "cubic", "half_pixel", ""},
      {{1, 1, 6, 6}, {1, 1, 2, 2}, "linear", "tf_crop_and_resize", ""},
      {{2, 3, 4, 5}, {2, 1, 2, 2}, "nearest", "asymmetric", "floor"},  // a leading axis
      {{7, 9}, {3, 1}, "nearest", "asymmetric", "ceil"},
  };
  for (const Case& c : cases) {
    Attrs attrs;
    attrs.Str("mode", c.mode).Str("coordinate_transformation_mode", c.ctm);
    if (!c.nearest_mode.empty()) attrs.Str("nearest_mode", c.nearest_mode);
    Shape roi = {c.ctm == "tf_crop_and_resize" ? 2 * static_cast<int64_t>(c.x.size()) : 0};
    const rt::AttrView::List* list = attrs.Finish();
    std::vector<float> data = Random(rng, Count(c.x)), scales(c.scales.begin(), c.scales.end());
    std::vector<float> roi_data = {0, 0, -0.25f, 0.1f, 1, 1, 0.8f, 1.3f};  // outside: extrapolated
    std::vector<Tensor> inputs = {
        Tensor{DType::kFloat32, c.x, data.data()}, Tensor{DType::kFloat32, roi, roi_data.data()},
        Tensor{DType::kFloat32, {static_cast<int64_t>(scales.size())}, scales.data()}};
    std::string what = "resize (" + Join(c.x) + ") " + c.mode + " " + c.ctm;
    TestContext ref(inputs, list, nullptr);
    Status st = ResizeReference(ref);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    rt::ThreadPool three(3);
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got(inputs, list, pool);
      st = Resize(got);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      ASSERT_EQ(got.out().shape, ref.out().shape) << what;
      std::vector<float> v = got.values(), want = ref.values();
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
            << what << ", element " << i << ": " << v[i] << " vs " << want[i];
      }
    }
  }
}

// prelu with a slope per channel or one slope, on the channel axis or another, and rows of one.
TEST(FastKernels, PReluMatchesTheReference) {
  std::mt19937 rng(29);
  struct Case {
    Shape x;
    int64_t axis;
    Shape slope;
  };
  const Case cases[] = {{{2, 16, 9, 11}, 1, {16}},
                        {{3, 48, 48, 32}, 3, {32}},
                        {{2, 5, 7}, 1, {1}},
                        {{4, 6}, -1, {6}},
                        {{5}, 0, {5}},
                        {{2, 0, 3}, 1, {1}}};
  for (const Case& c : cases) {
    Attrs attrs;
    attrs.Int("axis", c.axis);
    Compare(nn::PReluFast, nn::PReluReference, {c.x, c.slope}, attrs, rng,
            "prelu (" + Join(c.x) + ") axis " + std::to_string(c.axis));
  }
}

// The float32 activations, maximum / minimum and softmax against their references, with
// attributes, broadcasts and (for softmax) the last axis and another one.
TEST(FastKernels, ActivationsAndSoftmaxMatchTheReference) {
  std::mt19937 rng(31);
  for (Shape x : {Shape{7}, Shape{2, 3, 50}, Shape{1, 70000}, Shape{0, 3}}) {
    Attrs none, hs, lr;
    hs.Float("alpha", 0.3).Float("beta", 0.4);
    lr.Float("alpha", 0.2);
    Compare(nn::HardSwishFast, nn::HardSwishReference, {x}, none, rng, "hard_swish " + Join(x));
    Compare(nn::HardSigmoidFast, nn::HardSigmoidReference, {x}, hs, rng, "hard_sigmoid " + Join(x));
    Compare(nn::LeakyReluFast, nn::LeakyReluReference, {x}, lr, rng, "leakyrelu " + Join(x));
    Compare(nn::SiluFast, nn::SiluReference, {x}, none, rng, "silu " + Join(x));
    Compare(nn::GeluFast, nn::GeluReference, {x}, none, rng, "gelu " + Join(x));
    Compare(MaximumFast, MaximumReference, {x, {x.empty() ? 1 : x.back()}}, none, rng,
            "maximum " + Join(x));
    Compare(MinimumFast, MinimumReference, {x, {}}, none, rng, "minimum " + Join(x));
  }
  for (auto [x, axis] : std::vector<std::pair<Shape, int64_t>>{{{2, 3, 50}, -1},
                                                               {{4, 1000}, 1},
                                                               {{3, 7}, 0},
                                                               {{2, 5, 9}, 1},
                                                               {{1}, 0},
                                                               {{0, 4}, -1},
                                                               {{1, 16, 4, 2100}, 1},
                                                               {{2, 0, 3}, 1},
                                                               {{1, 59, 59, 2}, -1},
                                                               {{37, 3}, -1},
                                                               {{5, 7}, 1}}) {
    Attrs attrs;
    attrs.Int("axis", axis);
    Compare(nn::SoftmaxFast, nn::SoftmaxReference, {x}, attrs, rng,
            "softmax " + Join(x) + " axis " + std::to_string(axis));
  }
}

// Softmax rows with NaN or infinities where the fast row's max runs in vector lanes and where
// it runs in its scalar tail: NaN wherever the reference has NaN, the rest as the reference.
TEST(FastKernels, SoftmaxKeepsTheReferencesNaNAndInfinities) {
  std::mt19937 rng(43);
  const int64_t rows = 6, n = 37;  // 32 in lanes of eight, 5 in the tail
  std::vector<float> data = Random(rng, rows * n);
  data[0 * n + 3] = std::nanf("");
  data[1 * n + 35] = std::nanf("");
  for (int64_t i = 0; i < n; ++i) data[2 * n + i] = -INFINITY;
  data[3 * n + 10] = INFINITY;
  data[4 * n + 36] = INFINITY;
  for (int64_t i = 0; i < n; ++i) data[5 * n + i] = i % 3 ? -0.0f : 0.0f;
  Attrs attrs;
  attrs.Int("axis", -1);
  const rt::AttrView::List* list = attrs.Finish();
  std::vector<Tensor> inputs = {Tensor{DType::kFloat32, Shape{rows, n}, data.data()}};
  TestContext ref(inputs, list, nullptr), got(inputs, list, nullptr);
  ASSERT_TRUE(nn::SoftmaxReference(ref).ok());
  ASSERT_TRUE(nn::SoftmaxFast(got).ok());
  std::vector<float> v = got.values(), want = ref.values();
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(std::isnan(v[i]), std::isnan(want[i]))
        << "element " << i << ": " << v[i] << " vs " << want[i];
    if (std::isnan(want[i])) continue;
    ASSERT_NEAR(v[i], want[i], 1e-6 + 1e-5 * std::abs(want[i])) << "element " << i;
  }
}

// Transposed convolution as GEMMs and a col2im against the double reference: 1-, 2- and 3-d,
// groups, strides, dilations, pads, output_padding, kernels larger than the stride.
TEST(FastKernels, ConvTransposeMatchesTheReference) {
  std::mt19937 rng(37);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 120; ++iter) {
    int rank = iter % 9 == 0 ? 1 : (iter % 13 == 0 ? 3 : 2);
    int64_t groups = pick(0, 3) == 0 ? pick(2, 3) : 1;
    // Fewer than 8 output channels, or windows that do not overlap: the col2im path; 8 or
    // more with overlapping windows: output phase by output phase.
    int64_t cg = pick(1, 6), og = pick(0, 1) ? pick(1, 7) : pick(8, 12), n = pick(1, 2);
    Shape x = {n, groups * cg}, w = {groups * cg, og};
    std::vector<int64_t> strides, dilation, pads(2 * rank), out_pad;
    for (int d = 0; d < rank; ++d) {
      x.push_back(pick(1, rank == 3 ? 4 : 9));
      w.push_back(pick(1, 4));
      strides.push_back(pick(1, 3));
      dilation.push_back(pick(1, 2));
      out_pad.push_back(pick(0, strides.back() - 1));
    }
    for (int d = 0; d < rank; ++d) {
      int64_t dk = (w[2 + d] - 1) * dilation[d] + 1;
      pads[d] = pick(0, (dk - 1) / 2);
      pads[rank + d] = pick(0, (dk - 1) / 2);
    }
    Attrs attrs;
    attrs.Int("groups", groups)
        .Ints("strides", strides)
        .Ints("dilation", dilation)
        .Ints("padding", pads)
        .Ints("output_padding", out_pad);
    Compare(nn::ConvTransposeFast, nn::ConvTransposeReference, {x, w}, attrs, rng,
            "conv_transpose x (" + Join(x) + ") w (" + Join(w) + ") groups " +
                std::to_string(groups) + " strides " + Join(strides) + " dilation " +
                Join(dilation) + " pads " + Join(pads) + " output_padding " + Join(out_pad));
    if (HasFatalFailure()) return;
  }
  // A wide image with many (output channel, tap) rows: two chunks of columns.
  Attrs big;
  big.Int("groups", 1)
      .Ints("strides", {2, 2})
      .Ints("dilation", {1, 1})
      .Ints("padding", {1, 1, 1, 1})
      .Ints("output_padding", {0, 0});
  Compare(nn::ConvTransposeFast, nn::ConvTransposeReference, {{1, 8, 70, 90}, {8, 64, 4, 4}}, big,
          rng, "conv_transpose of a wide image");
  // A decoder's upsampling (4x4 of stride 2), each phase's reduction over 96 channels' 4 taps
  // longer than one slab of the GEMM.
  Compare(nn::ConvTransposeFast, nn::ConvTransposeReference, {{2, 96, 9, 11}, {96, 20, 4, 4}}, big,
          rng, "conv_transpose of many channels");
}

// A transposed conv's fused epilogue (as a conv's: fuse_epilogue.cc), applied by the fast kernel
// to each output row as the phase-by-phase path writes it, or in a pass over each output plane
// after the product (col2im), against the reference's applied to each double sum: bias, affine
// ops, every activation, ops after it and a residual, on the col2im path (few output channels)
// and the phase-by-phase one, in groups, 1-d and 2-d, one image and two.
TEST(FastKernels, ConvTransposeEpilogueMatchesTheReference) {
  std::mt19937 rng(41);
  struct Case {
    Shape x, w;
    int64_t groups;
  };
  const Case cases[] = {{{2, 6, 5, 7}, {6, 4, 4, 4}, 1},
                        {{1, 8, 6, 5}, {8, 12, 4, 4}, 2},
                        {{2, 3, 9}, {3, 10, 3}, 1},
                        // two images, rows of 18 (each column phase's 9: eight together, one)
                        {{2, 4, 5, 9}, {4, 9, 4, 4}, 1},
                        // no input channels: every output its epilogue of zero
                        {{1, 0, 5, 7}, {0, 12, 4, 4}, 1}};
  struct Act {
    std::string affine;  // one input per letter (a lone "b": the bias, no attribute)
    std::string activation;
    std::vector<std::pair<std::string, double>> bounds = {};
    std::string post = "";
    bool residual = false;
  };
  const std::vector<Act> acts = {
      {"b", ""},
      {"b", "relu"},
      {"sb", "hardswish"},
      {"b", "clip", {{"activation_min", -0.3}, {"activation_max", 0.4}}},
      {"", "prelu", {}, "dsb"},
      {"bs", "leaky_relu", {{"activation_alpha", 0.2}}, "x"},
      {"b", "relu", {}, "", true},
      {"", "silu", {}, "", true},
  };
  for (const Case& c : cases) {
    int rank = static_cast<int>(c.x.size()) - 2;
    std::vector<int64_t> strides(rank, 2), dilation(rank, 1), pads(2 * rank, 1), out_pad(rank, 0);
    Shape out = {c.x[0], c.w[1] * c.groups};
    for (int d = 0; d < rank; ++d) out.push_back((c.x[2 + d] - 1) * 2 + c.w[2 + d] - 2);
    Shape per_channel(c.x.size() - 1, 1);
    per_channel[0] = out[1];
    for (const Act& act : acts) {
      Attrs attrs;
      attrs.Int("groups", c.groups)
          .Ints("strides", strides)
          .Ints("dilation", dilation)
          .Ints("padding", pads)
          .Ints("output_padding", out_pad);
      if (act.affine.size() > 1 || act.affine == "s") attrs.Str("affine", act.affine);
      if (!act.activation.empty()) attrs.Str("activation", act.activation);
      for (const auto& [name, v] : act.bounds) attrs.Float(name, v);
      if (!act.post.empty()) attrs.Str("post", act.post);
      if (act.residual) attrs.Int("residual", 1);
      std::vector<Shape> shapes = {c.x, c.w};
      for (size_t i = 0; i < act.affine.size(); ++i) shapes.push_back(per_channel);
      if (act.residual) shapes.push_back(out);
      if (act.activation == "prelu") shapes.push_back(per_channel);  // the slope
      for (size_t i = 0; i < act.post.size(); ++i) shapes.push_back(per_channel);
      std::string what = "conv_transpose x (" + Join(c.x) + ") w (" + Join(c.w) + ") groups " +
                         std::to_string(c.groups) + " affine '" + act.affine + "' activation '" +
                         act.activation + "' post '" + act.post + "'" +
                         (act.residual ? " residual" : "");
      Compare(nn::ConvTransposeFast, nn::ConvTransposeReference, shapes, attrs, rng, what);
      if (HasFatalFailure()) return;
    }
  }
}

// One step's cached weights across images of several sizes, on one thread and three: a 2-d
// window of 9 output channels (each output phase's weights, computed phase by phase), and one
// of 5 and a 3-d one (W^T packed, not kept as a matrix), whose chunks of positions take the
// GEMM's few-columns path (W^T then unpacked from the panels) and ones that do not, in both
// orders; and PackedA unpacks to the matrix it packed.
TEST(FastKernels, ConvTransposeKeepsOnlyThePackedWeights) {
  std::mt19937 rng(41);
  for (int64_t m : {1, 4, 7, 13}) {
    for (int64_t k : {1, 5, 33}) {
      std::vector<float> a = Random(rng, static_cast<size_t>(m * k)), back(a.size(), -1.0f);
      PackedA(a.data(), k, m, k).Unpack(back.data());
      ASSERT_EQ(back, a) << m << " x " << k;
    }
  }
  rt::ThreadPool three(3);
  auto check = [&](Attrs& attrs, const Shape& ws, const std::vector<Shape>& images) {
    const rt::AttrView::List* list = attrs.Finish();
    std::vector<float> w = Random(rng, static_cast<size_t>(Count(ws)));
    rt::StepCache cache;
    for (const Shape& xs : images) {
      std::vector<float> x = Random(rng, static_cast<size_t>(Count(xs)));
      std::vector<Tensor> inputs = {Tensor{DType::kFloat32, xs, x.data()},
                                    Tensor{DType::kFloat32, ws, w.data()}};
      TestContext ref(inputs, list, nullptr);
      ASSERT_TRUE(nn::ConvTransposeReference(ref).ok());
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        TestContext got(inputs, list, pool);
        got.SetCache(&cache, 0b10);
        Status st = nn::ConvTransposeFast(got);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(got.out().shape, ref.out().shape);
        std::vector<float> v = got.values(), want = ref.values();
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_NEAR(v[i], want[i], kAtol + kRtol * std::abs(want[i]))
              << "x (" << Join(xs) << "), element " << i;
        }
      }
    }
  };
  for (int64_t og : {9, 5}) {
    Attrs flat;
    flat.Int("groups", 2)
        .Ints("strides", {2, 2})
        .Ints("dilation", {1, 1})
        .Ints("padding", {1, 0, 1, 0})
        .Ints("output_padding", {1, 0});
    check(flat, {6, og, 3, 3},
          {Shape{1, 6, 2, 3}, Shape{2, 6, 11, 9}, Shape{1, 6, 1, 1}, Shape{1, 6, 30, 20},
           Shape{1, 6, 2, 2}});
    if (HasFatalFailure()) return;
  }
  Attrs deep;
  deep.Int("groups", 2)
      .Ints("strides", {2, 1, 2})
      .Ints("dilation", {1, 1, 1})
      .Ints("padding", {1, 0, 0, 1, 0, 1})
      .Ints("output_padding", {1, 0, 0});
  check(deep, {6, 5, 3, 2, 3},
        {Shape{1, 6, 2, 3, 1}, Shape{2, 6, 5, 4, 9}, Shape{1, 6, 1, 1, 1}, Shape{1, 6, 12, 6, 20},
         Shape{1, 6, 2, 2, 2}});
}

// v equals `same` bit for bit and is within the fast kernels' tolerance of the reference `want`.
void ExpectSameBitsNearReference(const std::vector<float>& v, const std::vector<float>& same,
                                 const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(v.size(), want.size()) << what;
  ASSERT_EQ(same.size(), want.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(same[i]))
        << what << ", element " << i << ": " << v[i] << " vs " << same[i];
    ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
        << what << ", element " << i;
  }
}

// The kernels of vmath's functions (exp, log, tanh, sigmoid, erf, silu, gelu) and softmax's rows
// on 16 lanes where the CPU has AVX-512: bit for bit their 8-lane values and near the reference,
// over a range that reaches their limits (overflow, underflow to the subnormals, log's 0 and
// negatives) with NaN, the infinities, zeros and subnormals among the inputs, lengths that leave
// a tail (softmax along the last axis: rows shorter than a vector, of whole vectors and not, a
// row with NaN in its vector part and one with NaN in its tail, a row of infinities; and along
// the first, lanes of each); on one thread and three.
TEST(FastKernels, TranscendentalsOnSixteenLanesMatchEightLanes) {
  if (!HasAvx512Gemm())
    GTEST_SKIP() << "this CPU has no AVX-512 F and VL: only the 8-lane copies run";
  std::mt19937 rng(97);
  std::uniform_real_distribution<float> wide(-120.0f, 120.0f), narrow(-4.0f, 4.0f);
  std::vector<float> x;
  for (int i = 0; i < 600; ++i) x.push_back(wide(rng));
  for (int i = 0; i < 600; ++i) x.push_back(narrow(rng));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, -0.0f, 1e-40f, -1e-40f,
                  88.7f, 89.0f, -103.0f, -105.0f, 3.91f, 3.93f, 0.62f, 0.63f}) {
    x.push_back(v);
  }
  const Shape shape = {static_cast<int64_t>(x.size())};
  struct Kernel {
    const char* name;
    rt::KernelFn fast, reference;
  };
  const Kernel kernels[] = {
      {"exp", ExpFast, ExpReference},           {"log", LogFast, LogReference},
      {"tanh", TanhFast, TanhReference},        {"sigmoid", SigmoidFast, SigmoidReference},
      {"erf", ErfFast, ErfReference},           {"silu", nn::SiluFast, nn::SiluReference},
      {"gelu", nn::GeluFast, nn::GeluReference}};
  Attrs none;
  const rt::AttrView::List* list = none.Finish();
  rt::ThreadPool three(3);
  for (const Kernel& k : kernels) {
    std::vector<Tensor> inputs = {Tensor{DType::kFloat32, shape, x.data()}};
    TestContext ref(inputs, list, nullptr);
    ASSERT_TRUE(k.reference(ref).ok()) << k.name;
    SetAvx512GemmAllowedForTesting(false);
    TestContext eight(inputs, list, nullptr);
    Status st = k.fast(eight);
    SetAvx512GemmAllowedForTesting(true);
    ASSERT_TRUE(st.ok()) << k.name << ": " << st.message();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got(inputs, list, pool);
      st = k.fast(got);
      ASSERT_TRUE(st.ok()) << k.name << ": " << st.message();
      std::vector<float> v = got.values(), same = eight.values(), want = ref.values();
      ASSERT_EQ(v.size(), x.size()) << k.name;
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(same[i]))
            << k.name << "(" << x[i] << "): " << v[i] << " vs " << same[i];
        if (std::isnan(want[i]) || std::isinf(want[i])) {
          ASSERT_TRUE(std::isnan(want[i]) ? std::isnan(v[i]) : v[i] == want[i])
              << k.name << "(" << x[i] << "): " << v[i] << " vs " << want[i];
        } else {
          ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
              << k.name << "(" << x[i] << "): " << v[i] << " vs " << want[i];
        }
      }
    }
  }
  Attrs last, first;
  last.Int("axis", -1);
  first.Int("axis", 0);
  const rt::AttrView::List* along_last = last.Finish();
  const rt::AttrView::List* along_first = first.Finish();
  // Rows along the last axis; then the same data along the first (each of n lanes softmaxed over
  // the 5 rows: a NaN's, an infinity's lanes among them).
  for (int64_t n : {2, 5, 7, 16, 37, 197, -5, -37, -197}) {
    const bool across = n < 0;
    if (across) n = -n;
    const rt::AttrView::List* axis = across ? along_first : along_last;
    const int64_t rows = 5;
    std::vector<float> data = Random(rng, rows * n);
    for (float& v : data) v *= 30.0f;
    data[1 * n + 2] = std::nanf("");
    data[2 * n + n - 1] = std::nanf("");
    for (int64_t i = 0; i < n; ++i) data[3 * n + i] = i % 2 ? inf : -inf;
    std::vector<Tensor> inputs = {Tensor{DType::kFloat32, Shape{rows, n}, data.data()}};
    const std::string what = "softmax of " + std::to_string(rows) + " x " + std::to_string(n) +
                             (across ? " along the first axis" : " along the last axis");
    TestContext ref(inputs, axis, nullptr);
    ASSERT_TRUE(nn::SoftmaxReference(ref).ok()) << what;
    SetAvx512GemmAllowedForTesting(false);
    TestContext eight(inputs, axis, nullptr);
    Status st = nn::SoftmaxFast(eight);
    SetAvx512GemmAllowedForTesting(true);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    TestContext got(inputs, axis, &three);
    ASSERT_TRUE(nn::SoftmaxFast(got).ok()) << what;
    std::vector<float> v = got.values(), same = eight.values(), want = ref.values();
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(same[i]))
          << what << ", element " << i << ": " << v[i] << " vs " << same[i];
      ASSERT_EQ(std::isnan(v[i]), std::isnan(want[i])) << what << ", element " << i;
      if (!std::isnan(want[i])) {
        ASSERT_NEAR(v[i], want[i], 1e-6 + 1e-5 * std::abs(want[i])) << what << ", element " << i;
      }
    }
  }
}

// Large weights of a conv with few output positions are read in place by the AVX-512 GEMM, no
// packed copy kept in the step's cache: the values are the 8-lane kernel's (weights packed) bit
// for bit, and the reference's; across runs of one cache, on one thread and three; grouped,
// strided, 1 x 1, and an image large enough that the weights are packed (so the cache keeps them).
TEST(FastKernels, ConvReadsLargeWeightsInPlace) {
  if (!HasAvx512Gemm())
    GTEST_SKIP() << "this CPU has no AVX-512 F and VL: weights are always packed";
  EXPECT_TRUE(GemmReadsAInPlace());
  std::mt19937 rng(83);
  rt::ThreadPool three(3);
  const ConvCase cases[] = {
      {1, 1, 64, 128, {12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {2, 2, 96, 96, {7, 9}, {3, 3}, {1, 2}, {1, 1}, {1, 0, 1, 0}},
      {1, 1, 256, 512, {10, 10}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 1, 64, 128, {80, 80}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
  };
  for (const ConvCase& c : cases) {
    Shape xs, ws;
    ConvShapes(c, &xs, &ws);
    ASSERT_GE(Count(ws) * 4, int64_t{1} << 18);
    Attrs attrs;
    const rt::AttrView::List* list = ConvAttrs(c, attrs).Finish();
    std::vector<float> w = Random(rng, Count(ws));
    rt::StepCache cache;
    for (int run = 0; run < 2; ++run) {
      std::vector<float> x = Random(rng, Count(xs));
      std::vector<Tensor> inputs = {Tensor{DType::kFloat32, xs, x.data()},
                                    Tensor{DType::kFloat32, ws, w.data()}};
      std::string what =
          "conv x (" + Join(xs) + ") w (" + Join(ws) + "), run " + std::to_string(run);
      TestContext ref(inputs, list, nullptr);
      ASSERT_TRUE(nn::ConvReference(ref).ok()) << what;
      std::vector<float> want = ref.values();
      SetAvx512GemmAllowedForTesting(false);
      TestContext narrow(inputs, list, nullptr);
      Status st = nn::ConvFast(narrow);
      SetAvx512GemmAllowedForTesting(true);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        TestContext got(inputs, list, pool);
        got.SetCache(&cache, 0b10);
        st = nn::ConvFast(got);
        ASSERT_TRUE(st.ok()) << what << ": " << st.message();
        ExpectSameBitsNearReference(got.values(), narrow.values(), want, what);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// A pointwise convolution over an image whose channels start on cache lines reads them in place
// as B's rows (SgemmRows, nothing packed): the values are those of the same image one float off
// (packed), bit for bit, and the reference's; 16 to 256 channels, 480 channels over a small
// image, output channels not a multiple of 8, a bias and relu, a residual, one thread and three.
TEST(FastKernels, PointwiseConvReadsAlignedChannelsInPlace) {
  std::mt19937 rng(37);
  rt::ThreadPool three(3);
  struct Case {
    int64_t c, o, h, w;
    bool residual;
  };
  for (Case cs :
       {Case{16, 40, 8, 32, false}, Case{64, 30, 12, 20, true}, Case{256, 19, 4, 16, false},
        Case{480, 24, 6, 16, true}, Case{200, 8, 16, 64, false}}) {
    Shape xs = {1, cs.c, cs.h, cs.w}, ws = {cs.o, cs.c, 1, 1}, per_channel = {cs.o, 1, 1};
    Shape ys = {1, cs.o, cs.h, cs.w};
    std::vector<float> x = Random(rng, Count(xs)), w = Random(rng, Count(ws));
    std::vector<float> bias = Random(rng, cs.o), res = Random(rng, Count(ys));
    // The image at a 64-byte boundary, and one float past one.
    std::vector<float> storage(static_cast<size_t>(Count(xs) + 32));
    float* aligned = storage.data();
    while (reinterpret_cast<uintptr_t>(aligned) % 64 != 0) ++aligned;
    std::vector<float> off_storage(static_cast<size_t>(Count(xs) + 32));
    float* off = off_storage.data();
    while (reinterpret_cast<uintptr_t>(off) % 64 != 4) ++off;
    std::copy(x.begin(), x.end(), aligned);
    std::copy(x.begin(), x.end(), off);
    Attrs attrs;
    attrs.Int("groups", 1)
        .Ints("strides", {1, 1})
        .Ints("dilation", {1, 1})
        .Ints("padding", {0, 0, 0, 0})
        .Str("activation", "relu");
    if (cs.residual) attrs.Int("residual", 1);
    const rt::AttrView::List* list = attrs.Finish();
    auto inputs = [&](float* image) {
      std::vector<Tensor> in = {Tensor{DType::kFloat32, xs, image},
                                Tensor{DType::kFloat32, ws, w.data()},
                                Tensor{DType::kFloat32, per_channel, bias.data()}};
      if (cs.residual) in.push_back(Tensor{DType::kFloat32, ys, res.data()});
      return in;
    };
    std::string what = "pointwise conv x (" + Join(xs) + ") w (" + Join(ws) + ")" +
                       (cs.residual ? " residual" : "");
    TestContext ref(inputs(x.data()), list, nullptr);
    ASSERT_TRUE(nn::ConvReference(ref).ok()) << what;
    std::vector<float> want = ref.values();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext in_place(inputs(aligned), list, pool), packed(inputs(off), list, pool);
      ASSERT_TRUE(nn::ConvFast(in_place).ok()) << what;
      ASSERT_TRUE(nn::ConvFast(packed).ok()) << what;
      ExpectSameBitsNearReference(in_place.values(), packed.values(), want, what);
      if (HasFatalFailure()) return;
    }
  }
}

// An epilogue for the tests below: a bias or not, an activation, and affine and post ops.
struct ConvAct {
  bool bias;
  std::string activation;
  std::string affine = "";  // the attribute affine: one input per letter, no bias
  std::string post = "";    // the attribute post: one input per letter after those
};

// Each case with each epilogue through ConvFast where the CPU's AVX-512 kernels may run, on one
// thread and on three, against the same with `allow(false)` (their 8-lane forms) bit for bit
// and against the reference. `kind` names the cases in messages.
void ExpectAvx512ConvMatchesEightLanes(const std::string& kind, const std::vector<ConvCase>& cases,
                                       const std::vector<ConvAct>& acts, std::mt19937& rng,
                                       void (*allow)(bool)) {
  rt::ThreadPool three(3);
  for (const ConvCase& c : cases) {
    for (const ConvAct& act : acts) {
      Shape xs, ws;
      ConvShapes(c, &xs, &ws);
      Attrs attrs;
      ConvAttrs(c, attrs);
      if (!act.activation.empty()) attrs.Str("activation", act.activation);
      if (!act.affine.empty()) attrs.Str("affine", act.affine);
      if (!act.post.empty()) attrs.Str("post", act.post);
      const rt::AttrView::List* list = attrs.Finish();
      std::vector<float> x = Random(rng, Count(xs)), w = Random(rng, Count(ws));
      Shape per_channel = {ws[0], 1, 1};
      std::vector<float> bias = Random(rng, ws[0]);
      // Each affine and post input (a divisor kept away from zero).
      std::vector<std::vector<float>> ops;
      for (char op : act.affine + act.post) {
        ops.push_back(Random(rng, ws[0]));
        if (op == 'd') {
          for (float& d : ops.back()) d = 0.5f + std::abs(d);
        }
      }
      std::vector<Tensor> inputs = {Tensor{DType::kFloat32, xs, x.data()},
                                    Tensor{DType::kFloat32, ws, w.data()}};
      for (size_t i = 0; i < act.affine.size(); ++i) {
        inputs.push_back(Tensor{DType::kFloat32, per_channel, ops[i].data()});
      }
      if (act.bias) inputs.push_back(Tensor{DType::kFloat32, per_channel, bias.data()});
      for (size_t i = act.affine.size(); i < ops.size(); ++i) {
        inputs.push_back(Tensor{DType::kFloat32, per_channel, ops[i].data()});
      }
      std::string what = kind + " x (" + Join(xs) + ") w (" + Join(ws) + ") strides " +
                         Join(c.stride) + " pads " + Join(c.pads) + (act.bias ? " bias" : "") +
                         " affine '" + act.affine + "' activation '" + act.activation + "' post '" +
                         act.post + "'";
      TestContext ref(inputs, list, nullptr);
      ASSERT_TRUE(nn::ConvReference(ref).ok()) << what;
      std::vector<float> want = ref.values();
      // The same threads for both: a Winograd step's blocks, and so its GEMMs' shapes, depend
      // on them.
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        allow(false);
        TestContext narrow(inputs, list, pool);
        Status st = nn::ConvFast(narrow);
        allow(true);
        ASSERT_TRUE(st.ok()) << what << ": " << st.message();
        TestContext got(inputs, list, pool);
        st = nn::ConvFast(got);
        ASSERT_TRUE(st.ok()) << what << ": " << st.message();
        ExpectSameBitsNearReference(got.values(), narrow.values(), want,
                                    what + (pool ? ", 3 threads" : ", 1 thread"));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// The AVX-512 depthwise kernel (blocks of 4 rows by 32 columns, a row's last columns short of 32
// in one vector a row, the epilogue a pass over each block's rows) against the 8-lane kernel,
// bit for bit, and the reference: 3x3 and 5x5, the four strides, rows of one, two
// and three 32-column blocks with and without a short rest, several strips, a bias and hardswish, a
// bias and relu, affine ops around ONNX's HardSwish, a leaky relu, and none; on one thread and on
// three.
TEST(FastKernels, DepthwiseAvx512MatchesTheEightLaneKernel) {
  if (!HasAvx512Gemm())
    GTEST_SKIP() << "this CPU has no AVX-512 F and VL: only the 8-lane kernel runs";
  std::mt19937 rng(29);
  ExpectAvx512ConvMatchesEightLanes(
      "depthwise",
      {
          {2, 5, 1, 1, {13, 37}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
          {1, 3, 1, 1, {37, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
          {1, 4, 1, 1, {12, 80}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
          {1, 3, 1, 1, {20, 98}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
          {2, 2, 1, 1, {24, 70}, {5, 5}, {2, 1}, {1, 1}, {2, 2, 2, 2}},
          {1, 2, 1, 1, {9, 130}, {3, 3}, {1, 2}, {1, 1}, {1, 0, 1, 2}},
          {1, 2, 1, 1, {40, 33}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 2, 2}},
      },
      {{true, "hardswish"},
       {true, "relu"},
       {false, ""},
       {false, "hard_swish", "bsb", "dsb"},
       {true, "leaky_relu", "", "xn"}},
      rng, SetAvx512GemmAllowedForTesting);
}

// Winograd F(2x2, 3x3) with its transforms on sixteen tiles at a time (AVX-512) against the
// transforms' loops on 8 lanes (the same GEMMs between), bit for bit, and the reference: tile rows
// shorter than 16 tiles (14 x 14), of 16 and 2 more, of exactly 32, an odd output (a last tile half
// outside), no padding, pads of 2, uneven pads (an image column read by no tile's first vector), a
// batch whose images share blocks, small images (6 x 6 outputs in 3 images, 7 x 7 in 2, 8 x 8 in
// one: Winograd from 9 tiles an image and 16 in the batch where the CPU has AVX-512), with a bias
// and relu, none, and affine ops with a leaky relu; on one thread and on three.
TEST(FastKernels, WinogradTransformsOnSixteenLanesMatchEightLanes) {
  if (!HasAvx512Gemm())
    GTEST_SKIP() << "this CPU has no AVX-512 F and VL: only the 8-lane transforms run";
  std::mt19937 rng(31);
  ExpectAvx512ConvMatchesEightLanes(
      "winograd",
      {
          {1, 1, 8, 40, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
          {2, 1, 9, 36, {33, 35}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
          {1, 1, 8, 34, {66, 66}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
          {3, 1, 10, 48, {23, 23}, {3, 3}, {1, 1}, {1, 1}, {0, 2, 1, 1}},
          {1, 1, 8, 40, {12, 50}, {3, 3}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
          {1, 1, 16, 33, {13, 31}, {3, 3}, {1, 1}, {1, 1}, {1, 0, 0, 2}},
          {3, 1, 8, 40, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
          {2, 1, 12, 36, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
          {1, 1, 16, 48, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      },
      {{true, "relu"}, {false, ""}, {false, "leaky_relu", "s", "bx"}}, rng,
      nn::SetWinograd512AllowedForTesting);
}

// A constant B (a weight) is converted or packed on the step's first run and kept in its cache;
// later runs with other A read it: float32 (batched B, a partial last panel) and int32.
TEST(FastKernels, MatmulKeepsAConstantBAcrossRuns) {
  std::mt19937 rng(47);
  for (DType dtype : {DType::kFloat32, DType::kInt32}) {
    Shape a_shape = {2, 9, 40}, b_shape = {2, 40, 53};
    std::vector<float> bf = Random(rng, Count(b_shape));
    std::vector<int32_t> bi(bf.size());
    for (size_t i = 0; i < bf.size(); ++i) bi[i] = static_cast<int32_t>(bf[i] * 127);
    void* b_data = dtype == DType::kFloat32 ? static_cast<void*>(bf.data()) : bi.data();
    Attrs attrs;
    const rt::AttrView::List* list = attrs.Finish();
    rt::StepCache cache;
    rt::ThreadPool three(3);
    for (int run = 0; run < 3; ++run) {
      std::vector<float> af = Random(rng, Count(a_shape));
      std::vector<int32_t> ai(af.size());
      for (size_t i = 0; i < af.size(); ++i) ai[i] = static_cast<int32_t>(af[i] * 255);
      void* a_data = dtype == DType::kFloat32 ? static_cast<void*>(af.data()) : ai.data();
      std::vector<Tensor> inputs = {Tensor{dtype, a_shape, a_data}, Tensor{dtype, b_shape, b_data}};
      TestContext ref(inputs, list, nullptr);
      ASSERT_TRUE(MatmulReference(ref).ok());
      TestContext got(inputs, list, run == 1 ? &three : nullptr);
      got.SetCache(&cache, 0b10);
      ASSERT_TRUE(MatmulFast(got).ok());
      ASSERT_EQ(got.out().shape, ref.out().shape);
      for (int64_t i = 0; i < got.out().NumElements(); ++i) {
        if (dtype == DType::kInt32) {
          ASSERT_EQ(static_cast<const int32_t*>(got.out().data)[i],
                    static_cast<const int32_t*>(ref.out().data)[i])
              << "int32, run " << run << ", element " << i;
        } else {
          float v = static_cast<const float*>(got.out().data)[i];
          float want = static_cast<const float*>(ref.out().data)[i];
          ASSERT_LE(std::abs(v - want), kAtol + kRtol * std::abs(want))
              << "float32, run " << run << ", element " << i;
        }
      }
    }
  }
}

// A B that quiltc packed into panels (targets/pack_weights.h; attribute packed_b, B's shape) is
// read where it is: the fast kernel gives bit for bit what it gives on B as a matrix, with or
// without the step's cache, on 1 or 3 threads, and the reference reads the panels back. Panels
// unpack to B, the columns past n zero.
TEST(FastKernels, MatmulReadsBPackedIntoPanels) {
  std::mt19937 rng(53);
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{9, 40}, {40, 53}},          {{1, 70}, {70, 24}},
                        {{30, 17}, {17, 9}},          {{2, 9, 40}, {2, 40, 25}},
                        {{2, 3, 5, 40}, {3, 40, 30}}, {{4, 3, 64}, {64, 100}},
                        {{6, 300}, {300, 70}},        {{0, 5}, {5, 30}}};
  rt::ThreadPool three(3);
  for (const Case& c : cases) {
    std::string what = "matmul (" + Join(c.a) + ") x packed (" + Join(c.b) + ")";
    int64_t k = c.b[c.b.size() - 2], n = c.b.back(), per = PackedBFloats(k, n);
    int64_t matrices = Count(c.b) / std::max<int64_t>(1, k * n);
    std::vector<float> a = Random(rng, Count(c.a)), b = Random(rng, Count(c.b));
    std::vector<float> panels(static_cast<size_t>(matrices * per), -1.0f);
    for (int64_t i = 0; i < matrices; ++i) {
      PackBPanels(MatrixB(b.data() + i * k * n, k, n), k, n, panels.data() + i * per);
      std::vector<float> back(static_cast<size_t>(k * n));
      UnpackBPanels(panels.data() + i * per, k, n, back.data());
      ASSERT_TRUE(std::equal(back.begin(), back.end(), b.begin() + i * k * n)) << what;
      for (int64_t p = 0; p < k; ++p) {
        for (int64_t j = n; j < per / std::max<int64_t>(1, k); ++j) {
          int64_t at = i * per + j / kGemmPanel * k * kGemmPanel + p * kGemmPanel + j % kGemmPanel;
          ASSERT_EQ(panels[static_cast<size_t>(at)], 0.0f) << what << ": column " << j;
        }
      }
    }
    Attrs plain_attrs, packed_attrs;
    packed_attrs.Ints("packed_b", c.b);
    const rt::AttrView::List* plain = plain_attrs.Finish();
    const rt::AttrView::List* packed = packed_attrs.Finish();
    std::vector<Tensor> as_matrix = {Tensor{DType::kFloat32, c.a, a.data()},
                                     Tensor{DType::kFloat32, c.b, b.data()}};
    std::vector<Tensor> as_panels = {
        Tensor{DType::kFloat32, c.a, a.data()},
        Tensor{DType::kFloat32, {static_cast<int64_t>(panels.size())}, panels.data()}};
    TestContext ref(as_matrix, plain, nullptr);
    ASSERT_TRUE(MatmulReference(ref).ok()) << what;
    TestContext ref_packed(as_panels, packed, nullptr);
    Status st = MatmulReference(ref_packed);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    ASSERT_EQ(ref_packed.values(), ref.values()) << what << ": the reference on the panels";
    for (int pass = 0; pass < 4; ++pass) {
      rt::ThreadPool* pool = pass % 2 ? &three : nullptr;
      rt::StepCache cache, packed_cache;
      TestContext want(as_matrix, plain, pool);
      TestContext got(as_panels, packed, pool);
      if (pass >= 2) {
        want.SetCache(&cache, 0b10);
        got.SetCache(&packed_cache, 0b10);
      }
      ASSERT_TRUE(MatmulFast(want).ok()) << what;
      st = MatmulFast(got);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      ASSERT_EQ(got.out().shape, ref.out().shape) << what;
      std::vector<float> v = got.values(), w = want.values(), r = ref.values();
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(w[i]))
            << what << ", pass " << pass << ", element " << i << ": " << v[i] << " vs " << w[i];
        ASSERT_LE(std::abs(v[i] - r[i]), kAtol + kRtol * std::abs(r[i])) << what << ", " << i;
      }
    }
  }
}

// A bias and bounds or function that quiltc fused into a matmul (attributes bias, activation): the
// fast kernel gives bit for bit the plain product with the bias added to each row and the bounds
// or the function (sigmoid, SiLU) applied after (what the add and the relu, clip, sigmoid or
// sigmoid-and-multiply steps give), and the reference within the
// tolerance: one product of all A's rows by one B, products side by side and split, few
// columns, a vector A, an empty reduction. A bias of another length, a product not of float32
// and an unknown activation are refused.
TEST(FastKernels, MatmulWithAFusedBiasAddsItToEveryRow) {
  std::mt19937 rng(61);
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {
      {{3, 9, 40}, {40, 53}}, {{4, 3, 20}, {4, 20, 30}}, {{2, 70, 65}, {2, 65, 64}},
      {{30, 17}, {17, 9}},    {{1, 70}, {70, 24}},       {{6, 300}, {300, 70}},
      {{40}, {40, 30}},       {{5, 0}, {0, 7}},          {{0, 5}, {5, 30}}};
  struct Bounds {
    const char* activation;
    double lo, hi;
  };
  const Bounds bounds[] = {
      {"", 0, 0}, {"relu", 0, 0}, {"clip", -0.3, 0.4}, {"sigmoid", 0, 0}, {"silu", 0, 0}};
  rt::ThreadPool three(3);
  for (const Case& c : cases) {
    for (const Bounds& bd : bounds) {
      int64_t n = c.b.back();
      std::string what = "matmul (" + Join(c.a) + ") x (" + Join(c.b) + ") + bias, activation '" +
                         bd.activation + "'";
      auto epilogue = [&](Attrs& attrs) -> Attrs& {
        attrs.Int("bias", 1);
        if (*bd.activation) attrs.Str("activation", bd.activation);
        if (std::string(bd.activation) == "clip") {
          attrs.Float("activation_min", bd.lo).Float("activation_max", bd.hi);
        }
        return attrs;
      };
      Attrs compared, attrs, none;
      Compare(MatmulFast, MatmulReference, {c.a, c.b, {n}}, epilogue(compared), rng, what);
      if (HasFatalFailure()) return;
      std::vector<float> a = Random(rng, Count(c.a)), b = Random(rng, Count(c.b)),
                         bias = Random(rng, n);
      const rt::AttrView::List* plain = none.Finish();
      const rt::AttrView::List* fused = epilogue(attrs).Finish();
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        TestContext want(
            {Tensor{DType::kFloat32, c.a, a.data()}, Tensor{DType::kFloat32, c.b, b.data()}}, plain,
            pool);
        TestContext got(
            {Tensor{DType::kFloat32, c.a, a.data()}, Tensor{DType::kFloat32, c.b, b.data()},
             Tensor{DType::kFloat32, {n}, bias.data()}},
            fused, pool);
        ASSERT_TRUE(MatmulFast(want).ok()) << what;
        Status st = MatmulFast(got);
        ASSERT_TRUE(st.ok()) << what << ": " << st.message();
        ASSERT_EQ(got.out().shape, want.out().shape) << what;
        std::vector<float> v = got.values(), w = want.values();
        float lo = std::string(bd.activation) == "relu"   ? 0.0f
                   : std::string(bd.activation) == "clip" ? static_cast<float>(bd.lo)
                                                          : -INFINITY;
        float hi = std::string(bd.activation) == "clip" ? static_cast<float>(bd.hi) : INFINITY;
        std::vector<float> sums(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
          float e = w[i] + bias[i % static_cast<size_t>(n)];
          e = e < lo ? lo : e;
          sums[i] = e > hi ? hi : e;
        }
        // A function: what its kernels give for the sums (SiLU: the sigmoid's, times the sum).
        std::string_view act = bd.activation;
        std::vector<float> f = sums;
        if (act == "sigmoid" || act == "silu") {
          TestContext k({Tensor{DType::kFloat32, got.out().shape, sums.data()}}, none.Finish(),
                        nullptr);
          ASSERT_TRUE(SigmoidFast(k).ok()) << what;
          f = k.values();
          if (act == "silu") {
            for (size_t i = 0; i < f.size(); ++i) f[i] = sums[i] * f[i];
          }
        }
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(f[i]))
              << what << ", element " << i << ": " << v[i] << " vs " << f[i];
        }
      }
    }
  }
  std::vector<float> a = Random(rng, 6), b = Random(rng, 12), bias = Random(rng, 5);
  std::vector<int32_t> ia(6, 1), ib(12, 1), ibias(4, 1);
  struct Bad {
    std::vector<Tensor> inputs;
    const char* activation;
    const char* message;
  };
  const Bad bad[] = {
      {{Tensor{DType::kFloat32, {2, 3}, a.data()}, Tensor{DType::kFloat32, {3, 4}, b.data()},
        Tensor{DType::kFloat32, {5}, bias.data()}},
       "",
       "matmul: the fused bias float32 (5,) does not hold one float32 value per column of the "
       "product (4)"},
      {{Tensor{DType::kFloat32, {2, 3}, a.data()}, Tensor{DType::kFloat32, {3, 4}, b.data()}},
       "",
       "matmul: the fused bias (absent) does not hold one float32 value per column of the product "
       "(4)"},
      {{Tensor{DType::kInt32, {2, 3}, ia.data()}, Tensor{DType::kInt32, {3, 4}, ib.data()},
        Tensor{DType::kInt32, {4}, ibias.data()}},
       "",
       "matmul: a fused bias or activation needs a float32 product, not int32"},
      {{Tensor{DType::kFloat32, {2, 3}, a.data()}, Tensor{DType::kFloat32, {3, 4}, b.data()},
        Tensor{DType::kFloat32, {4}, bias.data()}},
       "gelu",
       "matmul: unknown activation 'gelu'"},
  };
  for (const Bad& x : bad) {
    Attrs attrs;
    attrs.Int("bias", 1);
    if (*x.activation) attrs.Str("activation", x.activation);
    const rt::AttrView::List* list = attrs.Finish();
    for (rt::KernelFn kernel : {MatmulFast, MatmulReference}) {
      TestContext ctx(x.inputs, list, nullptr);
      Status st = kernel(ctx);
      ASSERT_FALSE(st.ok()) << x.message;
      EXPECT_EQ(st.message(), x.message);
    }
  }
}

// matmul_pack_b (a step lowering adds) writes each matrix of B as PackBPanels does, one after
// another, and refuses what is no float32 B.
TEST(FastKernels, MatmulPackBWritesEachMatrixsPanels) {
  std::mt19937 rng(59);
  Attrs attrs;
  const rt::AttrView::List* list = attrs.Finish();
  for (const Shape& shape : {Shape{40, 53}, Shape{2, 3, 17, 9}, Shape{0, 30}, Shape{5, 0}}) {
    std::vector<float> b = Random(rng, Count(shape));
    TestContext ctx({Tensor{DType::kFloat32, shape, b.data()}}, list, nullptr);
    Status st = MatmulPackB(ctx);
    ASSERT_TRUE(st.ok()) << Join(shape) << ": " << st.message();
    int64_t k = shape[shape.size() - 2], n = shape.back(), per = PackedBFloats(k, n);
    int64_t matrices = shape.size() == 4 ? 6 : 1;
    std::vector<float> want(static_cast<size_t>(matrices * per));
    for (int64_t i = 0; i < matrices && k > 0; ++i) {
      PackBPanels(MatrixB(b.data() + i * k * n, k, n), k, n, want.data() + i * per);
    }
    ASSERT_EQ(ctx.out().shape, (Shape{matrices * per})) << Join(shape);
    ASSERT_EQ(ctx.values(), want) << Join(shape);
  }
  std::vector<float> row(7, 1.0f);
  std::vector<int32_t> ints(12, 1);
  for (const Tensor& bad :
       {Tensor{DType::kFloat32, {7}, row.data()}, Tensor{DType::kInt32, {3, 4}, ints.data()}}) {
    TestContext ctx({bad}, list, nullptr);
    Status st = MatmulPackB(ctx);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("matmul_pack_b takes one float32 input"), std::string::npos)
        << st.message();
  }
}

// Panels that do not fit the shape packed_b gives are refused with what is wrong, never read.
TEST(FastKernels, MatmulRefusesPanelsThatDoNotFitTheirShape) {
  std::vector<float> a(2 * 40, 1.0f), panels(48 * 40, 1.0f);
  std::vector<int32_t> ints(48 * 40, 1);
  struct Case {
    Shape packed_b;
    Tensor b;
    std::string says;
  };
  const int64_t huge = int64_t{1} << 62;
  const Case cases[] = {
      {{40, 30}, Tensor{DType::kFloat32, {48 * 40}, panels.data()}, ""},
      {{40, 49}, Tensor{DType::kFloat32, {48 * 40}, panels.data()}, "needs a 1-D float32 input"},
      {{40, 30}, Tensor{DType::kFloat32, {40, 48}, panels.data()}, "needs a 1-D float32 input"},
      {{40, 30}, Tensor{DType::kInt32, {48 * 40}, ints.data()}, "needs a 1-D float32 input"},
      {{30}, Tensor{DType::kFloat32, {48 * 40}, panels.data()}, "at least 2 dims"},
      {{40, -30}, Tensor{DType::kFloat32, {48 * 40}, panels.data()}, "negative"},
      {{huge, huge, 40, 30}, Tensor{DType::kFloat32, {48 * 40}, panels.data()}, "too many"},
      {{40, huge}, Tensor{DType::kFloat32, {48 * 40}, panels.data()}, "too large"},
      {{50, 30}, Tensor{DType::kFloat32, {48 * 40}, panels.data()}, "needs a 1-D float32 input"},
  };
  for (const Case& c : cases) {
    Attrs attrs;
    attrs.Ints("packed_b", c.packed_b);
    const rt::AttrView::List* list = attrs.Finish();
    std::vector<Tensor> inputs = {Tensor{DType::kFloat32, {2, 40}, a.data()}, c.b};
    for (auto* kernel : {MatmulFast, MatmulReference}) {
      TestContext ctx(inputs, list, nullptr);
      Status st = kernel(ctx);
      std::string what = "packed_b (" + Join(c.packed_b) + ")";
      if (c.says.empty()) {
        ASSERT_TRUE(st.ok()) << what << ": " << st.message();
        for (float v : ctx.values()) ASSERT_EQ(v, 40.0f) << what;
        continue;
      }
      ASSERT_FALSE(st.ok()) << what;
      EXPECT_NE(st.message().find("packed into panels"), std::string::npos) << st.message();
      EXPECT_NE(st.message().find(c.says), std::string::npos) << what << ": " << st.message();
    }
  }
}

}  // namespace
}  // namespace quilt::cpu
