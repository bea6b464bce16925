// The parser of the text form, in two stages:
//  1. text/py_parser.cc turns the text into a syntax tree of the Python subset TVMScript uses.
//  2. This file interprets that tree: the class body gives the vdevice list, module attributes
//     and functions; each function is built through the builder (ir/builder.h), so every
//     binding gets its struct info as it is read and an annotation is refined with it.
// Functions are built on demand (a call of `cls.f` builds f first), so order in the text does
// not matter; a recursive call needs the callee's return annotation.
#include "ir/parser.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "ir/builder.h"
#include "ir/op.h"
#include "ir/text/py_ast.h"

namespace quilt::ir {
namespace {

using text::Loc;
using text::PyExpr;
using text::PyExprKind;
using text::PyExprPtr;
using text::PyStmt;
using text::PyStmtKind;
using text::PyStmtPtr;

// An error of the input, thrown inside this file only and turned into a Diagnostic at the top.
struct ParseError {
  Loc loc;
  std::string message;
};

[[noreturn]] void Fail(Loc loc, std::string message) { throw ParseError{loc, std::move(message)}; }

template <typename T>
T Check(Expected<T> e, Loc loc) {
  if (!e) Fail(loc, e.error().message);
  return std::move(*e);
}

// The dotted name of `R.nn.softmax` -> "R.nn.softmax"; empty if not a plain dotted name.
std::string DottedName(const PyExpr& e) {
  if (e.kind == PyExprKind::kName) return e.name;
  if (e.kind == PyExprKind::kAttr && e.base) {
    std::string base = DottedName(*e.base);
    return base.empty() ? "" : base + "." + e.name;
  }
  return "";
}

const PyExpr* Keyword(const PyExpr& call, std::string_view name) {
  for (const auto& kw : call.keywords) {
    if (kw.name == name) return kw.value.get();
  }
  return nullptr;
}

// Positional argument i, else keyword `name`, else null.
const PyExpr* Arg(const PyExpr& call, size_t i, std::string_view name) {
  if (i < call.items.size()) return call.items[i].get();
  return Keyword(call, name);
}

std::string StringLit(const PyExpr* e, const char* what) {
  if (!e || e->kind != PyExprKind::kString) {
    Fail(e ? e->loc : Loc{}, std::string("expected a string for ") + what);
  }
  return e->name;
}

std::optional<int64_t> IntLit(const PyExpr& e) {
  if (e.kind == PyExprKind::kInt) return e.int_value;
  if (e.kind == PyExprKind::kUnaryOp && e.name == "-" && e.items[0]->kind == PyExprKind::kInt) {
    return -e.items[0]->int_value;
  }
  return std::nullopt;
}

std::optional<double> NumberLit(const PyExpr& e) {
  if (std::optional<int64_t> i = IntLit(e)) return static_cast<double>(*i);
  if (e.kind == PyExprKind::kFloat) return e.float_value;
  if (e.kind == PyExprKind::kUnaryOp && e.name == "-") {
    std::optional<double> v = NumberLit(*e.items[0]);
    if (v) return -*v;
  }
  // float("inf"), float("-inf"), float("nan"), as the printer writes them.
  if (e.kind == PyExprKind::kCall && DottedName(*e.base) == "float" && e.items.size() == 1 &&
      e.items[0]->kind == PyExprKind::kString) {
    const std::string& s = e.items[0]->name;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  return std::nullopt;
}

// A target dict's value: a string, an integer, a bool or a list of strings or of integers.
TargetAttr TargetValue(const PyExpr& v, const std::string& key) {
  if (v.kind == PyExprKind::kString) return v.name;
  if (v.kind == PyExprKind::kBool) return v.int_value != 0;
  if (std::optional<int64_t> i = IntLit(v)) return *i;
  if (v.kind == PyExprKind::kList || v.kind == PyExprKind::kTuple) {
    bool strs = true, ints = true;
    for (const PyExprPtr& x : v.items) {
      strs &= x->kind == PyExprKind::kString;
      ints &= IntLit(*x).has_value();
    }
    if (ints && !v.items.empty()) {
      std::vector<int64_t> out;
      for (const PyExprPtr& x : v.items) out.push_back(*IntLit(*x));
      return out;
    }
    if (strs) {
      std::vector<std::string> out;
      for (const PyExprPtr& x : v.items) out.push_back(x->name);
      return out;
    }
  }
  Fail(v.loc, "target attribute \"" + key +
                  "\": expected a string, an integer, a bool or a list of strings or integers, "
                  "got " +
                  text::ToString(v));
}

// A target in dict form, {"kind": "cuda", "arch": "sm_80", ...}.
Target TargetDict(const PyExpr& dict) {
  std::vector<std::pair<std::string, TargetAttr>> kv;
  for (size_t i = 0; i < dict.items.size(); i += 2) {
    std::string key = StringLit(dict.items[i].get(), "a target key");
    kv.emplace_back(key, TargetValue(*dict.items[i + 1], key));
  }
  return Check(Target::FromDict(kv), dict.loc);
}

class ModuleParser {
 public:
  IRModule Parse(const text::PyModule& py) {
    // One @I.ir_module class, or one @R.function by itself (TVM prints a lone function so): a
    // module holding that function under its name.
    const PyStmt* cls = nullptr;
    const PyStmt* lone = nullptr;
    for (const PyStmtPtr& s : py.body) {
      if (s->kind == PyStmtKind::kClassDef || s->kind == PyStmtKind::kFunctionDef) {
        if (cls || lone) {
          Fail(s->loc,
               "more than one module or function: a text holds one @I.ir_module class "
               "or one @R.function");
        }
        (s->kind == PyStmtKind::kClassDef ? cls : lone) = s.get();
        continue;
      }
      if (s->kind == PyStmtKind::kExpr && s->value->kind == PyExprKind::kName) continue;
      // `m = TypeVar("m")`: TVM 0.27 names a symbolic dim of a signature so; each function
      // declares its own dims where it first reads them, so the line itself adds nothing.
      if (s->kind == PyStmtKind::kAssign && s->targets.size() == 1 &&
          s->targets[0]->kind == PyExprKind::kName && s->value->kind == PyExprKind::kCall &&
          DottedName(*s->value->base) == "TypeVar") {
        const PyExpr* name = Arg(*s->value, 0, "name");
        if (!name || name->kind != PyExprKind::kString || name->name != s->targets[0]->name) {
          Fail(s->value->loc,
               "expected " + s->targets[0]->name + " = TypeVar(\"" + s->targets[0]->name + "\")");
        }
        continue;
      }
      Fail(s->loc, "expected an @I.ir_module class or an @R.function");
    }
    if (!cls && !lone) Fail(Loc{1, 1}, "expected an @I.ir_module class or an @R.function");
    if (lone && !lone->raw.empty()) {
      mod_.prim_funcs.emplace_back(lone->name, lone->raw);
      return mod_;
    }
    if (lone) {
      defs_[lone->name] = lone;
      order_.push_back(lone->name);
      BuildFunction(lone->name, lone->loc);
      mod_.functions.emplace_back(lone->name, built_.at(lone->name));
      return mod_;
    }
    bool decorated = false;
    for (const PyExprPtr& d : cls->decorators) {
      if (DottedName(*d) == "I.ir_module") decorated = true;
      if (d->kind != PyExprKind::kCall || DottedName(*d->base) != "I.ir_module") continue;
      // @I.ir_module(check_well_formed=False): quilt always checks; the option is read and
      // dropped, as TVM's printer never writes it.
      decorated = true;
      for (const PyExprPtr& a : d->items) {
        Fail(a->loc, "@I.ir_module takes only keyword arguments (check_well_formed=...)");
      }
      for (const auto& kw : d->keywords) {
        if (kw.name != "check_well_formed" || kw.value->kind != PyExprKind::kBool) {
          Fail(kw.loc, "@I.ir_module: unknown argument '" + kw.name +
                           "' (known: check_well_formed=True/False)");
        }
      }
    }
    if (!decorated) Fail(cls->loc, "the class must be decorated with @I.ir_module");
    class_name_ = cls->name;
    // Module-level statements first: vdevices must be known before any annotation is read.
    for (const PyStmtPtr& s : cls->body) {
      if (s->kind == PyStmtKind::kFunctionDef &&
          (defs_.count(s->name) || prim_defs_.count(s->name))) {
        Fail(s->loc, "function '" + s->name + "' is defined twice");
      }
      if (s->kind == PyStmtKind::kFunctionDef && !s->raw.empty()) {
        prim_defs_.insert(s->name);
        mod_.prim_funcs.emplace_back(s->name, s->raw);
        continue;
      }
      if (s->kind == PyStmtKind::kFunctionDef) {
        defs_[s->name] = s.get();
        order_.push_back(s->name);
      } else if (s->kind == PyStmtKind::kExpr && s->value->kind == PyExprKind::kCall) {
        ModuleCall(*s->value);
      } else if (s->kind != PyStmtKind::kPass) {
        Fail(s->loc, "expected a function, I.module_global_infos or I.module_attrs");
      }
    }
    for (const std::string& name : order_) BuildFunction(name, defs_.at(name)->loc);
    for (const std::string& name : order_) mod_.functions.emplace_back(name, built_.at(name));
    return mod_;
  }

 private:
  // ---- module level ----
  void ModuleCall(const PyExpr& call) {
    std::string callee = DottedName(*call.base);
    if (callee == "I.module_global_infos") {
      const PyExpr* dict = Arg(call, 0, "global_infos");
      if (!dict || dict->kind != PyExprKind::kDict)
        Fail(call.loc, "expected a dict of global infos");
      for (size_t i = 0; i < dict->items.size(); i += 2) {
        std::string key = StringLit(dict->items[i].get(), "a global info key");
        if (key != "vdevice")
          Fail(dict->items[i]->loc, "unknown global info \"" + key + "\" (known: \"vdevice\")");
        const PyExpr& list = *dict->items[i + 1];
        if (list.kind != PyExprKind::kList && list.kind != PyExprKind::kTuple) {
          Fail(list.loc, "expected a list of I.vdevice(...)");
        }
        for (const PyExprPtr& d : list.items) mod_.vdevices.push_back(VDeviceDecl(*d));
      }
      return;
    }
    if (callee == "I.module_attrs") {
      const PyExpr* dict = Arg(call, 0, "attrs");
      if (!dict || dict->kind != PyExprKind::kDict) Fail(call.loc, "expected a dict of attributes");
      mod_.attrs = DictAttrs(*dict);
      return;
    }
    Fail(call.loc, "unknown module-level call " + text::ToString(call) +
                       " (expected I.module_global_infos or I.module_attrs)");
  }

  VDevice VDeviceDecl(const PyExpr& e) {
    std::string callee = e.kind == PyExprKind::kCall ? DottedName(*e.base) : "";
    if (callee != "I.vdevice" && callee != "R.VDevice" && callee != "R.vdevice") {
      Fail(e.loc, "expected I.vdevice(target, id, scope), got " + text::ToString(e));
    }
    VDevice d;
    const PyExpr* target = Arg(e, 0, "target");
    if (!target) Fail(e.loc, "I.vdevice needs a target");
    if (target->kind == PyExprKind::kString) {
      d.target = Check(Target::Parse(target->name), target->loc);
    } else if (target->kind == PyExprKind::kDict) {
      d.target = TargetDict(*target);
    } else {
      Fail(target->loc, "expected a target string or dict");
    }
    if (const PyExpr* id = Arg(e, 1, "vdevice_id")) {
      std::optional<int64_t> v = IntLit(*id);
      if (!v) Fail(id->loc, "expected an integer device id");
      if (*v < 0) Fail(id->loc, "device id " + std::to_string(*v) + " is negative");
      d.vdevice_id = static_cast<int>(*v);
    }
    if (const PyExpr* scope = Arg(e, 2, "memory_scope"))
      d.memory_scope = StringLit(scope, "a memory scope");
    return d;
  }

  AttrValue LiteralAttr(const PyExpr& v) {
    if (std::optional<int64_t> i = IntLit(v)) return *i;
    if (std::optional<double> f = NumberLit(v)) return *f;
    switch (v.kind) {
      case PyExprKind::kString:
        return v.name;
      case PyExprKind::kBool:
        return v.int_value != 0;
      case PyExprKind::kNone:
        return std::monostate{};
      case PyExprKind::kList:
      case PyExprKind::kTuple: {
        bool ints = true, nums = true, strs = true;
        for (const PyExprPtr& x : v.items) {
          ints &= IntLit(*x).has_value();
          nums &= NumberLit(*x).has_value();
          strs &= x->kind == PyExprKind::kString;
        }
        if (ints) {
          std::vector<int64_t> out;
          for (const PyExprPtr& x : v.items) out.push_back(*IntLit(*x));
          return out;
        }
        if (nums) {
          std::vector<double> out;
          for (const PyExprPtr& x : v.items) out.push_back(*NumberLit(*x));
          return out;
        }
        if (strs) {
          std::vector<std::string> out;
          for (const PyExprPtr& x : v.items) out.push_back(x->name);
          return out;
        }
        break;
      }
      default:
        break;
    }
    Fail(v.loc, "expected a literal attribute value (number, string, bool, None or a list), got " +
                    text::ToString(v));
  }

  Attrs DictAttrs(const PyExpr& dict) {
    Attrs attrs;
    for (size_t i = 0; i < dict.items.size(); i += 2) {
      attrs.Set(StringLit(dict.items[i].get(), "an attribute name"),
                LiteralAttr(*dict.items[i + 1]));
    }
    return attrs;
  }

  // ---- functions ----
  struct Scope {
    std::map<std::string, Expr> vars;
    std::map<std::string, PrimExpr> syms;
  };

  Function BuildFunction(const std::string& name, Loc use) {
    if (auto it = built_.find(name); it != built_.end()) return it->second;
    auto def = defs_.find(name);
    if (def == defs_.end()) Fail(use, "no function named '" + name + "' in the module");
    if (building_.count(name)) {
      Fail(use, "recursive call of '" + name + "' needs a return annotation on its definition");
    }
    building_.insert(name);
    Scope saved = std::move(scope_);
    scope_ = Scope{};
    bool saved_pure = func_pure_;
    std::string saved_name = func_name_;
    Function f = FunctionDef(*def->second);
    scope_ = std::move(saved);
    func_pure_ = saved_pure;
    func_name_ = saved_name;
    building_.erase(name);
    built_[name] = f;
    return f;
  }

  Function FunctionDef(const PyStmt& def) {
    bool pure = true, is_private = false, decorated = false;
    for (const PyExprPtr& d : def.decorators) {
      const PyExpr& callee = d->kind == PyExprKind::kCall ? *d->base : *d;
      if (DottedName(callee) != "R.function") continue;
      decorated = true;
      if (d->kind != PyExprKind::kCall) continue;
      if (const PyExpr* p = Keyword(*d, "pure")) pure = p->int_value != 0;
      if (const PyExpr* p = Keyword(*d, "private")) is_private = p->int_value != 0;
    }
    if (!decorated) Fail(def.loc, "function '" + def.name + "' must be decorated with @R.function");
    std::vector<Var> params;
    std::vector<Expr> defaults;
    bool any_default = false;
    for (const text::PyParam& p : def.params) {
      if (!p.annotation) Fail(p.loc, "parameter '" + p.name + "' needs a struct info annotation");
      Var v = MakeVar(p.name, SInfo(*p.annotation, true));
      Expr d = p.default_value ? Value(*p.default_value) : nullptr;
      if (d && d->kind != ExprKind::kConstant) {
        Fail(p.default_value->loc,
             "the default of parameter '" + p.name + "' must be R.const(...)");
      }
      any_default |= d != nullptr;
      defaults.push_back(d);
      scope_.vars[p.name] = v;
      params.push_back(v);
    }
    if (!any_default) defaults.clear();
    StructInfo ret = def.returns ? SInfo(*def.returns, true) : nullptr;
    Attrs attrs;
    func_pure_ = pure;
    func_name_ = def.name;
    SeqExpr body = Body(def.body, def.loc, nullptr, &attrs);
    return Check(MakeFunction(std::move(params), body, ret, std::move(attrs), pure, is_private,
                              std::move(defaults)),
                 def.returns ? def.returns->loc : def.loc);
  }

  // Statements of a function body (result_name == nullptr, ends in `return`) or of an If
  // branch (ends in an assignment to *result_name, whose value is the branch's result).
  SeqExpr Body(const std::vector<PyStmtPtr>& stmts, Loc where, const std::string* result_name,
               Attrs* func_attrs) {
    std::vector<BindingBlock> blocks(1);
    Expr result;
    for (size_t i = 0; i < stmts.size(); ++i) {
      const PyStmt& s = *stmts[i];
      if (result) Fail(s.loc, "statement after the return");
      bool last = i + 1 == stmts.size();
      switch (s.kind) {
        case PyStmtKind::kReturn:
          if (result_name) Fail(s.loc, "return inside an if branch is not supported");
          if (!s.value) Fail(s.loc, "a function must return a value");
          result = Value(*s.value);
          break;
        case PyStmtKind::kAssign:
          if (result_name && last) {
            if (s.targets.size() != 1 || s.targets[0]->kind != PyExprKind::kName ||
                s.targets[0]->name != *result_name) {
              Fail(s.loc, "an if branch must end by assigning '" + *result_name + "'");
            }
            result = Value(*s.value);
            if (s.annotation)
              result = Annotated(result, SInfo(*s.annotation, false), s.loc, *result_name);
            break;
          }
          Assign(s, &blocks.back(), false, {});
          break;
        case PyStmtKind::kWith:
          blocks.push_back(Dataflow(s));
          blocks.emplace_back();
          break;
        case PyStmtKind::kIf:
          IfStmt(s, stmts, i, &blocks.back());
          break;
        case PyStmtKind::kExpr:
          ExprStmt(s, func_attrs);
          break;
        case PyStmtKind::kPass:
          break;
        default:
          Fail(s.loc, "unexpected statement in a function body");
      }
    }
    if (!result) {
      Fail(where, result_name ? "an if branch must end by assigning '" + *result_name + "'"
                              : "the function has no return statement");
    }
    return MakeSeqExpr(std::move(blocks), result);
  }

  void ExprStmt(const PyStmt& s, Attrs* func_attrs) {
    const PyExpr& e = *s.value;
    std::string callee = e.kind == PyExprKind::kCall ? DottedName(*e.base) : "";
    if (callee == "R.func_attr" && func_attrs) {
      const PyExpr* dict = Arg(e, 0, "attrs");
      if (!dict || dict->kind != PyExprKind::kDict) Fail(e.loc, "expected a dict of attributes");
      *func_attrs = DictAttrs(*dict);
      return;
    }
    if (callee == "R.output") Fail(e.loc, "R.output outside a dataflow block");
    Fail(e.loc, "expression statement has no effect: bind its value to a name");
  }

  Expr Annotated(const Expr& value, const StructInfo& ann, Loc loc, const std::string& name) {
    Expected<StructInfo> s = Refine(ann, value->struct_info);
    if (!s) Fail(loc, "'" + name + "': " + s.error().message);
    (void)s;
    return value;
  }

  void Assign(const PyStmt& s, BindingBlock* block, bool dataflow,
              const std::set<std::string>& outputs) {
    if (s.targets.size() != 1 || s.targets[0]->kind != PyExprKind::kName) {
      Fail(s.loc, "expected `name = value` or `name: annotation = value`");
    }
    const std::string& name = s.targets[0]->name;
    const PyExpr& value = *s.value;
    // `cls = Module`: TVM's name for the module inside a function; `cls.f` already means it.
    if (name == "cls" && value.kind == PyExprKind::kName && !s.annotation) {
      if (value.name != class_name_) {
        Fail(value.loc, "`cls = " + value.name + "`: the module is " +
                            (class_name_.empty() ? "not a class" : "'" + class_name_ + "'"));
      }
      return;
    }
    // `n = T.int64()` declares a symbolic dimension.
    if (value.kind == PyExprKind::kCall &&
        (DottedName(*value.base) == "T.int64" || DottedName(*value.base) == "T.int32")) {
      if (!scope_.syms.count(name)) scope_.syms[name] = SymVar(name);
      return;
    }
    Expr v = Value(value);
    StructInfo sinfo = v->struct_info;
    if (s.annotation) {
      Expected<StructInfo> r = Refine(SInfo(*s.annotation, false), sinfo);
      if (!r) Fail(s.loc, "'" + name + "': " + r.error().message);
      sinfo = *r;
    }
    Var var = MakeVar(name, sinfo, dataflow && !outputs.count(name));
    block->bindings.push_back({var, v});
    scope_.vars[name] = var;
  }

  BindingBlock Dataflow(const PyStmt& with) {
    if (DottedName(with.value->kind == PyExprKind::kCall ? *with.value->base : *with.value) !=
        "R.dataflow") {
      Fail(with.loc, "expected `with R.dataflow():`");
    }
    std::set<std::string> outputs;
    const PyStmt* output_stmt = nullptr;
    for (const PyStmtPtr& s : with.body) {
      if (s->kind == PyStmtKind::kExpr && s->value->kind == PyExprKind::kCall &&
          DottedName(*s->value->base) == "R.output") {
        output_stmt = s.get();
        for (const PyExprPtr& o : s->value->items) {
          if (o->kind != PyExprKind::kName) Fail(o->loc, "R.output takes variable names");
          outputs.insert(o->name);
        }
      }
    }
    if (!output_stmt) Fail(with.loc, "a dataflow block must end with R.output(...)");
    if (with.body.back().get() != output_stmt) {
      Fail(with.body.back()->loc, "R.output(...) must be the last statement of a dataflow block");
    }
    std::map<std::string, Expr> before = scope_.vars;
    BindingBlock block{true, {}};
    std::set<std::string> bound;
    for (const PyStmtPtr& s : with.body) {
      if (s.get() == output_stmt || s->kind == PyStmtKind::kPass) continue;
      if (s->kind != PyStmtKind::kAssign) Fail(s->loc, "a dataflow block holds only bindings");
      size_t bindings = block.bindings.size();
      Assign(*s, &block, true, outputs);
      // A name the statement bound (not a symbol it declared).
      if (block.bindings.size() > bindings) bound.insert(s->targets[0]->name);
    }
    for (const PyExprPtr& o : output_stmt->value->items) {
      if (!bound.count(o->name))
        Fail(o->loc, "R.output names '" + o->name + "', which the block does not bind");
    }
    // Dataflow variables do not leave the block.
    std::map<std::string, Expr> after = before;
    for (const std::string& name : outputs) after[name] = scope_.vars.at(name);
    for (const auto& [name, e] : scope_.vars) {
      if (!after.count(name) && !bound.count(name)) after[name] = e;
    }
    scope_.vars = std::move(after);
    return block;
  }

  void IfStmt(const PyStmt& s, const std::vector<PyStmtPtr>&, size_t, BindingBlock* block) {
    if (s.body.empty() || s.orelse.empty()) Fail(s.loc, "an if needs both branches");
    const PyStmt& last = *s.body.back();
    if (last.kind != PyStmtKind::kAssign || last.targets.size() != 1 ||
        last.targets[0]->kind != PyExprKind::kName) {
      Fail(last.loc, "an if branch must end with an assignment of the result");
    }
    std::string name = last.targets[0]->name;
    Expr cond = Value(*s.value);
    std::map<std::string, Expr> saved = scope_.vars;
    SeqExpr then_branch = Body(s.body, s.loc, &name, nullptr);
    scope_.vars = saved;
    SeqExpr else_branch = Body(s.orelse, s.loc, &name, nullptr);
    scope_.vars = saved;
    Expr value = Check(MakeIf(cond, then_branch, else_branch), s.loc);
    Var var = MakeVar(name, value->struct_info);
    block->bindings.push_back({var, value});
    scope_.vars[name] = var;
  }

  // ---- struct info ----
  PrimExpr Dim(const PyExpr& e, bool declare) {
    if (std::optional<int64_t> i = IntLit(e)) return IntImm(*i);
    if (e.kind == PyExprKind::kString || e.kind == PyExprKind::kName) {
      bool identifier = !e.name.empty() && !std::isdigit(static_cast<unsigned char>(e.name[0]));
      for (char c : e.name) identifier &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      if (!identifier) Fail(e.loc, "expected a symbolic dimension name, got \"" + e.name + "\"");
      auto it = scope_.syms.find(e.name);
      if (it != scope_.syms.end()) return it->second;
      if (!declare && e.kind == PyExprKind::kName) {
        Fail(e.loc, "unknown symbolic dimension '" + e.name + "'");
      }
      return scope_.syms[e.name] = SymVar(e.name);
    }
    if (e.kind == PyExprKind::kBinOp) {
      static const std::map<std::string, PrimKind> kOps = {{"+", PrimKind::kAdd},
                                                           {"-", PrimKind::kSub},
                                                           {"*", PrimKind::kMul},
                                                           {"//", PrimKind::kFloorDiv},
                                                           {"%", PrimKind::kFloorMod}};
      auto op = kOps.find(e.name);
      if (op == kOps.end()) Fail(e.loc, "unsupported operator '" + e.name + "' in a dimension");
      return MakeBinary(op->second, Dim(*e.items[0], declare), Dim(*e.items[1], declare));
    }
    if (e.kind == PyExprKind::kCall && e.items.size() == 2) {
      std::string f = DottedName(*e.base);
      if (f == "T.min" || f == "T.max") {
        return MakeBinary(f == "T.min" ? PrimKind::kMin : PrimKind::kMax, Dim(*e.items[0], declare),
                          Dim(*e.items[1], declare));
      }
    }
    Fail(e.loc, "expected a dimension (integer, symbolic name or arithmetic of them), got " +
                    text::ToString(e));
  }

  // `values`: a shape value (R.shape, a reshape target) may hold negative entries such as -1;
  // a tensor's dims may not.
  std::vector<PrimExpr> Dims(const PyExpr& e, bool declare, bool values = false) {
    if (e.kind != PyExprKind::kTuple && e.kind != PyExprKind::kList) {
      Fail(e.loc, "expected a shape: a tuple or list of dimensions");
    }
    std::vector<PrimExpr> dims;
    for (const PyExprPtr& d : e.items) {
      PrimExpr p = Dim(*d, declare);
      if (std::optional<int64_t> v = AsInt(p); v && *v < 0 && !values) {
        Fail(d->loc, "negative dimension " + std::to_string(*v));
      }
      dims.push_back(p);
    }
    return dims;
  }

  DataType Dtype(const PyExpr& e) {
    std::string s = StringLit(&e, "a dtype");
    std::optional<DataType> t = ParseDataType(s);
    if (!t) Fail(e.loc, "unknown dtype \"" + s + "\"");
    return *t;
  }

  VDevice DeviceRef(const PyExpr& e) {
    if (e.kind == PyExprKind::kString) {
      if (mod_.vdevices.empty()) {
        Fail(e.loc, "device string \"" + e.name + "\" but the module has no vdevice list " +
                        "(I.module_global_infos({\"vdevice\": [...]}))");
      }
      return mod_.vdevices[Check(ResolveDeviceString(e.name, mod_.vdevices), e.loc)];
    }
    auto [type, id] = PhysicalDevice(e);
    return mod_.vdevices[Check(ResolvePhysicalDevice(type, id, "", mod_.vdevices), e.loc)];
  }

  // A physical device, as TVM writes one: R.cuda(0), R.cpu(), R.device(2, 1) (DLPack device
  // codes), R.device("opencl", 1), tvm.cuda(0), tvm.device("cuda", 1), or a string "cuda" /
  // "cuda:1" (tvm.device's form: the type and the device id) -> ("cuda", 1) ...
  std::pair<std::string, int> PhysicalDevice(const PyExpr& e) {
    static const std::set<std::string> kTypes = {"cpu",    "cuda", "opencl", "metal",
                                                 "vulkan", "rocm", "webgpu", "hexagon"};
    // DLPack's device codes (dlpack.h DLDeviceType) of those types.
    static const std::map<int64_t, std::string> kCodes = {
        {1, "cpu"},   {2, "cuda"},  {4, "opencl"},  {7, "vulkan"},
        {8, "metal"}, {10, "rocm"}, {15, "webgpu"}, {16, "hexagon"}};
    auto id_of = [&](const PyExpr* a) -> int {
      if (!a) return 0;
      std::optional<int64_t> v = IntLit(*a);
      if (!v) Fail(a->loc, "expected an integer device id, got " + text::ToString(*a));
      if (*v < 0) Fail(a->loc, "device id " + std::to_string(*v) + " is negative");
      return static_cast<int>(*v);
    };
    auto known = [&](const std::string& type, Loc loc) {
      if (!kTypes.count(type)) {
        Fail(loc, "unknown device type '" + type +
                      "' (known: cpu, cuda, opencl, metal, vulkan, rocm, webgpu, hexagon)");
      }
      return type;
    };
    if (e.kind == PyExprKind::kString) {
      size_t colon = e.name.find(':');
      std::string type = known(e.name.substr(0, colon), e.loc);
      if (colon == std::string::npos) return {type, 0};
      int64_t id = -1;
      std::string num = e.name.substr(colon + 1);
      if (!num.empty() && num.size() < 10 &&
          num.find_first_not_of("0123456789") == std::string::npos) {
        id = std::stoll(num);
      }
      if (id < 0) Fail(e.loc, "bad device \"" + e.name + "\": expected \"type\" or \"type:id\"");
      return {type, static_cast<int>(id)};
    }
    std::string callee = e.kind == PyExprKind::kCall ? DottedName(*e.base) : "";
    std::string ns = callee.substr(0, callee.find('.') + 1);
    if (ns != "R." && ns != "tvm.") {
      Fail(e.loc,
           "expected a device: R.cpu(), R.cuda(i), R.opencl(i), R.device(type, i), tvm.cuda(i) "
           "or a string \"cuda:1\", got " +
               text::ToString(e));
    }
    std::string fn = callee.substr(ns.size());
    if (fn != "device") return {known(fn, e.loc), id_of(Arg(e, 0, "index"))};
    const PyExpr* type = Arg(e, 0, "device_type");
    if (!type) type = Keyword(e, "dev_type");
    if (!type) Fail(e.loc, callee + " needs a device type");
    const PyExpr* index = Arg(e, 1, "index");
    if (!index) index = Keyword(e, "dev_id");
    if (type->kind == PyExprKind::kString) return {known(type->name, type->loc), id_of(index)};
    std::optional<int64_t> code = IntLit(*type);
    auto it = code ? kCodes.find(*code) : kCodes.end();
    if (it == kCodes.end()) {
      Fail(type->loc, "unknown device type " + text::ToString(*type) +
                          " (DLPack codes: 1 cpu, 2 cuda, 4 opencl, 7 vulkan, 8 metal, 10 rocm, "
                          "15 webgpu, 16 hexagon)");
    }
    return {it->second, id_of(index)};
  }

  // R.hint_on_device(data, device[, memory_scope]): the device as PhysicalDevice reads it.
  Expr HintCall(const OpInfo& op, const PyExpr& e) {
    const PyExpr* data = Arg(e, 0, "data");
    const PyExpr* device = Arg(e, 1, "dst_vdevice");
    if (!device) device = Keyword(e, "device");
    if (!data || !device) Fail(e.loc, "expected R.hint_on_device(data, device[, memory_scope])");
    if (e.items.size() > 3) Fail(e.items[3]->loc, "R.hint_on_device takes at most 3 arguments");
    for (const auto& kw : e.keywords) {
      static const std::set<std::string> kNames = {"data", "dst_vdevice", "device", "memory_scope"};
      if (!kNames.count(kw.name)) {
        Fail(kw.loc, "R.hint_on_device has no parameter '" + kw.name +
                         "' (data, dst_vdevice, memory_scope)");
      }
    }
    auto [type, id] = PhysicalDevice(*device);
    Attrs attrs;
    attrs.Set("device_type", type);
    attrs.Set("index", static_cast<int64_t>(id));
    if (const PyExpr* scope = Arg(e, 2, "memory_scope")) {
      std::string text = StringLit(scope, "a memory scope");
      if (text.empty()) Fail(scope->loc, "empty memory scope");
      attrs.Set("memory_scope", text);
    }
    return Check(MakeOpCall(op, {Value(*data)}, std::move(attrs)), e.loc);
  }

  // `declare`: symbolic names may be introduced (signatures).
  StructInfo SInfo(const PyExpr& e, bool declare) {
    std::string name = DottedName(e.kind == PyExprKind::kCall ? *e.base : e);
    const PyExpr* call = e.kind == PyExprKind::kCall ? &e : nullptr;
    if (name == "R.Object") return ObjectSInfo();
    if (name == "R.Tensor") {
      std::optional<std::vector<PrimExpr>> shape;
      int ndim = -1;
      DataType dtype = DataType::kVoid;
      std::optional<VDevice> vdevice;
      if (call) {
        size_t pos = 0;
        const PyExpr* first = Arg(*call, 0, "shape");
        // R.Tensor("float32"): a dtype in first position.
        if (first && first->kind == PyExprKind::kString && call->items.size() >= 1 &&
            ParseDataType(first->name)) {
          dtype = Dtype(*first);
          pos = 1;
          first = nullptr;
        } else {
          pos = 1;
        }
        if (first && first->kind == PyExprKind::kName && scope_.vars.count(first->name) &&
            scope_.vars.at(first->name)->struct_info &&
            scope_.vars.at(first->name)->struct_info->kind == StructInfoKind::kShape) {
          // R.Tensor(sh, ...) with sh a shape variable, as TVM prints a reshape by one: what
          // is known of sh (its values, or its length).
          const StructInfo& sh = scope_.vars.at(first->name)->struct_info;
          if (sh->shape) {
            shape = *sh->shape;
          } else {
            ndim = sh->ndim;
          }
        } else if (first && first->kind != PyExprKind::kNone) {
          shape = Dims(*first, declare);
        }
        if (const PyExpr* d = Arg(*call, pos, "dtype")) dtype = Dtype(*d);
        if (const PyExpr* v = Arg(*call, pos + 1, "vdevice")) vdevice = DeviceRef(*v);
        if (const PyExpr* n = Keyword(*call, "ndim")) {
          std::optional<int64_t> v = IntLit(*n);
          if (!v || *v < -1) Fail(n->loc, "ndim must be an integer >= -1");
          if (shape && static_cast<int64_t>(shape->size()) != *v) {
            Fail(n->loc, "ndim=" + std::to_string(*v) + " disagrees with the shape");
          }
          ndim = static_cast<int>(*v);
        }
      }
      return TensorSInfo(shape, dtype, vdevice, ndim);
    }
    if (name == "R.Tuple") {
      std::vector<StructInfo> fields;
      if (call) {
        // R.Tuple(a, b) and R.Tuple([a, b]) are the same.
        const std::vector<PyExprPtr>* items = &call->items;
        if (items->size() == 1 && ((*items)[0]->kind == PyExprKind::kList)) {
          items = &(*items)[0]->items;
        }
        for (const PyExprPtr& f : *items) fields.push_back(SInfo(*f, declare));
      }
      return TupleSInfo(std::move(fields));
    }
    if (name == "R.Shape") {
      if (!call) return ShapeSInfo(std::nullopt);
      if (const PyExpr* v = Arg(*call, 0, "values")) return ShapeSInfo(Dims(*v, declare));
      if (const PyExpr* n = Keyword(*call, "ndim")) {
        std::optional<int64_t> v = IntLit(*n);
        if (!v) Fail(n->loc, "ndim must be an integer");
        return ShapeSInfo(std::nullopt, static_cast<int>(*v));
      }
      return ShapeSInfo(std::nullopt);
    }
    if (name == "R.Prim") {
      const PyExpr* d = call ? Arg(*call, 0, "dtype") : nullptr;
      return PrimSInfo(d ? Dtype(*d) : DataType::kVoid);
    }
    if (name == "R.Callable") {
      if (!call || call->items.size() != 2) Fail(e.loc, "expected R.Callable((params), ret)");
      std::vector<StructInfo> params;
      for (const PyExprPtr& p : call->items[0]->items) params.push_back(SInfo(*p, declare));
      return FuncSInfo(std::move(params), SInfo(*call->items[1], declare));
    }
    Fail(e.loc, "expected a struct info (R.Tensor, R.Tuple, R.Shape, R.Prim, R.Object), got " +
                    text::ToString(e));
  }

  // sinfo_args= / out_sinfo=: one struct info, or a list of them (a tuple result).
  std::vector<StructInfo> SInfoList(const PyExpr* s) {
    std::vector<StructInfo> out;
    if (!s) return out;
    if (s->kind == PyExprKind::kList || s->kind == PyExprKind::kTuple) {
      for (const PyExprPtr& x : s->items) out.push_back(SInfo(*x, false));
    } else {
      out.push_back(SInfo(*s, false));
    }
    return out;
  }

  // ---- expressions ----
  Expr Value(const PyExpr& e) {
    switch (e.kind) {
      case PyExprKind::kName: {
        auto it = scope_.vars.find(e.name);
        if (it != scope_.vars.end()) return it->second;
        if (scope_.syms.count(e.name)) return MakePrimValue(scope_.syms.at(e.name));
        Fail(e.loc, "unknown name '" + e.name + "'");
      }
      case PyExprKind::kTuple: {
        std::vector<Expr> fields;
        for (const PyExprPtr& f : e.items) fields.push_back(Value(*f));
        return MakeTuple(std::move(fields));
      }
      case PyExprKind::kSubscript: {
        std::optional<int64_t> i = IntLit(*e.items[0]);
        if (!i) Fail(e.items[0]->loc, "a tuple index must be an integer");
        return Check(MakeTupleGetItem(Value(*e.base), static_cast<int>(*i)), e.loc);
      }
      case PyExprKind::kCall:
        return Call(e);
      case PyExprKind::kAttr: {
        // cls.f: a reference to a module function (the body of a loop, say).
        std::string name = DottedName(e);
        if (name.rfind("cls.", 0) == 0) {
          Function f = BuildFunction(name.substr(4), e.loc);
          return MakeGlobalVar(name.substr(4), f->struct_info);
        }
        break;
      }
      default:
        break;
    }
    Fail(e.loc, "expected a value (a variable, a call or a tuple), got " + text::ToString(e) +
                    (NumberLit(e) ? "; write constants as R.const(value, dtype)" : ""));
  }

  Expr Call(const PyExpr& e) {
    std::string callee = DottedName(*e.base);
    if (callee.rfind("cls.", 0) == 0) {
      std::string fname = callee.substr(4);
      Function f = BuildFunction(fname, e.loc);
      std::vector<Expr> args;
      for (const PyExprPtr& a : e.items) args.push_back(Value(*a));
      return Check(MakeFuncCall(MakeGlobalVar(fname, f->struct_info), std::move(args)), e.loc);
    }
    if (callee == "R.const") return Const(e);
    if (callee == "R.const_bytes") return ConstBytes(e);
    if (callee == "R.shape") {
      const PyExpr* v = Arg(e, 0, "value");
      if (!v) Fail(e.loc, "R.shape needs a list of dimensions");
      return MakeShapeExpr(Dims(*v, false, true));
    }
    if (callee == "R.prim_value") {
      const PyExpr* v = Arg(e, 0, "value");
      if (!v) Fail(e.loc, "R.prim_value needs a value");
      const PyExpr* d = Arg(e, 1, "dtype");
      return MakePrimValue(Dim(*v, false), d ? Dtype(*d) : DataType::kInt64);
    }
    if (callee == "R.str") return MakeStringImm(StringLit(Arg(e, 0, "value"), "R.str"));
    if (callee == "R.tuple") {
      std::vector<Expr> fields;
      for (const PyExprPtr& f : e.items) fields.push_back(Value(*f));
      return MakeTuple(std::move(fields));
    }
    if (callee == "R.match_cast") {
      const PyExpr* value = Arg(e, 0, "value");
      const PyExpr* sinfo = Arg(e, 1, "struct_info");
      if (!sinfo) sinfo = Keyword(e, "ty");
      if (!value || !sinfo || e.items.size() > 2) {
        Fail(e.loc, "expected R.match_cast(value, struct_info)");
      }
      // The struct info may introduce symbolic dims, as a signature does.
      return Check(MakeMatchCast(Value(*value), SInfo(*sinfo, true)), e.loc);
    }
    if (callee == "R.call_packed" || callee == "R.call_pure_packed") {
      std::string name = StringLit(Arg(e, 0, "func"), "the packed function's name");
      bool pure = callee == "R.call_pure_packed";
      if (!pure && func_pure_) {
        Fail(e.loc, "R.call_packed(\"" + name + "\") is impure, in function '" + func_name_ +
                        "', which is pure: declare it @R.function(pure=False), or call "
                        "R.call_pure_packed");
      }
      std::vector<Expr> args;
      for (size_t i = 1; i < e.items.size(); ++i) args.push_back(Value(*e.items[i]));
      // ty_args= in TVM 0.27, sinfo_args= before it.
      const PyExpr* ty = Keyword(e, "ty_args");
      std::vector<StructInfo> sinfo = SInfoList(ty ? ty : Keyword(e, "sinfo_args"));
      for (const auto& kw : e.keywords) {
        if (kw.name != "sinfo_args" && kw.name != "ty_args") {
          Fail(kw.loc, callee + " has no parameter '" + kw.name + "'");
        }
      }
      return MakeExternCall(name, std::move(args), std::move(sinfo),
                            pure ? ExternStyle::kPurePacked : ExternStyle::kPacked);
    }
    if (callee == "R.call_dps_packed" || callee == "R.call_tir") {
      bool tir = callee == "R.call_tir";
      const PyExpr* func = Arg(e, 0, tir ? "gvar" : "func");
      std::string name;
      if (tir) {
        std::string f = func ? DottedName(*func) : "";
        if (f.rfind("cls.", 0) != 0) {
          Fail(func ? func->loc : e.loc, "R.call_tir calls a prim_func of the module: cls.NAME");
        }
        name = f.substr(4);
        if (!prim_defs_.count(name)) {
          Fail(func->loc, "R.call_tir: no T.prim_func named '" + name + "' in the module" +
                              (defs_.count(name) ? " ('" + name + "' is a Relax function)" : ""));
        }
      } else {
        name = StringLit(func, "the packed function's name");
      }
      const PyExpr* args_e = Arg(e, 1, "args");
      if (!args_e) Fail(e.loc, callee + " needs its arguments: a tuple (x, y)");
      std::vector<Expr> args;
      if (args_e->kind == PyExprKind::kTuple || args_e->kind == PyExprKind::kList) {
        for (const PyExprPtr& a : args_e->items) args.push_back(Value(*a));
      } else {
        args.push_back(Value(*args_e));
      }
      // out_ty= in TVM 0.27, out_sinfo= before it.
      const PyExpr* out = Arg(e, 2, "out_ty");
      if (!out) out = Keyword(e, "out_sinfo");
      if (!out) Fail(e.loc, callee + " needs out_ty=, the struct info of its result");
      if (e.items.size() > 3) Fail(e.items[3]->loc, callee + " takes at most 3 arguments");
      for (const auto& kw : e.keywords) {
        if (kw.name == "tir_vars") {
          Fail(kw.loc, "R.call_tir's tir_vars are not supported: quilt compiles no TIR");
        }
        static const std::set<std::string> kNames = {"args", "out_ty", "out_sinfo", "gvar", "func"};
        if (!kNames.count(kw.name)) {
          Fail(kw.loc, callee + " has no parameter '" + kw.name + "'");
        }
      }
      return MakeExternCall(name, std::move(args), SInfoList(out),
                            tir ? ExternStyle::kTir : ExternStyle::kDpsPacked);
    }
    if (callee.rfind("R.", 0) == 0) {
      const OpInfo* op = FindOp(callee.substr(2));
      if (!op) Fail(e.base->loc, "unknown op " + callee);
      return OpCall(*op, e);
    }
    Fail(e.base->loc, "unknown function " + (callee.empty() ? text::ToString(*e.base) : callee));
  }

  Expr OpArg(const OpInfo& op, size_t i, const PyExpr& e) {
    // A shape argument may be written as a tuple or list of dimensions.
    if (op.arg_names[i] == "shape" &&
        (e.kind == PyExprKind::kTuple || e.kind == PyExprKind::kList)) {
      return MakeShapeExpr(Dims(e, false, true));
    }
    return Value(e);
  }

  AttrValue OpAttr(const OpInfo& op, const AttrSpec& spec, const PyExpr& e) {
    // TVM writes an unset dtype as None (`R.matmul(a, b, out_dtype=None)`): quilt's "void".
    if (e.kind == PyExprKind::kNone && spec.type == AttrType::kDType && spec.has_default &&
        spec.default_value == AttrValue(DataType::kVoid)) {
      return DataType::kVoid;
    }
    if (e.kind == PyExprKind::kNone) return std::monostate{};
    switch (spec.type) {
      case AttrType::kDType:
        return Dtype(e);
      case AttrType::kVDevice:
        return DeviceRef(e);
      case AttrType::kInts: {
        // A single integer stands for a one-element list (`axis=0`).
        if (std::optional<int64_t> i = IntLit(e)) return std::vector<int64_t>{*i};
        AttrValue v = LiteralAttr(e);
        if (e.items.empty() && (e.kind == PyExprKind::kList || e.kind == PyExprKind::kTuple)) {
          return std::vector<int64_t>{};
        }
        return v;
      }
      case AttrType::kFloat: {
        std::optional<double> f = NumberLit(e);
        if (!f) Fail(e.loc, "R." + op.name + ": attribute '" + spec.name + "' must be a number");
        return *f;
      }
      default:
        return LiteralAttr(e);
    }
  }

  Expr OpCall(const OpInfo& op, const PyExpr& e) {
    if (op.kind == OpKind::kHintOnDevice) return HintCall(op, e);
    std::vector<Expr> args;
    Attrs attrs;
    size_t n = op.arg_names.size();
    for (size_t i = 0; i < e.items.size(); ++i) {
      if (i < n) {
        args.push_back(OpArg(op, i, *e.items[i]));
        continue;
      }
      if (i - n >= op.attrs.size())
        Fail(e.items[i]->loc, "R." + op.name + " takes at most " +
                                  std::to_string(n + op.attrs.size()) + " arguments");
      const AttrSpec& spec = op.attrs[i - n];
      attrs.Set(spec.name, OpAttr(op, spec, *e.items[i]));
    }
    for (const auto& kw : e.keywords) {
      bool found = false;
      for (size_t i = 0; i < n && !found; ++i) {
        if (op.arg_names[i] != kw.name) continue;
        if (args.size() != i) Fail(kw.loc, "argument '" + kw.name + "' given out of order");
        args.push_back(OpArg(op, i, *kw.value));
        found = true;
      }
      for (const AttrSpec& spec : op.attrs) {
        if (found || spec.name != kw.name) continue;
        attrs.Set(spec.name, OpAttr(op, spec, *kw.value));
        found = true;
      }
      if (!found) Fail(kw.loc, "R." + op.name + " has no parameter '" + kw.name + "'");
    }
    if (args.size() != n) {
      Fail(
          e.loc, "R." + op.name + " takes " + std::to_string(n) + " argument(s) (" +
                     [&] {
                       std::string s;
                       for (const auto& a : op.arg_names) s += (s.empty() ? "" : ", ") + a;
                       return s;
                     }() +
                     "), got " + std::to_string(args.size()));
    }
    return Check(MakeOpCall(op, std::move(args), std::move(attrs)), e.loc);
  }

  Expr Const(const PyExpr& e) {
    const PyExpr* value = Arg(e, 0, "value");
    if (!value) Fail(e.loc, "R.const needs a value");
    const PyExpr* dt = Arg(e, 1, "dtype");
    // Flatten nested lists, checking that they are rectangular.
    std::vector<int64_t> shape;
    std::vector<const PyExpr*> leaves;
    std::function<void(const PyExpr&, size_t)> walk = [&](const PyExpr& x, size_t depth) {
      if (x.kind == PyExprKind::kList || x.kind == PyExprKind::kTuple) {
        if (depth == shape.size()) {
          if (!leaves.empty()) Fail(x.loc, "R.const: ragged nested list");
          shape.push_back(static_cast<int64_t>(x.items.size()));
        } else if (depth > shape.size() || shape[depth] != static_cast<int64_t>(x.items.size())) {
          Fail(x.loc, "R.const: ragged nested list");
        }
        for (const PyExprPtr& i : x.items) walk(*i, depth + 1);
        return;
      }
      if (depth != shape.size()) Fail(x.loc, "R.const: ragged nested list");
      leaves.push_back(&x);
    };
    walk(*value, 0);
    bool all_int = true, all_bool = true;
    for (const PyExpr* l : leaves) {
      all_int &= IntLit(*l).has_value();
      all_bool &= l->kind == PyExprKind::kBool;
    }
    DataType dtype = dt         ? Dtype(*dt)
                     : all_bool ? DataType::kBool
                     : all_int  ? DataType::kInt32
                                : DataType::kFloat32;
    int bits = DataTypeBits(dtype);
    if (bits % 8 != 0 || bits == 0) {
      Fail(e.loc, "R.const cannot write " + std::string(DataTypeName(dtype)) +
                      " values; use R.const_bytes");
    }
    auto data = std::make_shared<std::vector<uint8_t>>(leaves.size() * bits / 8);
    uint8_t* p = data->data();
    for (const PyExpr* l : leaves) {
      std::optional<double> num =
          l->kind == PyExprKind::kBool ? std::optional<double>(l->int_value) : NumberLit(*l);
      if (!num) Fail(l->loc, "R.const: expected a number, got " + text::ToString(*l));
      std::optional<int64_t> iv =
          l->kind == PyExprKind::kBool ? std::optional<int64_t>(l->int_value) : IntLit(*l);
      if (!IsFloat(dtype) && !iv)
        Fail(l->loc, "R.const: expected an integer for " + std::string(DataTypeName(dtype)));
      auto store = [&](auto v) {
        std::memcpy(p, &v, sizeof(v));
        p += sizeof(v);
      };
      switch (dtype) {
        case DataType::kFloat32:
          store(static_cast<float>(*num));
          break;
        case DataType::kFloat64:
          store(*num);
          break;
        case DataType::kBool:
          store(static_cast<uint8_t>(*iv != 0));
          break;
        case DataType::kInt8:
          store(static_cast<int8_t>(*iv));
          break;
        case DataType::kUInt8:
          store(static_cast<uint8_t>(*iv));
          break;
        case DataType::kInt16:
          store(static_cast<int16_t>(*iv));
          break;
        case DataType::kUInt16:
          store(static_cast<uint16_t>(*iv));
          break;
        case DataType::kInt32:
          store(static_cast<int32_t>(*iv));
          break;
        case DataType::kUInt32:
          store(static_cast<uint32_t>(*iv));
          break;
        case DataType::kInt64:
          store(*iv);
          break;
        case DataType::kUInt64:
          store(static_cast<uint64_t>(*iv));
          break;
        default:
          Fail(e.loc, "R.const cannot write " + std::string(DataTypeName(dtype)) +
                          " values; use R.const_bytes");
      }
    }
    return Check(MakeConstant(dtype, shape, data), e.loc);
  }

  Expr ConstBytes(const PyExpr& e) {
    std::string hex = StringLit(Arg(e, 0, "hex"), "R.const_bytes data");
    const PyExpr* shape_e = Arg(e, 1, "shape");
    const PyExpr* dt = Arg(e, 2, "dtype");
    if (!shape_e || !dt) Fail(e.loc, "expected R.const_bytes(hex, shape, dtype)");
    std::vector<int64_t> shape;
    for (const PrimExpr& d : Dims(*shape_e, false)) {
      std::optional<int64_t> v = AsInt(d);
      if (!v) Fail(shape_e->loc, "a constant's shape must be static");
      shape.push_back(*v);
    }
    if (hex.size() % 2) Fail(e.loc, "R.const_bytes: odd number of hex digits");
    auto data = std::make_shared<std::vector<uint8_t>>();
    for (size_t i = 0; i < hex.size(); i += 2) {
      auto digit = [&](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        Fail(e.loc, "R.const_bytes: bad hex digit");
      };
      data->push_back(static_cast<uint8_t>(digit(hex[i]) * 16 + digit(hex[i + 1])));
    }
    return Check(MakeConstant(Dtype(*dt), shape, data), e.loc);
  }

  IRModule mod_;
  std::string class_name_;  // the @I.ir_module class's name (`cls = Module`)
  bool func_pure_ = true;   // the function being built is pure
  std::string func_name_;
  std::map<std::string, const PyStmt*> defs_;
  std::set<std::string> prim_defs_;  // the T.prim_funcs' names
  std::vector<std::string> order_;
  std::map<std::string, Function> built_;
  std::set<std::string> building_;
  Scope scope_;
};

}  // namespace

Expected<IRModule> ParseModule(std::string_view source, std::string_view filename) {
  std::string prefix = filename.empty() ? "" : std::string(filename) + ":";
  text::PyModule py;
  text::PyError error;
  if (!text::ParsePy(source, &py, &error)) {
    return Error(error.message,
                 prefix + std::to_string(error.loc.line) + ":" + std::to_string(error.loc.col));
  }
  try {
    return ModuleParser().Parse(py);
  } catch (const ParseError& e) {
    return Error(e.message, prefix + std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col));
  }
}

Expected<Target> ParseTarget(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string_view::npos || text[first] != '{') return Target::Parse(text);
  text::PyModule py;
  text::PyError error;
  std::string source = std::string(text.substr(first)) + "\n";
  if (!text::ParsePy(source, &py, &error)) {
    return Error("target " + std::string(text) + ": " + error.message);
  }
  if (py.body.size() != 1 || py.body[0]->kind != PyStmtKind::kExpr ||
      py.body[0]->value->kind != PyExprKind::kDict) {
    return Error("target " + std::string(text) + ": expected one dict {\"kind\": ..., ...}");
  }
  try {
    return TargetDict(*py.body[0]->value);
  } catch (const ParseError& e) {
    return Error("target " + std::string(text) + ": " + e.message);
  }
}

}  // namespace quilt::ir
