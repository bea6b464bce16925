// A session on the package compiled from IR text or a module: for the runtime's tests that build
// their model in the text form or in ONNX (onnx_session.h; they link the compiler).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "runtime/src/package.h"
#include "runtime/src/session.h"
#include "targets/compile.h"
#include "tests/test_util.h"

namespace quilt::test {

// A session on module `mod` compiled for the CPU. Null, with a failure recorded, when the module
// does not compile or the package does not open.
inline std::unique_ptr<rt::Session> SessionFromModule(const ir::IRModule& mod,
                                                      const rt::SessionOptions& options = {}) {
  compiler::CompileOptions compile_options;
  Expected<compiler::Compiled> c = compiler::Compile(mod, compile_options);
  EXPECT_TRUE(c) << c.error().ToString();
  if (!c) return nullptr;
  std::unique_ptr<rt::LoadedPackage> p;
  EXPECT_TRUE(rt::LoadedPackage::FromMemory(c->package.data(), c->package.size(), &p).ok());
  std::unique_ptr<rt::Session> s;
  rt::Status st = rt::Session::Create(std::move(p), options, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

// The same from IR text.
inline std::unique_ptr<rt::Session> SessionFromText(const char* model,
                                                    const rt::SessionOptions& options = {}) {
  return SessionFromModule(testing::Parse(model), options);
}

}  // namespace quilt::test
