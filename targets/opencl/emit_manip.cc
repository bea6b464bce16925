// OpenCL kernels that move elements without arithmetic: permute_dims, concat, split,
// strided_slice, take, pad and gather_nd. One work-item per output element (split: per input
// element, each written to its part), coordinates from the flat index through dims passed as longs,
// so symbolic shapes work; the semantics are targets/cpu/kernels/manip.cc's and index.cc's.
#include <algorithm>
#include <string>
#include <vector>

#include "targets/opencl/emit_util.h"

namespace quilt::compiler::opencl {
namespace {

// The (outer, axis, inner) view of dims around `axis`: passes "inner" and returns the body's
// start, declaring t (the work-item), w (the inner coordinate), ca (the axis coordinate) and o
// (the outer one) for an axis of length `len` (a long the kernel has).
std::string AxisView(const std::string& len) {
  return "  long w = t % inner, ca = t / inner % " + len + ", o = t / inner / " + len + ";\n";
}

std::string Grid(const std::string& n) {
  return "  long t = get_global_id(0);\n  if (t >= " + n + ") return;\n";
}

}  // namespace

Status EmitPermute(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& out = k.Out().dims;
  size_t rank = out.size();
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  if (const auto* axes = step.attrs.Get<std::vector<int64_t>>("axes")) {
    if (axes->size() != rank) return Error(Where(step) + ": axes do not match the rank");
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < rank; ++i) {
      int64_t a = (*axes)[i];
      QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(rank), &a));
      if (seen[static_cast<size_t>(a)]) return Error(Where(step) + ": an axis appears twice");
      seen[static_cast<size_t>(a)] = true;
      perm[i] = a;
    }
  }
  k.Long("n", Product(g, out, 0));
  PassDims(k, "", out);
  PassDims(k, "i", k.In(0).dims);
  std::string index;
  for (size_t j = 0; j < rank; ++j) {
    index += (j ? " + " : "") + ("c" + std::to_string(j) + " * si" + std::to_string(perm[j]));
  }
  std::string body = Grid("n") + Unravel("t", "", rank) + Strides("i", rank);
  body += "  y[t] = x0[" + (index.empty() ? std::string("0") : index) + "];\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

Status EmitConcat(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& out = k.Out().dims;
  const int64_t* axis_attr = step.attrs.Get<int64_t>("axis");
  int64_t axis = axis_attr ? *axis_attr : 0;
  QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(out.size()), &axis));
  size_t a = static_cast<size_t>(axis);
  // A 2-D grid: the elements after the axis by (the axes up to it).
  k.Long("inner", Product(g, out, a + 1));
  k.Long("rows", Product(g, std::vector<int>(out.begin(), out.begin() + axis + 1), 0));
  k.Long("L", out[a]);
  std::string body = R"(  long w = get_global_id(0), r = get_global_id(1);
  if (w >= inner || r >= rows) return;
  long ca = r % L, o = r / L, t = r * inner + w;
)";
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    std::string is = std::to_string(i);
    k.Long("a" + is, k.In(i).dims[a]);
    body += "  if (ca < a" + is + ") {\n    y[t] = x" + is + "[(o * a" + is +
            " + ca) * inner + w];\n    return;\n  }\n  ca -= a" + is + ";\n";
  }
  k.Finish(name, body, std::vector<int64_t>{kLocalSize, 1}, code);
  return {};
}

Status EmitSplit(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& in = k.In(0).dims;
  const int64_t* axis_attr = step.attrs.Get<int64_t>("axis");
  int64_t axis = axis_attr ? *axis_attr : 0;
  QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(in.size()), &axis));
  size_t a = static_cast<size_t>(axis);
  k.Long("n", Product(g, in, 0));
  k.Long("inner", Product(g, in, a + 1));
  k.Long("L", in[a]);
  std::string body = Grid("n") + AxisView("L");
  for (size_t p = 0; p < step.outputs.size(); ++p) {
    std::string ps = std::to_string(p), y = p == 0 ? "y" : "y" + ps;
    k.Long("a" + ps, k.Out(p).dims[a]);
    body += "  if (ca < a" + ps + ") {\n    " + y + "[(o * a" + ps +
            " + ca) * inner + w] = x0[t];\n    return;\n  }\n  ca -= a" + ps + ";\n";
  }
  k.Finish(name, body, kLocalSize, code);
  return {};
}

Status EmitSlice(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& in = k.In(0).dims;
  size_t rank = in.size();
  const auto* axes = step.attrs.Get<std::vector<int64_t>>("axes");
  const auto* begin = step.attrs.Get<std::vector<int64_t>>("begin");
  const auto* end = step.attrs.Get<std::vector<int64_t>>("end");
  const auto* strides = step.attrs.Get<std::vector<int64_t>>("strides");
  if (!axes || !begin || !end || !strides || begin->size() != axes->size() ||
      end->size() != axes->size() || strides->size() != axes->size()) {
    return Error(Where(step) + ": begin, end and strides must hold one value per axis");
  }
  std::vector<int64_t> first(rank, 0), step_of(rank, 1);
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t a = (*axes)[i];
    QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(rank), &a));
    std::optional<int64_t> dim = StaticDim(g, in[static_cast<size_t>(a)]);
    int64_t s = (*strides)[i];
    if (!dim) return Error(Where(step) + ": slices an axis whose size only the run knows");
    if (s == 0) return Error(Where(step) + ": a slice step of zero");
    // The first index as targets/cpu/kernels/manip.cc's SliceAxis clamps it.
    int64_t b = (*begin)[i];
    if (*dim > 0) {
      if (b < 0) b += *dim;
      b = s > 0 ? std::clamp<int64_t>(b, 0, *dim) : std::clamp<int64_t>(b, 0, *dim - 1);
    } else {
      b = 0;
    }
    first[static_cast<size_t>(a)] = b;
    step_of[static_cast<size_t>(a)] = s;
  }
  const std::vector<int>& out = k.Out().dims;
  k.Long("n", Product(g, out, 0));
  PassDims(k, "", out);
  PassDims(k, "i", in);
  std::string index;
  for (size_t j = 0; j < rank; ++j) {
    std::string js = std::to_string(j);
    index += (j ? " + " : "") +
             ("(" + Int(first[j]) + " + c" + js + " * " + Int(step_of[j]) + ") * si" + js);
  }
  std::string body = Grid("n") + Unravel("t", "", rank) + Strides("i", rank);
  body += "  y[t] = x0[" + (index.empty() ? std::string("0") : index) + "];\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// take: indices are read as longs; "wrap" and "clip" as the CPU kernel computes them; otherwise
// ("fast") a negative index counts from the end and one outside [-N, N) fails the run as the CPU
// kernel fails (the kernel checks: KernelText::Checked).
Status EmitTake(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& x = k.In(0).dims;
  const int64_t* axis_attr = step.attrs.Get<int64_t>("axis");
  int64_t axis = axis_attr ? *axis_attr : 0;
  QUILT_TRY(NormalizeAxis(step, static_cast<int64_t>(x.size()), &axis));
  size_t a = static_cast<size_t>(axis);
  const std::string* mode = step.attrs.Get<std::string>("mode");
  bool wrap = mode && *mode == "wrap", clip = mode && *mode == "clip";
  k.Long("total", Product(g, k.Out().dims, 0));
  k.Long("inner", Product(g, x, a + 1));
  k.Long("m", Product(g, k.In(1).dims, 0));
  k.Long("N", x[a]);
  std::string body = Grid("total") + AxisView("m");
  body += "  long j = (long)x1[ca];\n";
  if (wrap) {
    body += "  j = N > 0 ? ((j % N) + N) % N : 0;\n";
  } else if (clip) {
    body += "  j = clamp(j, 0L, N > 0 ? N - 1 : 0L);\n";
  } else {
    k.Checked();
    body += BadIndex("j", "N", "y[t] = 0") + "  if (j < 0) j += N;\n";
  }
  body += "  y[t] = N > 0 ? x0[(o * N + j) * inner + w] : 0;\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// nn.pad: each output element reads its source (constant: the pad value outside the data).
Status EmitPad(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& in = k.In(0).dims;
  size_t rank = in.size();
  std::vector<int64_t> width = Ints(step.attrs, "pad_width", 2 * rank, 0);
  const std::string* mode_attr = step.attrs.Get<std::string>("pad_mode");
  std::string mode = mode_attr ? *mode_attr : "constant";
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    return Error(Where(step) + ": pad mode '" + mode + "'");
  }
  const std::vector<int>& out = k.Out().dims;
  if (mode != "constant") k.Checked();
  k.Long("n", Product(g, out, 0));
  PassDims(k, "", out);
  PassDims(k, "i", in);
  std::string body = Grid("n") + Unravel("t", "", rank) + Strides("i", rank) + "  long at = 0;\n";
  for (size_t j = 0; j < rank; ++j) {
    std::string js = std::to_string(j), p = "e" + js, d = "di" + js;
    body += "  long " + p + " = c" + js + " - " + Int(width[2 * j]) + ";\n";
    if (mode == "constant") {
      body += "  if (" + p + " < 0 || " + p + " >= " + d + ") {\n    y[t] = x1[0];\n    return;\n" +
              "  }\n";
    } else if (mode == "edge") {
      // An empty axis fails the run, as on the CPU (the kernel checks).
      body += EmptyAxis(d, "y[t] = 0");
      body += "  " + p + " = clamp(" + p + ", 0L, " + d + " - 1);\n";
    } else if (mode == "wrap") {
      body += EmptyAxis(d, "y[t] = 0");
      body += "  " + p + " = ((" + p + " % " + d + ") + " + d + ") % " + d + ";\n";
    } else {
      // reflect: mirror without repeating the edge, period 2 (n - 1).
      body += EmptyAxis(d, "y[t] = 0");
      body += "  if (" + d + " == 1) " + p + " = 0;\n  else if (" + p + " < 0 || " + p +
              " >= " + d + ") {\n    long per = 2 * (" + d + " - 1);\n    " + p + " = ((" + p +
              " % per) + per) % per;\n    if (" + p + " >= " + d + ") " + p + " = per - " + p +
              ";\n  }\n";
    }
    body += "  at += " + p + " * si" + js + ";\n";
  }
  body += "  y[t] = x0[at];\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

// gather_nd: each output element reads the data's slice that its index tuple (the indices' last
// dim, k of them, static) selects within its batch; indices count from the end when negative, and
// one outside [-n, n) fails the run as the CPU kernel fails (the kernel checks).
Status EmitGatherNd(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code) {
  KernelText k(g, step);
  const std::vector<int>& x = k.In(0).dims;
  const std::vector<int>& ind = k.In(1).dims;
  const int64_t* b_attr = step.attrs.Get<int64_t>("batch_dims");
  int64_t b = b_attr ? *b_attr : 0;
  std::optional<int64_t> kk = ind.empty() ? std::nullopt : StaticDim(g, ind.back());
  if (!kk || *kk < 1 || b < 0 || b + *kk > static_cast<int64_t>(x.size()) ||
      b >= static_cast<int64_t>(ind.size())) {
    return Error(Where(step) + ": the index tuples must have a static length that fits the data");
  }
  size_t bs = static_cast<size_t>(b), ks = static_cast<size_t>(*kk);
  std::vector<int> x_batch(x.begin(), x.begin() + static_cast<long>(bs));
  std::vector<int> tuples(ind.begin() + static_cast<long>(bs), ind.end() - 1);
  k.Long("total", Product(g, k.Out().dims, 0));
  k.Long("slice", Product(g, x, bs + ks));
  k.Long("per_batch", Product(g, tuples, 0));
  k.Long("batch_size", Product(g, x, bs));
  std::string body = R"(  long t = get_global_id(0);
  if (t >= total) return;
  long w = t % slice, tt = t / slice, at = tt / per_batch * batch_size + w;
)";
  k.Checked();
  for (size_t j = 0; j < ks; ++j) {
    std::string js = std::to_string(j), v = "v" + js;
    k.Long("n" + js, x[bs + j]);
    k.Long("s" + js, Product(g, x, bs + j + 1));
    body += "  long " + v + " = (long)x1[tt * " + Int(*kk) + " + " + js + "];\n" +
            BadIndex(v, "n" + js, "y[t] = 0") + "  if (" + v + " < 0) " + v + " += n" + js +
            ";\n  at += " + v + " * s" + js + ";\n";
  }
  body += "  y[t] = x0[at];\n";
  k.Finish(name, body, kLocalSize, code);
  return {};
}

}  // namespace quilt::compiler::opencl
