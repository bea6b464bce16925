// Converters of the signal category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kSignalConverters = {};

}  // namespace quilt::importers::onnx
