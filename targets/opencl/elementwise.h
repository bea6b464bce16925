// The elementwise and broadcasting ops the OpenCL back end makes code for, each as an OpenCL C
// expression of its operands (float32). The capability check (capability.cc) and the code
// emitter (emit.cc) read this one table, so a placement never promises what the emitter cannot
// write. The expressions follow the CPU reference kernels (NaN in max / min / clip / sign stays
// NaN; round is half to even; gelu uses erf), so both devices give the same results within
// float rounding.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/dtype.h"

namespace quilt::targets::opencl {

// A float literal of OpenCL C that reads back as the same float (NAN and INFINITY by name).
std::string FloatLiteral(double v);

// The OpenCL C expression of op `op` (Relax name without "R.") on `args` (C expressions of type
// float, one per tensor argument), or nullopt when the back end has no code for that op with
// that many arguments.
std::optional<std::string> FloatExpr(std::string_view op, const ir::Attrs& attrs,
                                     const std::vector<std::string>& args);

// The OpenCL C expression of op `op` on `args` whose element types are `types` (float32, int32,
// int64, bool as uchar 0 / 1, or float16 read as a float), giving an `out` element (a float16 one
// as the float its writer rounds to float16); float32 and float16 ops are FloatExpr's. Integers
// wrap around and divide as the CPU kernels do (by 0: 0); comparisons give bool; astype converts
// as targets/cpu/kernels/cast.cc (float to integer truncates, NaN 0, saturating at int64). nullopt
// where the back end has no code for those types.
std::optional<std::string> TypedExpr(std::string_view op, const ir::Attrs& attrs,
                                     const std::vector<std::string>& args,
                                     const std::vector<ir::DataType>& types, ir::DataType out);

// The OpenCL C type of elements of type `t` in buffers (float16: ushort, the bits, which kernels
// that only move elements copy and arithmetic reads with vload_half: no device needs cl_khr_fp16
// for that), or nullopt for one the kernels do not take.
std::optional<std::string> ClType(ir::DataType t);

}  // namespace quilt::targets::opencl
