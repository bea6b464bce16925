// NodeContext: inputs, attributes and emission for converters.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "importers/onnx/converter.h"
#include "importers/onnx/graph.h"
#include "importers/onnx/schema_check.h"

namespace quilt::importers::onnx {

double ShortestFloat32(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(f)) return f;
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) return std::strtod(buf, nullptr);
  }
  return f;
}

Expected<ir::Expr> NodeContext::InputOrEmpty(int i, ir::DataType dtype) {
  if (HasInput(i)) return Input(i);
  return Const(dtype, {0}, nullptr);
}

ir::Expr NodeContext::Input(int i) const {
  if (!HasInput(i)) return nullptr;
  return graph_->Lookup(node_.input(i));
}

const ir::ConstantNode* NodeContext::ConstantInput(int i) const {
  return ir::As<ir::ConstantNode>(Input(i));
}

std::optional<KnownValues> NodeContext::Known(int i) const {
  if (!HasInput(i)) return std::nullopt;
  return graph_->Known(node_.input(i));
}

std::optional<std::vector<int64_t>> NodeContext::KnownInts(int i) const {
  std::optional<KnownValues> k = Known(i);
  if (!k) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::PrimExpr& e : *k) {
    std::optional<int64_t> v = ir::AsInt(e);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::optional<std::vector<double>> NodeContext::ConstantFloats(int i) const {
  const ir::ConstantNode* c = ConstantInput(i);
  if (!c) return std::nullopt;
  std::vector<double> out;
  for (int64_t k = 0; k < c->NumElements(); ++k) {
    if (c->dtype == ir::DataType::kFloat32) {
      float f;
      std::memcpy(&f, c->data->data() + 4 * k, 4);
      out.push_back(f);
    } else if (c->dtype == ir::DataType::kFloat64) {
      double d;
      std::memcpy(&d, c->data->data() + 8 * k, 8);
      out.push_back(d);
    } else if (c->dtype == ir::DataType::kFloat16 || c->dtype == ir::DataType::kBFloat16) {
      uint16_t h;
      std::memcpy(&h, c->data->data() + 2 * k, 2);
      out.push_back(c->dtype == ir::DataType::kFloat16 ? ir::HalfToFloat(h)
                                                       : ir::BFloat16ToFloat(h));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

const ::onnx::AttributeProto* NodeContext::Attr(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

#define QUILT_ATTR_GETTER(Type, Name, Enum, Read)                                                  \
  Expected<Type> NodeContext::Name(const std::string& name, std::optional<Type> fallback) const {  \
    const ::onnx::AttributeProto* a = Attr(name);                                                  \
    if (!a) {                                                                                      \
      if (fallback) return *fallback;                                                              \
      return Error("missing required attribute '" + name + "'");                                   \
    }                                                                                              \
    if (a->type() != ::onnx::AttributeProto::Enum) {                                               \
      return Error("attribute '" + name + "' is " + AttributeTypeName(a->type()) + ", expected " + \
                   AttributeTypeName(::onnx::AttributeProto::Enum));                               \
    }                                                                                              \
    return Read;                                                                                   \
  }

QUILT_ATTR_GETTER(int64_t, Int, INT, a->i())
QUILT_ATTR_GETTER(double, Float, FLOAT, ShortestFloat32(a->f()))
QUILT_ATTR_GETTER(std::string, String, STRING, a->s())
QUILT_ATTR_GETTER(std::vector<int64_t>, Ints, INTS,
                  std::vector<int64_t>(a->ints().begin(), a->ints().end()))
QUILT_ATTR_GETTER(std::vector<double>, Floats, FLOATS,
                  std::vector<double>(a->floats().begin(), a->floats().end()))
#undef QUILT_ATTR_GETTER

Expected<ir::Expr> NodeContext::Emit(ir::OpKind op, std::vector<ir::Expr> args, ir::Attrs attrs,
                                     int output) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i]) return Error("a required input is missing");
  }
  Expected<ir::Expr> call = ir::MakeOpCall(op, std::move(args), std::move(attrs));
  if (!call) return Error(call.error().message);
  return Bind(*call, output);
}

ir::Expr NodeContext::Bind(ir::Expr value, int output) {
  std::string name = HasOutput(output) ? node_.output(output) : node_.op_type();
  // The node's name as the importer gives it ("OpType#index" when unnamed), so its bindings keep
  // their node and op type (placement rules by op type find unnamed nodes too).
  return graph_->Bind(std::move(value), name, graph_->current_source());
}

Expected<ir::Expr> NodeContext::Const(ir::DataType dtype, std::vector<int64_t> shape,
                                      const void* data) {
  std::optional<int64_t> n = ir::ElementCount(shape);
  if (!n) return Error("a constant of more than 2^50 elements");
  size_t bytes = static_cast<size_t>((*n * ir::DataTypeBits(dtype) + 7) / 8);
  auto buf = std::make_shared<std::vector<uint8_t>>(bytes);
  if (bytes) std::memcpy(buf->data(), data, bytes);
  return ir::MakeConstant(dtype, std::move(shape), buf);
}

Expected<ir::Expr> NodeContext::ScalarConst(ir::DataType dtype, double value) {
  uint8_t buf[8] = {};
  auto put = [&](auto v) { std::memcpy(buf, &v, sizeof(v)); };
  switch (dtype) {
    case ir::DataType::kFloat32:
      put(static_cast<float>(value));
      break;
    case ir::DataType::kFloat64:
      put(value);
      break;
    case ir::DataType::kInt64:
      put(static_cast<int64_t>(value));
      break;
    case ir::DataType::kInt32:
      put(static_cast<int32_t>(value));
      break;
    case ir::DataType::kInt16:
      put(static_cast<int16_t>(value));
      break;
    case ir::DataType::kInt8:
      put(static_cast<int8_t>(value));
      break;
    case ir::DataType::kUInt64:
      put(static_cast<uint64_t>(value));
      break;
    case ir::DataType::kUInt32:
      put(static_cast<uint32_t>(value));
      break;
    case ir::DataType::kUInt16:
      put(static_cast<uint16_t>(value));
      break;
    case ir::DataType::kUInt8:
      put(static_cast<uint8_t>(value));
      break;
    case ir::DataType::kBool:
      put(static_cast<uint8_t>(value != 0));
      break;
    case ir::DataType::kFloat16:
      put(ir::FloatToHalf(static_cast<float>(value)));
      break;
    case ir::DataType::kBFloat16:
      put(ir::FloatToBFloat16(static_cast<float>(value)));
      break;
    default:
      return Error("no scalar constant of type " + std::string(ir::DataTypeName(dtype)));
  }
  return Const(dtype, {}, buf);
}

void NodeContext::SetKnown(int output, KnownValues values) {
  if (HasOutput(output)) graph_->SetKnown(node_.output(output), std::move(values));
}

Diagnostic NodeContext::Error(const std::string& message) const {
  std::string name = node_.name().empty() ? "(unnamed)" : node_.name();
  return quilt::Error(message, "node '" + name + "' (" + node_.op_type() + ", opset " +
                                   std::to_string(opset_) + ")");
}

}  // namespace quilt::importers::onnx
