// Structural equality: a simultaneous walk of two modules with maps between the variables (and
// symbolic dims) each side defines; a use must map to its partner definition. Hashing walks one
// module the same way and numbers variables by definition order.
#include "ir/structural_equal.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include "ir/op.h"
#include "ir/printer.h"

namespace quilt::ir {
namespace {

class Equal {
 public:
  explicit Equal(std::string* why) : why_(why) {}

  bool Module(const IRModule& a, const IRModule& b) {
    if (a.vdevices != b.vdevices) return Fail("the vdevice lists differ");
    if (a.attrs != b.attrs) return Fail("the module attributes differ");
    if (a.functions.size() != b.functions.size()) return Fail("the number of functions differs");
    if (a.prim_funcs.size() != b.prim_funcs.size()) return Fail("the number of prim_funcs differs");
    for (const auto& [name, text] : a.prim_funcs) {
      const std::string* other = b.LookupPrimFunc(name);
      if (!other) return Fail("prim_func '" + name + "' is missing on one side");
      if (*other != text) return Fail("the text of prim_func '" + name + "' differs");
    }
    for (const auto& [name, f] : a.functions) {
      Function g = b.Lookup(name);
      if (!g) return Fail("function '" + name + "' is missing on one side");
      where_ = "function '" + name + "'";
      vars_.clear();
      syms_.clear();
      if (!Func(*f, *g)) return false;
    }
    return true;
  }

 private:
  bool Fail(const std::string& what) {
    if (why_ && why_->empty()) *why_ = where_.empty() ? what : where_ + ": " + what;
    return false;
  }

  bool Func(const FunctionNode& a, const FunctionNode& b) {
    if (a.params.size() != b.params.size()) return Fail("the number of parameters differs");
    if (a.attrs != b.attrs || a.is_pure != b.is_pure || a.is_private != b.is_private) {
      return Fail("the function attributes differ");
    }
    for (size_t i = 0; i < a.params.size(); ++i) {
      if (!DefineVar(a.params[i], b.params[i])) return false;
      Expr da = i < a.param_defaults.size() ? a.param_defaults[i] : nullptr;
      Expr db = i < b.param_defaults.size() ? b.param_defaults[i] : nullptr;
      if (!Expression(da, db))
        return Fail("the default of '" + a.params[i]->name_hint + "' differs");
    }
    if (!SInfo(a.ret_struct_info, b.ret_struct_info)) return Fail("the return types differ");
    return Seq(*a.body, *b.body);
  }

  bool DefineVar(const Var& a, const Var& b) {
    if (a->kind != b->kind) return Fail("'" + a->name_hint + "': one is a dataflow var");
    if (!SInfo(a->struct_info, b->struct_info)) {
      return Fail("'" + a->name_hint + "' has " + Describe(a->struct_info) + " vs " +
                  Describe(b->struct_info));
    }
    vars_[a.get()] = b.get();
    return true;
  }

  bool Prim(const PrimExpr& a, const PrimExpr& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
      case PrimKind::kInt:
        return a->value == b->value;
      case PrimKind::kVar: {
        auto [it, inserted] = syms_.emplace(a.get(), b.get());
        if (inserted) {
          // The first sight defines the match; b must not be matched to another variable.
          for (const auto& [x, y] : syms_) {
            if (y == b.get() && x != a.get()) return false;
          }
        }
        return it->second == b.get();
      }
      default:
        return Prim(a->a, b->a) && Prim(a->b, b->b);
    }
  }

  bool SInfo(const StructInfo& a, const StructInfo& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->ndim != b->ndim || a->dtype != b->dtype ||
        a->vdevice != b->vdevice || a->pure != b->pure ||
        a->shape.has_value() != b->shape.has_value() || a->fields.size() != b->fields.size()) {
      return false;
    }
    if (a->shape) {
      for (size_t i = 0; i < a->shape->size(); ++i) {
        if (!Prim((*a->shape)[i], (*b->shape)[i])) return false;
      }
    }
    if (!Prim(a->value, b->value)) return false;
    for (size_t i = 0; i < a->fields.size(); ++i) {
      if (!SInfo(a->fields[i], b->fields[i])) return false;
    }
    return SInfo(a->ret, b->ret);
  }

  bool Seq(const SeqExprNode& a, const SeqExprNode& b) {
    if (a.blocks.size() != b.blocks.size()) return Fail("the number of binding blocks differs");
    for (size_t i = 0; i < a.blocks.size(); ++i) {
      const BindingBlock& x = a.blocks[i];
      const BindingBlock& y = b.blocks[i];
      if (x.dataflow != y.dataflow)
        return Fail("block " + std::to_string(i) + ": dataflow differs");
      if (x.bindings.size() != y.bindings.size()) {
        return Fail("block " + std::to_string(i) + ": the number of bindings differs");
      }
      for (size_t j = 0; j < x.bindings.size(); ++j) {
        if (!Expression(x.bindings[j].value, y.bindings[j].value)) {
          return Fail("the value bound to '" + x.bindings[j].var->name_hint + "' differs");
        }
        if (!DefineVar(x.bindings[j].var, y.bindings[j].var)) return false;
      }
    }
    if (!Expression(a.body, b.body)) return Fail("the returned value differs");
    return true;
  }

  bool Exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Expression(a[i], b[i])) return false;
    }
    return true;
  }

  bool Expression(const Expr& a, const Expr& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        auto it = vars_.find(static_cast<const VarNode*>(a.get()));
        return it != vars_.end() ? it->second == b.get() : a == b;
      }
      case ExprKind::kConstant: {
        const auto* x = As<ConstantNode>(a);
        const auto* y = As<ConstantNode>(b);
        return x->dtype == y->dtype && x->shape == y->shape && *x->data == *y->data &&
               SInfo(a->struct_info, b->struct_info);
      }
      case ExprKind::kCall: {
        const auto* x = As<CallNode>(a);
        const auto* y = As<CallNode>(b);
        if (x->sinfo_args.size() != y->sinfo_args.size()) return false;
        for (size_t i = 0; i < x->sinfo_args.size(); ++i) {
          if (!SInfo(x->sinfo_args[i], y->sinfo_args[i])) return false;
        }
        return Expression(x->callee, y->callee) && Exprs(x->args, y->args) && x->attrs == y->attrs;
      }
      case ExprKind::kTuple:
        return Exprs(As<TupleNode>(a)->fields, As<TupleNode>(b)->fields);
      case ExprKind::kTupleGetItem:
        return As<TupleGetItemNode>(a)->index == As<TupleGetItemNode>(b)->index &&
               Expression(As<TupleGetItemNode>(a)->tuple, As<TupleGetItemNode>(b)->tuple);
      case ExprKind::kShapeExpr: {
        const auto& x = As<ShapeExprNode>(a)->values;
        const auto& y = As<ShapeExprNode>(b)->values;
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i) {
          if (!Prim(x[i], y[i])) return false;
        }
        return true;
      }
      case ExprKind::kPrimValue:
        return As<PrimValueNode>(a)->dtype == As<PrimValueNode>(b)->dtype &&
               Prim(As<PrimValueNode>(a)->value, As<PrimValueNode>(b)->value);
      case ExprKind::kStringImm:
        return As<StringImmNode>(a)->value == As<StringImmNode>(b)->value;
      case ExprKind::kIf: {
        const auto* x = As<IfNode>(a);
        const auto* y = As<IfNode>(b);
        return Expression(x->cond, y->cond) && Seq(*x->then_branch, *y->then_branch) &&
               Seq(*x->else_branch, *y->else_branch);
      }
      case ExprKind::kSeqExpr:
        return Seq(*As<SeqExprNode>(a), *As<SeqExprNode>(b));
      case ExprKind::kFunction:
        return Func(*As<FunctionNode>(a), *As<FunctionNode>(b));
      case ExprKind::kGlobalVar:
        return As<GlobalVarNode>(a)->name == As<GlobalVarNode>(b)->name;
      case ExprKind::kOp:
        return As<OpNode>(a)->info == As<OpNode>(b)->info;
      case ExprKind::kExternFunc:
        return As<ExternFuncNode>(a)->name == As<ExternFuncNode>(b)->name &&
               As<ExternFuncNode>(a)->style == As<ExternFuncNode>(b)->style;
    }
    return false;
  }

  std::string* why_;
  std::string where_;
  std::map<const VarNode*, const VarNode*> vars_;
  std::map<const PrimExprNode*, const PrimExprNode*> syms_;
};

// Hashing: the printed text with every name replaced by its definition number would do, but
// printing is slow for big constants; instead fold the same walk into a hash.
class Hasher {
 public:
  size_t Module(const IRModule& m) {
    for (const VDevice& d : m.vdevices) Mix(d.ToString());
    Mix(PrintAttrs(m.attrs));
    std::vector<std::string> names;
    for (const auto& [name, f] : m.functions) names.push_back(name);
    std::sort(names.begin(), names.end());  // functions match by name, not order
    for (const std::string& name : names) {
      Mix(name);
      vars_.clear();
      syms_.clear();
      Func(*m.Lookup(name));
    }
    std::vector<std::pair<std::string, std::string>> prims = m.prim_funcs;
    std::sort(prims.begin(), prims.end());
    for (const auto& [name, text] : prims) {
      Mix(name);
      Mix(text);
    }
    return h_;
  }

 private:
  void Mix(size_t v) { h_ ^= v + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2); }
  void Mix(const std::string& s) { Mix(std::hash<std::string>{}(s)); }

  static std::string PrintAttrs(const Attrs& attrs) {
    std::string s;
    for (const auto& [k, v] : attrs.items) s += k + "=" + PrintAttrValue(v) + ";";
    return s;
  }

  void Func(const FunctionNode& f) {
    Mix(PrintAttrs(f.attrs));
    Mix(f.is_pure * 2 + f.is_private);
    for (size_t i = 0; i < f.params.size(); ++i) {
      Define(f.params[i]);
      if (i < f.param_defaults.size() && f.param_defaults[i]) Expression(f.param_defaults[i]);
    }
    SInfo(f.ret_struct_info);
    Seq(*f.body);
  }

  void Define(const Var& v) {
    Mix(static_cast<size_t>(v->kind));
    SInfo(v->struct_info);
    vars_.emplace(v.get(), vars_.size());
  }

  void Prim(const PrimExpr& e) {
    if (!e) return Mix(size_t{7});
    Mix(static_cast<size_t>(e->kind));
    if (e->kind == PrimKind::kInt) return Mix(static_cast<size_t>(e->value));
    if (e->kind == PrimKind::kVar) {
      auto it = syms_.emplace(e.get(), syms_.size()).first;
      return Mix(it->second);
    }
    Prim(e->a);
    Prim(e->b);
  }

  void SInfo(const StructInfo& s) {
    if (!s) return Mix(size_t{11});
    Mix(static_cast<size_t>(s->kind) * 31 + s->ndim);
    Mix(static_cast<size_t>(s->dtype));
    if (s->vdevice) Mix(s->vdevice->ToString());
    if (s->shape) {
      for (const PrimExpr& d : *s->shape) Prim(d);
    }
    Prim(s->value);
    for (const StructInfo& f : s->fields) SInfo(f);
    if (s->ret) SInfo(s->ret);
  }

  void Seq(const SeqExprNode& s) {
    for (const BindingBlock& b : s.blocks) {
      Mix(b.dataflow ? 13 : 17);
      for (const Binding& x : b.bindings) {
        Expression(x.value);
        Define(x.var);
      }
    }
    Expression(s.body);
  }

  void Expression(const Expr& e) {
    Mix(static_cast<size_t>(e->kind));
    switch (e->kind) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        auto it = vars_.find(static_cast<const VarNode*>(e.get()));
        return Mix(it == vars_.end() ? std::hash<const void*>{}(e.get()) : it->second);
      }
      case ExprKind::kConstant: {
        const auto* c = As<ConstantNode>(e);
        Mix(static_cast<size_t>(c->dtype));
        for (int64_t d : c->shape) Mix(static_cast<size_t>(d));
        return Mix(std::hash<std::string_view>{}(
            std::string_view(reinterpret_cast<const char*>(c->data->data()), c->data->size())));
      }
      case ExprKind::kCall: {
        const auto* c = As<CallNode>(e);
        Expression(c->callee);
        for (const Expr& a : c->args) Expression(a);
        for (const StructInfo& s : c->sinfo_args) SInfo(s);
        return Mix(PrintAttrs(c->attrs));
      }
      case ExprKind::kTuple:
        for (const Expr& f : As<TupleNode>(e)->fields) Expression(f);
        return;
      case ExprKind::kTupleGetItem:
        Mix(static_cast<size_t>(As<TupleGetItemNode>(e)->index));
        return Expression(As<TupleGetItemNode>(e)->tuple);
      case ExprKind::kShapeExpr:
        for (const PrimExpr& d : As<ShapeExprNode>(e)->values) Prim(d);
        return;
      case ExprKind::kPrimValue:
        Mix(static_cast<size_t>(As<PrimValueNode>(e)->dtype));
        return Prim(As<PrimValueNode>(e)->value);
      case ExprKind::kStringImm:
        return Mix(As<StringImmNode>(e)->value);
      case ExprKind::kIf:
        Expression(As<IfNode>(e)->cond);
        Seq(*As<IfNode>(e)->then_branch);
        return Seq(*As<IfNode>(e)->else_branch);
      case ExprKind::kSeqExpr:
        return Seq(*As<SeqExprNode>(e));
      case ExprKind::kFunction:
        return Func(*As<FunctionNode>(e));
      case ExprKind::kGlobalVar:
        return Mix(As<GlobalVarNode>(e)->name);
      case ExprKind::kOp:
        return Mix(As<OpNode>(e)->info->name);
      case ExprKind::kExternFunc:
        Mix(As<ExternFuncNode>(e)->name);
        return Mix(static_cast<size_t>(As<ExternFuncNode>(e)->style));
    }
  }

  size_t h_ = 0;
  std::map<const VarNode*, size_t> vars_;
  std::map<const PrimExprNode*, size_t> syms_;
};

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

bool StructuralEqual(const IRModule& a, const IRModule& b, std::string* why) {
  return Equal(why).Module(a, b);
}

size_t StructuralHash(const IRModule& m) { return Hasher().Module(m); }

std::string LineDiff(const std::string& a, const std::string& b) {
  std::vector<std::string> x = Lines(a), y = Lines(b);
  size_t n = x.size(), m = y.size();
  // Longest common subsequence table; IR texts are small enough for O(n*m).
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::vector<std::pair<char, std::string>> ops;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) {
      ops.emplace_back(' ', x[i++]);
      ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      ops.emplace_back('+', y[j++]);
    } else {
      ops.emplace_back('-', x[i++]);
    }
  }
  std::string out;
  const size_t context = 2;
  for (size_t k = 0; k < ops.size(); ++k) {
    bool near = false;
    for (size_t d = (k >= context ? k - context : 0); d <= std::min(ops.size() - 1, k + context);
         ++d) {
      near |= ops[d].first != ' ';
    }
    if (!near) continue;
    if (!out.empty() && k > 0 && ops[k - 1].first == ' ') {
      bool prev_near = false;
      size_t p = k - 1;
      for (size_t d = (p >= context ? p - context : 0); d <= std::min(ops.size() - 1, p + context);
           ++d) {
        prev_near |= ops[d].first != ' ';
      }
      if (!prev_near) out += "...\n";
    }
    out += ops[k].first + std::string(" ") + ops[k].second + "\n";
  }
  return out;
}

}  // namespace quilt::ir
