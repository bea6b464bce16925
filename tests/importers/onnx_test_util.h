// Builds tiny ONNX models in a test, imports them, and compares with expected IR text.
//
//   OnnxGraph g(17);
//   g.Input("x", onnx::TensorProto::FLOAT, {2, "n"});
//   auto& n = g.Node("Softmax", {"x"}, {"y"});
//   SetInt(n, "axis", 0);
//   g.Output("y", onnx::TensorProto::FLOAT);
//   Expected<ir::IRModule> mod = g.Import();
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <variant>
#include <vector>

#include "importers/onnx/importer.h"
#include "tests/test_util.h"

namespace quilt::testing {

using Dim = std::variant<int64_t, std::string>;

class OnnxGraph {
 public:
  explicit OnnxGraph(int64_t opset = 17, int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("quilt-test");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph()->set_name("test");
  }

  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }

  // dims: integers, or names for symbolic dims ("" leaves the dim unset).
  OnnxGraph& Input(const std::string& name, int32_t elem_type, std::vector<Dim> dims) {
    SetType(graph()->add_input(), name, elem_type, &dims);
    return *this;
  }
  OnnxGraph& Output(const std::string& name, int32_t elem_type,
                    std::optional<std::vector<Dim>> dims = std::nullopt) {
    SetType(graph()->add_output(), name, elem_type, dims ? &*dims : nullptr);
    return *this;
  }
  template <typename T>
  OnnxGraph& Initializer(const std::string& name, int32_t elem_type, std::vector<int64_t> dims,
                         const std::vector<T>& values) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem_type);
    for (int64_t d : dims) t->add_dims(d);
    if constexpr (std::is_same_v<T, bool>) {
      std::string bytes;
      for (bool v : values) bytes.push_back(v ? 1 : 0);
      t->set_raw_data(bytes);
    } else {
      t->set_raw_data(
          std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
    }
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op_type, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op_type);
    n->set_name(name.empty() ? op_type + "_" + std::to_string(graph()->node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  std::string Bytes() const { return model_.SerializeAsString(); }

  Expected<ir::IRModule> Import(const importers::onnx::ImportOptions& options = {}) const {
    std::string bytes = Bytes();
    Expected<ir::IRModule> mod =
        importers::onnx::ImportOnnxBytes(bytes.data(), bytes.size(), "", "test.onnx", options);
    if (mod) {
      Status v = ir::Verify(*mod);
      EXPECT_TRUE(v.ok()) << (v ? "" : v.error().ToString());
    }
    return mod;
  }

 private:
  static void SetType(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
                      const std::vector<Dim>* dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    if (!dims) return;
    auto* shape = tt->mutable_shape();
    for (const Dim& d : *dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<int64_t>(d)) {
        dim->set_dim_value(std::get<int64_t>(d));
      } else if (!std::get<std::string>(d).empty()) {
        dim->set_dim_param(std::get<std::string>(d));
      }
    }
  }

  onnx::ModelProto model_;
};

// A subgraph attribute (a Loop's body, an If's branch).
inline void SetGraph(onnx::NodeProto& n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

// A Loop body y <- y + 1: (iteration count, condition, y_in) -> (condition, y_out).
inline OnnxGraph CountingLoopBody() {
  OnnxGraph body(13);
  body.Input("i", onnx::TensorProto::INT64, {}).Input("c", onnx::TensorProto::BOOL, {});
  body.Input("y_in", onnx::TensorProto::FLOAT, {1});
  body.Initializer<float>("one", onnx::TensorProto::FLOAT, {1}, {1.0f});
  body.Node("Identity", {"c"}, {"c_out"}, "keep");
  body.Node("Add", {"y_in", "one"}, {"y_out"}, "step");
  body.Output("c_out", onnx::TensorProto::BOOL, std::vector<Dim>{});
  body.Output("y_out", onnx::TensorProto::FLOAT, std::vector<Dim>{1});
  return body;
}

// Adds a Loop node `name` over `body` to `g`: trip count `n`, condition "go", carried `y`, result
// `out`.
inline void AddLoop(OnnxGraph& g, OnnxGraph body, const std::string& n, const std::string& y,
                    const std::string& out, const std::string& name) {
  SetGraph(g.Node("Loop", {n, "go", y}, {out}, name), "body", *body.graph());
}

// res = y + n: a Loop ("count") whose trip count n and condition go are inputs, as is y.
inline OnnxGraph CountingLoop() {
  OnnxGraph g(13);
  g.Input("n", onnx::TensorProto::INT64, {}).Input("go", onnx::TensorProto::BOOL, {});
  g.Input("y", onnx::TensorProto::FLOAT, {1});
  AddLoop(g, CountingLoopBody(), "n", "y", "res", "count");
  g.Output("res", onnx::TensorProto::FLOAT);
  return g;
}

inline void SetInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void SetFloat(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void SetString(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void SetInts(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void SetFloats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

// A nearest Resize `name` of "x" to the batch and channels of "x" and the height and width of
// "ref", its sizes computed as exporters compute them: sizes = Concat(Slice(Shape(x), 0, 2),
// Slice(Shape(ref), 2, 4)); result "y". The graph's inputs are the caller's.
inline void AddResizeToHeightAndWidthOfRef(OnnxGraph& g, const std::string& name = "") {
  g.Initializer<int64_t>("b0", onnx::TensorProto::INT64, {1}, {0});
  g.Initializer<int64_t>("b2", onnx::TensorProto::INT64, {1}, {2});
  g.Initializer<int64_t>("b4", onnx::TensorProto::INT64, {1}, {4});
  g.Node("Shape", {"x"}, {"sx"});
  g.Node("Shape", {"ref"}, {"sr"});
  g.Node("Slice", {"sx", "b0", "b2"}, {"nc"});
  g.Node("Slice", {"sr", "b2", "b4"}, {"hw"});
  SetInt(g.Node("Concat", {"nc", "hw"}, {"sizes"}), "axis", 0);
  SetString(g.Node("Resize", {"x", "", "", "sizes"}, {"y"}, name), "mode", "nearest");
}

// The struct info of the imported module's result (for checks that need no IR text).
inline ir::StructInfo ImportedResult(const OnnxGraph& g) {
  Expected<ir::IRModule> mod = g.Import();
  EXPECT_TRUE(mod) << mod.error().ToString();
  if (!mod) return nullptr;
  return mod->Lookup("main")->ret_struct_info;
}

// Imports `g` and expects the module of `expected_ir` (structural equality, diff on failure).
inline void ExpectImportsTo(const OnnxGraph& g, const std::string& expected_ir,
                            const importers::onnx::ImportOptions& options = {}) {
  Expected<ir::IRModule> got = g.Import(options);
  ASSERT_TRUE(got) << got.error().ToString();
  ir::IRModule want = Parse(expected_ir);
  EXPECT_TRUE(ModulesEqual(*got, want));
}

// Imports `g` and expects a diagnostic containing every one of `parts`.
inline void ExpectImportError(const OnnxGraph& g, const std::vector<std::string>& parts,
                              const importers::onnx::ImportOptions& options = {}) {
  Expected<ir::IRModule> got = g.Import(options);
  ASSERT_FALSE(got) << "expected an import error, got:\n" << ir::PrintModule(*got);
  std::string msg = got.error().ToString();
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

}  // namespace quilt::testing
