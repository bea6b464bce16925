// Converters of the nn category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kNnConverters = {};

}  // namespace quilt::importers::onnx
