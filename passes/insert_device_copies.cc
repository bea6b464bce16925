// insert-device-copies: the copies between devices, made final (DESIGN step 9). `assign` already
// put an R.to_vdevice on every edge between vdevices (the IR requires one: an op's tensors share
// one vdevice, and a call's arguments sit where its parameters do); this pass leaves exactly
// the copies that move data:
//  - a copy between two vdevices of one physical device (say "cuda" and "nvptx" on GPU 0)
//    moves nothing: where its result only feeds calls (regions), it becomes an alias of its
//    input, which a call may take on another vdevice of the same physical device;
// A constant has no vdevice of its own (co-location ignores it): lowering uploads it to each
// device whose ops read it, so a constant used on two devices is placed on both.
#include <map>
#include <set>

#include "ir/builder.h"
#include "ir/op.h"
#include "passes/pass.h"
#include "passes/vdevice_util.h"

namespace quilt::passes {
namespace {

using ir::As;
using ir::Expr;

bool IsCopy(const Expr& e) {
  const auto* call = As<ir::CallNode>(e);
  return call && call->op() && call->op()->kind == ir::OpKind::kToVDevice;
}

// Variables of `seq` (top-level blocks) used anywhere but as a direct argument of a function call.
std::set<const ir::VarNode*> UsedOutsideCalls(const ir::SeqExprNode& seq) {
  std::set<const ir::VarNode*> out;
  std::function<void(const Expr&, bool)> use = [&](const Expr& e, bool call_arg) {
    if (const auto* v = As<ir::VarNode>(e)) {
      if (!call_arg) out.insert(v);
    } else if (const auto* t = As<ir::TupleNode>(e)) {
      for (const Expr& f : t->fields) use(f, false);
    } else if (const auto* g = As<ir::TupleGetItemNode>(e)) {
      use(g->tuple, false);
    } else if (const auto* c = As<ir::CallNode>(e)) {
      bool function = As<ir::GlobalVarNode>(c->callee) != nullptr;
      for (const Expr& a : c->args) use(a, function);
    } else if (const auto* i = As<ir::IfNode>(e)) {
      use(i->cond, false);
      for (const ir::SeqExpr& b : {i->then_branch, i->else_branch}) {
        for (const ir::Var& v : ir::FreeVars(*b, {})) out.insert(v.get());
      }
    }
  };
  for (const ir::BindingBlock& block : seq.blocks) {
    for (const ir::Binding& b : block.bindings) use(b.value, false);
  }
  use(seq.body, false);
  return out;
}

Expected<ir::IRModule> InsertDeviceCopies(const ir::IRModule& mod) {
  // Which copies become aliases is decided on the old module: same physical device and used only
  // as call arguments. Both the copy (to replace) and its variable (to re-annotate) are kept.
  std::set<const ir::CallNode*> alias_calls;
  std::set<const ir::VarNode*> aliases;
  for (const auto& [name, f] : mod.functions) {
    std::set<const ir::VarNode*> escaping = UsedOutsideCalls(*f->body);
    for (const ir::BindingBlock& block : f->body->blocks) {
      for (const ir::Binding& b : block.bindings) {
        if (!IsCopy(b.value)) continue;
        const auto* call = As<ir::CallNode>(b.value);
        const ir::StructInfo& in = call->args[0]->struct_info;
        const ir::VDevice& dst = *call->attrs.Get<ir::VDevice>("dst_vdevice");
        if (in && in->vdevice && in->vdevice->SamePhysicalDevice(dst) && *in->vdevice != dst &&
            !escaping.count(b.var.get())) {
          alias_calls.insert(call);
          aliases.insert(b.var.get());
        }
      }
    }
  }
  ir::NormalizeHooks hooks;
  hooks.call = [&](const std::string&, const ir::CallNode& call, const std::vector<Expr>& args,
                   ir::NormalizeHooks::Emitter&) -> Expected<Expr> {
    return alias_calls.count(&call) ? args[0] : Expr();
  };
  hooks.annotation = [&](const std::string&, const ir::Var& v) -> ir::StructInfo {
    if (!aliases.count(v.get())) return v->struct_info;
    // The alias stays where its input is.
    return MapVDevices(v->struct_info, [](const std::optional<ir::VDevice>&) {
      return std::optional<ir::VDevice>();
    });
  };
  return ir::NormalizeModule(mod, hooks);
}

}  // namespace

Expected<Pass> CreateInsertDeviceCopies(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {}); !s) return s.error();
  return Pass{"insert-device-copies",
              [](const ir::IRModule& mod) { return InsertDeviceCopies(mod); }};
}

}  // namespace quilt::passes
