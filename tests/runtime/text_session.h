// A session on the package compiled from IR text: for the runtime's tests that build their model
// in the text form (they link the compiler).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/test_util.h"

namespace quilt::test {

// Null, with a failure recorded, when the text does not compile or the package does not open.
inline std::unique_ptr<rt::Session> SessionFromText(const char* model,
                                                    const rt::SessionOptions& options = {}) {
  compiler::CompileOptions compile_options;
  Expected<compiler::Compiled> c = compiler::Compile(testing::Parse(model), compile_options);
  EXPECT_TRUE(c) << c.error().ToString();
  if (!c) return nullptr;
  std::unique_ptr<rt::LoadedPackage> p;
  EXPECT_TRUE(rt::LoadedPackage::FromMemory(c->package.data(), c->package.size(), &p).ok());
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(std::move(p), options, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

}  // namespace quilt::test
