// Converters of the control category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kControlConverters = {};

}  // namespace quilt::importers::onnx
