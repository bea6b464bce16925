// The OpenCL back end's kernel families (targets/opencl/emit*.cc) on cases the ONNX node tests
// miss: reductions over inner axes of symbolic dims, transposes of rank 5, gathers with negative
// indices, splits into parts of symbolic size, norms over several axes, every pad mode, float16.
// Each model is compiled twice, for OpenCL alone with --strict (every op runs generated OpenCL C)
// and for the CPU, and both run on the same inputs; the CPU's reference kernels are the expected
// values. Skips, saying why, where no OpenCL device opens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "runtime/src/device/device.h"
#include "runtime/src/float_convert.h"
#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/targets/opencl_emit_util.h"
#include "tests/test_util.h"

namespace quilt {
namespace {

using opencl_test::CompileAndRun;
using opencl_test::ConstFloats;
using opencl_test::ExpectOpenClMatchesCpu;
using opencl_test::Floats;
using opencl_test::Halves;
using opencl_test::Input;
using opencl_test::Int64s;
using opencl_test::Named;

TEST(OpenClEmit, ReductionsOverInnerAxesOfSymbolicDims) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, "m", 4), "float32")):
        a = R.sum(x, axis=[0, 2])
        b = R.max(x, axis=[1], keepdims=True)
        c = R.reduce_log_sum_exp(x, axis=[3, 0])
        d = R.mean(x, axis=[2], keepdims=True)
        e = R.prod(x)
        f = R.min(x, axis=[-3, -1])
        g = R.reduce_l2(x, axis=[1, 2])
        h = R.reduce_l1(x, axis=[])
        return (a, b, c, d, e, f, g, h)
)";
  for (rt::Shape shape : {rt::Shape{2, 3, 5, 4}, rt::Shape{1, 3, 1, 4}, rt::Shape{3, 3, 7, 4}}) {
    SCOPED_TRACE(shape[0]);
    ExpectOpenClMatchesCpu(kModel, {Floats("x", shape, 0.05f, 0.5f)}, 8);
  }
}

TEST(OpenClEmit, MaxAndMinKeepNaN) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        a = R.max(x, axis=[1])
        b = R.min(x, axis=[0])
        c = R.reduce_log_sum_exp(x, axis=[1])
        return (a, b, c)
)";
  Input x = Floats("x", {2, 3});
  float nan = std::nanf("");
  std::memcpy(x.bytes.data() + 4, &nan, 4);  // x[0][1]
  ExpectOpenClMatchesCpu(kModel, {x}, 3);
}

TEST(OpenClEmit, TransposeOfRankFive) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("a", 2, 3, "b", 5), "float32")):
        y = R.permute_dims(x, axes=[4, 0, 2, 1, 3])
        z = R.permute_dims(x)
        return (y, z)
)";
  ExpectOpenClMatchesCpu(kModel, {Floats("x", {3, 2, 3, 4, 5})}, 2);
}

TEST(OpenClEmit, GathersWithNegativeIndices) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, "n", 3), "float32"), i: R.Tensor((5,), "int64")):
        y = R.take(x, i, axis=1, mode="wrap")
        z = R.take(x, R.const([-1, 0, -4], "int64"), axis=0, mode="wrap")
        w = R.take(x, i, axis=-1, mode="clip")
        u = R.gather_nd(x, R.const([[1, -1], [-4, 2], [3, 0]], "int64"))
        v = R.gather_nd(x, R.const([[[2], [-1]], [[0], [1]], [[5], [-6]], [[3], [3]]], "int64"), batch_dims=1)
        return (y, z, w, u, v)
)";
  ExpectOpenClMatchesCpu(kModel, {Floats("x", {4, 6, 3}), Int64s("i", {-1, 0, 5, -6, 2})}, 5);
}

TEST(OpenClEmit, SplitConcatAndSliceAlongSymbolicDims) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 7, 2), "float32")):
        parts = R.split(x, indices_or_sections=[2, 5], axis=1)
        a = parts[0]
        b = parts[1]
        c = parts[2]
        j = R.concat((c, a, b), axis=1)
        s = R.strided_slice(x, axes=[1, 2], begin=[-1, 0], end=[-100, 2], strides=[-2, 1])
        t = R.strided_slice(x, axes=[1], begin=[1], end=[1000], strides=[3])
        return (a, b, c, j, s, t)
)";
  for (int64_t n : {1, 4}) ExpectOpenClMatchesCpu(kModel, {Floats("x", {n, 7, 2})}, 4);
}

TEST(OpenClEmit, NormsOverSeveralAxes) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 6, "h", 3), "float32"), gamma: R.Tensor(("h", 3), "float32"), c: R.Tensor((6,), "float32")):
        a = R.nn.layer_norm(x, gamma, R.const(0.25, "float32"), [2, 3], epsilon=0.001)
        b = R.nn.rms_norm(x, gamma, [-2, -1], epsilon=0.01)
        d = R.nn.instance_norm(x, c, c, channel_axis=1, epsilon=0.001)
        e = R.nn.group_norm(x, c, c, num_groups=3, channel_axis=1, epsilon=0.001)
        f = R.nn.layer_norm_stats(x, [1, 3], epsilon=0.001)
        m = f[0]
        s = f[1]
        return (a, b, d, e, m, s)
)";
  ExpectOpenClMatchesCpu(
      kModel, {Floats("x", {2, 6, 5, 3}), Floats("gamma", {5, 3}, 0.1f, 0.2f), Floats("c", {6})},
      5);
}

TEST(OpenClEmit, EveryPadMode) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, "n", 3), "float32")):
        a = R.nn.pad(x, R.const(1.5, "float32"), pad_width=[0, 1, 2, 3, 0, -1], pad_mode="constant")
        b = R.nn.pad(x, R.const(0.0, "float32"), pad_width=[1, 0, 3, 4, 2, 2], pad_mode="reflect")
        c = R.nn.pad(x, R.const(0.0, "float32"), pad_width=[1, 1, 0, 5, 2, 0], pad_mode="edge")
        d = R.nn.pad(x, R.const(0.0, "float32"), pad_width=[0, 3, 7, 1, 1, 4], pad_mode="wrap")
        return (a, b, c, d)
)";
  for (int64_t n : {1, 4}) ExpectOpenClMatchesCpu(kModel, {Floats("x", {2, n, 3})}, 4);
}

TEST(OpenClEmit, ActivationsAsTheCpuComputesThem) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 23), "float32"), slope: R.Tensor((23,), "float32")):
        u = R.multiply(x, R.const(0.1, "float32"))
        a1 = R.asin(u)
        a2 = R.acos(u)
        a3 = R.atanh(u)
        v = R.abs(x)
        w = R.add(v, R.const(1.0, "float32"))
        a4 = R.acosh(w)
        a5 = R.nn.selu(x, alpha=1.5, gamma=2.0)
        a6 = R.nn.celu(x, alpha=0.5)
        a7 = R.nn.softplus(x, beta=2.0, threshold=1.0)
        a8 = R.nn.thresholded_relu(x, alpha=0.3)
        a9 = R.nn.shrink(x, bias=0.5, lambd=1.0)
        b1 = R.nn.mish(x)
        b2 = R.nn.gelu_tanh(x)
        b3 = R.nn.prelu(x, slope, axis=1)
        b4 = R.nn.swiglu(x, u, alpha=1.5)
        return (a1, a2, a3, a4, a5, a6, a7, a8, a9, b1, b2, b3, b4)
)";
  // 16 ops; abs, add and acosh are one fused step.
  ExpectOpenClMatchesCpu(kModel, {Floats("x", {4, 23}), Floats("slope", {23}, 0.1f, 1.0f)}, 14);
}

TEST(OpenClEmit, IntegerAndBoolOpsAsTheCpuComputesThem) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 4), "int64"), b: R.Tensor((4,), "int64"), x: R.Tensor((2, 4), "float32")):
        q = R.divide(a, b)
        m = R.floor_mod(a, b)
        r = R.mod(a, b)
        s = R.subtract(a, b)
        p = R.multiply(a, b)
        n = R.negative(a)
        lt = R.less(a, b)
        eq = R.equal(a, b)
        both = R.logical_and(lt, eq)
        either = R.logical_or(lt, eq)
        no = R.logical_not(lt)
        w = R.where(lt, x, R.const([0.5], "float32"))
        i = R.astype(x, "int64")
        j = R.astype(x, "int32")
        f = R.astype(a, "float32")
        t = R.astype(x, "bool")
        fm = R.floor_mod(x, R.const(-1.5, "float32"))
        k = R.take(a, R.const([3, -1, 0], "int64"), axis=1, mode="wrap")
        c = R.concat((a, q, m), axis=0)
        e = R.broadcast_to(b, R.shape([3, 4]))
        g = R.full(R.shape([2, 3]), R.const(7, "int64"), dtype="int64")
        h = R.arange(R.prim_value(-3), R.prim_value(9), R.prim_value(2), "int64")
        nan = R.isnan(x)
        inf = R.isinf(x)
        pinf = R.isinf(x, detect_negative=False)
        return (q, m, r, s, p, n, both, either, no, w, i, j, f, t, fm, k, c, e, g, h, nan, inf, pinf)
)";
  Input x = Floats("x", {2, 4}, 3.7f, 20.0f);
  float special[5] = {std::nanf(""), 3e19f, -2.5f, -INFINITY, INFINITY};
  std::memcpy(x.bytes.data(), special, sizeof(special));
  ExpectOpenClMatchesCpu(
      kModel, {Int64s("a", {7, -7, 9, -9, 5, 0, -8, 6}, {2, 4}), Int64s("b", {2, 2, -4, 0}), x},
      15);
}

TEST(OpenClEmit, ResizeInEveryModeWithConstantScales) {
  OPENCL_OR_SKIP();
  // Constants inline, as the importer leaves an initializer.
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 5), "float32")):
        a = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 1.7, 2.5], "float32"), R.const([], "int64"), mode="nearest", nearest_mode="floor", coordinate_transformation_mode="asymmetric")
        b = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 1.7, 2.5], "float32"), R.const([], "int64"), mode="nearest", nearest_mode="round_prefer_ceil", coordinate_transformation_mode="half_pixel")
        c = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 1.7, 2.5], "float32"), R.const([], "int64"), mode="linear", coordinate_transformation_mode="align_corners")
        d = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 0.6, 0.45], "float32"), R.const([], "int64"), mode="linear", antialias=True)
        e = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 1.7, 2.5], "float32"), R.const([], "int64"), mode="cubic", cubic_coeff_a=-0.5, exclude_outside=True)
        f = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 0.6, 0.45], "float32"), R.const([], "int64"), mode="cubic", antialias=True, coordinate_transformation_mode="pytorch_half_pixel")
        g = R.image.resize(x, R.const([0.0, 0.0, -0.2, 0.3, 1.0, 1.0, 0.9, 1.4], "float32"), R.const([1.0, 1.0, 1.7, 2.5], "float32"), R.const([], "int64"), mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0)
        h = R.image.resize(x, R.const([], "float32"), R.const([1.7, 2.5], "float32"), R.const([], "int64"), mode="linear", axes=[3, 2], coordinate_transformation_mode="half_pixel_symmetric")
        i = R.image.resize(x, R.const([], "float32"), R.const([1.0, 1.0, 0.25, 0.2], "float32"), R.const([], "int64"), mode="cubic", antialias=True)
        return (a, b, c, d, e, f, g, h, i)
)";
  // i: a window of more taps than are written out (16 x 20): the kernel loops over them. An
  // infinity where a position has fewer taps than others (antialiasing) stays out of their sums,
  // as on the CPU, rather than making 0 x infinity = NaN.
  Input x = Floats("x", {1, 2, 4, 5});
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(x.bytes.data(), &inf, 4);
  ExpectOpenClMatchesCpu(kModel, {x}, 9);
}

TEST(OpenClEmit, ConvolutionsOfOneToThreeSpatialDimsAndTransposed) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x1: R.Tensor(("n", 4, 11), "float32"), w1: R.Tensor((6, 2, 3), "float32"), b1: R.Tensor((6, 1), "float32"), x3: R.Tensor((1, 2, 5, 4, 6), "float32"), w3: R.Tensor((3, 2, 2, 3, 2), "float32"), x2: R.Tensor((2, 4, 5, 3), "float32"), w2: R.Tensor((4, 3, 3, 2), "float32"), wt1: R.Tensor((4, 2, 4), "float32"), wt3: R.Tensor((2, 2, 2, 2, 3), "float32"), xs: R.Tensor(("n", 1, 80), "float32"), ws: R.Tensor((20, 1, 32), "float32")):
        a = R.nn.conv1d(x1, w1, strides=[2], padding=[1, 2], dilation=[2], groups=2)
        ab = R.add(a, b1)
        ar = R.nn.relu(ab)
        c = R.nn.conv3d(x3, w3, strides=[1, 2, 1], dilation=[2, 1, 1], auto_pad="SAME_UPPER")
        d = R.nn.conv2d_transpose(x2, w2, strides=[2, 3], padding=[1, 0, 0, 2], output_padding=[1, 0], dilation=[1, 2], groups=2)
        e = R.nn.conv1d_transpose(x1, wt1, strides=[3], padding=[2, 1], groups=2)
        f = R.nn.conv3d_transpose(x3, wt3, strides=[2, 1, 2], padding=[0, 1, 0, 1, 0, 1])
        s = R.nn.conv1d(xs, ws, strides=[16])
        return (ar, c, d, e, f, s)
)";
  // s: an STFT's shape of conv (a window of more taps than are written out, a stride past 2).
  for (int64_t n : {1, 3}) {
    ExpectOpenClMatchesCpu(
        kModel,
        {Floats("x1", {n, 4, 11}), Floats("w1", {6, 2, 3}, 0.1f, 0.5f), Floats("b1", {6, 1}),
         Floats("x3", {1, 2, 5, 4, 6}), Floats("w3", {3, 2, 2, 3, 2}, 0.1f, 0.5f),
         Floats("x2", {2, 4, 5, 3}), Floats("w2", {4, 3, 3, 2}, 0.1f, 0.5f),
         Floats("wt1", {4, 2, 4}, 0.1f, 0.5f), Floats("wt3", {2, 2, 2, 2, 3}, 0.1f, 0.5f),
         Floats("xs", {n, 1, 80}), Floats("ws", {20, 1, 32}, 0.05f, 0.55f, 0.0f)},
        6);
  }
}

// 1 x 1 convs run as register tiles of output channels by pixels, each image one row of pixels:
// channel and pixel counts that are and are not multiples of the tile, a symbolic batch, a fused
// relu.
TEST(OpenClEmit, PointwiseConvTilesMatchTheCpu) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 5, 3, 7), "float32"), w: R.Tensor((6, 5, 1, 1), "float32"), x2: R.Tensor((1, 3, 4, 4), "float32"), w2: R.Tensor((4, 3, 1, 1), "float32")):
        a = R.nn.conv2d(x, w)
        r = R.nn.relu(a)
        b = R.nn.conv2d(x2, w2)
        return (r, b)
)";
  for (int64_t n : {1, 2}) {
    ExpectOpenClMatchesCpu(
        kModel,
        {Floats("x", {n, 5, 3, 7}), Floats("w", {6, 5, 1, 1}, 0.05f, 0.55f, 0.0f),
         Floats("x2", {1, 3, 4, 4}), Floats("w2", {4, 3, 1, 1}, 0.05f, 0.55f, 0.0f)},
        2);
  }
}

// conv2d's register tiles (output channels by pixels of a row) against the CPU: widths that are
// and are not multiples of the tile (16, and 4 for narrow outputs, some narrower than a tile),
// strides 1, 2 and 3, dilation, asymmetric padding, a window wider than the taps written out,
// depthwise convs (several output rows a work-item: heights on and off that count, strides 1
// and 2, dilation), grouped convs (17 channels a group: tiles that overlap), 1 x 1 convs with
// groups, symbolic batch and spatial dims, and fused epilogues (a bias with relu, clip or
// hardswish; a clip alone): one dispatch per conv.
TEST(OpenClEmit, Conv2dRegisterTilesMatchTheCpu) {
  OPENCL_OR_SKIP();
  std::string model = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 6, 13, 37), "float32"), wa: R.Tensor((20, 6, 3, 3), "float32"), wb: R.Tensor((12, 6, 3, 3), "float32"), wc: R.Tensor((6, 1, 3, 3), "float32"), wd: R.Tensor((6, 1, 5, 5), "float32"), we: R.Tensor((34, 3, 1, 3), "float32"), wf: R.Tensor((9, 2, 1, 1), "float32"), x2: R.Tensor((1, 4, 5, 6), "float32"), wg: R.Tensor((5, 4, 3, 3), "float32"), wh: R.Tensor((3, 4, 2, 2), "float32"), x3: R.Tensor((1, 4, 9, 70), "float32"), wk: R.Tensor((8, 4, 3, 3), "float32"), xs: R.Tensor((1, 3, "h", "w"), "float32"), ws: R.Tensor((4, 3, 3, 3), "float32"), wp: R.Tensor((5, 3, 1, 1), "float32"), wq: R.Tensor((4, 6, 1, 11), "float32"), wr: R.Tensor((4, 1, 3, 3), "float32")):
        a = R.nn.conv2d(x, wa, padding=[1, 1, 1, 1])
        ab = R.add(a, $ba)
        ar = R.nn.relu(ab)
        b = R.nn.conv2d(x, wb, strides=[2, 2], padding=[0, 1, 2, 1], dilation=[2, 1])
        bb = R.add($bb, b)
        bk = R.clip(bb, min=-0.5, max=0.75)
        c = R.nn.conv2d(x, wc, padding=[1, 1, 1, 1], groups=6)
        cb = R.add(c, $bc)
        ch = R.add(cb, R.const(3.0, "float32"))
        ck = R.clip(ch, min=0.0, max=6.0)
        cm = R.multiply(cb, ck)
        d = R.nn.conv2d(x, wd, strides=[2, 2], padding=[2, 2, 2, 2], groups=6)
        e = R.nn.conv2d(x, we, strides=[1, 3], padding=[0, 2, 0, 1], dilation=[1, 2], groups=2)
        ek = R.clip(e, max=0.1)
        f = R.nn.conv2d(x, wf, groups=3)
        g = R.nn.conv2d(x2, wg)
        h = R.nn.conv2d(x2, wh, strides=[2, 2])
        k = R.nn.conv2d(x3, wk, strides=[2, 2], padding=[1, 1, 1, 1])
        s = R.nn.conv2d(xs, ws, padding=[1, 1, 1, 1])
        p = R.nn.conv2d(xs, wp)
        q = R.nn.conv2d(x, wq, padding=[0, 6, 0, 4])
        r = R.nn.conv2d(x3, wr, padding=[1, 2, 2, 1], dilation=[2, 2], groups=4)
        return (ar, bk, cm, d, ek, f, g, h, k, s, p, q, r)
)";
  // The biases: constants, which the epilogues take.
  const std::pair<const char*, std::string> biases[] = {
      {"$ba", ConstFloats({1, 20, 1, 1}, 0.1f, 0.5f)},
      {"$bb", ConstFloats({12, 1, 1}, 0.1f, 0.5f)},
      {"$bc", ConstFloats({1, 6, 1, 1}, 0.1f, 0.5f)}};
  for (const auto& [name, value] : biases) model.replace(model.find(name), 3, value);
  const int64_t spatial[2][3] = {{1, 5, 9}, {2, 7, 40}};  // n, h, w
  for (const auto& nhw : spatial) {
    int64_t n = nhw[0], h = nhw[1], w = nhw[2];
    ExpectOpenClMatchesCpu(
        model,
        {Floats("x", {n, 6, 13, 37}), Floats("wa", {20, 6, 3, 3}, 0.05f, 0.55f, 0.0f),
         Floats("wb", {12, 6, 3, 3}, 0.05f, 0.55f, 0.0f),
         Floats("wc", {6, 1, 3, 3}, 0.05f, 0.55f, 0.0f),
         Floats("wd", {6, 1, 5, 5}, 0.05f, 0.55f, 0.0f),
         Floats("we", {34, 3, 1, 3}, 0.05f, 0.55f, 0.0f),
         Floats("wf", {9, 2, 1, 1}, 0.05f, 0.55f, 0.0f), Floats("x2", {1, 4, 5, 6}),
         Floats("wg", {5, 4, 3, 3}, 0.05f, 0.55f, 0.0f),
         Floats("wh", {3, 4, 2, 2}, 0.05f, 0.55f, 0.0f), Floats("x3", {1, 4, 9, 70}),
         Floats("wk", {8, 4, 3, 3}, 0.05f, 0.55f, 0.0f), Floats("xs", {1, 3, h, w}),
         Floats("ws", {4, 3, 3, 3}, 0.05f, 0.55f, 0.0f),
         Floats("wp", {5, 3, 1, 1}, 0.05f, 0.55f, 0.0f),
         Floats("wq", {4, 6, 1, 11}, 0.05f, 0.55f, 0.0f),
         Floats("wr", {4, 1, 3, 3}, 0.05f, 0.55f, 0.0f)},
        13, 13);
  }
}

// Transposed convs' register tiles (output channels by outputs of one phase along the last dim)
// against the CPU: 1 to 3 spatial dims, strides 1 to 3, outputs that are and are not multiples
// of the tile, tiles whose inputs end at the row's end and one past it, padding, output padding,
// dilation, groups, 17 channels a group (tiles that overlap), a window wider than the taps
// written out, a symbolic batch and width.
TEST(OpenClEmit, ConvTransposeRegisterTilesMatchTheCpu) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 5, "w"), "float32"), wa: R.Tensor((4, 17, 2, 2), "float32"), wb: R.Tensor((4, 3, 3, 3), "float32"), wc: R.Tensor((4, 2, 3, 5), "float32"), wd: R.Tensor((4, 1, 1, 11), "float32"), x1: R.Tensor(("n", 6, 30), "float32"), we: R.Tensor((6, 5, 4), "float32"), x3: R.Tensor((1, 2, 3, 4, 20), "float32"), wf: R.Tensor((2, 3, 2, 2, 3), "float32")):
        a = R.nn.conv2d_transpose(x, wa, strides=[2, 2])
        b = R.nn.conv2d_transpose(x, wb, padding=[1, 1, 1, 1])
        c = R.nn.conv2d_transpose(x, wc, strides=[2, 3], padding=[1, 2, 0, 1], output_padding=[1, 2], dilation=[1, 2], groups=2)
        d = R.nn.conv2d_transpose(x, wd, strides=[1, 2], padding=[0, 3, 0, 4])
        e = R.nn.conv1d_transpose(x1, we, strides=[2], padding=[1, 1], groups=2)
        f = R.nn.conv3d_transpose(x3, wf, strides=[1, 2, 2], padding=[0, 1, 0, 1, 1, 1])
        return (a, b, c, d, e, f)
)";
  const int64_t sizes[2][2] = {{1, 32}, {2, 40}};  // n, w
  for (const auto& [n, w] : sizes) {
    ExpectOpenClMatchesCpu(
        kModel,
        {Floats("x", {n, 4, 5, w}), Floats("wa", {4, 17, 2, 2}, 0.05f, 0.55f, 0.0f),
         Floats("wb", {4, 3, 3, 3}, 0.05f, 0.55f, 0.0f),
         Floats("wc", {4, 2, 3, 5}, 0.05f, 0.55f, 0.0f),
         Floats("wd", {4, 1, 1, 11}, 0.05f, 0.55f, 0.0f), Floats("x1", {n, 6, 30}),
         Floats("we", {6, 5, 4}, 0.05f, 0.55f, 0.0f), Floats("x3", {1, 2, 3, 4, 20}),
         Floats("wf", {2, 3, 2, 2, 3}, 0.05f, 0.55f, 0.0f)},
        6, 6);
  }
}

// Chains and trees of elementwise ops fused into one kernel each (targets/fuse_elementwise.h):
// an input read twice, broadcast inputs of a symbolic batch, a bool and an int32 value between
// members, a value read twice by one member, members with attributes, a broadcast producer.
TEST(OpenClEmit, FusedElementwiseChainsMatchTheCpu) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 6), "float32"), mean: R.Tensor(("n", 4, 1), "float32"), gamma: R.Tensor((6,), "float32"), se: R.Tensor((1, 4, 1), "float32")):
        s = R.sigmoid(x)
        swish = R.multiply(x, s)
        d = R.subtract(x, mean)
        dg = R.multiply(d, gamma)
        norm = R.add(dg, R.const(0.25, "float32"))
        c = R.greater(x, R.const(0.0, "float32"))
        xs = R.multiply(x, R.const(0.1, "float32"))
        w = R.where(c, x, xs)
        i = R.astype(w, dtype="int32")
        i2 = R.add(i, R.const(3, "int32"))
        f = R.astype(i2, dtype="float32")
        t = R.add(x, R.const(1.0, "float32"))
        sq = R.multiply(t, t)
        cl = R.clip(sq, min=0.5, max=4.0)
        lr = R.nn.leakyrelu(cl, alpha=0.2)
        hs = R.nn.hard_sigmoid(se, alpha=0.25, beta=0.4)
        xh = R.multiply(x, hs)
        return (swish, norm, f, lr, xh)
)";
  for (int64_t n : {1, 3}) {
    ExpectOpenClMatchesCpu(kModel,
                           {Floats("x", {n, 4, 6}, 0.37f, 4.0f), Floats("mean", {n, 4, 1}),
                            Floats("gamma", {6}), Floats("se", {1, 4, 1}, 1.5f, 3.0f)},
                           5);
  }
}

// The message of a failed run of `model` on `inputs` (compiled for `devices`), or "" when it
// runs; the same session then runs `good` (inputs of the same signature) without error.
std::string RunFailure(const char* model, std::vector<std::string> devices,
                       const std::vector<Input>& inputs, const std::vector<Input>& good) {
  compiler::CompileOptions options;
  options.devices = std::move(devices);
  options.strict = true;
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(model), options);
  EXPECT_TRUE(c) << c.error().ToString();
  if (!c) return "no package";
  std::unique_ptr<rt::LoadedPackage> p;
  EXPECT_TRUE(rt::LoadedPackage::FromMemory(c->package.data(), c->package.size(), &p).ok());
  rt::SessionOptions so;
  so.strict = true;
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(std::move(p), so, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!s) return "no session";
  std::vector<rt::OwnedTensor> out;
  st = s->Run(Named(inputs), &out);
  std::string message = st.ok() ? "" : st.message();
  st = s->Run(Named(good), &out);
  EXPECT_TRUE(st.ok()) << "the run after: " << st.message();
  return message;
}

// An index outside its axis (counted from either end) fails the run on
// OpenCL as it does on the CPU, naming the step and the index, instead of reading some other
// element; the next run of the session is not affected.
TEST(OpenClEmit, AnIndexOutOfRangeFailsTheRun) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, "n", 3), "float32"), i: R.Tensor((5,), "int64"), g: R.Tensor((2, 2), "int64")):
        y = R.take(x, i, axis=1)
        u = R.gather_nd(x, g)
        return (y, u)
)";
  Input x = Floats("x", {4, 6, 3});
  Input i = Int64s("i", {3, 0, 5, -6, -1});
  Input g = Int64s("g", {1, -1, -4, 2}, {2, 2});
  ExpectOpenClMatchesCpu(kModel, {x, i, g}, 2);
  struct Case {
    Input i, g;
    std::string message;
  };
  std::vector<Case> cases = {
      {Int64s("i", {0, 6, 1, 1, 1}), g, "index 6 is out of bounds for an axis of size 6"},
      {Int64s("i", {0, -7, 1, 1, 1}), g, "index -7 is out of bounds for an axis of size 6"},
      {i, Int64s("g", {1, 1, -5, 0}, {2, 2}), "index -5 is out of bounds for an axis of size 4"},
      {i, Int64s("g", {1, 6, 0, 0}, {2, 2}), "index 6 is out of bounds for an axis of size 6"},
  };
  for (const Case& c : cases) {
    std::string cl = RunFailure(kModel, {"opencl"}, {x, c.i, c.g}, {x, i, g});
    EXPECT_NE(cl.find(c.message), std::string::npos) << cl;
    EXPECT_NE(cl.find(c.i.bytes == i.bytes ? "gather_nd" : "take"), std::string::npos) << cl;
    std::string cpu = RunFailure(kModel, {"llvm"}, {x, c.i, c.g}, {x, i, g});
    EXPECT_NE(cpu, "") << "the CPU refuses the index too";
  }
}

// Edge, reflect and wrap padding of an axis that is empty fails the run on OpenCL as on the CPU.
TEST(OpenClEmit, PaddingAnEmptyAxisFailsTheRun) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, "n"), "float32")):
        a = R.nn.pad(x, R.const(0.0, "float32"), pad_width=[0, 0, 1, 2], pad_mode="edge")
        b = R.nn.pad(x, R.const(0.0, "float32"), pad_width=[0, 0, 2, 1], pad_mode="reflect")
        c = R.nn.pad(x, R.const(0.0, "float32"), pad_width=[1, 0, 3, 1], pad_mode="wrap")
        return (a, b, c)
)";
  Input good = Floats("x", {2, 3});
  ExpectOpenClMatchesCpu(kModel, {good}, 3);
  Input empty = Floats("x", {2, 0});
  std::string cl = RunFailure(kModel, {"opencl"}, {empty}, {good});
  EXPECT_NE(cl.find("cannot pad an empty axis"), std::string::npos) << cl;
  EXPECT_NE(cl.find("nn_pad"), std::string::npos) << cl;
  std::string cpu = RunFailure(kModel, {"llvm"}, {empty}, {good});
  EXPECT_NE(cpu.find("cannot pad an empty axis"), std::string::npos) << cpu;
}

// Elementwise kernels launch over groups of the output's axes along which every input broadcasts
// or not (up to 3 grid dims, more groups unravelled in the third): alternating broadcast axes
// (5 groups), axes of size 1 between, a symbolic dim, a scalar result and one of all 1s.
TEST(OpenClEmit, BroadcastsOverGroupsOfAxes) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4, 5, "n"), "float32"), u: R.Tensor((1, 3, 1, 5, 1), "float32"), v: R.Tensor((2, 1, 4, 1, "n"), "float32"), w: R.Tensor((3, 1, 1, 1), "float32"), p: R.Tensor((), "float32"), o: R.Tensor((1, 1), "float32")):
        a = R.add(x, u)
        b = R.multiply(a, v)
        c = R.subtract(u, v)
        d = R.add(w, R.const(2.0, "float32"))
        e = R.multiply(p, R.const(3.0, "float32"))
        f = R.maximum(o, p)
        g = R.add(x, w)
        return (b, c, d, e, f, g)
)";
  for (int64_t n : {1, 6}) {
    ExpectOpenClMatchesCpu(
        kModel,
        {Floats("x", {2, 3, 4, 5, n}), Floats("u", {1, 3, 1, 5, 1}), Floats("v", {2, 1, 4, 1, n}),
         Floats("w", {3, 1, 1, 1}), Floats("p", {}), Floats("o", {1, 1})},
        6);
  }
}

// batch_norm and concat launch on 2-D grids (the elements after the axis by the rows up to it):
// the axis first, in the middle and last, a symbolic batch.
TEST(OpenClEmit, BatchNormAndConcatAlongAnyAxis) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 5, 7), "float32"), s3: R.Tensor((3,), "float32"), v3: R.Tensor((3,), "float32"), s7: R.Tensor((7,), "float32"), v7: R.Tensor((7,), "float32"), z: R.Tensor(("n", 2, 5, 7), "float32")):
        a_bn = R.nn.batch_norm(x, s3, v3, s3, v3, axis=1, epsilon=0.001, training=False)
        a = a_bn[0]
        b_bn = R.nn.batch_norm(x, s7, v7, v7, v7, axis=3, training=False)
        b = b_bn[0]
        c = R.concat((x, z, x), axis=1)
        d = R.concat((x, x), axis=3)
        e = R.concat((x, x), axis=0)
        return (a, b, c, d, e)
)";
  for (int64_t n : {1, 2}) {
    ExpectOpenClMatchesCpu(
        kModel,
        {Floats("x", {n, 3, 5, 7}), Floats("s3", {3}), Floats("v3", {3}, 0.2f, -0.5f),
         Floats("s7", {7}), Floats("v7", {7}, 0.2f, -0.5f), Floats("z", {n, 2, 5, 7})},
        5);
  }
}

// A conv over rows one pixel wide (a 1-D signal stored as (N, C, L, 1), kernel (K, 1)) runs its
// tiles along L: strides, dilation, padding at both ends, groups, a depthwise conv, a fused bias
// and relu, a symbolic batch.
TEST(OpenClEmit, ConvOverRowsOnePixelWide) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 6, 37, 1), "float32"), wa: R.Tensor((20, 6, 5, 1), "float32"), ba: R.Tensor((1, 20, 1, 1), "float32"), wb: R.Tensor((6, 1, 3, 1), "float32"), wc: R.Tensor((4, 3, 2, 1), "float32")):
        a = R.nn.conv2d(x, wa, strides=[2, 1], padding=[2, 0, 1, 0])
        ab = R.add(a, ba)
        ar = R.nn.relu(ab)
        b = R.nn.conv2d(x, wb, padding=[2, 0, 2, 0], dilation=[2, 1], groups=6)
        c = R.nn.conv2d(x, wc, strides=[3, 1], groups=2)
        return (ar, b, c)
)";
  for (int64_t n : {1, 2}) {
    ExpectOpenClMatchesCpu(kModel,
                           {Floats("x", {n, 6, 37, 1}), Floats("wa", {20, 6, 5, 1}, 0.1f, 0.5f),
                            Floats("ba", {1, 20, 1, 1}), Floats("wb", {6, 1, 3, 1}, 0.1f, 0.5f),
                            Floats("wc", {4, 3, 2, 1}, 0.1f, 0.5f)},
                           3);
  }
}

// Softmax and log-softmax over rows of 256 elements or more, a work-group per row: rows of 6,625
// (not a multiple of the group's 64), of exactly 256 and of 300 along an inner axis of length 1
// squeezed out, one with a NaN (every output NaN, as the CPU's), one with -inf among its values
// and one far from zero (the maximum's shift); the shorter rows along another axis keep a
// work-item each.
TEST(OpenClEmit, SoftmaxOfLongRowsByWorkGroups) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6625), "float32"), z: R.Tensor((2, 256), "float32"), w: R.Tensor((3, 300, 1), "float32")):
        a = R.nn.softmax(x, axis=1)
        b = R.nn.log_softmax(x, axis=-1)
        c = R.nn.softmax(z, axis=1)
        d = R.nn.log_softmax(w, axis=1)
        e = R.nn.softmax(z, axis=0)
        return (a, b, c, d, e)
)";
  Input x = Floats("x", {4, 6625}, 0.9f, 4.0f, 0.0003f);
  float* v = reinterpret_cast<float*>(x.bytes.data());
  v[6625 + 17] = std::numeric_limits<float>::quiet_NaN();
  v[2 * 6625 + 5] = -std::numeric_limits<float>::infinity();
  v[2 * 6625 + 6400] = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < 6625; ++j) v[3 * 6625 + j] += 1000.0f;
  ExpectOpenClMatchesCpu(kModel, {x, Floats("z", {2, 256}), Floats("w", {3, 300, 1}, 0.5f)}, 5);
}

TEST(OpenClEmit, PoolsRowOpsAndSpaceDepthMoves) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x1: R.Tensor((2, 3, 9), "float32"), x3: R.Tensor((1, 2, 5, 4, 6), "float32"), x2: R.Tensor((2, 8, 4, 6), "float32")):
        a = R.nn.max_pool1d(x1, pool_size=[3], strides=[2], padding=[1, 1], ceil_mode=True)
        b = R.nn.avg_pool3d(x3, pool_size=[2, 3, 2], strides=[2, 1, 2], padding=[1, 1, 0, 0, 1, 1], count_include_pad=True)
        c = R.nn.avg_pool1d(x1, pool_size=[4], strides=[3], padding=[2, 2], dilation=[2])
        d = R.nn.lp_pool2d(x2, pool_size=[2, 3], p=3.0, strides=[2, 2], padding=[0, 1, 1, 0])
        e = R.nn.max_pool3d(x3, pool_size=[2, 2, 2], dilation=[2, 1, 2], auto_pad="SAME_UPPER")
        f = R.nn.hardmax(x2, axis=1)
        g = R.nn.lp_normalize(x2, axis=2, p=1)
        h = R.nn.depth_to_space(x2, block_size=2, mode="CRD")
        i = R.nn.depth_to_space(x2, block_size=2, mode="DCR")
        j = R.nn.space_to_depth(x2, block_size=2)
        return (a, b, c, d, e, f, g, h, i, j)
)";
  Input x2 = Floats("x2", {2, 8, 4, 6});
  // A zero row for lp_normalize (over axis 2 at n 0, c 0, w 1) and ties for hardmax.
  for (int64_t h = 0; h < 4; ++h) std::memset(x2.bytes.data() + (h * 6 + 1) * 4, 0, 4);
  ExpectOpenClMatchesCpu(kModel, {Floats("x1", {2, 3, 9}), Floats("x3", {1, 2, 5, 4, 6}), x2}, 10);
}

TEST(OpenClEmit, MatmulOfVectorsAndBroadcastBatches) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", 1, 5, 6), "float32"), b: R.Tensor((3, 6, 7), "float32"), v: R.Tensor((6,), "float32"), w: R.Tensor((7,), "float32")):
        ab = R.matmul(a, b)
        av = R.matmul(a, v)
        vb = R.matmul(v, b)
        abw = R.matmul(ab, w)
        vv = R.matmul(v, v)
        return (ab, av, vb, abw, vv)
)";
  for (int64_t n : {1, 2}) {
    ExpectOpenClMatchesCpu(
        kModel,
        {Floats("a", {n, 1, 5, 6}), Floats("b", {3, 6, 7}), Floats("v", {6}), Floats("w", {7})}, 5);
  }
}

// Matmul tiles of 8 rows by 16 columns in vector registers: columns that fill whole runs of 16
// and a last partial run, rows that are not a multiple of 8, fewer rows than 8, a symbolic batch,
// a broadcast weight.
TEST(OpenClEmit, MatmulTilesOfRowsByColumnRuns) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", 13, 19), "float32"), b: R.Tensor((19, 37), "float32"), c: R.Tensor((3, 19), "float32"), d: R.Tensor(("n", 19, 32), "float32")):
        ab = R.matmul(a, b)
        cb = R.matmul(c, b)
        ad = R.matmul(a, d)
        return (ab, cb, ad)
)";
  for (int64_t n : {1, 2}) {
    ExpectOpenClMatchesCpu(kModel,
                           {Floats("a", {n, 13, 19}), Floats("b", {19, 37}, 0.1f, 0.6f),
                            Floats("c", {3, 19}), Floats("d", {n, 19, 32}, 0.2f, 1.1f)},
                           3);
  }
}

TEST(OpenClEmit, AdaptivePoolsToAnySize) {
  OPENCL_OR_SKIP();
  constexpr const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def main(x1: R.Tensor((2, 3, 9), "float32"), x2: R.Tensor((2, 3, 7, 5), "float32"), x3: R.Tensor((1, 2, 5, 4, 6), "float32"), x4: R.Tensor((2, 5, 23, 29), "float32"), x5: R.Tensor((3, 2, 300), "float32")):
        a = R.nn.adaptive_max_pool1d(x1, output_size=[4])
        b = R.nn.adaptive_avg_pool2d(x2, output_size=[3, 2])
        c = R.nn.adaptive_max_pool2d(x2, output_size=[1, 1])
        d = R.nn.adaptive_avg_pool3d(x3, output_size=[2, 3, 4])
        e = R.nn.adaptive_avg_pool2d(x2, output_size=[1, 1])
        f = R.nn.adaptive_avg_pool2d(x4, output_size=[1, 1])
        g = R.nn.adaptive_avg_pool1d(x5, output_size=[1])
        h = R.nn.adaptive_max_pool2d(x4, output_size=[1, 1])
        return (a, b, c, d, e, f, g, h)
)";
  // x4 and x5: whole planes of 667 and 300 averaged by a work-group each (a max keeps a work-item
  // per plane; x2's planes of 35, a work-item each).
  ExpectOpenClMatchesCpu(
      kModel,
      {Floats("x1", {2, 3, 9}), Floats("x2", {2, 3, 7, 5}), Floats("x3", {1, 2, 5, 4, 6}),
       Floats("x4", {2, 5, 23, 29}, 0.5f), Floats("x5", {3, 2, 300}, 0.5f)},
      8);
}

}  // namespace
}  // namespace quilt
