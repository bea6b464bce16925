#include "runtime/src/dtype.h"

#include <array>

#include "runtime/src/float_convert.h"

namespace quilt::rt {
namespace {

struct DTypeInfo {
  std::string_view name;
  int bits;
};

// Indexed by the ONNX numbering.
constexpr std::array<DTypeInfo, kLastDType + 1> kInfos = {{
    {"void", 0},
    {"float32", 32},
    {"uint8", 8},
    {"int8", 8},
    {"uint16", 16},
    {"int16", 16},
    {"int32", 32},
    {"int64", 64},
    {"string", 0},
    {"bool", 8},
    {"float16", 16},
    {"float64", 64},
    {"uint32", 32},
    {"uint64", 64},
    {"complex64", 64},
    {"complex128", 128},
    {"bfloat16", 16},
    {"float8_e4m3fn", 8},
    {"float8_e4m3fnuz", 8},
    {"float8_e5m2", 8},
    {"float8_e5m2fnuz", 8},
    {"uint4", 4},
    {"int4", 4},
    {"float4_e2m1", 4},
    {"float8_e8m0fnu", 8},
    {"uint2", 2},
    {"int2", 2},
}};

}  // namespace

bool IsValidDType(int32_t v) { return v >= 0 && v <= kLastDType; }

std::string_view DTypeName(DType t) {
  return IsValidDType(static_cast<int32_t>(t)) ? kInfos[static_cast<size_t>(t)].name : "?";
}

int DTypeBits(DType t) {
  return IsValidDType(static_cast<int32_t>(t)) ? kInfos[static_cast<size_t>(t)].bits : 0;
}

uint16_t FloatToHalf(float f) { return numeric::FloatToHalf(f); }
float HalfToFloat(uint16_t h) { return numeric::HalfToFloat(h); }
uint16_t FloatToBFloat16(float f) { return numeric::FloatToBFloat16(f); }
float BFloat16ToFloat(uint16_t b) { return numeric::BFloat16ToFloat(b); }

}  // namespace quilt::rt
