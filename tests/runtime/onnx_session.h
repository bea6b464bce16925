// A session on an ONNX model built in a test (tests/importers/onnx_test_util.h), imported and
// compiled for the CPU: for the tests of what runs ONNX's control flow (they link the importer
// and the compiler).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "importers/onnx/importer.h"
#include "tests/importers/onnx_test_util.h"
#include "tests/runtime/text_session.h"

namespace quilt::test {

// Null, with a failure recorded, when the model does not import or compile or the package does
// not open.
inline std::unique_ptr<rt::Session> SessionFromOnnx(const testing::OnnxGraph& g,
                                                    const rt::SessionOptions& options = {}) {
  std::string bytes = g.Bytes();
  Expected<ir::IRModule> mod =
      importers::onnx::ImportOnnxBytes(bytes.data(), bytes.size(), "", "model.onnx", {});
  EXPECT_TRUE(mod) << mod.error().ToString();
  if (!mod) return nullptr;
  return SessionFromModule(*mod, options);
}

}  // namespace quilt::test
