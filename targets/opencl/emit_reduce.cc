// OpenCL kernels of the reductions and the normalizations: one work-item per group of elements
// that reduce together (an output element of a reduction, a row of a layer norm).
//  1. The input is seen as row-major axes, each kept or reduced (group norm splits its channel
//     axis in two: the group, kept, and the channels in it, reduced).
//  2. A work-item finds its group's kept coordinates from its id, and visits the group's
//     elements by counting through the reduced coordinates (any axes, symbolic dims).
//  3. Reductions accumulate as targets/cpu/kernels/reduce.cc does (NaN wins in max / min;
//     log-sum-exp shifts by the maximum), in float; norms take two passes (mean, then the biased
//     variance), as targets/cpu/kernels/nn_norm.cc does, and read their parameters through
//     per-axis strides (0 where a parameter broadcasts).
#include <string>
#include <vector>

#include "targets/opencl/emit_util.h"

namespace quilt::compiler::opencl {
namespace {

struct GroupLayout {
  std::vector<int> dims;      // the input's axes (dim nodes)
  std::vector<bool> reduced;  // per axis
  // Per parameter, per axis: the parameter's stride along it (a dim node), or -1 for 0.
  std::vector<std::vector<int>> param_strides;
};

// Passes the group count (the grid), the axes and the parameter strides; declares `g` (the
// group), the strides `s<j>`, the kept coordinates `c<j>`, `base` (the group's first element)
// and `cnt` (its elements).
std::string GroupPrologue(KernelText& k, GraphSpec& g, const GroupLayout& l) {
  std::vector<int> kept;
  for (size_t j = 0; j < l.dims.size(); ++j) {
    if (!l.reduced[j]) kept.push_back(l.dims[j]);
  }
  k.Long("groups", Product(g, kept, 0));
  PassDims(k, "", l.dims);
  for (size_t p = 0; p < l.param_strides.size(); ++p) {
    for (size_t j = 0; j < l.dims.size(); ++j) {
      int s = l.param_strides[p][j];
      if (s >= 0) k.Long("ps" + std::to_string(p) + "_" + std::to_string(j), s);
    }
  }
  size_t rank = l.dims.size();
  std::string s = "  long g = get_global_id(0);\n  if (g >= groups) return;\n";
  s += Strides("", rank) + "  long rg = g, base = 0, cnt = 1;\n";
  for (size_t j = rank; j-- > 0;) {
    std::string js = std::to_string(j);
    if (l.reduced[j]) {
      s += "  cnt *= d" + js + ";\n";
      continue;
    }
    s += "  long c" + js + " = rg % d" + js + ";\n  rg /= d" + js + ";\n  base += c" + js + " * s" +
         js + ";\n";
  }
  return s;
}

// A loop over the group's elements running `body` with `at` (the element's index) and `pi<p>`
// (parameter p's index) declared.
std::string GroupLoop(const GroupLayout& l, const std::string& body) {
  size_t rank = l.dims.size();
  std::string s = "  for (long q = 0; q < cnt; ++q) {\n    long rq = q, at = base;\n";
  for (size_t j = rank; j-- > 0;) {
    if (!l.reduced[j]) continue;
    std::string js = std::to_string(j);
    s += "    long c" + js + " = rq % d" + js + ";\n    rq /= d" + js + ";\n    at += c" + js +
         " * s" + js + ";\n";
  }
  for (size_t p = 0; p < l.param_strides.size(); ++p) {
    std::string ps = std::to_string(p), index;
    for (size_t j = 0; j < rank; ++j) {
      if (l.param_strides[p][j] < 0) continue;
      std::string js = std::to_string(j);
      index += (index.empty() ? "" : " + ") + ("c" + js + " * ps" + ps + "_" + js);
    }
    s += "    long pi" + ps + " = " + (index.empty() ? "0" : index) + ";\n";
  }
  return s + body + "  }\n";
}

// The axes marked by int list attribute `name` (each once, in range); all of them when absent
// and `all_when_absent`.
Status MarkAxes(const StepSpec& step, const char* name, size_t rank, bool all_when_absent,
                std::vector<bool>* reduced) {
  const auto* axes = step.attrs.Get<std::vector<int64_t>>(name);
  reduced->assign(rank, !axes && all_when_absent);
  if (!axes) return {};
  for (int64_t a : *axes) {
    QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(rank), &a));
    if ((*reduced)[static_cast<size_t>(a)]) return Error(Where(step) + ": an axis appears twice");
    (*reduced)[static_cast<size_t>(a)] = true;
  }
  return {};
}

// The strides of a parameter of dims `p` broadcast (numpy, from the right) to `dims`.
Status BroadcastStrides(GraphSpec& g, const StepSpec& step, const std::vector<int>& p,
                        const std::vector<int>& dims, std::vector<int>* strides) {
  if (p.size() > dims.size()) return Error(Where(step) + ": a parameter of higher rank");
  size_t lead = dims.size() - p.size();
  strides->assign(dims.size(), -1);
  for (size_t j = lead; j < dims.size(); ++j) {
    int d = p[j - lead];
    if (IsOne(g, d) && !IsOne(g, dims[j])) continue;
    if (!SameDim(g, d, dims[j]) && !IsOne(g, d)) {
      return Error(Where(step) + ": a parameter broadcasts in a way only the run decides");
    }
    (*strides)[j] = Product(g, p, j - lead + 1);
  }
  return {};
}

}  // namespace

Status EmitReduce(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  GroupLayout l;
  l.dims = k.In(0).dims;
  QUILT_TRY(MarkAxes(step, "axis", l.dims.size(), true, &l.reduced));
  std::string body = GroupPrologue(k, g, l);
  const std::string& op = step.kernel;
  std::string init = "0.0f", add = "acc += v;", result = "acc";
  if (op == "max" || op == "min") {
    init = op == "max" ? "-INFINITY" : "INFINITY";
    add = std::string("if (isnan(v) || isnan(acc)) acc = NAN; else if (v ") +
          (op == "max" ? ">" : "<") + " acc) acc = v;";
  } else if (op == "prod") {
    init = "1.0f";
    add = "acc *= v;";
  } else if (op == "mean") {
    result = "acc / (float)cnt";
  } else if (op == "reduce_l1") {
    add = "acc += fabs(v);";
  } else if (op == "reduce_l2" || op == "reduce_sum_square") {
    add = "acc += v * v;";
    if (op == "reduce_l2") result = "sqrt(acc)";
  } else if (op == "reduce_log_sum") {
    result = "log(acc)";
  } else if (op == "reduce_log_sum_exp") {
    // Shifted by the maximum (NaN sticks), so exp never overflows.
    body += "  float sh = -INFINITY;\n" +
            GroupLoop(l, "    float v = " + k.Read(0, "at") +
                             ";\n"
                             "    if (isnan(v) || v > sh) sh = isnan(sh) ? sh : v;\n");
    add = "if (isfinite(sh)) acc += exp(v - sh);";
    result = "isfinite(sh) ? sh + log(acc) : sh";
  } else if (op != "sum") {
    return Error(Where(step) + ": no OpenCL reduction for this op");
  }
  body += "  float acc = " + init + ";\n" +
          GroupLoop(l, "    float v = " + k.Read(0, "at") + ";\n    " + add + "\n");
  body += "  " + k.Write(0, "g", result) + ";\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

Status EmitNorm(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::string& op = step.kernel;
  const std::vector<int>& dims = k.In(0).dims;
  size_t rank = dims.size();
  GroupLayout l;
  l.dims = dims;
  const double* eps_attr = step.attrs.Get<double>("epsilon");
  double eps = eps_attr ? *eps_attr : (op == "nn.mean_variance_norm" ? 1e-9 : 1e-5);
  std::string finish;  // per element, with mean `m` and 1 / sqrt(var + eps) `inv`
  if (op == "nn.layer_norm" || op == "nn.rms_norm" || op == "nn.layer_norm_stats" ||
      op == "nn.mean_variance_norm") {
    QUILT_TRY(MarkAxes(step, "axes", rank, false, &l.reduced));
    size_t params = op == "nn.layer_norm" ? 2 : op == "nn.rms_norm" ? 1 : 0;
    l.param_strides.resize(params);
    for (size_t p = 0; p < params; ++p) {
      QUILT_TRY(BroadcastStrides(g, step, k.In(1 + p).dims, dims, &l.param_strides[p]));
    }
  } else if (op == "nn.instance_norm" || op == "nn.group_norm") {
    const int64_t* axis_attr = step.attrs.Get<int64_t>("channel_axis");
    int64_t axis = axis_attr ? *axis_attr : 1;
    QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(rank), &axis));
    size_t c = static_cast<size_t>(axis);
    if (step.attrs.Get<std::vector<int64_t>>("axes")) {
      QUILT_TRY(MarkAxes(step, "axes", rank, false, &l.reduced));
    } else {
      l.reduced.assign(rank, true);
      l.reduced[0] = false;
      l.reduced[c] = false;
    }
    std::vector<int> channel(rank, -1);
    channel[c] = IntDim(g, 1);
    l.param_strides = {channel, channel};
    if (op == "nn.group_norm") {
      // The channel axis as (groups, channels per group): the group kept, the rest reduced.
      const int64_t* groups_attr = step.attrs.Get<int64_t>("num_groups");
      std::optional<int64_t> channels = StaticDim(g, dims[c]);
      int64_t groups = groups_attr ? *groups_attr : 1;
      if (!channels || groups < 1 || *channels % groups != 0) {
        return Error(Where(step) + ": group norm needs a static channel count num_groups divides");
      }
      int per = IntDim(g, *channels / groups);
      l.dims.insert(l.dims.begin() + axis + 1, per);
      l.dims[c] = IntDim(g, groups);
      l.reduced.insert(l.reduced.begin() + axis + 1, true);
      l.reduced[c] = false;
      std::vector<int> split(rank + 1, -1);
      split[c] = per;
      split[c + 1] = IntDim(g, 1);
      l.param_strides = {split, split};
    }
  } else {
    return Error(Where(step) + ": no OpenCL normalization for this op");
  }
  std::string body = GroupPrologue(k, g, l);
  if (op == "nn.rms_norm") {
    body += "  float ss = 0.0f;\n" +
            GroupLoop(l, "    float v = " + k.Read(0, "at") + ";\n    ss += v * v;\n");
    body += "  float inv = 1.0f / sqrt(ss / (float)cnt + " + FloatLiteral(eps) + ");\n";
    body += GroupLoop(
        l, "    " + k.Write(0, "at", k.Read(0, "at") + " * inv * " + k.Read(1, "pi0")) + ";\n");
    k.Finish(name, body, kLocalSize, code);
    return {};
  }
  body += "  float m = 0.0f;\n" + GroupLoop(l, "    m += " + k.Read(0, "at") + ";\n");
  body += "  if (cnt > 0) m /= (float)cnt;\n  float var = 0.0f;\n";
  body += GroupLoop(l, "    float dv = " + k.Read(0, "at") + " - m;\n    var += dv * dv;\n");
  body += "  if (cnt > 0) var /= (float)cnt;\n";
  if (op == "nn.layer_norm_stats") {
    body += "  " + k.Write(0, "g", "m") + ";\n  " +
            k.Write(1, "g", "1.0f / sqrt(var + " + FloatLiteral(eps) + ")") + ";\n";
  } else if (op == "nn.mean_variance_norm") {
    body += "  float den = sqrt(var) + " + FloatLiteral(eps) + ";\n";
    body += GroupLoop(l, "    " + k.Write(0, "at", "(" + k.Read(0, "at") + " - m) / den") + ";\n");
  } else {
    body += "  float inv = 1.0f / sqrt(var + " + FloatLiteral(eps) + ");\n";
    body += GroupLoop(l, "    " +
                             k.Write(0, "at",
                                     "(" + k.Read(0, "at") + " - m) * inv * " + k.Read(1, "pi0") +
                                         " + " + k.Read(2, "pi1")) +
                             ";\n");
  }
  k.Finish(name, body, kLocalSize, code);
  return {};
}

}  // namespace quilt::compiler::opencl
