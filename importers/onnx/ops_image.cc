// Converters of the image category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kImageConverters = {};

}  // namespace quilt::importers::onnx
