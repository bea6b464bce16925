// partition (see partition.h).
#include "passes/partition.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/builder.h"
#include "ir/op.h"
#include "passes/pass.h"
#include "passes/vdevice_util.h"

namespace quilt::passes {
namespace {

// Region-level successors: glue nodes count as regions of their own (ids after the real ones).
std::vector<std::set<int>> RegionGraph(const std::vector<int>& region,
                                       const std::vector<std::vector<int>>& preds,
                                       std::vector<int>* group) {
  int n = static_cast<int>(region.size());
  int regions = 0;
  for (int r : region) regions = std::max(regions, r + 1);
  group->assign(static_cast<size_t>(n), 0);
  int next = regions;
  for (int i = 0; i < n; ++i) (*group)[i] = region[i] >= 0 ? region[i] : next++;
  std::vector<std::set<int>> succ(static_cast<size_t>(next));
  for (int i = 0; i < n; ++i) {
    for (int p : preds[static_cast<size_t>(i)]) {
      int a = (*group)[static_cast<size_t>(p)];
      int b = (*group)[static_cast<size_t>(i)];
      if (a != b) succ[static_cast<size_t>(a)].insert(b);
    }
  }
  return succ;
}

// A path from `from` to `to` that leaves `from` to some group other than `to` first.
bool IndirectPath(const std::vector<std::set<int>>& succ, int from, int to) {
  std::vector<char> seen(succ.size(), 0);
  std::vector<int> stack;
  for (int s : succ[static_cast<size_t>(from)]) {
    if (s != to) stack.push_back(s);
  }
  while (!stack.empty()) {
    int g = stack.back();
    stack.pop_back();
    if (g == to) return true;
    if (seen[static_cast<size_t>(g)]) continue;
    seen[static_cast<size_t>(g)] = 1;
    for (int s : succ[static_cast<size_t>(g)]) stack.push_back(s);
  }
  return false;
}

// Renumbers regions in order of first node.
std::vector<int> Compact(const std::vector<int>& region) {
  std::map<int, int> ids;
  std::vector<int> out(region.size(), -1);
  for (size_t i = 0; i < region.size(); ++i) {
    if (region[i] < 0) continue;
    auto [it, added] = ids.emplace(region[i], static_cast<int>(ids.size()));
    out[i] = it->second;
  }
  return out;
}

}  // namespace

bool MergeMakesCycle(const std::vector<int>& region, const std::vector<std::vector<int>>& preds,
                     int a, int b) {
  std::vector<int> group;
  std::vector<std::set<int>> succ = RegionGraph(region, preds, &group);
  return IndirectPath(succ, a, b) || IndirectPath(succ, b, a);
}

std::vector<int> PartitionDag(const std::vector<int>& colors,
                              const std::vector<std::vector<int>>& preds) {
  size_t n = colors.size();
  std::vector<int> region(n, -1);
  for (size_t i = 0; i < n; ++i) region[i] = colors[i] >= 0 ? static_cast<int>(i) : -1;
  auto merge = [&](int keep, int gone) {
    for (int& r : region) {
      if (r == gone) r = keep;
    }
  };
  // 1. Join a same-color predecessor's region. A node still alone whose predecessors all lie in
  // that region joins it without a search (no path can leave the region and come back): the
  // common case of chains, which keeps this linear there.
  for (size_t i = 0; i < n; ++i) {
    if (colors[i] < 0) continue;
    for (int p : preds[i]) {
      int a = region[static_cast<size_t>(p)];
      int b = region[i];
      if (a < 0 || a == b || colors[static_cast<size_t>(p)] != colors[i]) continue;
      bool alone = b == static_cast<int>(i);
      bool inside = true;
      for (int q : preds[i]) inside &= region[static_cast<size_t>(q)] == a;
      if (alone && inside) {
        region[i] = a;
        continue;
      }
      if (!MergeMakesCycle(region, preds, a, b)) merge(std::min(a, b), std::max(a, b));
    }
  }
  // 2. Merge any two regions of one color while that keeps the graph acyclic.
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int> ids = Compact(region);
    region = ids;
    std::map<int, int> color_of;
    for (size_t i = 0; i < n; ++i) {
      if (region[i] >= 0) color_of[region[i]] = colors[i];
    }
    for (auto a = color_of.begin(); a != color_of.end() && !changed; ++a) {
      for (auto b = std::next(a); b != color_of.end() && !changed; ++b) {
        if (a->second != b->second) continue;
        if (MergeMakesCycle(region, preds, a->first, b->first)) continue;
        merge(a->first, b->first);
        changed = true;
      }
    }
  }
  return Compact(region);
}

}  // namespace quilt::passes

namespace quilt::passes {
namespace {

using ir::As;
using ir::Expr;

std::optional<ir::VDevice> FirstVDevice(const ir::StructInfo& s, bool* mixed) {
  std::optional<ir::VDevice> first;
  MapVDevices(s, [&](const std::optional<ir::VDevice>& v) {
    if (v && !first) first = v;
    if (v && first && *v != *first) *mixed = true;
    return v;
  });
  return first;
}

class Partitioner {
 public:
  explicit Partitioner(const ir::IRModule& mod) : in_(mod) {}

  Expected<ir::IRModule> Run() {
    ir::NormalizeHooks plain;
    plain.drop_dataflow = true;
    Expected<ir::IRModule> flat = ir::NormalizeModule(in_, plain);
    if (!flat) return flat;
    mod_ = *flat;
    entry_ = mod_.EntryName();
    ir::Function f = mod_.Lookup(entry_);
    if (!f) return mod_;
    for (const ir::BindingBlock& block : f->body->blocks) {
      for (const ir::Binding& b : block.bindings) nodes_.push_back(&b);
    }
    std::map<const ir::VarNode*, int> def;
    for (size_t i = 0; i < nodes_.size(); ++i) def[nodes_[i]->var.get()] = static_cast<int>(i);
    std::vector<int> colors;
    std::vector<std::vector<int>> preds(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      std::vector<const ir::VarNode*> reads = ir::UsedVars(nodes_[i]->value);
      for (const ir::VarNode* v : reads) {
        auto it = def.find(v);
        if (it != def.end()) preds[i].push_back(it->second);
      }
      Expected<int> c = Color(*nodes_[i], reads);
      if (!c) return c.error();
      colors.push_back(*c);
    }
    std::vector<int> region = PartitionDag(colors, preds);
    return Lift(*f, region, colors, preds);
  }

 private:
  // The device of a binding: where its tensors are; a copy or a tuple across devices is glue.
  Expected<int> Color(const ir::Binding& b, const std::vector<const ir::VarNode*>& reads) const {
    const auto* call = As<ir::CallNode>(b.value);
    if (call && call->op() && call->op()->kind == ir::OpKind::kToVDevice) return -1;
    bool mixed = false;
    std::optional<ir::VDevice> d = FirstVDevice(b.var->struct_info, &mixed);
    if (mixed) return -1;
    for (size_t i = 0; !d && i < reads.size(); ++i) d = FirstVDevice(reads[i]->struct_info, &mixed);
    if (!d) return -1;
    int index = mod_.VDeviceIndex(*d);
    if (index < 0) {
      return Error("vdevice " + d->ToString() + " is not in the module's list",
                   "function '" + entry_ + "', binding '" + b.var->name_hint + "'");
    }
    return index;
  }

  Expected<ir::IRModule> Lift(const ir::FunctionNode& f, const std::vector<int>& region,
                              const std::vector<int>& colors,
                              const std::vector<std::vector<int>>& preds) {
    int regions = 0;
    for (int r : region) regions = std::max(regions, r + 1);
    if (regions == 0) return mod_;
    size_t n = nodes_.size();
    // Groups: regions, then one per glue node; their order in the new entry is topological,
    // earliest first node first.
    std::vector<int> group(n);
    int groups = regions;
    for (size_t i = 0; i < n; ++i) group[i] = region[i] >= 0 ? region[i] : groups++;
    std::vector<std::set<int>> gpreds(static_cast<size_t>(groups));
    std::vector<int> first(static_cast<size_t>(groups), static_cast<int>(n));
    for (size_t i = 0; i < n; ++i) {
      first[static_cast<size_t>(group[i])] =
          std::min(first[static_cast<size_t>(group[i])], static_cast<int>(i));
      for (int p : preds[i]) {
        if (group[static_cast<size_t>(p)] != group[i]) {
          gpreds[static_cast<size_t>(group[i])].insert(group[static_cast<size_t>(p)]);
        }
      }
    }
    // Used outside its group: by another group or by the entry's result.
    std::vector<const ir::VarNode*> result_reads = ir::UsedVars(f.body->body);
    std::set<const ir::VarNode*> used_outside(result_reads.begin(), result_reads.end());
    for (size_t i = 0; i < n; ++i) {
      for (int p : preds[i]) {
        if (group[static_cast<size_t>(p)] != group[i]) {
          used_outside.insert(nodes_[static_cast<size_t>(p)]->var.get());
        }
      }
    }

    std::vector<ir::Binding> entry_bindings;
    std::vector<std::pair<std::string, ir::Function>> lifted;
    std::vector<char> done(static_cast<size_t>(groups), 0);
    for (int emitted = 0; emitted < groups; ++emitted) {
      int next = -1;
      for (int g = 0; g < groups; ++g) {
        if (done[static_cast<size_t>(g)]) continue;
        bool ready = true;
        for (int p : gpreds[static_cast<size_t>(g)]) ready &= done[static_cast<size_t>(p)] != 0;
        if (ready && (next < 0 || first[static_cast<size_t>(g)] < first[static_cast<size_t>(next)]))
          next = g;
      }
      QUILT_CHECK(next >= 0) << "the region graph has a cycle";
      done[static_cast<size_t>(next)] = 1;
      if (next >= regions) {
        entry_bindings.push_back(*nodes_[static_cast<size_t>(first[static_cast<size_t>(next)])]);
        continue;
      }
      Expected<ir::Function> fn =
          LiftRegion(next, region, colors, used_outside, &entry_bindings, &lifted);
      if (!fn) return fn.error();
    }
    Expected<ir::Function> entry = ir::MakeFunction(
        f.params, ir::MakeSeqExpr({ir::BindingBlock{false, entry_bindings}}, f.body->body),
        f.ret_struct_info, f.attrs, f.is_pure, f.is_private, f.param_defaults);
    if (!entry) return Error(entry.error().message, "function '" + entry_ + "'");
    ir::IRModule out;
    out.vdevices = mod_.vdevices;
    out.attrs = mod_.attrs;
    out.prim_funcs = mod_.prim_funcs;
    for (const auto& [name, g] : mod_.functions) {
      out.functions.emplace_back(name, name == entry_ ? *entry : g);
      if (name != entry_) continue;
      for (auto& l : lifted) out.functions.push_back(l);
    }
    return ir::NormalizeModule(out);
  }

  Expected<ir::Function> LiftRegion(int r, const std::vector<int>& region,
                                    const std::vector<int>& colors,
                                    const std::set<const ir::VarNode*>& used_outside,
                                    std::vector<ir::Binding>* entry_bindings,
                                    std::vector<std::pair<std::string, ir::Function>>* lifted) {
    std::vector<ir::Binding> body;
    std::vector<ir::Var> outputs;
    int color = -1;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (region[i] != r) continue;
      body.push_back(*nodes_[i]);
      color = colors[i];
      if (used_outside.count(nodes_[i]->var.get())) outputs.push_back(nodes_[i]->var);
    }
    ir::SeqExprNode bindings;
    bindings.blocks.push_back(ir::BindingBlock{false, body});
    std::vector<ir::Var> params = ir::FreeVars(bindings, {});
    Expr result;
    if (outputs.size() == 1) {
      result = outputs[0];
    } else {
      result = ir::MakeTuple(std::vector<Expr>(outputs.begin(), outputs.end()));
    }
    const ir::VDevice& d = mod_.vdevices[static_cast<size_t>(color)];
    ir::Attrs attrs;
    attrs.Set("vdevice", ir::DeviceString(color, mod_.vdevices));
    attrs.Set("codegen", d.target.kind);
    std::string where = ir::DeviceString(color, mod_.vdevices);
    std::replace(where.begin(), where.end(), ':', '_');
    std::string name = entry_ + "_region" + std::to_string(r) + "_" + where;
    Expected<ir::Function> fn =
        ir::MakeFunction(params, ir::MakeSeqExpr({ir::BindingBlock{false, body}}, result), nullptr,
                         attrs, /*is_pure=*/true, /*is_private=*/true);
    if (!fn) return Error(fn.error().message, "region '" + name + "'");
    lifted->emplace_back(name, *fn);
    Expected<Expr> call = ir::MakeFuncCall(ir::MakeGlobalVar(name, (*fn)->struct_info),
                                           std::vector<Expr>(params.begin(), params.end()));
    if (!call) return Error(call.error().message, "call of region '" + name + "'");
    if (outputs.size() == 1) {
      entry_bindings->push_back({outputs[0], *call, ""});
      return fn;
    }
    ir::Var tuple = ir::MakeVar(name, (*call)->struct_info);
    entry_bindings->push_back({tuple, *call, ""});
    for (size_t k = 0; k < outputs.size(); ++k) {
      Expected<Expr> item = ir::MakeTupleGetItem(tuple, static_cast<int>(k));
      if (!item) return item.error();
      entry_bindings->push_back({outputs[k], *item, ""});
    }
    return fn;
  }

  const ir::IRModule& in_;
  ir::IRModule mod_;
  std::string entry_;
  std::vector<const ir::Binding*> nodes_;
};

}  // namespace

Expected<Pass> CreatePartition(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {}); !s) return s.error();
  return Pass{"partition", [](const ir::IRModule& mod) { return Partitioner(mod).Run(); }};
}

}  // namespace quilt::passes
