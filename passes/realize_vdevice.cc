// realize-vdevice: gives every tensor of the module a virtual device (DESIGN, "Virtual-device
// rules", RealizeVDevice 1-8).
//
// Each tensor leaf of every variable is a slot; slots that must share a device are joined
// (union-find), and a group takes the device of the seeds it holds:
//  1. seeds: annotated parameters and bindings, the result of each R.hint_on_device and
//     R.to_vdevice, and each function's return annotation (per tuple field);
//  2. co-location: a binding joins its variable with every tensor it uses (op arguments,
//     aliases, tuple fields), except through hint_on_device and to_vdevice;
//  3. then the input of each hint that is still free takes the hint's device;
//  4. two seeds meeting in one group is an error naming the variable and both sources;
//  5. calls join the callee's parameters with the arguments and its result with the bound
//     variable, so two call sites that disagree are a conflict too;
//  6. the rewrite puts every tensor on its device; hint_on_device(x, d) becomes x when x is on
//     d and to_vdevice(x, d) when it is not;
//  7. a group still free takes the host (the last CPU entry) when it is a shape computation
//     (feeds tensor_to_shape, comes from shape_to_tensor), a condition or all scalars, and the
//     first entry otherwise; with fill=false free groups stay free for `assign`;
//  8. the input module is not changed, and a second run changes nothing.
// With hints=keep, R.hint_on_device is left in place for `assign`, which reads each one as a
// request to run one op on one device (user placement rules), not as a seed to spread.
#include <map>

#include "passes/pass.h"
#include "passes/vdevice_util.h"

namespace quilt::passes {
namespace {

using ir::As;
using ir::Expr;
using ir::ExprKind;
using ir::StructInfo;

int NumLeaves(const StructInfo& s) {
  if (!s) return 0;
  if (s->IsTensor()) return 1;
  if (s->kind != ir::StructInfoKind::kTuple) return 0;
  int n = 0;
  for (const StructInfo& f : s->fields) n += NumLeaves(f);
  return n;
}

// The vdevices of the tensor leaves of `s`, in order (nullopt where not placed).
std::vector<std::optional<ir::VDevice>> LeafVDevices(const StructInfo& s) {
  std::vector<std::optional<ir::VDevice>> out;
  MapVDevices(s, [&](const std::optional<ir::VDevice>& v) {
    out.push_back(v);
    return v;
  });
  return out;
}

struct Group {
  int parent = 0;
  int device = -1;      // index into the vdevice list, -1 free
  std::string source;   // where the device came from
  bool host = false;    // a shape computation, a condition or scalars only
  bool scalars = true;  // every slot is a rank-0 tensor
};

// The variable bound by the first R.hint_on_device in `seq` (If branches included), or "".
std::string FirstHint(const ir::SeqExprNode& seq) {
  for (const ir::BindingBlock& block : seq.blocks) {
    for (const ir::Binding& b : block.bindings) {
      const auto* call = ir::As<ir::CallNode>(b.value);
      if (call && call->op() && call->op()->kind == ir::OpKind::kHintOnDevice) {
        return b.var->name_hint;
      }
      if (const auto* n = ir::As<ir::IfNode>(b.value)) {
        for (const ir::SeqExpr& branch : {n->then_branch, n->else_branch}) {
          if (std::string at = FirstHint(*branch); !at.empty()) return at;
        }
      }
    }
  }
  return "";
}

class Realizer {
 public:
  Realizer(const ir::IRModule& mod, bool fill, bool keep_hints)
      : mod_(mod), fill_(fill), keep_hints_(keep_hints) {}

  Expected<ir::IRModule> Run() {
    if (mod_.vdevices.empty()) {
      // Nothing to place on; a hint here names a device the module does not have.
      for (const auto& [name, f] : mod_.functions) {
        if (std::string at = FirstHint(*f->body); !at.empty()) {
          return Error("R.hint_on_device at '" + at +
                           "', but the module has no vdevice list to place it on "
                           "(I.module_global_infos({\"vdevice\": [...]}) or update-vdevice)",
                       "function '" + name + "'");
        }
      }
      return mod_;
    }
    // Seeds from annotations first, then co-location, so a conflict is found at the binding
    // where two seeds meet.
    for (const auto& [name, f] : mod_.functions) {
      if (Status s = SeedFunction(name, *f); !s) return s.error();
    }
    for (const auto& [name, f] : mod_.functions) {
      func_ = name;
      if (Status s = JoinSeq(*f->body); !s) return s.error();
      Expected<std::vector<int>> ret = Leaves(f->body->body);
      if (!ret) return ret.error();
      returns_[name] = *ret;
    }
    for (const Hint& h : hints_) {
      for (int slot : h.input) {
        if (slot < 0) continue;
        Group& g = groups_[Find(slot)];
        if (g.device < 0) {
          g.device = h.device;
          g.source = "the R.hint_on_device at '" + h.at + "' (its input)";
        }
      }
    }
    if (fill_) {
      int host = HostVDevice(mod_.vdevices);
      for (size_t i = 0; i < groups_.size(); ++i) {
        Group& g = groups_[Find(static_cast<int>(i))];
        if (g.device < 0) g.device = g.host || g.scalars ? host : 0;
      }
    }
    return Rewrite();
  }

 private:
  struct Hint {
    std::vector<int> input;
    int device;
    std::string at;
  };

  int Find(int s) {
    while (groups_[s].parent != s) s = groups_[s].parent = groups_[groups_[s].parent].parent;
    return s;
  }

  std::string Where(const std::string& what) const { return "function '" + func_ + "', " + what; }

  // Joins two slots; `at` names the binding for the conflict message.
  Status Join(int a, int b, const std::string& at) {
    if (a < 0 || b < 0) return {};
    a = Find(a);
    b = Find(b);
    if (a == b) return {};
    Group& ga = groups_[a];
    Group& gb = groups_[b];
    if (ga.device >= 0 && gb.device >= 0 && ga.device != gb.device) {
      return Error(at + " would be on " + Name(ga.device) + " (from " + ga.source + ") and on " +
                       Name(gb.device) + " (from " + gb.source +
                       "); insert R.to_vdevice to copy one of them",
                   Where("binding '" + at + "'"));
    }
    if (ga.device < 0) {
      ga.device = gb.device;
      ga.source = gb.source;
    }
    ga.host |= gb.host;
    ga.scalars &= gb.scalars;
    gb.parent = a;
    return {};
  }

  std::string Name(int device) const {
    return mod_.vdevices[static_cast<size_t>(device)].ToString();
  }

  // Seeds slot `slot` with `device`; a different seed already there is a conflict.
  Status Seed(int slot, int device, const std::string& source, const std::string& at) {
    if (slot < 0) return {};
    Group& g = groups_[Find(slot)];
    if (g.device >= 0 && g.device != device) {
      return Error(at + " would be on " + Name(g.device) + " (from " + g.source + ") and on " +
                       Name(device) + " (from " + source + ")",
                   Where("'" + at + "'"));
    }
    if (g.device < 0) {
      g.device = device;
      g.source = source;
    }
    return {};
  }

  Expected<int> Index(const ir::VDevice& d) const {
    int i = mod_.VDeviceIndex(d);
    if (i < 0) {
      return Error("vdevice " + d.ToString() + " is not in the module's list " +
                   ir::ListVDevices(mod_.vdevices));
    }
    return i;
  }

  const std::vector<int>& Slots(const ir::VarNode* v) {
    auto it = slots_.find(v);
    if (it != slots_.end()) return it->second;
    std::vector<int> ids;
    std::vector<StructInfo> leaves;
    CollectLeaves(v->struct_info, &leaves);
    for (const StructInfo& leaf : leaves) {
      int id = static_cast<int>(groups_.size());
      Group g;
      g.parent = id;
      g.scalars = leaf->ndim == 0;
      groups_.push_back(g);
      ids.push_back(id);
    }
    return slots_.emplace(v, std::move(ids)).first->second;
  }

  static void CollectLeaves(const StructInfo& s, std::vector<StructInfo>* out) {
    if (!s) return;
    if (s->IsTensor()) {
      out->push_back(s);
    } else if (s->kind == ir::StructInfoKind::kTuple) {
      for (const StructInfo& f : s->fields) CollectLeaves(f, out);
    }
  }

  Status SeedVar(const ir::VarNode* v, const std::string& what) {
    const std::vector<int>& slots = Slots(v);
    std::vector<std::optional<ir::VDevice>> devices = LeafVDevices(v->struct_info);
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!devices[i]) continue;
      Expected<int> d = Index(*devices[i]);
      if (!d) return Error(d.error().message, Where(what));
      QUILT_TRY(Seed(slots[i], *d, "the annotation of '" + v->name_hint + "'", v->name_hint));
    }
    return {};
  }

  Status SeedFunction(const std::string& name, const ir::FunctionNode& f) {
    func_ = name;
    for (const ir::Var& p : f.params) {
      QUILT_TRY(SeedVar(p.get(), "parameter '" + p->name_hint + "'"));
    }
    return SeedSeq(f.body, f.ret_struct_info);
  }

  Status SeedSeq(const ir::SeqExpr& seq, const StructInfo& ret) {
    for (const ir::BindingBlock& block : seq->blocks) {
      for (const ir::Binding& b : block.bindings) {
        QUILT_TRY(SeedVar(b.var.get(), "binding '" + b.var->name_hint + "'"));
        if (const auto* iff = As<ir::IfNode>(b.value)) {
          QUILT_TRY(SeedSeq(iff->then_branch, nullptr));
          QUILT_TRY(SeedSeq(iff->else_branch, nullptr));
        }
      }
    }
    if (!ret || (!ret->IsTensor() && ret->kind != ir::StructInfoKind::kTuple)) return {};
    Expected<std::vector<int>> leaves = Leaves(seq->body);
    if (!leaves) return leaves.error();
    std::vector<std::optional<ir::VDevice>> devices = LeafVDevices(ret);
    if (devices.size() != leaves->size()) {
      return Error("the return annotation " + ir::Describe(ret) + " has " +
                       std::to_string(devices.size()) + " tensor field(s) but the function " +
                       "returns " + std::to_string(leaves->size()),
                   Where("return"));
    }
    for (size_t i = 0; i < devices.size(); ++i) {
      if (!devices[i]) continue;
      Expected<int> d = Index(*devices[i]);
      if (!d) return Error(d.error().message, Where("return"));
      QUILT_TRY(
          Seed((*leaves)[i], *d, "the return annotation of '" + func_ + "'", "the return value"));
    }
    return {};
  }

  // The slots of the tensor leaves of `e`; -1 for a leaf without one (a constant: it is placed
  // where it is used).
  Expected<std::vector<int>> Leaves(const Expr& e) {
    if (const auto* v = As<ir::VarNode>(e)) return Slots(v);
    if (As<ir::ConstantNode>(e))
      return std::vector<int>(static_cast<size_t>(NumLeaves(e->struct_info)), -1);
    if (const auto* t = As<ir::TupleNode>(e)) {
      std::vector<int> out;
      for (const Expr& f : t->fields) {
        Expected<std::vector<int>> l = Leaves(f);
        if (!l) return l;
        out.insert(out.end(), l->begin(), l->end());
      }
      return out;
    }
    if (const auto* g = As<ir::TupleGetItemNode>(e)) {
      Expected<std::vector<int>> all = Leaves(g->tuple);
      if (!all) return all;
      const StructInfo& ts = g->tuple->struct_info;
      if (all->empty() || !ts || ts->kind != ir::StructInfoKind::kTuple) return std::vector<int>{};
      size_t begin = 0;
      for (int i = 0; i < g->index; ++i) begin += static_cast<size_t>(NumLeaves(ts->fields[i]));
      size_t n = static_cast<size_t>(NumLeaves(ts->fields[static_cast<size_t>(g->index)]));
      return std::vector<int>(all->begin() + static_cast<std::ptrdiff_t>(begin),
                              all->begin() + static_cast<std::ptrdiff_t>(begin + n));
    }
    return std::vector<int>{};
  }

  Status JoinAll(const std::vector<int>& slots, const std::string& at) {
    for (size_t i = 1; i < slots.size(); ++i) QUILT_TRY(Join(slots[0], slots[i], at));
    return {};
  }

  Status JoinPairwise(const std::vector<int>& a, const std::vector<int>& b, const std::string& at) {
    if (a.size() != b.size()) return {};
    for (size_t i = 0; i < a.size(); ++i) QUILT_TRY(Join(a[i], b[i], at));
    return {};
  }

  void MarkHost(const std::vector<int>& slots) {
    for (int s : slots) {
      if (s >= 0) groups_[Find(s)].host = true;
    }
  }

  Status JoinSeq(const ir::SeqExprNode& seq) {
    for (const ir::BindingBlock& block : seq.blocks) {
      for (const ir::Binding& b : block.bindings) QUILT_TRY(JoinBinding(b));
    }
    return {};
  }

  Status JoinBinding(const ir::Binding& b) {
    const std::string& at = b.var->name_hint;
    std::vector<int> out = Slots(b.var.get());
    if (const auto* iff = As<ir::IfNode>(b.value)) {
      Expected<std::vector<int>> cond = Leaves(iff->cond);
      if (!cond) return cond.error();
      MarkHost(*cond);
      for (const ir::SeqExpr& branch : {iff->then_branch, iff->else_branch}) {
        QUILT_TRY(JoinSeq(*branch));
        Expected<std::vector<int>> r = Leaves(branch->body);
        if (!r) return r.error();
        QUILT_TRY(JoinPairwise(out, *r, at));
      }
      return {};
    }
    const auto* call = As<ir::CallNode>(b.value);
    if (!call) {
      Expected<std::vector<int>> in = Leaves(b.value);
      if (!in) return in.error();
      return JoinPairwise(out, *in, at);
    }
    std::vector<std::vector<int>> args;
    for (const Expr& a : call->args) {
      Expected<std::vector<int>> l = Leaves(a);
      if (!l) return l.error();
      args.push_back(*l);
    }
    if (const auto* gv = As<ir::GlobalVarNode>(call->callee)) {
      ir::Function callee = mod_.Lookup(gv->name);
      if (!callee) return Error("call of unknown function '" + gv->name + "'", Where(at));
      std::string site = "function '" + func_ + "', binding '" + at + "'";
      for (size_t i = 0; i < callee->params.size() && i < args.size(); ++i) {
        const ir::Var& param = callee->params[i];
        const std::vector<int>& slots = Slots(param.get());
        // Two call sites that pass this parameter on different devices: name the callee, the
        // parameter and both sites (the caller's binding alone would hide the other one).
        for (size_t k = 0; k < slots.size() && k < args[i].size(); ++k) {
          if (slots[k] < 0 || args[i][k] < 0) continue;
          int device = groups_[Find(args[i][k])].device;
          if (device < 0) continue;
          auto [first, fresh] = param_sites_.try_emplace(slots[k], device, site);
          if (!fresh && first->second.first != device) {
            return Error("passed on " + Name(first->second.first) + " by the call at " +
                             first->second.second + " and on " + Name(device) + " by the call at " +
                             site +
                             "; a function has one placement: insert R.to_vdevice at one of "
                             "the calls",
                         "function '" + gv->name + "', parameter '" + param->name_hint + "'");
          }
        }
        if (Status st = JoinPairwise(slots, args[i], at); !st) {
          return Error("the call of '" + gv->name + "' passes parameter '" + param->name_hint +
                           "' where it cannot be: " + st.error().message,
                       st.error().location);
        }
      }
      std::string saved = func_;
      func_ = gv->name;
      Expected<std::vector<int>> ret = Leaves(callee->body->body);
      func_ = saved;
      if (!ret) return ret.error();
      return JoinPairwise(out, *ret, at);
    }
    const ir::OpInfo* op = call->op();
    if (op && op->kind == ir::OpKind::kHintOnDevice && keep_hints_) return {};
    if (op && op->kind == ir::OpKind::kHintOnDevice) {
      Expected<int> d = HintTarget(*call, mod_.vdevices);
      if (!d) return Error(d.error().message, Where("binding '" + at + "'"));
      hint_device_[call] = *d;
      for (int s : out) {
        QUILT_TRY(Seed(s, *d, "the R.hint_on_device at '" + at + "'", at));
      }
      hints_.push_back({args.empty() ? std::vector<int>{} : args[0], *d, at});
      return {};
    }
    if (op && op->kind == ir::OpKind::kToVDevice) {
      Expected<int> d = Index(*call->attrs.Get<ir::VDevice>("dst_vdevice"));
      if (!d) return Error(d.error().message, Where("binding '" + at + "'"));
      for (int s : out) {
        QUILT_TRY(Seed(s, *d, "the R.to_vdevice at '" + at + "'", at));
      }
      return {};
    }
    if (op && op->kind == ir::OpKind::kTensorToShape) {
      for (const auto& a : args) MarkHost(a);
    }
    if (op && op->kind == ir::OpKind::kShapeToTensor) MarkHost(out);
    std::vector<int> all;
    for (int s : out) {
      if (s >= 0) all.push_back(s);
    }
    for (const auto& a : args) {
      for (int s : a) {
        if (s >= 0) all.push_back(s);
      }
    }
    return JoinAll(all, at);
  }

  std::optional<ir::VDevice> DeviceOf(int slot) {
    if (slot < 0) return std::nullopt;
    int d = groups_[Find(slot)].device;
    if (d < 0) return std::nullopt;
    return mod_.vdevices[static_cast<size_t>(d)];
  }

  StructInfo Place(const StructInfo& s, const std::vector<int>& slots) {
    size_t i = 0;
    return MapVDevices(s, [&](const std::optional<ir::VDevice>& old) {
      std::optional<ir::VDevice> d = i < slots.size() ? DeviceOf(slots[i]) : old;
      ++i;
      return d ? d : old;
    });
  }

  Expected<ir::IRModule> Rewrite() {
    ir::NormalizeHooks hooks;
    hooks.annotation = [&](const std::string&, const ir::Var& v) {
      auto it = slots_.find(v.get());
      return it == slots_.end() ? v->struct_info : Place(v->struct_info, it->second);
    };
    hooks.ret = [&](const std::string& func, const StructInfo& old) -> StructInfo {
      auto it = returns_.find(func);
      // An undeclared return is inferred from the body, which is placed already.
      if (!old || it == returns_.end()) return old;
      return Place(old, it->second);
    };
    hooks.call = [&](const std::string&, const ir::CallNode& call, const std::vector<Expr>& args,
                     ir::NormalizeHooks::Emitter&) -> Expected<Expr> {
      auto it = hint_device_.find(&call);
      if (it == hint_device_.end()) return Expr();
      const ir::VDevice& d = mod_.vdevices[static_cast<size_t>(it->second)];
      const StructInfo& in = args[0]->struct_info;
      if (in && in->vdevice == d) return args[0];
      ir::Attrs attrs;
      attrs.Set("dst_vdevice", d);
      return ir::MakeOpCall(ir::OpKind::kToVDevice, {args[0]}, attrs);
    };
    return ir::NormalizeModule(mod_, hooks);
  }

  const ir::IRModule& mod_;
  bool fill_;
  bool keep_hints_;
  std::string func_;
  std::vector<Group> groups_;
  // Per callee parameter slot: the device a call first passed it on, and that call site.
  std::map<int, std::pair<int, std::string>> param_sites_;
  std::map<const ir::VarNode*, std::vector<int>> slots_;
  std::map<std::string, std::vector<int>> returns_;
  std::map<const ir::CallNode*, int> hint_device_;
  std::vector<Hint> hints_;
};

}  // namespace

Expected<Pass> CreateRealizeVDevice(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {"fill", "hints"}); !s) return s.error();
  std::string fill = StrOption(spec, "fill", "true");
  if (fill != "true" && fill != "false") {
    return Error("option 'fill' of pass 'realize-vdevice' must be true or false, got '" + fill +
                 "'");
  }
  std::string hints = StrOption(spec, "hints", "realize");
  if (hints != "realize" && hints != "keep") {
    return Error("option 'hints' of pass 'realize-vdevice' must be realize or keep, got '" + hints +
                 "'");
  }
  bool f = fill == "true";
  bool keep = hints == "keep";
  return Pass{"realize-vdevice",
              [f, keep](const ir::IRModule& mod) { return Realizer(mod, f, keep).Run(); }};
}

}  // namespace quilt::passes
