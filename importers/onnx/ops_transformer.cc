// Converters of the transformer category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kTransformerConverters = {};

}  // namespace quilt::importers::onnx
