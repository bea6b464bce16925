// Converters of the recurrent category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kRecurrentConverters = {};

}  // namespace quilt::importers::onnx
