// Converters of image and detection ops and of control flow.
#include <gtest/gtest.h>

#include "tests/importers/onnx_test_util.h"

namespace quilt::importers::onnx {
namespace {}  // namespace
}  // namespace quilt::importers::onnx
