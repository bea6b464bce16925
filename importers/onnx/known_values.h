// Known values through every op that can compute on shapes.
//
// Exporters compute shapes with small integer tensors: Shape -> Gather -> Cast -> Mul -> Concat
// -> Reshape, a rank test -> Not -> If, pads reversed by a Slice with step -1 and a Transpose.
// The importer follows their values (integers and booleans; dims may be symbolic) so that a
// Reshape target, a Pad amount or an If condition is known at import time. Converters of
// sources (Shape, Size, Range, ConstantOfShape, Split, If) record their outputs' values
// themselves; this evaluator covers the ops that compute on values: elementwise arithmetic,
// comparison and logic, Where, Cast, and the ops that move elements (Identity, Reshape, Flatten,
// Squeeze, Unsqueeze, Transpose, Expand, Tile, Concat, Slice, Gather) and the reductions.
#pragma once

#include "importers/onnx/converter.h"

namespace quilt::importers::onnx {

// Most elements a known value may have: known values are shape computations, not data.
inline constexpr int64_t kMaxKnownElements = 256;

// The known values of output `output` of the node behind `ctx`, computed from its inputs' known
// values and the struct info of the converted output; nullopt where an input is not known or
// the op does not compute on shapes.
std::optional<KnownValues> EvaluateKnown(const NodeContext& ctx, int output,
                                         const ir::StructInfo& out);

}  // namespace quilt::importers::onnx
