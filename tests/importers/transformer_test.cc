// Converters of the transformer category: each test builds a tiny ONNX graph and expects IR text.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {

using ::onnx::TensorProto;
using quilt::testing::ExpectImportError;
using quilt::testing::ExpectImportsTo;
using quilt::testing::OnnxGraph;
using quilt::testing::SetFloat;
using quilt::testing::SetInt;
using quilt::testing::SetString;

// The struct info of every output of main (a tuple when there are several).
std::vector<std::string> OutputTypes(const OnnxGraph& g) {
  Expected<ir::IRModule> mod = g.Import();
  EXPECT_TRUE(mod) << mod.error().ToString();
  if (!mod) return {};
  ir::StructInfo s = mod->Lookup("main")->body->body->struct_info;
  if (s->kind != ir::StructInfoKind::kTuple) return {ir::Describe(s)};
  std::vector<std::string> out;
  for (const ir::StructInfo& f : s->fields) out.push_back(ir::Describe(f));
  return out;
}

using Types = std::vector<std::string>;

TEST(TransformerImport, Attention4dMhaYOnly) {
  OnnxGraph g(23);
  g.Input("Q", TensorProto::FLOAT, {2, 3, 4, 8})
      .Input("K", TensorProto::FLOAT, {2, 3, 6, 8})
      .Input("V", TensorProto::FLOAT, {2, 3, 6, 10});
  g.Node("Attention", {"Q", "K", "V"}, {"Y"});
  g.Output("Y", TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(Q: R.Tensor((2, 3, 4, 8), "float32"), K: R.Tensor((2, 3, 6, 8), "float32"), V: R.Tensor((2, 3, 6, 10), "float32")) -> R.Tensor((2, 3, 4, 10), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["Y"]})
        Attention = R.nn.attention(Q, K, V, R.const([], "float32"), R.const([], "float32"), R.const([], "float32"), R.const([], "int64"))
        Y = Attention[0]
        return Y
)");
}

TEST(TransformerImport, Attention3dGqaWithPastPresentAndQk) {
  // Q: 9 heads of 8; K: 3 heads of 8; V: 3 heads of 10; 12 cached keys + 6 new = 18.
  OnnxGraph g(23);
  g.Input("Q", TensorProto::FLOAT, {2, 4, 72})
      .Input("K", TensorProto::FLOAT, {2, 6, 24})
      .Input("V", TensorProto::FLOAT, {2, 6, 30})
      .Input("mask", TensorProto::FLOAT, {4, 18})
      .Input("pk", TensorProto::FLOAT, {2, 3, 12, 8})
      .Input("pv", TensorProto::FLOAT, {2, 3, 12, 10});
  auto& n = g.Node("Attention", {"Q", "K", "V", "mask", "pk", "pv"}, {"Y", "pk2", "pv2", "qk"});
  SetInt(n, "q_num_heads", 9);
  SetInt(n, "kv_num_heads", 3);
  SetInt(n, "qk_matmul_output_mode", 2);
  SetFloat(n, "softcap", 2.0f);
  SetFloat(n, "scale", 0.01f);
  SetInt(n, "is_causal", 1);
  for (const char* o : {"Y", "pk2", "pv2", "qk"}) g.Output(o, TensorProto::FLOAT);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(Q: R.Tensor((2, 4, 72), "float32"), K: R.Tensor((2, 6, 24), "float32"), V: R.Tensor((2, 6, 30), "float32"), mask: R.Tensor((4, 18), "float32"), pk: R.Tensor((2, 3, 12, 8), "float32"), pv: R.Tensor((2, 3, 12, 10), "float32")) -> R.Tuple(R.Tensor((2, 4, 90), "float32"), R.Tensor((2, 3, 18, 8), "float32"), R.Tensor((2, 3, 18, 10), "float32"), R.Tensor((2, 9, 4, 18), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["Y", "pk2", "pv2", "qk"]})
        Attention = R.nn.attention(Q, K, V, mask, pk, pv, R.const([], "int64"), q_num_heads=9, kv_num_heads=3, scale=0.01, is_causal=True, softcap=2.0, qk_matmul_output_mode=2)
        Y = Attention[0]
        pk2 = Attention[1]
        pv2 = Attention[2]
        qk = Attention[3]
        outputs = (Y, pk2, pv2, qk)
        return outputs
)");
}

TEST(TransformerImport, AttentionSymbolicCacheLengths) {
  OnnxGraph g(24);
  g.Input("Q", TensorProto::FLOAT16, {"b", 4, "s", 16})
      .Input("K", TensorProto::FLOAT16, {"b", 2, "t", 16})
      .Input("V", TensorProto::FLOAT16, {"b", 2, "t", 16})
      .Input("pk", TensorProto::FLOAT16, {"b", 2, "p", 16})
      .Input("pv", TensorProto::FLOAT16, {"b", 2, "p", 16});
  g.Node("Attention", {"Q", "K", "V", "", "pk", "pv"}, {"Y", "pk2", "pv2", "qk"});
  for (const char* o : {"Y", "pk2", "pv2", "qk"}) g.Output(o, TensorProto::FLOAT16);
  EXPECT_EQ(OutputTypes(g), (Types{R"(R.Tensor((b, 4, s, 16), "float16"))",
                                   R"(R.Tensor((b, 2, p + t, 16), "float16"))",
                                   R"(R.Tensor((b, 2, p + t, 16), "float16"))",
                                   R"(R.Tensor((b, 4, s, p + t), "float16"))"}));
}

TEST(TransformerImport, AttentionOptionalOutputsAndNewerOpsets) {
  {
    // Only Y and qk_matmul_output; opset 24's nonpad_kv_seqlen.
    OnnxGraph g(24);
    g.Input("Q", TensorProto::FLOAT, {2, 4, 1, 8})
        .Input("K", TensorProto::FLOAT, {2, 2, 8, 8})
        .Input("V", TensorProto::FLOAT, {2, 2, 8, 8})
        .Input("mask", TensorProto::BOOL, {2, 1, 1, 6})
        .Input("n", TensorProto::INT64, {2});
    auto& node = g.Node("Attention", {"Q", "K", "V", "mask", "", "", "n"}, {"Y", "", "", "qk"});
    SetInt(node, "is_causal", 1);
    SetInt(node, "qk_matmul_output_mode", 3);
    SetInt(node, "softmax_precision", 11);
    g.Output("Y", TensorProto::FLOAT).Output("qk", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(Q: R.Tensor((2, 4, 1, 8), "float32"), K: R.Tensor((2, 2, 8, 8), "float32"), V: R.Tensor((2, 2, 8, 8), "float32"), mask: R.Tensor((2, 1, 1, 6), "bool"), n: R.Tensor((2,), "int64")) -> R.Tuple(R.Tensor((2, 4, 1, 8), "float32"), R.Tensor((2, 4, 1, 8), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["Y", "qk"]})
        Attention = R.nn.attention(Q, K, V, mask, R.const([], "float32"), R.const([], "float32"), n, is_causal=True, qk_matmul_output_mode=3, softmax_precision="float64")
        Y = Attention[0]
        qk = Attention[3]
        outputs = (Y, qk)
        return outputs
)");
  }
  {
    // Opset 25's sliding window; 3-D MQA with a value head size of its own.
    OnnxGraph g(25);
    g.Input("Q", TensorProto::BFLOAT16, {2, 4, 32})
        .Input("K", TensorProto::BFLOAT16, {2, 6, 8})
        .Input("V", TensorProto::BFLOAT16, {2, 6, 6});
    auto& node = g.Node("Attention", {"Q", "K", "V"}, {"Y"});
    SetInt(node, "q_num_heads", 4);
    SetInt(node, "kv_num_heads", 1);
    SetInt(node, "left_window_size", 2);
    SetInt(node, "right_window_size", 0);
    g.Output("Y", TensorProto::BFLOAT16);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(Q: R.Tensor((2, 4, 32), "bfloat16"), K: R.Tensor((2, 6, 8), "bfloat16"), V: R.Tensor((2, 6, 6), "bfloat16")) -> R.Tensor((2, 4, 24), "bfloat16"):
        R.func_attr({"global_symbol": "main", "output_names": ["Y"]})
        Attention = R.nn.attention(Q, K, V, R.const([], "float32"), R.const([], "float32"), R.const([], "float32"), R.const([], "int64"), q_num_heads=4, kv_num_heads=1, left_window_size=2, right_window_size=0)
        Y = Attention[0]
        return Y
)");
  }
  {
    // Opsets 23 and 24 accept head counts with 4-D inputs when they match the shapes.
    OnnxGraph g(23);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 3, 4})
        .Input("K", TensorProto::FLOAT, {1, 2, 3, 4})
        .Input("V", TensorProto::FLOAT, {1, 2, 3, 4});
    auto& node = g.Node("Attention", {"Q", "K", "V"}, {"Y"});
    SetInt(node, "q_num_heads", 2);
    SetInt(node, "kv_num_heads", 2);
    g.Output("Y", TensorProto::FLOAT);
    EXPECT_EQ(OutputTypes(g), (Types{R"(R.Tensor((1, 2, 3, 4), "float32"))"}));
  }
}

// A three-input Attention graph with the given shapes and attributes.
OnnxGraph AttentionGraph(int64_t opset, std::vector<quilt::testing::Dim> q,
                         std::vector<quilt::testing::Dim> k, std::vector<quilt::testing::Dim> v,
                         std::vector<std::pair<std::string, int64_t>> ints) {
  OnnxGraph g(opset);
  g.Input("Q", TensorProto::FLOAT, q).Input("K", TensorProto::FLOAT, k);
  g.Input("V", TensorProto::FLOAT, v);
  auto& n = g.Node("Attention", {"Q", "K", "V"}, {"Y"});
  for (const auto& [name, value] : ints) SetInt(n, name, value);
  g.Output("Y", TensorProto::FLOAT);
  return g;
}

TEST(TransformerImport, AttentionErrors) {
  ExpectImportError(AttentionGraph(23, {1, 2, 100}, {1, 2, 100}, {1, 2, 100},
                                   {{"q_num_heads", 8}, {"kv_num_heads", 4}}),
                    {"q_num_heads 8 does not divide the hidden size 100"});
  ExpectImportError(AttentionGraph(23, {1, 2, 24}, {1, 2, 24}, {1, 2, 24}, {}),
                    {"need the q_num_heads and kv_num_heads"});
  ExpectImportError(AttentionGraph(23, {1, 4, 2, 8}, {1, 3, 2, 8}, {1, 3, 2, 8}, {}),
                    {"4 heads are not a multiple", "3 heads"});
  ExpectImportError(AttentionGraph(23, {1, 2, 2, 8}, {1, 2, 2, 4}, {1, 2, 2, 8}, {}),
                    {"different head sizes", "8 vs 4"});
  ExpectImportError(AttentionGraph(23, {1, 2, 2, 8}, {1, 2, 3, 8}, {1, 2, 2, 8}, {}),
                    {"different sequence lengths"});
  ExpectImportError(AttentionGraph(23, {1, 2, 2, 8}, {1, 2, 2}, {1, 2, 2, 8}, {}), {"same rank"});
  ExpectImportError(AttentionGraph(25, {1, 2, 2, 8}, {1, 2, 2, 8}, {1, 2, 2, 8},
                                   {{"q_num_heads", 2}, {"kv_num_heads", 2}}),
                    {"must not be given with 4-D inputs"});
  ExpectImportError(
      AttentionGraph(23, {1, 2, 2, 8}, {1, 2, 2, 8}, {1, 2, 2, 8}, {{"q_num_heads", 4}}),
      {"q_num_heads 4 does not match Q's 2 heads"});
  ExpectImportError(
      AttentionGraph(23, {1, 2, 2, 8}, {1, 2, 2, 8}, {1, 2, 2, 8}, {{"qk_matmul_output_mode", 4}}),
      {"qk_matmul_output_mode must be 0, 1, 2 or 3"});
  ExpectImportError(
      AttentionGraph(25, {1, 2, 2, 8}, {1, 2, 2, 8}, {1, 2, 2, 8}, {{"left_window_size", -2}}),
      {"left_window_size must be -1 or non-negative"});
  ExpectImportError(
      AttentionGraph(23, {1, 2, 2, 8}, {1, 2, 2, 8}, {1, 2, 2, 8}, {{"softmax_precision", 7}}),
      {"softmax_precision must name a float type"});
  {
    OnnxGraph g(23);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 2, 8})
        .Input("K", TensorProto::FLOAT, {1, 2, 2, 8})
        .Input("V", TensorProto::FLOAT, {1, 2, 2, 8})
        .Input("pk", TensorProto::FLOAT, {1, 2, 3, 8});
    g.Node("Attention", {"Q", "K", "V", "", "pk"}, {"Y", "pk2"});
    g.Output("Y", TensorProto::FLOAT).Output("pk2", TensorProto::FLOAT);
    ExpectImportError(g, {"past_key and past_value must be given together"});
  }
  {
    // The mask may be shorter than the keys (padded), never longer; its other dims broadcast.
    OnnxGraph g(23);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 2, 8})
        .Input("K", TensorProto::FLOAT, {1, 2, 3, 8})
        .Input("V", TensorProto::FLOAT, {1, 2, 3, 8})
        .Input("m", TensorProto::FLOAT, {2, 4});
    g.Node("Attention", {"Q", "K", "V", "m"}, {"Y"});
    g.Output("Y", TensorProto::FLOAT);
    ExpectImportError(g, {"attn_mask covers 4 keys but there are only 3"});
  }
  {
    OnnxGraph g(23);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 2, 8})
        .Input("K", TensorProto::FLOAT, {1, 2, 3, 8})
        .Input("V", TensorProto::FLOAT, {1, 2, 3, 8})
        .Input("m", TensorProto::BOOL, {3, 2, 3});
    g.Node("Attention", {"Q", "K", "V", "m"}, {"Y"});
    g.Output("Y", TensorProto::FLOAT);
    ExpectImportError(g, {"attn_mask dim 0 is 3, expected 1 or the query head count 2"});
  }
  {
    OnnxGraph g(23);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 2, 8})
        .Input("K", TensorProto::FLOAT, {1, 2, 3, 8})
        .Input("V", TensorProto::FLOAT, {1, 2, 3, 8})
        .Input("n", TensorProto::INT64, {1});
    g.Node("Attention", {"Q", "K", "V", "", "", "", "n"}, {"Y"});
    g.Output("Y", TensorProto::FLOAT);
    ExpectImportError(g, {"nonpad_kv_seqlen (input 6) needs opset 24"});
  }
  {
    OnnxGraph g(23);
    g.Input("Q", TensorProto::INT32, {1, 2, 2, 8})
        .Input("K", TensorProto::INT32, {1, 2, 3, 8})
        .Input("V", TensorProto::INT32, {1, 2, 3, 8});
    g.Node("Attention", {"Q", "K", "V"}, {"Y"});
    g.Output("Y", TensorProto::INT32);
    ExpectImportError(g, {"query must be a float16, bfloat16, float32 or float64 tensor"});
  }
}

TEST(TransformerImport, RotaryEmbedding) {
  {
    OnnxGraph g(23);
    g.Input("x", TensorProto::FLOAT, {2, 4, 3, 8})
        .Input("cos", TensorProto::FLOAT, {50, 2})
        .Input("sin", TensorProto::FLOAT, {50, 2})
        .Input("pos", TensorProto::INT64, {2, 3});
    auto& n = g.Node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"});
    SetInt(n, "rotary_embedding_dim", 4);
    SetInt(n, "interleaved", 1);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4, 3, 8), "float32"), cos: R.Tensor((50, 2), "float32"), sin: R.Tensor((50, 2), "float32"), pos: R.Tensor((2, 3), "int64")) -> R.Tensor((2, 4, 3, 8), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.rotary_embedding(x, cos, sin, pos, rotary_embedding_dim=4, interleaved=True)
        return y
)");
  }
  {
    // 3-D data with num_heads; caches per (batch, position) without position_ids.
    OnnxGraph g(23);
    g.Input("x", TensorProto::FLOAT16, {2, 3, 32})
        .Input("cos", TensorProto::FLOAT16, {2, 3, 4})
        .Input("sin", TensorProto::FLOAT16, {2, 3, 4});
    auto& n = g.Node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"});
    SetInt(n, "num_heads", 4);
    g.Output("y", TensorProto::FLOAT16);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 32), "float16"), cos: R.Tensor((2, 3, 4), "float16"), sin: R.Tensor((2, 3, 4), "float16")) -> R.Tensor((2, 3, 32), "float16"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.rotary_embedding(x, cos, sin, R.const([], "int64"), num_heads=4)
        return y
)");
  }
  auto graph = [](std::vector<quilt::testing::Dim> x, std::vector<quilt::testing::Dim> cache,
                  std::vector<std::pair<std::string, int64_t>> ints) {
    OnnxGraph g(23);
    g.Input("x", TensorProto::FLOAT, x)
        .Input("cos", TensorProto::FLOAT, cache)
        .Input("sin", TensorProto::FLOAT, cache);
    auto& n = g.Node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"});
    for (const auto& [name, value] : ints) SetInt(n, name, value);
    g.Output("y", TensorProto::FLOAT);
    return g;
  };
  ExpectImportError(graph({2, 3, 30}, {2, 3, 4}, {{"num_heads", 4}}),
                    {"num_heads 4 does not divide the hidden size 30"});
  ExpectImportError(graph({2, 3, 32}, {2, 3, 4}, {}), {"3-D data needs num_heads"});
  ExpectImportError(graph({2, 4, 3, 8}, {2, 3, 4}, {{"rotary_embedding_dim", 3}}),
                    {"the rotated size 3 must be even"});
  ExpectImportError(graph({2, 4, 3, 8}, {2, 3, 4}, {{"rotary_embedding_dim", 10}}),
                    {"rotary_embedding_dim 10 is larger than the head size 8"});
  ExpectImportError(graph({2, 4, 3, 8}, {2, 3, 3}, {}),
                    {"cos_cache's last dim must be half the rotated size", "3 vs 4"});
  ExpectImportError(graph({2, 4, 3, 8}, {50, 4}, {}), {"cos_cache (without position_ids)"});
}

TEST(TransformerImport, SwiGLUAndTensorScatter) {
  {
    OnnxGraph g(28);
    g.Input("a", TensorProto::FLOAT, {2, 4}).Input("b", TensorProto::FLOAT, {2, 4});
    auto& n = g.Node("SwiGLU", {"a", "b"}, {"y"});
    SetFloat(n, "alpha", 0.5f);
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2, 4), "float32"), b: R.Tensor((2, 4), "float32")) -> R.Tensor((2, 4), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.nn.swiglu(a, b, alpha=0.5)
        return y
)");
  }
  {
    OnnxGraph g(28);
    g.Input("a", TensorProto::FLOAT, {2, 4}).Input("b", TensorProto::FLOAT, {1, 4});
    g.Node("SwiGLU", {"a", "b"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"no broadcasting", "2 vs 1"});
  }
  {
    OnnxGraph g(24);
    g.Input("c", TensorProto::FLOAT, {2, 1, 4, 5})
        .Input("u", TensorProto::FLOAT, {2, 1, 2, 5})
        .Input("w", TensorProto::INT64, {2});
    auto& n = g.Node("TensorScatter", {"c", "u", "w"}, {"y"});
    SetString(n, "mode", "circular");
    g.Output("y", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((2, 1, 4, 5), "float32"), u: R.Tensor((2, 1, 2, 5), "float32"), w: R.Tensor((2,), "int64")) -> R.Tensor((2, 1, 4, 5), "float32"):
        R.func_attr({"global_symbol": "main", "output_names": ["y"]})
        y = R.tensor_scatter(c, u, w, axis=2, mode="circular")
        return y
)");
  }
  {
    OnnxGraph g(24);
    g.Input("c", TensorProto::FLOAT, {3, 4, 5}).Input("u", TensorProto::FLOAT, {3, 6, 5});
    g.Node("TensorScatter", {"c", "u"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"update has 6 positions along axis 1 but past_cache has only 4"});
  }
  {
    OnnxGraph g(24);
    g.Input("c", TensorProto::FLOAT, {3, 4}).Input("u", TensorProto::FLOAT, {3, 4});
    g.Node("TensorScatter", {"c", "u"}, {"y"});
    g.Output("y", TensorProto::FLOAT);
    ExpectImportError(g, {"axis cannot be 0"});
  }
}

TEST(TransformerImport, LinearAttention) {
  {
    // GQA: 8 query heads of 8, 4 KV heads; per-head decay and beta; state in float32.
    OnnxGraph g(27);
    g.Input("q", TensorProto::FLOAT, {2, 4, 64})
        .Input("k", TensorProto::FLOAT, {2, 4, 32})
        .Input("v", TensorProto::FLOAT, {2, 4, 48})
        .Input("s", TensorProto::FLOAT, {2, 4, 8, 12})
        .Input("g", TensorProto::FLOAT, {2, 4, 4})
        .Input("beta", TensorProto::FLOAT, {2, 4, 1});
    auto& n = g.Node("LinearAttention", {"q", "k", "v", "s", "g", "beta"}, {"o", "s2"});
    SetInt(n, "q_num_heads", 8);
    SetInt(n, "kv_num_heads", 4);
    SetFloat(n, "scale", 0.25f);
    g.Output("o", TensorProto::FLOAT).Output("s2", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, 4, 64), "float32"), k: R.Tensor((2, 4, 32), "float32"), v: R.Tensor((2, 4, 48), "float32"), s: R.Tensor((2, 4, 8, 12), "float32"), g: R.Tensor((2, 4, 4), "float32"), beta: R.Tensor((2, 4, 1), "float32")) -> R.Tuple(R.Tensor((2, 4, 96), "float32"), R.Tensor((2, 4, 8, 12), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["o", "s2"]})
        LinearAttention = R.nn.linear_attention(q, k, v, s, g, beta, 8, 4, scale=0.25)
        o = LinearAttention[0]
        s2 = LinearAttention[1]
        outputs = (o, s2)
        return outputs
)");
  }
  auto graph = [](const std::string& rule, bool decay, bool beta) {
    OnnxGraph g(27);
    g.Input("q", TensorProto::FLOAT, {2, 1, 32})
        .Input("k", TensorProto::FLOAT, {2, 1, 32})
        .Input("v", TensorProto::FLOAT, {2, 1, 32})
        .Input("g", TensorProto::FLOAT, {2, 1, 32})
        .Input("beta", TensorProto::FLOAT, {2, 1, 4});
    auto& n = g.Node("LinearAttention", {"q", "k", "v", "", decay ? "g" : "", beta ? "beta" : ""},
                     {"o", "s2"});
    SetInt(n, "q_num_heads", 4);
    SetInt(n, "kv_num_heads", 4);
    SetString(n, "update_rule", rule);
    g.Output("o", TensorProto::FLOAT).Output("s2", TensorProto::FLOAT);
    return g;
  };
  EXPECT_EQ(OutputTypes(graph("linear", false, false)),
            (Types{R"(R.Tensor((2, 1, 32), "float32"))", R"(R.Tensor((2, 4, 8, 8), "float32"))"}));
  ExpectImportError(graph("gated_delta", false, true), {"'gated_delta' needs decay input"});
  ExpectImportError(graph("linear", false, true), {"'linear' takes no beta input"});
  ExpectImportError(graph("fast", false, false), {"update_rule must be linear, gated"});
}

TEST(TransformerImport, CausalConvWithState) {
  {
    OnnxGraph g(27);
    g.Input("x", TensorProto::FLOAT, {2, 4, 1})
        .Input("w", TensorProto::FLOAT, {4, 1, 4})
        .Input("s", TensorProto::FLOAT, {2, 4, 3});
    auto& n = g.Node("CausalConvWithState", {"x", "w", "", "s"}, {"y", "s2"});
    SetString(n, "activation", "swish");
    g.Output("y", TensorProto::FLOAT).Output("s2", TensorProto::FLOAT);
    ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4, 1), "float32"), w: R.Tensor((4, 1, 4), "float32"), s: R.Tensor((2, 4, 3), "float32")) -> R.Tuple(R.Tensor((2, 4, 1), "float32"), R.Tensor((2, 4, 3), "float32")):
        R.func_attr({"global_symbol": "main", "output_names": ["y", "s2"]})
        CausalConvWithState = R.nn.causal_conv_with_state(x, w, R.const([], "float32"), s, activation="silu")
        y = CausalConvWithState[0]
        s2 = CausalConvWithState[1]
        outputs = (y, s2)
        return outputs
)");
  }
  {
    OnnxGraph g(27);
    g.Input("x", TensorProto::FLOAT, {2, 4, 8})
        .Input("w", TensorProto::FLOAT, {4, 1, 4})
        .Input("s", TensorProto::FLOAT, {2, 4, 2});
    g.Node("CausalConvWithState", {"x", "w", "", "s"}, {"y", "s2"});
    g.Output("y", TensorProto::FLOAT).Output("s2", TensorProto::FLOAT);
    ExpectImportError(g, {"past_state must hold kernel size - 1 positions", "2 vs 3"});
  }
}

// A FlexAttention node (domain ai.onnx.preview, which the model imports at version 1) with a
// score_mod subgraph that adds `bias_type` scalar 0.5 to the scores, when `bias_type` is given;
// `cast_to` casts the result.
::onnx::NodeProto& FlexNode(OnnxGraph& g, std::optional<int32_t> bias_type,
                            std::optional<int32_t> cast_to = std::nullopt) {
  auto* op = g.model().add_opset_import();
  op->set_domain("ai.onnx.preview");
  op->set_version(1);
  auto& n = g.Node("FlexAttention", {"Q", "K", "V"}, {"Y"}, "flex");
  n.set_domain("ai.onnx.preview");
  if (!bias_type) return n;
  auto* a = n.add_attribute();
  a->set_name("score_mod");
  a->set_type(::onnx::AttributeProto::GRAPH);
  ::onnx::GraphProto* sub = a->mutable_g();
  sub->set_name("score_mod");
  sub->add_input()->set_name("scores");
  sub->add_output()->set_name("scores_out");
  ::onnx::TensorProto* bias = sub->add_initializer();
  bias->set_name("bias");
  bias->set_data_type(*bias_type);
  if (*bias_type == TensorProto::FLOAT) {
    bias->add_float_data(0.5f);
  } else {
    bias->add_double_data(0.5);
  }
  auto* add = sub->add_node();
  add->set_op_type("Add");
  add->add_input("scores");
  add->add_input("bias");
  add->add_output(cast_to ? "added" : "scores_out");
  if (cast_to) {
    auto* cast = sub->add_node();
    cast->set_op_type("Cast");
    cast->add_input("added");
    cast->add_output("scores_out");
    auto* to = cast->add_attribute();
    to->set_name("to");
    to->set_type(::onnx::AttributeProto::INT);
    to->set_i(*cast_to);
  }
  return n;
}

TEST(TransformerImport, FlexAttentionGqaFloat16WithScoreMod) {
  // Two query heads per KV head; float16 inputs: the softmax (and score_mod) run in float32.
  OnnxGraph g(26);
  g.Input("Q", TensorProto::FLOAT16, {1, 4, 3, 4})
      .Input("K", TensorProto::FLOAT16, {1, 2, 5, 4})
      .Input("V", TensorProto::FLOAT16, {1, 2, 5, 6});
  FlexNode(g, TensorProto::FLOAT);
  g.Output("Y", TensorProto::FLOAT16);
  ExpectImportsTo(g, R"(
@I.ir_module
class Module:
    @R.function
    def main(Q: R.Tensor((1, 4, 3, 4), "float16"), K: R.Tensor((1, 2, 5, 4), "float16"), V: R.Tensor((1, 2, 5, 6), "float16")) -> R.Tensor((1, 4, 3, 6), "float16"):
        R.func_attr({"global_symbol": "main", "output_names": ["Y"]})
        Y = R.multiply(Q, R.const_bytes("a839", (), "float16"))
        Y_1 = R.multiply(K, R.const_bytes("a839", (), "float16"))
        Y_2 = R.reshape(Y_1, R.shape([1, 2, 1, 5, 4]))
        Y_3 = R.broadcast_to(Y_2, R.shape([1, 2, 2, 5, 4]))
        Y_4 = R.reshape(Y_3, R.shape([1, 4, 5, 4]))
        Y_5 = R.reshape(V, R.shape([1, 2, 1, 5, 6]))
        Y_6 = R.broadcast_to(Y_5, R.shape([1, 2, 2, 5, 6]))
        Y_7 = R.reshape(Y_6, R.shape([1, 4, 5, 6]))
        Y_8 = R.permute_dims(Y_4, axes=[0, 1, 3, 2])
        Y_9 = R.matmul(Y, Y_8)
        Y_10 = R.astype(Y_9, "float32")
        scores_out = R.add(Y_10, R.const(0.5, "float32"))
        Y_11 = R.nn.softmax(scores_out)
        Y_12 = R.astype(Y_7, "float32")
        Y_13 = R.matmul(Y_11, Y_12)
        Y_14 = R.astype(Y_13, "float16")
        return Y_14
)");
}

TEST(TransformerImport, FlexAttentionErrors) {
  {
    // score_mod must keep the softmax dtype (float32 here).
    OnnxGraph g(26);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 3, 4})
        .Input("K", TensorProto::FLOAT, {1, 2, 5, 4})
        .Input("V", TensorProto::FLOAT, {1, 2, 5, 4});
    FlexNode(g, TensorProto::FLOAT, TensorProto::DOUBLE);
    g.Output("Y", TensorProto::FLOAT);
    ExpectImportError(
        g, {"node 'flex' (FlexAttention, opset 1)", "score_mod must return float32, got float64"});
  }
  {
    // An error inside score_mod names the subgraph's node.
    OnnxGraph g(26);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 3, 4})
        .Input("K", TensorProto::FLOAT, {1, 2, 5, 4})
        .Input("V", TensorProto::FLOAT, {1, 2, 5, 4});
    FlexNode(g, TensorProto::DOUBLE);
    g.Output("Y", TensorProto::FLOAT);
    ExpectImportError(
        g, {"node 'flex' (FlexAttention, opset 1): score_mod: node '(unnamed)' (Add, opset 26)",
            "dtypes differ: float32 and float64"});
  }
  {
    OnnxGraph g(26);
    g.Input("Q", TensorProto::FLOAT, {1, 3, 3, 4})
        .Input("K", TensorProto::FLOAT, {1, 2, 5, 4})
        .Input("V", TensorProto::FLOAT, {1, 2, 5, 4});
    FlexNode(g, std::nullopt);
    g.Output("Y", TensorProto::FLOAT);
    ExpectImportError(
        g, {"node 'flex' (FlexAttention, opset 1)", "Q's 3 heads are not a multiple of K's 2"});
  }
  {
    // The preview domain must be imported by the model.
    OnnxGraph g(26);
    g.Input("Q", TensorProto::FLOAT, {1, 2, 3, 4})
        .Input("K", TensorProto::FLOAT, {1, 2, 5, 4})
        .Input("V", TensorProto::FLOAT, {1, 2, 5, 4});
    g.Node("FlexAttention", {"Q", "K", "V"}, {"Y"}, "flex").set_domain("ai.onnx.preview");
    g.Output("Y", TensorProto::FLOAT);
    ExpectImportError(g, {"node 'flex': FlexAttention (domain 'ai.onnx.preview', opset 26)",
                          "the model does not import domain 'ai.onnx.preview'"});
  }
}

}  // namespace
}  // namespace quilt::importers::onnx
