#include "runtime/src/dims.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace quilt::rt {

namespace {
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
}  // namespace

DimEnv::DimEnv(const pkg::Graph& g, Storage kept)
    : g_(g),
      values_(std::move(kept.values)),
      bound_(std::move(kept.bound)),
      memo_(std::move(kept.memo)) {
  size_t n = g.symbols() ? g.symbols()->size() : 0;
  values_.assign(n, 0);
  bound_.assign(n, false);
  memo_.clear();  // Eval sizes it again (its capacity kept)
}

DimEnv::Storage DimEnv::Release() {
  Storage s{std::move(values_), std::move(bound_), std::move(memo_)};
  values_.clear();
  bound_.clear();
  memo_.clear();
  done_ = -1;
  return s;
}

std::optional<int64_t> DimEnv::Compute(const pkg::DimNode& d) const {
  switch (d.kind()) {
    case pkg::DimKind::Int:
      return d.value();
    case pkg::DimKind::Sym:
      if (!bound_[d.a()]) return std::nullopt;
      return values_[d.a()];
    default:
      break;
  }
  std::optional<int64_t> a = memo_[d.a()], b = memo_[d.b()];
  if (!a || !b) return std::nullopt;
  int64_t r = 0;
  switch (d.kind()) {
    case pkg::DimKind::Add:
      if (__builtin_add_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case pkg::DimKind::Sub:
      if (__builtin_sub_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case pkg::DimKind::Mul:
      if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case pkg::DimKind::FloorDiv:
      if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
      return FloorDiv(*a, *b);
    case pkg::DimKind::FloorMod:
      if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
      return *a - FloorDiv(*a, *b) * *b;
    case pkg::DimKind::Min:
      return std::min(*a, *b);
    case pkg::DimKind::Max:
      return std::max(*a, *b);
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> DimEnv::Eval(int i) const {
  if (memo_.empty()) memo_.resize(g_.dims()->size());
  for (; done_ < i; ++done_) {
    memo_[static_cast<size_t>(done_ + 1)] = Compute(*g_.dims()->Get(done_ + 1));
  }
  return memo_[static_cast<size_t>(i)];
}

bool DimEnv::IsUnboundSymbol(int i) const {
  const pkg::DimNode* d = g_.dims()->Get(i);
  return d->kind() == pkg::DimKind::Sym && !bound_[d->a()];
}

bool DimEnv::Matches(int i, int64_t actual, int64_t* want) {
  if (IsUnboundSymbol(i)) {
    int sym = g_.dims()->Get(i)->a();
    values_[sym] = actual;
    bound_[sym] = true;
    done_ = -1;  // nodes that read the symbol change
    return true;
  }
  std::optional<int64_t> e = Eval(i);
  if (e && *e != actual) {
    *want = *e;
    return false;
  }
  return true;
}

Status DimEnv::Mismatch(int i, int64_t actual, int64_t want, std::string_view what) const {
  std::string expr = DimString(i);
  return Status::Error(std::string(what) + " is " + std::to_string(actual) + ", expected " + expr +
                       (expr == std::to_string(want) ? "" : " = " + std::to_string(want)));
}

std::string DimEnv::SymbolName(int sym) const { return g_.symbols()->Get(sym)->str(); }

std::string DimEnv::DimString(int i) const { return DimString(i, 0); }

std::string DimEnv::DimString(int i, int depth) const {
  const pkg::DimNode* d = g_.dims()->Get(i);
  if (depth > 6 && d->kind() != pkg::DimKind::Int && d->kind() != pkg::DimKind::Sym) return "...";
  const char* op = nullptr;
  switch (d->kind()) {
    case pkg::DimKind::Int:
      return std::to_string(d->value());
    case pkg::DimKind::Sym:
      return SymbolName(d->a());
    case pkg::DimKind::Add:
      op = " + ";
      break;
    case pkg::DimKind::Sub:
      op = " - ";
      break;
    case pkg::DimKind::Mul:
      op = " * ";
      break;
    case pkg::DimKind::FloorDiv:
      op = " // ";
      break;
    case pkg::DimKind::FloorMod:
      op = " % ";
      break;
    case pkg::DimKind::Min:
      return "min(" + DimString(d->a(), depth + 1) + ", " + DimString(d->b(), depth + 1) + ")";
    case pkg::DimKind::Max:
      return "max(" + DimString(d->a(), depth + 1) + ", " + DimString(d->b(), depth + 1) + ")";
    default:
      return "?";
  }
  return "(" + DimString(d->a(), depth + 1) + op + DimString(d->b(), depth + 1) + ")";
}

}  // namespace quilt::rt
