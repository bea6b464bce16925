#include "importers/onnx/schema_check.h"

#include <onnx/defs/schema.h>

namespace quilt::importers::onnx {

const char* AttributeTypeName(::onnx::AttributeProto::AttributeType t) {
  switch (t) {
    case ::onnx::AttributeProto::FLOAT:
      return "float";
    case ::onnx::AttributeProto::INT:
      return "int";
    case ::onnx::AttributeProto::STRING:
      return "string";
    case ::onnx::AttributeProto::TENSOR:
      return "tensor";
    case ::onnx::AttributeProto::GRAPH:
      return "graph";
    case ::onnx::AttributeProto::FLOATS:
      return "floats";
    case ::onnx::AttributeProto::INTS:
      return "ints";
    case ::onnx::AttributeProto::STRINGS:
      return "strings";
    case ::onnx::AttributeProto::TENSORS:
      return "tensors";
    case ::onnx::AttributeProto::GRAPHS:
      return "graphs";
    default:
      return "undefined";
  }
}

namespace {

std::string Range(int lo, int hi) {
  if (lo == hi) return std::to_string(lo);
  if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo);
  return std::to_string(lo) + " to " + std::to_string(hi);
}

}  // namespace

int SchemaMaxOpset(const std::string& domain) {
  auto& map = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().LastReleaseVersionMap();
  auto it = map.find(domain);
  return it == map.end() ? 0 : it->second;
}

Status CheckNodeSchema(const ::onnx::NodeProto& node, int64_t opset, const std::string& location,
                       const std::string& domain) {
  if (opset > SchemaMaxOpset(domain)) return {};
  const ::onnx::OpSchema* schema =
      ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), domain);
  if (!schema) return {};  // unknown op: the converter lookup reports it
  auto fail = [&](const std::string& m) { return Status(Error(m, location)); };
  int inputs = node.input_size();
  while (inputs > 0 && node.input(inputs - 1).empty()) --inputs;  // trailing optional inputs
  if (inputs < schema->min_input() || inputs > schema->max_input()) {
    return fail("takes " + Range(schema->min_input(), schema->max_input()) + " inputs, got " +
                std::to_string(inputs));
  }
  int outputs = node.output_size();
  if (outputs < schema->min_output() || outputs > schema->max_output()) {
    return fail("has " + Range(schema->min_output(), schema->max_output()) + " outputs, got " +
                std::to_string(outputs));
  }
  const auto& known = schema->attributes();
  for (const auto& a : node.attribute()) {
    auto it = known.find(a.name());
    if (it == known.end()) return fail("unknown attribute '" + a.name() + "'");
    if (!a.ref_attr_name().empty()) continue;
    if (it->second.type != ::onnx::AttributeProto::UNDEFINED && a.type() != it->second.type) {
      return fail("attribute '" + a.name() + "' is " + AttributeTypeName(a.type()) + ", expected " +
                  AttributeTypeName(it->second.type));
    }
  }
  for (const auto& [name, attr] : known) {
    if (!attr.required) continue;
    bool given = false;
    for (const auto& a : node.attribute()) given |= a.name() == name;
    if (!given) return fail("missing required attribute '" + name + "'");
  }
  return {};
}

}  // namespace quilt::importers::onnx
