#include "ir/verifier.h"

#include <set>

#include "ir/builder.h"
#include "ir/op.h"

namespace quilt::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const IRModule& mod) : mod_(mod) {}

  Status Run() {
    for (const auto& [name, f] : mod_.functions) {
      func_ = name;
      pure_ = f->is_pure;
      defined_.clear();
      live_dataflow_.clear();
      for (const Var& p : f->params) {
        if (Status s = Define(p); !s) return s;
      }
      if (Status s = CheckSInfo(f->ret_struct_info, "the return type"); !s) return s;
      if (Status s = Seq(*f->body); !s) return s;
    }
    return {};
  }

 private:
  Diagnostic Problem(const std::string& what) const {
    return Error(what, "function '" + func_ + "'");
  }

  Status CheckSInfo(const StructInfo& s, const std::string& what) {
    if (!s) return Problem(what + " has no struct info");
    if (s->vdevice && mod_.VDeviceIndex(*s->vdevice) < 0) {
      return Problem(what + " is on " + s->vdevice->ToString() +
                     ", which is not in the module's vdevice list");
    }
    for (const StructInfo& f : s->fields) {
      if (Status st = CheckSInfo(f, what); !st) return st;
    }
    if (s->ret) return CheckSInfo(s->ret, what);
    return {};
  }

  Status Define(const Var& v) {
    if (!defined_.insert(v.get()).second) {
      return Problem("variable '" + v->name_hint + "' is defined twice");
    }
    return CheckSInfo(v->struct_info, "'" + v->name_hint + "'");
  }

  Status Seq(const SeqExprNode& seq) {
    for (const BindingBlock& block : seq.blocks) {
      for (const Binding& b : block.bindings) {
        if (b.var->IsDataflow() && !block.dataflow) {
          return Problem("dataflow variable '" + b.var->name_hint +
                         "' is bound outside a dataflow block");
        }
        if (Status s = Use(b.value, b.var->name_hint); !s) return s;
        if (Status s = Define(b.var); !s) return s;
        if (Status s = Agrees(b); !s) return s;
        if (b.var->IsDataflow()) live_dataflow_.insert(b.var.get());
      }
      // Dataflow variables end with their block.
      for (const Binding& b : block.bindings) live_dataflow_.erase(b.var.get());
    }
    return Use(seq.body, "the result");
  }

  Status Agrees(const Binding& b) {
    const CallNode* call = As<CallNode>(b.value);
    if (!call || !call->op()) return {};
    if (call->op()->kind == OpKind::kMatchCast) {
      if (call->args.size() != 1 || call->sinfo_args.size() != 1) {
        return Problem("'" + b.var->name_hint + "': R.match_cast needs a value and a struct info");
      }
      Expected<Expr> again = MakeMatchCast(call->args[0], call->sinfo_args[0]);
      if (!again) return Problem("'" + b.var->name_hint + "': " + again.error().message);
      Expected<StructInfo> r = Refine(b.var->struct_info, (*again)->struct_info);
      if (!r) return Problem("'" + b.var->name_hint + "': " + r.error().message);
      return {};
    }
    Expected<StructInfo> inferred = InferCall(*call->op(), call->args, call->attrs);
    if (!inferred) return Problem("'" + b.var->name_hint + "': " + inferred.error().message);
    Expected<StructInfo> r = Refine(b.var->struct_info, *inferred);
    if (!r) return Problem("'" + b.var->name_hint + "': " + r.error().message);
    return {};
  }

  Status Use(const Expr& e, const std::string& where) {
    if (!e) return Problem(where + ": missing expression");
    switch (e->kind) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        const auto* v = static_cast<const VarNode*>(e.get());
        if (!defined_.count(v)) {
          return Problem(where + ": '" + v->name_hint + "' is used before it is defined");
        }
        if (v->IsDataflow() && !live_dataflow_.count(v)) {
          return Problem(where + ": dataflow variable '" + v->name_hint +
                         "' is used outside its block");
        }
        return {};
      }
      case ExprKind::kCall: {
        const auto* c = As<CallNode>(e);
        if (const auto* gv = As<GlobalVarNode>(c->callee)) {
          Function f = mod_.Lookup(gv->name);
          if (!f) return Problem(where + ": calls unknown function '" + gv->name + "'");
          if (f->params.size() != c->args.size()) {
            return Problem(where + ": '" + gv->name + "' takes " +
                           std::to_string(f->params.size()) + " argument(s), got " +
                           std::to_string(c->args.size()));
          }
        }
        if (const auto* ext = As<ExternFuncNode>(c->callee)) {
          if (!ext->IsPure() && pure_) {
            return Problem(where + ": R.call_packed(\"" + ext->name +
                           "\") is impure, in a pure function");
          }
          if (ext->style == ExternStyle::kTir && !mod_.LookupPrimFunc(ext->name)) {
            return Problem(where + ": R.call_tir of unknown prim_func '" + ext->name + "'");
          }
        }
        if (const VDevice* d = c->attrs.Get<VDevice>("dst_vdevice");
            d && mod_.VDeviceIndex(*d) < 0) {
          return Problem(where + ": copies to " + d->ToString() +
                         ", which is not in the vdevice list");
        }
        for (const Expr& a : c->args) {
          if (Status s = Use(a, where); !s) return s;
        }
        return {};
      }
      case ExprKind::kTuple:
        for (const Expr& f : As<TupleNode>(e)->fields) {
          if (Status s = Use(f, where); !s) return s;
        }
        return {};
      case ExprKind::kTupleGetItem:
        return Use(As<TupleGetItemNode>(e)->tuple, where);
      case ExprKind::kIf: {
        const auto* n = As<IfNode>(e);
        if (Status s = Use(n->cond, where); !s) return s;
        if (Status s = Seq(*n->then_branch); !s) return s;
        return Seq(*n->else_branch);
      }
      case ExprKind::kSeqExpr:
        return Seq(*As<SeqExprNode>(e));
      case ExprKind::kConstant:
        return CheckSInfo(e->struct_info, where);
      case ExprKind::kShapeExpr:
      case ExprKind::kPrimValue:
      case ExprKind::kStringImm:
      case ExprKind::kGlobalVar:
      case ExprKind::kOp:
      case ExprKind::kExternFunc:
        return {};
      case ExprKind::kFunction:
        return Problem(where + ": nested functions are not supported");
    }
    return {};
  }

  const IRModule& mod_;
  std::string func_;
  bool pure_ = true;
  std::set<const VarNode*> defined_;
  std::set<const VarNode*> live_dataflow_;
};

}  // namespace

Status Verify(const IRModule& mod) { return Verifier(mod).Run(); }

}  // namespace quilt::ir
