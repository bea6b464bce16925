#include "ir/prim_expr.h"

#include <algorithm>
#include <vector>

namespace quilt::ir {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

int Precedence(PrimKind k) {
  switch (k) {
    case PrimKind::kAdd:
    case PrimKind::kSub:
      return 1;
    case PrimKind::kMul:
    case PrimKind::kFloorDiv:
    case PrimKind::kFloorMod:
      return 2;
    default:
      return 3;
  }
}

const char* OpText(PrimKind k) {
  switch (k) {
    case PrimKind::kAdd:
      return " + ";
    case PrimKind::kSub:
      return " - ";
    case PrimKind::kMul:
      return " * ";
    case PrimKind::kFloorDiv:
      return " // ";
    case PrimKind::kFloorMod:
      return " % ";
    default:
      return "";
  }
}

// A product of variables times a constant: n * m * 4.
struct Monomial {
  int64_t coef = 1;
  std::vector<PrimExpr> vars;
};

std::optional<Monomial> AsMonomial(const PrimExpr& e) {
  if (!e) return std::nullopt;
  if (e->kind == PrimKind::kInt) return Monomial{e->value, {}};
  if (e->kind == PrimKind::kVar) return Monomial{1, {e}};
  if (e->kind != PrimKind::kMul) return std::nullopt;
  std::optional<Monomial> a = AsMonomial(e->a), b = AsMonomial(e->b);
  if (!a || !b || __builtin_mul_overflow(a->coef, b->coef, &a->coef)) return std::nullopt;
  a->vars.insert(a->vars.end(), b->vars.begin(), b->vars.end());
  return a;
}

PrimExpr FromMonomial(Monomial m) {
  std::stable_sort(m.vars.begin(), m.vars.end(),
                   [](const PrimExpr& x, const PrimExpr& y) { return x->name < y->name; });
  if (m.coef == 0 || m.vars.empty()) return IntImm(m.coef);
  auto make = [](PrimExpr a, PrimExpr b) {
    auto n = std::make_shared<PrimExprNode>();
    n->kind = PrimKind::kMul;
    n->a = std::move(a);
    n->b = std::move(b);
    return PrimExpr(n);
  };
  PrimExpr out = m.vars[0];
  for (size_t i = 1; i < m.vars.size(); ++i) out = make(out, m.vars[i]);
  return m.coef == 1 ? out : make(out, IntImm(m.coef));
}

PrimExpr RawBinary(PrimKind kind, PrimExpr a, PrimExpr b) {
  auto n = std::make_shared<PrimExprNode>();
  n->kind = kind;
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

// A sum of terms coef * monomial plus a constant: the normal form of + and -.
// A coefficient that overflows 64 bits sets `overflow` (the sum then stays as written).
struct LinearForm {
  int64_t constant = 0;
  std::vector<std::pair<int64_t, PrimExpr>> terms;  // monomials without their coefficient
  bool overflow = false;

  void Add(const PrimExpr& e, int64_t sign) {
    if (e->kind == PrimKind::kInt) {
      int64_t v = 0;
      overflow |= __builtin_mul_overflow(sign, e->value, &v) ||
                  __builtin_add_overflow(constant, v, &constant);
      return;
    }
    if (e->kind == PrimKind::kAdd || e->kind == PrimKind::kSub) {
      Add(e->a, sign);
      Add(e->b, e->kind == PrimKind::kAdd ? sign : -sign);
      return;
    }
    int64_t coef = sign;
    PrimExpr key = e;
    if (std::optional<Monomial> m = AsMonomial(e)) {
      overflow |= __builtin_mul_overflow(coef, m->coef, &coef);
      key = FromMonomial(Monomial{1, m->vars});
    }
    for (auto& [c, k] : terms) {
      if (PrimEqual(k, key)) {
        overflow |= __builtin_add_overflow(c, coef, &c);
        return;
      }
    }
    terms.emplace_back(coef, key);
  }

  PrimExpr Build() const {
    PrimExpr out;
    for (const auto& [c, k] : terms) {
      if (c == 0) continue;
      if (!out) {
        out = c == 1 ? k : RawBinary(PrimKind::kMul, k, IntImm(c));
        continue;
      }
      int64_t mag = c < 0 ? -c : c;
      PrimExpr term = mag == 1 ? k : RawBinary(PrimKind::kMul, k, IntImm(mag));
      out = RawBinary(c < 0 ? PrimKind::kSub : PrimKind::kAdd, out, term);
    }
    if (!out) return IntImm(constant);
    if (constant > 0) return RawBinary(PrimKind::kAdd, out, IntImm(constant));
    if (constant < 0) return RawBinary(PrimKind::kSub, out, IntImm(-constant));
    return out;
  }
};

}  // namespace

PrimExpr IntImm(int64_t value) {
  auto n = std::make_shared<PrimExprNode>();
  n->kind = PrimKind::kInt;
  n->value = value;
  return n;
}

PrimExpr SymVar(std::string name) {
  auto n = std::make_shared<PrimExprNode>();
  n->kind = PrimKind::kVar;
  n->name = std::move(name);
  return n;
}

PrimExpr MakeBinary(PrimKind kind, PrimExpr a, PrimExpr b) {
  std::optional<int64_t> x = AsInt(a), y = AsInt(b);
  // Constants fold where the result fits 64 bits; an overflowing one stays an expression (the
  // runtime evaluates it as unknown; lowering refuses a static size past its limit).
  int64_t r = 0;
  if (x && y) {
    switch (kind) {
      case PrimKind::kAdd:
        if (!__builtin_add_overflow(*x, *y, &r)) return IntImm(r);
        break;
      case PrimKind::kSub:
        if (!__builtin_sub_overflow(*x, *y, &r)) return IntImm(r);
        break;
      case PrimKind::kMul:
        if (!__builtin_mul_overflow(*x, *y, &r)) return IntImm(r);
        break;
      case PrimKind::kFloorDiv:
        if (*y != 0 && !(*x == INT64_MIN && *y == -1)) return IntImm(FloorDiv(*x, *y));
        break;
      case PrimKind::kFloorMod:
        if (*y != 0 && !(*x == INT64_MIN && *y == -1)) return IntImm(FloorMod(*x, *y));
        break;
      case PrimKind::kMin:
        return IntImm(std::min(*x, *y));
      case PrimKind::kMax:
        return IntImm(std::max(*x, *y));
      default:
        break;
    }
  }
  // Products stay in canonical form (variables by name, then the constant), and a division of
  // one product by another cancels common factors when it is exact.
  if (kind == PrimKind::kMul || kind == PrimKind::kFloorDiv) {
    std::optional<Monomial> ma = AsMonomial(a), mb = AsMonomial(b);
    if (ma && mb && kind == PrimKind::kMul &&
        !__builtin_mul_overflow(ma->coef, mb->coef, &ma->coef)) {
      ma->vars.insert(ma->vars.end(), mb->vars.begin(), mb->vars.end());
      return FromMonomial(*ma);
    }
    if (ma && mb && kind == PrimKind::kFloorDiv && mb->coef > 0 && ma->coef % mb->coef == 0) {
      std::vector<PrimExpr> rest = ma->vars;
      bool exact = true;
      for (const PrimExpr& v : mb->vars) {
        auto it = std::find(rest.begin(), rest.end(), v);
        if (it == rest.end()) {
          exact = false;
          break;
        }
        rest.erase(it);
      }
      if (exact) return FromMonomial(Monomial{ma->coef / mb->coef, rest});
    }
  }
  // Sums cancel like terms: (n - 1) + 1 is n, n + n is n * 2.
  if ((kind == PrimKind::kAdd || kind == PrimKind::kSub) && !(x && y)) {
    LinearForm f;
    f.Add(a, 1);
    f.Add(b, kind == PrimKind::kAdd ? 1 : -1);
    bool negatable = f.constant != INT64_MIN;
    for (const auto& [c, k] : f.terms) negatable &= c != INT64_MIN;
    if (!f.overflow && negatable) return f.Build();
  }
  if (kind == PrimKind::kAdd && x == 0) return b;
  if ((kind == PrimKind::kAdd || kind == PrimKind::kSub) && y == 0) return a;
  if (kind == PrimKind::kMul && (x == 1 || y == 0)) return b;
  if (kind == PrimKind::kMul && (y == 1 || x == 0)) return a;
  if (kind == PrimKind::kFloorDiv && y == 1) return a;
  auto n = std::make_shared<PrimExprNode>();
  n->kind = kind;
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

std::optional<int64_t> AsInt(const PrimExpr& e) {
  if (e && e->kind == PrimKind::kInt) return e->value;
  return std::nullopt;
}

bool PrimEqual(const PrimExpr& a, const PrimExpr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
    case PrimKind::kInt:
      return a->value == b->value;
    case PrimKind::kVar:
      return false;  // variables are equal only to themselves
    default:
      return PrimEqual(a->a, b->a) && PrimEqual(a->b, b->b);
  }
}

std::string ToString(const PrimExpr& e) {
  if (!e) return "?";
  switch (e->kind) {
    case PrimKind::kInt:
      return std::to_string(e->value);
    case PrimKind::kVar:
      return e->name;
    case PrimKind::kMin:
      return "T.min(" + ToString(e->a) + ", " + ToString(e->b) + ")";
    case PrimKind::kMax:
      return "T.max(" + ToString(e->a) + ", " + ToString(e->b) + ")";
    default:
      break;
  }
  int p = Precedence(e->kind);
  std::string lhs = ToString(e->a), rhs = ToString(e->b);
  if (Precedence(e->a->kind) < p) lhs = "(" + lhs + ")";
  // Right operands need parentheses at equal precedence too: a - (b + c), a // (b * c).
  if (Precedence(e->b->kind) <= p && e->b->kind != PrimKind::kInt && e->b->kind != PrimKind::kVar) {
    rhs = "(" + rhs + ")";
  }
  return lhs + OpText(e->kind) + rhs;
}

}  // namespace quilt::ir
