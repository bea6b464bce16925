// Checks a node against the ONNX operator schema (arity, attribute names, types, required
// attributes) before any converter sees it, so malformed nodes get one uniform message.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "ir/diagnostic.h"

namespace quilt::importers::onnx {

// The newest opset of `domain` ("": the default one) whose schemas the ONNX library here knows;
// models with a newer opset are checked by the converters alone.
int SchemaMaxOpset(const std::string& domain = "");

// "int", "floats", ...: an attribute type for messages.
const char* AttributeTypeName(::onnx::AttributeProto::AttributeType t);

// `location` names the node in messages ("node 'x' (Add, opset 13)"); `opset` is the one the
// model imports for the node's domain.
Status CheckNodeSchema(const ::onnx::NodeProto& node, int64_t opset, const std::string& location,
                       const std::string& domain = "");

}  // namespace quilt::importers::onnx
