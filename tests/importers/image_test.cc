// Converters of image and detection ops and of control flow.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::OnnxGraph;
using quilt::testing::SetInt;
using quilt::testing::SetInts;
using quilt::testing::SetString;

// An empty graph attribute `name` on `n` (an If branch, a Scan body), filled in by the caller.
::onnx::GraphProto& SetGraph(::onnx::NodeProto& n, const std::string& name) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return *a->mutable_g();
}

void AddNode(::onnx::GraphProto& g, const std::string& op, std::vector<std::string> in,
             std::vector<std::string> out) {
  auto* n = g.add_node();
  n->set_op_type(op);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
}

// A float tensor value of static `dims` (an input or output of a subgraph).
void AddValue(::google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* list,
              const std::string& name, std::vector<int64_t> dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

TEST(ImageImport, ImageDecoderGivesRunTimeHeightAndWidth) {
  OnnxGraph g(20);
  g.Input("data", TensorProto::UINT8, {"n"});
  SetString(g.Node("ImageDecoder", {"data"}, {"image"}), "pixel_format", "Grayscale");
  g.Output("image", TensorProto::UINT8);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(data: R.Tensor(("n",), "uint8")) -> R.Tensor(("height", "width", 1), "uint8"):
        n = T.int64()
        height = T.int64()
        width = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["image"]})
        image: R.Tensor((height, width, 1), "uint8") = R.image.decode(data, pixel_format="Grayscale")
        return image
)");
  OnnxGraph bad(20);
  bad.Input("data", TensorProto::UINT8, {"n"});
  SetString(bad.Node("ImageDecoder", {"data"}, {"image"}, "dec"), "pixel_format", "CMYK");
  bad.Output("image", TensorProto::UINT8);
  ExpectImportError(bad, {"node 'dec' (ImageDecoder, opset 20)", "pixel_format must be RGB"});
}

// Resize to sizes an exporter computes from two tensors' dims (N and C of the data, H and W of
// another tensor): the sizes are known by their symbols, given to the op as a shape, and the
// result's shape is known (not only its rank), so what reads it keeps its channels.
TEST(ImageImport, ResizeToSizesKnownByTheirSymbolsHasAKnownShape) {
  OnnxGraph g(13);
  g.Input("x", TensorProto::FLOAT, {"n", 4, "h", "w"});
  g.Input("ref", TensorProto::FLOAT, {"n", 8, "h2", "w2"});
  quilt::testing::AddResizeToHeightAndWidthOfRef(g);
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(
        x: R.Tensor(("n", 4, "h", "w"), "float32"),
        ref: R.Tensor(("n", 8, "h2", "w2"), "float32"),
    ) -> R.Tensor(("n", 4, "h2", "w2"), "float32"):
        n = T.int64()
        h = T.int64()
        w = T.int64()
        h2 = T.int64()
        w2 = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        sx: R.Shape([n, 4, h, w]) = R.shape_of(x)
        sx_1: R.Tensor((4,), "int64") = R.shape_to_tensor(sx)
        sr: R.Shape([n, 8, h2, w2]) = R.shape_of(ref)
        sr_1: R.Tensor((4,), "int64") = R.shape_to_tensor(sr)
        nc: R.Tensor((2,), "int64") = R.strided_slice(sx_1, [0], [0], [2], [1])
        hw: R.Tensor((2,), "int64") = R.strided_slice(sr_1, [0], [2], [4], [1])
        sizes: R.Tensor((4,), "int64") = R.concat((nc, hw))
        y: R.Tensor((n, 4, h2, w2), "float32") = R.image.resize(x, R.const([], "float32"), R.const([], "float32"), R.shape([n, 4, h2, w2]))
        return y
)");
}

TEST(ControlImport, IfWithAKnownConditionImportsTheTakenBranchInLine) {
  // The rank test of ONNX function bodies: Size(shape) == 2 is known, so only one branch stays.
  OnnxGraph g(17);
  g.Input("x", TensorProto::FLOAT, {2, 3});
  g.Initializer<int64_t>("shape", TensorProto::INT64, {2}, {3, 2});
  g.Initializer<int64_t>("two", TensorProto::INT64, {}, {2});
  g.Node("Size", {"shape"}, {"rank"});
  g.Node("Equal", {"rank", "two"}, {"is_2d"});
  auto& n = g.Node("If", {"is_2d"}, {"y"});
  auto& then_branch = SetGraph(n, "then_branch");
  AddNode(then_branch, "Reshape", {"x", "shape"}, {"y_then"});
  AddValue(then_branch.mutable_output(), "y_then", {});
  auto& else_branch = SetGraph(n, "else_branch");
  AddNode(else_branch, "NoSuchOp", {"x"}, {"y_else"});
  AddValue(else_branch.mutable_output(), "y_else", {});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((3, 2), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        is_2d: R.Tensor((), "bool") = R.equal(R.const(2, "int64"), R.const(2, "int64"))
        y_then: R.Tensor((3, 2), "float32") = R.reshape(x, R.shape([3, 2]))
        return y_then
)");
}

TEST(ControlImport, IfWithARunTimeConditionKeepsBothBranches) {
  OnnxGraph g(17);
  g.Input("c", TensorProto::BOOL, {}).Input("x", TensorProto::FLOAT, {4});
  auto& n = g.Node("If", {"c"}, {"y"});
  auto& then_branch = SetGraph(n, "then_branch");
  AddNode(then_branch, "Relu", {"x"}, {"y_then"});
  AddValue(then_branch.mutable_output(), "y_then", {});
  auto& else_branch = SetGraph(n, "else_branch");
  AddNode(else_branch, "Neg", {"x"}, {"y_else"});
  AddValue(else_branch.mutable_output(), "y_else", {});
  g.Output("y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        if c:
            y_then: R.Tensor((4,), "float32") = R.nn.relu(x)
            y = y_then
        else:
            y_else: R.Tensor((4,), "float32") = R.negative(x)
            y = y_else
        return y
)");
}

TEST(ControlImport, Scan8RunsTheScanOfEachBatchEntry) {
  // Scan-8: states (batch, 2), scan input (batch, seq, 2) along axis 1.
  OnnxGraph g(8);
  g.Input("init", TensorProto::FLOAT, {"b", 2}).Input("x", TensorProto::FLOAT, {"b", 5, 2});
  auto& n = g.Node("Scan", {"", "init", "x"}, {"final", "ys"});
  SetInt(n, "num_scan_inputs", 1);
  SetInts(n, "directions", {1});
  auto& body = SetGraph(n, "body");
  AddValue(body.mutable_input(), "acc", {2});
  AddValue(body.mutable_input(), "step", {2});
  AddNode(body, "Add", {"acc", "step"}, {"acc_out"});
  AddNode(body, "Identity", {"acc_out"}, {"y"});
  AddValue(body.mutable_output(), "acc_out", {2});
  AddValue(body.mutable_output(), "y", {2});
  g.Output("final", TensorProto::FLOAT).Output("ys", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(init: R.Tensor(("b", 2), "float32"), x: R.Tensor(("b", 5, 2), "float32")) -> R.Tuple(R.Tensor(("b", 2), "float32"), R.Tensor(("b", 5, 2), "float32")):
        b = T.int64()
        R.func_attr({"global_symbol": "main", "output_names": ["final", "ys"]})
        final: R.Tuple(R.Tensor((b, 2), "float32"), R.Tensor((b, 5, 2), "float32")) = R.scan(cls.Scan_1_batch_1, (), (init, x), (), [0, 0], [0, 0], [0, 0], [0, 0])
        final_1: R.Tensor((b, 2), "float32") = final[0]
        ys: R.Tensor((b, 5, 2), "float32") = final[1]
        outputs = (final_1, ys)
        return outputs

    @R.function
    def Scan_1_body_0(acc: R.Tensor((2,), "float32"), step: R.Tensor((2,), "float32")) -> R.Tuple(R.Tensor((2,), "float32"), R.Tensor((2,), "float32")):
        acc_out: R.Tensor((2,), "float32") = R.add(acc, step)
        return (acc_out, acc_out)

    @R.function
    def Scan_1_batch_1(state: R.Tensor((2,), "float32"), scan_input: R.Tensor((5, 2), "float32")) -> R.Tuple(R.Tensor((2,), "float32"), R.Tensor((5, 2), "float32")):
        entry: R.Tuple(R.Tensor((2,), "float32"), R.Tensor((5, 2), "float32")) = R.scan(cls.Scan_1_body_0, (state,), (scan_input,), (), [0], [1], [0], [0])
        return entry
)");
  // Per-entry lengths shorter than the sequence are not supported.
  OnnxGraph s(8);
  s.Input("lens", TensorProto::INT64, {"b"})
      .Input("init", TensorProto::FLOAT, {"b", 2})
      .Input("x", TensorProto::FLOAT, {"b", 5, 2});
  auto& m = s.Node("Scan", {"lens", "init", "x"}, {"final", "ys"}, "scan");
  SetInt(m, "num_scan_inputs", 1);
  *SetGraph(m, "body").mutable_input() = body.input();
  s.Output("final", TensorProto::FLOAT).Output("ys", TensorProto::FLOAT);
  ExpectImportError(s, {"node 'scan' (Scan, opset 8)", "sequence_lens shorter than the sequence"});
}

}  // namespace
}  // namespace quilt::importers::onnx
