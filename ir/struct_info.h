// Struct info: what is known statically about a value.
//   Tensor(shape?, ndim, dtype, vdevice?)  shape dims are PrimExprs (constants or symbolic);
//                                          ndim -1 = unknown rank; dtype kVoid = unknown
//   Tuple(fields)   Shape(values? / ndim)   Prim(dtype, value?)   Func(params, ret)   Object
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/dtype.h"
#include "ir/prim_expr.h"
#include "ir/target.h"

namespace quilt::ir {

enum class StructInfoKind { kObject, kPrim, kShape, kTensor, kTuple, kFunc };

struct StructInfoNode;
using StructInfo = std::shared_ptr<const StructInfoNode>;

struct StructInfoNode {
  StructInfoKind kind = StructInfoKind::kObject;
  // kTensor and kShape: dims / values when known (then ndim == shape->size()).
  std::optional<std::vector<PrimExpr>> shape;
  int ndim = -1;
  // kTensor and kPrim.
  DataType dtype = DataType::kVoid;
  // kTensor.
  std::optional<VDevice> vdevice;
  // kPrim: the value when known.
  PrimExpr value;
  // kTuple: fields; kFunc: parameters.
  std::vector<StructInfo> fields;
  // kFunc.
  StructInfo ret;
  bool pure = true;

  bool IsTensor() const { return kind == StructInfoKind::kTensor; }
  // Static dims (all constants) or nullopt.
  std::optional<std::vector<int64_t>> StaticShape() const;
};

// The most elements a tensor may have: the runtime's limit (a byte size of any dtype then fits in
// 64 bits, and so does a product of a count with a dim).
inline constexpr int64_t kMaxElements = int64_t{1} << 50;

// The element count of `shape`, or nullopt when a dim is negative or exceeds kMaxElements, or
// the count does (computed without overflow).
std::optional<int64_t> ElementCount(const std::vector<int64_t>& shape);

// Whether every tensor with static dims in `s` (tuple fields included) has at most kMaxElements.
bool StaticSizesFit(const StructInfo& s);

StructInfo ObjectSInfo();
StructInfo TensorSInfo(std::optional<std::vector<PrimExpr>> shape, DataType dtype,
                       std::optional<VDevice> vdevice = std::nullopt, int ndim = -1);
StructInfo TensorSInfo(const std::vector<int64_t>& shape, DataType dtype,
                       std::optional<VDevice> vdevice = std::nullopt);
StructInfo TupleSInfo(std::vector<StructInfo> fields);
StructInfo ShapeSInfo(std::optional<std::vector<PrimExpr>> values, int ndim = -1);
StructInfo PrimSInfo(DataType dtype, PrimExpr value = nullptr);
StructInfo FuncSInfo(std::vector<StructInfo> params, StructInfo ret, bool pure = true);

// A copy of tensor struct info `s` with another vdevice.
StructInfo WithVDevice(const StructInfo& s, std::optional<VDevice> vdevice);

// Combines an annotation with what inference found: every field the annotation leaves open is
// taken from `inferred`; a field both give must agree, else the diagnostic names the field and
// both values. Static-vs-symbolic dims keep the annotation.
Expected<StructInfo> Refine(const StructInfo& annotation, const StructInfo& inferred);

// For messages: `R.Tensor((2, 3), "float32")` plus ` on cuda (id 0, global)` when placed.
std::string Describe(const StructInfo& s);

}  // namespace quilt::ir
