// The op table built from ops.def, the schema parser, and InferCall, which applies the vdevice
// rules of DESIGN around every op's shape/dtype rule.
#include <cstdlib>
#include <sstream>

#include "ir/op.h"
#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

AttrType ParseAttrType(std::string_view t) {
  static const std::pair<std::string_view, AttrType> kTypes[] = {
      {"int", AttrType::kInt},   {"float", AttrType::kFloat}, {"bool", AttrType::kBool},
      {"str", AttrType::kStr},   {"ints", AttrType::kInts},   {"floats", AttrType::kFloats},
      {"strs", AttrType::kStrs}, {"dtype", AttrType::kDType}, {"vdevice", AttrType::kVDevice},
  };
  for (const auto& [name, type] : kTypes) {
    if (name == t) return type;
  }
  QUILT_CHECK(false) << "bad attribute type in ops.def: " << t;
  return AttrType::kInt;
}

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

AttrValue ParseDefault(AttrType type, const std::string& text) {
  if (text == "None") return std::monostate{};
  switch (type) {
    case AttrType::kInt:
      return static_cast<int64_t>(std::stoll(text));
    case AttrType::kFloat:
      return std::stod(text);
    case AttrType::kBool:
      return text == "True";
    case AttrType::kStr:
      return text;
    case AttrType::kDType:
      return *ParseDataType(text);
    case AttrType::kInts:
    case AttrType::kFloats:
    case AttrType::kStrs:
    case AttrType::kVDevice:
      break;
  }
  QUILT_CHECK(false) << "unsupported default in ops.def: " << text;
  return std::monostate{};
}

OpInfo MakeOpInfo(OpKind kind, const char* name, OpPattern pattern, InferRule infer,
                  const char* schema) {
  OpInfo info{kind, name, pattern, infer, {}, {}};
  std::istringstream in(schema);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = Trim(item);
    size_t colon = item.find(':');
    if (colon == std::string::npos) {
      QUILT_CHECK(info.attrs.empty()) << name << ": expression arguments come before attributes";
      info.arg_names.push_back(item);
      continue;
    }
    AttrSpec spec;
    spec.name = item.substr(0, colon);
    std::string type = item.substr(colon + 1);
    size_t eq = type.find('=');
    std::string def;
    if (eq != std::string::npos) {
      def = type.substr(eq + 1);
      type = type.substr(0, eq);
      spec.has_default = true;
    }
    if (!type.empty() && type.back() == '?') {
      spec.optional = true;
      type.pop_back();
    }
    spec.type = ParseAttrType(type);
    if (spec.has_default) spec.default_value = ParseDefault(spec.type, def);
    info.attrs.push_back(std::move(spec));
  }
  return info;
}

bool TypeMatches(AttrType type, const AttrValue& v) {
  switch (type) {
    case AttrType::kInt:
      return std::holds_alternative<int64_t>(v);
    case AttrType::kFloat:
      return std::holds_alternative<double>(v);
    case AttrType::kBool:
      return std::holds_alternative<bool>(v);
    case AttrType::kStr:
      return std::holds_alternative<std::string>(v);
    case AttrType::kInts:
      return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::kFloats:
      return std::holds_alternative<std::vector<double>>(v);
    case AttrType::kStrs:
      return std::holds_alternative<std::vector<std::string>>(v);
    case AttrType::kDType:
      return std::holds_alternative<DataType>(v);
    case AttrType::kVDevice:
      return std::holds_alternative<VDevice>(v);
  }
  return false;
}

// Collects the vdevices of the tensors in `s` (tuple fields included).
void CollectVDevices(const StructInfo& s, const Expr& arg,
                     std::vector<std::pair<VDevice, Expr>>* out) {
  if (!s) return;
  if (s->IsTensor() && s->vdevice) out->emplace_back(*s->vdevice, arg);
  if (s->kind == StructInfoKind::kTuple) {
    for (const StructInfo& f : s->fields) CollectVDevices(f, arg, out);
  }
}

StructInfo StampVDevice(const StructInfo& s, const VDevice& d) {
  if (!s) return s;
  if (s->IsTensor()) return s->vdevice ? s : WithVDevice(s, d);
  if (s->kind != StructInfoKind::kTuple) return s;
  std::vector<StructInfo> fields;
  for (const StructInfo& f : s->fields) fields.push_back(StampVDevice(f, d));
  return TupleSInfo(std::move(fields));
}

}  // namespace

std::string_view OpPatternName(OpPattern p) {
  switch (p) {
    case OpPattern::kElementwise:
      return "elementwise";
    case OpPattern::kBroadcast:
      return "broadcast";
    case OpPattern::kInjective:
      return "injective";
    case OpPattern::kReduction:
      return "reduction";
    case OpPattern::kOutEwiseFusable:
      return "out-elementwise-fusable";
    case OpPattern::kOpaque:
      return "opaque";
  }
  return "?";
}

const std::vector<OpInfo>& AllOps() {
  static const std::vector<OpInfo> ops = {
#define QUILT_OP(kind, name, pattern, infer, schema) \
  MakeOpInfo(OpKind::k##kind, name, OpPattern::pattern, &infer, schema),
#include "ir/ops.def"
  };
  return ops;
}

const OpInfo& GetOp(OpKind kind) {
  size_t i = static_cast<size_t>(kind);
  QUILT_CHECK(i < AllOps().size()) << "op kind " << i << " is not in the op table";
  return AllOps()[i];
}

const OpInfo* FindOp(std::string_view name) {
  for (const OpInfo& op : AllOps()) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

Expr OpExpr(OpKind kind) {
  static const std::vector<Expr> exprs = [] {
    std::vector<Expr> v;
    for (const OpInfo& op : AllOps()) v.push_back(std::make_shared<OpNode>(&op));
    return v;
  }();
  return exprs[static_cast<size_t>(kind)];
}

const OpInfo* CallNode::op() const {
  const OpNode* op = As<OpNode>(callee);
  return op ? op->info : nullptr;
}

Expected<Attrs> CanonicalAttrs(const OpInfo& op, Attrs attrs) {
  for (const auto& [k, v] : attrs.items) {
    bool known = false;
    for (const AttrSpec& spec : op.attrs) known |= spec.name == k;
    if (!known) return Error("R." + op.name + " has no attribute '" + k + "'");
  }
  Attrs out;
  for (const AttrSpec& spec : op.attrs) {
    const AttrValue* v = attrs.Find(spec.name);
    if (!v) {
      if (!spec.has_default) return Error("R." + op.name + " needs attribute '" + spec.name + "'");
      out.items.emplace_back(spec.name, spec.default_value);
      continue;
    }
    bool none = std::holds_alternative<std::monostate>(*v);
    if (none ? !spec.optional : !TypeMatches(spec.type, *v)) {
      return Error("R." + op.name + ": attribute '" + spec.name + "' has the wrong type");
    }
    out.items.emplace_back(spec.name, *v);
  }
  return out;
}

std::string ArgName(const Expr& e) {
  if (!e) return "<null>";
  if (const VarNode* v = As<VarNode>(e)) return "`" + v->name_hint + "`";
  switch (e->kind) {
    case ExprKind::kConstant:
      return "a constant";
    case ExprKind::kCall:
      return "a call result";
    case ExprKind::kTuple:
      return "a tuple";
    default:
      return "an expression";
  }
}

Expected<StructInfo> InferCall(const OpInfo& op, const std::vector<Expr>& args,
                               const Attrs& attrs) {
  if (args.size() != op.arg_names.size()) {
    return Error("R." + op.name + " takes " + std::to_string(op.arg_names.size()) +
                 " argument(s), got " + std::to_string(args.size()));
  }
  // Every argument is present (an importer passes what a model names, which may be absent), and
  // inference computes with static sizes: each must be a count the runtime can hold.
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i]) return Error("R." + op.name + ": argument '" + op.arg_names[i] + "' is missing");
    if (!StaticSizesFit(args[i]->struct_info)) {
      return Error("R." + op.name + ": argument '" + op.arg_names[i] + "' (" + ArgName(args[i]) +
                   ") is " + Describe(args[i]->struct_info) + ", more than 2^50 elements");
    }
  }
  Expected<StructInfo> result = op.infer(op, args, attrs);
  if (!result) return Error("R." + op.name + ": " + result.error().message);
  if (!StaticSizesFit(*result)) {
    return Error("R." + op.name + ": the result would be " + Describe(*result) +
                 ", more than 2^50 elements");
  }
  if (op.kind == OpKind::kToVDevice || op.kind == OpKind::kHintOnDevice) return result;
  // Co-location: the tensor arguments share one vdevice, which the result takes.
  std::vector<std::pair<VDevice, Expr>> placed;
  for (const Expr& a : args) CollectVDevices(a->struct_info, a, &placed);
  if (placed.empty()) return result;
  for (const auto& [d, arg] : placed) {
    if (d != placed[0].first) {
      return Error("R." + op.name +
                   " has arguments on different vdevices: " + ArgName(placed[0].second) +
                   " is on " + placed[0].first.ToString() + " and " + ArgName(arg) + " is on " +
                   d.ToString() + "; insert R.to_vdevice to copy one of them");
    }
  }
  return StampVDevice(*result, placed[0].first);
}

}  // namespace quilt::ir
