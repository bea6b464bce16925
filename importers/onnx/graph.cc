// GraphImporter, in stages:
//  1. Graph inputs become parameters (an input that is also an initializer keeps the
//     initializer as its default); initializers become constants; dim_param names become one
//     symbolic dimension shared by every tensor that names it, a missing dim a fresh one.
//  2. Nodes are checked (every input produced, one producer per name, no cycles) and visited in
//     topological order. Each is converted by its table entry, or inlined when it calls a
//     model-local function. An unsupported node is recorded and its outputs poisoned, so the
//     import goes on and every unsupported op is reported together.
//  3. The outputs are checked against their declared types and returned.
#include "importers/onnx/graph.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "importers/onnx/known_values.h"
#include "importers/onnx/schema_check.h"
#include "importers/onnx/tensor.h"
#include "ir/op_infer.h"

namespace quilt::importers::onnx {
namespace {

// An identifier for printing: runs of other characters become one '_', none at either end.
std::string Sanitize(const std::string& name) {
  std::string s;
  bool pending = false;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      if (pending && !s.empty()) s.push_back('_');
      pending = false;
      s.push_back(c);
    } else {
      pending = true;
    }
  }
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s.insert(s.begin(), 'v');
  return s;
}

// The elements of a small integer or bool constant (of any rank, row-major).
std::optional<KnownValues> KnownFromConstant(const ir::ConstantNode& c) {
  if (c.NumElements() > kMaxKnownElements) return std::nullopt;
  KnownValues v;
  auto read = [&]<typename T>(T) {
    for (int64_t i = 0; i < c.NumElements(); ++i) {
      T x;
      std::memcpy(&x, c.data->data() + sizeof(T) * i, sizeof(T));
      v.push_back(ir::IntImm(static_cast<int64_t>(x)));
    }
  };
  switch (c.dtype) {
    case ir::DataType::kInt64:
      read(int64_t{});
      break;
    case ir::DataType::kInt32:
      read(int32_t{});
      break;
    case ir::DataType::kInt16:
      read(int16_t{});
      break;
    case ir::DataType::kInt8:
      read(int8_t{});
      break;
    case ir::DataType::kUInt32:
      read(uint32_t{});
      break;
    case ir::DataType::kUInt16:
      read(uint16_t{});
      break;
    case ir::DataType::kUInt8:
      read(uint8_t{});
      break;
    case ir::DataType::kBool:
      read(uint8_t{});
      break;
    default:
      return std::nullopt;
  }
  return v;
}

// A value given as numbers (`--input-value sr=16000`) in the input's declared dtype and shape:
// the declared shape when it is static, else a scalar for one number, else a vector.
Expected<InputValue> NumbersAsDeclared(const InputValue& v, const ir::StructInfoNode& declared) {
  if (v.dtype != ir::DataType::kVoid) return v;
  InputValue out;
  out.dtype = declared.dtype;
  int64_t n = static_cast<int64_t>(v.numbers.size());
  if (std::optional<std::vector<int64_t>> st = declared.StaticShape()) {
    std::optional<int64_t> want = ir::ElementCount(*st);
    if (want != n) {
      return Error("the input has " + (want ? std::to_string(*want) : std::string("too many")) +
                   " elements, " + std::to_string(n) + " value" + (n == 1 ? "" : "s") + " given");
    }
    out.shape = *st;
  } else if (n != 1 || declared.ndim > 0) {
    out.shape = {n};
  }
  auto put = [&]<typename T>(T) {
    for (double x : v.numbers) {
      T e = static_cast<T>(x);
      if (static_cast<double>(e) != x && !std::is_floating_point_v<T>) {
        return Error("value " + std::to_string(x) + " is not a " +
                     std::string(ir::DataTypeName(out.dtype)));
      }
      const auto* b = reinterpret_cast<const uint8_t*>(&e);
      out.bytes.insert(out.bytes.end(), b, b + sizeof(T));
    }
    return Diagnostic{};
  };
  Diagnostic bad;
  switch (declared.dtype) {
    case ir::DataType::kFloat32:
      bad = put(float{});
      break;
    case ir::DataType::kFloat64:
      bad = put(double{});
      break;
    case ir::DataType::kInt64:
      bad = put(int64_t{});
      break;
    case ir::DataType::kInt32:
      bad = put(int32_t{});
      break;
    case ir::DataType::kInt16:
      bad = put(int16_t{});
      break;
    case ir::DataType::kInt8:
      bad = put(int8_t{});
      break;
    case ir::DataType::kUInt8:
      bad = put(uint8_t{});
      break;
    case ir::DataType::kBool:
      bad = put(uint8_t{});
      break;
    default:
      return Error("values can be given for float32, float64, integer and bool inputs, not " +
                   std::string(ir::DataTypeName(declared.dtype)));
  }
  if (!bad.message.empty()) return bad;
  return out;
}

}  // namespace

std::string SanitizeName(const std::string& name) { return Sanitize(name); }

std::string UnsupportedMessage(const std::vector<UnsupportedNode>& nodes) {
  std::string s =
      std::to_string(nodes.size()) + " unsupported node" + (nodes.size() == 1 ? "" : "s") + ":";
  for (const UnsupportedNode& n : nodes) {
    s += "\n  node '" + n.node_name + "': " + n.op_type + " (domain '" +
         (n.domain.empty() ? "ai.onnx" : n.domain) + "', opset " + std::to_string(n.opset) + ")";
    if (!n.reason.empty()) s += ": " + n.reason;
  }
  return s;
}

ir::Expr GraphImporter::Lookup(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  return parent_ ? parent_->Lookup(name) : nullptr;
}

std::optional<KnownValues> GraphImporter::Known(const std::string& name) const {
  if (auto it = known_.find(name); it != known_.end()) return it->second;
  if (!values_.count(name) && parent_) return parent_->Known(name);
  ir::Expr e = Lookup(name);
  if (const auto* c = ir::As<ir::ConstantNode>(e)) return KnownFromConstant(*c);
  return std::nullopt;
}

ir::Expr GraphImporter::Bind(ir::Expr value, const std::string& onnx_name,
                             const std::string& source) {
  // Constants and variables are used in place: no binding of their own.
  if (value->kind == ir::ExprKind::kConstant || ir::As<ir::VarNode>(value)) return value;
  ir::Var v = ir::MakeVar(Sanitize(onnx_name), value->struct_info);
  bound_[v.get()] = value;
  bindings_.push_back({v, std::move(value), source, source == current_source_ ? current_op_ : ""});
  return v;
}

ir::Expr GraphImporter::BoundValue(const ir::Expr& var) const {
  const auto* v = ir::As<ir::VarNode>(var);
  if (!v) return nullptr;
  auto it = bound_.find(v);
  return it == bound_.end() ? nullptr : it->second;
}

namespace {

// Whether a and b are tensors of one dtype and one known shape, dim for dim.
bool SameTensorInfo(const ir::Expr& a, const ir::Expr& b) {
  const ir::StructInfo &p = a->struct_info, &q = b->struct_info;
  if (!p || !q || !p->IsTensor() || !q->IsTensor() || p->dtype != q->dtype ||
      p->dtype == ir::DataType::kVoid || !p->shape || !q->shape ||
      p->shape->size() != q->shape->size()) {
    return false;
  }
  for (size_t i = 0; i < p->shape->size(); ++i) {
    if (!ir::PrimEqual((*p->shape)[i], (*q->shape)[i])) return false;
  }
  return true;
}

// Whether every element of constant input i of the node is `value` (+0.0 and -0.0 both zero).
bool AllElements(const NodeContext& ctx, int i, double value) {
  const ir::ConstantNode* c = ctx.ConstantInput(i);
  const int64_t n = c ? c->NumElements() : 0;
  if (n <= 0 || n > (int64_t{1} << 20)) return false;
  for (int64_t k = 0; k < n; ++k) {
    std::optional<double> e = ir::ConstantElement(*c, k);
    if (!e || *e != value) return false;
  }
  return true;
}

}  // namespace

// A node whose result is one of the values it reads: an Add or Sub of a constant zero, a Mul or
// Div by a constant one, whose result has the other operand's dtype and shape (ONNX Runtime's
// noop elimination does the same; x + 0.0 is x but for -0.0, which the add makes +0.0), or a
// Squeeze, Unsqueeze, Reshape or Flatten whose result has the shape of a value that a chain of
// such reshapes made it from (an exporter's Squeeze(Unsqueeze(x))). Its result is then that value
// (null: none): a Loop body that hands a carried value back through them passes it through, and
// what the body computes from it alone is computed once a loop (the runtime's loop invariants;
// slanet-table's attention decoder reran a 256 x 96 x 256 product in each of its 501 steps).
// The main graph's outputs keep a value of their own, under their names.
ir::Expr GraphImporter::ElideNoop(const NodeContext& ctx, const ir::Expr& out) const {
  const std::string& op = ctx.op_type();
  if (!out || ctx.NumOutputs() != 1 || main_outputs_.count(ctx.node().output(0))) return nullptr;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    const double neutral = op == "Add" || op == "Sub" ? 0.0 : 1.0;
    const bool commutes = op == "Add" || op == "Mul";
    for (int i = 1; i >= (commutes ? 0 : 1); --i) {
      ir::Expr x = ctx.Input(1 - i);
      if (x && AllElements(ctx, i, neutral) && SameTensorInfo(x, out)) return x;
    }
    return nullptr;
  }
  if (op != "Squeeze" && op != "Unsqueeze" && op != "Reshape" && op != "Flatten") return nullptr;
  ir::Expr v = ctx.Input(0);
  for (int hops = 0; v && hops < 16; ++hops) {
    if (SameTensorInfo(v, out)) return v;
    ir::Expr b = BoundValue(v);
    const auto* call = b ? ir::As<ir::CallNode>(b) : nullptr;
    const ir::OpInfo* info = call ? call->op() : nullptr;
    if (!info || call->args.empty() ||
        (info->kind != ir::OpKind::kExpandDims && info->kind != ir::OpKind::kSqueeze &&
         info->kind != ir::OpKind::kReshape)) {
      break;
    }
    v = call->args[0];
  }
  return nullptr;
}

std::string GraphImporter::NodeName(const ::onnx::NodeProto& node, int index) const {
  if (!node.name().empty()) return node.name();
  return node.op_type() + "#" + std::to_string(index);
}

Expected<ir::StructInfo> GraphImporter::ValueInfoSInfo(const ::onnx::ValueInfoProto& v,
                                                       const std::string& what) {
  if (!v.has_type() || !v.type().has_tensor_type()) {
    std::string kind = !v.has_type()                  ? "no type"
                       : v.type().has_sequence_type() ? "a sequence type"
                       : v.type().has_optional_type() ? "an optional type"
                       : v.type().has_map_type()      ? "a map type"
                                                      : "a non-tensor type";
    return Error(what + " '" + v.name() + "' has " + kind +
                 " (only tensors are supported; sequences, optionals and maps are left out)");
  }
  const auto& tt = v.type().tensor_type();
  std::optional<ir::DataType> dtype = ElemType(tt.elem_type());
  if (!dtype || *dtype == ir::DataType::kVoid) {
    return Error(what + " '" + v.name() + "' has unknown element type " +
                 std::to_string(tt.elem_type()));
  }
  if (*dtype == ir::DataType::kString) {
    return Error(what + " '" + v.name() + "' is a string tensor (string ops are left out)");
  }
  auto fixed = model_.options.input_shapes.find(v.name());
  if (fixed != model_.options.input_shapes.end()) {
    if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(fixed->second.size())) {
      return Error("--input-shape gives " + v.name() + " rank " +
                   std::to_string(fixed->second.size()) + ", but the model declares rank " +
                   std::to_string(tt.shape().dim_size()));
    }
    for (int64_t d : fixed->second) {
      if (d < 0) return Error("--input-shape gives " + v.name() + " a negative dimension");
    }
    if (!ir::ElementCount(fixed->second)) {
      return Error("--input-shape gives " + v.name() + " more than 2^50 elements (" +
                   ShapeText(fixed->second) + "), the most a tensor may hold");
    }
    return ir::TensorSInfo(fixed->second, *dtype);
  }
  if (!tt.has_shape()) return ir::TensorSInfo(std::nullopt, *dtype);
  std::vector<ir::PrimExpr> dims;
  std::vector<int64_t> known;  // the static dims
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    // Some exporters write -1 for a dynamic dim (ONNX Runtime reads it so): a fresh symbolic dim.
    if (d.has_dim_value() && d.dim_value() == -1) {
      dims.push_back(ir::SymVar(Sanitize(v.name()) + "_d" + std::to_string(i)));
    } else if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        return Error(what + " '" + v.name() + "' has negative dimension " +
                     std::to_string(d.dim_value()));
      }
      dims.push_back(ir::IntImm(d.dim_value()));
      known.push_back(d.dim_value());
    } else if (d.has_dim_param() &&
               std::any_of(d.dim_param().begin(), d.dim_param().end(),
                           [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      // A named dim: one symbolic dim for every tensor that names it. Names without a letter
      // or digit ("?") mean "unknown" and get fresh dims below.
      auto [it, fresh] = dim_params_.emplace(d.dim_param(), nullptr);
      if (fresh) it->second = ir::SymVar(Sanitize(d.dim_param()));
      dims.push_back(it->second);
    } else {
      dims.push_back(ir::SymVar(Sanitize(v.name()) + "_d" + std::to_string(i)));
    }
  }
  // Shape arithmetic downstream multiplies dims: their static part must be a count the runtime
  // can hold.
  if (!ir::ElementCount(known)) {
    return Error(what + " '" + v.name() + "' has static dims of more than 2^50 elements (" +
                 ShapeText(known) + "), the most a tensor may hold");
  }
  return ir::TensorSInfo(std::move(dims), *dtype);
}

Status GraphImporter::DeclareInputs(const ::onnx::GraphProto& graph) {
  std::map<std::string, const ::onnx::TensorProto*> initializers;
  for (const auto& t : graph.initializer()) {
    if (!initializers.emplace(t.name(), &t).second) {
      return Error("initializer '" + t.name() + "' is defined twice");
    }
  }
  if (graph.sparse_initializer_size() > 0) {
    return Error("sparse initializers are not supported ('" +
                 graph.sparse_initializer(0).values().name() + "')");
  }
  std::set<std::string> inputs;
  for (const auto& in : graph.input()) {
    if (!inputs.insert(in.name()).second)
      return Error("graph input '" + in.name() + "' is declared twice");
    Expected<ir::StructInfo> s = ValueInfoSInfo(in, "graph input");
    if (!s) return s.error();
    if (auto fixed = model_.options.input_values.find(in.name());
        fixed != model_.options.input_values.end()) {
      Expected<InputValue> given = NumbersAsDeclared(fixed->second, **s);
      if (!given)
        return Error("value given for graph input '" + in.name() + "': " + given.error().message);
      const InputValue& iv = *given;
      Expected<ir::Expr> c = ir::MakeConstant(
          iv.dtype, iv.shape, std::make_shared<const std::vector<uint8_t>>(iv.bytes));
      if (!c) return Error("value given for graph input '" + in.name() + "': " + c.error().message);
      Expected<ir::StructInfo> fits = ir::Refine(*s, (*c)->struct_info);
      if (!fits)
        return Error("value given for graph input '" + in.name() + "': " + fits.error().message);
      values_[in.name()] = *c;
      continue;
    }
    ir::Var v = ir::MakeVar(Sanitize(in.name()), *s);
    ir::Expr def;
    if (auto it = initializers.find(in.name()); it != initializers.end()) {
      Expected<TensorData> t = ReadTensor(*it->second, model_.model_dir);
      if (!t) return t.error();
      Expected<ir::Expr> c = TensorToConstant(*t);
      if (!c) return Error("initializer '" + in.name() + "': " + c.error().message);
      Expected<ir::StructInfo> fits = ir::Refine(*s, (*c)->struct_info);
      if (!fits)
        return Error("initializer of graph input '" + in.name() + "': " + fits.error().message);
      def = *c;
    }
    params_.push_back(v);
    defaults_.push_back(def);
    values_[in.name()] = v;
  }
  // A shape or value given for an input the graph does not have is a mistake worth naming.
  auto check_named = [&](const std::string& name, const char* what) -> Status {
    if (inputs.count(name)) return {};
    std::string all;
    for (const auto& in : graph.input()) all += (all.empty() ? "" : ", ") + in.name();
    return Error(std::string(what) + " names '" + name +
                 "', which is not a graph input (the inputs: " + all + ")");
  };
  for (const auto& [name, dims] : model_.options.input_shapes) {
    if (Status st = check_named(name, "an input shape"); !st) return st;
  }
  for (const auto& [name, value] : model_.options.input_values) {
    if (Status st = check_named(name, "an input value"); !st) return st;
  }
  for (const auto& [name, t] : initializers) {
    if (inputs.count(name)) continue;
    Expected<TensorData> data = ReadTensor(*t, model_.model_dir);
    if (!data) return data.error();
    Expected<ir::Expr> c = TensorToConstant(*data);
    if (!c) return Error("initializer '" + name + "': " + c.error().message);
    values_[name] = *c;
  }
  return {};
}

Expected<std::vector<int>> GraphImporter::TopologicalOrder(const ::onnx::GraphProto& graph) {
  std::map<std::string, int> producer;  // value -> node index; -1 for inputs and initializers
  for (const auto& [name, v] : values_) producer[name] = -1;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      auto [it, fresh] = producer.emplace(out, i);
      if (!fresh) {
        std::string other = it->second < 0
                                ? "a graph input or initializer"
                                : "node '" + NodeName(graph.node(it->second), it->second) + "'";
        return Error("value '" + out + "' is produced twice: by " + other + " and by node '" +
                     NodeName(graph.node(i), i) + "'");
      }
    }
  }
  std::vector<int> pending(graph.node_size(), 0);
  std::vector<std::vector<int>> users(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    for (const std::string& in : node.input()) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        // Subgraphs may read values of the enclosing graph.
        if (Lookup(in)) continue;
        return Error("node '" + NodeName(node, i) + "' (" + node.op_type() + ") reads '" + in +
                     "', which no node, graph input or initializer produces");
      }
      if (it->second >= 0) {
        ++pending[i];
        users[it->second].push_back(i);
      }
    }
  }
  // Kahn's algorithm, taking the lowest index first so a sorted graph keeps its order.
  std::set<int> ready;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.insert(u);
    }
  }
  if (static_cast<int>(order.size()) != graph.node_size()) {
    std::string cycle;
    int shown = 0;
    for (int i = 0; i < graph.node_size() && shown < 8; ++i) {
      if (pending[i] > 0) {
        cycle += (shown++ ? ", " : "") + ("'" + NodeName(graph.node(i), i) + "'");
      }
    }
    return Error("the graph has a cycle through nodes " + cycle);
  }
  return order;
}

Status GraphImporter::ImportNode(const ::onnx::NodeProto& node, int index, int depth) {
  std::string name = NodeName(node, index);
  const std::string& domain = node.domain();
  bool default_domain = domain.empty() || domain == "ai.onnx";
  auto poison = [&](std::string reason) {
    int64_t opset = model_.opsets.count(domain) ? model_.opsets.at(domain) : model_.opset;
    unsupported_.push_back({name, node.op_type(), domain, opset, std::move(reason)});
    for (const std::string& out : node.output()) poisoned_.insert(out);
  };
  // A node reading an unsupported node's output is not converted; it is still checked for
  // support so that every unsupported op is reported together.
  bool reads_poison = false;
  for (const std::string& in : node.input()) reads_poison |= poisoned_.count(in) > 0;
  auto fn = model_.functions.find({domain, node.op_type()});
  if (fn != model_.functions.end()) {
    if (reads_poison) {
      for (const std::string& out : node.output()) poisoned_.insert(out);
      return {};
    }
    if (depth >= model_.options.max_nesting) {
      return Error("node '" + name + "': model-local functions nest deeper than " +
                   std::to_string(model_.options.max_nesting) +
                   " (ImportOptions::max_nesting; quiltc --max-nesting)");
    }
    return InlineFunction(node, *fn->second, depth + 1);
  }
  // Other domains (ai.onnx.preview) convert at the opset the model imports for them.
  int64_t opset = default_domain                ? model_.opset
                  : model_.opsets.count(domain) ? model_.opsets.at(domain)
                                                : 0;
  const Converter* conv =
      opset > 0 ? FindConverter(node.op_type(), opset, default_domain ? "" : domain) : nullptr;
  if (!conv) {
    std::string reason = LeftOutReason(default_domain ? "" : domain, node.op_type());
    if (reason.empty() && default_domain) {
      // Known at a later opset: say from which.
      for (int64_t v = model_.opset + 1; v <= kMaxOpset; ++v) {
        if (FindConverter(node.op_type(), v)) {
          reason = "supported from opset " + std::to_string(v) + " on";
          break;
        }
      }
    }
    if (!default_domain && reason.empty() && !model_.opsets.count(domain)) {
      reason = "the model does not import domain '" + domain + "'";
    }
    poison(reason);
    return {};
  }
  if (reads_poison) {
    for (const std::string& out : node.output()) poisoned_.insert(out);
    return {};
  }
  if (Status s = CheckNodeSchema(
          node, opset,
          "node '" + name + "' (" + node.op_type() + ", opset " + std::to_string(opset) + ")",
          default_domain ? "" : domain);
      !s) {
    return s;
  }
  current_source_ = name;
  current_op_ = node.op_type();
  NodeContext ctx(this, node, opset);
  std::optional<Expected<ir::Expr>> folded = FoldFloatConstants(ctx);
  Expected<Outputs> outs = folded ? NodeContext::Single(*folded) : conv->fn(ctx);
  if (!outs) {
    // A converter's own diagnostic already names the node; wrap anything else.
    const Diagnostic& d = outs.error();
    if (d.location.empty()) return ctx.Error(d.message);
    return d;
  }
  if (!outs->empty()) {
    if (ir::Expr same = ElideNoop(ctx, (*outs)[0])) (*outs)[0] = same;
  }
  for (int i = 0; i < node.output_size() && i < static_cast<int>(outs->size()); ++i) {
    if (node.output(i).empty() || !(*outs)[i]) continue;
    values_[node.output(i)] = Bind((*outs)[i], node.output(i), name);
    // Values the converter did not record, computed from the inputs' (shape computations).
    if (!Known(node.output(i))) {
      if (auto k = EvaluateKnown(ctx, i, (*outs)[i]->struct_info)) SetKnown(node.output(i), *k);
    }
  }
  for (int i = static_cast<int>(outs->size()); i < node.output_size(); ++i) {
    if (!node.output(i).empty()) {
      return ctx.Error("output " + std::to_string(i) + " ('" + node.output(i) +
                       "') is not produced by this converter");
    }
  }
  return {};
}

Status GraphImporter::InlineFunction(const ::onnx::NodeProto& call, const ::onnx::FunctionProto& f,
                                     int depth) {
  // Rename the function's values into a fresh namespace, bind its inputs to the call's and
  // substitute attribute references.
  *model_.inlined_nodes += f.node_size();
  if (*model_.inlined_nodes > model_.options.max_inlined_nodes) {
    return Error(
        "node '" + call.name() + "' (" + call.op_type() +
        "): inlining model-local functions makes more than " +
        std::to_string(model_.options.max_inlined_nodes) +
        " nodes, the limit (ImportOptions::max_inlined_nodes; quiltc --max-inlined-nodes)");
  }
  std::string prefix = Sanitize(call.name().empty() ? f.name() : call.name()) + "__" +
                       std::to_string(inline_counter_++) + "/";
  std::map<std::string, std::string> rename;
  for (int i = 0; i < f.input_size(); ++i) {
    rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
  }
  for (int i = 0; i < f.output_size(); ++i) {
    rename[f.output(i)] = i < call.output_size() ? call.output(i) : "";
  }
  auto map_name = [&](const std::string& n) -> std::string {
    if (n.empty()) return n;
    auto it = rename.find(n);
    return it != rename.end() ? it->second : prefix + n;
  };
  std::map<std::string, const ::onnx::AttributeProto*> call_attrs;
  for (const auto& a : call.attribute()) call_attrs[a.name()] = &a;
  for (int i = 0; i < f.node_size(); ++i) {
    ::onnx::NodeProto node = f.node(i);
    for (auto& in : *node.mutable_input()) in = map_name(in);
    for (auto& out : *node.mutable_output()) out = map_name(out);
    if (node.name().empty())
      node.set_name(prefix + node.op_type() + "#" + std::to_string(i));
    else
      node.set_name(prefix + node.name());
    ::google::protobuf::RepeatedPtrField<::onnx::AttributeProto> attrs;
    for (const auto& a : node.attribute()) {
      if (a.ref_attr_name().empty()) {
        *attrs.Add() = a;
        continue;
      }
      auto it = call_attrs.find(a.ref_attr_name());
      if (it == call_attrs.end()) continue;  // not given: the op's default applies
      ::onnx::AttributeProto copy = *it->second;
      copy.set_name(a.name());
      *attrs.Add() = copy;
    }
    *node.mutable_attribute() = attrs;
    if (Status s = ImportNode(node, i, depth); !s) return s;
  }
  return {};
}

Status GraphImporter::CheckOutput(const ::onnx::ValueInfoProto& out, const ir::Expr& value) {
  if (!out.has_type() || !out.type().has_tensor_type()) return {};
  const ir::StructInfo& s = value->struct_info;
  const auto& tt = out.type().tensor_type();
  std::optional<ir::DataType> declared = ElemType(tt.elem_type());
  if (declared && *declared != ir::DataType::kVoid && s->dtype != ir::DataType::kVoid &&
      *declared != s->dtype) {
    return Error("graph output '" + out.name() + "' is declared " +
                 std::string(ir::DataTypeName(*declared)) + " but computes " +
                 std::string(ir::DataTypeName(s->dtype)));
  }
  // A declared shape that disagrees with the computed one is the exporter's slip (ONNX Runtime
  // runs such models and warns): the computed shape is used, and the user is told.
  if (!tt.has_shape() || s->ndim < 0) return {};
  auto warn = [&](const std::string& what) {
    if (model_.options.warn) {
      model_.options.warn(Error("graph output '" + out.name() + "' is declared with " + what +
                                "; the computed shape is used"));
    }
    return Status{};
  };
  if (tt.shape().dim_size() != s->ndim) {
    return warn("rank " + std::to_string(tt.shape().dim_size()) + " but computes rank " +
                std::to_string(s->ndim));
  }
  if (!s->shape) return {};
  for (int i = 0; i < s->ndim; ++i) {
    const auto& d = tt.shape().dim(i);
    std::optional<int64_t> got = ir::AsInt((*s->shape)[i]);
    // Exporters write -1 for a dim they do not know: it constrains nothing.
    if (d.has_dim_value() && d.dim_value() >= 0 && got && *got != d.dim_value()) {
      return warn("dimension " + std::to_string(i) + " = " + std::to_string(d.dim_value()) +
                  " but computes " + std::to_string(*got));
    }
  }
  return {};
}

void GraphImporter::InlineBindings(const ir::SeqExpr& seq) {
  for (const ir::BindingBlock& b : seq->blocks) {
    for (const ir::Binding& x : b.bindings) bindings_.push_back(x);
  }
}

Expected<ir::SeqExpr> GraphImporter::ImportSubgraph(
    const ::onnx::GraphProto& graph, const std::vector<ir::Expr>& inputs, const std::string& what,
    std::vector<std::optional<KnownValues>>* known) const {
  if (depth_ + 1 > model_.options.max_nesting) {
    return Error(what + ": subgraphs nest deeper than " +
                 std::to_string(model_.options.max_nesting) +
                 " (ImportOptions::max_nesting; quiltc --max-nesting)");
  }
  if (graph.input_size() != static_cast<int>(inputs.size())) {
    return Error(what + " takes " + std::to_string(graph.input_size()) + " inputs, given " +
                 std::to_string(inputs.size()));
  }
  GraphImporter sub(model_, this, depth_ + 1);
  for (int i = 0; i < graph.input_size(); ++i) sub.values_[graph.input(i).name()] = inputs[i];
  for (const auto& t : graph.initializer()) {
    Expected<TensorData> data = ReadTensor(t, model_.model_dir);
    if (!data) return Error(what + ": " + data.error().message);
    Expected<ir::Expr> c = TensorToConstant(*data);
    if (!c) return Error(what + ": initializer '" + t.name() + "': " + c.error().message);
    sub.values_[t.name()] = *c;
  }
  Expected<std::vector<int>> order = sub.TopologicalOrder(graph);
  if (!order) return Error(what + ": " + order.error().message);
  for (int i : *order) {
    if (Status s = sub.ImportNode(graph.node(i), i, depth_ + 1); !s) return s.error();
  }
  if (!sub.unsupported_.empty()) return Error(what + ": " + UnsupportedMessage(sub.unsupported_));
  std::vector<ir::Expr> outs;
  for (const auto& out : graph.output()) {
    ir::Expr v = sub.Lookup(out.name());
    if (!v) return Error(what + ": output '" + out.name() + "' is not produced");
    outs.push_back(v);
    if (known) known->push_back(sub.Known(out.name()));
  }
  if (outs.empty()) return Error(what + " has no outputs");
  ir::Expr result = outs.size() == 1 ? outs[0] : ir::MakeTuple(outs);
  return ir::MakeSeqExpr({ir::BindingBlock{false, sub.bindings_}}, result);
}

// A shape or rank the importer needed and could not work out, in a model whose inputs leave
// dims open (a dynamic length, an unknown batch): the user's way out is to fix them, so the
// message names the open inputs and the option.
Diagnostic GraphImporter::WithOpenDimsHint(const ::onnx::GraphProto& graph, Diagnostic d) const {
  const std::string& m = d.message;
  bool shape_needed =
      (m.find("must be known") != std::string::npos && m.find("dtype") == std::string::npos) ||
      m.find("must be static") != std::string::npos ||
      m.find("known only at run time") != std::string::npos ||
      m.find("at compile time") != std::string::npos;
  if (!shape_needed) return d;
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::string open;
  for (const auto& in : graph.input()) {
    if (initializers.count(in.name()) || model_.options.input_shapes.count(in.name()) ||
        model_.options.input_values.count(in.name()) || !in.type().has_tensor_type()) {
      continue;
    }
    const auto& tt = in.type().tensor_type();
    std::string dims;
    bool any_open = !tt.has_shape();
    for (int i = 0; tt.has_shape() && i < tt.shape().dim_size(); ++i) {
      const auto& dim = tt.shape().dim(i);
      bool fixed = dim.has_dim_value() && dim.dim_value() >= 0;
      any_open |= !fixed;
      dims +=
          (i ? ", " : "") + (fixed ? std::to_string(dim.dim_value())
                             : dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param()
                                                                               : std::string("?"));
    }
    if (!any_open) continue;
    open += (open.empty() ? "" : ", ") + ("'" + in.name() + "' ") +
            (tt.has_shape() ? "[" + dims + "]" : std::string("of unknown rank"));
  }
  if (open.empty()) return d;
  d.message += "; the model's inputs leave dims open (" + open +
               "): fixing their shapes (quiltc --input-shape NAME:D,D,...) lets the compiler "
               "work out the shapes that follow from them";
  return d;
}

Expected<ir::Function> GraphImporter::ImportMain(const ::onnx::GraphProto& graph) {
  for (const auto& out : graph.output()) main_outputs_.insert(out.name());
  if (Status s = DeclareInputs(graph); !s) return s.error();
  Expected<std::vector<int>> order = TopologicalOrder(graph);
  if (!order) return order.error();
  for (int i : *order) {
    if (Status s = ImportNode(graph.node(i), i, 0); !s) return WithOpenDimsHint(graph, s.error());
  }
  if (!unsupported_.empty()) return Error(UnsupportedMessage(unsupported_));
  if (graph.output_size() == 0) return Error("the graph has no outputs");
  std::vector<ir::Expr> outs;
  for (const auto& out : graph.output()) {
    ir::Expr v = Lookup(out.name());
    if (!v) return Error("graph output '" + out.name() + "' is not produced by any node");
    if (Status s = CheckOutput(out, v); !s) return s.error();
    outs.push_back(v);
  }
  ir::Expr result = outs.size() == 1 ? outs[0] : ir::MakeTuple(outs);
  if (outs.size() > 1) result = Bind(result, "outputs", "");
  // A graph output that is directly an input or a constant still needs a value to return.
  ir::SeqExpr body = ir::MakeSeqExpr({ir::BindingBlock{false, bindings_}}, result);
  bool any_default =
      std::any_of(defaults_.begin(), defaults_.end(), [](auto& d) { return d != nullptr; });
  ir::Attrs attrs;
  attrs.Set("global_symbol", std::string("main"));
  // The ONNX names of the graph's inputs and outputs: users and the runtime name them as the
  // model does. Output names are always recorded: the returned variables are named after the
  // last binding (`y_2`), and passes rebind them (copies between devices, regions). Input names
  // are recorded where the parameters' identifiers differ from them.
  std::vector<std::string> input_names, output_names;
  bool renamed = false;
  for (const auto& in : graph.input()) {
    if (!Lookup(in.name()) || !ir::As<ir::VarNode>(Lookup(in.name()))) continue;
    input_names.push_back(in.name());
    renamed |= Sanitize(in.name()) != in.name();
  }
  for (const auto& out : graph.output()) output_names.push_back(out.name());
  if (renamed) attrs.Set("input_names", input_names);
  attrs.Set("output_names", output_names);
  return ir::MakeFunction(params_, body, nullptr, std::move(attrs), true, false,
                          any_default ? defaults_ : std::vector<ir::Expr>{});
}

}  // namespace quilt::importers::onnx
