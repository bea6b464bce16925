#include "runtime/src/kernel.h"

#include <cmath>
#include <limits>

#include "quilt/package_generated.h"

namespace quilt::rt {

std::string ShapeString(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

AttrIndex::AttrIndex(const AttrList* attrs) {
  if (!attrs) return;
  entries_.reserve(attrs->size());
  for (const pkg::Attr* a : *attrs) {
    if (!a->name()) continue;
    entries_.push_back({a->name()->size(), a->name()->c_str(), a});
  }
}

const pkg::Attr* AttrIndex::Find(std::string_view prefix, std::string_view name) const {
  const size_t size = prefix.size() + name.size();
  for (const Entry& e : entries_) {
    if (e.size == size && std::string_view(e.name, prefix.size()) == prefix &&
        std::string_view(e.name + prefix.size(), name.size()) == name) {
      return e.attr;
    }
  }
  return nullptr;
}

const pkg::Attr* AttrView::Find(std::string_view name) const {
  if (index_) return index_->Find(prefix_, name);
  if (!attrs_) return nullptr;
  for (const pkg::Attr* a : *attrs_) {
    if (!a->name()) continue;
    std::string_view n = a->name()->string_view();
    if (n.size() == prefix_.size() + name.size() && n.starts_with(prefix_) &&
        n.substr(prefix_.size()) == name) {
      return a;
    }
  }
  return nullptr;
}

bool AttrView::Has(std::string_view name) const {
  const pkg::Attr* a = Find(name);
  return a && a->type() != pkg::AttrType::None;
}

int64_t AttrView::Int(std::string_view name, int64_t fallback) const {
  const pkg::Attr* a = Find(name);
  if (!a) return fallback;
  switch (a->type()) {
    case pkg::AttrType::Int:
    case pkg::AttrType::Bool:
    case pkg::AttrType::DType:
      return a->i();
    case pkg::AttrType::Float: {
      // Truncated toward zero; a value past int64's range saturates (a cast would be undefined),
      // NaN gives the fallback. The kernel's own checks then refuse what does not fit.
      double f = a->f();
      if (std::isnan(f)) return fallback;
      if (f >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
      if (f <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(f);
    }
    default:
      return fallback;
  }
}

double AttrView::Float(std::string_view name, double fallback) const {
  const pkg::Attr* a = Find(name);
  if (!a) return fallback;
  if (a->type() == pkg::AttrType::Float) return a->f();
  if (a->type() == pkg::AttrType::Int) return static_cast<double>(a->i());
  return fallback;
}

bool AttrView::Bool(std::string_view name, bool fallback) const {
  const pkg::Attr* a = Find(name);
  if (!a || (a->type() != pkg::AttrType::Bool && a->type() != pkg::AttrType::Int)) return fallback;
  return a->i() != 0;
}

std::string_view AttrView::Str(std::string_view name, std::string_view fallback) const {
  const pkg::Attr* a = Find(name);
  if (!a || a->type() != pkg::AttrType::Str || !a->s()) return fallback;
  return a->s()->string_view();
}

DType AttrView::Dtype(std::string_view name, DType fallback) const {
  const pkg::Attr* a = Find(name);
  if (!a || a->type() != pkg::AttrType::DType || !IsValidDType(static_cast<int32_t>(a->i()))) {
    return fallback;
  }
  return static_cast<DType>(a->i());
}

InlineVector<int64_t, 8> AttrView::Ints(std::string_view name) const {
  const pkg::Attr* a = Find(name);
  if (!a || a->type() != pkg::AttrType::Ints || !a->ints()) return {};
  return {a->ints()->begin(), a->ints()->end()};
}

std::span<const int64_t> AttrView::IntsView(std::string_view name) const {
  const pkg::Attr* a = Find(name);
  if (!a || a->type() != pkg::AttrType::Ints || !a->ints()) return {};
  return {a->ints()->data(), a->ints()->size()};
}

InlineVector<double, 8> AttrView::Floats(std::string_view name) const {
  const pkg::Attr* a = Find(name);
  if (!a || a->type() != pkg::AttrType::Floats || !a->floats()) return {};
  return {a->floats()->begin(), a->floats()->end()};
}

InlineVector<std::string_view, 32> AttrView::Strs(std::string_view name) const {
  const pkg::Attr* a = Find(name);
  InlineVector<std::string_view, 32> out;
  if (!a || a->type() != pkg::AttrType::Strs || !a->strs()) return out;
  for (const auto* s : *a->strs()) out.push_back(s->string_view());
  return out;
}

}  // namespace quilt::rt
