// Element types of tensors: every ONNX TensorProto element type, named as TVM names them
// ("float32", "int64", "bool", "float8_e4m3fn", ...). kVoid stands for "not known yet".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace quilt::ir {

// The numeric values are ONNX's TensorProto.DataType, so the importer converts by cast.
enum class DataType : int32_t {
  kVoid = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

inline constexpr int kLastDataType = 26;

// "float32" for kFloat32; "void" for kVoid.
std::string_view DataTypeName(DataType t);
// Inverse of DataTypeName; also takes ONNX-style aliases ("float" -> float32, "double").
std::optional<DataType> ParseDataType(std::string_view name);
// Storage size of one element in bits (4 for int4/uint4/float4, 0 for void and string).
int DataTypeBits(DataType t);
bool IsFloat(DataType t);    // every floating-point type, float8 and float4 included
bool IsInteger(DataType t);  // signed and unsigned integers (not bool)
bool IsSigned(DataType t);

// IEEE half and bfloat16 conversions (round to nearest even; NaN and infinities kept).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

}  // namespace quilt::ir
