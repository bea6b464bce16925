#include "passes/place_rules.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <set>

#include "ir/builder.h"
#include "ir/op.h"

namespace quilt::passes {
namespace {

using ir::As;

struct Rule {
  std::string text;
  std::string kind;     // op, node, region
  std::string pattern;  // for region: FROM
  std::string to;       // for region: TO
  int device = -1;
};

Expected<Rule> ParseRule(const std::string& text, const std::vector<ir::VDevice>& list) {
  Rule r;
  r.text = text;
  size_t colon = text.find(':');
  size_t eq = text.rfind('=');
  if (colon == std::string::npos || eq == std::string::npos || eq < colon) {
    return Error("--place " + text +
                 ": expected op:TYPE=DEVICE, node:GLOB=DEVICE or region:FROM..TO=DEVICE");
  }
  r.kind = text.substr(0, colon);
  r.pattern = text.substr(colon + 1, eq - colon - 1);
  std::string device = text.substr(eq + 1);
  if (r.kind != "op" && r.kind != "node" && r.kind != "region") {
    return Error("--place " + text + ": unknown rule kind '" + r.kind +
                 "' (known: op, node, region)");
  }
  if (r.pattern.empty()) return Error("--place " + text + ": nothing to match");
  if (r.kind == "region") {
    size_t dots = r.pattern.find("..");
    if (dots == std::string::npos || dots == 0 || dots + 2 == r.pattern.size()) {
      return Error("--place " + text + ": a region is FROM..TO, two node names");
    }
    r.to = r.pattern.substr(dots + 2);
    r.pattern = r.pattern.substr(0, dots);
  }
  Expected<int> d = ir::ResolveDeviceString(device, list);
  if (!d) return Error("--place " + text + ": " + d.error().message);
  r.device = *d;
  return r;
}

struct Node {
  const ir::Binding* binding;
  std::vector<int> preds;
  std::vector<int> succs;
};

// The entry's op bindings (top-level) as a graph.
std::vector<Node> Graph(const ir::FunctionNode& f) {
  std::vector<Node> nodes;
  std::map<const ir::VarNode*, int> def;
  for (const ir::BindingBlock& block : f.body->blocks) {
    for (const ir::Binding& b : block.bindings) {
      Node n{&b, {}, {}};
      for (const ir::VarNode* v : ir::UsedVars(b.value)) {
        if (auto it = def.find(v); it != def.end()) n.preds.push_back(it->second);
      }
      int id = static_cast<int>(nodes.size());
      for (int p : n.preds) nodes[static_cast<size_t>(p)].succs.push_back(id);
      def[b.var.get()] = id;
      nodes.push_back(std::move(n));
    }
  }
  return nodes;
}

std::set<int> Reach(const std::vector<Node>& nodes, int from, bool forward) {
  std::set<int> seen{from};
  std::vector<int> stack{from};
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    const Node& node = nodes[static_cast<size_t>(n)];
    for (int m : forward ? node.succs : node.preds) {
      if (seen.insert(m).second) stack.push_back(m);
    }
  }
  return seen;
}

// An op whose result a device computes: a tensor, or a tuple of tensors (Split, LSTM). An op
// that yields a shape is a shape computation, which stays on the host.
bool IsOpCall(const ir::Binding& b) {
  const auto* call = As<ir::CallNode>(b.value);
  if (!call || !call->op() || call->op()->kind == ir::OpKind::kHintOnDevice ||
      call->op()->kind == ir::OpKind::kToVDevice) {
    return false;
  }
  const ir::StructInfo& s = b.var->struct_info;
  if (!s) return false;
  if (s->kind == ir::StructInfoKind::kTensor) return true;
  if (s->kind != ir::StructInfoKind::kTuple || s->fields.empty()) return false;
  return std::all_of(s->fields.begin(), s->fields.end(), [](const ir::StructInfo& f) {
    return f && f->kind == ir::StructInfoKind::kTensor;
  });
}

int FindNode(const std::vector<Node>& nodes, const std::string& name) {
  int found = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    // The last binding of a node is its output; a node that became several ops is matched by
    // any of them, and the region takes all.
    if (nodes[i].binding->source == name) found = static_cast<int>(i);
  }
  return found;
}

Expected<std::set<int>> Match(const Rule& r, const std::vector<Node>& nodes) {
  std::set<int> out;
  if (r.kind == "region") {
    int from = -1;
    for (size_t i = 0; i < nodes.size() && from < 0; ++i) {
      if (nodes[i].binding->source == r.pattern) from = static_cast<int>(i);
    }
    int to = FindNode(nodes, r.to);
    if (from < 0) return Error("--place " + r.text + ": no node named '" + r.pattern + "'");
    if (to < 0) return Error("--place " + r.text + ": no node named '" + r.to + "'");
    std::set<int> after = Reach(nodes, from, true);
    std::set<int> before = Reach(nodes, to, false);
    for (int n : after) {
      if (before.count(n)) out.insert(n);
    }
    if (out.empty()) {
      return Error("--place " + r.text + ": node '" + r.to + "' does not depend on node '" +
                   r.pattern + "', so no op lies between them (is the order reversed?)");
    }
  } else {
    for (size_t i = 0; i < nodes.size(); ++i) {
      const ir::Binding& b = *nodes[i].binding;
      const std::string& subject = r.kind == "op" ? b.source_op : b.source;
      if (!subject.empty() && fnmatch(r.pattern.c_str(), subject.c_str(), 0) == 0) {
        out.insert(static_cast<int>(i));
      }
    }
  }
  std::set<int> ops;
  for (int n : out) {
    if (IsOpCall(*nodes[static_cast<size_t>(n)].binding)) ops.insert(n);
  }
  if (ops.empty()) {
    return Error("--place " + r.text + ": the rule matches no op of the model" +
                 (r.kind == "op" ? " (op types are ONNX's, as in 'op:Conv=llvm')" : ""));
  }
  return ops;
}

}  // namespace

Expected<ir::IRModule> ApplyPlacementRules(const ir::IRModule& mod,
                                           const std::vector<std::string>& rules) {
  if (rules.empty()) return mod;
  std::string entry = mod.EntryName();
  ir::Function f = mod.Lookup(entry);
  if (!f) return Error("placement rules: the module has no function to place");
  std::vector<Node> nodes = Graph(*f);
  std::map<int, std::pair<int, std::string>> pinned;  // node -> (device, rule)
  for (const std::string& text : rules) {
    Expected<Rule> r = ParseRule(text, mod.vdevices);
    if (!r) return r.error();
    Expected<std::set<int>> matched = Match(*r, nodes);
    if (!matched) return matched.error();
    for (int n : *matched) {
      auto [it, added] = pinned.emplace(n, std::make_pair(r->device, r->text));
      if (!added && it->second.first != r->device) {
        const ir::Binding& b = *nodes[static_cast<size_t>(n)].binding;
        return Error("--place " + r->text + " and --place " + it->second.second +
                     " ask for node '" + b.source + "' on two devices");
      }
    }
  }
  // A hint after each pinned op; its result is unused (assign reads the hint and drops it).
  std::vector<ir::BindingBlock> blocks;
  size_t k = 0;
  for (const ir::BindingBlock& block : f->body->blocks) {
    ir::BindingBlock nb{block.dataflow, {}};
    for (const ir::Binding& b : block.bindings) {
      nb.bindings.push_back(b);
      auto it = pinned.find(static_cast<int>(k++));
      if (it == pinned.end()) continue;
      const ir::VDevice& d = mod.vdevices[static_cast<size_t>(it->second.first)];
      ir::Attrs attrs;
      attrs.Set("device_type", d.target.DeviceType());
      attrs.Set("index", static_cast<int64_t>(d.vdevice_id));
      attrs.Set("memory_scope", d.memory_scope);
      // A tuple result (Split, LSTM) is hinted through its first field; assign pins the op
      // that makes the tuple.
      ir::Expr subject = b.var;
      if (b.var->struct_info->kind == ir::StructInfoKind::kTuple) {
        Expected<ir::Expr> item = ir::MakeTupleGetItem(b.var, 0);
        if (!item) return Error(item.error().message, "rule " + it->second.second);
        ir::Var v = ir::MakeVar(b.var->name_hint + "_item", (*item)->struct_info, block.dataflow);
        nb.bindings.push_back({v, *item, b.source, b.source_op});
        subject = v;
      }
      std::vector<ir::Expr> args{subject};
      Expected<ir::Expr> hint = ir::MakeOpCall(ir::OpKind::kHintOnDevice, args, attrs);
      if (!hint) return Error(hint.error().message, "rule " + it->second.second);
      nb.bindings.push_back(
          {ir::MakeVar(b.var->name_hint + "_placed", (*hint)->struct_info, block.dataflow), *hint,
           b.source, b.source_op});
    }
    blocks.push_back(std::move(nb));
  }
  Expected<ir::Function> g =
      ir::MakeFunction(f->params, ir::MakeSeqExpr(std::move(blocks), f->body->body),
                       f->ret_struct_info, f->attrs, f->is_pure, f->is_private, f->param_defaults);
  if (!g) return g.error();
  ir::IRModule out = mod;
  out.Set(entry, *g);
  return out;
}

}  // namespace quilt::passes
