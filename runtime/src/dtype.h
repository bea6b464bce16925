// Element types at run time. The numbering is ONNX's TensorProto.DataType (the package stores it
// as is); the runtime keeps its own copy of the few facts it needs so that it links nothing from
// the compiler side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace quilt::rt {

enum class DType : int32_t {
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
inline constexpr int kLastDType = 26;

// "float32", "int64", ...; "dtype(N)" style names are never returned: unknown values give "?".
std::string_view DTypeName(DType t);
// Storage bits of one element (4 for int4, 2 for int2, 0 for void and string).
int DTypeBits(DType t);
bool IsValidDType(int32_t v);
// Bytes of `n` elements, sub-byte types packed (rounded up to whole bytes).
inline size_t DTypeBytes(DType t, int64_t n) {
  return static_cast<size_t>((n * DTypeBits(t) + 7) / 8);
}

// IEEE binary16 and bfloat16 (round to nearest even; NaN and infinities kept).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

}  // namespace quilt::rt
