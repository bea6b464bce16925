#include "ir/struct_info.h"

namespace quilt::ir {

std::optional<std::vector<int64_t>> StructInfoNode::StaticShape() const {
  if (!shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const PrimExpr& d : *shape) {
    std::optional<int64_t> v = AsInt(d);
    if (!v) return std::nullopt;
    dims.push_back(*v);
  }
  return dims;
}

std::optional<int64_t> ElementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements || (d != 0 && n > kMaxElements / d)) return std::nullopt;
    n *= d;
  }
  if (n > kMaxElements) return std::nullopt;
  return n;
}

bool StaticSizesFit(const StructInfo& s) {
  if (!s) return true;
  if (s->kind == StructInfoKind::kTuple) {
    for (const StructInfo& f : s->fields) {
      if (!StaticSizesFit(f)) return false;
    }
    return true;
  }
  if (!s->IsTensor()) return true;
  std::optional<std::vector<int64_t>> shape = s->StaticShape();
  return !shape || ElementCount(*shape);
}

StructInfo ObjectSInfo() { return std::make_shared<StructInfoNode>(); }

StructInfo TensorSInfo(std::optional<std::vector<PrimExpr>> shape, DataType dtype,
                       std::optional<VDevice> vdevice, int ndim) {
  auto n = std::make_shared<StructInfoNode>();
  n->kind = StructInfoKind::kTensor;
  n->ndim = shape ? static_cast<int>(shape->size()) : ndim;
  n->shape = std::move(shape);
  n->dtype = dtype;
  n->vdevice = std::move(vdevice);
  return n;
}

StructInfo TensorSInfo(const std::vector<int64_t>& shape, DataType dtype,
                       std::optional<VDevice> vdevice) {
  std::vector<PrimExpr> dims;
  for (int64_t d : shape) dims.push_back(IntImm(d));
  return TensorSInfo(std::move(dims), dtype, std::move(vdevice));
}

StructInfo TupleSInfo(std::vector<StructInfo> fields) {
  auto n = std::make_shared<StructInfoNode>();
  n->kind = StructInfoKind::kTuple;
  n->fields = std::move(fields);
  return n;
}

StructInfo ShapeSInfo(std::optional<std::vector<PrimExpr>> values, int ndim) {
  auto n = std::make_shared<StructInfoNode>();
  n->kind = StructInfoKind::kShape;
  n->ndim = values ? static_cast<int>(values->size()) : ndim;
  n->shape = std::move(values);
  return n;
}

StructInfo PrimSInfo(DataType dtype, PrimExpr value) {
  auto n = std::make_shared<StructInfoNode>();
  n->kind = StructInfoKind::kPrim;
  n->dtype = dtype;
  n->value = std::move(value);
  return n;
}

StructInfo FuncSInfo(std::vector<StructInfo> params, StructInfo ret, bool pure) {
  auto n = std::make_shared<StructInfoNode>();
  n->kind = StructInfoKind::kFunc;
  n->fields = std::move(params);
  n->ret = std::move(ret);
  n->pure = pure;
  return n;
}

StructInfo WithVDevice(const StructInfo& s, std::optional<VDevice> vdevice) {
  QUILT_CHECK(s && s->IsTensor());
  if (s->vdevice == vdevice) return s;
  auto n = std::make_shared<StructInfoNode>(*s);
  n->vdevice = std::move(vdevice);
  return n;
}

namespace {

std::string ShapeText(const StructInfoNode& s) {
  if (!s.shape) return s.ndim < 0 ? "?" : "ndim=" + std::to_string(s.ndim);
  std::string t = "(";
  for (size_t i = 0; i < s.shape->size(); ++i) t += (i ? ", " : "") + ToString((*s.shape)[i]);
  return t + (s.shape->size() == 1 ? ",)" : ")");
}

Expected<std::optional<std::vector<PrimExpr>>> RefineDims(const StructInfoNode& ann,
                                                          const StructInfoNode& inf) {
  if (!ann.shape) return inf.shape;
  if (!inf.shape) return ann.shape;
  if (ann.shape->size() != inf.shape->size()) {
    return Error("annotated rank " + std::to_string(ann.shape->size()) + " but inferred rank " +
                 std::to_string(inf.shape->size()));
  }
  for (size_t i = 0; i < ann.shape->size(); ++i) {
    std::optional<int64_t> a = AsInt((*ann.shape)[i]), b = AsInt((*inf.shape)[i]);
    if (a && b && *a != *b) {
      return Error("annotated shape " + ShapeText(ann) + " but inferred shape " + ShapeText(inf));
    }
  }
  return ann.shape;
}

}  // namespace

Expected<StructInfo> Refine(const StructInfo& annotation, const StructInfo& inferred) {
  if (!annotation || annotation->kind == StructInfoKind::kObject) return inferred;
  if (!inferred || inferred->kind == StructInfoKind::kObject) return annotation;
  if (annotation->kind != inferred->kind) {
    return Error("annotated " + Describe(annotation) + " but inferred " + Describe(inferred));
  }
  auto n = std::make_shared<StructInfoNode>(*annotation);
  switch (annotation->kind) {
    case StructInfoKind::kTensor:
    case StructInfoKind::kShape: {
      if (annotation->ndim >= 0 && inferred->ndim >= 0 && annotation->ndim != inferred->ndim) {
        return Error("annotated " + Describe(annotation) + " but inferred " + Describe(inferred));
      }
      Expected<std::optional<std::vector<PrimExpr>>> dims = RefineDims(*annotation, *inferred);
      if (!dims) return dims.error();
      n->shape = *dims;
      n->ndim = n->shape ? static_cast<int>(n->shape->size()) : std::max(n->ndim, inferred->ndim);
      if (annotation->kind == StructInfoKind::kShape) return StructInfo(n);
      if (n->dtype == DataType::kVoid) n->dtype = inferred->dtype;
      if (inferred->dtype != DataType::kVoid && n->dtype != inferred->dtype) {
        return Error("annotated dtype " + std::string(DataTypeName(annotation->dtype)) +
                     " but inferred " + std::string(DataTypeName(inferred->dtype)));
      }
      if (!n->vdevice) n->vdevice = inferred->vdevice;
      if (inferred->vdevice && *n->vdevice != *inferred->vdevice) {
        return Error("annotated on " + n->vdevice->ToString() + " but inferred on " +
                     inferred->vdevice->ToString());
      }
      return StructInfo(n);
    }
    case StructInfoKind::kPrim:
      if (n->dtype == DataType::kVoid) n->dtype = inferred->dtype;
      if (!n->value) n->value = inferred->value;
      return StructInfo(n);
    case StructInfoKind::kTuple:
    case StructInfoKind::kFunc: {
      if (annotation->fields.size() != inferred->fields.size()) {
        const char* what =
            annotation->kind == StructInfoKind::kFunc ? " parameter(s)" : " field(s)";
        return Error("annotated " + Describe(annotation) + " with " +
                     std::to_string(annotation->fields.size()) + what + " but inferred " +
                     Describe(inferred) + " with " + std::to_string(inferred->fields.size()));
      }
      for (size_t i = 0; i < n->fields.size(); ++i) {
        Expected<StructInfo> f = Refine(annotation->fields[i], inferred->fields[i]);
        if (!f) return Error("field " + std::to_string(i) + ": " + f.error().message);
        n->fields[i] = *f;
      }
      if (annotation->kind == StructInfoKind::kFunc) {
        Expected<StructInfo> r = Refine(annotation->ret, inferred->ret);
        if (!r) return Error("return: " + r.error().message);
        n->ret = *r;
      }
      return StructInfo(n);
    }
    case StructInfoKind::kObject:
      break;
  }
  return annotation;
}

std::string Describe(const StructInfo& s) {
  if (!s) return "<none>";
  switch (s->kind) {
    case StructInfoKind::kObject:
      return "R.Object";
    case StructInfoKind::kPrim:
      return "R.Prim(\"" + std::string(DataTypeName(s->dtype)) + "\")";
    case StructInfoKind::kShape:
      return "R.Shape(" + ShapeText(*s) + ")";
    case StructInfoKind::kTensor: {
      std::string t =
          "R.Tensor(" + ShapeText(*s) + ", \"" + std::string(DataTypeName(s->dtype)) + "\")";
      if (s->vdevice) t += " on " + s->vdevice->ToString();
      return t;
    }
    case StructInfoKind::kTuple: {
      std::string t = "R.Tuple(";
      for (size_t i = 0; i < s->fields.size(); ++i) t += (i ? ", " : "") + Describe(s->fields[i]);
      return t + ")";
    }
    case StructInfoKind::kFunc:
      return "R.Callable";
  }
  return "?";
}

}  // namespace quilt::ir
