// The channel-blocked convolution's kernels (conv_blocked.h) against the reference convolution.
#include "targets/cpu/kernels/conv_blocked.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/src/kernel.h"
#include "runtime/src/thread_pool.h"
#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/image.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "tests/runtime/kernel_test_util.h"

namespace quilt::cpu {
namespace {

using namespace kernel_test;  // NOLINT(build/namespaces): the kernels' test helpers

// A blocked result (the context's output) back to NCHW through layout_from_nchw16c: of
// `channels` channels where given (the last block padded), else 16 a block.
std::vector<float> Unblocked(TestContext& blocked, int64_t channels = 0) {
  std::vector<float> values = blocked.values();
  Attrs attrs;
  if (channels > 0) attrs.Int("channels", channels);
  TestContext from({Tensor{DType::kFloat32, blocked.out().shape, values.data()}}, attrs.Finish(),
                   nullptr);
  EXPECT_TRUE(nn::FromBlocked(from).ok());
  return from.values();
}

// The sum of a conv's terms' magnitudes, sum |x| |w|, at each output (the reference conv of |x|
// and |w|): Winograd F(4x4, 3x3)'s rounding is bound relative to it (its transforms' constants up
// to 8 and 1/30 make the rounding of each term larger than a direct sum's, or F(2x2)'s), not to
// the output's value.
std::vector<float> SumOfMagnitudes(const ConvCase& c, const Shape& xs, const Shape& ws,
                                   std::vector<float> x, std::vector<float> w) {
  for (float& v : x) v = std::abs(v);
  for (float& v : w) v = std::abs(v);
  Attrs a;
  ConvAttrs(c, a);
  TestContext ref({Tensor{DType::kFloat32, xs, x.data()}, Tensor{DType::kFloat32, ws, w.data()}},
                  a.Finish(), nullptr);
  EXPECT_TRUE(nn::ConvReference(ref).ok());
  return ref.values();
}

// An epilogue of the channel-blocked convolution's cases: ConvAct's, a residual input (blocked as
// the output) and a prelu's slope per channel.
struct BlockedAct {
  bool bias;
  std::string activation;
  std::string affine = "";
  std::string post = "";
  bool residual = false;
  // Not 0: post is "d", a divide by this one value for every channel.
  float divisor = 0;
};

// nn.conv2d_nchw16c (conv_blocked.h) against the reference convolution of the same NCHW tensors:
// the data through layout_to_nchw16c (checked element by element against its definition), the
// weight through BlockConvWeight, the result back through layout_from_nchw16c. Dense convs (groups
// 1) pointwise (a plane of 63 pixels: a row of 8-, 4- and 2-pixel tiles of three output blocks, and
// single ones), 3x3 with a pad of 1, strided with uneven pads, 5x5 dilated, a 1 x 1 plane in a
// batch of 4, pointwise from 288 channels to 80 (a group of four output blocks and one alone, their
// input channels summed in two parts) over 55 pixels (tiles of 6, 3 and 1 pixel), 3x3 from 32
// channels to 112 (four blocks and three; the input blocks summed one at a time, onto the values
// stored before), pointwise from 112 channels to 64 over 784 pixels (a long row: the input channels
// in two parts of the smaller size); as Winograd F(2x2, 3x3) and F(4x4, 3x3), each in turn, on
// blocked data (3x3 of unit strides over images of enough tiles; the AVX-512 kernels from 9 tiles
// an image, the others from 4 x 4 outputs): 16 -> 32 over 10 x 13 and 32 -> 112 over 6 x 13 above,
// 32 -> 64 over 3 images of 15 x 17 with uneven pads (odd output sizes: the last tiles' outputs
// cut; on three threads a block of tile rows each), 32 -> 48 over one image of 4 x 30 (two tile
// rows: on three threads each phase of a block split between them); depthwise 3x3 rows of 30 (a
// checked tile over the padding column and those after it, 16-pixel tiles of each input vector
// loaded once for its taps, then a checked tile), 5x5 of stride 2, 3x3 of stride 2 over 28 x 28 and
// dilated (single pixels), 5x5 rows of 40 and of stride 2 rows of 23, 5x5 over 7 x 7 and 14 x 14,
// 3x3 without padding, and 5x5 over a plane narrower than the window; strided 3x3 convs of 128 and
// 160 output channels over small planes (each tap's pixels gathered, then a pointwise conv); dense
// convs of NCHW data (3, 4 and 8 channels: a first layer, its output blocked; 3x3 of stride 2 rows
// of 35 and 7x7 of stride 2 to four output blocks, rows of 40, in 16-pixel tiles (8 without
// AVX-512) of each input broadcast once for its taps); with a bias and relu, none, adds and
// multiplies before a hard_swish and divides after, a leaky relu with a maximum and minimum after,
// hardswish and relu with a residual (for 1x1 and Winograd convs also written over the residual, as
// the executor places an output in its residual's buffer), silu, a prelu of a slope per channel,
// sigmoid with a residual, a multiply before a sigmoid, and a divide by one value for every channel
// after a hardswish (PaddlePaddle's x * relu6(x + 3) / 6) and after ONNX's HardSwish with a
// residual, each checked bit for bit against the conv without it divided after; on one thread and
// three, with the AVX-512 kernels where the CPU has them and without. Winograd F(4x4, 3x3)'s
// rounding bound, relative to sum |x| |w| + 2 at an output: about 75 float epsilons, the most seen
// here 1.3e-6 (a hardswish over the sum and a residual; 2.3e-6 with the points 0, +-1, +-2,
// infinity). A wrong transform's error is of the order of the sum itself.
constexpr double kWinograd4Rtol = 4.5e-6;
TEST(FastKernels, ChannelBlockedConvMatchesTheReference) {
  std::mt19937 rng(53);
  const std::vector<ConvCase> cases = {
      {2, 1, 32, 48, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 1, 16, 32, {10, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {1, 1, 32, 16, {11, 14}, {3, 3}, {2, 2}, {1, 1}, {0, 1, 2, 1}},
      {1, 1, 16, 32, {12, 12}, {5, 5}, {1, 1}, {2, 2}, {4, 4, 4, 4}},
      {4, 1, 64, 32, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 32, 1, 1, {14, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {2, 16, 1, 1, {13, 13}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}},
      {1, 48, 1, 1, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {1, 16, 1, 1, {15, 17}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}},
      {2, 1, 3, 16, {13, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {1, 1, 4, 32, {9, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {1, 1, 8, 48, {5, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {2, 1, 288, 80, {5, 11}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 1, 32, 112, {6, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {1, 1, 112, 64, {28, 28}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {3, 1, 32, 64, {15, 17}, {3, 3}, {1, 1}, {1, 1}, {0, 1, 2, 1}},
      {1, 1, 32, 48, {4, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {1, 32, 1, 1, {6, 40}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
      {1, 16, 1, 1, {9, 45}, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}},
      {1, 1, 3, 16, {10, 70}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {1, 1, 3, 64, {12, 80}, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}},
      // Strided pointwise convs: in place (few output channels), and with their pixels gathered
      // first (256 output channels, rows under 8 pixels): even and odd planes, unequal strides,
      // two images; an end pad read by the last row and column (kept in place).
      {1, 1, 32, 64, {14, 14}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {2, 1, 48, 32, {13, 9}, {1, 1}, {2, 3}, {1, 1}, {0, 0, 0, 0}},
      {1, 1, 32, 256, {14, 14}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {2, 1, 48, 256, {13, 9}, {1, 1}, {2, 3}, {1, 1}, {0, 0, 0, 0}},
      {1, 1, 32, 256, {8, 8}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 1, 1}},
      // 3x3 of unit strides over 3 x 20 outputs: direct without AVX-512 (Winograd from 4 x 4),
      // Winograd with it.
      {1, 1, 32, 48, {3, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      // Strided 3x3 convs of 128 output channels or more over small planes, each tap's pixels
      // gathered first: two images, pads on every side; unequal strides, a dilation and uneven
      // pads. (Of 16 input channels: with 32 and 48, 288 and 432 terms, the hardswish epilogue's
      // sums with a residual that cancels them missed the bound on one element by 7% and 18%,
      // whether gathered or direct.)
      {2, 1, 16, 128, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {1, 1, 16, 160, {12, 9}, {3, 3}, {2, 1}, {2, 1}, {0, 2, 1, 0}},
      // Depthwise rows in checked sliding tiles: 5x5 over 7 x 7 (a row in one tile of 7) and over
      // 14 x 14 (tiles of 8 and 6 pixels, each reaching into the padding), 3x3 without padding over
      // rows of 23 (21 outputs: a tile of 16, then a checked one of 5; without AVX-512 8, 8, 4 and
      // a checked 1), and 5x5 of stride 2 over a plane narrower than its window (2 x 3, uneven
      // pads: every tap of a row checked).
      {2, 64, 1, 1, {7, 7}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
      {1, 32, 1, 1, {14, 14}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
      {1, 16, 1, 1, {5, 23}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 16, 1, 1, {2, 3}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 2, 3}},
  };
  const std::vector<BlockedAct> acts = {{true, "relu"},
                                        {false, ""},
                                        {false, "hard_swish", "bsb", "dsb"},
                                        {true, "leaky_relu", "", "xn"},
                                        {true, "hardswish", "", "", true},
                                        {true, "relu", "", "", true},
                                        {true, "silu"},
                                        {true, "prelu"},
                                        {true, "sigmoid", "", "", true},
                                        {false, "sigmoid", "s"},
                                        {true, "hardswish", "", "d", false, 6.0f},
                                        {false, "hard_swish", "s", "d", true, 3.0f}};
  // The sigmoid epilogues draw their constants from a generator of their own, so that every other
  // case keeps the values it was checked with (the bound relative to each output is tight where a
  // sum cancels: a dilated 5x5 case drawn afresh missed it by 2% in the Debug build).
  std::mt19937 sigmoid_rng(54);
  // And the divisor cases (added later) theirs, for the same reason.
  std::mt19937 divisor_rng(55);
  rt::ThreadPool three(3);
  for (const ConvCase& c : cases) {
    Shape xs, ws;
    ConvShapes(c, &xs, &ws);
    const int64_t n = xs[0], ci = xs[1], co = ws[0], taps = ws[2] * ws[3];
    const bool depthwise = c.groups > 1;
    // Channels not a multiple of 16: a first layer, reading NCHW data.
    const bool nchw_data = ci % 16 != 0;
    std::vector<float> x = Random(rng, Count(xs)), w = Random(rng, Count(ws));
    // sum |x| |w| at each output: Winograd F(4x4)'s rounding bound is relative to it.
    const std::vector<float> size = SumOfMagnitudes(c, xs, ws, x, w);
    std::vector<float> wb(w.size());
    nn::BlockConvWeight(w.data(), co, ws[1], taps, depthwise, wb.data(), nchw_data ? ci : 16);
    // The data blocked, checked against the layout's definition.
    Attrs none;
    TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), nullptr);
    std::vector<float> xb = x;
    Shape xbs = xs;
    if (!nchw_data) {
      ASSERT_TRUE(nn::ToBlocked(to).ok());
      ASSERT_EQ(to.out().shape, (Shape{n, ci / 16, xs[2], xs[3], 16}));
      xb = to.values();
      xbs = to.out().shape;
      const int64_t plane = xs[2] * xs[3];
      for (int64_t i = 0; i < Count(xs); ++i) {
        int64_t p = i % plane, ch = i / plane % ci, b = i / plane / ci;
        ASSERT_EQ(xb[((b * (ci / 16) + ch / 16) * plane + p) * 16 + ch % 16], x[i]) << i;
      }
    }
    for (const BlockedAct& act : acts) {
      std::mt19937& draw = act.divisor != 0              ? divisor_rng
                           : act.activation == "sigmoid" ? sigmoid_rng
                                                         : rng;
      // The step's attributes; without `post`, those of the same conv without its post ops.
      auto conv_attrs = [&](Attrs& a, bool post) {
        ConvAttrs(c, a).Ints("weight_shape", ws).Int("weight_group_blocks", 4);
        if (!act.activation.empty()) a.Str("activation", act.activation);
        if (!act.affine.empty()) a.Str("affine", act.affine);
        if (post && !act.post.empty()) a.Str("post", act.post);
        if (act.residual) a.Int("residual", 1);
        return a.Finish();
      };
      Attrs attrs;
      const rt::AttrView::List* list = conv_attrs(attrs, true);
      Shape per_channel = {co, 1, 1};
      std::vector<std::vector<float>> ops;
      for (char op : act.affine + (act.bias ? "b" : "") + act.post) {
        ops.push_back(Random(draw, co));
        if (op == 'd') {
          for (float& d : ops.back()) d = 0.5f + std::abs(d);
        }
      }
      std::vector<float> slope = Random(draw, co);
      // The output's shape, for the residual.
      Attrs plain;
      ConvAttrs(c, plain);
      TestContext shape_of(
          {Tensor{DType::kFloat32, xs, x.data()}, Tensor{DType::kFloat32, ws, w.data()}},
          plain.Finish(), nullptr);
      ASSERT_TRUE(nn::ConvReference(shape_of).ok());
      Shape ys = shape_of.out().shape;
      std::vector<float> res = Random(draw, Count(ys));
      TestContext res_to({Tensor{DType::kFloat32, ys, res.data()}}, none.Finish(), nullptr);
      ASSERT_TRUE(nn::ToBlocked(res_to).ok());
      std::vector<float> res_b = res_to.values();
      auto epilogue = [&](std::vector<Tensor>& in, bool blocked) {
        size_t k = 0;
        for (; k < act.affine.size() + (act.bias ? 1 : 0); ++k)
          in.push_back(Tensor{DType::kFloat32, per_channel, ops[k].data()});
        if (act.residual) {
          in.push_back(blocked ? Tensor{DType::kFloat32, res_to.out().shape, res_b.data()}
                               : Tensor{DType::kFloat32, ys, res.data()});
        }
        if (act.activation == "prelu")
          in.push_back(Tensor{DType::kFloat32, per_channel, slope.data()});
        for (; k < ops.size(); ++k) {
          if (act.divisor != 0) {
            in.push_back(Tensor{DType::kFloat32, {1}, const_cast<float*>(&act.divisor)});
          } else {
            in.push_back(Tensor{DType::kFloat32, per_channel, ops[k].data()});
          }
        }
      };
      std::vector<Tensor> ref_in = {Tensor{DType::kFloat32, xs, x.data()},
                                    Tensor{DType::kFloat32, ws, w.data()}};
      epilogue(ref_in, false);
      std::string what = std::string(depthwise   ? "depthwise"
                                     : nchw_data ? "dense, NCHW data,"
                                                 : "dense") +
                         " x (" + Join(xs) + ") w (" + Join(ws) + ") strides " + Join(c.stride) +
                         " dilation " + Join(c.dilation) + " pads " + Join(c.pads) + " affine '" +
                         act.affine + "' activation '" + act.activation + "' post '" + act.post +
                         "'" + (act.residual ? " residual" : "") +
                         (act.divisor != 0 ? " divisor " + std::to_string(act.divisor) : "");
      TestContext ref(ref_in, list, nullptr);
      ASSERT_TRUE(nn::ConvReference(ref).ok()) << what;
      std::vector<float> want = ref.values();
      std::vector<Tensor> in = {
          Tensor{DType::kFloat32, xbs, xb.data()},
          Tensor{DType::kFloat32, {static_cast<int64_t>(wb.size())}, wb.data()}};
      epilogue(in, true);
      // With a divisor, the same conv without its divide (the post op is the last input).
      Attrs plain_attrs;
      const rt::AttrView::List* plain_list = conv_attrs(plain_attrs, false);
      std::vector<Tensor> plain_in(in.begin(), in.end() - (act.divisor != 0 ? 1 : 0));
      // A 3x3 conv of unit strides over blocked data, with each Winograd tile.
      const bool winograd = !depthwise && !nchw_data && taps == 9 && c.stride[0] == 1 &&
                            c.stride[1] == 1 && c.dilation[0] == 1 && c.dilation[1] == 1;
      for (int tile : winograd ? std::vector<int>{2, 4} : std::vector<int>{0}) {
        nn::SetBlockedWinogradTileForTesting(tile);
        for (bool wide : {true, false}) {
          SetAvx512GemmAllowedForTesting(wide);
          for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
            for (bool in_place : {false, act.residual && (taps == 1 || winograd)}) {
              // In place: the output written over its residual input (the executor's
              // kInPlaceInput).
              std::vector<float> shared = res_b;
              std::vector<Tensor> args = in;
              for (Tensor& t : args) {
                if (in_place && t.data == res_b.data()) t.data = shared.data();
              }
              TestContext got(args, list, pool);
              if (in_place) got.SetOutputMemory(0, shared.data());
              Status st = nn::ConvBlocked(got);
              ASSERT_TRUE(st.ok()) << what << ": " << st.message();
              ASSERT_EQ(got.out().shape, (Shape{ys[0], co / 16, ys[2], ys[3], 16})) << what;
              std::vector<float> yb = got.values();
              TestContext from({Tensor{DType::kFloat32, got.out().shape, yb.data()}}, none.Finish(),
                               pool);
              ASSERT_TRUE(nn::FromBlocked(from).ok()) << what;
              ASSERT_EQ(from.out().shape, ys) << what;
              std::vector<float> v = from.values();
              if (act.divisor != 0 && !in_place) {
                // The divide in the epilogue against the same conv without it, divided afterwards:
                // the same bits.
                TestContext undivided(plain_in, plain_list, pool);
                ASSERT_TRUE(nn::ConvBlocked(undivided).ok()) << what;
                std::vector<float> u = Unblocked(undivided);
                ASSERT_EQ(u.size(), v.size()) << what;
                for (size_t i = 0; i < v.size(); ++i) {
                  const float q = u[i] / act.divisor;
                  ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(q))
                      << what << (wide ? "" : ", 8 lanes") << (pool ? ", 3 threads" : "")
                      << ", element " << i << ": " << v[i] << ", divided after " << q;
                }
              }
              for (size_t i = 0; i < v.size(); ++i) {
                // F(4x4): and its rounding, relative to the sum of the terms' magnitudes (and
                // the bias's and residual's, at most 1 each) through the epilogue.
                const double f4 = tile == 4 ? kWinograd4Rtol * (size[i] + 2) : 0;
                ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]) + f4)
                    << what << (wide ? "" : ", 8 lanes") << (pool ? ", 3 threads" : ", 1 thread")
                    << (in_place ? ", in place" : "")
                    << (tile ? ", Winograd tile " + std::to_string(tile) : "") << ", element " << i
                    << ": " << v[i] << " vs " << want[i];
              }
            }
          }
        }
      }
      nn::SetBlockedWinogradTileForTesting(0);
      SetAvx512GemmAllowedForTesting(true);
    }
  }
}

// Winograd on blocked data over a long reduction, F(2x2, 3x3) and F(4x4, 3x3): 272 -> 64 channels
// over 8 x 8 (the products' input blocks summed in two parts), its transformed weights made on the
// first run into the step's cache and read from it on the second, on one thread and three. The data
// and weights positive: 2,448 products a sum, whose rounding (Winograd's more than a direct sum's)
// a relative tolerance bounds only where they do not cancel.
TEST(FastKernels, ChannelBlockedWinogradSumsLongReductionsInParts) {
  std::mt19937 rng(7);
  const Shape xs = {1, 272, 8, 8}, ws = {64, 272, 3, 3};
  std::vector<float> x = Random(rng, Count(xs)), w = Random(rng, Count(ws)), bias = Random(rng, 64);
  for (float& v : x) v = std::abs(v) + 0.01f;
  for (float& v : w) v = std::abs(v) + 0.01f;
  ConvCase c{1, 1, 272, 64, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}};
  Attrs attrs;
  ConvAttrs(c, attrs)
      .Ints("weight_shape", ws)
      .Int("weight_group_blocks", 4)
      .Str("activation", "relu");
  const rt::AttrView::List* list = attrs.Finish();
  const Shape per_channel = {64, 1, 1};
  TestContext ref({Tensor{DType::kFloat32, xs, x.data()}, Tensor{DType::kFloat32, ws, w.data()},
                   Tensor{DType::kFloat32, per_channel, bias.data()}},
                  list, nullptr);
  ASSERT_TRUE(nn::ConvReference(ref).ok());
  std::vector<float> want = ref.values();
  Attrs none;
  TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), nullptr);
  ASSERT_TRUE(nn::ToBlocked(to).ok());
  std::vector<float> xb = to.values(), wb(w.size());
  nn::BlockConvWeight(w.data(), 64, 272, 9, false, wb.data());
  rt::ThreadPool three(3);
  for (int tile : {2, 4}) {
    nn::SetBlockedWinogradTileForTesting(tile);
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      rt::StepCache cache;
      for (int pass = 0; pass < 2; ++pass) {
        TestContext got({Tensor{DType::kFloat32, to.out().shape, xb.data()},
                         Tensor{DType::kFloat32, {static_cast<int64_t>(wb.size())}, wb.data()},
                         Tensor{DType::kFloat32, per_channel, bias.data()}},
                        list, pool);
        got.SetCache(&cache, ~uint64_t{0});
        ASSERT_TRUE(nn::ConvBlocked(got).ok());
        std::vector<float> v = Unblocked(got);
        ASSERT_EQ(v.size(), want.size());
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_LE(std::abs(v[i] - want[i]), kAtol + kRtol * std::abs(want[i]))
              << "tile " << tile << ", " << (pool ? "3 threads" : "1 thread")
              << (pass ? ", cached" : "") << ", element " << i << ": " << v[i] << " vs " << want[i];
        }
      }
    }
  }
  nn::SetBlockedWinogradTileForTesting(0);
}

// The Winograd tile a step asks for (its winograd_tile attribute, quiltc --cpu-winograd-tile): 4
// runs F(4x4, 3x3) over a plane of 16 x 16 or more (20 x 20: the same bits as F(4x4) forced by the
// test hook, other bits than F(2x2)'s, within F(4x4)'s rounding bound of the reference) and
// F(2x2, 3x3) over a smaller one (12 x 12: F(2x2)'s bits); 2, as no attribute, F(2x2); any other
// value is refused, named. 32 -> 32 channels with a pad of 1, a bias and relu, two images.
TEST(FastKernels, ChannelBlockedWinogradTakesTheTileItsStepAsksFor) {
  std::mt19937 rng(91);
  for (int64_t side : {20, 12}) {
    SCOPED_TRACE(std::to_string(side) + " x " + std::to_string(side));
    const Shape xs = {2, 32, side, side}, ws = {32, 32, 3, 3}, per_channel = {32, 1, 1};
    std::vector<float> x = Random(rng, Count(xs)), w = Random(rng, Count(ws)),
                       bias = Random(rng, 32);
    const ConvCase c{2, 1, 32, 32, {side, side}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}};
    Attrs ref_attrs;
    ConvAttrs(c, ref_attrs).Str("activation", "relu");
    TestContext ref({Tensor{DType::kFloat32, xs, x.data()}, Tensor{DType::kFloat32, ws, w.data()},
                     Tensor{DType::kFloat32, per_channel, bias.data()}},
                    ref_attrs.Finish(), nullptr);
    ASSERT_TRUE(nn::ConvReference(ref).ok());
    std::vector<float> want = ref.values();
    const std::vector<float> size = SumOfMagnitudes(c, xs, ws, x, w);  // F(4x4)'s bound
    Attrs none;
    TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), nullptr);
    ASSERT_TRUE(nn::ToBlocked(to).ok());
    std::vector<float> xb = to.values(), wb(w.size());
    nn::BlockConvWeight(w.data(), 32, 32, 9, false, wb.data());
    // The blocked conv with the attribute `tile` (0: none), the test hook at `forced` (0: off).
    auto run = [&](int64_t tile, int forced, Status* status = nullptr) {
      Attrs attrs;
      ConvAttrs(c, attrs).Ints("weight_shape", ws).Int("weight_group_blocks", 4);
      attrs.Str("activation", "relu");
      if (tile != 0) attrs.Int("winograd_tile", tile);
      TestContext got({Tensor{DType::kFloat32, to.out().shape, xb.data()},
                       Tensor{DType::kFloat32, {static_cast<int64_t>(wb.size())}, wb.data()},
                       Tensor{DType::kFloat32, per_channel, bias.data()}},
                      attrs.Finish(), nullptr);
      nn::SetBlockedWinogradTileForTesting(forced);
      Status st = nn::ConvBlocked(got);
      nn::SetBlockedWinogradTileForTesting(0);
      if (status) *status = st;
      EXPECT_TRUE(st.ok() || status) << st.message();
      return st.ok() ? Unblocked(got) : std::vector<float>{};
    };
    auto bits = [](const std::vector<float>& v) {
      std::vector<uint32_t> b(v.size());
      for (size_t i = 0; i < v.size(); ++i) b[i] = std::bit_cast<uint32_t>(v[i]);
      return b;
    };
    const std::vector<float> asked4 = run(4, 0), f2 = run(0, 2), f4 = run(0, 4);
    ASSERT_EQ(asked4.size(), want.size());
    EXPECT_EQ(bits(run(0, 0)), bits(f2));
    EXPECT_EQ(bits(run(2, 0)), bits(f2));
    if (side >= 16) {
      EXPECT_EQ(bits(asked4), bits(f4));
      EXPECT_NE(bits(asked4), bits(f2));
    } else {
      EXPECT_EQ(bits(asked4), bits(f2));
    }
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_LE(std::abs(asked4[i] - want[i]),
                kAtol + kRtol * std::abs(want[i]) + kWinograd4Rtol * (size[i] + 2))
          << "element " << i << ": " << asked4[i] << " vs " << want[i];
    }
    Status refused;
    run(3, 0, &refused);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("winograd_tile is 3"), std::string::npos) << refused.message();
  }
}

// What does not fit the blocked layout is refused with what it is: data of channels not a multiple
// of 16, a weight whose laid-out size or shape does not fit the data, a grouped convolution that is
// not depthwise, a dense weight laid out for another group of blocks.
// nn.max_pool2d_nchw16c against the reference max pool of the same NCHW data, bit for bit: 3x3
// of stride 2 with a pad of 1 (a ResNet's stem), 5x5 of stride 1 with a pad of 2 (a detector's
// spatial pyramid), 2x2 of stride 2 on odd sizes with ceil_mode (windows reaching past the
// input), dilated 3x3 with uneven pads, and 1x1 of stride 2 with a pad of 1 (windows of padding
// only: -inf, as the reference's); data with NaN (first in a window or later) and signed zeros; on
// one thread and three. A block's planes: 32 channels in two blocks, 2 images.
TEST(FastKernels, ChannelBlockedMaxPoolMatchesTheReference) {
  std::mt19937 rng(67);
  struct Case {
    std::vector<int64_t> kernel, stride, dilation, pads;
    bool ceil;
  };
  const Case cases[] = {{{3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false},
                        {{5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, false},
                        {{2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},
                        {{3, 3}, {1, 2}, {2, 1}, {2, 0, 1, 2}, false},
                        {{1, 1}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false}};
  rt::ThreadPool three(3);
  for (const Case& c : cases) {
    const Shape xs = {2, 32, 9, 13};
    std::vector<float> x = Random(rng, Count(xs));
    for (size_t i = 0; i < x.size(); ++i) {
      if (i % 13 == 4) x[i] = std::nanf("");
      if (i % 17 == 6) x[i] = i % 2 ? -0.0f : 0.0f;
    }
    Attrs attrs;
    attrs.Ints("pool_size", c.kernel)
        .Ints("strides", c.stride)
        .Ints("dilation", c.dilation)
        .Ints("padding", c.pads)
        .Bool("ceil_mode", c.ceil);
    const rt::AttrView::List* list = attrs.Finish();
    TestContext ref({Tensor{DType::kFloat32, xs, x.data()}}, list, nullptr);
    ASSERT_TRUE(nn::MaxPool(ref).ok());
    const Shape ys = ref.out().shape;
    std::vector<float> want = ref.values();
    Attrs none;
    TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), nullptr);
    ASSERT_TRUE(nn::ToBlocked(to).ok());
    std::vector<float> xb = to.values();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got({Tensor{DType::kFloat32, to.out().shape, xb.data()}}, list, pool);
      ASSERT_TRUE(nn::MaxPoolBlocked(got).ok());
      ASSERT_EQ(got.out().shape, (Shape{ys[0], ys[1] / 16, ys[2], ys[3], 16}));
      std::vector<float> v = Unblocked(got);
      ASSERT_EQ(v.size(), want.size());
      bool padding_only = false;
      for (size_t i = 0; i < v.size(); ++i) {
        padding_only |= std::isinf(want[i]);
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(v[i])) << "kernel " << Join(c.kernel) << ", element " << i;
        } else {
          ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
              << "kernel " << Join(c.kernel) << " strides " << Join(c.stride) << ", element " << i
              << ": " << v[i] << " vs " << want[i] << (pool ? ", 3 threads" : "");
        }
      }
      if (c.kernel[0] == 1) {
        EXPECT_TRUE(padding_only) << "a window of padding only";
      }
    }
  }
}

// A squeeze-and-excite block on blocked data: nn.global_avg_pool2d_nchw16c against the
// reference's nn.adaptive_avg_pool2d to 1 x 1 of the NCHW data (bit for bit: both sum each
// channel in double in the pixels' order), its result read as NCHW; multiply_channels_nchw16c
// by gates of shapes (C, 1, 1), (1, C, 1, 1) and (N, C, 1, 1) against the reference multiply's
// broadcast, back through layout_from_nchw16c (bit for bit), at 1 and 3 threads; gates that do
// not fit are refused.
// layout_to_nchw16c and layout_from_nchw16c of channels not a multiple of 16: the last block's
// lanes past them zeros (a blocked conv's padded input channels), and back the same floats; the
// channels from the attribute, refused where they do not fit the blocks.
TEST(FastKernels, ChannelBlockedLayoutPadsTheLastBlock) {
  std::mt19937 rng(5);
  rt::ThreadPool three(3);
  for (int64_t channels : {40, 12, 32}) {
    const Shape xs = {2, channels, 5, 19};
    std::vector<float> x = Random(rng, Count(xs));
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      Attrs none;
      TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), pool);
      ASSERT_TRUE(nn::ToBlocked(to).ok());
      const int64_t blocks = (channels + 15) / 16;
      ASSERT_EQ(to.out().shape, (Shape{2, blocks, 5, 19, 16}));
      std::vector<float> xb = to.values();
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0; c < blocks * 16; ++c)
          for (int64_t p = 0; p < 5 * 19; ++p) {
            const float want =
                c < channels ? x[static_cast<size_t>((n * channels + c) * 95 + p)] : 0.0f;
            ASSERT_EQ(xb[static_cast<size_t>(((n * blocks + c / 16) * 95 + p) * 16 + c % 16)], want)
                << channels << " channels, image " << n << ", channel " << c << ", pixel " << p;
          }
      EXPECT_EQ(Unblocked(to, channels), x);
    }
  }
  std::vector<float> x(1 * 2 * 4 * 4 * 16, 1.0f);
  auto from = [&](int64_t channels) {
    Attrs attrs;
    attrs.Int("channels", channels);
    TestContext ctx({Tensor{DType::kFloat32, {1, 2, 4, 4, 16}, x.data()}}, attrs.Finish(), nullptr);
    return nn::FromBlocked(ctx).message();
  };
  EXPECT_EQ(from(17), "");
  EXPECT_EQ(from(40),
            "attribute channels 40 does not fit 2 block(s) of 16 channels of data (1, 2, 4, 4, "
            "16)");
  EXPECT_NE(from(16), "");
  Attrs none;
  TestContext rank3({Tensor{DType::kFloat32, {2, 4, 16}, x.data()}}, none.Finish(), nullptr);
  EXPECT_EQ(nn::ToBlocked(rank3).message(), "data (2, 4, 16) is not a float32 (N, C, H, W) tensor");
}

TEST(FastKernels, ChannelBlockedMeanAndGateMatchTheReference) {
  std::mt19937 rng(71);
  rt::ThreadPool three(3);
  // 48 channels, and 40 (the last block padded: the attribute channels, the gate of 40).
  for (int64_t channels : {48, 40}) {
    SCOPED_TRACE(std::to_string(channels) + " channels");
    const Shape xs = {2, channels, 7, 9};
    std::vector<float> x = Random(rng, Count(xs));
    for (float& v : x) v = v * 100.0f + 3.0f;  // means whose float sums would round differently
    Attrs none;
    TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), nullptr);
    ASSERT_TRUE(nn::ToBlocked(to).ok());
    const Shape bs = to.out().shape;
    std::vector<float> xb = to.values();
    Attrs global;
    global.Ints("output_size", {1, 1}).Int("channels", channels);
    TestContext ref({Tensor{DType::kFloat32, xs, x.data()}}, global.Finish(), nullptr);
    ASSERT_TRUE(nn::AdaptiveAvgPool(ref).ok());
    const std::vector<float> mean = ref.values();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got({Tensor{DType::kFloat32, bs, xb.data()}}, global.Finish(), pool);
      ASSERT_TRUE(nn::GlobalAvgPoolBlocked(got).ok());
      ASSERT_EQ(got.out().shape, (Shape{2, channels, 1, 1}));
      std::vector<float> v = got.values();
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(mean[i]))
            << "channel " << i << ": " << v[i] << " vs " << mean[i];
      }
    }
    const Shape gate_shapes[] = {{channels, 1, 1}, {1, channels, 1, 1}, {2, channels, 1, 1}};
    for (const Shape& gs : gate_shapes) {
      std::vector<float> gate = Random(rng, Count(gs));
      TestContext want(
          {Tensor{DType::kFloat32, xs, x.data()}, Tensor{DType::kFloat32, gs, gate.data()}},
          none.Finish(), nullptr);
      ASSERT_TRUE(MultiplyReference(want).ok());
      for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
        TestContext got(
            {Tensor{DType::kFloat32, bs, xb.data()}, Tensor{DType::kFloat32, gs, gate.data()}},
            none.Finish(), pool);
        ASSERT_TRUE(nn::GateBlocked(got).ok());
        ASSERT_EQ(got.out().shape, bs);
        std::vector<float> v = Unblocked(got, channels);
        ASSERT_EQ(v.size(), want.values().size());
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want.values()[i]))
              << "gate " << rt::ShapeString(gs) << ", element " << i;
        }
      }
    }
    std::vector<float> gate(2 * 48 * 2, 0.5f);
    auto refused = [&](const Shape& gs) {
      TestContext ctx(
          {Tensor{DType::kFloat32, bs, xb.data()}, Tensor{DType::kFloat32, gs, gate.data()}},
          none.Finish(), nullptr);
      return nn::GateBlocked(ctx).message();
    };
    EXPECT_EQ(
        refused({2, 24, 1, 1}),
        "gate (2, 24, 1, 1) is not float32 (C, 1, 1) or (N, C, 1, 1) for data (2, 3, 7, 9, 16)");
    EXPECT_NE(refused({48}), "");
    EXPECT_NE(refused({3, 48, 1, 1}), "");
    EXPECT_NE(refused({1, 48, 2, 1}), "");
    EXPECT_NE(refused({48, 2, 1}), "");
  }
}

// image.resize2d_nchw16c against the reference resize of the NCHW data, bit for bit (each lane
// summed as the reference sums an element): nearest upsampling by 2 (rows and columns repeated),
// by 2 with half-pixel centres, linear and cubic to odd sizes, tf_crop_and_resize reading outside
// the image (the extrapolation value), sizes in place of scales, and scales of the two axes
// given by `axes`; 1 and 3 threads. A resize of the channels is refused.
TEST(FastKernels, ChannelBlockedResizeMatchesTheReference) {
  std::mt19937 rng(76);
  struct Case {
    std::vector<float> scales;
    std::vector<int64_t> sizes, axes;
    std::string mode, ctm, nearest_mode;
  };
  const Case cases[] = {
      {{1, 1, 2, 2}, {}, {}, "nearest", "asymmetric", "floor"},
      {{1, 1, 2, 2}, {}, {}, "nearest", "half_pixel", "round_prefer_floor"},
      {{1, 1, 1.7f, 0.6f}, {}, {}, "linear", "half_pixel", ""},
      {{1, 1, 1.5f, 1.3f}, {}, {}, "cubic", "align_corners", ""},
      {{1, 1, 2, 2}, {}, {}, "linear", "tf_crop_and_resize", ""},
      {{}, {2, 32, 13, 4}, {}, "linear", "pytorch_half_pixel", ""},
      {{2.5f, 2}, {}, {2, 3}, "nearest", "asymmetric", "ceil"},
  };
  const Shape xs = {2, 32, 6, 7};
  std::vector<float> x = Random(rng, Count(xs));
  Attrs none;
  TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), nullptr);
  ASSERT_TRUE(nn::ToBlocked(to).ok());
  std::vector<float> xb = to.values();
  std::vector<float> roi = {0, 0, -0.25f, 0.1f, 1, 1, 0.8f, 1.3f};  // outside: extrapolated
  rt::ThreadPool three(3);
  for (const Case& c : cases) {
    Attrs attrs;
    attrs.Str("mode", c.mode).Str("coordinate_transformation_mode", c.ctm);
    if (!c.nearest_mode.empty()) attrs.Str("nearest_mode", c.nearest_mode);
    if (!c.axes.empty()) attrs.Ints("axes", c.axes);
    attrs.Float("extrapolation_value", 0.75);
    const rt::AttrView::List* list = attrs.Finish();
    const Shape roi_shape = {c.ctm == "tf_crop_and_resize" ? 8 : 0};
    std::vector<float> scales = c.scales;
    std::vector<int64_t> sizes = c.sizes;
    auto inputs = [&](const Shape& shape, float* data) {
      return std::vector<Tensor>{
          Tensor{DType::kFloat32, shape, data}, Tensor{DType::kFloat32, roi_shape, roi.data()},
          Tensor{DType::kFloat32, {static_cast<int64_t>(scales.size())}, scales.data()},
          Tensor{DType::kInt64, {static_cast<int64_t>(sizes.size())}, sizes.data()}};
    };
    const std::string what = c.mode + " " + c.ctm;
    TestContext ref(inputs(xs, x.data()), list, nullptr);
    Status st = ResizeReference(ref);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    const Shape ys = ref.out().shape;
    std::vector<float> want = ref.values();
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got(inputs(to.out().shape, xb.data()), list, pool);
      st = ResizeBlocked(got);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      ASSERT_EQ(got.out().shape, (Shape{ys[0], ys[1] / 16, ys[2], ys[3], 16})) << what;
      std::vector<float> v = Unblocked(got);
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
            << what << ", element " << i << ": " << v[i] << " vs " << want[i];
      }
    }
  }
  std::vector<float> scales = {1, 2, 1, 1};
  std::vector<int64_t> sizes;
  Attrs attrs;
  TestContext ctx(
      {Tensor{DType::kFloat32, to.out().shape, xb.data()}, Tensor{DType::kFloat32, {0}, roi.data()},
       Tensor{DType::kFloat32, {4}, scales.data()}, Tensor{DType::kInt64, {0}, sizes.data()}},
      attrs.Finish(), nullptr);
  EXPECT_EQ(ResizeBlocked(ctx).message(),
            "a resize of blocked data (2, 2, 6, 7, 16) keeps its batch and channels; this one "
            "makes (2, 64, 6, 7)");
}

// The same on an image large enough that the rows are split between 3 threads: each worker reads
// the taps the calling thread planned (they are planned in memory that thread keeps between
// runs), in every run.
TEST(FastKernels, ChannelBlockedResizeSplitBetweenThreadsMatchesTheReference) {
  std::mt19937 rng(77);
  const Shape xs = {1, 32, 40, 48};
  std::vector<float> x = Random(rng, Count(xs));
  Attrs none;
  TestContext to({Tensor{DType::kFloat32, xs, x.data()}}, none.Finish(), nullptr);
  ASSERT_TRUE(nn::ToBlocked(to).ok());
  std::vector<float> xb = to.values();
  rt::ThreadPool three(3);
  for (const char* mode : {"nearest", "linear"}) {
    Attrs attrs;
    attrs.Str("mode", mode).Str("coordinate_transformation_mode", "half_pixel");
    const rt::AttrView::List* list = attrs.Finish();
    std::vector<float> roi, scales = {1, 1, 2, 2};
    std::vector<int64_t> sizes;
    auto inputs = [&](const Shape& shape, float* data) {
      return std::vector<Tensor>{
          Tensor{DType::kFloat32, shape, data}, Tensor{DType::kFloat32, {0}, roi.data()},
          Tensor{DType::kFloat32, {4}, scales.data()}, Tensor{DType::kInt64, {0}, sizes.data()}};
    };
    TestContext ref(inputs(xs, x.data()), list, nullptr);
    ASSERT_TRUE(ResizeReference(ref).ok()) << mode;
    std::vector<float> want = ref.values();
    for (int run = 0; run < 2; ++run) {
      TestContext got(inputs(to.out().shape, xb.data()), list, &three);
      Status st = ResizeBlocked(got);
      ASSERT_TRUE(st.ok()) << mode << ": " << st.message();
      std::vector<float> v = Unblocked(got);
      ASSERT_EQ(v.size(), want.size()) << mode;
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
            << mode << ", run " << run << ", element " << i;
      }
    }
  }
}

TEST(FastKernels, ChannelBlockedConvRefusesWhatDoesNotFit) {
  std::vector<float> x(1 * 24 * 4 * 4, 1.0f), xb(1 * 2 * 4 * 4 * 16, 1.0f), w(32 * 32 * 9, 0.5f);
  Attrs none;
  TestContext to({Tensor{DType::kInt32, {1, 24, 4, 4}, x.data()}}, none.Finish(), nullptr);
  EXPECT_EQ(nn::ToBlocked(to).message(), "data (1, 24, 4, 4) is not a float32 (N, C, H, W) tensor");
  auto conv = [&](std::vector<int64_t> ws, int64_t groups, int64_t w_size,
                  int64_t group_blocks = 4) {
    Attrs attrs;
    attrs.Ints("weight_shape", ws).Int("groups", groups).Int("weight_group_blocks", group_blocks);
    TestContext ctx({Tensor{DType::kFloat32, {1, 2, 4, 4, 16}, xb.data()},
                     Tensor{DType::kFloat32, {w_size}, w.data()}},
                    attrs.Finish(), nullptr);
    return nn::ConvBlocked(ctx).message();
  };
  EXPECT_EQ(conv({32, 32, 3, 3}, 1, 32 * 32 * 9), "");
  EXPECT_EQ(conv({32, 32, 3, 3}, 1, 32 * 32 * 8),
            "the laid-out weight of 8192 float32 values, weight_shape (32, 32, 3, 3) and 1 "
            "group(s) do not fit data (1, 2, 4, 4, 16) (groups 1, or a depthwise convolution of "
            "as many channels)");
  EXPECT_NE(conv({32, 16, 3, 3}, 1, 32 * 16 * 9), "");
  EXPECT_NE(conv({32, 16, 3, 3}, 2, 32 * 16 * 9), "");
  EXPECT_NE(conv({24, 32, 1, 1}, 1, 24 * 32), "");
  EXPECT_EQ(conv({32, 1, 3, 3}, 32, 32 * 9), "");
  // A dense weight laid out in pairs of blocks (a package of an older compiler).
  EXPECT_EQ(conv({32, 32, 3, 3}, 1, 32 * 32 * 9, 0),
            "the laid-out weight is for groups of 0 output blocks (0: of pairs, a package of an "
            "older quiltc); this runtime reads groups of 4: compile the model again");
}

}  // namespace
}  // namespace quilt::cpu
