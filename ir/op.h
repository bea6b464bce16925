// The op registry: one OpInfo per line of ops.def, with the parsed schema and the struct-info
// rule. Lookup by kind or by name ("add", "nn.softmax").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/diagnostic.h"
#include "ir/expr.h"

namespace quilt::ir {

enum class OpKind : int {
#define QUILT_OP(kind, name, pattern, infer, schema) k##kind,
#include "ir/ops.def"
};

enum class OpPattern {
  kElementwise,
  kBroadcast,
  kInjective,
  kReduction,
  kOutEwiseFusable,
  kOpaque
};
std::string_view OpPatternName(OpPattern p);

enum class AttrType { kInt, kFloat, kBool, kStr, kInts, kFloats, kStrs, kDType, kVDevice };

struct AttrSpec {
  std::string name;
  AttrType type = AttrType::kInt;
  bool optional = false;  // None allowed
  bool has_default = false;
  AttrValue default_value;
};

struct OpInfo;
// Infers the result of a call from its arguments' struct info and its attributes. The
// co-location of vdevices is handled around it (InferCall), so a rule only computes shape and
// dtype.
using InferRule = Expected<StructInfo> (*)(const OpInfo& op, const std::vector<Expr>& args,
                                           const Attrs& attrs);

struct OpInfo {
  OpKind kind;
  std::string name;
  OpPattern pattern;
  InferRule infer;
  std::vector<std::string> arg_names;  // expression arguments, in order
  std::vector<AttrSpec> attrs;         // attributes, in order
};

const std::vector<OpInfo>& AllOps();
const OpInfo& GetOp(OpKind kind);
const OpInfo* FindOp(std::string_view name);

// The Op expression for `kind` (one shared node per op).
Expr OpExpr(OpKind kind);

// Fills in the defaults of `attrs` and orders them as the schema does. Errors on unknown or
// missing attributes and on values of the wrong type.
Expected<Attrs> CanonicalAttrs(const OpInfo& op, Attrs attrs);

// The struct info of `op(args, attrs)`, vdevice rules included: the tensor arguments share one
// vdevice, which the result takes; two different ones are an error naming the op, both vdevices
// and the arguments.
Expected<StructInfo> InferCall(const OpInfo& op, const std::vector<Expr>& args, const Attrs& attrs);

// For messages: `x` for a variable, else a short description of the expression.
std::string ArgName(const Expr& e);

}  // namespace quilt::ir
