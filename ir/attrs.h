// Attributes: a small typed key/value list, in the order of the op's schema (ops.def). Also used
// for function and module attributes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/target.h"

namespace quilt::ir {

// std::monostate is Python's None.
using AttrValue =
    std::variant<std::monostate, int64_t, double, bool, std::string, std::vector<int64_t>,
                 std::vector<double>, std::vector<std::string>, DataType, VDevice>;

struct Attrs {
  std::vector<std::pair<std::string, AttrValue>> items;

  const AttrValue* Find(std::string_view name) const {
    for (const auto& [k, v] : items) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  template <typename T>
  const T* Get(std::string_view name) const {
    const AttrValue* v = Find(name);
    return v ? std::get_if<T>(v) : nullptr;
  }
  void Set(std::string name, AttrValue value) {
    for (auto& [k, v] : items) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    items.emplace_back(std::move(name), std::move(value));
  }
  bool empty() const { return items.empty(); }
  bool operator==(const Attrs&) const = default;
};

}  // namespace quilt::ir
