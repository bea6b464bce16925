// Struct-info rules of the ops in ir/ops/control.def.
#include "ir/op_infer.h"

namespace quilt::ir {
namespace {

// The body's return fields, checked to be a tuple of at least `min` fields.
Expected<std::vector<StructInfo>> BodyResults(const Expr& body, size_t min) {
  const StructInfo& f = body->struct_info;
  if (!f || f->kind != StructInfoKind::kFunc) return Error("argument 'body' must be a function");
  const StructInfo& ret = f->ret;
  std::vector<StructInfo> fields =
      ret && ret->kind == StructInfoKind::kTuple ? ret->fields : std::vector<StructInfo>{ret};
  if (fields.size() < min) {
    return Error("the body returns " + std::to_string(fields.size()) +
                 " values, expected at least " + std::to_string(min));
  }
  return fields;
}

size_t TupleSize(const Expr& e) {
  const StructInfo& s = e->struct_info;
  return s && s->kind == StructInfoKind::kTuple ? s->fields.size() : 0;
}

// `elem` with `length` inserted at `axis` (counted in the result's rank).
Expected<StructInfo> Stack(const StructInfo& elem, PrimExpr length, int64_t axis) {
  if (!elem || !elem->IsTensor()) return Error("a scan output must be a tensor");
  int ndim = elem->ndim < 0 ? -1 : elem->ndim + 1;
  Expected<int64_t> a = NormalizeAxis(axis, ndim, "scan output axis");
  if (!a) return a.error();
  if (!elem->shape) return TensorSInfo(std::nullopt, elem->dtype, std::nullopt, ndim);
  std::vector<PrimExpr> dims = *elem->shape;
  dims.insert(dims.begin() + *a, length);
  return TensorSInfo(dims, elem->dtype);
}

}  // namespace

Expected<StructInfo> InferMatchCast(const OpInfo&, const std::vector<Expr>&, const Attrs&) {
  // The struct info is the call's own (sinfo_args), which an inference rule does not see.
  return Error("R.match_cast is made with MakeMatchCast, which takes its struct info");
}

Expected<StructInfo> InferWhileLoop(const OpInfo&, const std::vector<Expr>& args, const Attrs&) {
  size_t carried = TupleSize(args[3]);
  Expected<std::vector<StructInfo>> results = BodyResults(args[0], 1 + carried);
  if (!results) return results.error();
  std::vector<StructInfo> out(results->begin() + 1, results->begin() + 1 + carried);
  // How many iterations run is known only at run time.
  PrimExpr trips = SymVar("trips");
  for (size_t i = 1 + carried; i < results->size(); ++i) {
    Expected<StructInfo> s = Stack((*results)[i], trips, 0);
    if (!s) return s.error();
    out.push_back(*s);
  }
  return TupleSInfo(std::move(out));
}

Expected<StructInfo> InferScanLoop(const OpInfo&, const std::vector<Expr>& args,
                                   const Attrs& attrs) {
  size_t states = TupleSize(args[1]);
  size_t inputs = TupleSize(args[2]);
  Expected<std::vector<StructInfo>> results = BodyResults(args[0], states);
  if (!results) return results.error();
  const auto& in_axes = *attrs.Get<std::vector<int64_t>>("scan_input_axes");
  const auto& out_axes = *attrs.Get<std::vector<int64_t>>("scan_output_axes");
  size_t outputs = results->size() - states;
  if (in_axes.size() != inputs || out_axes.size() != outputs) {
    return Error("scan axes do not match the number of scan inputs and outputs");
  }
  // The sequence length: the first scan input's length along its axis.
  PrimExpr length = SymVar("sequence");
  if (inputs > 0) {
    const StructInfo& first = args[2]->struct_info->fields[0];
    Expected<int64_t> axis = NormalizeAxis(in_axes[0], first->ndim, "scan input axis");
    if (!axis) return axis.error();
    if (first->shape) length = (*first->shape)[*axis];
  }
  std::vector<StructInfo> out(results->begin(), results->begin() + states);
  for (size_t i = 0; i < outputs; ++i) {
    Expected<StructInfo> s = Stack((*results)[states + i], length, out_axes[i]);
    if (!s) return s.error();
    out.push_back(*s);
  }
  return TupleSInfo(std::move(out));
}

}  // namespace quilt::ir
