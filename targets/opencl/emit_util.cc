#include "targets/opencl/emit_util.h"

#include <cstdio>
#include <limits>

#include "targets/opencl/elementwise.h"
#include "targets/opencl/ops.h"

namespace quilt::compiler::opencl {

bool SameDim(const GraphSpec& g, int a, int b) {
  if (a == b) return true;
  const DimSpec& x = g.dims[static_cast<size_t>(a)];
  const DimSpec& y = g.dims[static_cast<size_t>(b)];
  if (x.kind != y.kind) return false;
  switch (x.kind) {
    case pkg::DimKind::Int:
      return x.value == y.value;
    case pkg::DimKind::Sym:
      return x.a == y.a;
    default:
      return SameDim(g, x.a, y.a) && SameDim(g, x.b, y.b);
  }
}

bool IsOne(const GraphSpec& g, int d) {
  const DimSpec& x = g.dims[static_cast<size_t>(d)];
  return x.kind == pkg::DimKind::Int && x.value == 1;
}

int IntDim(GraphSpec& g, int64_t v) {
  g.dims.push_back({pkg::DimKind::Int, 0, 0, v});
  return static_cast<int>(g.dims.size()) - 1;
}

int AddDim(GraphSpec& g, int a, int b) {
  g.dims.push_back({pkg::DimKind::Add, a, b, 0});
  return static_cast<int>(g.dims.size()) - 1;
}

int MulDim(GraphSpec& g, int a, int b) {
  if (IsOne(g, a)) return b;
  if (IsOne(g, b)) return a;
  g.dims.push_back({pkg::DimKind::Mul, a, b, 0});
  return static_cast<int>(g.dims.size()) - 1;
}

int CeilDiv(GraphSpec& g, int d, int64_t q) {
  int sum = AddDim(g, d, IntDim(g, q - 1));
  g.dims.push_back({pkg::DimKind::FloorDiv, sum, IntDim(g, q), 0});
  return static_cast<int>(g.dims.size()) - 1;
}

int Product(GraphSpec& g, const std::vector<int>& dims, size_t begin) {
  int p = -1;
  for (size_t i = begin; i < dims.size(); ++i) p = p < 0 ? dims[i] : MulDim(g, p, dims[i]);
  return p < 0 ? IntDim(g, 1) : p;
}

std::optional<int64_t> StaticDim(const GraphSpec& g, int d) {
  const DimSpec& x = g.dims[static_cast<size_t>(d)];
  if (x.kind != pkg::DimKind::Int) return std::nullopt;
  return x.value;
}

std::string NodeName(const StepSpec& step) {
  return "node '" + (step.source.empty() ? std::string("?") : step.source) + "'";
}

std::string Where(const StepSpec& step) { return "R." + step.kernel + " (" + NodeName(step) + ")"; }

std::string GroupPerRow(KernelText& k, GraphSpec& g, int rows) {
  k.Long("items", MulDim(g, rows, IntDim(g, kLocalSize)));
  k.Long("rows", rows);
  return "  long r = get_group_id(0);\n  int l = (int)get_local_id(0);\n  __local float part[" +
         Int(kLocalSize) + "];\n  if (r >= rows) return;\n";
}

std::string GroupLoop(const std::string& n) {
  return "  for (long j = l; j < " + n + "; j += " + Int(kLocalSize) + ")";
}

std::string GroupReduce(const std::string& acc, bool max) {
  std::string both = max ? "fmax(part[l], part[l + s])" : "part[l] + part[l + s]";
  return "  part[l] = " + acc +
         ";\n  barrier(CLK_LOCAL_MEM_FENCE);\n  for (int s = " + std::to_string(kLocalSize / 2) +
         "; s > 0; s >>= 1) {\n    if (l < s) part[l] = " + both +
         ";\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n  " + acc +
         " = part[0];\n  barrier(CLK_LOCAL_MEM_FENCE);\n";
}

std::string Int(int64_t v) {
  // The most negative long has no literal of its own.
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807L - 1L)";
  return std::to_string(v) + "L";
}

std::vector<int64_t> Ints(const ir::Attrs& attrs, const char* name, size_t n, int64_t fill) {
  const auto* v = attrs.Get<std::vector<int64_t>>(name);
  if (v && v->size() == n) return *v;
  return std::vector<int64_t>(n, fill);
}

Status NormalizeAxis(const StepSpec& step, int64_t rank, int64_t* axis) {
  if (*axis < 0) *axis += rank;
  if (*axis < 0 || *axis >= rank) return Error(Where(step) + ": axis out of range");
  return {};
}

std::optional<std::string> ElementType(int32_t dtype) {
  return targets::opencl::ClType(static_cast<ir::DataType>(dtype));
}

bool IsHalf(const ValueSpec& v) { return v.dtype == static_cast<int32_t>(ir::DataType::kFloat16); }

std::string LoadFloat(bool half, const std::string& p, const std::string& index) {
  return half ? "vload_half(" + index + ", " + p + ")" : p + "[" + index + "]";
}

std::string StoreFloat(bool half, const std::string& p, const std::string& index,
                       const std::string& value) {
  return half ? "vstore_half_rte(" + value + ", " + index + ", " + p + ")"
              : p + "[" + index + "] = " + value;
}

std::string LoadVector(bool half, int64_t n, const std::string& index, const std::string& p) {
  return (half ? "vload_half" : "vload") + std::to_string(n) + "(" + index + ", " + p + ")";
}

std::string StoreVector(bool half, int64_t n, const std::string& value, const std::string& index,
                        const std::string& p) {
  return (half ? "vstore_half" + std::to_string(n) + "_rte" : "vstore" + std::to_string(n)) + "(" +
         value + ", " + index + ", " + p + ")";
}

KernelText::KernelText(GraphSpec& g, StepSpec& step) : g_(g), step_(step) {
  std::optional<targets::opencl::Family> family = targets::opencl::FamilyOf(step.kernel);
  half_pointers_ = family && targets::opencl::TakesFloat16(*family);
}

std::string KernelText::Read(size_t k, const std::string& index) const {
  std::string x = "x" + std::to_string(k);
  bool half = IsHalf(In(k));
  return LoadFloat(half, half && !half_pointers_ ? "(__global const half*)" + x : x, index);
}

std::string KernelText::Write(size_t k, const std::string& index, const std::string& value) const {
  std::string y = k == 0 ? "y" : "y" + std::to_string(k);
  bool half = IsHalf(Out(k));
  return StoreFloat(half, half && !half_pointers_ ? "(__global half*)" + y : y, index, value);
}

void KernelText::Finish(const std::string& name, const std::string& body, int64_t local,
                        std::string* code) {
  Finish(name, body, std::vector<int64_t>{local}, code);
}

void KernelText::Finish(const std::string& name, const std::string& body,
                        const std::vector<int64_t>& local, std::string* code) {
  std::string params, locals;
  auto type = [&](int v) {
    if (v < 0) return std::string("float");
    const ValueSpec& value = g_.values[static_cast<size_t>(v)];
    if (half_pointers_ && IsHalf(value)) return std::string("half");
    return ElementType(value.dtype).value_or("float");
  };
  // Parameters named q_p* / q_o*, so that no name a body uses collides with them.
  for (size_t k = 0; k < step_.inputs.size(); ++k) {
    std::string s = std::to_string(k), t = type(step_.inputs[k]);
    params += "__global const " + t + "* q_p" + s + ", ulong q_o" + s + ", ";
    locals += "  __global const " + t + "* x" + s + " = (__global const " + t +
              "*)((__global const char*)q_p" + s + " + q_o" + s + ");\n";
  }
  for (size_t k = 0; k < step_.outputs.size(); ++k) {
    std::string s = k == 0 ? "" : std::to_string(k), t = type(step_.outputs[k]);
    params += std::string(k == 0 ? "" : ", ") + "__global " + t + "* q_py" + s + ", ulong q_oy" + s;
    locals += "  __global " + t + "* y" + s + " = (__global " + t + "*)((__global char*)q_py" + s +
              " + q_oy" + s + ");\n";
  }
  std::string error = checked_ ? ", __global int* q_err, int q_seq" : "";
  *code += "\n// " + Where(step_) + "\n__kernel void " + name + "(" + params + longs_ + error +
           ") {\n" + locals + body + "}\n";
  step_.kind = pkg::StepKind::Dispatch;
  step_.dims = dims_;
  step_.attrs.Set("local", local);
  if (checked_) step_.attrs.Set("checked", true);
}

namespace {

// The error word's statements (targets/opencl/device/dispatch.h) when `condition` holds.
std::string Report(const std::string& condition, int kind, const std::string& index,
                   const std::string& size, const std::string& zero) {
  return "  if (" + condition + ") {\n    if (atomic_cmpxchg(q_err, 0, q_seq) == 0) {\n" +
         "      q_err[1] = " + std::to_string(kind) + ";\n" +
         "      *(__global long*)(q_err + 2) = " + index + ";\n" +
         "      *(__global long*)(q_err + 4) = " + size + ";\n    }\n    " + zero +
         ";\n    return;\n  }\n";
}

}  // namespace

std::string BadIndex(const std::string& index, const std::string& size, const std::string& zero,
                     bool negative) {
  std::string low = negative ? index + " < -" + size : index + " < 0";
  return Report(low + " || " + index + " >= " + size, 0, index, size, zero);
}

std::string EmptyAxis(const std::string& size, const std::string& zero) {
  return Report(size + " == 0", 1, "0L", size, zero);
}

std::string Unravel(const std::string& index, const std::string& prefix, size_t rank) {
  if (rank == 0) return "";
  std::string r = "r" + prefix;
  std::string s = "  long " + r + " = " + index + ";\n";
  for (size_t j = rank; j-- > 1;) {
    std::string js = prefix + std::to_string(j);
    s += "  long c" + js + " = " + r + " % d" + js + ";\n  " + r + " /= d" + js + ";\n";
  }
  return s + "  long c" + prefix + "0 = " + r + ";\n";
}

std::string Strides(const std::string& prefix, size_t rank) {
  std::string s;
  for (size_t j = rank; j-- > 0;) {
    std::string js = prefix + std::to_string(j);
    s += "  long s" + js + " = " +
         (j + 1 == rank
              ? std::string("1")
              : "s" + prefix + std::to_string(j + 1) + " * d" + prefix + std::to_string(j + 1)) +
         ";\n";
  }
  return s;
}

std::string ConvEpilogue(const StepSpec& step, bool half, const std::string& vector_type) {
  bool vec = !vector_type.empty();
  // x = min(max(x, lo), hi) as q_clip computes it (NaN stays NaN).
  auto clip = [&](const std::string& x, const std::string& lo, const std::string& hi) {
    if (!vec) return "q_clip(" + x + ", " + lo + ", " + hi + ")";
    return "    " + x + " = select(" + x + ", (" + vector_type + ")(" + lo + "), " + x + " < " +
           lo + ");\n    " + x + " = select(" + x + ", (" + vector_type + ")(" + hi + "), " + x +
           " > " + hi + ");\n";
  };
  std::string epilogue;
  if (step.inputs.size() > 2) epilogue += "    v += " + LoadFloat(half, "x2", "o") + ";\n";
  const std::string* act = step.attrs.Get<std::string>("activation");
  if (act && *act == "relu") {
    epilogue += vec ? "    v = select(v, (" + vector_type + ")(0.0f), v < 0.0f);\n"
                    : "    v = q_relu(v);\n";
  }
  if (act && *act == "clip") {
    const double* lo = step.attrs.Get<double>("activation_min");
    const double* hi = step.attrs.Get<double>("activation_max");
    std::string l = lo ? FloatLiteral(*lo) : std::string("-INFINITY");
    std::string h = hi ? FloatLiteral(*hi) : std::string("INFINITY");
    epilogue += vec ? clip("v", l, h) : "    v = " + clip("v", l, h) + ";\n";
  }
  if (act && *act == "hardswish") {
    epilogue += vec ? "    " + vector_type + " h = v + 3.0f;\n" + clip("h", "0.0f", "6.0f") +
                          "    v = v * h;\n"
                    : "    v = v * " + clip("v + 3.0f", "0.0f", "6.0f") + ";\n";
  }
  return epilogue;
}

int64_t ConvChannelTile(int64_t og) {
  int64_t parts = (og + 15) / 16;
  return (og + parts - 1) / parts;
}

int64_t ConvPixelTile(std::optional<int64_t> n) {
  if (!n || *n >= 16) return 16;
  return *n >= 8 ? 8 : 4;
}

void PassDims(KernelText& k, const std::string& prefix, const std::vector<int>& dims) {
  for (size_t j = 0; j < dims.size(); ++j) k.Long("d" + prefix + std::to_string(j), dims[j]);
}

}  // namespace quilt::compiler::opencl
