// Helpers shared by the tests: reading test data, parsing IR text with a readable failure.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "ir/verifier.h"

namespace quilt::testing {

inline std::string DataPath(const std::string& relative) {
  return std::string(QUILT_TEST_DATA) + "/" + relative;
}

inline std::string ReadData(const std::string& relative) {
  std::ifstream in(DataPath(relative), std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << DataPath(relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Parses `text`, failing the test (with the diagnostic) when it does not parse or verify.
// Every module parsed here is also printed and parsed again, and must come back equal.
inline ir::IRModule Parse(const std::string& text) {
  Expected<ir::IRModule> mod = ir::ParseModule(text);
  if (!mod) {
    ADD_FAILURE() << "parse failed: " << mod.error().ToString() << "\n" << text;
    return {};
  }
  Status verified = ir::Verify(*mod);
  EXPECT_TRUE(verified.ok()) << (verified ? "" : verified.error().ToString());
  std::string printed = ir::PrintModule(*mod);
  Expected<ir::IRModule> again = ir::ParseModule(printed);
  if (!again) {
    ADD_FAILURE() << "printed text does not parse: " << again.error().ToString() << "\n" << printed;
    return *mod;
  }
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(*mod, *again, &why)) << why << "\n" << printed;
  EXPECT_EQ(ir::PrintModule(*again), printed) << "printing is not stable";
  EXPECT_EQ(ir::StructuralHash(*mod), ir::StructuralHash(*again));
  return *mod;
}

// The parse error of `text` as "LINE:COL: message"; fails the test if it parses.
inline std::string ParseError(const std::string& text) {
  Expected<ir::IRModule> mod = ir::ParseModule(text);
  if (mod) {
    ADD_FAILURE() << "expected a parse error for:\n" << text;
    return "";
  }
  return mod.error().ToString();
}

// Structural equality with the printed diff as the failure message.
inline ::testing::AssertionResult ModulesEqual(const ir::IRModule& got, const ir::IRModule& want) {
  std::string why;
  if (ir::StructuralEqual(got, want, &why)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why << "\n"
                                       << ir::LineDiff(ir::PrintModule(want), ir::PrintModule(got));
}

// The struct info of the value named `name` in function `func` (a parameter or a binding; the
// last binding of that name when it is shadowed). Null when there is none.
inline ir::StructInfo SInfoOf(const ir::IRModule& mod, const std::string& func,
                              const std::string& name) {
  ir::Function f = mod.Lookup(func);
  if (!f) return nullptr;
  ir::StructInfo found;
  for (const ir::Var& p : f->params) {
    if (p->name_hint == name) found = p->struct_info;
  }
  for (const ir::BindingBlock& b : f->body->blocks) {
    for (const ir::Binding& x : b.bindings) {
      if (x.var->name_hint == name) found = x.var->struct_info;
    }
  }
  return found;
}

}  // namespace quilt::testing
