// Helpers for pass tests: run a pass spec on a module, expecting success or a diagnostic.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "passes/pass.h"
#include "tests/test_util.h"

namespace quilt::testing {

// Runs pass `spec` on `mod`; fails the test (with the diagnostic) when it does not succeed, and
// checks that the result verifies and that the input was not changed.
inline ir::IRModule RunPass(const std::string& spec, const ir::IRModule& mod) {
  Expected<passes::Pass> p = passes::CreatePass(spec);
  if (!p) {
    ADD_FAILURE() << "bad pass " << spec << ": " << p.error().ToString();
    return mod;
  }
  std::string before = ir::PrintModule(mod);
  Expected<ir::IRModule> got = p->Run(mod);
  EXPECT_EQ(ir::PrintModule(mod), before) << spec << " changed its input module";
  if (!got) {
    ADD_FAILURE() << spec << " failed: " << got.error().ToString();
    return mod;
  }
  Status verified = ir::Verify(*got);
  EXPECT_TRUE(verified.ok()) << spec << ": " << (verified ? "" : verified.error().ToString());
  return *got;
}

// The diagnostic of pass `spec` on `mod`; fails the test when the pass succeeds.
inline std::string PassError(const std::string& spec, const ir::IRModule& mod) {
  Expected<passes::Pass> p = passes::CreatePass(spec);
  if (!p) return p.error().ToString();
  Expected<ir::IRModule> got = p->Run(mod);
  if (got) {
    ADD_FAILURE() << spec << " succeeded but should fail:\n" << ir::PrintModule(*got);
    return "";
  }
  return got.error().ToString();
}

}  // namespace quilt::testing
