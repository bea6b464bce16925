// TensorProto -> raw little-endian bytes, with every size checked before anything is allocated:
// dims must be non-negative and their product must not overflow; raw_data or the typed field
// must hold exactly shape x dtype; external data must stay inside the model's folder.
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace quilt::importers::onnx {

struct TensorData {
  ir::DataType dtype = ir::DataType::kVoid;
  std::vector<int64_t> shape;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
};

// Element count of `shape`, or a diagnostic for negative dims or more than 2^50 elements (the
// runtime's limit: a byte count of any dtype then fits in 64 bits).
Expected<int64_t> CheckedElementCount(const std::vector<int64_t>& shape);

// "(2, 3)", "(4,)", "()": a shape as numpy prints it, for messages.
std::string ShapeText(const std::vector<int64_t>& shape);

// `model_dir` empty: external data is refused.
Expected<TensorData> ReadTensor(const ::onnx::TensorProto& t, const std::string& model_dir);

// An ir::Constant for the tensor.
Expected<ir::Expr> TensorToConstant(const TensorData& t);

// ONNX elem_type -> ir::DataType (the numbering is ONNX's); nullopt for unknown values.
std::optional<ir::DataType> ElemType(int32_t onnx_type);

}  // namespace quilt::importers::onnx
