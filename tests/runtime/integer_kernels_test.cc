// The integer and quantized kernels' fast paths (conv_integer, matmul_integer, int32 matmul,
// dynamic quantization, the dynamically quantized LSTM) against their reference kernels, bit for
// bit where the arithmetic is exact: 8-bit data on the 8-bit GEMM (Int8Gemm) and as float GEMMs in
// exact slabs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/src/kernel.h"
#include "runtime/src/thread_pool.h"
#include "targets/cpu/kernels/int8_gemm.h"
#include "targets/cpu/kernels/linalg.h"
#include "targets/cpu/kernels/nn_internal.h"
#include "targets/cpu/kernels/recurrent.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/cpu/kernels/util.h"
#include "tests/runtime/kernel_test_util.h"

namespace quilt::cpu {
namespace {

using namespace kernel_test;  // NOLINT(build/namespaces): the kernels' test helpers

// Int8Gemm allowed or not while it lives (the int8 paths' tests run both).
class Int8DotAllowed {
 public:
  explicit Int8DotAllowed(bool allowed) { SetInt8DotAllowedForTesting(allowed); }
  ~Int8DotAllowed() { SetInt8DotAllowedForTesting(true); }
  Int8DotAllowed(const Int8DotAllowed&) = delete;
  Int8DotAllowed& operator=(const Int8DotAllowed&) = delete;
};

// conv_integer on 8-bit data on the 8-bit GEMM and as float GEMMs in exact slabs, against the
// reference's integer sums, bit for bit: uint8 and int8 on either side, scalar and per-channel
// weight zero points, reductions longer than one slab (64 channels x 3 x 3), groups, strides,
// pads, 1-d and 2-d, 1x1 windows.
TEST(FastKernels, ConvIntegerMatchesTheReferenceExactly) {
  std::mt19937 rng(41);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 60; ++iter) {
    bool x_signed = pick(0, 1), w_signed = pick(0, 1);
    int rank = iter % 5 == 0 ? 1 : iter % 7 == 3 ? 3 : 2;
    int64_t groups = pick(0, 3) == 0 ? 2 : 1, cg = iter % 4 == 0 ? 64 : pick(1, 9);
    int64_t og = pick(1, 8), n = pick(1, 2);
    Shape xs = {n, groups * cg}, ws = {groups * og, cg};
    std::vector<int64_t> strides, dilation, pads(2 * rank);
    for (int d = 0; d < rank; ++d) {
      xs.push_back(pick(5, rank == 3 ? 7 : 12));  // at least the dilated 3-tap span
      ws.push_back(pick(1, 3));
      strides.push_back(pick(1, 2));
      dilation.push_back(pick(1, 2));
    }
    for (int d = 0; d < 2 * rank; ++d) pads[d] = pick(0, 1);
    if (iter % 6 == 1) {  // a 1x1 window read in place
      for (int d = 0; d < rank; ++d) ws[2 + d] = strides[d] = 1;
      std::fill(pads.begin(), pads.end(), 0);
    }
    auto bytes = [&](const Shape& s, bool sign) {
      std::vector<uint8_t> v(static_cast<size_t>(Count(s)));
      for (uint8_t& b : v) b = static_cast<uint8_t>(pick(0, 255));
      (void)sign;
      return v;
    };
    std::vector<uint8_t> x = bytes(xs, x_signed), w = bytes(ws, w_signed);
    bool per_channel = pick(0, 1);
    Shape wzs = per_channel ? Shape{groups * og} : Shape{};
    std::vector<uint8_t> xz = bytes({}, x_signed), wz = bytes(wzs, w_signed);
    DType xt = x_signed ? DType::kInt8 : DType::kUInt8,
          wt = w_signed ? DType::kInt8 : DType::kUInt8;
    std::vector<Tensor> inputs = {Tensor{xt, xs, x.data()}, Tensor{wt, ws, w.data()},
                                  Tensor{xt, {}, xz.data()}, Tensor{wt, wzs, wz.data()}};
    Attrs attrs;
    attrs.Int("groups", groups)
        .Ints("strides", strides)
        .Ints("dilation", dilation)
        .Ints("padding", pads);
    const rt::AttrView::List* list = attrs.Finish();
    std::string what = "conv_integer x (" + Join(xs) + ") w (" + Join(ws) + ")";
    TestContext ref(inputs, list, nullptr);
    Status st = nn::ConvIntegerReference(ref);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    rt::ThreadPool three(3);
    // On the 8-bit dot products where the CPU has them, and on the float GEMMs.
    for (int path = 0; path < 4; ++path) {
      rt::ThreadPool* pool = path % 2 ? &three : nullptr;
      Int8DotAllowed allowed(path < 2);
      TestContext got(inputs, list, pool);
      st = nn::ConvIntegerFast(got);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      ASSERT_EQ(got.out().shape, ref.out().shape) << what;
      ASSERT_EQ(got.out().dtype, DType::kInt32);
      const int32_t* a = static_cast<const int32_t*>(got.out().data);
      const int32_t* b = static_cast<const int32_t*>(ref.out().data);
      for (int64_t i = 0; i < got.out().NumElements(); ++i) {
        ASSERT_EQ(a[i], b[i]) << what << " element " << i;
      }
    }
  }
}

// conv_integer over images of several chunks of output positions (each chunk's window matrix
// near 96 KiB, a chunk starting inside an output row): 3x3 over 64 channels, a strided 5x5 over
// 3, and a 1x1 over 2,048 channels read in place; int8 weights with a per-channel zero point,
// and uint8 data of zero point 3.
TEST(FastKernels, ConvIntegerAcrossChunksMatchesTheReference) {
  std::mt19937 rng(45);
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, pads;
  };
  const Case cases[] = {{{1, 64, 20, 23}, {8, 64, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                        {{2, 3, 150, 141}, {5, 3, 5, 5}, {2, 2}, {2, 1, 0, 2}},
                        {{1, 2048, 7, 9}, {4, 2048, 1, 1}, {1, 1}, {0, 0, 0, 0}}};
  for (const Case& c : cases) {
    std::vector<uint8_t> x(static_cast<size_t>(Count(c.x))), w(static_cast<size_t>(Count(c.w)));
    for (uint8_t& v : x) v = static_cast<uint8_t>(rng());
    for (uint8_t& v : w) v = static_cast<uint8_t>(rng());
    uint8_t xz = 3;
    std::vector<uint8_t> wz(static_cast<size_t>(c.w[0]));
    for (uint8_t& v : wz) v = static_cast<uint8_t>(rng() % 7);
    std::vector<Tensor> inputs = {
        Tensor{DType::kUInt8, c.x, x.data()}, Tensor{DType::kInt8, c.w, w.data()},
        Tensor{DType::kUInt8, {}, &xz}, Tensor{DType::kInt8, {c.w[0]}, wz.data()}};
    Attrs attrs;
    attrs.Int("groups", 1)
        .Ints("strides", c.strides)
        .Ints("dilation", {1, 1})
        .Ints("padding", c.pads);
    const rt::AttrView::List* list = attrs.Finish();
    std::string what = "conv_integer x (" + Join(c.x) + ") w (" + Join(c.w) + ")";
    TestContext ref(inputs, list, nullptr);
    ASSERT_TRUE(nn::ConvIntegerReference(ref).ok()) << what;
    rt::ThreadPool three(3);
    for (int path = 0; path < 4; ++path) {
      Int8DotAllowed allowed(path < 2);
      TestContext got(inputs, list, path % 2 ? &three : nullptr);
      Status st = nn::ConvIntegerFast(got);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      ASSERT_EQ(got.out().shape, ref.out().shape) << what;
      const int32_t* a = static_cast<const int32_t*>(got.out().data);
      const int32_t* b = static_cast<const int32_t*>(ref.out().data);
      for (int64_t i = 0; i < got.out().NumElements(); ++i) {
        ASSERT_EQ(a[i], b[i]) << what << " path " << path << " element " << i;
      }
    }
  }
}

// matmul_integer on the 8-bit GEMM and as float GEMMs in exact slabs, against the reference's
// integer sums bit for bit: uint8 and int8 on either side, scalar and per-row / per-column zero
// points, 1-D operands, batches broadcast (one B for every matrix of A, and B batched too), long
// reductions; B constant on a cache, used twice.
TEST(FastKernels, MatmulIntegerMatchesTheReferenceExactly) {
  std::mt19937 rng(43);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{3, 5}, {5, 7}},
                        {{28, 1024}, {1024, 70}},
                        {{2, 3, 9}, {9, 33}},
                        {{2, 3, 4}, {2, 4, 17}},
                        {{6}, {6, 5}},
                        {{4, 6}, {6}},
                        {{1, 2, 700}, {3, 700, 2}},
                        {{9, 1}, {1, 40}}};
  for (int iter = 0; iter < 16; ++iter) {
    const Case& c = cases[iter % 8];
    bool a_signed = pick(0, 1), b_signed = pick(0, 1);
    int64_t m = c.a.size() == 1 ? 1 : c.a[c.a.size() - 2], n = c.b.size() == 1 ? 1 : c.b.back();
    bool per_row = iter % 3 == 1, per_col = iter % 4 == 2;
    Shape azs = per_row ? Shape{m} : Shape{}, bzs = per_col ? Shape{n} : Shape{};
    auto bytes = [&](const Shape& s) {
      std::vector<uint8_t> v(static_cast<size_t>(Count(s)));
      for (uint8_t& e : v) e = static_cast<uint8_t>(pick(0, 255));
      return v;
    };
    std::vector<uint8_t> a = bytes(c.a), b = bytes(c.b), az = bytes(azs), bz = bytes(bzs);
    if (iter >= 8) {  // extreme values: uint8 255 against int8 -128, zero points at the far end
      for (uint8_t& e : a) e = a_signed ? 0x80 : 255;
      for (uint8_t& e : b) e = b_signed ? 0x80 : 255;
      for (uint8_t& e : az) e = a_signed ? 0x7f : 0;
      for (uint8_t& e : bz) e = b_signed ? 0x7f : 0;
    }
    DType at = a_signed ? DType::kInt8 : DType::kUInt8,
          bt = b_signed ? DType::kInt8 : DType::kUInt8;
    std::vector<Tensor> inputs = {Tensor{at, c.a, a.data()}, Tensor{bt, c.b, b.data()},
                                  Tensor{at, azs, az.data()}, Tensor{bt, bzs, bz.data()}};
    Attrs attrs;
    const rt::AttrView::List* list = attrs.Finish();
    std::string what = "matmul_integer a (" + Join(c.a) + ") b (" + Join(c.b) + ")" +
                       (a_signed ? " int8" : " uint8") + (b_signed ? " x int8" : " x uint8");
    TestContext ref(inputs, list, nullptr);
    Status st = MatmulIntegerReference(ref);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    rt::ThreadPool three(3);
    rt::StepCache cache, float_cache;
    for (int pass = 0; pass < 6; ++pass) {
      Int8DotAllowed allowed(pass < 3);
      TestContext got(inputs, list, pass % 3 == 1 ? &three : nullptr);
      if (pass % 3 > 0) got.SetCache(pass < 3 ? &cache : &float_cache, 0b1010);  // b, its zp
      st = MatmulIntegerFast(got);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      ASSERT_EQ(got.out().shape, ref.out().shape) << what;
      ASSERT_EQ(got.out().dtype, DType::kInt32);
      const int32_t* x = static_cast<const int32_t*>(got.out().data);
      const int32_t* y = static_cast<const int32_t*>(ref.out().data);
      for (int64_t i = 0; i < got.out().NumElements(); ++i) {
        ASSERT_EQ(x[i], y[i]) << what << " pass " << pass << " element " << i;
      }
    }
  }
}

// The reference against hand-worked sums: [[1, 2], [3, 4]] less per-row zero points [1, 2] by
// [[5], [6]] less 3: rows (0, 1) and (1, 2) times (2, 3): 3 and 8.
TEST(FastKernels, MatmulIntegerReferenceByHand) {
  uint8_t a[] = {1, 2, 3, 4}, az[] = {1, 2};
  int8_t b[] = {5, 6}, bz = 3;
  std::vector<Tensor> inputs = {Tensor{DType::kUInt8, {2, 2}, a}, Tensor{DType::kInt8, {2, 1}, b},
                                Tensor{DType::kUInt8, {2}, az}, Tensor{DType::kInt8, {}, &bz}};
  Attrs attrs;
  const rt::AttrView::List* list = attrs.Finish();
  for (auto* kernel : {MatmulIntegerReference, MatmulIntegerFast}) {
    TestContext got(inputs, list, nullptr);
    ASSERT_TRUE(kernel(got).ok());
    const int32_t* y = static_cast<const int32_t*>(got.out().data);
    EXPECT_EQ(y[0], 3);
    EXPECT_EQ(y[1], 8);
  }
}

// A zero point of the other signedness than its data (uint8 data, int8 zero point: differences
// up to 383) is outside what the exact float slabs assume; the result is still the exact sum.
TEST(FastKernels, ConvIntegerWithZeroPointsOfAnotherTypeIsExact) {
  std::mt19937 rng(47);
  Shape xs = {1, 64, 6, 6}, ws = {4, 64, 3, 3};
  std::vector<uint8_t> x(static_cast<size_t>(Count(xs))), w(static_cast<size_t>(Count(ws)));
  for (uint8_t& v : x) v = static_cast<uint8_t>(200 + rng() % 56);
  for (uint8_t& v : w) v = static_cast<uint8_t>(200 + rng() % 56);
  int8_t xz = -128, wz = -127;
  std::vector<Tensor> inputs = {Tensor{DType::kUInt8, xs, x.data()},
                                Tensor{DType::kUInt8, ws, w.data()}, Tensor{DType::kInt8, {}, &xz},
                                Tensor{DType::kInt8, {}, &wz}};
  Attrs attrs;
  attrs.Int("groups", 1)
      .Ints("strides", {1, 1})
      .Ints("dilation", {1, 1})
      .Ints("padding", {0, 0, 0, 0});
  const rt::AttrView::List* list = attrs.Finish();
  TestContext ref(inputs, list, nullptr), got(inputs, list, nullptr);
  ASSERT_TRUE(nn::ConvIntegerReference(ref).ok());
  ASSERT_TRUE(nn::ConvIntegerFast(got).ok());
  const int32_t* a = static_cast<const int32_t*>(got.out().data);
  const int32_t* b = static_cast<const int32_t*>(ref.out().data);
  for (int64_t i = 0; i < got.out().NumElements(); ++i) ASSERT_EQ(a[i], b[i]) << "element " << i;
}

// DynamicQuantizeLinear's uint8 form against the ONNX formulas evaluated element by element in
// float32: inputs long enough to be split across threads, with NaNs, -0 and a range that does
// not include 0 (all positive), bit for bit, on one thread and three.
TEST(FastKernels, DynamicQuantizeMatchesTheFormulas) {
  std::mt19937 rng(61);
  rt::ThreadPool three(3);
  for (int iter = 0; iter < 4; ++iter) {
    int64_t n = iter < 2 ? (int64_t{1} << 17) + 5 : 13 + iter;
    std::vector<float> x = Random(rng, n);
    if (iter % 2 == 1) {
      for (float& v : x) v = std::abs(v) + 0.5f;
    }
    x[n / 3] = std::nanf("");
    x[n / 2] = -0.0f;
    float lo = 0, hi = 0;
    for (float v : x) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    float zp = std::nearbyint(std::min(255.0f, std::max(0.0f, -lo / scale)));
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      std::vector<uint8_t> q(static_cast<size_t>(n), 7);
      float got_scale = 0;
      uint8_t got_zp = 0;
      DynamicQuantizeU8(x.data(), n, q.data(), &got_scale, &got_zp, pool);
      ASSERT_EQ(got_scale, scale);
      ASSERT_EQ(got_zp, static_cast<uint8_t>(zp));
      for (int64_t i = 0; i < n; ++i) {
        float v = std::isnan(x[i]) ? 0.0f : std::nearbyint(x[i] / scale) + zp;
        ASSERT_EQ(q[i], static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f))) << "element " << i;
      }
    }
  }
}

// com.microsoft DynamicQuantizeLSTM: the integer products from the 8-bit GEMM or exact float
// GEMMs are the reference's integers. With ONNX's default activations the cell runs in float (as
// ONNX Runtime runs it), and every output is within 1e-5 (and 1e-5 of its size) of the double
// reference's; with others (HardSigmoid for f) the cell runs in double, and every output is the
// reference's bit for bit. Both directions, long inputs (several slabs of products), uneven
// sequence lengths, int8 and uint8 weights with per-row or per-direction scales and zero points;
// without a cache and, weights constant, twice on one cache.
TEST(FastKernels, DynamicQuantizeLstmMatchesTheReference) {
  std::mt19937 rng(53);
  struct Case {
    int64_t S, N, I, H;
    bool bidirectional, uint8_weights, per_row;
    // Input products of up to 255 * 128, the first thousand of each row positive and the rest
    // negative: sums run far past what a float holds exactly, and cancel to a small value.
    bool extreme = false;
  };
  const Case cases[] = {{5, 2, 300, 7, true, false, true},
                        {3, 1, 40, 600, false, true, false},
                        {4, 3, 9, 5, true, true, true},
                        {1, 1, 1, 1, false, false, false},
                        {4, 3, 2001, 3, false, true, false, true}};
  for (const Case& c : cases) {
    int64_t dirs = c.bidirectional ? 2 : 1, G = 4 * c.H;
    DType wt = c.uint8_weights ? DType::kUInt8 : DType::kInt8;
    std::vector<float> x = Random(rng, c.S * c.N * c.I), b = Random(rng, dirs * 2 * G),
                       h0 = Random(rng, dirs * c.N * c.H), c0 = Random(rng, dirs * c.N * c.H),
                       p = Random(rng, dirs * 3 * c.H);
    for (float& v : x) v *= 3;
    auto bytes = [&](int64_t n) {
      std::vector<uint8_t> v(static_cast<size_t>(n));
      for (uint8_t& e : v)
        e = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 255)(rng));
      return v;
    };
    std::vector<uint8_t> w = bytes(dirs * c.I * G), r = bytes(dirs * c.H * G);
    int64_t per = c.per_row ? dirs * G : dirs;
    std::vector<float> w_scale = Random(rng, per), r_scale = Random(rng, per);
    for (float& v : w_scale) v = std::abs(v) * 0.01f + 1e-3f;
    for (float& v : r_scale) v = std::abs(v) * 0.01f + 1e-3f;
    std::vector<uint8_t> w_zp = bytes(per), r_zp = bytes(per);
    if (c.extreme) {  // x quantizes to 255 (zero point 0)
      std::fill(x.begin(), x.end(), 2.0f);
      for (size_t i = 0; i < w.size(); ++i) {  // 200..255 then 0..55, less 128
        w[i] = static_cast<uint8_t>((i / static_cast<size_t>(G) < 1000 ? 200 : 0) + w[i] % 56);
      }
      std::fill(w_zp.begin(), w_zp.end(), uint8_t{128});
      std::fill(w_scale.begin(), w_scale.end(), 1e-3f);
    }
    std::vector<int32_t> lens(static_cast<size_t>(c.N));
    for (size_t i = 0; i < lens.size(); ++i) lens[i] = static_cast<int32_t>(c.S - i % 2);
    Shape state = {dirs, c.N, c.H}, scale_shape = c.per_row ? Shape{dirs, G} : Shape{dirs};
    std::vector<Tensor> inputs = {
        Tensor{DType::kFloat32, {c.S, c.N, c.I}, x.data()},
        Tensor{wt, {dirs, c.I, G}, w.data()},
        Tensor{wt, {dirs, c.H, G}, r.data()},
        Tensor{DType::kFloat32, {dirs, 2 * G}, b.data()},
        Tensor{DType::kInt32, {c.N}, lens.data()},
        Tensor{DType::kFloat32, state, h0.data()},
        Tensor{DType::kFloat32, state, c0.data()},
        Tensor{DType::kFloat32, {dirs, 3 * c.H}, p.data()},
        Tensor{DType::kFloat32, scale_shape, w_scale.data()},
        Tensor{wt, scale_shape, w_zp.data()},
        Tensor{DType::kFloat32, scale_shape, r_scale.data()},
        Tensor{wt, scale_shape, r_zp.data()},
    };
    for (bool standard : {true, false}) {
      Attrs attrs;
      attrs.Str("direction", c.bidirectional ? "bidirectional" : "forward").Int("hidden_size", c.H);
      std::vector<std::string> acts;
      std::vector<double> alphas, betas;
      for (int64_t d = 0; d < dirs; ++d) {
        acts.insert(acts.end(), {standard ? "Sigmoid" : "HardSigmoid", "Tanh", "Tanh"});
        alphas.insert(alphas.end(), {standard ? 0.0 : 0.2, 0.0, 0.0});
        betas.insert(betas.end(), {standard ? 0.0 : 0.5, 0.0, 0.0});
      }
      attrs.Strs("activations", acts)
          .Floats("activation_alpha", alphas)
          .Floats("activation_beta", betas);
      const rt::AttrView::List* list = attrs.Finish();
      std::string what = "dynamic_quantize_lstm S N I H " + std::to_string(c.S) + " " +
                         std::to_string(c.N) + " " + std::to_string(c.I) + " " +
                         std::to_string(c.H) + (c.bidirectional ? " bidirectional" : "") +
                         (standard ? ", default activations" : ", HardSigmoid");
      TestContext ref(inputs, list, nullptr, 3);
      Status st = rnn::DynamicQuantizeLstmReference(ref);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      rt::ThreadPool three(3);
      // On the 8-bit dot products where the CPU has them (passes 0 to 2), and on the float GEMMs.
      rt::StepCache cache, float_cache;
      for (int pass = 0; pass < 6; ++pass) {
        Int8DotAllowed allowed(pass < 3);
        TestContext got(inputs, list, pass % 3 == 1 ? &three : nullptr, 3);
        // W, R and their scales and zero points constant
        if (pass % 3 > 0) got.SetCache(pass < 3 ? &cache : &float_cache, 0b111100000110);
        st = rnn::DynamicQuantizeLstm(got);
        ASSERT_TRUE(st.ok()) << what << ": " << st.message();
        for (int o = 0; o < 3; ++o) {
          ASSERT_EQ(got.out(o).shape, ref.out(o).shape) << what;
          std::vector<float> v = got.values(o), want = ref.values(o);
          for (size_t i = 0; i < v.size(); ++i) {
            if (standard) {
              ASSERT_NEAR(v[i], want[i], 1e-5 * (1 + std::abs(want[i])))
                  << what << ", pass " << pass << ", output " << o << " element " << i;
              continue;
            }
            ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(want[i]))
                << what << ", pass " << pass << ", output " << o << " element " << i << ": " << v[i]
                << " vs " << want[i];
          }
        }
      }
    }
  }
}

// int32 matmul of small values (8-bit less zero points: float GEMMs in exact slabs) and of large
// ones (the reference), with batches and a broadcast batch, bit for bit.
TEST(FastKernels, IntegerMatmulMatchesTheReferenceExactly) {
  std::mt19937 rng(43);
  struct Case {
    Shape a, b;
    int32_t range;
  };
  const Case cases[] = {{{7, 1000}, {1000, 53}, 255}, {{3, 5, 300}, {3, 300, 9}, 255},
                        {{2, 4, 40}, {40, 30}, 127},  {{9, 700}, {700, 5}, 4000},
                        {{6, 8}, {8, 7}, 1 << 30},    {{0, 5}, {5, 3}, 255}};
  for (const Case& c : cases) {
    auto values = [&](const Shape& s) {
      std::vector<int32_t> v(static_cast<size_t>(Count(s)));
      for (int32_t& x : v) x = std::uniform_int_distribution<int32_t>(-c.range, c.range)(rng);
      return v;
    };
    std::vector<int32_t> a = values(c.a), b = values(c.b);
    std::vector<Tensor> inputs = {Tensor{DType::kInt32, c.a, a.data()},
                                  Tensor{DType::kInt32, c.b, b.data()}};
    Attrs attrs;
    const rt::AttrView::List* list = attrs.Finish();
    std::string what =
        "matmul (" + Join(c.a) + ") x (" + Join(c.b) + ") values within " + std::to_string(c.range);
    TestContext ref(inputs, list, nullptr);
    ASSERT_TRUE(MatmulReference(ref).ok()) << what;
    rt::ThreadPool three(3);
    for (rt::ThreadPool* pool : {static_cast<rt::ThreadPool*>(nullptr), &three}) {
      TestContext got(inputs, list, pool);
      ASSERT_TRUE(MatmulFast(got).ok()) << what;
      ASSERT_EQ(got.out().shape, ref.out().shape) << what;
      const int32_t* x = static_cast<const int32_t*>(got.out().data);
      const int32_t* y = static_cast<const int32_t*>(ref.out().data);
      for (int64_t i = 0; i < got.out().NumElements(); ++i)
        ASSERT_EQ(x[i], y[i]) << what << " " << i;
    }
  }
}

}  // namespace
}  // namespace quilt::cpu
