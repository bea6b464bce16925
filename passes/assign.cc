// assign (see assign.h for the rules).
#include "passes/assign.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ir/builder.h"
#include "ir/op.h"
#include "passes/pass.h"
#include "passes/vdevice_util.h"

namespace quilt::passes {

std::string_view WhyName(OpPlacement::Why why) {
  switch (why) {
    case OpPlacement::Why::kFirstChoice:
      return "first choice";
    case OpPlacement::Why::kPinned:
      return "placement rule";
    case OpPlacement::Why::kPlaced:
      return "placed in the input";
    case OpPlacement::Why::kFallback:
      return "fallback";
    case OpPlacement::Why::kShape:
      return "shape computation";
    case OpPlacement::Why::kFragment:
      return "small fragment";
    case OpPlacement::Why::kControlFlow:
      return "control flow";
  }
  return "?";
}

namespace {

using ir::As;
using ir::Expr;
using Why = OpPlacement::Why;

bool IsCheap(const ir::OpInfo& op) {
  return op.pattern == ir::OpPattern::kElementwise || op.pattern == ir::OpPattern::kBroadcast ||
         op.pattern == ir::OpPattern::kInjective;
}

bool IsControlFlow(const ir::CallNode& call) {
  const ir::OpInfo* op = call.op();
  return !op || op->kind == ir::OpKind::kWhileLoop || op->kind == ir::OpKind::kScan;
}

bool HasTensor(const ir::StructInfo& s) {
  bool found = false;
  MapVDevices(s, [&](const std::optional<ir::VDevice>& v) {
    found = true;
    return v;
  });
  return found;
}

class Assigner {
 public:
  Assigner(const ir::IRModule& mod, const AssignOptions& options)
      : mod_(mod), options_(options), host_(HostVDevice(mod.vdevices)) {
    if (!options_.supports) {
      options_.supports = [](const ir::VDevice& d, const ir::CallNode& call) {
        return targets::CapabilityFor(d.target).Supports(call);
      };
    }
    entry_ = mod.EntryName();
  }

  Expected<AssignResult> Run() {
    if (mod_.vdevices.empty()) return Error("assign: the module has no vdevices to assign to");
    ir::Function entry = mod_.Lookup(entry_);
    if (!entry) return AssignResult{mod_, {}};
    for (const ir::Var& p : entry->params) {
      device_[p.get()] = p->struct_info && p->struct_info->IsTensor() && p->struct_info->vdevice
                             ? Index(*p->struct_info->vdevice)
                             : host_;
    }
    Collect(*entry->body);
    for (const Item& item : items_) QUILT_TRY(Decide(item));
    MoveFragments();
    if (options_.strict) QUILT_TRY(CheckStrict());
    Expected<ir::IRModule> out = Rewrite();
    if (!out) return out.error();
    return AssignResult{*out, placements_};
  }

 private:
  // One binding of the entry function that runs an op (or a call).
  struct Item {
    const ir::Binding* binding;
    const ir::CallNode* call;  // null for an If
    bool in_control_flow;      // inside an If branch
  };

  int Index(const ir::VDevice& d) const {
    int i = mod_.VDeviceIndex(d);
    return i < 0 ? host_ : i;
  }

  void Collect(const ir::SeqExprNode& seq, bool nested = false) {
    for (const ir::BindingBlock& block : seq.blocks) {
      for (const ir::Binding& b : block.bindings) {
        producer_[b.var.get()] = &b;
        if (const auto* iff = As<ir::IfNode>(b.value)) {
          Collect(*iff->then_branch, true);
          Collect(*iff->else_branch, true);
          items_.push_back({&b, nullptr, nested});
          for (const ir::VarNode* v : ir::UsedVars(iff->cond)) host_values_.insert(v);
          continue;
        }
        const auto* call = As<ir::CallNode>(b.value);
        if (!call) continue;
        const ir::OpInfo* op = call->op();
        if (op && op->kind == ir::OpKind::kHintOnDevice) {
          hints_.push_back(&b);
          continue;
        }
        if (op && op->kind == ir::OpKind::kToVDevice) continue;
        items_.push_back({&b, call, nested});
      }
    }
  }

  Expected<int> HintDevice(const ir::CallNode& call, const std::string& at) const {
    Expected<int> d = HintTarget(call, mod_.vdevices);
    if (!d) return Error(d.error().message, Where(at));
    return d;
  }

  std::string Where(const std::string& value) const {
    return "function '" + entry_ + "', binding '" + value + "'";
  }

  std::string Describe(const ir::Binding& b) const {
    const auto* call = As<ir::CallNode>(b.value);
    std::string op = call && call->op() ? "R." + call->op()->name : "a call";
    return (b.source.empty() ? "'" + b.var->name_hint + "'" : "node '" + b.source + "'") + " (" +
           op + ")";
  }

  // The device a rule asks for, from the hints on this binding's result; -1 for none.
  Expected<int> Pin(const ir::Binding& b) {
    int pin = -1;
    std::string first;
    for (const ir::Binding* h : hints_) {
      const auto* call = As<ir::CallNode>(h->value);
      const auto* x = As<ir::VarNode>(call->args[0]);
      // A tuple result is hinted through one of its fields.
      if (auto p = producer_.find(x); x && p != producer_.end()) {
        if (const auto* item = As<ir::TupleGetItemNode>(p->second->value)) {
          x = As<ir::VarNode>(item->tuple);
        }
      }
      if (x != b.var.get()) continue;
      Expected<int> d = HintDevice(*call, h->var->name_hint);
      if (!d) return d;
      if (pin >= 0 && pin != *d) {
        return Error(Describe(b) + " is asked for on " + Name(pin) + " (by '" + first +
                         "') and on " + Name(*d) + " (by '" + h->var->name_hint + "')",
                     Where(b.var->name_hint));
      }
      pin = *d;
      first = h->var->name_hint;
    }
    return pin;
  }

  std::string Name(int device) const {
    return mod_.vdevices[static_cast<size_t>(device)].ToString();
  }

  void Record(const ir::Binding& b, int device, Why why, std::string reason = {}) {
    device_[b.var.get()] = device;
    const auto* call = As<ir::CallNode>(b.value);
    std::string op = "if";
    if (call) op = call->op() ? call->op()->name : "call";
    placements_.push_back({entry_, b.var->name_hint, b.source, op, device, why, std::move(reason)});
    index_[b.var.get()] = placements_.size() - 1;
  }

  // A small integer computation on shapes: its tensor inputs are shape values or constants.
  bool IsShapeValue(const ir::CallNode& call, const ir::StructInfo& out) const {
    const ir::OpInfo* op = call.op();
    if (!op) return false;
    if (op->kind == ir::OpKind::kShapeToTensor) return true;
    if (!out || !out->IsTensor() || !ir::IsInteger(out->dtype)) return false;
    std::optional<std::vector<int64_t>> dims = out->StaticShape();
    if (!dims) return false;
    std::optional<int64_t> n = ir::ElementCount(*dims);
    if (!n || *n > options_.small_shape_elements) return false;
    bool any = false;
    for (const Expr& a : call.args) {
      for (const ir::VarNode* v : ir::UsedVars(a)) {
        if (!HasTensor(v->struct_info)) continue;
        if (!shape_values_.count(v)) return false;
        any = true;
      }
    }
    return any;
  }

  Status Decide(const Item& item) {
    const ir::Binding& b = *item.binding;
    if (!item.call || item.in_control_flow || IsControlFlow(*item.call)) {
      Record(b, host_, Why::kControlFlow,
             item.in_control_flow ? "inside control flow, which runs on the host"
                                  : "control flow runs on the host");
      return {};
    }
    const ir::CallNode& call = *item.call;
    const ir::OpInfo& op = *call.op();
    Expected<int> pin = Pin(b);
    if (!pin) return pin.error();
    std::optional<int> fixed;
    Why why = Why::kPinned;
    if (*pin >= 0) {
      fixed = *pin;
    } else if (b.var->struct_info && b.var->struct_info->vdevice) {
      fixed = Index(*b.var->struct_info->vdevice);
      why = Why::kPlaced;
    }
    if (fixed) {
      targets::Support s = options_.supports(mod_.vdevices[static_cast<size_t>(*fixed)], call);
      if (!s.ok) {
        return Error(Describe(b) + " must run on " + Name(*fixed) + " (" +
                         std::string(WhyName(why)) + ") but it cannot: " + s.reason,
                     Where(b.var->name_hint));
      }
      Record(b, *fixed, why);
      return {};
    }
    if (host_values_.count(b.var.get())) {
      Record(b, host_, Why::kControlFlow, "a condition of control flow");
      return {};
    }
    if (IsShapeValue(call, b.var->struct_info) || op.kind == ir::OpKind::kTensorToShape) {
      shape_values_.insert(b.var.get());
      Record(b, host_, Why::kShape, "a small computation on shapes stays on the host");
      return {};
    }
    if (!HasTensor(b.var->struct_info)) {
      // Reads only metadata (shape_of): where its input is, so no copy.
      int d = host_;
      for (const ir::VarNode* v : ir::UsedVars(b.value)) {
        if (auto it = device_.find(v); it != device_.end()) d = it->second;
      }
      Record(b, d, Why::kShape, "reads only shapes");
      return {};
    }
    std::string refused;
    for (size_t i = 0; i < mod_.vdevices.size(); ++i) {
      targets::Support s = options_.supports(mod_.vdevices[i], call);
      if (s.ok) {
        Record(b, static_cast<int>(i), refused.empty() ? Why::kFirstChoice : Why::kFallback,
               refused);
        return {};
      }
      refused += (refused.empty() ? "" : "; ") + Name(static_cast<int>(i)) + ": " + s.reason;
    }
    return Error("no device of " + ir::ListVDevices(mod_.vdevices) + " can run " + Describe(b) +
                     ": " + refused,
                 Where(b.var->name_hint));
  }

  // Moves small fragments of cheap accelerator ops whose neighbours are all on the host there.
  void MoveFragments() {
    std::set<int> used;
    for (const OpPlacement& p : placements_) used.insert(p.device);
    if (used.size() < 2) return;
    // Consumers of each value among the decided ops.
    std::map<const ir::VarNode*, std::vector<const ir::Binding*>> consumers;
    std::vector<const ir::Binding*> movable;
    for (const Item& item : items_) {
      for (const ir::VarNode* v : ir::UsedVars(item.binding->value)) {
        consumers[v].push_back(item.binding);
      }
      const OpPlacement& p = placements_[index_.at(item.binding->var.get())];
      bool free = p.why == Why::kFirstChoice || p.why == Why::kFallback;
      if (free && p.device != host_ && item.call && item.call->op() && IsCheap(*item.call->op())) {
        movable.push_back(item.binding);
      }
    }
    ir::Function entry = mod_.Lookup(entry_);
    std::vector<const ir::VarNode*> result = ir::UsedVars(entry->body->body);
    std::set<const ir::VarNode*> outputs(result.begin(), result.end());

    std::set<const ir::Binding*> seen;
    for (const ir::Binding* start : movable) {
      if (seen.count(start)) continue;
      int d = device_.at(start->var.get());
      // The fragment: movable ops of device d connected to `start`.
      std::vector<const ir::Binding*> frag{start};
      std::set<const ir::Binding*> in{start};
      bool isolated = true;
      for (size_t k = 0; k < frag.size(); ++k) {
        const ir::Binding* b = frag[k];
        std::vector<const ir::Binding*> next;
        for (const ir::VarNode* v : ir::UsedVars(b->value)) {
          auto p = producer_.find(v);
          if (p != producer_.end() && device_.count(v) && device_.at(v) == d) {
            next.push_back(p->second);
          } else if (device_.count(v) && device_.at(v) != host_) {
            isolated = false;
          }
        }
        for (const ir::Binding* c : consumers[b->var.get()]) {
          if (device_.at(c->var.get()) == d) {
            next.push_back(c);
          } else if (device_.at(c->var.get()) != host_) {
            isolated = false;
          }
        }
        if (outputs.count(b->var.get()) == 0 && consumers[b->var.get()].empty()) isolated = false;
        for (const ir::Binding* n : next) {
          if (in.insert(n).second) frag.push_back(n);
        }
      }
      for (const ir::Binding* b : frag) seen.insert(b);
      bool all_movable = true;
      for (const ir::Binding* b : frag) {
        all_movable &= std::find(movable.begin(), movable.end(), b) != movable.end();
      }
      if (!isolated || !all_movable || static_cast<int>(frag.size()) > options_.max_fragment_ops) {
        continue;
      }
      for (const ir::Binding* b : frag) {
        device_[b->var.get()] = host_;
        OpPlacement& p = placements_[index_.at(b->var.get())];
        p.reason = "a fragment of " + std::to_string(frag.size()) + " cheap op(s) between host " +
                   "ops: copies to and from " + Name(p.device) + " would cost more than it saves";
        p.device = host_;
        p.why = Why::kFragment;
      }
    }
  }

  Status CheckStrict() const {
    std::string list;
    int n = 0;
    for (const OpPlacement& p : placements_) {
      if (p.why != Why::kFallback) continue;
      ++n;
      list += "\n  " + (p.node.empty() ? "'" + p.value + "'" : "node '" + p.node + "'") + " (R." +
              p.op + ") on " + Name(p.device) + ": " + p.reason;
    }
    if (n == 0) return {};
    return Error("--strict: " + std::to_string(n) + " op(s) fell back from the first device " +
                 Name(0) + ":" + list);
  }

  // `e` with each tensor on a device other than `d` replaced by a copy to `d`.
  Expr CopyTo(const Expr& e, int d, ir::NormalizeHooks::Emitter& emit) {
    if (const auto* t = As<ir::TupleNode>(e)) {
      std::vector<Expr> fields;
      bool changed = false;
      for (const Expr& f : t->fields) {
        fields.push_back(CopyTo(f, d, emit));
        changed |= fields.back() != f;
      }
      return changed ? ir::MakeTuple(std::move(fields)) : e;
    }
    const auto* v = As<ir::VarNode>(e);
    if (v && v->struct_info && v->struct_info->kind == ir::StructInfoKind::kTuple) {
      // A tuple variable: its fields one by one, when any is elsewhere.
      bool elsewhere = false;
      const ir::VDevice& target = mod_.vdevices[static_cast<size_t>(d)];
      MapVDevices(v->struct_info, [&](const std::optional<ir::VDevice>& x) {
        elsewhere |= x && *x != target;
        return x;
      });
      if (!elsewhere) return e;
      std::vector<Expr> fields;
      for (size_t i = 0; i < v->struct_info->fields.size(); ++i) {
        Expected<Expr> item = ir::MakeTupleGetItem(e, static_cast<int>(i));
        QUILT_CHECK(item.ok()) << item.error().ToString();
        fields.push_back(CopyTo(emit.Emit(v->name_hint + "_" + std::to_string(i), *item), d, emit));
      }
      return ir::MakeTuple(std::move(fields));
    }
    if (!v || !v->struct_info || !v->struct_info->IsTensor() || !v->struct_info->vdevice) return e;
    const ir::VDevice& target = mod_.vdevices[static_cast<size_t>(d)];
    if (*v->struct_info->vdevice == target) return e;
    auto key = std::make_tuple(v, d, emit.Block());
    if (auto it = copies_.find(key); it != copies_.end()) return it->second;
    ir::Attrs attrs;
    attrs.Set("dst_vdevice", target);
    Expected<Expr> copy = ir::MakeOpCall(ir::OpKind::kToVDevice, {e}, attrs);
    QUILT_CHECK(copy.ok()) << copy.error().ToString();
    std::string suffix = ir::DeviceString(d, mod_.vdevices);
    std::replace(suffix.begin(), suffix.end(), ':', '_');
    ir::Var var = emit.Emit(v->name_hint + "_" + suffix, *copy);
    copies_[key] = var;
    return var;
  }

  Expected<ir::IRModule> Rewrite() {
    std::optional<ir::VDevice> host = mod_.vdevices[static_cast<size_t>(host_)];
    auto on_host = [host](const std::optional<ir::VDevice>& v) { return v ? v : host; };
    // A kept hint becomes a copy to its device, and its result lives there, whatever
    // realize-vdevice joined it with (an annotated input, say): readers elsewhere get copies.
    std::map<const ir::VarNode*, int> hinted;
    for (const ir::Binding* h : hints_) {
      Expected<int> d = HintDevice(*As<ir::CallNode>(h->value), h->var->name_hint);
      if (!d) return d.error();
      hinted[h->var.get()] = *d;
    }
    ir::NormalizeHooks hooks;
    hooks.annotation = [&](const std::string& func, const ir::Var& v) -> ir::StructInfo {
      if (func != entry_) return MapVDevices(v->struct_info, on_host);
      if (auto h = hinted.find(v.get()); h != hinted.end()) {
        std::optional<ir::VDevice> d = mod_.vdevices[static_cast<size_t>(h->second)];
        return MapVDevices(v->struct_info, [d](const std::optional<ir::VDevice>&) { return d; });
      }
      auto it = device_.find(v.get());
      if (it == device_.end()) return v->struct_info;
      std::optional<ir::VDevice> d = mod_.vdevices[static_cast<size_t>(it->second)];
      return MapVDevices(v->struct_info, [d](const std::optional<ir::VDevice>&) { return d; });
    };
    hooks.ret = [&](const std::string& func, const ir::StructInfo& old) -> ir::StructInfo {
      if (!old) return old;
      // The entry's results come back to the host (see `result`); callees run on the host.
      return MapVDevices(old, [&](const std::optional<ir::VDevice>& v) {
        return func == entry_ ? host : on_host(v);
      });
    };
    hooks.call = [&](const std::string& func, const ir::CallNode& call,
                     const std::vector<Expr>& args,
                     ir::NormalizeHooks::Emitter& emit) -> Expected<Expr> {
      const ir::OpInfo* op = call.op();
      if (op && op->kind == ir::OpKind::kToVDevice) return Expr();
      if (op && op->kind == ir::OpKind::kHintOnDevice) {
        Expected<int> d = HintDevice(call, "hint");
        if (!d) return d.error();
        return CopyTo(args[0], *d, emit);
      }
      int d = host_;
      if (func == entry_) {
        auto it = call_device_.find(&call);
        if (it != call_device_.end()) d = it->second;
      }
      if (op && !HasTensorArgs(args)) return Expr();
      std::vector<Expr> placed;
      bool changed = false;
      for (const Expr& a : args) {
        placed.push_back(CopyTo(a, d, emit));
        changed |= placed.back() != a;
      }
      if (!changed) return Expr();
      if (op && op->kind == ir::OpKind::kMatchCast) {
        return ir::MakeMatchCast(placed[0], call.sinfo_args[0]);
      }
      if (op) return ir::MakeOpCall(*op, std::move(placed), call.attrs);
      if (const auto* ext = As<ir::ExternFuncNode>(call.callee)) {
        return ir::MakeExternCall(ext->name, std::move(placed), call.sinfo_args, ext->style);
      }
      return ir::MakeFuncCall(
          ir::MakeGlobalVar(As<ir::GlobalVarNode>(call.callee)->name, call.callee->struct_info),
          std::move(placed));
    };
    hooks.result = [&](const std::string& func, const Expr& result,
                       ir::NormalizeHooks::Emitter& emit) -> Expected<Expr> {
      if (func != entry_) return result;
      return CopyTo(result, host_, emit);
    };
    for (const Item& item : items_) {
      if (item.call) call_device_[item.call] = device_.at(item.binding->var.get());
    }
    return ir::NormalizeModule(mod_, hooks);
  }

  static bool HasTensorArgs(const std::vector<Expr>& args) {
    for (const Expr& a : args) {
      if (HasTensor(a->struct_info)) return true;
    }
    return false;
  }

  const ir::IRModule& mod_;
  AssignOptions options_;
  int host_;
  std::string entry_;
  std::vector<Item> items_;
  std::vector<const ir::Binding*> hints_;
  std::map<const ir::VarNode*, const ir::Binding*> producer_;
  std::map<const ir::VarNode*, int> device_;  // old variables
  std::map<const ir::CallNode*, int> call_device_;
  std::set<const ir::VarNode*> host_values_;
  std::set<const ir::VarNode*> shape_values_;
  std::vector<OpPlacement> placements_;
  std::map<const ir::VarNode*, size_t> index_;
  std::map<std::tuple<const ir::VarNode*, int, const void*>, Expr> copies_;
};

}  // namespace

Expected<AssignResult> Assign(const ir::IRModule& mod, const AssignOptions& options) {
  return Assigner(mod, options).Run();
}

Expected<Pass> CreateAssign(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {"strict"}); !s) return s.error();
  std::string strict = StrOption(spec, "strict", "false");
  if (strict != "true" && strict != "false") {
    return Error("option 'strict' of pass 'assign' must be true or false, got '" + strict + "'");
  }
  AssignOptions options;
  options.strict = strict == "true";
  return Pass{"assign", [options](const ir::IRModule& mod) -> Expected<ir::IRModule> {
                Expected<AssignResult> r = Assign(mod, options);
                if (!r) return r.error();
                return r->module;
              }};
}

}  // namespace quilt::passes
