// IRModule: the functions of a program by global name (in definition order), the ordered list
// of virtual devices (global_infos["vdevice"]) and module attributes. A value type: copying
// shares the immutable functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/expr.h"
#include "ir/target.h"

namespace quilt::ir {

struct IRModule {
  std::vector<std::pair<std::string, Function>> functions;
  // T.prim_func definitions by name, as their source text (decorator included, dedented): quilt
  // compiles no TIR, so it carries them for R.call_tir, prints them back and compares them as
  // text; compiling a call of one is an error naming the prim_func and the device.
  std::vector<std::pair<std::string, std::string>> prim_funcs;
  std::vector<VDevice> vdevices;
  Attrs attrs;

  Function Lookup(std::string_view name) const {
    for (const auto& [n, f] : functions) {
      if (n == name) return f;
    }
    return nullptr;
  }
  // The entry function's name: "main", or else the first function's ("" for none).
  std::string EntryName() const {
    if (Lookup("main")) return "main";
    return functions.empty() ? std::string() : functions[0].first;
  }
  void Set(const std::string& name, Function f) {
    for (auto& [n, g] : functions) {
      if (n == name) {
        g = std::move(f);
        return;
      }
    }
    functions.emplace_back(name, std::move(f));
  }
  const std::string* LookupPrimFunc(std::string_view name) const {
    for (const auto& [n, text] : prim_funcs) {
      if (n == name) return &text;
    }
    return nullptr;
  }
  // Index of `d` in the vdevice list (by value), or -1.
  int VDeviceIndex(const VDevice& d) const {
    for (size_t i = 0; i < vdevices.size(); ++i) {
      if (vdevices[i] == d) return static_cast<int>(i);
    }
    return -1;
  }
};

}  // namespace quilt::ir
