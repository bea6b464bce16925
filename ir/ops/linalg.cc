// Struct-info rules of the ops in ir/ops/linalg.def (matmul's is in op_infer.cc).
#include <algorithm>
#include <cctype>
#include <map>

#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

// One operand's (or the output's) subscripts: letters before and after an optional "...".
struct Term {
  std::string before, after;
  bool ellipsis = false;
  size_t letters() const { return before.size() + after.size(); }
};

Expected<Term> ParseTerm(const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      if (t.ellipsis) return Error("term '" + s + "' has more than one '...'");
      t.ellipsis = true;
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(s[i]))) {
      return Error("term '" + s + "' has the invalid character '" + std::string(1, s[i]) + "'");
    }
    (t.ellipsis ? t.after : t.before) += s[i];
  }
  return t;
}

}  // namespace

Expected<StructInfo> InferEinsum(const OpInfo&, const std::vector<Expr>& args, const Attrs& attrs) {
  const StructInfo& tup = args[0]->struct_info;
  if (!tup || tup->kind != StructInfoKind::kTuple || tup->fields.empty()) {
    return Error("argument 'operands' must be a non-empty tuple of tensors, got " + Describe(tup));
  }
  std::string eq;
  for (char c : *attrs.Get<std::string>("subscripts")) {
    if (c != ' ') eq += c;
  }
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t b = 0;;) {
    size_t e = lhs.find(',', b);
    Expected<Term> t = ParseTerm(lhs.substr(b, e == std::string::npos ? e : e - b));
    if (!t) return t.error();
    terms.push_back(*t);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  const std::vector<StructInfo>& fs = tup->fields;
  if (terms.size() != fs.size()) {
    return Error("subscripts '" + eq + "' name " + std::to_string(terms.size()) +
                 " operand(s), got " + std::to_string(fs.size()));
  }
  DataType dtype = DataType::kVoid;
  // Letter -> dim (null: unknown); the broadcast "..." dims; whether every shape is known.
  std::map<char, PrimExpr> dims;
  std::map<char, int> count;
  StructInfoNode ell;
  ell.shape = std::vector<PrimExpr>{};
  ell.ndim = 0;
  bool ell_rank_known = true;
  for (size_t i = 0; i < fs.size(); ++i) {
    const StructInfo& f = fs[i];
    if (!f->IsTensor()) return Error("operand " + std::to_string(i) + " is not a tensor");
    if (f->dtype != DataType::kVoid) {
      if (dtype != DataType::kVoid && dtype != f->dtype) {
        return Error("dtypes differ: " + DtypeName(dtype) + " and " + DtypeName(f->dtype));
      }
      dtype = f->dtype;
    }
    const Term& t = terms[i];
    for (char c : t.before + t.after) {
      ++count[c];
      dims.emplace(c, nullptr);
    }
    if (f->ndim < 0) {
      if (t.ellipsis) ell_rank_known = false;
      continue;
    }
    int n = static_cast<int>(t.letters());
    if (t.ellipsis ? n > f->ndim : n != f->ndim) {
      return Error("term '" + t.before + (t.ellipsis ? "..." : "") + t.after + "' has " +
                   std::to_string(n) + " letter(s) for operand " + std::to_string(i) + " of rank " +
                   std::to_string(f->ndim));
    }
    StructInfoNode e;
    e.ndim = f->ndim - n;
    if (f->shape) {
      const std::vector<PrimExpr>& s = *f->shape;
      e.shape = std::vector<PrimExpr>(s.begin() + t.before.size(), s.end() - t.after.size());
      for (size_t k = 0; k < s.size(); ++k) {
        char c;
        if (k < t.before.size()) {
          c = t.before[k];
        } else if (k >= s.size() - t.after.size()) {
          c = t.after[k - (s.size() - t.after.size())];
        } else {
          continue;
        }
        PrimExpr& d = dims[c];
        std::optional<int64_t> have = AsInt(d), now = AsInt(s[k]);
        if (!d || have == 1) {
          d = s[k];
        } else if (have && now && *have != *now && *now != 1) {
          return Error("subscript '" + std::string(1, c) + "' is " + std::to_string(*have) +
                       " in one operand and " + std::to_string(*now) + " in operand " +
                       std::to_string(i));
        }
      }
    }
    int ndim = -1;
    Expected<std::optional<std::vector<PrimExpr>>> b = BroadcastShapes(ell, e, &ndim);
    if (!b) return Error("'...' dims: " + b.error().message);
    ell.shape = *b;
    ell.ndim = ndim;
  }
  Term out;
  if (arrow != std::string::npos) {
    Expected<Term> t = ParseTerm(eq.substr(arrow + 2));
    if (!t) return t.error();
    out = *t;
    std::string seen;
    for (char c : out.before + out.after) {
      if (!count.count(c))
        return Error("output subscript '" + std::string(1, c) + "' is not an input's");
      if (seen.find(c) != std::string::npos) {
        return Error("output subscript '" + std::string(1, c) + "' appears twice");
      }
      seen += c;
    }
    if (!out.ellipsis && ell.ndim != 0 && ell_rank_known) {
      return Error("the '...' dims are left out of the output");
    }
  } else {
    out.ellipsis = true;
    for (const auto& [c, k] : count) {
      if (k == 1) out.after += c;  // std::map orders by ASCII
    }
  }
  int ell_ndim = out.ellipsis ? ell.ndim : 0;
  if (!ell_rank_known && out.ellipsis) return TensorSInfo(std::nullopt, dtype, std::nullopt, -1);
  int rank = ell_ndim + static_cast<int>(out.letters());
  std::vector<PrimExpr> shape;
  for (char c : out.before) shape.push_back(dims[c]);
  if (out.ellipsis) {
    if (!ell.shape) return TensorSInfo(std::nullopt, dtype, std::nullopt, rank);
    shape.insert(shape.end(), ell.shape->begin(), ell.shape->end());
  }
  for (char c : out.after) shape.push_back(dims[c]);
  for (const PrimExpr& d : shape) {
    if (!d) return TensorSInfo(std::nullopt, dtype, std::nullopt, rank);
  }
  return TensorSInfo(std::move(shape), dtype);
}

Expected<StructInfo> InferDet(const OpInfo& op, const std::vector<Expr>& args, const Attrs&) {
  Expected<const StructInfoNode*> x = TensorArg(op, args, 0);
  if (!x) return x.error();
  DataType t = (*x)->dtype;
  if (t != DataType::kVoid && !IsFloat(t)) {
    return Error("expects floating-point tensors, got " + DtypeName(t));
  }
  int ndim = (*x)->ndim;
  if (ndim < 0) return TensorSInfo(std::nullopt, t, std::nullopt, -1);
  if (ndim < 2) return Error("expects a tensor of rank >= 2, got rank " + std::to_string(ndim));
  if (!(*x)->shape) return TensorSInfo(std::nullopt, t, std::nullopt, ndim - 2);
  const std::vector<PrimExpr>& s = *(*x)->shape;
  std::optional<int64_t> m = AsInt(s[ndim - 2]), n = AsInt(s[ndim - 1]);
  if (m && n && *m != *n) {
    return Error("expects square matrices, got " + std::to_string(*m) + " x " + std::to_string(*n));
  }
  return TensorSInfo(std::vector<PrimExpr>(s.begin(), s.end() - 2), t);
}

}  // namespace quilt::ir
