// Integer expressions for tensor dimensions: constants, symbolic variables (`n`) and arithmetic
// of them (`n * 2 + 1`). Symbolic variables are identified by object: two SymVar("n") calls make
// two different variables; the text parser shares one per name within a function.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace quilt::ir {

enum class PrimKind { kInt, kVar, kAdd, kSub, kMul, kFloorDiv, kFloorMod, kMin, kMax };

struct PrimExprNode {
  PrimKind kind = PrimKind::kInt;
  int64_t value = 0;                         // kInt
  std::string name;                          // kVar
  std::shared_ptr<const PrimExprNode> a, b;  // operands of the binary kinds
};
using PrimExpr = std::shared_ptr<const PrimExprNode>;

PrimExpr IntImm(int64_t value);
PrimExpr SymVar(std::string name);
// Binary constructors fold constants and the identities x+0, x*1, x*0, x//1.
PrimExpr MakeBinary(PrimKind kind, PrimExpr a, PrimExpr b);
inline PrimExpr operator+(PrimExpr a, PrimExpr b) { return MakeBinary(PrimKind::kAdd, a, b); }
inline PrimExpr operator-(PrimExpr a, PrimExpr b) { return MakeBinary(PrimKind::kSub, a, b); }
inline PrimExpr operator*(PrimExpr a, PrimExpr b) { return MakeBinary(PrimKind::kMul, a, b); }

std::optional<int64_t> AsInt(const PrimExpr& e);
// Provably equal: same constant, same variable object, or the same tree of those.
bool PrimEqual(const PrimExpr& a, const PrimExpr& b);
// Python-like text with minimal parentheses: `n * 2 + 1`, `T.min(a, b)`.
std::string ToString(const PrimExpr& e);
// Calls f on every variable in e (in order, repeats included).
template <typename F>
void VisitSymVars(const PrimExpr& e, F&& f) {
  if (!e) return;
  if (e->kind == PrimKind::kVar) {
    f(e);
    return;
  }
  VisitSymVars(e->a, f);
  VisitSymVars(e->b, f);
}

}  // namespace quilt::ir
