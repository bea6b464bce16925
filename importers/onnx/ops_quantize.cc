// Converters of the quantize category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kQuantizeConverters = {};

}  // namespace quilt::importers::onnx
