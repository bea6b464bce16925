// The builder: every IR node is made here, and each one gets its struct info on the way
// (normalization is always on). Importers, the text parser and passes use these functions and
// never write struct info by hand; an annotation is merged with what inference finds (Refine).
//
//   Expected<Expr> sum = MakeOpCall(OpKind::kAdd, {x, y});
//   Var v = MakeVar("sum", (*sum)->struct_info);
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/op.h"

namespace quilt::ir {

Var MakeVar(std::string name, StructInfo sinfo, bool dataflow = false);
Expected<Expr> MakeOpCall(OpKind kind, std::vector<Expr> args, Attrs attrs = {});
Expected<Expr> MakeOpCall(const OpInfo& op, std::vector<Expr> args, Attrs attrs = {});
// A call of module function `callee` (a GlobalVar whose struct info is the function's).
Expected<Expr> MakeFuncCall(Expr callee, std::vector<Expr> args);
Expr MakeGlobalVar(std::string name, StructInfo func_sinfo);
// R.call_packed("name", args, sinfo_args=...) / R.call_dps_packed("name", args, out_sinfo=...).
// `R.match_cast(value, sinfo)`: value with struct info `sinfo`, which must not contradict what
// is known of it (a tensor of another dtype, rank or static dim is an error). A tensor struct
// info without a vdevice takes the value's.
Expected<Expr> MakeMatchCast(Expr value, StructInfo sinfo);
Expr MakeExternCall(std::string name, std::vector<Expr> args, std::vector<StructInfo> sinfo_args,
                    ExternStyle style = ExternStyle::kPacked);
Expr MakeTuple(std::vector<Expr> fields);
Expected<Expr> MakeTupleGetItem(Expr tuple, int index);
Expr MakeShapeExpr(std::vector<PrimExpr> values);
Expr MakePrimValue(PrimExpr value, DataType dtype = DataType::kInt64);
Expr MakeStringImm(std::string value);
// Elements as raw little-endian bytes; size must match shape x dtype.
Expected<Expr> MakeConstant(DataType dtype, std::vector<int64_t> shape,
                            std::shared_ptr<const std::vector<uint8_t>> data,
                            std::optional<VDevice> vdevice = std::nullopt);
SeqExpr MakeSeqExpr(std::vector<BindingBlock> blocks, Expr body);
Expected<Expr> MakeIf(Expr cond, SeqExpr then_branch, SeqExpr else_branch);
// `declared_ret` may be null; otherwise it is refined with the body's struct info.
// `param_defaults` is empty or one entry (a Constant or null) per parameter; a default must fit
// its parameter's struct info.
Expected<Function> MakeFunction(std::vector<Var> params, SeqExpr body, StructInfo declared_ret,
                                Attrs attrs = {}, bool is_pure = true, bool is_private = false,
                                std::vector<Expr> param_defaults = {});
StructInfo FunctionSInfo(const FunctionNode& f);

// Variables that `seq` uses but neither defines nor has in `bound`, in order of first use: what a
// body lifted into a function of its own must take as parameters.
std::vector<Var> FreeVars(const SeqExprNode& seq, const std::vector<Var>& bound);

// The variables `e` reads: through tuples, tuple items and call arguments, and an If's condition
// and the free variables of its branches; in order, repeats kept.
std::vector<const VarNode*> UsedVars(const Expr& e);

// Re-infers every struct info of the module from its parameters and annotations, callees before
// callers; returns a new module (the input is not changed). A binding's annotation is refined
// with what inference gives; a contradiction is a diagnostic naming the function and value.
Expected<IRModule> NormalizeModule(const IRModule& mod);

// Hooks that let a pass rewrite a module while the normalizer rebuilds it (and so re-infers
// every struct info after the change). Each hook is optional.
struct NormalizeHooks {
  // The annotation a parameter or bound variable of function `func` gets before refinement
  // (default: its old struct info).
  std::function<StructInfo(const std::string& func, const Var& old)> annotation;
  // The declared return struct info of `func` (default: the old one).
  std::function<StructInfo(const std::string& func, const StructInfo& old)> ret;
  // Adds bindings to the block being rebuilt, before the binding being visited.
  class Emitter {
   public:
    virtual ~Emitter() = default;
    virtual Var Emit(const std::string& name, Expr value) = 0;
    // The block being rebuilt: a variable emitted under one block is visible to the later
    // bindings of that block.
    virtual const void* Block() const = 0;
  };
  // A replacement for call `old` (of an op or a function) whose arguments were rebuilt as
  // `args`, or null to build the call as it was. The hook may emit bindings before it (a copy of
  // an argument, say).
  std::function<Expected<Expr>(const std::string& func, const CallNode& old,
                               const std::vector<Expr>& args, Emitter& emit)>
      call;
  // The result of function `func` (its body's final expression, rebuilt), or a replacement;
  // emitted bindings go to a block after the others.
  std::function<Expected<Expr>(const std::string& func, const Expr& result, Emitter& emit)> result;
  // Every block becomes a plain binding block and every variable a plain Var (a pass that moves
  // bindings across blocks or functions needs this first).
  bool drop_dataflow = false;
  // A replacement for a constant in function `func`, or null to keep it.
  std::function<Expr(const std::string& func, const Expr& constant)> constant;
};
Expected<IRModule> NormalizeModule(const IRModule& mod, const NormalizeHooks& hooks);

}  // namespace quilt::ir
