// Bad input: each case is a crafted model; the importer must answer with a diagnostic that
// names the place and the problem, never crash, hang or allocate hugely.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {}  // namespace
}  // namespace quilt::importers::onnx
