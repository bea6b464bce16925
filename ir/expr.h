// Expressions and functions of the IR, in the spirit of TVM Relax.
//
// Nodes are immutable once shared (std::shared_ptr<const ...>); passes build new nodes for what
// they change and reuse the pointers of what they do not. Every node carries its struct info,
// filled by the builder (ir/builder.h) when it is made. `As<VarNode>(e)` is the checked cast.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/struct_info.h"

namespace quilt::ir {

struct OpInfo;

enum class ExprKind {
  kVar,
  kDataflowVar,
  kConstant,
  kCall,
  kTuple,
  kTupleGetItem,
  kShapeExpr,
  kPrimValue,
  kStringImm,
  kIf,
  kSeqExpr,
  kFunction,
  kGlobalVar,
  kOp,
  kExternFunc,
};

struct ExprNode {
  explicit ExprNode(ExprKind k) : kind(k) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  StructInfo struct_info;
};
using Expr = std::shared_ptr<const ExprNode>;

// Checked down-cast: nullptr when `e` is not a T.
template <typename T>
const T* As(const Expr& e) {
  return e && T::Matches(e->kind) ? static_cast<const T*>(e.get()) : nullptr;
}
template <typename T>
std::shared_ptr<const T> AsPtr(const Expr& e) {
  return e && T::Matches(e->kind) ? std::static_pointer_cast<const T>(e) : nullptr;
}

// A Var is defined once (function parameter or binding) and identified by object; the name is a
// hint for printing. A DataflowVar is a Var that does not leave its dataflow block.
struct VarNode : ExprNode {
  VarNode(std::string name, StructInfo sinfo, bool dataflow)
      : ExprNode(dataflow ? ExprKind::kDataflowVar : ExprKind::kVar), name_hint(std::move(name)) {
    struct_info = std::move(sinfo);
  }
  static bool Matches(ExprKind k) { return k == ExprKind::kVar || k == ExprKind::kDataflowVar; }
  bool IsDataflow() const { return kind == ExprKind::kDataflowVar; }
  std::string name_hint;
};
using Var = std::shared_ptr<const VarNode>;

struct ConstantNode : ExprNode {
  ConstantNode() : ExprNode(ExprKind::kConstant) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kConstant; }
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  // Raw little-endian elements, row-major. Shared: constants can be large.
  std::shared_ptr<const std::vector<uint8_t>> data;
  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

struct OpNode : ExprNode {
  explicit OpNode(const OpInfo* i) : ExprNode(ExprKind::kOp), info(i) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kOp; }
  const OpInfo* info;
};

// A reference to a function of the module by name; its struct info is the function's.
struct GlobalVarNode : ExprNode {
  explicit GlobalVarNode(std::string n) : ExprNode(ExprKind::kGlobalVar), name(std::move(n)) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kGlobalVar; }
  std::string name;
};

// How a call reaches code that is not a Relax function of the module, as TVM writes it:
//   kPacked:     R.call_packed("f", x, sinfo_args=...), impure (only in impure functions);
//   kPurePacked: R.call_pure_packed("f", x, sinfo_args=...), the same declared pure;
//   kDpsPacked:  R.call_dps_packed("f", (x,), out_sinfo=...), destination passing, pure;
//   kTir:        R.call_tir(cls.f, (x,), out_sinfo=...), a T.prim_func of the module, pure.
enum class ExternStyle { kPacked, kPurePacked, kDpsPacked, kTir };

// An external kernel called by symbol name, or a module's T.prim_func (kTir).
struct ExternFuncNode : ExprNode {
  ExternFuncNode(std::string n, ExternStyle s)
      : ExprNode(ExprKind::kExternFunc), name(std::move(n)), style(s) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kExternFunc; }
  std::string name;
  ExternStyle style;
  bool IsPure() const { return style != ExternStyle::kPacked; }
};

struct CallNode : ExprNode {
  CallNode() : ExprNode(ExprKind::kCall) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kCall; }
  Expr callee;  // OpNode, GlobalVarNode or ExternFuncNode
  std::vector<Expr> args;
  Attrs attrs;
  // Destination-passing calls (call_dps_packed): the struct info of their results.
  std::vector<StructInfo> sinfo_args;
  // Set for calls of ops: the op's table entry.
  const OpInfo* op() const;
};

struct TupleNode : ExprNode {
  TupleNode() : ExprNode(ExprKind::kTuple) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kTuple; }
  std::vector<Expr> fields;
};

struct TupleGetItemNode : ExprNode {
  TupleGetItemNode() : ExprNode(ExprKind::kTupleGetItem) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kTupleGetItem; }
  Expr tuple;
  int index = 0;
};

struct ShapeExprNode : ExprNode {
  ShapeExprNode() : ExprNode(ExprKind::kShapeExpr) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kShapeExpr; }
  std::vector<PrimExpr> values;
};

struct PrimValueNode : ExprNode {
  PrimValueNode() : ExprNode(ExprKind::kPrimValue) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kPrimValue; }
  PrimExpr value;
  DataType dtype = DataType::kInt64;
};

struct StringImmNode : ExprNode {
  StringImmNode() : ExprNode(ExprKind::kStringImm) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kStringImm; }
  std::string value;
};

struct Binding {
  Var var;
  Expr value;
  // Where the binding came from in the source model (the ONNX node name), for messages,
  // placement rules and reports. Not part of structural equality.
  std::string source = {};
  // The op type of that node ("Conv"), for placement rules by op type. Not part of structural
  // equality either.
  std::string source_op = {};
};

struct BindingBlock {
  bool dataflow = false;  // a dataflow block: pure bindings, `with R.dataflow():` in text
  std::vector<Binding> bindings;
};

// Blocks of bindings followed by a result expression.
struct SeqExprNode : ExprNode {
  SeqExprNode() : ExprNode(ExprKind::kSeqExpr) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kSeqExpr; }
  std::vector<BindingBlock> blocks;
  Expr body;
};
using SeqExpr = std::shared_ptr<const SeqExprNode>;

struct IfNode : ExprNode {
  IfNode() : ExprNode(ExprKind::kIf) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kIf; }
  Expr cond;
  SeqExpr then_branch;
  SeqExpr else_branch;
};

struct FunctionNode : ExprNode {
  FunctionNode() : ExprNode(ExprKind::kFunction) {}
  static bool Matches(ExprKind k) { return k == ExprKind::kFunction; }
  std::vector<Var> params;
  // Per parameter, a default value (a Constant) or null: an ONNX graph input that is also an
  // initializer stays an input that callers may override.
  std::vector<Expr> param_defaults;
  SeqExpr body;
  StructInfo ret_struct_info;
  Attrs attrs;
  bool is_pure = true;
  bool is_private = false;
};
using Function = std::shared_ptr<const FunctionNode>;

}  // namespace quilt::ir
