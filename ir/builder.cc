#include "ir/builder.h"

#include <functional>
#include <map>
#include <set>

namespace quilt::ir {
namespace {

// Replaces symbolic variables of a callee's signature by what the call's arguments give.
class SymSubst {
 public:
  // Matches a parameter's struct info against an argument's and records var -> dim.
  void Match(const StructInfo& param, const StructInfo& arg) {
    if (!param || !arg) return;
    if ((param->IsTensor() || param->kind == StructInfoKind::kShape) && param->shape &&
        arg->shape && param->shape->size() == arg->shape->size()) {
      for (size_t i = 0; i < param->shape->size(); ++i) {
        const PrimExpr& p = (*param->shape)[i];
        if (p->kind == PrimKind::kVar && !map_.count(p.get())) map_[p.get()] = (*arg->shape)[i];
      }
    }
    if (param->kind == StructInfoKind::kTuple && arg->kind == StructInfoKind::kTuple &&
        param->fields.size() == arg->fields.size()) {
      for (size_t i = 0; i < param->fields.size(); ++i) Match(param->fields[i], arg->fields[i]);
    }
  }
  PrimExpr Apply(const PrimExpr& e) const {
    if (!e) return e;
    if (e->kind == PrimKind::kVar) {
      auto it = map_.find(e.get());
      return it == map_.end() ? e : it->second;
    }
    if (!e->a) return e;
    return MakeBinary(e->kind, Apply(e->a), Apply(e->b));
  }
  StructInfo Apply(const StructInfo& s) const {
    if (!s || map_.empty()) return s;
    auto n = std::make_shared<StructInfoNode>(*s);
    if (n->shape) {
      for (PrimExpr& d : *n->shape) d = Apply(d);
    }
    n->value = Apply(n->value);
    for (StructInfo& f : n->fields) f = Apply(f);
    n->ret = Apply(n->ret);
    return n;
  }

 private:
  std::map<const PrimExprNode*, PrimExpr> map_;
};

// The struct info that covers both branches of an If: equal parts are kept, the rest is erased.
StructInfo Unify(const StructInfo& a, const StructInfo& b) {
  if (!a || !b || a->kind != b->kind) return ObjectSInfo();
  switch (a->kind) {
    case StructInfoKind::kTensor: {
      std::optional<std::vector<PrimExpr>> shape = a->shape;
      if (!b->shape || !a->shape || a->shape->size() != b->shape->size()) {
        shape.reset();
      } else {
        for (size_t i = 0; i < shape->size(); ++i) {
          if (!PrimEqual((*a->shape)[i], (*b->shape)[i])) shape.reset();
          if (!shape) break;
        }
      }
      int ndim = a->ndim == b->ndim ? a->ndim : -1;
      DataType dtype = a->dtype == b->dtype ? a->dtype : DataType::kVoid;
      std::optional<VDevice> d = a->vdevice == b->vdevice ? a->vdevice : std::nullopt;
      return TensorSInfo(shape, dtype, d, ndim);
    }
    case StructInfoKind::kTuple: {
      if (a->fields.size() != b->fields.size()) return ObjectSInfo();
      std::vector<StructInfo> fields;
      for (size_t i = 0; i < a->fields.size(); ++i)
        fields.push_back(Unify(a->fields[i], b->fields[i]));
      return TupleSInfo(std::move(fields));
    }
    default:
      return a;
  }
}

}  // namespace

Var MakeVar(std::string name, StructInfo sinfo, bool dataflow) {
  return std::make_shared<VarNode>(std::move(name), std::move(sinfo), dataflow);
}

Expected<Expr> MakeOpCall(OpKind kind, std::vector<Expr> args, Attrs attrs) {
  return MakeOpCall(GetOp(kind), std::move(args), std::move(attrs));
}

Expected<Expr> MakeOpCall(const OpInfo& op, std::vector<Expr> args, Attrs attrs) {
  Expected<Attrs> canonical = CanonicalAttrs(op, std::move(attrs));
  if (!canonical) return canonical.error();
  Expected<StructInfo> sinfo = InferCall(op, args, *canonical);
  if (!sinfo) return sinfo.error();
  auto call = std::make_shared<CallNode>();
  call->callee = OpExpr(op.kind);
  call->args = std::move(args);
  call->attrs = std::move(*canonical);
  call->struct_info = std::move(*sinfo);
  return Expr(call);
}

Expected<Expr> MakeFuncCall(Expr callee, std::vector<Expr> args) {
  const GlobalVarNode* gv = As<GlobalVarNode>(callee);
  QUILT_CHECK(gv && callee->struct_info && callee->struct_info->kind == StructInfoKind::kFunc);
  const StructInfo& f = callee->struct_info;
  if (args.size() != f->fields.size()) {
    return Error("function '" + gv->name + "' takes " + std::to_string(f->fields.size()) +
                 " argument(s), got " + std::to_string(args.size()));
  }
  SymSubst subst;
  for (size_t i = 0; i < args.size(); ++i) {
    const StructInfo& p = f->fields[i];
    const StructInfo& a = args[i]->struct_info;
    subst.Match(p, a);
    // Another vdevice of the same physical device shares its memory: no copy is needed.
    if (p && a && p->IsTensor() && a->IsTensor() && p->vdevice && a->vdevice &&
        !p->vdevice->SamePhysicalDevice(*a->vdevice)) {
      return Error("argument " + std::to_string(i) + " (" + ArgName(args[i]) + ") of '" + gv->name +
                   "' is on " + a->vdevice->ToString() + " but the parameter is on " +
                   p->vdevice->ToString());
    }
  }
  auto call = std::make_shared<CallNode>();
  call->callee = std::move(callee);
  call->args = std::move(args);
  call->struct_info = subst.Apply(f->ret);
  return Expr(call);
}

Expr MakeGlobalVar(std::string name, StructInfo func_sinfo) {
  auto gv = std::make_shared<GlobalVarNode>(std::move(name));
  gv->struct_info = std::move(func_sinfo);
  return gv;
}

Expected<Expr> MakeMatchCast(Expr value, StructInfo sinfo) {
  if (!value || !sinfo) return Error("R.match_cast needs a value and a struct info");
  const StructInfo& have = value->struct_info;
  StructInfo result = sinfo;
  if (sinfo->IsTensor() && have && have->IsTensor() && have->vdevice) {
    if (sinfo->vdevice && *sinfo->vdevice != *have->vdevice) {
      return Error("R.match_cast: the value is on " + have->vdevice->ToString() +
                   ", the struct info on " + sinfo->vdevice->ToString());
    }
    if (!sinfo->vdevice) result = WithVDevice(sinfo, *have->vdevice);
  }
  // What is known of the value must agree with the cast; the cast may know more.
  if (Expected<StructInfo> r = Refine(result, have); !r) {
    return Error("R.match_cast: " + r.error().message);
  }
  auto call = std::make_shared<CallNode>();
  call->callee = OpExpr(OpKind::kMatchCast);
  call->args = {std::move(value)};
  call->sinfo_args = {std::move(sinfo)};
  call->struct_info = std::move(result);
  return Expr(call);
}

Expr MakeExternCall(std::string name, std::vector<Expr> args, std::vector<StructInfo> sinfo_args,
                    ExternStyle style) {
  auto call = std::make_shared<CallNode>();
  auto callee = std::make_shared<ExternFuncNode>(std::move(name), style);
  callee->struct_info = ObjectSInfo();
  call->callee = callee;
  call->args = std::move(args);
  call->struct_info = sinfo_args.size() == 1 ? sinfo_args[0]
                      : sinfo_args.empty()   ? ObjectSInfo()
                                             : TupleSInfo(sinfo_args);
  call->sinfo_args = std::move(sinfo_args);
  return call;
}

Expr MakeTuple(std::vector<Expr> fields) {
  auto t = std::make_shared<TupleNode>();
  std::vector<StructInfo> sinfos;
  for (const Expr& f : fields) sinfos.push_back(f->struct_info);
  t->fields = std::move(fields);
  t->struct_info = TupleSInfo(std::move(sinfos));
  return t;
}

Expected<Expr> MakeTupleGetItem(Expr tuple, int index) {
  const StructInfo& s = tuple->struct_info;
  if (!s || s->kind != StructInfoKind::kTuple) {
    return Error("cannot index " + ArgName(tuple) + ": it is " + Describe(s) + ", not a tuple");
  }
  if (index < 0 || index >= static_cast<int>(s->fields.size())) {
    return Error("index " + std::to_string(index) + " is out of range for a tuple of " +
                 std::to_string(s->fields.size()));
  }
  auto n = std::make_shared<TupleGetItemNode>();
  n->struct_info = s->fields[index];
  n->tuple = std::move(tuple);
  n->index = index;
  return Expr(n);
}

Expr MakeShapeExpr(std::vector<PrimExpr> values) {
  auto n = std::make_shared<ShapeExprNode>();
  n->struct_info = ShapeSInfo(values);
  n->values = std::move(values);
  return n;
}

Expr MakePrimValue(PrimExpr value, DataType dtype) {
  auto n = std::make_shared<PrimValueNode>();
  n->struct_info = PrimSInfo(dtype, value);
  n->value = std::move(value);
  n->dtype = dtype;
  return n;
}

Expr MakeStringImm(std::string value) {
  auto n = std::make_shared<StringImmNode>();
  n->struct_info = ObjectSInfo();
  n->value = std::move(value);
  return n;
}

Expected<Expr> MakeConstant(DataType dtype, std::vector<int64_t> shape,
                            std::shared_ptr<const std::vector<uint8_t>> data,
                            std::optional<VDevice> vdevice) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return Error("constant has a negative dimension " + std::to_string(d));
    if (d != 0 && count > (int64_t{1} << 40) / d) return Error("constant is too large");
    count *= d;
  }
  int bits = DataTypeBits(dtype);
  if (bits == 0)
    return Error("constants of type " + std::string(DataTypeName(dtype)) + " are not supported");
  uint64_t bytes = (static_cast<uint64_t>(count) * bits + 7) / 8;
  if (!data || data->size() != bytes) {
    return Error("constant data has " + std::to_string(data ? data->size() : 0) +
                 " bytes, but its shape and dtype need " + std::to_string(bytes));
  }
  auto n = std::make_shared<ConstantNode>();
  n->dtype = dtype;
  n->shape = shape;
  n->data = std::move(data);
  n->struct_info = TensorSInfo(shape, dtype, std::move(vdevice));
  return Expr(n);
}

SeqExpr MakeSeqExpr(std::vector<BindingBlock> blocks, Expr body) {
  auto n = std::make_shared<SeqExprNode>();
  n->struct_info = body->struct_info;
  // Canonical form: no empty blocks, no two ordinary blocks in a row (the text form cannot
  // tell them apart).
  for (BindingBlock& b : blocks) {
    if (b.bindings.empty()) continue;
    if (!b.dataflow && !n->blocks.empty() && !n->blocks.back().dataflow) {
      for (Binding& x : b.bindings) n->blocks.back().bindings.push_back(std::move(x));
      continue;
    }
    n->blocks.push_back(std::move(b));
  }
  n->body = std::move(body);
  return n;
}

Expected<Expr> MakeIf(Expr cond, SeqExpr then_branch, SeqExpr else_branch) {
  const StructInfo& c = cond->struct_info;
  bool scalar_bool = c && ((c->kind == StructInfoKind::kPrim && c->dtype == DataType::kBool) ||
                           (c->IsTensor() && c->ndim == 0 &&
                            (c->dtype == DataType::kBool || c->dtype == DataType::kVoid)));
  if (!scalar_bool) {
    return Error("the condition of an if must be a bool scalar, got " + Describe(c));
  }
  auto n = std::make_shared<IfNode>();
  n->struct_info = Unify(then_branch->struct_info, else_branch->struct_info);
  n->cond = std::move(cond);
  n->then_branch = std::move(then_branch);
  n->else_branch = std::move(else_branch);
  return Expr(n);
}

std::vector<const VarNode*> UsedVars(const Expr& e) {
  std::vector<const VarNode*> out;
  std::function<void(const Expr&)> use = [&](const Expr& x) {
    if (const auto* v = As<VarNode>(x)) {
      out.push_back(v);
    } else if (const auto* t = As<TupleNode>(x)) {
      for (const Expr& f : t->fields) use(f);
    } else if (const auto* g = As<TupleGetItemNode>(x)) {
      use(g->tuple);
    } else if (const auto* c = As<CallNode>(x)) {
      for (const Expr& a : c->args) use(a);
    } else if (const auto* i = As<IfNode>(x)) {
      use(i->cond);
      for (const SeqExpr& branch : {i->then_branch, i->else_branch}) {
        for (const Var& v : FreeVars(*branch, {})) out.push_back(v.get());
      }
    }
  };
  use(e);
  return out;
}

std::vector<Var> FreeVars(const SeqExprNode& seq, const std::vector<Var>& bound) {
  std::set<const VarNode*> defined;
  for (const Var& v : bound) defined.insert(v.get());
  std::vector<Var> free;
  std::set<const VarNode*> seen;
  std::function<void(const Expr&)> use = [&](const Expr& e) {
    if (!e) return;
    if (const auto* v = As<VarNode>(e)) {
      if (!defined.count(v) && seen.insert(v).second) free.push_back(AsPtr<VarNode>(e));
      return;
    }
    switch (e->kind) {
      case ExprKind::kCall:
        for (const Expr& a : As<CallNode>(e)->args) use(a);
        return;
      case ExprKind::kTuple:
        for (const Expr& f : As<TupleNode>(e)->fields) use(f);
        return;
      case ExprKind::kTupleGetItem:
        return use(As<TupleGetItemNode>(e)->tuple);
      case ExprKind::kIf:
        use(As<IfNode>(e)->cond);
        use(As<IfNode>(e)->then_branch);
        return use(As<IfNode>(e)->else_branch);
      case ExprKind::kSeqExpr:
        for (const BindingBlock& b : As<SeqExprNode>(e)->blocks) {
          for (const Binding& x : b.bindings) {
            use(x.value);
            defined.insert(x.var.get());
          }
        }
        return use(As<SeqExprNode>(e)->body);
      default:
        return;
    }
  };
  for (const BindingBlock& b : seq.blocks) {
    for (const Binding& x : b.bindings) {
      use(x.value);
      defined.insert(x.var.get());
    }
  }
  use(seq.body);
  return free;
}

StructInfo FunctionSInfo(const FunctionNode& f) {
  std::vector<StructInfo> params;
  for (const Var& p : f.params) params.push_back(p->struct_info);
  return FuncSInfo(std::move(params), f.ret_struct_info, f.is_pure);
}

Expected<Function> MakeFunction(std::vector<Var> params, SeqExpr body, StructInfo declared_ret,
                                Attrs attrs, bool is_pure, bool is_private,
                                std::vector<Expr> param_defaults) {
  Expected<StructInfo> ret = Refine(declared_ret, body->struct_info);
  if (!ret) return Error("return value: " + ret.error().message);
  if (!param_defaults.empty()) {
    QUILT_CHECK(param_defaults.size() == params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      if (!param_defaults[i]) continue;
      Expected<StructInfo> fits = Refine(params[i]->struct_info, param_defaults[i]->struct_info);
      if (!fits) {
        return Error("default of parameter '" + params[i]->name_hint +
                     "': " + fits.error().message);
      }
    }
  }
  auto f = std::make_shared<FunctionNode>();
  f->param_defaults = std::move(param_defaults);
  f->params = std::move(params);
  f->body = std::move(body);
  f->ret_struct_info = std::move(*ret);
  f->attrs = std::move(attrs);
  f->is_pure = is_pure;
  f->is_private = is_private;
  f->struct_info = FunctionSInfo(*f);
  return Function(f);
}

}  // namespace quilt::ir
