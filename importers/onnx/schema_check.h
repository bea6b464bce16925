// Checks a node against the ONNX operator schema (arity, attribute names, types, required
// attributes) before any converter sees it, so malformed nodes get one uniform message.
#pragma once

#include <onnx/onnx_pb.h>

#include "ir/diagnostic.h"

namespace quilt::importers::onnx {

// The newest default-domain opset whose schemas the ONNX library here knows; models with a newer
// opset are checked by the converters alone.
int SchemaMaxOpset();

// "int", "floats", ...: an attribute type for messages.
const char* AttributeTypeName(::onnx::AttributeProto::AttributeType t);

// `location` names the node in messages ("node 'x' (Add, opset 13)").
Status CheckNodeSchema(const ::onnx::NodeProto& node, int64_t opset, const std::string& location);

}  // namespace quilt::importers::onnx
