// GraphImporter: one ONNX graph -> one IR function, node by node in topological order.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "importers/onnx/converter.h"
#include "importers/onnx/importer.h"

namespace quilt::importers::onnx {

struct ModelContext {
  std::string name;                       // for messages: the model file
  std::string model_dir;                  // external data root; empty: none allowed
  int64_t opset = 0;                      // default domain
  std::map<std::string, int64_t> opsets;  // by domain
  // Model-local functions by (domain, name).
  std::map<std::pair<std::string, std::string>, const ::onnx::FunctionProto*> functions;
  ImportOptions options;
  // Functions lifted out of the graph (Loop and Scan bodies), added to the module after main.
  std::vector<std::pair<std::string, ir::Function>>* lifted = nullptr;
  // Nodes inlined from model-local functions so far (ImportOptions::max_inlined_nodes).
  std::shared_ptr<int64_t> inlined_nodes = std::make_shared<int64_t>(0);
};

// The model's size against ImportOptions::max_model_bytes (checked before a file is read).
bool CheckModelSize(uint64_t size, const ImportOptions& options, Diagnostic* error);
// The protobuf of a model, its messages nested at most as deep as ImportOptions::max_nesting
// allows (one that parses only with more room is named as too deep).
bool ParseOnnxModel(const void* data, size_t size, const ImportOptions& options,
                    ::onnx::ModelProto* model, Diagnostic* error);

struct UnsupportedNode {
  std::string node_name, op_type, domain;
  int64_t opset;
  std::string reason;
};

class GraphImporter {
 public:
  explicit GraphImporter(const ModelContext& model, const GraphImporter* parent = nullptr,
                         int depth = 0)
      : model_(model), parent_(parent), depth_(depth) {}

  Expected<ir::Function> ImportMain(const ::onnx::GraphProto& graph);

  // A subgraph (If branch, Loop or Scan body) in a scope of its own that reads this graph's
  // values. `inputs` bind the subgraph's inputs in order. The result is a SeqExpr whose body is
  // the single output or a tuple of the outputs.
  // `known`, when given, receives the known values of each output (nullopt where none).
  Expected<ir::SeqExpr> ImportSubgraph(
      const ::onnx::GraphProto& graph, const std::vector<ir::Expr>& inputs, const std::string& what,
      std::vector<std::optional<KnownValues>>* known = nullptr) const;
  // Moves a subgraph's bindings into this graph (a branch taken at import time, a modifier
  // subgraph applied in line); the subgraph read this graph's values, so its bindings fit here.
  void InlineBindings(const ir::SeqExpr& seq);

  // For NodeContext.
  ir::Expr Lookup(const std::string& name) const;
  std::optional<KnownValues> Known(const std::string& name) const;
  void SetKnown(const std::string& name, KnownValues values) { known_[name] = std::move(values); }
  ir::Expr Bind(ir::Expr value, const std::string& onnx_name, const std::string& source);
  // The value this graph bound variable `var` to (null: a parameter, a constant, a variable of
  // an enclosing graph).
  ir::Expr BoundValue(const ir::Expr& var) const;
  // The node being converted: its name, or "OpType#index" for an unnamed node.
  const std::string& current_source() const { return current_source_; }
  const ModelContext& model() const { return model_; }

 private:
  // `d`, with a hint naming the main graph's inputs whose dims are open, where `d` says a shape
  // or rank must be known.
  Diagnostic WithOpenDimsHint(const ::onnx::GraphProto& graph, Diagnostic d) const;
  Status DeclareInputs(const ::onnx::GraphProto& graph);
  Expected<ir::StructInfo> ValueInfoSInfo(const ::onnx::ValueInfoProto& v, const std::string& what);
  Expected<std::vector<int>> TopologicalOrder(const ::onnx::GraphProto& graph);
  Status ImportNode(const ::onnx::NodeProto& node, int index, int depth);
  Status InlineFunction(const ::onnx::NodeProto& node, const ::onnx::FunctionProto& f, int depth);
  Status CheckOutput(const ::onnx::ValueInfoProto& out, const ir::Expr& value);
  ir::Expr ElideNoop(const NodeContext& ctx, const ir::Expr& out) const;
  std::string NodeName(const ::onnx::NodeProto& node, int index) const;

  const ModelContext& model_;
  const GraphImporter* parent_;
  int depth_;
  std::vector<ir::Var> params_;
  std::vector<ir::Expr> defaults_;
  std::map<std::string, ir::Expr> values_;
  std::map<std::string, KnownValues> known_;
  std::map<std::string, ir::PrimExpr> dim_params_;
  std::set<std::string> poisoned_;  // outputs of unsupported nodes
  std::vector<UnsupportedNode> unsupported_;
  std::vector<ir::Binding> bindings_;
  std::unordered_map<const ir::VarNode*, ir::Expr> bound_;  // what each binding's var is bound to
  std::set<std::string> main_outputs_;                      // the main graph's output names
  std::string current_source_;
  std::string current_op_;
  int inline_counter_ = 0;
};

// An identifier for printing made from an ONNX value name.
std::string SanitizeName(const std::string& name);

// Formats the one message that lists every unsupported node.
std::string UnsupportedMessage(const std::vector<UnsupportedNode>& nodes);

}  // namespace quilt::importers::onnx
