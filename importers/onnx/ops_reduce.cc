// Converters of the reduce category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kReduceConverters = {};

}  // namespace quilt::importers::onnx
