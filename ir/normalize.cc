// NormalizeModule: rebuilds every function through the builder so that each struct info is
// what inference gives, refined by the annotations already there.
//  1. Functions are visited callees first (a call needs its callee's signature); a recursive
//     call uses the callee's signature as it stands.
//  2. Parameters keep their annotations. Each binding's value is rebuilt from the new
//     arguments; the bound variable's old struct info acts as its annotation (Refine).
//  3. The return struct info is the declared one refined with the body's.
// Hooks (NormalizeHooks) let a pass change annotations, calls and constants on the way.
#include <map>
#include <set>

#include "ir/builder.h"

namespace quilt::ir {
namespace {

class Normalizer : public NormalizeHooks::Emitter {
 public:
  Normalizer(const IRModule& mod, const NormalizeHooks& hooks) : mod_(mod), hooks_(hooks) {}

  Expected<IRModule> Run() {
    for (const auto& [name, f] : mod_.functions) {
      Expected<Function> g = NormalizeFunction(name);
      if (!g) return g.error();
    }
    IRModule out = mod_;
    for (auto& [name, f] : out.functions) f = done_.at(name);
    return out;
  }

 private:
  Expected<Function> NormalizeFunction(const std::string& name) {
    if (auto it = done_.find(name); it != done_.end()) return it->second;
    Function f = mod_.Lookup(name);
    in_progress_.insert(name);
    std::string saved = func_name_;
    func_name_ = name;
    std::vector<Var> params;
    for (const Var& p : f->params) params.push_back(Rebind(p, Annotation(p)));
    Expected<SeqExpr> body = VisitSeq(f->body, /*top=*/true);
    StructInfo ret = f->ret_struct_info;
    if (hooks_.ret) ret = hooks_.ret(name, ret);
    func_name_ = saved;
    in_progress_.erase(name);
    if (!body) return body.error();
    Expected<Function> g =
        MakeFunction(params, *body, ret, f->attrs, f->is_pure, f->is_private, f->param_defaults);
    if (!g) return Error(g.error().message, "function '" + name + "'");
    done_[name] = *g;
    return g;
  }

  StructInfo Annotation(const Var& v) const {
    return hooks_.annotation ? hooks_.annotation(func_name_, v) : v->struct_info;
  }

  Var Rebind(const Var& old, StructInfo sinfo) {
    Var v = MakeVar(old->name_hint, std::move(sinfo), old->IsDataflow() && !hooks_.drop_dataflow);
    vars_[old.get()] = v;
    return v;
  }

  Expected<SeqExpr> VisitSeq(const SeqExpr& seq, bool top = false) {
    std::vector<BindingBlock> blocks;
    BindingBlock* saved_block = block_;
    std::string saved_source = source_;
    std::string saved_op = source_op_;
    for (const BindingBlock& block : seq->blocks) {
      BindingBlock nb{block.dataflow && !hooks_.drop_dataflow, {}};
      block_ = &nb;
      for (const Binding& b : block.bindings) {
        source_ = b.source;
        source_op_ = b.source_op;
        Expected<Expr> value = Visit(b.value);
        if (!value) return Error(value.error().message, Where(b.var));
        Expected<StructInfo> sinfo = Refine(Annotation(b.var), (*value)->struct_info);
        if (!sinfo) return Error(sinfo.error().message, Where(b.var));
        nb.bindings.push_back({Rebind(b.var, *sinfo), *value, b.source, b.source_op});
      }
      blocks.push_back(std::move(nb));
    }
    block_ = saved_block;
    source_ = saved_source;
    source_op_ = saved_op;
    Expected<Expr> body = Visit(seq->body);
    if (!body) return Error(body.error().message, "function '" + func_name_ + "', return");
    // A block's result that is a call, an If or a block (as the text form writes a branch's last
    // binding, `z = R.exp(x)`) is bound to a variable of its own, as TVM's normalizer does: a
    // block ends in a leaf.
    if (ExprKind k = (*body)->kind;
        k == ExprKind::kCall || k == ExprKind::kIf || k == ExprKind::kSeqExpr) {
      BindingBlock result{false, {}};
      Var v = MakeVar("lv", (*body)->struct_info, false);
      result.bindings.push_back({v, *body, saved_source, saved_op});
      blocks.push_back(std::move(result));
      body = Expr(v);
    }
    // So is an item of a tuple in the result (`return (a, s[0])`, or `return s[0]`), as the
    // importer writes it: a function returns variables' tensors (a region of partition then
    // exports tensors, not the tuple; a copy of an item to another device has a binding to copy).
    auto item_var = [](const Expr& item) {
      const auto* get = As<TupleGetItemNode>(item);
      std::string name = "item";
      if (const auto* tuple = get ? As<VarNode>(get->tuple) : nullptr) name = tuple->name_hint;
      return MakeVar(name + "_" + std::to_string(get ? get->index : 0), item->struct_info, false);
    };
    BindingBlock items{false, {}};
    if ((*body)->kind == ExprKind::kTupleGetItem) {
      Var v = item_var(*body);
      items.bindings.push_back({v, *body, saved_source, saved_op});
      body = Expr(v);
    } else if (const auto* tuple = As<TupleNode>(*body)) {
      std::vector<Expr> fields = tuple->fields;
      for (Expr& field : fields) {
        if (field->kind != ExprKind::kTupleGetItem) continue;
        Var v = item_var(field);
        items.bindings.push_back({v, field, saved_source, saved_op});
        field = v;
      }
      if (!items.bindings.empty()) body = MakeTuple(std::move(fields));
    }
    if (!items.bindings.empty()) blocks.push_back(std::move(items));
    if (top && hooks_.result) {
      BindingBlock tail{false, {}};
      block_ = &tail;
      source_.clear();
      source_op_.clear();
      body = hooks_.result(func_name_, *body, *this);
      block_ = saved_block;
      if (!body) return Error(body.error().message, "function '" + func_name_ + "', return");
      if (!tail.bindings.empty()) blocks.push_back(std::move(tail));
    }
    return MakeSeqExpr(std::move(blocks), *body);
  }

  // Adds a binding to the block being rebuilt (before the binding being visited).
  const void* Block() const override { return block_; }
  Var Emit(const std::string& name, Expr value) override {
    QUILT_CHECK(block_ != nullptr) << "emit outside a binding block";
    Var v = MakeVar(name, value->struct_info, block_->dataflow);
    block_->bindings.push_back({v, std::move(value), source_, source_op_});
    return v;
  }

  std::string Where(const Var& v) const {
    return "function '" + func_name_ + "', binding '" + v->name_hint + "'";
  }

  Expected<std::vector<Expr>> VisitAll(const std::vector<Expr>& exprs) {
    std::vector<Expr> out;
    for (const Expr& e : exprs) {
      Expected<Expr> n = Visit(e);
      if (!n) return n.error();
      out.push_back(*n);
    }
    return out;
  }

  Expected<Expr> Visit(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        auto it = vars_.find(static_cast<const VarNode*>(e.get()));
        return it == vars_.end() ? e : Expr(it->second);
      }
      case ExprKind::kConstant: {
        Expr c = hooks_.constant ? hooks_.constant(func_name_, e) : nullptr;
        return c ? c : e;
      }
      case ExprKind::kShapeExpr:
      case ExprKind::kPrimValue:
      case ExprKind::kStringImm:
      case ExprKind::kOp:
      case ExprKind::kExternFunc:
        return e;
      case ExprKind::kGlobalVar:
        return VisitGlobalVar(*As<GlobalVarNode>(e));
      case ExprKind::kTuple: {
        Expected<std::vector<Expr>> fields = VisitAll(As<TupleNode>(e)->fields);
        if (!fields) return fields.error();
        return MakeTuple(std::move(*fields));
      }
      case ExprKind::kTupleGetItem: {
        const auto* t = As<TupleGetItemNode>(e);
        Expected<Expr> tuple = Visit(t->tuple);
        if (!tuple) return tuple;
        return MakeTupleGetItem(*tuple, t->index);
      }
      case ExprKind::kCall:
        return VisitCall(*As<CallNode>(e));
      case ExprKind::kIf: {
        const auto* n = As<IfNode>(e);
        Expected<Expr> cond = Visit(n->cond);
        if (!cond) return cond;
        Expected<SeqExpr> then_branch = VisitSeq(n->then_branch);
        if (!then_branch) return then_branch.error();
        Expected<SeqExpr> else_branch = VisitSeq(n->else_branch);
        if (!else_branch) return else_branch.error();
        return MakeIf(*cond, *then_branch, *else_branch);
      }
      case ExprKind::kSeqExpr: {
        Expected<SeqExpr> s = VisitSeq(AsPtr<SeqExprNode>(e));
        if (!s) return s.error();
        return Expr(*s);
      }
      case ExprKind::kFunction:
        return Error("nested functions are not supported");
    }
    return e;
  }

  Expected<Expr> VisitGlobalVar(const GlobalVarNode& gv) {
    Function callee = mod_.Lookup(gv.name);
    if (!callee) return Error("call of unknown function '" + gv.name + "'");
    if (in_progress_.count(gv.name)) return MakeGlobalVar(gv.name, FunctionSInfo(*callee));
    // Callee first; its variables are its own, so keep ours aside.
    auto saved = std::move(vars_);
    vars_.clear();
    Expected<Function> f = NormalizeFunction(gv.name);
    vars_ = std::move(saved);
    if (!f) return f.error();
    return MakeGlobalVar(gv.name, (*f)->struct_info);
  }

  Expected<Expr> VisitCall(const CallNode& call) {
    Expected<std::vector<Expr>> args = VisitAll(call.args);
    if (!args) return args.error();
    if (hooks_.call) {
      Expected<Expr> replaced = hooks_.call(func_name_, call, *args, *this);
      if (!replaced || *replaced) return replaced;
    }
    if (const OpInfo* op = call.op()) {
      if (op->kind == OpKind::kMatchCast) return MakeMatchCast((*args)[0], call.sinfo_args[0]);
      return MakeOpCall(*op, std::move(*args), call.attrs);
    }
    if (const auto* ext = As<ExternFuncNode>(call.callee)) {
      return MakeExternCall(ext->name, std::move(*args), call.sinfo_args, ext->style);
    }
    Expected<Expr> callee = Visit(call.callee);
    if (!callee) return callee;
    return MakeFuncCall(*callee, std::move(*args));
  }

  const IRModule& mod_;
  const NormalizeHooks& hooks_;
  BindingBlock* block_ = nullptr;
  std::string source_;
  std::string source_op_;
  std::map<std::string, Function> done_;
  std::set<std::string> in_progress_;
  std::map<const VarNode*, Var> vars_;
  std::string func_name_;
};

}  // namespace

Expected<IRModule> NormalizeModule(const IRModule& mod) { return Normalizer(mod, {}).Run(); }

Expected<IRModule> NormalizeModule(const IRModule& mod, const NormalizeHooks& hooks) {
  return Normalizer(mod, hooks).Run();
}

}  // namespace quilt::ir
