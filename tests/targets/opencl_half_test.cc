// float16 on OpenCL: tensors stored as float16 and computed in float32, every result rounded to
// float16 (to nearest even) as the CPU rounds it; each kernel family that takes float16
// (targets/opencl/ops.h, TakesFloat16) against the CPU's reference kernels, on PoCL, which has no
// cl_khr_fp16: the kernels read and write float16 through vload_half / vstore_half_rte alone.
// Skips, saying why, where no OpenCL device opens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/targets/opencl_emit_util.h"

namespace quilt {
namespace {

using opencl_test::ExpectOpenClMatchesCpu;
using opencl_test::Floats;
using opencl_test::Halves;
using opencl_test::Input;
using opencl_test::Int64s;

constexpr int kAnyCount = std::numeric_limits<int>::max();

// float16 tensors are stored as float16 and computed in float32, each op's result rounded to
// float16 (to nearest even) as the CPU rounds it, in a fused chain too: bit for bit the CPU's,
// with infinities, NaN, values past float16's range, subnormals and ties to even among the
// inputs; they move (transpose, concat, gather) as their bits. Activations whose float results
// may differ in the last bits between the devices round to the same float16 or the next.
TEST(OpenClEmit, Float16IsStoredAsSuchAndComputedAsTheCpuComputesIt) {
  OPENCL_OR_SKIP();
  constexpr const char* kExact = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 8), "float16"), b: R.Tensor((8,), "float16"), x: R.Tensor((2, 8), "float32")):
        s = R.add(a, b)
        p = R.multiply(a, b)
        d = R.divide(a, b)
        m = R.maximum(a, b)
        h = R.astype(x, "float16")
        f = R.astype(a, "float32")
        i = R.astype(a, "int32")
        c = R.less(a, b)
        w = R.where(c, a, h)
        aa = R.multiply(a, a)
        chain = R.add(aa, h)
        t = R.permute_dims(a, axes=[1, 0])
        cat = R.concat((a, h), axis=0)
        k = R.take(a, R.const([3, -1, 0], "int64"), axis=1)
        return (s, p, d, m, h, f, i, c, w, chain, t, cat, k)
)";
  const float inf = std::numeric_limits<float>::infinity();
  // a: NaN, infinities, 40000 (its square and double past float16's 65504), a subnormal
  // (2^-20), 0.1 (not a float16); x: ties between float16s (1 + 2^-11 and 1 + 3 * 2^-11 round
  // to even), a float16 subnormal's tie, 70000 (past float16's range), -0.
  Input a = Halves("a", {2, 8}, {std::nanf(""), inf, -inf, 40000.0f, std::ldexp(1.0f, -20), 0.1f});
  Input b = Halves("b", {8}, {0.5f, -3.0f, 2.0f, 1.75f, 0.0f, -0.0f, 3.0f, 1e-3f}, 0.41f, 2.0f);
  Input x = Floats("x", {2, 8}, 0.53f, 3.0f);
  float ties[6] = {1.0f + std::ldexp(1.0f, -11),
                   1.0f + 3 * std::ldexp(1.0f, -11),
                   3 * std::ldexp(1.0f, -25),
                   70000.0f,
                   -0.0f,
                   -2.0f - std::ldexp(1.0f, -10)};
  std::memcpy(x.bytes.data(), ties, sizeof(ties));
  ExpectOpenClMatchesCpu(kExact, {a, b, x}, 10);
  constexpr const char* kActivations = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((4, 8), "float16")):
        s = R.sigmoid(a)
        e = R.exp(a)
        t = R.tanh(a)
        g = R.multiply(a, s)
        return (s, e, t, g)
)";
  ExpectOpenClMatchesCpu(kActivations, {Halves("a", {4, 8}, {}, 0.9f, 9.0f)}, 3, kAnyCount, 1);
}

// A matmul of float16 operands gives a float16 result: its sums in float32, rounded once, within
// a unit in the last place of the CPU's (whose sums are wider); both paths of the kernel (runs of
// 16 columns and the last, shorter one), a batch, a broadcast batch and a vector operand.
TEST(OpenClEmit, MatmulOfFloat16) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 9, 20), "float16"), b: R.Tensor((20, 37), "float16"), v: R.Tensor((20,), "float16"), c: R.Tensor((2, 1, 9, 20), "float16"), d: R.Tensor((3, 20, 5), "float16")):
        ab = R.matmul(a, b)
        vb = R.matmul(v, b)
        cd = R.matmul(c, d)
        return (ab, vb, cd)
)";
  ExpectOpenClMatchesCpu(kModel,
                         {Halves("a", {2, 9, 20}), Halves("b", {20, 37}, {}, 0.21f, 2.0f),
                          Halves("v", {20}, {}, 0.5f, 5.0f), Halves("c", {2, 1, 9, 20}),
                          Halves("d", {3, 20, 5}, {}, 0.3f, 3.0f)},
                         3, kAnyCount, 1);
}

// Reductions and norms of float16 data give float16 results: their sums in float32, rounded
// once, within a unit in the last place of the CPU's.
TEST(OpenClEmit, ReductionsAndNormsOfFloat16) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 6, 5, 3), "float16"), gamma: R.Tensor((5, 3), "float16"), beta: R.Tensor((5, 3), "float16"), c: R.Tensor((6,), "float16")):
        a = R.sum(x, axis=[0, 2])
        b = R.max(x, axis=[1], keepdims=True)
        d = R.mean(x, axis=[2], keepdims=True)
        g = R.reduce_l2(x, axis=[1, 2])
        l = R.reduce_log_sum_exp(x, axis=[3, 0])
        n = R.nn.layer_norm(x, gamma, beta, [2, 3], epsilon=0.001)
        r = R.nn.rms_norm(x, gamma, [-2, -1], epsilon=0.01)
        i = R.nn.instance_norm(x, c, c, channel_axis=1, epsilon=0.001)
        e = R.nn.group_norm(x, c, c, num_groups=3, channel_axis=1, epsilon=0.001)
        return (a, b, d, g, l, n, r, i, e)
)";
  ExpectOpenClMatchesCpu(
      kModel,
      {Halves("x", {2, 6, 5, 3}, {std::nanf("")}), Halves("gamma", {5, 3}, {}, 0.1f, 0.2f),
       Halves("beta", {5, 3}, {}, 0.2f, 1.0f), Halves("c", {6})},
      9, kAnyCount, 1);
}

// Convolutions of float16 data, weights and biases: 2-D in register tiles (3 x 3 padded, strided
// and dilated, depthwise over several rows, pointwise, a fused bias and relu), 1-D and 3-D, and
// transposed of 1 to 3 spatial dims; the sums in float32, rounded once, within a unit in the last
// place of the CPU's.
TEST(OpenClEmit, ConvolutionsOfFloat16) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 9, 21), "float16"), wa: R.Tensor((6, 4, 3, 3), "float16"), ba: R.Tensor((1, 6, 1, 1), "float16"), wb: R.Tensor((4, 1, 3, 3), "float16"), wp: R.Tensor((5, 4, 1, 1), "float16"), x1: R.Tensor((2, 4, 11), "float16"), w1: R.Tensor((6, 2, 3), "float16"), x3: R.Tensor((1, 2, 5, 4, 6), "float16"), w3: R.Tensor((3, 2, 2, 3, 2), "float16"), wt2: R.Tensor((4, 3, 3, 2), "float16"), wt1: R.Tensor((4, 2, 4), "float16"), wt3: R.Tensor((2, 2, 2, 2, 3), "float16")):
        a = R.nn.conv2d(x, wa, padding=[1, 1, 1, 1])
        ab = R.add(a, ba)
        ar = R.nn.relu(ab)
        s = R.nn.conv2d(x, wa, strides=[2, 2], padding=[0, 1, 2, 1], dilation=[2, 1])
        d = R.nn.conv2d(x, wb, padding=[1, 1, 1, 1], groups=4)
        p = R.nn.conv2d(x, wp)
        c1 = R.nn.conv1d(x1, w1, strides=[2], padding=[1, 2], dilation=[2], groups=2)
        c3 = R.nn.conv3d(x3, w3, strides=[1, 2, 1], dilation=[2, 1, 1], auto_pad="SAME_UPPER")
        t2 = R.nn.conv2d_transpose(x, wt2, strides=[2, 3], padding=[1, 0, 0, 2], output_padding=[1, 0], dilation=[1, 2], groups=2)
        t1 = R.nn.conv1d_transpose(x1, wt1, strides=[3], padding=[2, 1], groups=2)
        t3 = R.nn.conv3d_transpose(x3, wt3, strides=[2, 1, 2], padding=[0, 1, 0, 1, 0, 1])
        return (ar, s, d, p, c1, c3, t2, t1, t3)
)";
  ExpectOpenClMatchesCpu(
      kModel,
      {Halves("x", {1, 4, 9, 21}), Halves("wa", {6, 4, 3, 3}, {}, 0.05f, 0.55f),
       Halves("ba", {1, 6, 1, 1}, {}, 0.1f, 0.5f), Halves("wb", {4, 1, 3, 3}, {}, 0.05f, 0.55f),
       Halves("wp", {5, 4, 1, 1}, {}, 0.05f, 0.55f), Halves("x1", {2, 4, 11}),
       Halves("w1", {6, 2, 3}, {}, 0.1f, 0.5f), Halves("x3", {1, 2, 5, 4, 6}),
       Halves("w3", {3, 2, 2, 3, 2}, {}, 0.1f, 0.5f), Halves("wt2", {4, 3, 3, 2}, {}, 0.1f, 0.5f),
       Halves("wt1", {4, 2, 4}, {}, 0.1f, 0.5f), Halves("wt3", {2, 2, 2, 2, 3}, {}, 0.1f, 0.5f)},
      9, kAnyCount, 1);
}

// Pooling, softmax and its kin, resize, grid sample, batch norm, prelu, rotary embedding and the
// causal conv on float16, each result within a unit in the last place of the CPU's; padding
// copies float16 (and int64) elements as they are.
TEST(OpenClEmit, PoolsSoftmaxImagesAndNormsOfFloat16) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 6, 7), "float16"), x1: R.Tensor((2, 3, 9), "float16"), big: R.Tensor((1, 2, 20, 20), "float16"), row: R.Tensor((3, 300), "float16"), grid: R.Tensor((2, 4, 5, 2), "float16"), g3: R.Tensor((3,), "float16"), v3: R.Tensor((3,), "float16"), slope: R.Tensor((3,), "float16"), r: R.Tensor((2, 4, 3, 8), "float16"), cos: R.Tensor((50, 2), "float16"), sin: R.Tensor((50, 2), "float16"), pos: R.Tensor((2, 3), "int64"), cx: R.Tensor((2, 4, 5), "float16"), cw: R.Tensor((4, 1, 3), "float16"), cb: R.Tensor((4,), "float16"), cs: R.Tensor((2, 4, 2), "float16"), i: R.Tensor((2, 3), "int64")):
        mp = R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
        ap = R.nn.avg_pool2d(x, pool_size=[2, 3], strides=[1, 2], padding=[1, 0, 1, 1], count_include_pad=True)
        m1 = R.nn.max_pool1d(x1, pool_size=[3], strides=[2], padding=[1, 1], ceil_mode=True)
        lp = R.nn.lp_pool2d(x, pool_size=[2, 3], p=3.0, strides=[2, 2], padding=[0, 1, 1, 0])
        ga = R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])
        gb = R.nn.adaptive_avg_pool2d(big, output_size=[1, 1])
        aa = R.nn.adaptive_avg_pool2d(x, output_size=[3, 2])
        am = R.nn.adaptive_max_pool2d(x, output_size=[4, 3])
        sm = R.nn.softmax(x, axis=1)
        ls = R.nn.log_softmax(row, axis=1)
        sr = R.nn.softmax(row, axis=1)
        hm = R.nn.hardmax(x, axis=3)
        ln = R.nn.lp_normalize(x, axis=2, p=2)
        rz = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 1.7, 2.5], "float32"), R.const([], "int64"), mode="linear", coordinate_transformation_mode="align_corners")
        rc = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 0.6, 0.45], "float32"), R.const([], "int64"), mode="cubic", antialias=True)
        gs = R.image.grid_sample(x, grid, mode="linear", padding_mode="border", align_corners=False)
        bt = R.nn.batch_norm(x, g3, g3, g3, v3, axis=1, epsilon=0.001, training=False)
        bn = bt[0]
        pr = R.nn.prelu(x, slope, axis=1)
        ro = R.nn.rotary_embedding(r, cos, sin, pos, rotary_embedding_dim=4, interleaved=True)
        cc = R.nn.causal_conv_with_state(cx, cw, cb, cs, activation="silu")
        cy = cc[0]
        cn = cc[1]
        v15 = R.astype(R.const(1.5, "float32"), "float16")
        v0 = R.astype(R.const(0.0, "float32"), "float16")
        pc = R.nn.pad(x1, v15, pad_width=[0, 1, 2, 0, 0, 3], pad_mode="constant")
        pe = R.nn.pad(x1, v0, pad_width=[1, 0, 0, 2, 2, 2], pad_mode="reflect")
        pi = R.nn.pad(i, R.const(7, "int64"), pad_width=[1, 0, 0, 2], pad_mode="constant")
        return (mp, ap, m1, lp, ga, gb, aa, am, sm, ls, sr, hm, ln, rz, rc, gs, bn, pr, ro, cy, cn, pc, pe, pi)
)";
  Input x = Halves("x", {2, 3, 6, 7}, {-std::numeric_limits<float>::infinity()});
  Input grid = Halves("grid", {2, 4, 5, 2}, {}, 0.11f, 1.2f);
  ExpectOpenClMatchesCpu(
      kModel,
      {x, Halves("x1", {2, 3, 9}), Halves("big", {1, 2, 20, 20}), Halves("row", {3, 300}), grid,
       Halves("g3", {3}, {}, 0.2f, 0.1f), Halves("v3", {3}, {}, 0.1f, -0.5f),
       Halves("slope", {3}, {}, 0.3f, 0.1f), Halves("r", {2, 4, 3, 8}),
       Halves("cos", {50, 2}, {}, 0.05f, 0.5f), Halves("sin", {50, 2}, {}, 0.05f, 0.5f),
       Int64s("pos", {0, 3, 49, 7, 1, 20}, {2, 3}), Halves("cx", {2, 4, 5}),
       Halves("cw", {4, 1, 3}, {}, 0.1f, 0.5f), Halves("cb", {4}), Halves("cs", {2, 4, 2}),
       Int64s("i", {1, -2, 3, 4, 5, 6}, {2, 3})},
      23, kAnyCount, 1);
}

// Attention on float16: every step the CPU rounds to float16 (the scaled query and key, the
// score, softcap's steps, the biased score, the softmax's unless its precision is float32) rounded
// alike; a 3-D grouped-query attention with a mask, past keys and values, causal, softcap and the
// biased scores out; 4-D ones with the softmax out, and with the softmax in float32. Within a
// unit in the last place of the CPU's (whose sums are wider).
TEST(OpenClEmit, AttentionOfFloat16) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(Q: R.Tensor((2, 4, 72), "float16"), K: R.Tensor((2, 6, 24), "float16"), V: R.Tensor((2, 6, 30), "float16"), mask: R.Tensor((4, 18), "float16"), pk: R.Tensor((2, 3, 12, 8), "float16"), pv: R.Tensor((2, 3, 12, 10), "float16"), q4: R.Tensor((1, 2, 5, 8), "float16"), k4: R.Tensor((1, 2, 7, 8), "float16"), v4: R.Tensor((1, 2, 7, 6), "float16")):
        a = R.nn.attention(Q, K, V, mask, pk, pv, R.const([], "int64"), q_num_heads=9, kv_num_heads=3, scale=0.01, is_causal=True, softcap=2.0, qk_matmul_output_mode=2)
        y = a[0]
        pk2 = a[1]
        pv2 = a[2]
        qk = a[3]
        b = R.nn.attention(q4, k4, v4, R.const([], "float16"), R.const([], "float16"), R.const([], "float16"), R.const([], "int64"), qk_matmul_output_mode=3)
        by = b[0]
        bqk = b[3]
        c = R.nn.attention(q4, k4, v4, R.const([], "float16"), R.const([], "float16"), R.const([], "float16"), R.const([], "int64"), is_causal=True, softmax_precision="float32")
        cy = c[0]
        cqk = c[3]
        return (y, pk2, pv2, qk, by, bqk, cy, cqk)
)";
  // The mask's last column -inf, so that some rows of the causal window mask every key.
  Input mask = Halves("mask", {4, 18}, {}, 0.2f, 2.0f);
  const uint16_t minus_inf = 0xfc00;
  for (int r = 0; r < 4; ++r) std::memcpy(mask.bytes.data() + 2 * (r * 18 + 17), &minus_inf, 2);
  ExpectOpenClMatchesCpu(
      kModel,
      {Halves("Q", {2, 4, 72}), Halves("K", {2, 6, 24}), Halves("V", {2, 6, 30}), mask,
       Halves("pk", {2, 3, 12, 8}), Halves("pv", {2, 3, 12, 10}), Halves("q4", {1, 2, 5, 8}),
       Halves("k4", {1, 2, 7, 8}), Halves("v4", {1, 2, 7, 6})},
      3, kAnyCount, 1);
}

}  // namespace
}  // namespace quilt
