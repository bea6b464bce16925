#include "targets/lower.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "ir/builder.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "passes/vdevice_util.h"
#include "runtime/src/kernel.h"
#include "targets/block_layout.h"
#include "targets/cpu/kernels/conv_blocked.h"
#include "targets/cpu/kernels/fused.h"
#include "targets/cpu/kernels/registry.h"
#include "targets/fuse_elementwise.h"
#include "targets/fuse_epilogue.h"
#include "targets/memory_plan.h"
#include "targets/opencl/emit.h"
#include "targets/pack_weights.h"

namespace quilt::compiler {
namespace {

// Shared by the lowerings of all graphs of one package: subgraphs made for module functions
// (loop bodies), by name, and the ops without a kernel.
struct PackageLowering {
  const ir::IRModule& module;
  PackageSpec& spec;
  const LowerOptions& options;
  std::map<std::string, int> function_graphs;
  int host = 0;  // the device of values the module does not place
  struct Missing {
    std::string op, where;
  };
  std::vector<Missing> missing;
};

class GraphLowering {
 public:
  GraphLowering(PackageLowering& pl, GraphSpec& g)
      : pl_(pl), spec_(pl.spec), g_(g), current_device_(pl.host) {}

  // Lowers a branch of an If: its free variables (bound in the enclosing graph) become the
  // subgraph's inputs, in the order of `captured`.
  Status LowerBranch(const ir::SeqExprNode& seq, const std::vector<ir::Var>& captured) {
    for (const ir::Var& v : captured) {
      Expected<int> value = NewValue(v->name_hint, v->struct_info, pkg::ValueKind::Input);
      if (!value) return value.error();
      vars_[v.get()] = {*value};
      g_.inputs.push_back(*value);
    }
    return LowerBody(seq, nullptr);
  }

  Status LowerFunction(const ir::FunctionNode& f) {
    const auto* in_names = f.attrs.Get<std::vector<std::string>>("input_names");
    for (size_t i = 0; i < f.params.size(); ++i) {
      const ir::Var& p = f.params[i];
      std::string name = in_names && i < in_names->size() ? (*in_names)[i] : p->name_hint;
      Expected<int> v = NewValue(name, p->struct_info, pkg::ValueKind::Input);
      if (!v) return v.error();
      if (i < f.param_defaults.size() && f.param_defaults[i]) {
        const auto* c = ir::As<ir::ConstantNode>(f.param_defaults[i]);
        if (!c) return Error("the default of parameter '" + p->name_hint + "' is not a constant");
        g_.values[*v].default_buffer = AddBuffer(*c);
      }
      vars_[p.get()] = {*v};
      g_.inputs.push_back(*v);
    }
    return LowerBody(*f.body, &f);
  }

  // Each binding of `seq`, in order; a failure is located at its node (or value) name.
  Status LowerBindings(const ir::SeqExprNode& seq) {
    for (const ir::BindingBlock& block : seq.blocks) {
      for (const ir::Binding& b : block.bindings) {
        source_ = b.source;
        Expected<std::vector<int>> vals = LowerBinding(b);
        if (!vals) {
          Diagnostic d = vals.error();
          if (d.location.empty()) d.location = b.source.empty() ? b.var->name_hint : b.source;
          return d;
        }
        vars_[b.var.get()] = *vals;
      }
    }
    return {};
  }

  Status LowerBody(const ir::SeqExprNode& body, const ir::FunctionNode* function) {
    QUILT_TRY(LowerBindings(body));
    Expected<std::vector<int>> outs = LowerArg(body.body);
    if (!outs) return outs.error();
    const auto* out_names =
        function ? function->attrs.Get<std::vector<std::string>>("output_names") : nullptr;
    std::vector<std::string> names = OutputNames(body.body, outs->size());
    for (size_t i = 0; i < outs->size(); ++i) {
      int v = (*outs)[i];
      // A graph output is its own intermediate: an input, a constant or a value returned twice
      // gets a copy, so every output has a name and memory of its own.
      bool shared = g_.values[v].kind != pkg::ValueKind::Intermediate ||
                    std::find(g_.outputs.begin(), g_.outputs.end(), v) != g_.outputs.end();
      if (shared) v = AddCopy(v, g_.values[v].device, "");
      g_.values[v].name = out_names && i < out_names->size() ? (*out_names)[i] : names[i];
      g_.outputs.push_back(v);
    }
    return {};
  }

  // Arena offsets for intermediates of static size that are not graph outputs. The output of an
  // elementwise or broadcast step reuses the memory of an input of the same size that no later
  // step reads (in place): those kernels read element i before writing element i.
  void PlanMemory() {
    int num_values = static_cast<int>(g_.values.size());
    std::vector<int> first(num_values, -1), last(num_values, -1);
    for (int s = 0; s < static_cast<int>(g_.steps.size()); ++s) {
      for (int v : g_.steps[s].inputs) {
        if (v >= 0) last[v] = s;
      }
      for (int v : g_.steps[s].outputs) {
        if (first[v] < 0) first[v] = s;
        last[v] = std::max(last[v], s);
      }
    }
    auto plannable = [&](int v) {
      const ValueSpec& value = g_.values[v];
      return value.kind == pkg::ValueKind::Intermediate && value.byte_size >= 0 && first[v] >= 0 &&
             std::find(g_.outputs.begin(), g_.outputs.end(), v) == g_.outputs.end();
    };
    // root[v]: the value whose memory v uses (itself unless in place), at `within[v]` bytes into
    // it; a block of values sharing memory (a top value, root of itself, and those whose roots
    // lead to it) lives from its members' first step to their last.
    std::vector<int> root(num_values), block_first = first, block_last = last;
    std::vector<int64_t> within(num_values, 0);
    std::vector<bool> taken(num_values, false);
    for (int v = 0; v < num_values; ++v) root[v] = v;
    auto top = [&](int v) {
      while (root[v] != v) v = root[v];
      return v;
    };
    if (pl_.options.in_place) {
      for (int s = 0; s < static_cast<int>(g_.steps.size()); ++s) {
        const StepSpec& step = g_.steps[s];
        // A split or concat whose parts lie one after another in the whole (nothing but dims of 1
        // before its axis: one image's channels, NCHW or blocked) leaves them there: a part at a
        // multiple of 64 bytes is a range of the whole's memory, and the kernel does not copy it.
        // A split's parts (not of a value whose memory another split or step already shares) may
        // be written over in place only where the input is read no more; a concat's parts are its
        // inputs as their steps made them (not in place themselves, each once), and its result
        // may be written over in place only where no part is read after it.
        if (step.kernel == "split" && step.inputs.size() == 1 && !taken[step.inputs[0]]) {
          const int in = step.inputs[0], r = top(in);
          const std::vector<int64_t> at = PartOffsets(step, in, step.outputs, plannable);
          for (size_t i = 0; i < at.size(); ++i) {
            const int out = step.outputs[i];
            if (!plannable(out) || at[i] % 64 != 0) continue;
            root[out] = in;
            within[out] = at[i];
            taken[out] = last[in] > s;
            taken[in] = true;
            block_last[r] = std::max(block_last[r], last[out]);
          }
          if (taken[in]) continue;
        }
        if (step.kernel == "concat" && step.outputs.size() == 1) {
          const int out = step.outputs[0];
          const std::vector<int64_t> at = PartOffsets(step, out, step.inputs, plannable);
          for (size_t i = 0; i < at.size(); ++i) {
            const int in = step.inputs[i];
            if (!plannable(in) || at[i] % 64 != 0 || root[in] != in || taken[in] ||
                std::count(step.inputs.begin(), step.inputs.end(), in) != 1) {
              continue;
            }
            root[in] = out;
            within[in] = at[i];
            taken[in] = true;
            taken[out] = taken[out] || last[in] > s;
            block_first[out] = std::min(block_first[out], block_first[in]);
            block_last[out] = std::max(block_last[out], block_last[in]);
          }
          continue;
        }
        const ir::OpInfo* op = ir::FindOp(step.kernel);
        bool elementwise = step.kernel == cpu::kFusedElementwise ||
                           (op && (op->pattern == ir::OpPattern::kElementwise ||
                                   op->pattern == ir::OpPattern::kBroadcast));
        // A reshape on the CPU writes its data input's bytes unchanged: in that input's memory
        // its copy is skipped (the kernel copies only between two buffers).
        bool view =
            (step.kernel == "reshape" || step.kernel == "squeeze" ||
             step.kernel == "expand_dims") &&
            step.outputs.size() == 1 && plannable(step.outputs[0]) &&
            spec_.devices[static_cast<size_t>(g_.values[step.outputs[0]].device)].kind == "cpu";
        // A blocked conv adds its residual input as it stores each output vector, reading the
        // residual's vector before writing the output's at the same place (its tiles' StoreTile):
        // its result may take the residual's memory where no later step reads the residual and the
        // step reads it as nothing else (memory a ResNet block's sum would otherwise stream
        // through the cache beside it). 1x1 convs alone (a ResNet block's last): the kernel then
        // sums the input channels in one part, where a 3x3's direct sums in one part would round
        // otherwise than its usual two.
        const auto* shape = step.attrs.Get<std::vector<int64_t>>("weight_shape");
        const bool pointwise = shape && shape->size() == 4 && (*shape)[2] == 1 && (*shape)[3] == 1;
        int residual =
            step.kernel == cpu::nn::kConvNchw16c && pointwise ? ConvResidualInput(step) : -1;
        if (residual >= 0 && std::count(step.inputs.begin(), step.inputs.end(),
                                        step.inputs[static_cast<size_t>(residual)]) != 1) {
          residual = -1;  // the step reads it as another input too
        }
        if ((!elementwise && !view && residual < 0) || step.outputs.size() != 1) continue;
        int out = step.outputs[0];
        if (residual >= 0 && !plannable(out)) {
          // Of a size known only when running (a symbolic batch): the executor gives the output
          // the residual's buffer (rt::kInPlaceInput).
          const int in = step.inputs[static_cast<size_t>(residual)];
          const ValueSpec &a = g_.values[in], &b = g_.values[out];
          if (a.kind == pkg::ValueKind::Intermediate && b.kind == pkg::ValueKind::Intermediate &&
              last[in] == s && !taken[in] && a.dtype == b.dtype && a.device == b.device &&
              std::find(g_.outputs.begin(), g_.outputs.end(), in) == g_.outputs.end()) {
            g_.steps[static_cast<size_t>(s)].attrs.Set(std::string(rt::kInPlaceInput),
                                                       int64_t{residual});
          }
          continue;
        }
        if (!plannable(out)) continue;
        for (size_t i = 0; i < step.inputs.size() && (!view || i == 0); ++i) {
          if (residual >= 0 && static_cast<int>(i) != residual) continue;
          int in = step.inputs[i];
          if (in < 0 || !plannable(in) || last[in] != s || taken[in]) continue;
          const ValueSpec& a = g_.values[in];
          const ValueSpec& b = g_.values[out];
          if (a.byte_size != b.byte_size || a.dtype != b.dtype || a.device != b.device) continue;
          root[out] = root[in];
          within[out] = within[in];
          taken[in] = true;
          const int r = top(in);
          block_last[r] = std::max(block_last[r], last[out]);
          break;
        }
      }
    }
    // One arena per device.
    g_.arena_bytes.assign(spec_.devices.size(), 0);
    for (int d = 0; d < static_cast<int>(spec_.devices.size()); ++d) {
      std::vector<LiveRange> ranges;
      std::vector<int> which;
      for (int v = 0; v < num_values; ++v) {
        if (!plannable(v) || root[v] != v || g_.values[v].device != d) continue;
        ranges.push_back({g_.values[v].byte_size, block_first[v], block_last[v]});
        which.push_back(v);
      }
      ArenaPlan plan = PlanArena(ranges);
      for (size_t i = 0; i < which.size(); ++i) g_.values[which[i]].arena_offset = plan.offsets[i];
      g_.arena_bytes[static_cast<size_t>(d)] = plan.total;
    }
    for (int v = 0; v < num_values; ++v) {
      if (!plannable(v) || root[v] == v) continue;
      int64_t at = 0;
      int r = v;
      for (; root[r] != r; r = root[r]) at += within[r];
      g_.values[v].arena_offset = g_.values[r].arena_offset + at;
    }
  }

  // Where each part of a CPU split's input or concat's result (`whole`) begins in it, in bytes,
  // when the parts lie one after another there (nothing but dims of 1 before the axis) and the
  // whole is planned in the arena; else none.
  template <class Plannable>
  std::vector<int64_t> PartOffsets(const StepSpec& step, int whole, const std::vector<int>& parts,
                                   const Plannable& plannable) const {
    if (whole < 0 || !plannable(whole) || parts.empty()) return {};
    const ValueSpec& x = g_.values[static_cast<size_t>(whole)];
    if (spec_.devices[static_cast<size_t>(x.device)].kind != "cpu" || x.rank < 1) return {};
    const int64_t* attr = step.attrs.Get<int64_t>("axis");
    int64_t axis = attr ? *attr : 0;
    if (axis < 0) axis += x.rank;
    if (axis < 0 || axis >= x.rank) return {};
    for (int64_t i = 0; i < axis; ++i) {
      const DimSpec& dim = g_.dims[static_cast<size_t>(x.dims[static_cast<size_t>(i)])];
      if (dim.kind != pkg::DimKind::Int || dim.value != 1) return {};
    }
    std::vector<int64_t> at;
    int64_t bytes = 0;
    for (int part : parts) {
      if (part < 0) return {};
      const ValueSpec& y = g_.values[static_cast<size_t>(part)];
      if (y.device != x.device || y.dtype != x.dtype || y.byte_size < 0) return {};
      at.push_back(bytes);
      bytes += y.byte_size;
    }
    if (bytes != x.byte_size) return {};
    return at;
  }

 private:
  std::vector<std::string> OutputNames(const ir::Expr& body, size_t n) {
    std::vector<std::string> names;
    auto name_of = [&](const ir::Expr& e, size_t i) {
      if (const auto* v = ir::As<ir::VarNode>(e)) return v->name_hint;
      return "output_" + std::to_string(i);
    };
    if (const auto* t = ir::As<ir::TupleNode>(body); t && t->fields.size() == n) {
      for (size_t i = 0; i < n; ++i) names.push_back(name_of(t->fields[i], i));
      return names;
    }
    if (const auto* v = ir::As<ir::VarNode>(body); v && n > 1) {
      // A tuple-valued var: look through its binding.
      auto it = tuple_fields_.find(v);
      if (it != tuple_fields_.end() && it->second.size() == n) {
        for (size_t i = 0; i < n; ++i) names.push_back(name_of(it->second[i], i));
        return names;
      }
    }
    for (size_t i = 0; i < n; ++i)
      names.push_back(n == 1 ? name_of(body, i) : "output_" + std::to_string(i));
    return names;
  }

  Expected<std::vector<int>> LowerBinding(const ir::Binding& b) {
    // A variable bound to a constant stands for the constant: each use lowers it on the device
    // that reads it.
    if (ir::As<ir::ConstantNode>(b.value)) {
      const_vars_[b.var.get()] = b.value;
      return std::vector<int>{};
    }
    if (const auto* call = ir::As<ir::CallNode>(b.value)) return LowerCall(*call, b.var->name_hint);
    if (const auto* node = ir::As<ir::IfNode>(b.value)) return LowerIf(*node, b.var->name_hint);
    if (const auto* t = ir::As<ir::TupleNode>(b.value)) tuple_fields_[b.var.get()] = t->fields;
    return LowerArg(b.value);
  }

  // The values an argument expression stands for (several for a tuple).
  Expected<std::vector<int>> LowerArg(const ir::Expr& e) {
    switch (e->kind) {
      case ir::ExprKind::kVar:
      case ir::ExprKind::kDataflowVar: {
        auto c = const_vars_.find(static_cast<const ir::VarNode*>(e.get()));
        if (c != const_vars_.end()) return LowerArg(c->second);
        auto it = vars_.find(static_cast<const ir::VarNode*>(e.get()));
        if (it == vars_.end())
          return Error("'" + ir::ArgName(e) + "' is used before it is defined");
        return it->second;
      }
      case ir::ExprKind::kConstant: {
        const auto* c = ir::As<ir::ConstantNode>(e);
        // A constant lives on each device whose steps read it.
        auto it = constants_.find({c, current_device_});
        if (it != constants_.end()) return std::vector<int>{it->second};
        Expected<int> v = NewValue("", e->struct_info, pkg::ValueKind::Constant);
        if (!v) return v.error();
        g_.values[*v].device = current_device_;
        auto same = buffers_.find(c);
        g_.values[*v].buffer = same != buffers_.end() ? same->second : AddBuffer(*c);
        buffers_[c] = g_.values[*v].buffer;
        constants_[{c, current_device_}] = *v;
        return std::vector<int>{*v};
      }
      case ir::ExprKind::kShapeExpr:
        return LowerShape(*ir::As<ir::ShapeExprNode>(e));
      case ir::ExprKind::kPrimValue:
        return LowerPrim(*ir::As<ir::PrimValueNode>(e));
      case ir::ExprKind::kTuple: {
        std::vector<int> all;
        for (const ir::Expr& field : ir::As<ir::TupleNode>(e)->fields) {
          Expected<std::vector<int>> f = LowerArg(field);
          if (!f) return f;
          if (f->size() != 1) return Error("nested tuples are not supported by the package yet");
          all.push_back((*f)[0]);
        }
        return all;
      }
      case ir::ExprKind::kTupleGetItem: {
        const auto* item = ir::As<ir::TupleGetItemNode>(e);
        Expected<std::vector<int>> t = LowerArg(item->tuple);
        if (!t) return t;
        if (item->index < 0 || item->index >= static_cast<int>(t->size())) {
          return Error("tuple index " + std::to_string(item->index) + " out of range");
        }
        return std::vector<int>{(*t)[item->index]};
      }
      case ir::ExprKind::kCall:
        return Error("a nested call (not normalized)");
      case ir::ExprKind::kIf:
      case ir::ExprKind::kSeqExpr:
        return Error("a nested If or block (not normalized)");
      case ir::ExprKind::kStringImm:
        return Error("string values are not supported");
      case ir::ExprKind::kFunction:
      case ir::ExprKind::kGlobalVar:
      case ir::ExprKind::kOp:
      case ir::ExprKind::kExternFunc:
        return Error("a function value is not supported by the package");
    }
    return Error("unknown expression");
  }

  // The device index of a vdevice of the module (the host when not placed).
  int DeviceOf(const ir::StructInfo& s) const {
    std::optional<ir::VDevice> d;
    if (s && s->IsTensor()) {
      d = s->vdevice;
    } else if (s && s->kind == ir::StructInfoKind::kTuple) {
      for (const ir::StructInfo& f : s->fields) {
        if (!d && f && f->IsTensor()) d = f->vdevice;
      }
    }
    int i = d ? pl_.module.VDeviceIndex(*d) : -1;
    return i < 0 ? pl_.host : i;
  }

  // A region (a function with a "vdevice" attribute, made by partition) is lowered in line:
  // its steps join this graph, on its device.
  Expected<std::vector<int>> LowerRegionCall(const ir::CallNode& call, const ir::FunctionNode& f,
                                             const std::string& region) {
    if (f.params.size() != call.args.size()) return Error("a region call with the wrong arity");
    Expected<int> device =
        ir::ResolveDeviceString(*f.attrs.Get<std::string>("vdevice"), pl_.module.vdevices);
    if (!device) return device.error();
    current_device_ = *device;
    for (size_t i = 0; i < f.params.size(); ++i) {
      // A constant passed in stays a constant of the region's device.
      if (auto c = const_vars_.find(ir::As<ir::VarNode>(call.args[i])); c != const_vars_.end()) {
        const_vars_[f.params[i].get()] = c->second;
        continue;
      }
      Expected<std::vector<int>> vals = LowerArg(call.args[i]);
      if (!vals) return vals;
      vars_[f.params[i].get()] = *vals;
    }
    std::string saved = source_;
    size_t first = g_.steps.size();
    QUILT_TRY(LowerBindings(*f.body));
    source_ = saved;
    for (size_t s = first; s < g_.steps.size(); ++s) g_.steps[s].region = region;
    return LowerArg(f.body->body);
  }

  // A copy between devices is a `copy` step on the destination; between two vdevices of one
  // physical device there is nothing to move, so the value is used as it is.
  Expected<std::vector<int>> LowerCopy(const ir::CallNode& call, const std::string& name) {
    Expected<std::vector<int>> in = LowerArg(call.args[0]);
    if (!in) return in;
    int src = DeviceOf(call.args[0]->struct_info);
    int dst = DeviceOf(call.struct_info);
    const std::vector<ir::VDevice>& list = pl_.module.vdevices;
    if (src == dst || (!list.empty() && list[static_cast<size_t>(src)].SamePhysicalDevice(
                                            list[static_cast<size_t>(dst)]))) {
      return in;
    }
    current_device_ = dst;
    Expected<std::vector<int>> outs = ResultValues(call.struct_info, name);
    if (!outs) return outs;
    StepSpec step;
    step.kernel = "copy";
    step.kind = pkg::StepKind::Copy;
    step.device = dst;
    step.source = source_;
    step.inputs = *in;
    step.input_arity = {1};
    step.outputs = *outs;
    g_.steps.push_back(std::move(step));
    return outs;
  }

  Expected<std::vector<int>> LowerCall(const ir::CallNode& call, const std::string& name) {
    const ir::OpInfo* op = call.op();
    if (const auto* gv = ir::As<ir::GlobalVarNode>(call.callee)) {
      ir::Function f = pl_.module.Lookup(gv->name);
      if (f && f->attrs.Get<std::string>("vdevice")) return LowerRegionCall(call, *f, gv->name);
    }
    if (const auto* ext = ir::As<ir::ExternFuncNode>(call.callee)) {
      const std::vector<ir::VDevice>& list = pl_.module.vdevices;
      int d = DeviceOf(call.struct_info);
      std::string device = d >= 0 && d < static_cast<int>(list.size())
                               ? list[static_cast<size_t>(d)].target.ToString()
                               : "the host";
      if (ext->style == ir::ExternStyle::kTir) {
        return Error("R.call_tir of prim_func '" + ext->name +
                     "': no kernel for this prim_func on device " + device +
                     " (quilt compiles no TIR: write it as Relax ops)");
      }
      return Error("packed function \"" + ext->name + "\": no kernel for it on device " + device +
                   " (quilt links no packed functions: write it as Relax ops)");
    }
    if (!op) {
      return Error("calls of functions (Loop, Scan bodies) are not supported by the package yet");
    }
    if (op->kind == ir::OpKind::kToVDevice) return LowerCopy(call, name);
    if (op->kind == ir::OpKind::kMatchCast) {
      // A cast that says no more than is known of its value is the value itself; one that
      // narrows (a symbolic dim to a number, a new symbol) needs a check at run time.
      const ir::StructInfo& have = call.args[0]->struct_info;
      if (KnowsNoMore(call.struct_info, have)) return LowerArg(call.args[0]);
      return Error("R.match_cast narrows " + ir::PrintStructInfo(have, &pl_.module) + " to " +
                   ir::PrintStructInfo(call.struct_info, &pl_.module) +
                   ": the package has no run-time shape check for it yet");
    }
    StepSpec step;
    step.kernel = op->name;
    step.source = source_;
    step.attrs = call.attrs;
    step.device = current_device_ = DeviceOf(call.struct_info);
    std::vector<std::vector<int>> arg_values;
    for (const ir::Expr& arg : call.args) {
      if (const auto* gv = ir::As<ir::GlobalVarNode>(arg)) {
        // A loop body: a module function becomes a subgraph of the package.
        Expected<int> graph = FunctionGraph(gv->name);
        if (!graph) return graph.error();
        step.subgraphs.push_back(*graph);
        step.input_arity.push_back(0);
        continue;
      }
      Expected<std::vector<int>> vals = LowerArg(arg);
      if (!vals) return vals;
      arg_values.push_back(*vals);
      step.inputs.insert(step.inputs.end(), vals->begin(), vals->end());
      step.input_arity.push_back(static_cast<int>(vals->size()));
    }
    bool builtin = op->kind == ir::OpKind::kWhileLoop || op->kind == ir::OpKind::kScan;
    if (builtin) step.kind = pkg::StepKind::Control;
    if (!builtin && !cpu::FindKernel(op->name)) {
      pl_.missing.push_back({op->name, source_.empty() ? name : source_});
    }
    if (!builtin) {
      // A kernel reads only values on its own device: a value made elsewhere (a shape or prim
      // value computed on the host, an If's result) gets a copy, one per value and device.
      for (int& v : step.inputs) {
        if (v >= 0) v = OnDevice(v, step.device);
      }
    }
    if (op->kind == ir::OpKind::kBatchNorm && call.struct_info->fields.size() == 3 &&
        arg_values.size() == 5) {
      // The kernel writes the normalized tensor; the tuple's mean and variance are the moving
      // statistics themselves (inference form; capability refuses training=True).
      Expected<std::vector<int>> out = ResultValues(call.struct_info->fields[0], name);
      if (!out) return out;
      step.outputs = *out;
      g_.steps.push_back(std::move(step));
      std::vector<int> all = *out;
      all.insert(all.end(), arg_values[3].begin(), arg_values[3].end());
      all.insert(all.end(), arg_values[4].begin(), arg_values[4].end());
      return all;
    }
    Expected<std::vector<int>> outs = ResultValues(call.struct_info, name);
    if (!outs) return outs;
    step.outputs = *outs;
    g_.steps.push_back(std::move(step));
    return outs;
  }

  // `want` (a match_cast's struct info) says nothing `have` does not: same dtype and rank, and
  // each dim the same number or the same symbol.
  static bool KnowsNoMore(const ir::StructInfo& want, const ir::StructInfo& have) {
    if (!want || !have || !want->IsTensor() || !have->IsTensor()) return false;
    if (want->dtype != ir::DataType::kVoid && want->dtype != have->dtype) return false;
    if (!want->shape) return want->ndim < 0 || want->ndim == have->ndim;
    if (!have->shape || have->shape->size() != want->shape->size()) return false;
    for (size_t i = 0; i < want->shape->size(); ++i) {
      const ir::PrimExpr& w = (*want->shape)[i];
      const ir::PrimExpr& h = (*have->shape)[i];
      std::optional<int64_t> wi = ir::AsInt(w), hi = ir::AsInt(h);
      if (w != h && !(wi && hi && *wi == *hi)) return false;
    }
    return true;
  }

  bool SamePhysicalDevice(int a, int b) const {
    const std::vector<ir::VDevice>& list = pl_.module.vdevices;
    return a == b || list.empty() ||
           list[static_cast<size_t>(a)].SamePhysicalDevice(list[static_cast<size_t>(b)]);
  }

  // Value v where a step on `device` can read it: v itself, or its copy on that device.
  int OnDevice(int v, int device) {
    if (SamePhysicalDevice(g_.values[v].device, device)) return v;
    auto it = copies_.find({v, device});
    if (it != copies_.end()) return it->second;
    return copies_[{v, device}] = AddCopy(v, device, source_);
  }

  // A `copy` step of value v into a new intermediate on `device`; returns the new value.
  int AddCopy(int v, int device, const std::string& source) {
    int copy = static_cast<int>(g_.values.size());
    g_.values.push_back(g_.values[v]);
    ValueSpec& value = g_.values[copy];
    value.kind = pkg::ValueKind::Intermediate;
    value.buffer = value.default_buffer = -1;
    value.device = device;
    StepSpec step;
    step.kernel = "copy";
    step.kind = pkg::StepKind::Copy;
    step.device = device;
    step.source = source;
    step.inputs = {v};
    step.input_arity = {1};
    step.outputs = {copy};
    g_.steps.push_back(std::move(step));
    return copy;
  }

  // The results of a call or If as new values (one per tuple field).
  Expected<std::vector<int>> ResultValues(const ir::StructInfo& s, const std::string& name) {
    std::vector<ir::StructInfo> results =
        s->kind == ir::StructInfoKind::kTuple ? s->fields : std::vector<ir::StructInfo>{s};
    std::vector<int> outs;
    for (size_t i = 0; i < results.size(); ++i) {
      std::string vname = results.size() == 1 ? name : name + "." + std::to_string(i);
      Expected<int> v = NewValue(vname, results[i], pkg::ValueKind::Intermediate);
      if (!v) return v.error();
      outs.push_back(*v);
    }
    return outs;
  }

  // An If becomes an `if` step: inputs (cond, captured...), one subgraph per branch taking the
  // captured values (the free variables of both branches) as inputs.
  Expected<std::vector<int>> LowerIf(const ir::IfNode& node, const std::string& name) {
    std::vector<ir::Var> captured = ir::FreeVars(*node.then_branch, {});
    for (const ir::Var& v : ir::FreeVars(*node.else_branch, captured)) captured.push_back(v);
    StepSpec step;
    step.kernel = "if";
    step.kind = pkg::StepKind::Control;
    step.source = source_;
    step.device = current_device_ = pl_.host;
    Expected<std::vector<int>> cond = LowerArg(node.cond);
    if (!cond) return cond;
    step.inputs = *cond;
    for (const ir::Var& v : captured) {
      Expected<std::vector<int>> vals = LowerArg(v);
      if (!vals) return vals;
      if (vals->size() != 1) return Error("a tuple captured by an If branch is not supported yet");
      step.inputs.push_back((*vals)[0]);
    }
    step.input_arity = {1, static_cast<int>(captured.size())};
    for (const ir::SeqExpr& branch : {node.then_branch, node.else_branch}) {
      spec_.graphs.emplace_back();
      GraphSpec& sub = spec_.graphs.back();
      sub.name = name + (branch == node.then_branch ? ".then" : ".else");
      int index = static_cast<int>(spec_.graphs.size()) - 1;
      GraphLowering lowering(pl_, sub);
      if (Status s = lowering.LowerBranch(*branch, captured); !s) return s.error();
      lowering.Finish();
      step.subgraphs.push_back(index);
    }
    Expected<std::vector<int>> outs = ResultValues(node.struct_info, name);
    if (!outs) return outs;
    step.outputs = *outs;
    g_.steps.push_back(std::move(step));
    return outs;
  }

  Expected<int> FunctionGraph(const std::string& fname) {
    auto it = pl_.function_graphs.find(fname);
    if (it != pl_.function_graphs.end()) return it->second;
    ir::Function f = pl_.module.Lookup(fname);
    if (!f) return Error("the module has no function '" + fname + "'");
    spec_.graphs.emplace_back();
    GraphSpec& sub = spec_.graphs.back();
    sub.name = fname;
    int index = static_cast<int>(spec_.graphs.size()) - 1;
    pl_.function_graphs[fname] = index;
    GraphLowering lowering(pl_, sub);
    if (Status s = lowering.LowerFunction(*f); !s) {
      Diagnostic d = s.error();
      d.message = "in function '" + fname + "': " + d.message;
      return d;
    }
    lowering.Finish();
    return index;
  }

 public:
  void Finish() {
    if (pl_.options.fuse_epilogues) FuseConvEpilogues(spec_.devices, spec_.buffers, g_);
    if (pl_.options.block_layout) BlockConvLayouts(spec_, g_, pl_.options.winograd_tile);
    if (pl_.options.fuse_elementwise) FuseElementwise(spec_.devices, g_);
    if (pl_.options.pack_weights && &g_ == &spec_.graphs.front()) {
      PackDerivedMatmulWeights(spec_.devices, g_);
    }
    if (pl_.options.plan_memory) {
      PlanMemory();
    } else {
      g_.arena_bytes.assign(spec_.devices.size(), 0);
    }
  }

 private:
  Expected<std::vector<int>> LowerShape(const ir::ShapeExprNode& shape) {
    bool all_static = true;
    std::vector<int64_t> ints;
    for (const ir::PrimExpr& d : shape.values) {
      std::optional<int64_t> i = ir::AsInt(d);
      all_static &= i.has_value();
      if (i) ints.push_back(*i);
    }
    if (all_static) {
      auto bytes = std::make_shared<std::vector<uint8_t>>(ints.size() * 8);
      if (!ints.empty()) std::memcpy(bytes->data(), ints.data(), bytes->size());
      return std::vector<int>{
          ConstantValue(ir::DataType::kInt64, {static_cast<int64_t>(ints.size())}, bytes)};
    }
    StepSpec step;
    step.kernel = "shape_expr";
    step.kind = pkg::StepKind::Control;
    step.source = source_;
    step.device = pl_.host;
    for (const ir::PrimExpr& d : shape.values) step.dims.push_back(Dim(d));
    int v = static_cast<int>(g_.values.size());
    ValueSpec value;
    value.kind = pkg::ValueKind::Intermediate;
    value.dtype = static_cast<int32_t>(ir::DataType::kInt64);
    value.rank = 1;
    value.dims = {Dim(ir::IntImm(static_cast<int64_t>(shape.values.size())))};
    value.byte_size = static_cast<int64_t>(8 * shape.values.size());
    value.device = pl_.host;
    g_.values.push_back(value);
    step.outputs = {v};
    g_.steps.push_back(std::move(step));
    return std::vector<int>{v};
  }

  Expected<std::vector<int>> LowerPrim(const ir::PrimValueNode& prim) {
    std::optional<int64_t> i = ir::AsInt(prim.value);
    int bits = ir::DataTypeBits(prim.dtype);
    if (i && (prim.dtype == ir::DataType::kInt64 || prim.dtype == ir::DataType::kInt32)) {
      auto bytes = std::make_shared<std::vector<uint8_t>>(bits / 8);
      if (bits == 64) {
        std::memcpy(bytes->data(), &*i, 8);
      } else {
        int32_t v32 = static_cast<int32_t>(*i);
        std::memcpy(bytes->data(), &v32, 4);
      }
      return std::vector<int>{ConstantValue(prim.dtype, {}, bytes)};
    }
    if (!prim.value) return Error("a prim value without a value");
    StepSpec step;
    step.kernel = "prim_value";
    step.kind = pkg::StepKind::Control;
    step.source = source_;
    step.device = pl_.host;
    step.dims = {Dim(prim.value)};
    int v = static_cast<int>(g_.values.size());
    ValueSpec value;
    value.kind = pkg::ValueKind::Intermediate;
    value.dtype = static_cast<int32_t>(prim.dtype);
    value.rank = 0;
    value.byte_size = bits / 8;
    value.device = pl_.host;
    g_.values.push_back(value);
    step.outputs = {v};
    g_.steps.push_back(std::move(step));
    return std::vector<int>{v};
  }

  int ConstantValue(ir::DataType dtype, const std::vector<int64_t>& shape,
                    std::shared_ptr<const std::vector<uint8_t>> bytes) {
    int v = static_cast<int>(g_.values.size());
    ValueSpec value;
    value.kind = pkg::ValueKind::Constant;
    value.dtype = static_cast<int32_t>(dtype);
    value.rank = static_cast<int>(shape.size());
    for (int64_t d : shape) value.dims.push_back(Dim(ir::IntImm(d)));
    value.buffer = static_cast<int>(spec_.buffers.size());
    value.device = current_device_;  // the device of the step being lowered, which reads it
    spec_.buffers.push_back(std::move(bytes));
    g_.values.push_back(value);
    return v;
  }

  int AddBuffer(const ir::ConstantNode& c) {
    spec_.buffers.push_back(c.data ? c.data : std::make_shared<const std::vector<uint8_t>>());
    return static_cast<int>(spec_.buffers.size()) - 1;
  }

  // A new value typed from struct info: tensors as they are, shapes as int64 [n], prims as
  // 0-d tensors.
  Expected<int> NewValue(const std::string& name, const ir::StructInfo& s, pkg::ValueKind kind) {
    ValueSpec v;
    v.name = name;
    v.kind = kind;
    switch (s->kind) {
      case ir::StructInfoKind::kTensor:
        v.dtype = static_cast<int32_t>(s->dtype);
        if (s->shape) {
          v.rank = static_cast<int>(s->shape->size());
          for (const ir::PrimExpr& d : *s->shape) v.dims.push_back(Dim(d));
        } else if (s->ndim >= 0) {
          v.rank = s->ndim;
          for (int i = 0; i < s->ndim; ++i) v.dims.push_back(FreshDim(name, i));
        }
        break;
      case ir::StructInfoKind::kShape:
        v.dtype = static_cast<int32_t>(ir::DataType::kInt64);
        v.rank = 1;
        v.dims = {s->ndim >= 0 ? Dim(ir::IntImm(s->ndim)) : FreshDim(name, 0)};
        break;
      case ir::StructInfoKind::kPrim:
        v.dtype = static_cast<int32_t>(s->dtype);
        v.rank = 0;
        break;
      default:
        return Error("value '" + name + "' of type " + ir::Describe(s) +
                     " cannot be stored in a package");
    }
    if (v.dtype == static_cast<int32_t>(ir::DataType::kString)) {
      return Error("value '" + name + "' is a string tensor (string ops are not supported)");
    }
    for (int d : v.dims) {
      if (g_.dims[static_cast<size_t>(d)].kind == pkg::DimKind::Int &&
          g_.dims[static_cast<size_t>(d)].value < 0) {
        return Error("value '" + name + "' has a negative dim (" + ir::Describe(s) + ")");
      }
    }
    v.byte_size = StaticBytes(v);
    if (v.byte_size == kTooLarge) {
      return Error("value '" + name + "' (" + ir::Describe(s) +
                   ") holds more than 2^50 elements, " + "more than the runtime takes");
    }
    v.device = s->IsTensor() && s->vdevice ? DeviceOf(s) : current_device_;
    g_.values.push_back(std::move(v));
    return static_cast<int>(g_.values.size()) - 1;
  }

  // The bytes of a value of static shape; -1 for one of symbolic shape, kTooLarge past the
  // runtime's limit of 2^50 elements (runtime/src/package.cc).
  static constexpr int64_t kTooLarge = -2;
  int64_t StaticBytes(const ValueSpec& v) const {
    if (v.rank < 0 || v.dtype == 0) return -1;
    int64_t n = 1;
    bool large = false;
    for (int d : v.dims) {
      int64_t e = g_.dims[static_cast<size_t>(d)].value;
      if (g_.dims[static_cast<size_t>(d)].kind != pkg::DimKind::Int) return -1;
      if (e != 0 && n > (int64_t{1} << 50) / e) large = true;
      n = large ? 1 : n * e;
      if (e == 0) return 0;
    }
    if (large) return kTooLarge;
    return (n * ir::DataTypeBits(static_cast<ir::DataType>(v.dtype)) + 7) / 8;
  }

  // A symbol of its own for a dim the compiler does not know (the kernel's result binds it).
  int FreshDim(const std::string& name, int i) {
    g_.symbols.push_back(name + "_d" + std::to_string(i));
    g_.dims.push_back({pkg::DimKind::Sym, static_cast<int>(g_.symbols.size()) - 1, 0, 0});
    return static_cast<int>(g_.dims.size()) - 1;
  }

  int Dim(const ir::PrimExpr& e) {
    if (!e) return FreshDim("unknown", static_cast<int>(g_.dims.size()));
    if (e->kind == ir::PrimKind::kInt) {
      auto it = int_dims_.find(e->value);
      if (it != int_dims_.end()) return it->second;
      g_.dims.push_back({pkg::DimKind::Int, 0, 0, e->value});
      return int_dims_[e->value] = static_cast<int>(g_.dims.size()) - 1;
    }
    auto it = dims_.find(e.get());
    if (it != dims_.end()) return it->second;
    DimSpec d;
    if (e->kind == ir::PrimKind::kVar) {
      d.kind = pkg::DimKind::Sym;
      g_.symbols.push_back(e->name);
      d.a = static_cast<int>(g_.symbols.size()) - 1;
    } else {
      d.a = Dim(e->a);
      d.b = Dim(e->b);
      switch (e->kind) {
        case ir::PrimKind::kAdd:
          d.kind = pkg::DimKind::Add;
          break;
        case ir::PrimKind::kSub:
          d.kind = pkg::DimKind::Sub;
          break;
        case ir::PrimKind::kMul:
          d.kind = pkg::DimKind::Mul;
          break;
        case ir::PrimKind::kFloorDiv:
          d.kind = pkg::DimKind::FloorDiv;
          break;
        case ir::PrimKind::kFloorMod:
          d.kind = pkg::DimKind::FloorMod;
          break;
        case ir::PrimKind::kMin:
          d.kind = pkg::DimKind::Min;
          break;
        case ir::PrimKind::kMax:
          d.kind = pkg::DimKind::Max;
          break;
        case ir::PrimKind::kInt:
        case ir::PrimKind::kVar:
          break;
      }
    }
    g_.dims.push_back(d);
    return dims_[e.get()] = static_cast<int>(g_.dims.size()) - 1;
  }

 private:
  PackageLowering& pl_;
  PackageSpec& spec_;
  GraphSpec& g_;
  std::string source_;
  std::map<const ir::VarNode*, std::vector<int>> vars_;
  std::map<const ir::VarNode*, std::vector<ir::Expr>> tuple_fields_;
  std::map<const ir::VarNode*, ir::Expr> const_vars_;
  std::map<std::pair<const ir::ConstantNode*, int>, int> constants_;
  std::map<std::pair<int, int>, int> copies_;  // (value, device) -> its copy there
  std::map<const ir::ConstantNode*, int> buffers_;
  int current_device_;
  std::map<const ir::PrimExprNode*, int> dims_;
  std::map<int64_t, int> int_dims_;
};

}  // namespace

Expected<PackageSpec> Lower(const ir::IRModule& module, const LowerOptions& options) {
  ir::Function main = module.Lookup("main");
  if (!main) return Error("the module has no function 'main'");
  PackageSpec spec;
  // The package's devices are the module's vdevices (the CPU alone when it has none); values
  // the module leaves unplaced go to the host, the last CPU entry.
  PackageLowering pl{module, spec, options, {}, 0, {}};
  for (const ir::VDevice& d : module.vdevices) {
    spec.devices.push_back(
        {d.target.ToString(), d.target.DeviceType(), d.vdevice_id, false, d.memory_scope});
  }
  if (spec.devices.empty()) spec.devices.push_back({"llvm", "cpu", 0});
  pl.host = std::max(passes::HostVDevice(module.vdevices), 0);
  spec.graphs.emplace_back();
  GraphSpec& g = spec.graphs.front();
  g.name = "main";
  GraphLowering lowering(pl, g);
  if (Status s = lowering.LowerFunction(*main); !s) return s.error();
  if (!pl.missing.empty()) {
    std::string msg = "no CPU kernel yet for " + std::to_string(pl.missing.size()) + " op(s):";
    for (const auto& m : pl.missing) msg += "\n  " + m.op + " (node '" + m.where + "')";
    return Error(msg);
  }
  lowering.Finish();
  if (options.flush_subnormal_weights) FlushSubnormalWeights(spec);
  if (options.pack_weights) PackMatmulWeights(spec);
  // Code for the devices that run generated code.
  QUILT_TRY(EmitOpenClCode(spec));
  return spec;
}

}  // namespace quilt::compiler
