// Converters of the tensor category: each test builds a tiny ONNX graph and expects IR text.
#include <gtest/gtest.h>

#include <limits>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::Dim;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::OnnxGraph;
using quilt::testing::SetInt;
using quilt::testing::SetInts;
using quilt::testing::SetString;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(TensorImport, ShapeGatherConcatReshapeStaysSymbolic) {
  // The usual exporter chain: the batch is read from Shape, gathered, unsqueezed and concatenated
  // with constants; the reshape target stays symbolic.
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 4, 8});
  g.Initializer<int64_t>("zero", TensorProto::INT64, {}, {0});
  g.Initializer<int64_t>("axes", TensorProto::INT64, {1}, {0});
  g.Initializer<int64_t>("rest", TensorProto::INT64, {2}, {-1, 2});
  g.Node("Shape", {"x"}, {"s"});
  g.Node("Gather", {"s", "zero"}, {"batch"});
  g.Node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  SetInt(g.Node("Concat", {"batch1", "rest"}, {"target"}), "axis", 0);
  g.Node("Reshape", {"x", "target"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 8), "float32")) -> R.Tensor(("n", 16, 2), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        s = R.shape_of(x)
        s_1 = R.shape_to_tensor(s)
        batch = R.take(s_1, R.const(0, "int64"), axis=0, mode="fast")
        batch1 = R.expand_dims(batch, axis=[0])
        target = R.concat((batch1, R.const([-1, 2], "int64")), axis=0)
        y = R.reshape(x, R.shape([n, 16, 2]))
        return y
)");
}

TEST(TensorImport, GatherNormalizesNegativeConstantIndicesAndChecksBounds) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {5, 3});
  g.Initializer<int64_t>("i", TensorProto::INT64, {2}, {-1, 1});
  SetInt(g.Node("Gather", {"x", "i"}, {"y"}), "axis", 0);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.take(x, R.const([4, 1], "int64"), axis=0, mode="fast")
        return y
)");
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {5, 3});
  h.Initializer<int64_t>("i", TensorProto::INT64, {1}, {3});
  SetInt(h.Node("Gather", {"x", "i"}, {"y"}), "axis", 1);
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"(Gather, opset 13)", "index 3 is out of bounds for axis 1 of size 3"});
}

// Indices known only at run time are checked there (take's "fast" mode: [-n, n), negative ones
// counting from the end), never wrapped into range.
TEST(TensorImport, GatherWithRuntimeIndicesIsCheckedAtRunTime) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 3}).Input("i", TensorProto::INT64, {2, 2});
  SetInt(g.Node("Gather", {"x", "i"}, {"y"}), "axis", 1);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), i: R.Tensor((2, 2), "int64")) -> R.Tensor(("n", 2, 2), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.take(x, i, axis=1, mode="fast")
        return y
)");
}

TEST(TensorImport, SliceAttributesBeforeOpset10) {
  OnnxGraph g(9);
  g.Input("x", TensorProto::FLOAT, {20, 10, 5});
  auto& n = g.Node("Slice", {"x"}, {"y"});
  SetInts(n, "starts", {0, -3});
  SetInts(n, "ends", {3, 1000});
  SetInts(n, "axes", {0, 1});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((20, 10, 5), "float32")) -> R.Tensor((3, 3, 5), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.strided_slice(x, axes=[0, 1], begin=[0, -3], end=[3, 1000], strides=[1, 1])
        return y
)");
}

TEST(TensorImport, SliceOfAWholeTensorIsTheTensor) {
  // Starts of 0 (or as far back as the axis), ends at or past it, steps of 1 (jax2tf's
  // strided_slice of a whole conv output): no op, the value itself under the slice's name; one
  // element short on an axis, or a step of 2, is a slice.
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {4, 6, 5});
  g.Initializer<int64_t>("starts", TensorProto::INT64, {3}, {0, -6, -kMax});
  g.Initializer<int64_t>("ends", TensorProto::INT64, {3}, {kMax, 6, 1000000000});
  g.Initializer<int64_t>("axes", TensorProto::INT64, {3}, {0, 1, -1});
  g.Initializer<int64_t>("short", TensorProto::INT64, {3}, {kMax, -1, 5});
  g.Initializer<int64_t>("steps", TensorProto::INT64, {3}, {1, 1, 2});
  g.Node("Slice", {"x", "starts", "ends", "axes"}, {"whole"});
  g.Node("Slice", {"whole", "starts", "short", "axes"}, {"cut"});
  g.Node("Slice", {"whole", "starts", "ends", "axes", "steps"}, {"strided"});
  g.Node("Relu", {"whole"}, {"r"});
  g.Output("whole", TensorProto::FLOAT);
  g.Output("cut", TensorProto::FLOAT);
  g.Output("strided", TensorProto::FLOAT);
  g.Output("r", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6, 5), "float32")) -> R.Tuple(R.Tensor((4, 6, 5), "float32"), R.Tensor((4, 5, 5), "float32"), R.Tensor((4, 6, 3), "float32"), R.Tensor((4, 6, 5), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["whole", "cut", "strided", "r"]})
        cut = R.strided_slice(x, axes=[0, 1, -1], begin=[0, -6, -9223372036854775807], end=[9223372036854775807, -1, 5], strides=[1, 1, 1])
        strided = R.strided_slice(x, axes=[0, 1, -1], begin=[0, -6, -9223372036854775807], end=[9223372036854775807, 6, 1000000000], strides=[1, 1, 2])
        r = R.nn.relu(x)
        outputs = (x, cut, strided, r)
        return outputs
)");
}

TEST(TensorImport, SliceInputsWithStepsAndSymbolicDims) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 10});
  g.Initializer<int64_t>("starts", TensorProto::INT64, {2}, {1, -1});
  g.Initializer<int64_t>("ends", TensorProto::INT64, {2}, {kMax, -kMax});
  g.Initializer<int64_t>("axes", TensorProto::INT64, {2}, {0, -1});
  g.Initializer<int64_t>("steps", TensorProto::INT64, {2}, {1, -3});
  g.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  ir::StructInfo y = mod->Lookup("main")->ret_struct_info;
  ASSERT_TRUE(y->shape);
  EXPECT_EQ(ir::ToString((*y->shape)[0]), "n - 1");
  EXPECT_EQ(ir::AsInt((*y->shape)[1]), 4);  // 9, 6, 3, 0
  // Reversed with steps -1 and -2 over symbolic dims: n and ceil((m - 1) / 2) = m // 2.
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {"n", "m"});
  h.Initializer<int64_t>("starts", TensorProto::INT64, {2}, {-1, -2});
  h.Initializer<int64_t>("ends", TensorProto::INT64, {2}, {-kMax, -kMax});
  h.Initializer<int64_t>("steps", TensorProto::INT64, {2}, {-1, -2});
  h.Initializer<int64_t>("axes", TensorProto::INT64, {2}, {0, 1});
  h.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  mod = h.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  y = mod->Lookup("main")->ret_struct_info;
  ASSERT_TRUE(y->shape);
  EXPECT_EQ(ir::ToString((*y->shape)[0]), "n");
  EXPECT_EQ(ir::ToString((*y->shape)[1]), "m // 2");
}

TEST(TensorImport, SliceWithAHugeEndOnASymbolicDimIsClampedAgainstIt) {
  // tf2onnx writes 1000000000 for "to the end": the extent is min(1000000000, n) - 1, never
  // the number itself (a package would plan an arena of that size).
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 10});
  g.Initializer<int64_t>("starts", TensorProto::INT64, {2}, {1, 2});
  g.Initializer<int64_t>("ends", TensorProto::INT64, {2}, {1000000000, 1000000000});
  g.Initializer<int64_t>("axes", TensorProto::INT64, {2}, {0, 1});
  g.Node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  ir::StructInfo y = mod->Lookup("main")->ret_struct_info;
  ASSERT_TRUE(y->shape);
  EXPECT_EQ(ir::ToString((*y->shape)[0]), "T.min(1000000000, n) - 1");
  EXPECT_EQ(ir::AsInt((*y->shape)[1]), 8);  // a static dim clamps exactly
}

TEST(TensorImport, SliceEndFromAnotherInputsShapeIsSymbolic) {
  // pos[:, :seq] with seq read from the ids' shape: the output takes the symbolic length.
  OnnxGraph g(13);
  g.Input("ids", TensorProto::INT64, {1, "seq"});
  g.Input("pos", TensorProto::FLOAT, {1, 512});
  g.Initializer<int64_t>("one", TensorProto::INT64, {1}, {1});
  g.Initializer<int64_t>("two", TensorProto::INT64, {1}, {2});
  g.Initializer<int64_t>("zero", TensorProto::INT64, {1}, {0});
  g.Node("Shape", {"ids"}, {"s"});
  g.Node("Slice", {"s", "one", "two"}, {"len"});
  g.Node("Slice", {"pos", "zero", "len", "one"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(ids: R.Tensor((1, "seq"), "int64"), pos: R.Tensor((1, 512), "float32")) -> R.Tensor((1, "seq"), "float32"):
        seq = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        s = R.shape_of(ids)
        s_1 = R.shape_to_tensor(s)
        len = R.strided_slice(s_1, axes=[0], begin=[1], end=[2], strides=[1])
        y = R.dynamic_strided_slice(pos, R.shape([0]), R.shape([seq]), R.shape([1]), axes=[1])
        return y
)");
}

TEST(TensorImport, SliceWithRuntimeStartsKeepsTheRank) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {4, 6}).Input("b", TensorProto::INT32, {1});
  g.Initializer<int32_t>("e", TensorProto::INT32, {1}, {5});
  g.Node("Slice", {"x", "b", "e"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), "float32"), b: R.Tensor((1,), "int32")) -> R.Tensor(ndim=2, dtype="float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.astype(b, "int64")
        y_1 = R.tensor_to_shape(y)
        y_2 = R.dynamic_strided_slice(x, y_1, R.shape([5]), R.shape([1]), axes=[0])
        return y_2
)");
}

TEST(TensorImport, ShapeWithStartAndEndOfASymbolicShape) {
  OnnxGraph g(15);
  g.Input("x", TensorProto::FLOAT, {"b", "t", 8});
  auto& n = g.Node("Shape", {"x"}, {"s"});
  SetInt(n, "start", 0);
  SetInt(n, "end", -1);
  g.Node("ConstantOfShape", {"s"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("b", "t", 8), "float32")) -> R.Tensor(("b", "t"), "float32"):
        b = T.int64()
        t = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        s = R.shape_of(x)
        s_1 = R.shape_to_tensor(s)
        s_2 = R.strided_slice(s_1, axes=[0], begin=[0], end=[2], strides=[1])
        y = R.full(R.shape([b, t]), R.const(0.0, "float32"), dtype="float32")
        return y
)");
}

TEST(TensorImport, ExpandBroadcastsBothWaysWithSymbolicDims) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {3, 1}).Input("z", TensorProto::FLOAT, {"n", 1, 1});
  g.Initializer<int64_t>("one", TensorProto::INT64, {1}, {4});
  g.Node("Shape", {"z"}, {"s"});
  SetInt(g.Node("Concat", {"s", "one"}, {"s4"}), "axis", 0);  // (n, 1, 1, 4)
  g.Node("Expand", {"x", "s4"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 1), "float32"), z: R.Tensor(("n", 1, 1), "float32")) -> R.Tensor(("n", 1, 3, 4), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        s = R.shape_of(z)
        s_1 = R.shape_to_tensor(s)
        s4 = R.concat((s_1, R.const([4], "int64")), axis=0)
        y = R.broadcast_to(x, R.shape([n, 1, 3, 4]))
        return y
)");
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {3, 2});
  h.Initializer<int64_t>("s", TensorProto::INT64, {2}, {4, 2});
  h.Node("Expand", {"x", "s"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"(Expand, opset 13)", "cannot expand dimension 0 of size 3 to 4"});
}

TEST(TensorImport, ExpandAndConstantOfShapeWithARuntimeShape) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {3}).Input("s", TensorProto::INT64, {2});
  g.Node("Expand", {"x", "s"}, {"y"});
  auto& c = g.Node("ConstantOfShape", {"s"}, {"z"});
  auto* v = c.add_attribute();
  v->set_name("value");
  v->set_type(::onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(TensorProto::INT32);
  v->mutable_t()->add_dims(1);
  v->mutable_t()->add_int32_data(7);
  g.Output("y", TensorProto::FLOAT).Output("z", TensorProto::INT32);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "float32"), s: R.Tensor((2,), "int64")) -> R.Tuple(R.Tensor(ndim=2, dtype="float32"), R.Tensor(ndim=2, dtype="int32")):
        R.func_attr({"global_symbol": "main", "output_names": ["y", "z"]})
        y = R.tensor_to_shape(s)
        y_1 = R.broadcast_to(x, y)
        z = R.tensor_to_shape(s)
        z_1 = R.full(z, R.const(7, "int32"), dtype="int32")
        outputs = (y_1, z_1)
        return outputs
)");
}

TEST(TensorImport, RangeAndSizeOfSymbolicValues) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 3});
  g.Initializer<int64_t>("zero", TensorProto::INT64, {}, {0});
  g.Initializer<int64_t>("two", TensorProto::INT64, {}, {2});
  g.Node("Size", {"x"}, {"size"});
  g.Node("Range", {"zero", "size", "two"}, {"r"});
  g.Output("r", TensorProto::INT64);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  ir::StructInfo r = mod->Lookup("main")->ret_struct_info;
  ASSERT_TRUE(r->shape);
  EXPECT_EQ(ir::ToString((*r->shape)[0]), "(n * 3 + 1) // 2");
  OnnxGraph h(13);
  h.Initializer<int64_t>("a", TensorProto::INT64, {}, {10});
  h.Initializer<int64_t>("b", TensorProto::INT64, {}, {1});
  h.Initializer<int64_t>("c", TensorProto::INT64, {}, {-3});
  h.Node("Range", {"a", "b", "c"}, {"r"});
  h.Output("r", TensorProto::INT64);
  ExpectImportsTo(h, R"(
@I.ir_module
class Module:
    @R.function
    def main() -> R.Tensor((3,), "int64"):
        R.func_attr({"global_symbol": "main", "output_names": ["r"]})
        r = R.arange(R.prim_value(10), R.prim_value(1), R.prim_value(-3), dtype="int64")
        return r
)");
}

TEST(TensorImport, PadAttributesBeforeOpset11AndAxesInputFrom18) {
  OnnxGraph g(10);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  auto& n = g.Node("Pad", {"x"}, {"y"});
  SetInts(n, "pads", {0, 1, 1, 2});
  SetString(n, "mode", "reflect");
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((3, 6), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.pad(x, R.const(0.0, "float32"), pad_width=[0, 1, 1, 2], pad_mode="reflect")
        return y
)");
  OnnxGraph h(18);
  h.Input("x", TensorProto::FLOAT, {"n", 3, 4});
  h.Initializer<int64_t>("pads", TensorProto::INT64, {2}, {2, -1});
  h.Initializer<float>("v", TensorProto::FLOAT, {}, {1.5f});
  h.Initializer<int64_t>("axes", TensorProto::INT64, {1}, {-1});
  h.Node("Pad", {"x", "pads", "v", "axes"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(h, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 4), "float32")) -> R.Tensor(("n", 3, 5), "float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.pad(x, R.const(1.5, "float32"), pad_width=[0, 0, 0, 0, 2, -1], pad_mode="constant")
        return y
)");
  OnnxGraph w(18);
  w.Input("x", TensorProto::FLOAT, {2});
  w.Initializer<int64_t>("pads", TensorProto::INT64, {2}, {1, 1});
  SetString(w.Node("Pad", {"x", "pads"}, {"y"}), "mode", "wrap");
  w.Output("y", TensorProto::FLOAT);
  ExpectImportError(w, {"mode 'wrap' is not supported at this opset"});
}

TEST(TensorImport, SplitBySizesAndByNumOutputs) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 6});
  g.Initializer<int64_t>("split", TensorProto::INT64, {2}, {2, 4});
  SetInt(g.Node("Split", {"x", "split"}, {"a", "b"}), "axis", 1);
  g.Output("a", TensorProto::FLOAT).Output("b", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 6), "float32")) -> R.Tuple(R.Tensor(("n", 2), "float32"), R.Tensor(("n", 4), "float32")):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["a", "b"]})
        a = R.split(x, indices_or_sections=[2], axis=1)
        a_1 = a[0]
        b = a[1]
        outputs = (a_1, b)
        return outputs
)");
  OnnxGraph h(18);
  h.Input("x", TensorProto::FLOAT, {7});
  SetInt(h.Node("Split", {"x"}, {"a", "b", "c"}), "num_outputs", 3);
  h.Output("a", TensorProto::FLOAT).Output("b", TensorProto::FLOAT).Output("c", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = h.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  const auto& f = mod->Lookup("main")->ret_struct_info->fields;
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0]->StaticShape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(f[2]->StaticShape(), (std::vector<int64_t>{1}));
  OnnxGraph e(11);
  e.Input("x", TensorProto::FLOAT, {7});
  SetInts(e.Node("Split", {"x"}, {"a", "b"}), "split", {3, 3});
  e.Output("a", TensorProto::FLOAT).Output("b", TensorProto::FLOAT);
  ExpectImportError(e, {"(Split, opset 11)", "split sizes add up to 6, but the axis has size 7"});
}

TEST(TensorImport, SplitOfASymbolicDimIntoNumOutputsParts) {
  // ONNX Split-18: parts of ceil(n / 3), the last one smaller.
  OnnxGraph g(18);
  g.Input("x", TensorProto::FLOAT, {"n", 2});
  SetInt(g.Node("Split", {"x"}, {"a", "b", "c"}), "num_outputs", 3);
  g.Output("a", TensorProto::FLOAT).Output("b", TensorProto::FLOAT).Output("c", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2), "float32")) -> R.Tuple(R.Tensor(((n + 2) // 3, 2), "float32"), R.Tensor(((n + 2) // 3, 2), "float32"), R.Tensor((n - (n + 2) // 3 * 2, 2), "float32")):
        n = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["a", "b", "c"]})
        a = R.split(x, [], sections=3)
        a_1 = a[0]
        b = a[1]
        c = a[2]
        outputs = (a_1, b, c)
        return outputs
)");
  // Equal parts (no num_outputs, no sizes) of a symbolic dim: the same op.
  OnnxGraph e(13);
  e.Input("x", TensorProto::FLOAT, {2, "n"});
  SetInt(e.Node("Split", {"x"}, {"a", "b"}), "axis", -1);
  e.Output("a", TensorProto::FLOAT).Output("b", TensorProto::FLOAT);
  ir::StructInfo r = quilt::testing::ImportedResult(e);
  ASSERT_TRUE(r && r->fields.size() == 2 && r->fields[1]->shape);
  EXPECT_EQ(ir::ToString((*r->fields[1]->shape)[1]), "n - (n + 1) // 2");
}

TEST(TensorImport, SplitOfAKnownShapeTensorKeepsItsValuesKnown) {
  // The parts of a known shape feed a reshape as values, not as run-time tensors.
  OnnxGraph g(18);
  g.Input("x", TensorProto::FLOAT, {"n", 6});
  g.Node("Shape", {"x"}, {"s"});
  SetInt(g.Node("Split", {"s"}, {"s0", "s1"}), "num_outputs", 2);
  g.Node("Concat", {"s1", "s0"}, {"t"}).add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  g.Node("Reshape", {"x", "t"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ir::StructInfo r = quilt::testing::ImportedResult(g);
  ASSERT_TRUE(r && r->shape);
  EXPECT_EQ(ir::AsInt((*r->shape)[0]), 6);
  EXPECT_EQ(ir::ToString((*r->shape)[1]), "n");
}

TEST(TensorImport, ShapeOfUnknownRankAndRangeOfOneElementTensors) {
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, std::vector<Dim>{});
  g.graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  g.Input("limit", TensorProto::INT64, {1});
  g.Initializer<int64_t>("zero", TensorProto::INT64, {}, {0});
  g.Initializer<int64_t>("one", TensorProto::INT64, {1}, {1});
  g.Node("Shape", {"x"}, {"s"});
  g.Node("Range", {"zero", "limit", "one"}, {"r"});
  g.Output("s", TensorProto::INT64).Output("r", TensorProto::INT64);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32"), limit: R.Tensor((1,), "int64")) -> R.Tuple(R.Tensor(ndim=1, dtype="int64"), R.Tensor(ndim=1, dtype="int64")):
        R.func_attr({"global_symbol": "main", "output_names": ["s", "r"]})
        s = R.shape_of(x)
        s_1 = R.shape_to_tensor(s)
        r = R.reshape(limit, R.shape([]))
        r_1 = R.arange(R.prim_value(0), r, R.prim_value(1), "int64")
        outputs = (s_1, r_1)
        return outputs
)");
  OnnxGraph bad(17);
  bad.Input("x", TensorProto::FLOAT, std::vector<Dim>{});
  bad.graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  SetInt(bad.Node("Shape", {"x"}, {"s"}, "shape"), "start", 1);
  bad.Output("s", TensorProto::INT64);
  ExpectImportError(bad, {"node 'shape' (Shape, opset 17)",
                          "the rank of the input must be known for 'start' and 'end'"});
}

TEST(TensorImport, TopKAttributeBeforeOpset10InputAfter) {
  OnnxGraph g(9);
  g.Input("x", TensorProto::FLOAT, {3, 4});
  SetInt(g.Node("TopK", {"x"}, {"v", "i"}), "k", 2);
  g.Output("v", TensorProto::FLOAT).Output("i", TensorProto::INT64);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")) -> R.Tuple(R.Tensor((3, 2), "float32"), R.Tensor((3, 2), "int64")):
        R.func_attr({"global_symbol": "main", "output_names": ["v", "i"]})
        v = R.topk(x, k=2, axis=-1, largest=True, sorted=True, dtype="int64")
        v_1 = v[0]
        i = v[1]
        outputs = (v_1, i)
        return outputs
)");
  OnnxGraph h(11);
  h.Input("x", TensorProto::FLOAT, {3, 4});
  h.Initializer<int64_t>("k", TensorProto::INT64, {1}, {5});
  h.Node("TopK", {"x", "k"}, {"v", "i"});
  h.Output("v", TensorProto::FLOAT).Output("i", TensorProto::INT64);
  ExpectImportError(h, {"k = 5 is larger than the size 4 of axis 1"});
}

TEST(TensorImport, IndexingOpsInferShapes) {
  OnnxGraph g(18);
  g.Input("d", TensorProto::FLOAT, {2, 3, 4}).Input("i", TensorProto::INT64, {2, 1, 2});
  g.Input("u", TensorProto::FLOAT, {2, 1, 4});
  g.Node("GatherND", {"d", "i"}, {"g"});
  SetString(g.Node("ScatterND", {"d", "i", "u"}, {"s"}), "reduction", "max");
  g.Output("g", TensorProto::FLOAT).Output("s", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(d: R.Tensor((2, 3, 4), "float32"), i: R.Tensor((2, 1, 2), "int64"), u: R.Tensor((2, 1, 4), "float32")) -> R.Tuple(R.Tensor((2, 1, 4), "float32"), R.Tensor((2, 3, 4), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["g", "s"]})
        g = R.gather_nd(d, i, batch_dims=0)
        s = R.scatter_nd(d, i, u, reduction="max")
        outputs = (g, s)
        return outputs
)");
  OnnxGraph h(16);
  h.Input("d", TensorProto::FLOAT, {2, 3}).Input("i", TensorProto::INT64, {2, 3});
  h.Input("u", TensorProto::FLOAT, {2, 3});
  SetString(h.Node("ScatterElements", {"d", "i", "u"}, {"s"}), "reduction", "max");
  h.Output("s", TensorProto::FLOAT);
  ExpectImportError(h, {"reduction 'max' is not supported at this opset"});
}

TEST(TensorImport, TiluOneHotAndDataDependentSizes) {
  OnnxGraph g(14);
  g.Input("x", TensorProto::FLOAT, {3, 4}).Input("c", TensorProto::BOOL, {3});
  g.Initializer<int64_t>("k", TensorProto::INT64, {}, {-1});
  g.Initializer<int64_t>("depth", TensorProto::INT64, {}, {5});
  g.Initializer<float>("vals", TensorProto::FLOAT, {2}, {0.0f, 1.0f});
  g.Initializer<int64_t>("ind", TensorProto::INT64, {2}, {1, -1});
  SetInt(g.Node("Trilu", {"x", "k"}, {"t"}), "upper", 0);
  SetInt(g.Node("OneHot", {"ind", "depth", "vals"}, {"o"}), "axis", 0);
  SetInt(g.Node("Compress", {"x", "c"}, {"m"}), "axis", 0);
  g.Output("t", TensorProto::FLOAT).Output("o", TensorProto::FLOAT).Output("m", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), c: R.Tensor((3,), "bool")) -> R.Tuple(R.Tensor((3, 4), "float32"), R.Tensor((5, 2), "float32"), R.Tensor(ndim=2, dtype="float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["t", "o", "m"]})
        t = R.tril(x, k=-1)
        o = R.one_hot(R.const([1, -1], "int64"), R.prim_value(5), R.const([0.0, 1.0], "float32"), axis=0)
        m = R.compress(x, c, axis=0)
        outputs = (t, o, m)
        return outputs
)");
}

TEST(TensorImport, TileNeedsOneRepeatPerAxis) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  g.Initializer<int64_t>("r", TensorProto::INT64, {1}, {2});
  g.Node("Tile", {"x", "r"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"(Tile, opset 13)", "repeats has 1 values for rank 2"});
}

TEST(TensorImport, TileWithRuntimeOrSymbolicRepeatsIsDynamic) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("r", TensorProto::INT64, {2});
  g.Node("Tile", {"x", "r"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), r: R.Tensor((2,), "int64")) -> R.Tensor(ndim=2, dtype="float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.tensor_to_shape(r)
        y_1 = R.dynamic_tile(x, y)
        return y_1
)");
  // Repeats read from another input's shape stay symbolic: x tiled (1, n) times is (2, 3 * n).
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {2, 3}).Input("z", TensorProto::FLOAT, {"n"});
  h.Initializer<int64_t>("one", TensorProto::INT64, {1}, {1});
  h.Node("Shape", {"z"}, {"s"});
  SetInt(h.Node("Concat", {"one", "s"}, {"r"}), "axis", 0);
  h.Node("Tile", {"x", "r"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = h.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  ir::StructInfo y = mod->Lookup("main")->ret_struct_info;
  ASSERT_TRUE(y->shape);
  EXPECT_EQ(ir::AsInt((*y->shape)[0]), 2);
  EXPECT_FALSE(ir::AsInt((*y->shape)[1]));
  // The wrong number of run-time repeats is caught where the count is known.
  OnnxGraph k(13);
  k.Input("x", TensorProto::FLOAT, {2, 3}).Input("r", TensorProto::INT64, {3});
  k.Node("Tile", {"x", "r"}, {"y"});
  k.Output("y", TensorProto::FLOAT);
  ExpectImportError(k, {"(Tile, opset 13)", "repeats has 3 values for rank 2"});
}

TEST(TensorImport, PadWithRuntimeOrSymbolicPadsIsDynamic) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3}).Input("p", TensorProto::INT64, {4});
  g.Node("Pad", {"x", "p"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), p: R.Tensor((4,), "int64")) -> R.Tensor(ndim=2, dtype="float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.tensor_to_shape(p)
        y_1 = R.dynamic_pad(x, R.const(0.0, "float32"), y, axes=[0, 1])
        return y_1
)");
  // Pads read from another input's shape stay symbolic: x padded by (0, n) on its last axis.
  OnnxGraph h(18);
  h.Input("x", TensorProto::FLOAT, {2, 3}).Input("z", TensorProto::FLOAT, {"n"});
  h.Initializer<int64_t>("zero", TensorProto::INT64, {1}, {0});
  h.Initializer<int64_t>("axes", TensorProto::INT64, {1}, {1});
  h.Node("Shape", {"z"}, {"s"});
  SetInt(h.Node("Concat", {"zero", "s"}, {"pads"}), "axis", 0);
  h.Node("Pad", {"x", "pads", "", "axes"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = h.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  ir::StructInfo y = mod->Lookup("main")->ret_struct_info;
  ASSERT_TRUE(y->shape);
  EXPECT_EQ(ir::AsInt((*y->shape)[0]), 2);
  EXPECT_EQ(ir::ToString((*y->shape)[1]), "n + 3");
}

TEST(TensorImport, ConstantOfShapeAndRangePropagateKnownValues) {
  // ConstantOfShape(int64 1s) * -1 feeds a Reshape: the target is known at import time.
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 6});
  g.Initializer<int64_t>("len", TensorProto::INT64, {1}, {1});
  g.Initializer<int64_t>("zero", TensorProto::INT64, {}, {0});
  g.Initializer<int64_t>("three", TensorProto::INT64, {}, {3});
  g.Initializer<int64_t>("one", TensorProto::INT64, {}, {1});
  auto& c = g.Node("ConstantOfShape", {"len"}, {"ones"});
  auto* v = c.add_attribute();
  v->set_name("value");
  v->set_type(::onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(TensorProto::INT64);
  v->mutable_t()->add_dims(1);
  v->mutable_t()->add_int64_data(-1);
  g.Node("Range", {"zero", "three", "one"}, {"r"});  // [0, 1, 2]
  g.Initializer<int64_t>("idx", TensorProto::INT64, {1}, {2});
  g.Node("Gather", {"r", "idx"}, {"two"});                           // [2]
  SetInt(g.Node("Concat", {"ones", "two"}, {"target"}), "axis", 0);  // [-1, 2]
  g.Node("Reshape", {"x", "target"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  EXPECT_EQ(mod->Lookup("main")->ret_struct_info->StaticShape(), (std::vector<int64_t>{6, 2}));
}

TEST(TensorImport, DataDependentOutputsHaveKnownRanks) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  g.Node("NonZero", {"x"}, {"nz"});
  g.Node("Unique", {"x"}, {"u", "", "inv"});
  g.Output("nz", TensorProto::INT64)
      .Output("u", TensorProto::FLOAT)
      .Output("inv", TensorProto::INT64);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tuple(R.Tensor(ndim=2, dtype="int64"), R.Tensor(ndim=1, dtype="float32"), R.Tensor((6,), "int64")):
        R.func_attr({"global_symbol": "main", "output_names": ["nz", "u", "inv"]})
        nz = R.nonzero(x)
        u = R.unique(x, sorted=True, axis=None)
        u_1 = u[0]
        inv = u[2]
        outputs = (nz, u_1, inv)
        return outputs
)");
}

TEST(TensorImport, UpsampleScalesAttributeBeforeOpset9) {
  OnnxGraph g(7);
  g.Input("x", TensorProto::FLOAT, {1, 1, 2, 3});
  quilt::testing::SetFloats(g.Node("Upsample", {"x"}, {"y"}), "scales", {1.0f, 1.0f, 2.0f, 3.0f});
  g.Output("y", TensorProto::FLOAT);
  Expected<ir::IRModule> mod = g.Import();
  ASSERT_TRUE(mod) << mod.error().ToString();
  EXPECT_EQ(mod->Lookup("main")->ret_struct_info->StaticShape(),
            (std::vector<int64_t>{1, 1, 4, 9}));
}

TEST(TensorImport, ShapeOpsRejectBadInput) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  g.Initializer<int64_t>("s", TensorProto::INT64, {1}, {0});
  g.Initializer<int64_t>("e", TensorProto::INT64, {1}, {1});
  g.Initializer<int64_t>("a", TensorProto::INT64, {1}, {2});
  g.Node("Slice", {"x", "s", "e", "a"}, {"y"});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportError(g, {"(Slice, opset 13)", "axis 2 is out of range for rank 2"});
  OnnxGraph h(13);
  h.Input("x", TensorProto::FLOAT, {2, 3}).Input("i", TensorProto::FLOAT, {2});
  h.Node("GatherElements", {"x", "i"}, {"y"});
  h.Output("y", TensorProto::FLOAT);
  ExpectImportError(h, {"(GatherElements, opset 13)", "argument 'indices' must be int32 or int64"});
}

}  // namespace
}  // namespace quilt::importers::onnx
