#include "ir/dtype.h"

#include <array>
#include <cmath>
#include <cstring>

#include "runtime/src/float_convert.h"

namespace quilt::ir {
namespace {

struct DataTypeInfo {
  DataType type;
  std::string_view name;
  int bits;
};

constexpr std::array<DataTypeInfo, kLastDataType + 1> kInfos = {{
    {DataType::kVoid, "void", 0},
    {DataType::kFloat32, "float32", 32},
    {DataType::kUInt8, "uint8", 8},
    {DataType::kInt8, "int8", 8},
    {DataType::kUInt16, "uint16", 16},
    {DataType::kInt16, "int16", 16},
    {DataType::kInt32, "int32", 32},
    {DataType::kInt64, "int64", 64},
    {DataType::kString, "string", 0},
    {DataType::kBool, "bool", 8},
    {DataType::kFloat16, "float16", 16},
    {DataType::kFloat64, "float64", 64},
    {DataType::kUInt32, "uint32", 32},
    {DataType::kUInt64, "uint64", 64},
    {DataType::kComplex64, "complex64", 64},
    {DataType::kComplex128, "complex128", 128},
    {DataType::kBFloat16, "bfloat16", 16},
    {DataType::kFloat8E4M3FN, "float8_e4m3fn", 8},
    {DataType::kFloat8E4M3FNUZ, "float8_e4m3fnuz", 8},
    {DataType::kFloat8E5M2, "float8_e5m2", 8},
    {DataType::kFloat8E5M2FNUZ, "float8_e5m2fnuz", 8},
    {DataType::kUInt4, "uint4", 4},
    {DataType::kInt4, "int4", 4},
    {DataType::kFloat4E2M1, "float4_e2m1", 4},
    {DataType::kFloat8E8M0, "float8_e8m0fnu", 8},
    {DataType::kUInt2, "uint2", 2},
    {DataType::kInt2, "int2", 2},
}};

const DataTypeInfo& Info(DataType t) { return kInfos[static_cast<size_t>(t)]; }

}  // namespace

std::string_view DataTypeName(DataType t) { return Info(t).name; }

std::optional<DataType> ParseDataType(std::string_view name) {
  for (const DataTypeInfo& info : kInfos) {
    if (info.name == name) return info.type;
  }
  if (name == "float") return DataType::kFloat32;
  if (name == "double") return DataType::kFloat64;
  if (name == "half") return DataType::kFloat16;
  return std::nullopt;
}

int DataTypeBits(DataType t) { return Info(t).bits; }

bool IsFloat(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kFloat64:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat4E2M1:
    case DataType::kFloat8E8M0:
      return true;
    default:
      return false;
  }
}

bool IsSigned(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kInt4:
    case DataType::kInt2:
      return true;
    default:
      return false;
  }
}

bool IsInteger(DataType t) {
  switch (t) {
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kUInt4:
    case DataType::kUInt2:
      return true;
    default:
      return IsSigned(t);
  }
}

uint16_t FloatToHalf(float f) { return numeric::FloatToHalf(f); }
float HalfToFloat(uint16_t h) { return numeric::HalfToFloat(h); }
uint16_t FloatToBFloat16(float f) { return numeric::FloatToBFloat16(f); }
float BFloat16ToFloat(uint16_t b) { return numeric::BFloat16ToFloat(b); }

}  // namespace quilt::ir
