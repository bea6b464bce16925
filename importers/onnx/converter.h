// What a converter sees and how it emits IR.
//
// One converter per ONNX op and opset range: the table entry with the largest `since` that is at
// most the model's opset is used. A converter reads the node through NodeContext (inputs as IR
// expressions, attributes with defaults, constant values of inputs) and emits calls through
// NodeContext::Emit, which builds them with the builder (struct info inferred) and binds each
// to a variable named after the ONNX value. It returns one expression per node output.
//
//   Expected<Outputs> ConvertRelu(NodeContext& ctx) {
//     return ctx.Single(ctx.Emit(ir::OpKind::kRelu, {ctx.Input(0)}));
//   }
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace quilt::importers::onnx {

using Outputs = std::vector<ir::Expr>;

// Integer element values of a small int tensor when the importer knows them (constants, Shape of
// a tensor with known dims, and arithmetic on those). Dims may be symbolic.
using KnownValues = std::vector<ir::PrimExpr>;

class GraphImporter;

class NodeContext {
 public:
  NodeContext(GraphImporter* g, const ::onnx::NodeProto& node, int64_t opset)
      : graph_(g), node_(node), opset_(opset) {}

  const ::onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  const std::string& op_type() const { return node_.op_type(); }

  // Inputs. An optional input left out (empty name or past the end) is absent.
  int NumInputs() const { return node_.input_size(); }
  bool HasInput(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  ir::Expr Input(int i) const;  // null when absent
  const ir::StructInfo& InputSInfo(int i) const { return Input(i)->struct_info; }
  // The constant behind input i, or null.
  const ir::ConstantNode* ConstantInput(int i) const;
  // Known integer values of input i (constant or propagated), or nullopt.
  std::optional<KnownValues> Known(int i) const;
  // Known values, all constant.
  std::optional<std::vector<int64_t>> KnownInts(int i) const;
  // Known float values of a constant float/double input.
  std::optional<std::vector<double>> ConstantFloats(int i) const;
  int NumOutputs() const { return node_.output_size(); }
  bool HasOutput(int i) const { return i < node_.output_size() && !node_.output(i).empty(); }
  // Input i, or an empty constant of `dtype` (shape [0]) when the model leaves it out: IR calls
  // have fixed arity, and rules and kernels read a 0-element tensor as absent.
  Expected<ir::Expr> InputOrEmpty(int i, ir::DataType dtype);

  // Attributes (with the declared type checked; a mistyped attribute is a diagnostic).
  const ::onnx::AttributeProto* Attr(const std::string& name) const;
  Expected<int64_t> Int(const std::string& name,
                        std::optional<int64_t> fallback = std::nullopt) const;
  Expected<double> Float(const std::string& name,
                         std::optional<double> fallback = std::nullopt) const;
  Expected<std::string> String(const std::string& name,
                               std::optional<std::string> fallback = std::nullopt) const;
  Expected<std::vector<int64_t>> Ints(
      const std::string& name, std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  Expected<std::vector<double>> Floats(
      const std::string& name, std::optional<std::vector<double>> fallback = std::nullopt) const;

  // Emitting: a call of `op`, bound to a new variable (named after output `output`).
  Expected<ir::Expr> Emit(ir::OpKind op, std::vector<ir::Expr> args, ir::Attrs attrs = {},
                          int output = 0);
  // Binds an already built expression (tuple, tuple item, ...).
  ir::Expr Bind(ir::Expr value, int output = 0);
  // A constant; not bound (constants are used in place).
  Expected<ir::Expr> Const(ir::DataType dtype, std::vector<int64_t> shape, const void* data);
  Expected<ir::Expr> ScalarConst(ir::DataType dtype, double value);
  // Records known integer values of output `output` (for shape computations).
  void SetKnown(int output, KnownValues values);

  // A diagnostic about this node: "node 'name' (OpType, opset N): message".
  Diagnostic Error(const std::string& message) const;
  // Wraps a single result.
  static Expected<Outputs> Single(Expected<ir::Expr> e) {
    if (!e) return e.error();
    return Outputs{*e};
  }

  GraphImporter* graph() const { return graph_; }

 private:
  GraphImporter* graph_;
  const ::onnx::NodeProto& node_;
  int64_t opset_;
};

// ONNX float attributes are float32: the shortest decimal that reads back as the same float32
// (0.01f gives 0.01, not 0.009999999776), so the IR prints what the model's author wrote.
double ShortestFloat32(double v);

using ConvertFn = Expected<Outputs> (*)(NodeContext& ctx);

struct Converter {
  const char* op_type;
  int since;  // first opset version (of its domain) this converter handles
  ConvertFn fn;
  const char* domain = "";  // "" for the default domain (ai.onnx)
};

// Categories, one file each (importers/onnx/ops_*.cc); converters.cc lists them.
extern const std::vector<Converter> kElementwiseConverters;  // ops_elementwise.cc
extern const std::vector<Converter> kNnConverters;           // ops_nn.cc
extern const std::vector<Converter> kTensorConverters;       // ops_tensor.cc
extern const std::vector<Converter> kReduceConverters;       // ops_reduce.cc
extern const std::vector<Converter> kLinalgConverters;       // ops_linalg.cc
extern const std::vector<Converter> kImageConverters;        // ops_image.cc
extern const std::vector<Converter> kControlConverters;      // ops_control.cc
extern const std::vector<Converter> kQuantizeConverters;     // ops_quantize.cc
extern const std::vector<Converter> kTransformerConverters;  // ops_transformer.cc
extern const std::vector<Converter> kRecurrentConverters;    // ops_recurrent.cc
extern const std::vector<Converter> kSignalConverters;       // ops_signal.cc

// The converter for (op_type, opset) in `domain` ("" or "ai.onnx": the default one), or null.
const Converter* FindConverter(const std::string& op_type, int64_t opset,
                               const std::string& domain = "");
// Every op type with a converter (for messages and coverage reports); ops of other domains than
// the default one are named "domain.op_type".
std::vector<std::string> SupportedOpTypes();

// Ops deliberately left out, with the reason reported to the user (empty when not left out).
std::string LeftOutReason(const std::string& domain, const std::string& op_type);

}  // namespace quilt::importers::onnx
