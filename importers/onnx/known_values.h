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

// A node of float arithmetic whose inputs are all small float constants, folded to a constant:
// Add, Sub, Mul, Div, Pow, Min, Max, Sqrt, Reciprocal, Neg, Abs, Floor, Ceil, Round, and Cast or
// CastLike to float32, float64 or an integer type (toward zero, where the value fits); also a
// Cast of integers known at import (a Shape's dims) to a float type. Exporters compute shapes
// this way too: a vision transformer's grid side is Cast(Pow(1369.0, 0.5)), and with it folded
// the Reshape it feeds has a static shape; a detector's anchor grid is a Range to a dim cast to
// float. Each result is rounded to its type as its kernel rounds it. nullopt where the node is
// not one of these.
std::optional<Expected<ir::Expr>> FoldFloatConstants(NodeContext& ctx);

}  // namespace quilt::importers::onnx
