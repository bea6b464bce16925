// Syntax-only AST for the subset of Python used by TVMScript (Relax IR text), and ParsePy, which
// builds it. Nothing here knows what `R.add` or `I.ir_module` mean: the interpreter of the AST
// lives elsewhere. Every node carries the 1-based line and byte column where it starts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace quilt::ir::text {

// 1-based source position; `col` counts bytes from the start of the line.
struct Loc {
  int line = 0;
  int col = 0;
};

// A parse error: where, and what was expected and what was found there.
struct PyError {
  Loc loc;
  std::string message;
};

// ---------------------------------------------------------------------------------------------
// Expressions

struct PyExpr;
using PyExprPtr = std::shared_ptr<const PyExpr>;

enum class PyExprKind {
  kName,
  kInt,
  kFloat,
  kString,
  kBool,
  kNone,
  kTuple,
  kList,
  kDict,
  kAttr,
  kCall,
  kSubscript,
  kBinOp,
  kUnaryOp,
};

// A keyword argument of a call, `name=value`; `loc` is where `name` starts.
struct PyKeyword {
  std::string name;
  PyExprPtr value;
  Loc loc;
};

struct PyExpr {
  PyExprKind kind = PyExprKind::kName;
  // Start of the whole expression (for `a.b(c)` and `a + b`: where `a` starts; for a
  // parenthesized tuple: the '(').
  Loc loc;
  // kName: the identifier. kAttr: the attribute name. kString: the value, escapes decoded and
  // adjacent literals concatenated. kBinOp / kUnaryOp: the operator text, one of
  // + - * / // % ** @ == != < <= > >= and or not | ^ & << >> ~
  std::string name;
  int64_t int_value = 0;   // kInt; kBool: 0 or 1. Literals in (INT64_MAX, UINT64_MAX] wrap.
  double float_value = 0;  // kFloat
  std::string text;        // kInt / kFloat: the literal as written; kBool: "True" / "False"
  // kTuple / kList: the elements. kDict: keys and values interleaved (k0, v0, k1, v1, ...).
  // kCall: positional arguments. kBinOp: {lhs, rhs}. kUnaryOp: {operand}. kSubscript: {index}
  // (for `x[a, b]` the index is a kTuple).
  std::vector<PyExprPtr> items;
  PyExprPtr base;                   // kAttr: the object; kCall: the callee; kSubscript: the value
  std::vector<PyKeyword> keywords;  // kCall: keyword arguments, in source order
};

// ---------------------------------------------------------------------------------------------
// Statements

enum class PyStmtKind { kExpr, kAssign, kReturn, kPass, kIf, kWith, kFunctionDef, kClassDef };

struct PyStmt;
using PyStmtPtr = std::shared_ptr<const PyStmt>;

// A function parameter `name[: annotation][= default_value]`; `loc` is where `name` starts.
struct PyParam {
  std::string name;
  PyExprPtr annotation;     // may be null
  PyExprPtr default_value;  // may be null
  Loc loc;
};

struct PyStmt {
  PyStmtKind kind = PyStmtKind::kExpr;
  // Start of the statement; for kFunctionDef / kClassDef: the `def` / `class` keyword, not the
  // first decorator; for an `elif` turned into a nested kIf: the `elif` keyword.
  Loc loc;
  // kAssign: the targets, left to right (`a = b = v` gives {a, b}; `a, b = v` gives one kTuple
  // target). Each is a kName, kAttr, kSubscript, or a kTuple / kList of those.
  // kWith: the `as` target, if any.
  std::vector<PyExprPtr> targets;
  PyExprPtr annotation;  // kAssign: `x: ann = v` (null otherwise; then `targets` has one entry)
  // kExpr: the expression. kAssign: the value. kReturn: the value (null for a bare `return`).
  // kIf: the condition. kWith: the context expression.
  PyExprPtr value;
  std::vector<PyStmtPtr> body;    // kIf: then-branch; kWith / kFunctionDef / kClassDef: the body
  std::vector<PyStmtPtr> orelse;  // kIf: else-branch; an `elif` is a single nested kIf here
  std::string name;               // kFunctionDef / kClassDef
  std::vector<PyParam> params;    // kFunctionDef
  PyExprPtr returns;              // kFunctionDef: `-> ann` (may be null)
  std::vector<PyExprPtr> decorators;  // kFunctionDef / kClassDef, outermost (first line) first
  std::vector<PyExprPtr> bases;       // kClassDef
  // kFunctionDef decorated with T.prim_func: the definition's source lines, decorators included,
  // dedented to column 1. Its body is skipped, not parsed: TIR is not the subset read here.
  std::string raw;
};

struct PyModule {
  std::vector<PyStmtPtr> body;
};

// Parses `source`. On success fills *out and returns true. On failure returns false, fills
// *error with the first error (either pointer may be null) and leaves *out untouched.
bool ParsePy(std::string_view source, PyModule* out, PyError* error);

// Renders an expression back to compact Python text (for messages), e.g. `R.add(x, y)`,
// parenthesizing only where precedence needs it. Strings are written with double quotes.
std::string ToString(const PyExpr& e);

// "LINE:COL: message".
std::string ToString(const PyError& error);

}  // namespace quilt::ir::text
