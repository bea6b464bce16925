// Converters of control flow. If: both branches are imported as subgraphs that read the
// enclosing graph's values, and become an IR If whose branches end in their outputs (a tuple
// when there are several); when the condition is known at import time only the taken branch is
// imported, in line. Loop and Scan bodies are lifted into module functions.
#include <algorithm>

#include "importers/onnx/converter.h"
#include "importers/onnx/graph.h"

namespace quilt::importers::onnx {
namespace {

// The If condition when it is known at import time: a bool constant, or a comparison of known
// values (ONNX function bodies test the rank of a shape input so).
std::optional<bool> KnownCondition(NodeContext& ctx) {
  if (const ir::ConstantNode* c = ctx.ConstantInput(0);
      c && c->dtype == ir::DataType::kBool && c->NumElements() == 1) {
    return c->data->at(0) != 0;
  }
  std::optional<std::vector<int64_t>> k = ctx.KnownInts(0);
  if (k && k->size() == 1) return (*k)[0] != 0;
  return std::nullopt;
}

// An error inside a branch: a node in it is named as the place, the If as the context.
Diagnostic BranchError(const NodeContext& ctx, const std::string& branch, const Diagnostic& d) {
  if (d.location.empty()) return ctx.Error(branch + ": " + d.message);
  Diagnostic outer = ctx.Error("");
  return Error(d.message + " (in the " + branch + " of " + outer.location + ")", d.location);
}

// Imports only the branch a known condition takes, in line: its bindings join this graph's.
Expected<Outputs> InlineBranch(NodeContext& ctx, bool then) {
  const char* name = then ? "then_branch" : "else_branch";
  std::vector<std::optional<KnownValues>> known;
  Expected<ir::SeqExpr> seq = ctx.graph()->ImportSubgraph(ctx.Attr(name)->g(), {}, name, &known);
  if (!seq) return BranchError(ctx, name, seq.error());
  ctx.graph()->InlineBindings(*seq);
  const ir::Expr& body = (*seq)->body;
  Outputs outs;
  if (ctx.NumOutputs() == 1) {
    outs.push_back(body);
  } else {
    const auto* t = ir::As<ir::TupleNode>(body);
    if (!t) return ctx.Error(std::string(name) + " does not end in a tuple of its outputs");
    outs = t->fields;
  }
  for (size_t i = 0; i < outs.size() && i < known.size(); ++i) {
    if (known[i]) ctx.SetKnown(static_cast<int>(i), *known[i]);
  }
  return outs;
}

// The stand-in for a branch that did not import: one `fail` per output, typed like the valid
// branch's outputs. Only outputs of known rank can be stood in for.
Expected<ir::SeqExpr> FailingBranch(const NodeContext& ctx, const std::string& branch,
                                    const Diagnostic& why, const ir::SeqExpr& valid) {
  std::vector<ir::StructInfo> types;
  const ir::Expr& body = valid->body;
  if (const auto* t = ir::As<ir::TupleNode>(body)) {
    for (const ir::Expr& f : t->fields) types.push_back(f->struct_info);
  } else {
    types.push_back(body->struct_info);
  }
  Diagnostic d = BranchError(ctx, branch, why);
  std::string message = "the " + branch + " of " + ctx.Error("").location +
                        " was taken, and it cannot run for this model's shapes: " + d.ToString();
  std::vector<ir::Binding> bindings;
  std::vector<ir::Expr> outs;
  for (size_t i = 0; i < types.size(); ++i) {
    const ir::StructInfo& s = types[i];
    if (!s || s->kind != ir::StructInfoKind::kTensor || !s->shape) return d;
    ir::Attrs attrs;
    attrs.Set("message", message);
    attrs.Set("dtype", s->dtype);
    Expected<ir::Expr> fail =
        ir::MakeOpCall(ir::OpKind::kFail, {ir::MakeShapeExpr(*s->shape)}, std::move(attrs));
    if (!fail) return d;
    ir::Var v = ir::MakeVar(branch + "_fail", (*fail)->struct_info);
    bindings.push_back({v, *fail, ctx.node().name(), "If"});
    outs.push_back(v);
  }
  ir::Expr result = outs.size() == 1 ? outs[0] : ir::MakeTuple(outs);
  return ir::MakeSeqExpr({ir::BindingBlock{false, bindings}}, result);
}

Expected<Outputs> If(NodeContext& ctx) {
  const ::onnx::AttributeProto* then_attr = ctx.Attr("then_branch");
  const ::onnx::AttributeProto* else_attr = ctx.Attr("else_branch");
  if (!then_attr || !else_attr || then_attr->type() != ::onnx::AttributeProto::GRAPH ||
      else_attr->type() != ::onnx::AttributeProto::GRAPH) {
    return ctx.Error("If needs graph attributes 'then_branch' and 'else_branch'");
  }
  ir::Expr cond = ctx.Input(0);
  if (!cond) return ctx.Error("If needs a condition");
  const ir::StructInfo& cs = cond->struct_info;
  if (cs->dtype != ir::DataType::kBool) {
    return ctx.Error("the condition must be bool, got " + std::string(ir::DataTypeName(cs->dtype)));
  }
  if (cs->ndim != 0) {
    // A one-element tensor of any rank: reshape it to a scalar.
    if (std::optional<std::vector<int64_t>> shape = cs->StaticShape()) {
      if (ir::ElementCount(*shape) != 1) return ctx.Error("the condition must have one element");
    }
    Expected<ir::Expr> scalar = ctx.Emit(ir::OpKind::kReshape, {cond, ir::MakeShapeExpr({})});
    if (!scalar) return scalar.error();
    cond = *scalar;
  }
  if (then_attr->g().output_size() != else_attr->g().output_size() ||
      then_attr->g().output_size() != ctx.NumOutputs()) {
    return ctx.Error("the branches and the node must have the same number of outputs");
  }
  if (std::optional<bool> taken = KnownCondition(ctx)) return InlineBranch(ctx, *taken);
  Expected<ir::SeqExpr> then_branch =
      ctx.graph()->ImportSubgraph(then_attr->g(), {}, "then_branch");
  Expected<ir::SeqExpr> else_branch =
      ctx.graph()->ImportSubgraph(else_attr->g(), {}, "else_branch");
  // A branch that does not import for these shapes (Silero VAD's 8 kHz branch given a 16 kHz
  // window) is kept as a run-time failure, so the valid one still compiles; the error names the
  // node if the branch is ever taken.
  if (!then_branch && !else_branch) return BranchError(ctx, "then_branch", then_branch.error());
  if (!then_branch) {
    then_branch = FailingBranch(ctx, "then_branch", then_branch.error(), *else_branch);
    if (!then_branch) return then_branch.error();
  } else if (!else_branch) {
    else_branch = FailingBranch(ctx, "else_branch", else_branch.error(), *then_branch);
    if (!else_branch) return else_branch.error();
  }
  Expected<ir::Expr> value = ir::MakeIf(cond, *then_branch, *else_branch);
  if (!value) return ctx.Error(value.error().message);
  ir::Expr bound = ctx.Bind(*value);
  if (ctx.NumOutputs() == 1) return Outputs{bound};
  Outputs outs;
  for (int i = 0; i < ctx.NumOutputs(); ++i) {
    Expected<ir::Expr> item = ir::MakeTupleGetItem(bound, i);
    if (!item) return ctx.Error(item.error().message);
    outs.push_back(ctx.Bind(*item, i));
  }
  return outs;
}

// A tensor like `s` with only its rank and dtype kept: the type of a value that may change shape
// from one iteration to the next.
ir::StructInfo RankOnly(const ir::StructInfo& s) {
  if (!s || !s->IsTensor()) return s;
  return ir::TensorSInfo(std::nullopt, s->dtype, std::nullopt, s->ndim);
}

struct LiftedBody {
  ir::Expr function;               // GlobalVar of the lifted function
  std::vector<ir::Expr> captured;  // outer values it reads, passed after its own inputs
  std::vector<ir::StructInfo> results;
};

// Imports `body` with inputs typed `inputs` and lifts it into a module function whose parameters
// are the body's inputs followed by the outer values it reads.
Expected<LiftedBody> Lift(NodeContext& ctx, const ::onnx::GraphProto& body,
                          const std::vector<ir::StructInfo>& inputs, const std::string& what) {
  std::vector<ir::Var> params;
  std::vector<ir::Expr> args;
  for (int i = 0; i < body.input_size(); ++i) {
    if (i >= static_cast<int>(inputs.size())) break;
    params.push_back(ir::MakeVar(SanitizeName(body.input(i).name()), inputs[i]));
    args.push_back(params.back());
  }
  Expected<ir::SeqExpr> seq = ctx.graph()->ImportSubgraph(body, args, what);
  if (!seq) return seq.error();
  std::vector<ir::Var> captured = ir::FreeVars(**seq, params);
  std::vector<ir::Var> all = params;
  all.insert(all.end(), captured.begin(), captured.end());
  Expected<ir::Function> f = ir::MakeFunction(all, *seq, nullptr);
  if (!f) return Error(what + ": " + f.error().message);
  auto& lifted = *ctx.graph()->model().lifted;
  std::string name = SanitizeName(ctx.node().name().empty() ? ctx.op_type() : ctx.node().name()) +
                     "_body_" + std::to_string(lifted.size());
  lifted.emplace_back(name, *f);
  LiftedBody out;
  out.function = ir::MakeGlobalVar(name, (*f)->struct_info);
  out.captured.assign(captured.begin(), captured.end());
  const ir::StructInfo& ret = (*f)->ret_struct_info;
  out.results =
      ret->kind == ir::StructInfoKind::kTuple ? ret->fields : std::vector<ir::StructInfo>{ret};
  return out;
}

// Imports a loop-like body: first with the carried values' own types; when the body changes a
// carried value's shape, again with only ranks and dtypes for those values.
Expected<LiftedBody> LiftLoopBody(NodeContext& ctx, const ::onnx::GraphProto& body,
                                  std::vector<ir::StructInfo> inputs, size_t carried_begin,
                                  size_t carried_count, size_t result_offset,
                                  const std::string& what) {
  auto& lifted = *ctx.graph()->model().lifted;
  size_t mark = lifted.size();
  Expected<LiftedBody> first = Lift(ctx, body, inputs, what);
  if (!first) return first;
  bool stable = true;
  for (size_t i = 0; i < carried_count; ++i) {
    const ir::StructInfo& in = inputs[carried_begin + i];
    if (result_offset + i >= first->results.size()) return first;
    const ir::StructInfo& out = first->results[result_offset + i];
    bool same = in && out && in->shape && out->shape && in->shape->size() == out->shape->size();
    for (size_t d = 0; same && d < in->shape->size(); ++d) {
      same = ir::PrimEqual((*in->shape)[d], (*out->shape)[d]);
    }
    if (!same) {
      stable = false;
      inputs[carried_begin + i] = RankOnly(in);
    }
  }
  if (stable) return first;
  lifted.resize(mark);
  return Lift(ctx, body, inputs, what);
}

Outputs Items(NodeContext& ctx, const ir::Expr& tuple, int n) {
  ir::Expr bound = ctx.Bind(tuple);
  Outputs outs;
  for (int i = 0; i < n; ++i) {
    Expected<ir::Expr> item = ir::MakeTupleGetItem(bound, i);
    outs.push_back(item ? ctx.Bind(*item, i) : nullptr);
  }
  return outs;
}

Expected<Outputs> Loop(NodeContext& ctx) {
  const ::onnx::AttributeProto* body = ctx.Attr("body");
  if (!body || body->type() != ::onnx::AttributeProto::GRAPH)
    return ctx.Error("Loop needs a graph attribute 'body'");
  Expected<ir::Expr> max_trip = ctx.HasInput(0) ? Expected<ir::Expr>(ctx.Input(0))
                                                : ctx.Const(ir::DataType::kInt64, {0}, nullptr);
  Expected<ir::Expr> cond = ctx.HasInput(1) ? Expected<ir::Expr>(ctx.Input(1))
                                            : ctx.Const(ir::DataType::kBool, {0}, nullptr);
  if (!max_trip || !cond) return ctx.Error("bad Loop inputs");
  std::vector<ir::Expr> carried;
  for (int i = 2; i < ctx.NumInputs(); ++i) {
    if (!ctx.Input(i)) return ctx.Error("loop-carried input " + std::to_string(i) + " is missing");
    carried.push_back(ctx.Input(i));
  }
  std::vector<ir::StructInfo> inputs = {
      ir::TensorSInfo(std::vector<int64_t>{}, ir::DataType::kInt64),
      ir::TensorSInfo(std::vector<int64_t>{}, ir::DataType::kBool)};
  for (const ir::Expr& c : carried) inputs.push_back(c->struct_info);
  Expected<LiftedBody> lifted =
      LiftLoopBody(ctx, body->g(), inputs, 2, carried.size(), 1, "Loop body");
  if (!lifted) return ctx.Error(lifted.error().message);
  Expected<ir::Expr> loop = ir::MakeOpCall(
      ir::OpKind::kWhileLoop, {lifted->function, *max_trip, *cond, ir::MakeTuple(carried),
                               ir::MakeTuple(lifted->captured)});
  if (!loop) return ctx.Error(loop.error().message);
  return Items(ctx, *loop, ctx.NumOutputs());
}

// `s` without its dim `axis` (a slice the body sees).
ir::StructInfo DropDim(const ir::StructInfo& s, int64_t axis) {
  if (!s->shape) {
    return ir::TensorSInfo(std::nullopt, s->dtype, std::nullopt, s->ndim < 0 ? -1 : s->ndim - 1);
  }
  std::vector<ir::PrimExpr> dims = *s->shape;
  dims.erase(dims.begin() + axis);
  return ir::TensorSInfo(dims, s->dtype);
}

Expected<Outputs> Scan(NodeContext& ctx) {
  const ::onnx::AttributeProto* body = ctx.Attr("body");
  if (!body || body->type() != ::onnx::AttributeProto::GRAPH)
    return ctx.Error("Scan needs a graph attribute 'body'");
  Expected<int64_t> m = ctx.Int("num_scan_inputs");
  if (!m) return ctx.Error(m.error().message);
  int64_t n_inputs = ctx.NumInputs();
  if (*m < 1 || *m > n_inputs)
    return ctx.Error("num_scan_inputs must be between 1 and the number of inputs");
  int64_t n_states = n_inputs - *m;
  int64_t n_outputs = ctx.NumOutputs() - n_states;
  if (n_outputs < 0) return ctx.Error("Scan has fewer outputs than states");
  auto axes = [&](const char* name, int64_t n) -> Expected<std::vector<int64_t>> {
    return ctx.Ints(name, std::vector<int64_t>(n, 0));
  };
  Expected<std::vector<int64_t>> in_axes = axes("scan_input_axes", *m);
  Expected<std::vector<int64_t>> in_dirs = axes("scan_input_directions", *m);
  Expected<std::vector<int64_t>> out_axes = axes("scan_output_axes", n_outputs);
  Expected<std::vector<int64_t>> out_dirs = axes("scan_output_directions", n_outputs);
  if (!in_axes || !in_dirs || !out_axes || !out_dirs) return ctx.Error("bad Scan axes attributes");
  std::vector<ir::Expr> states, scans;
  std::vector<ir::StructInfo> inputs;
  for (int64_t i = 0; i < n_inputs; ++i) {
    ir::Expr x = ctx.Input(static_cast<int>(i));
    if (!x) return ctx.Error("input " + std::to_string(i) + " is missing");
    if (i < n_states) {
      states.push_back(x);
      inputs.push_back(x->struct_info);
      continue;
    }
    scans.push_back(x);
    // The body sees one slice: the scan axis removed.
    const ir::StructInfo& s = x->struct_info;
    int64_t axis = (*in_axes)[i - n_states];
    if (s->ndim >= 0) axis = axis < 0 ? axis + s->ndim : axis;
    if (s->ndim >= 0 && (axis < 0 || axis >= s->ndim))
      return ctx.Error("scan input axis is out of range");
    inputs.push_back(DropDim(s, axis));
  }
  Expected<LiftedBody> lifted =
      LiftLoopBody(ctx, body->g(), inputs, 0, states.size(), 0, "Scan body");
  if (!lifted) return ctx.Error(lifted.error().message);
  ir::Attrs a;
  a.Set("scan_input_axes", *in_axes);
  a.Set("scan_input_directions", *in_dirs);
  a.Set("scan_output_axes", *out_axes);
  a.Set("scan_output_directions", *out_dirs);
  Expected<ir::Expr> scan = ir::MakeOpCall(ir::OpKind::kScan,
                                           {lifted->function, ir::MakeTuple(states),
                                            ir::MakeTuple(scans), ir::MakeTuple(lifted->captured)},
                                           a);
  if (!scan) return ctx.Error(scan.error().message);
  return Items(ctx, *scan, ctx.NumOutputs());
}

// Scan-8: every input is batched on axis 0 and scan inputs run along axis 1; outputs are
// (final states (batch, ...), scan outputs (batch, sequence, ...)). It becomes a scan over the
// batch whose body (a lifted function) runs the opset-9 scan of one batch entry.
Expected<Outputs> Scan8(NodeContext& ctx) {
  const ::onnx::AttributeProto* body = ctx.Attr("body");
  if (!body || body->type() != ::onnx::AttributeProto::GRAPH)
    return ctx.Error("Scan needs a graph attribute 'body'");
  Expected<int64_t> m = ctx.Int("num_scan_inputs");
  if (!m) return ctx.Error(m.error().message);
  int64_t n_inputs = ctx.NumInputs() - 1;  // input 0 is sequence_lens
  if (*m < 1 || *m > n_inputs)
    return ctx.Error(
        "num_scan_inputs must be between 1 and the number of inputs after sequence_lens");
  int64_t n_states = n_inputs - *m;
  int64_t n_outputs = ctx.NumOutputs() - n_states;
  if (n_outputs < 0) return ctx.Error("Scan has fewer outputs than states");
  Expected<std::vector<int64_t>> dirs = ctx.Ints("directions", std::vector<int64_t>(*m, 0));
  if (!dirs) return ctx.Error(dirs.error().message);
  if (static_cast<int64_t>(dirs->size()) != *m)
    return ctx.Error("directions must have one value per scan input");
  for (int64_t d : *dirs) {
    if (d != 0 && d != 1) return ctx.Error("directions must be 0 (forward) or 1 (reverse)");
  }
  std::vector<ir::Expr> batched;                // states, then scan inputs
  std::vector<ir::StructInfo> entry, inner_in;  // one batch entry; one step of it
  for (int64_t i = 0; i < n_inputs; ++i) {
    ir::Expr x = ctx.Input(static_cast<int>(i + 1));
    if (!x) return ctx.Error("input " + std::to_string(i + 1) + " is missing");
    const ir::StructInfo& s = x->struct_info;
    bool scan = i >= n_states;
    if (s->ndim >= 0 && s->ndim < (scan ? 2 : 1)) {
      return ctx.Error(std::string(scan ? "a scan input needs (batch, sequence, ...)"
                                        : "a state needs (batch, ...)") +
                       ", got rank " + std::to_string(s->ndim));
    }
    batched.push_back(x);
    entry.push_back(DropDim(s, 0));
    inner_in.push_back(scan ? DropDim(entry.back(), 0) : entry.back());
  }
  if (ctx.HasInput(0)) {
    // Per-entry lengths: supported when every entry runs the whole sequence.
    const ir::StructInfo& first = batched[n_states]->struct_info;
    std::optional<int64_t> length;
    if (first->shape) length = ir::AsInt((*first->shape)[1]);
    std::optional<std::vector<int64_t>> lens = ctx.KnownInts(0);
    bool whole = lens && length &&
                 std::all_of(lens->begin(), lens->end(), [&](int64_t v) { return v == *length; });
    if (!whole) {
      return ctx.Error(
          "sequence_lens shorter than the sequence (or not known at import time) is not "
          "supported");
    }
  }
  Expected<LiftedBody> inner = LiftLoopBody(ctx, body->g(), inner_in, 0, n_states, 0, "Scan body");
  if (!inner) return ctx.Error(inner.error().message);
  // The outer body: (state entries..., scan entries..., captured...) -> inner scan's results.
  std::vector<ir::Var> params;
  std::vector<ir::Expr> states, scans, captured;
  for (int64_t i = 0; i < n_inputs; ++i) {
    params.push_back(ir::MakeVar(i < n_states ? "state" : "scan_input", entry[i]));
    (i < n_states ? states : scans).push_back(params.back());
  }
  for (const ir::Expr& c : inner->captured) {
    params.push_back(ir::MakeVar(ir::As<ir::VarNode>(c)->name_hint, c->struct_info));
    captured.push_back(params.back());
  }
  ir::Attrs a;
  a.Set("scan_input_axes", std::vector<int64_t>(*m, 0));
  a.Set("scan_input_directions", *dirs);
  a.Set("scan_output_axes", std::vector<int64_t>(n_outputs, 0));
  a.Set("scan_output_directions", std::vector<int64_t>(n_outputs, 0));
  Expected<ir::Expr> step = ir::MakeOpCall(
      ir::OpKind::kScan,
      {inner->function, ir::MakeTuple(states), ir::MakeTuple(scans), ir::MakeTuple(captured)}, a);
  if (!step) return ctx.Error(step.error().message);
  ir::Var result = ir::MakeVar("entry", (*step)->struct_info);
  ir::SeqExpr seq = ir::MakeSeqExpr(
      {ir::BindingBlock{false, {ir::Binding{result, *step, ctx.node().name()}}}}, result);
  Expected<ir::Function> f = ir::MakeFunction(params, seq, nullptr);
  if (!f) return ctx.Error("Scan batch body: " + f.error().message);
  auto& lifted = *ctx.graph()->model().lifted;
  std::string name = SanitizeName(ctx.node().name().empty() ? ctx.op_type() : ctx.node().name()) +
                     "_batch_" + std::to_string(lifted.size());
  lifted.emplace_back(name, *f);
  ir::Attrs outer;
  outer.Set("scan_input_axes", std::vector<int64_t>(n_inputs, 0));
  outer.Set("scan_input_directions", std::vector<int64_t>(n_inputs, 0));
  outer.Set("scan_output_axes", std::vector<int64_t>(ctx.NumOutputs(), 0));
  outer.Set("scan_output_directions", std::vector<int64_t>(ctx.NumOutputs(), 0));
  Expected<ir::Expr> scan =
      ir::MakeOpCall(ir::OpKind::kScan,
                     {ir::MakeGlobalVar(name, (*f)->struct_info), ir::MakeTuple({}),
                      ir::MakeTuple(batched), ir::MakeTuple(inner->captured)},
                     outer);
  if (!scan) return ctx.Error(scan.error().message);
  return Items(ctx, *scan, ctx.NumOutputs());
}

}  // namespace

const std::vector<Converter> kControlConverters = {
    {"If", 1, If},
    {"Loop", 1, Loop},
    {"Scan", 8, Scan8},
    {"Scan", 9, Scan},
};

}  // namespace quilt::importers::onnx
