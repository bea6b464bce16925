// Converters of the linalg category.
#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

const std::vector<Converter> kLinalgConverters = {};

}  // namespace quilt::importers::onnx
