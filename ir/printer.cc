// The printer of the text form.
//  1. Names: per function, variables and symbolic dims get unique names in definition order
//     (a shadowed `x` prints as `x_1`).
//  2. Signature: symbolic dims print as strings ("n") where they are first seen, bare (n) in the
//     body, declared by `n = T.int64()` lines.
//  3. Blocks: a dataflow block is `with R.dataflow():` ending in `R.output(...)` of the
//     variables that leave it; an If binding prints both branches, each ending in an assignment
//     to the bound name.
#include "ir/printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "ir/op.h"

namespace quilt::ir {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A target attribute as the Python literal TVM writes: the attribute printer's, whose value
// types include every target attribute's.
std::string TargetAttrLiteral(const TargetAttr& v) {
  return std::visit([](const auto& x) { return PrintAttrValue(AttrValue(x), nullptr); }, v);
}

std::string TargetLiteral(const Target& t) {
  if (t.attrs.empty()) return Quote(t.kind);
  std::string s = "{\"kind\": " + Quote(t.kind);
  for (const auto& [k, v] : t.attrs) s += ", " + Quote(k) + ": " + TargetAttrLiteral(v);
  return s + "}";
}

// R.cuda(1), as TVM's parser reads a physical device; R.device(code, id) for the types that
// have no function of their own.
std::string PhysicalDeviceText(const std::string& type, int64_t id) {
  static const std::set<std::string> kNamed = {"cpu", "cuda", "opencl", "metal", "vulkan", "rocm"};
  if (kNamed.count(type)) return "R." + type + "(" + std::to_string(id) + ")";
  static const std::map<std::string, int> kCodes = {{"webgpu", 15}, {"hexagon", 16}};
  auto it = kCodes.find(type);
  if (it != kCodes.end())
    return "R.device(" + std::to_string(it->second) + ", " + std::to_string(id) + ")";
  return "R.device(" + Quote(type) + ", " + std::to_string(id) + ")";
}

std::string VDeviceName(const VDevice& d, const IRModule* mod) {
  int index = mod ? mod->VDeviceIndex(d) : -1;
  // A vdevice outside the list cannot be named; the verifier reports it.
  if (index < 0) return Quote("<not in the vdevice list: " + d.ToString() + ">");
  return Quote(DeviceString(index, mod->vdevices));
}

template <typename T, typename F>
std::string Join(const std::vector<T>& items, F&& f, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + f(items[i]);
  return s;
}

std::string ElementText(DataType dtype, const uint8_t* p) {
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (dtype) {
    case DataType::kBool:
      return *p ? "True" : "False";
    case DataType::kInt8:
      return std::to_string(load(int8_t{}));
    case DataType::kUInt8:
      return std::to_string(load(uint8_t{}));
    case DataType::kInt16:
      return std::to_string(load(int16_t{}));
    case DataType::kUInt16:
      return std::to_string(load(uint16_t{}));
    case DataType::kInt32:
      return std::to_string(load(int32_t{}));
    case DataType::kUInt32:
      return std::to_string(load(uint32_t{}));
    case DataType::kInt64:
      return std::to_string(load(int64_t{}));
    case DataType::kUInt64:
      return std::to_string(load(uint64_t{}));
    case DataType::kFloat32:
      return FormatDouble(load(float{}));
    case DataType::kFloat64:
      return FormatDouble(load(double{}));
    default:
      return "";
  }
}

bool HasLiteralForm(DataType t) {
  switch (t) {
    case DataType::kBool:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat32:
    case DataType::kFloat64:
      return true;
    default:
      return false;
  }
}

std::string ConstantText(const ConstantNode& c) {
  std::string dtype = Quote(std::string(DataTypeName(c.dtype)));
  const std::vector<uint8_t>& data = *c.data;
  // Raw bytes in hex where nested lists do not serve: element types without a Python literal, an
  // empty constant of several dims (its lists would number the product of the dims before the
  // zero, 2^40 and more for a damaged model), and ranks past 8 (one level of nesting each).
  bool nested = HasLiteralForm(c.dtype) && c.shape.size() <= 8 &&
                (c.shape.size() <= 1 || c.NumElements() > 0);
  if (!nested) {
    std::string hex;
    char buf[3];
    for (uint8_t b : data) {
      std::snprintf(buf, sizeof(buf), "%02x", b);
      hex += buf;
    }
    std::string shape = "(" + Join(c.shape, [](int64_t d) { return std::to_string(d); });
    shape += c.shape.size() == 1 ? ",)" : ")";
    return "R.const_bytes(" + Quote(hex) + ", " + shape + ", " + dtype + ")";
  }
  size_t elem = DataTypeBits(c.dtype) / 8;
  size_t index = 0;
  // Nested lists, one level per dimension, appended to one string.
  std::string s = "R.const(";
  std::function<void(size_t)> nest = [&](size_t dim) {
    if (dim == c.shape.size()) {
      s += ElementText(c.dtype, data.data() + elem * index++);
      return;
    }
    s += '[';
    for (int64_t i = 0; i < c.shape[dim]; ++i) {
      if (i) s += ", ";
      nest(dim + 1);
    }
    s += ']';
  };
  nest(0);
  return s + ", " + dtype + ")";
}

class FunctionPrinter {
 public:
  FunctionPrinter(const IRModule& mod, std::ostringstream& out) : mod_(mod), out_(out) {}

  void Print(const std::string& name, const FunctionNode& f) {
    for (const Var& p : f.params) NameVar(p);
    std::vector<std::string> decorators;
    if (!f.is_pure) decorators.push_back("pure=False");
    if (f.is_private) decorators.push_back("private=True");
    out_ << "    @R.function";
    if (!decorators.empty()) out_ << "(" << Join(decorators, [](auto& s) { return s; }) << ")";
    in_signature_ = true;
    std::vector<std::string> params;
    for (size_t i = 0; i < f.params.size(); ++i) {
      const Var& p = f.params[i];
      std::string text = var_names_.at(p.get()) + ": " + SInfo(p->struct_info);
      if (i < f.param_defaults.size() && f.param_defaults[i]) {
        text += " = " + ExprText(f.param_defaults[i]);
      }
      params.push_back(text);
    }
    std::string ret = SInfo(f.ret_struct_info);
    std::string line =
        "    def " + name + "(" + Join(params, [](auto& x) { return x; }) + ") -> " + ret + ":";
    if (line.size() <= 100) {
      out_ << "\n" << line << "\n";
    } else {
      // One parameter a line, as code formatters write long signatures.
      out_ << "\n    def " << name << "(\n";
      for (const std::string& p : params) out_ << "        " << p << ",\n";
      out_ << "    ) -> " << ret << ":\n";
    }
    in_signature_ = false;
    std::string indent = "        ";
    std::ostringstream body;
    std::swap(body, out_body_);
    PrintSeq(*f.body, indent, "");
    std::swap(body, out_body_);
    for (const PrimExpr& v : sym_order_)
      out_ << indent << sym_names_.at(v.get()) << " = T.int64()\n";
    if (!f.attrs.empty()) {
      out_ << indent << "R.func_attr({" << Join(f.attrs.items, [&](const auto& kv) {
        return Quote(kv.first) + ": " + PrintAttrValue(kv.second, &mod_);
      }) << "})\n";
    }
    // TVM's name for the module inside a function that calls another one.
    if (uses_cls_) out_ << indent << "cls = Module\n";
    out_ << body.str();
  }

  std::string Unique(const std::string& hint) {
    // Python keywords and the names the text form itself uses cannot name a value.
    static const std::set<std::string> kReserved = {
        "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
        "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
        "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
        "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",    "R",
        "I",     "T",        "cls",   "tvm",    "float"};
    std::string base = hint.empty() ? "v" : hint;
    if (kReserved.count(base)) base += "_";
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

  void NameVar(const Var& v) {
    if (!var_names_.count(v.get())) var_names_[v.get()] = Unique(v->name_hint);
  }

  std::string Dim(const PrimExpr& e) {
    VisitSymVars(e, [&](const PrimExpr& v) { SymName(v); });
    if (e->kind == PrimKind::kVar) {
      const std::string& name = sym_names_.at(e.get());
      return in_signature_ ? Quote(name) : name;
    }
    // Print through ToString with the leaves renamed to their unique names.
    std::function<PrimExpr(const PrimExpr&)> rename = [&](const PrimExpr& x) -> PrimExpr {
      if (!x || x->kind == PrimKind::kInt) return x;
      if (x->kind == PrimKind::kVar) return SymVar(sym_names_.at(x.get()));
      auto n = std::make_shared<PrimExprNode>(*x);
      n->a = rename(x->a);
      n->b = rename(x->b);
      return n;
    };
    return ToString(rename(e));
  }

  std::string SymName(const PrimExpr& v) {
    auto it = sym_names_.find(v.get());
    if (it != sym_names_.end()) return it->second;
    std::string name = Unique(v->name);
    sym_names_[v.get()] = name;
    sym_order_.push_back(v);
    return name;
  }

  std::string Dims(const std::vector<PrimExpr>& dims) {
    std::string s = "(" + Join(dims, [&](const PrimExpr& d) { return Dim(d); });
    return s + (dims.size() == 1 ? ",)" : ")");
  }

  std::string SInfo(const StructInfo& s) {
    if (!s) return "R.Object";
    switch (s->kind) {
      case StructInfoKind::kObject:
        return "R.Object";
      case StructInfoKind::kPrim:
        return "R.Prim(" + Quote(std::string(DataTypeName(s->dtype))) + ")";
      case StructInfoKind::kShape:
        if (s->shape) return "R.Shape([" + Join(*s->shape, [&](auto& d) { return Dim(d); }) + "])";
        return s->ndim < 0 ? "R.Shape" : "R.Shape(ndim=" + std::to_string(s->ndim) + ")";
      case StructInfoKind::kTensor: {
        std::vector<std::string> parts;
        bool positional = s->shape.has_value();
        if (positional) {
          parts.push_back(Dims(*s->shape));
        } else if (s->ndim >= 0) {
          parts.push_back("ndim=" + std::to_string(s->ndim));
        }
        std::string dtype = Quote(std::string(DataTypeName(s->dtype)));
        if (s->dtype != DataType::kVoid || (positional && s->vdevice)) {
          parts.push_back(positional ? dtype : "dtype=" + dtype);
        }
        if (s->vdevice) {
          std::string d = VDeviceName(*s->vdevice, &mod_);
          parts.push_back(positional ? d : "vdevice=" + d);
        }
        return "R.Tensor(" + Join(parts, [](auto& p) { return p; }) + ")";
      }
      case StructInfoKind::kTuple:
        return "R.Tuple(" + Join(s->fields, [&](auto& f) { return SInfo(f); }) + ")";
      case StructInfoKind::kFunc:
        return "R.Callable((" + Join(s->fields, [&](auto& f) { return SInfo(f); }) +
               (s->fields.size() == 1 ? ",), " : "), ") + SInfo(s->ret) + ")";
    }
    return "R.Object";
  }

  std::string ExprText(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kVar:
      case ExprKind::kDataflowVar: {
        auto it = var_names_.find(static_cast<const VarNode*>(e.get()));
        // A variable used but never defined: the verifier reports it; print its hint.
        return it == var_names_.end() ? As<VarNode>(e)->name_hint : it->second;
      }
      case ExprKind::kConstant:
        return ConstantText(*As<ConstantNode>(e));
      case ExprKind::kTuple: {
        const auto& f = As<TupleNode>(e)->fields;
        return "(" + Join(f, [&](auto& x) { return ExprText(x); }) + (f.size() == 1 ? ",)" : ")");
      }
      case ExprKind::kTupleGetItem: {
        const auto* t = As<TupleGetItemNode>(e);
        return ExprText(t->tuple) + "[" + std::to_string(t->index) + "]";
      }
      case ExprKind::kShapeExpr:
        return "R.shape([" + Join(As<ShapeExprNode>(e)->values, [&](auto& d) { return Dim(d); }) +
               "])";
      case ExprKind::kPrimValue: {
        const auto* p = As<PrimValueNode>(e);
        std::string v = Dim(p->value);
        if (p->dtype == DataType::kInt64) return "R.prim_value(" + v + ")";
        return "R.prim_value(" + v + ", " + Quote(std::string(DataTypeName(p->dtype))) + ")";
      }
      case ExprKind::kStringImm:
        return "R.str(" + Quote(As<StringImmNode>(e)->value) + ")";
      case ExprKind::kCall:
        return CallText(*As<CallNode>(e));
      case ExprKind::kGlobalVar:
        uses_cls_ = true;
        return "cls." + As<GlobalVarNode>(e)->name;
      case ExprKind::kOp:
        return "R." + As<OpNode>(e)->info->name;
      case ExprKind::kExternFunc:
        return Quote(As<ExternFuncNode>(e)->name);
      case ExprKind::kIf:
      case ExprKind::kSeqExpr:
      case ExprKind::kFunction:
        break;
    }
    return "<unprintable>";
  }

  std::string CallText(const CallNode& call) {
    std::vector<std::string> parts;
    for (const Expr& a : call.args) parts.push_back(ExprText(a));
    if (const OpInfo* op = call.op()) {
      if (op->kind == OpKind::kMatchCast && call.sinfo_args.size() == 1) {
        return "R.match_cast(" + parts[0] + ", " + SInfo(call.sinfo_args[0]) + ")";
      }
      if (op->kind == OpKind::kHintOnDevice) {
        const auto* id = call.attrs.Get<int64_t>("index");
        parts.push_back(
            PhysicalDeviceText(*call.attrs.Get<std::string>("device_type"), id ? *id : 0));
        const auto* scope = call.attrs.Get<std::string>("memory_scope");
        if (scope && *scope != "global") parts.push_back(Quote(*scope));
        return "R." + op->name + "(" + Join(parts, [](auto& p) { return p; }) + ")";
      }
      bool keywords = false;
      for (const AttrSpec& spec : op->attrs) {
        const AttrValue* v = call.attrs.Find(spec.name);
        // take's axis is printed even when 0: TVM's default is None (the data flattened).
        bool always = op->kind == OpKind::kTake && spec.name == "axis";
        if (!v || (spec.has_default && *v == spec.default_value && !always)) {
          keywords = true;  // a skipped attribute: the ones after it need their names
          continue;
        }
        std::string text = PrintAttrValue(*v, &mod_);
        // Required attributes read best positionally ("R.to_vdevice(x, "cuda")"), as long as
        // no attribute before them was skipped or named.
        keywords |= spec.has_default;
        parts.push_back(keywords ? spec.name + "=" + text : text);
      }
      return "R." + op->name + "(" + Join(parts, [](auto& p) { return p; }) + ")";
    }
    if (const auto* ext = As<ExternFuncNode>(call.callee)) {
      std::string sinfo =
          call.sinfo_args.size() == 1
              ? SInfo(call.sinfo_args[0])
              : "[" + Join(call.sinfo_args, [&](auto& s) { return SInfo(s); }) + "]";
      if (ext->style == ExternStyle::kDpsPacked || ext->style == ExternStyle::kTir) {
        bool tir = ext->style == ExternStyle::kTir;
        uses_cls_ |= tir;
        std::string args =
            "(" + Join(parts, [](auto& p) { return p; }) + (parts.size() == 1 ? ",)" : ")");
        return std::string(tir ? "R.call_tir(cls." + ext->name
                               : "R.call_dps_packed(" + Quote(ext->name)) +
               ", " + args + ", out_ty=" + sinfo + ")";
      }
      parts.insert(parts.begin(), Quote(ext->name));
      // TVM 0.27's names (out_ty, ty_args); the parser also takes the older out_sinfo, sinfo_args.
      parts.push_back("ty_args=" + sinfo);
      return std::string(ext->style == ExternStyle::kPurePacked ? "R.call_pure_packed("
                                                                : "R.call_packed(") +
             Join(parts, [](auto& p) { return p; }) + ")";
    }
    return ExprText(call.callee) + "(" + Join(parts, [](auto& p) { return p; }) + ")";
  }

  void PrintBinding(const Binding& b, const std::string& indent) {
    if (const auto* n = As<IfNode>(b.value)) {
      std::string cond = ExprText(n->cond);
      NameVar(b.var);
      std::string name = var_names_.at(b.var.get());
      out_body_ << indent << "if " << cond << ":\n";
      PrintSeq(*n->then_branch, indent + "    ", name);
      out_body_ << indent << "else:\n";
      PrintSeq(*n->else_branch, indent + "    ", name);
      return;
    }
    std::string value = ExprText(b.value);
    NameVar(b.var);
    out_body_ << indent << var_names_.at(b.var.get()) << ": " << SInfo(b.var->struct_info) << " = "
              << value << "\n";
  }

  // `result_name` empty: a function body, ending in `return`; else an If branch, ending in an
  // assignment to `result_name`.
  void PrintSeq(const SeqExprNode& seq, const std::string& indent, const std::string& result_name) {
    for (const BindingBlock& block : seq.blocks) {
      if (!block.dataflow) {
        for (const Binding& b : block.bindings) PrintBinding(b, indent);
        continue;
      }
      out_body_ << indent << "with R.dataflow():\n";
      std::vector<std::string> outputs;
      for (const Binding& b : block.bindings) {
        PrintBinding(b, indent + "    ");
        if (!b.var->IsDataflow()) outputs.push_back(var_names_.at(b.var.get()));
      }
      out_body_ << indent << "    R.output(" << Join(outputs, [](auto& s) { return s; }) << ")\n";
    }
    std::string body = ExprText(seq.body);
    if (result_name.empty()) {
      out_body_ << indent << "return " << body << "\n";
    } else {
      out_body_ << indent << result_name << " = " << body << "\n";
    }
  }

  const IRModule& mod_;
  std::ostringstream& out_;
  std::ostringstream out_body_;
  std::map<const VarNode*, std::string> var_names_;
  std::map<const PrimExprNode*, std::string> sym_names_;
  std::vector<PrimExpr> sym_order_;
  std::set<std::string> used_;
  bool in_signature_ = false;
  bool uses_cls_ = false;
};

}  // namespace

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  // The fewest significant digits that read back as v: std::to_chars finds how many in one go (a
  // weight tensor prints its floats a digit count at a time otherwise), %g writes them.
  char buf[32], shortest[64];
  int digits = 1;
  if (auto r =
          std::to_chars(shortest, shortest + sizeof(shortest), v, std::chars_format::scientific);
      r.ec == std::errc()) {
    digits = static_cast<int>(std::count_if(shortest, std::find(shortest, r.ptr, 'e'),
                                            [](char c) { return c >= '0' && c <= '9'; }));
  }
  for (int precision = std::max(digits, 1); precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string PrintAttrValue(const AttrValue& v, const IRModule* mod) {
  struct Visitor {
    const IRModule* mod;
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return FormatDouble(x); }
    std::string operator()(bool x) const { return x ? "True" : "False"; }
    std::string operator()(const std::string& x) const { return Quote(x); }
    std::string operator()(const std::vector<int64_t>& x) const {
      return "[" + Join(x, [](int64_t i) { return std::to_string(i); }) + "]";
    }
    std::string operator()(const std::vector<double>& x) const {
      return "[" + Join(x, [](double d) { return FormatDouble(d); }) + "]";
    }
    std::string operator()(const std::vector<std::string>& x) const {
      return "[" + Join(x, [](const std::string& s) { return Quote(s); }) + "]";
    }
    std::string operator()(DataType t) const { return Quote(std::string(DataTypeName(t))); }
    std::string operator()(const VDevice& d) const { return VDeviceName(d, mod); }
  };
  return std::visit(Visitor{mod}, v);
}

std::string PrintStructInfo(const StructInfo& s, const IRModule* mod) {
  IRModule empty;
  std::ostringstream unused;
  return FunctionPrinter(mod ? *mod : empty, unused).SInfo(s);
}

std::string PrintModule(const IRModule& mod) {
  std::ostringstream out;
  out << "@I.ir_module\nclass Module:\n";
  bool header = false;
  if (!mod.attrs.empty()) {
    out << "    I.module_attrs({" << Join(mod.attrs.items, [&](const auto& kv) {
      return Quote(kv.first) + ": " + PrintAttrValue(kv.second, &mod);
    }) << "})\n";
    header = true;
  }
  if (!mod.vdevices.empty()) {
    std::vector<std::string> entries;
    for (const VDevice& d : mod.vdevices) {
      std::string e = "I.vdevice(" + TargetLiteral(d.target);
      bool id = d.vdevice_id != 0 || d.target.DeviceType() != "cpu" || d.memory_scope != "global";
      if (id) e += ", " + std::to_string(d.vdevice_id);
      if (d.memory_scope != "global") e += ", " + Quote(d.memory_scope);
      entries.push_back(e + ")");
    }
    std::string line = "    I.module_global_infos({\"vdevice\": [" +
                       Join(entries, [](auto& x) { return x; }) + "]})";
    if (line.size() <= 100) {
      out << line << "\n";
    } else {
      out << "    I.module_global_infos(\n        {\n            \"vdevice\": [\n";
      for (const std::string& e : entries) out << "                " << e << ",\n";
      out << "            ]\n        }\n    )\n";
    }
    header = true;
  }
  for (const auto& [name, f] : mod.functions) {
    if (header) out << "\n";
    header = true;
    FunctionPrinter(mod, out).Print(name, *f);
  }
  // The T.prim_funcs, carried as their text.
  for (const auto& [name, text] : mod.prim_funcs) {
    if (header) out << "\n";
    header = true;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      out << (line.empty() ? "" : "    ") << line << "\n";
    }
  }
  if (!header) out << "    pass\n";
  return out.str();
}

}  // namespace quilt::ir
