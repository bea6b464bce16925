// Converters of the signal category: each test builds a tiny ONNX graph and expects IR text.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {}  // namespace
}  // namespace quilt::importers::onnx
