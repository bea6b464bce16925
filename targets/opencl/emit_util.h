// What the OpenCL emitters share (emit*.cc):
// dim-node arithmetic on a graph's dim pool, and KernelText, the kernel being written for one step
// under the dispatch convention (targets/opencl/device/dispatch.h). Internal to the OpenCL back
// end.
//
//   KernelText k(g, step);
//   k.Long("n", Product(g, k.Out().dims, 0));  // the grid first
//   k.Finish(name, "  long i = get_global_id(0);\n  if (i < n) y[i] = x0[i];\n", kLocalSize, code);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "targets/opencl/elementwise.h"
#include "targets/package_spec.h"

namespace quilt::compiler::opencl {

// The work-group size of every kernel (fixed: each distinct size costs PoCL a compile).
inline constexpr int64_t kLocalSize = 64;

bool SameDim(const GraphSpec& g, int a, int b);
bool IsOne(const GraphSpec& g, int d);
int IntDim(GraphSpec& g, int64_t v);
int AddDim(GraphSpec& g, int a, int b);
int MulDim(GraphSpec& g, int a, int b);
// ceil(d / q) as a dim node.
int CeilDiv(GraphSpec& g, int d, int64_t q);
// The product of dims [begin, end) of `dims` (1 when empty).
int Product(GraphSpec& g, const std::vector<int>& dims, size_t begin);
std::optional<int64_t> StaticDim(const GraphSpec& g, int d);

std::string NodeName(const StepSpec& step);
// "R.op (node 'name')", for messages.
std::string Where(const StepSpec& step);
// A long literal.
std::string Int(int64_t v);
using targets::opencl::FloatLiteral;  // a float literal that reads back as the same float
// An int list attribute, or `n` copies of `fill` when absent.
std::vector<int64_t> Ints(const ir::Attrs& attrs, const char* name, size_t n, int64_t fill);
// `axis` (negative counts from the end) within [0, rank), or an error naming the step.
Status NormalizeAxis(const StepSpec& step, int64_t rank, int64_t* axis);

// The OpenCL C type of a value's elements (ONNX dtype), or nullopt for one kernels do not take.
std::optional<std::string> ElementType(int32_t dtype);

// Whether a value's elements are float16 (stored as such; kernels compute them in float).
bool IsHalf(const ValueSpec& v);
// A float expression of element `index` of pointer `p` (to half where `half`: vload_half), and
// the statement writing float `value` there (to a half rounded to nearest even: vstore_half_rte).
std::string LoadFloat(bool half, const std::string& p, const std::string& index);
std::string StoreFloat(bool half, const std::string& p, const std::string& index,
                       const std::string& value);
// The type a kernel's pointers to float data point to: half where the data is float16 (which a
// kernel reads and writes through vload_half / vstore_half_rte alone), else float.
inline std::string Pointee(bool half) { return half ? "half" : "float"; }
// Float expression `x` rounded to float16 and back where `half` (q_round_half: a step the CPU
// rounds to float16, as ONNX's numpy reference does), else `x` itself.
inline std::string RoundHalf(bool half, const std::string& x) {
  return half ? "q_round_half(" + x + ")" : x;
}
// A vector of `n` floats (2, 4, 8 or 16) from element `index` * n of `p` (vload_half<n> where
// `half`), and the statement writing float vector `value` there (vstore_half<n>_rte: to nearest
// even).
std::string LoadVector(bool half, int64_t n, const std::string& index, const std::string& p);
std::string StoreVector(bool half, int64_t n, const std::string& value, const std::string& index,
                        const std::string& p);

// A kernel being written: its parameters follow the dispatch convention (a buffer and byte offset
// per input, then per output, then a long per step dim, the grid first). Input k is `x<k>` in the
// body, output 0 is `y` and output k > 0 `y<k>`, each a pointer to its element type.
class KernelText {
 public:
  KernelText(GraphSpec& g, StepSpec& step);
  // A long parameter `name` holding dim node `dim` when the step runs.
  void Long(const std::string& name, int dim) {
    longs_ += ", long " + name;
    dims_.push_back(dim);
  }
  const ValueSpec& In(size_t k) const { return g_.values[static_cast<size_t>(step_.inputs[k])]; }
  const ValueSpec& Out(size_t k = 0) const {
    return g_.values[static_cast<size_t>(step_.outputs[k])];
  }
  // Input k's element at `index` as a float expression (a float16 one through vload_half), and
  // the statement writing float `value` to output k's element at `index` (to a float16 one
  // rounded to nearest even, through vstore_half_rte): for kernels whose float data may be
  // float16 (targets/opencl/ops.h, TakesFloat16).
  std::string Read(size_t k, const std::string& index) const;
  std::string Write(size_t k, const std::string& index, const std::string& value) const;
  // The kernel checks its indices: it takes the run's error word (targets/opencl/device/
  // dispatch.h), and reports a bad one with BadIndex.
  void Checked() { checked_ = true; }
  // Finishes the step: its kernel `name` with `body`, launched over the first `grid` longs.
  void Finish(const std::string& name, const std::string& body, int64_t local, std::string* code);
  // The same over a grid of the first local.size() longs, work-groups of `local`.
  void Finish(const std::string& name, const std::string& body, const std::vector<int64_t>& local,
              std::string* code);

 private:
  GraphSpec& g_;
  StepSpec& step_;
  std::string longs_;
  std::vector<int> dims_;
  bool checked_ = false;
  // Whether the step's family computes float16 data in float (TakesFloat16): its float16
  // parameters are then pointers to half, which a kernel cannot dereference without
  // cl_khr_fp16 (a read or write not through Read / Write or vload_half / vstore_half fails to
  // build), where the families that move elements copy the bits through pointers to ushort.
  bool half_pointers_ = false;
};

// Rows of contiguous elements at least this long take a work-group each where a kernel reduces
// them (softmax and log-softmax, global average pooling), not a work-item: a PP-OCR recognizer's
// 40 rows of 6,625 classes took 3.0 ms of its 13.5 on an NVIDIA H200 and 1.9 of 23.6 on PoCL as
// 40 work-items, and a detector's global average pools over planes of 160 x 160 3.7 of 14 ms on
// the H200.
inline constexpr int64_t kGroupRowLength = 256;
// A kernel with a work-group per row (before any other Long of `k`): passes its grid, `rows`
// work-groups of kLocalSize, and the dim node `rows` as the long `rows`; returns the body's first
// statements, declaring `r` (the row), `l` (the work-item in the group) and the group's __local
// float `part[kLocalSize]`, the whole group done past the last row.
std::string GroupPerRow(KernelText& k, GraphSpec& g, int rows);
// The head of a loop of work-item `l` over its elements j of a row of `n` (a long expression):
// every kLocalSize-th, so that the group's loads are contiguous.
std::string GroupLoop(const std::string& n);
// A work-group's reduction of a row: each work-item's float `acc` combined with the others' (their
// maximum, or their sum) pairwise in `part` (GroupPerRow's); every work-item's `acc` then holds
// the result.
std::string GroupReduce(const std::string& acc, bool max);

// Statements of a checked kernel (KernelText::Checked) for an index `index` (a long) outside
// [-size, size) or, with `negative` false, [0, size): the run's error word takes it (when it is
// the first) and the element is 0 (`zero`: the statement writing it, "y[t] = 0" or a
// KernelText::Write); the work-item is done.
std::string BadIndex(const std::string& index, const std::string& size, const std::string& zero,
                     bool negative = true);
// The same for an axis `size` (a long) that is empty where the op cannot be (edge, reflect and
// wrap padding read from it).
std::string EmptyAxis(const std::string& size, const std::string& zero);

// The coordinates of flat index `index` in a row-major tensor of dims `d<prefix><j>` (longs the
// kernel has), as longs `c<prefix><j>`, j in [0, rank). Declares them.
std::string Unravel(const std::string& index, const std::string& prefix, size_t rank);
// Declares the row-major strides `s<prefix><j>` of a tensor of dims `d<prefix><j>`.
std::string Strides(const std::string& prefix, size_t rank);
// Passes each dim of `dims` as long `d<prefix><j>`.
void PassDims(KernelText& k, const std::string& prefix, const std::vector<int>& dims);

// A conv step's fused bias (input 2; float16 where `half`) and activation
// (targets/fuse_epilogue.h) on float `v` of output channel `o`; or, given `vector_type` (float16,
// ...), on a vector `v` of that type, each lane as the float code computes it.
std::string ConvEpilogue(const StepSpec& step, bool half, const std::string& vector_type = "");

// The register tiles of the conv kernels (conv2d in emit.cc, transposed convs in emit_conv.cc):
// a work-item computes ConvChannelTile(og) of a group's `og` output channels (og split in
// ceil(og / 16) near-equal parts: 16 accumulators of 16 floats take half of AVX-512's registers)
// by ConvPixelTile(n) outputs of a row of `n` (16, 8 or 4: the widest OpenCL vector the row
// fills; 16 when only the run knows n), each channel's outputs one OpenCL vector.
int64_t ConvChannelTile(int64_t og);
int64_t ConvPixelTile(std::optional<int64_t> n);
// Window widths up to this are written out tap by tap in the conv kernels; wider ones loop.
inline constexpr int64_t kConvUnrolledTaps = 8;
// The output rows a conv2d work-item of one channel (a depthwise conv) computes: each input row's
// tap vectors feed the outputs of every row whose window reads it.
inline constexpr int64_t kConvRows = 4;

using Emitter = Status (*)(GraphSpec&, StepSpec&, const std::string&, std::string*);

// emit_reduce.cc
Status EmitReduce(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitNorm(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
// emit_manip.cc
Status EmitPermute(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitConcat(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitSplit(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitSlice(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitTake(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitPad(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitGatherNd(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
// emit_image.cc: resize reads its constant scales, sizes and roi from the package's buffers.
Status EmitResize(const PackageSpec& spec, GraphSpec& g, StepSpec& step, const std::string& name,
                  std::string* code);
// emit_conv2d.cc: conv2d in register tiles, conv1d as the same tiles, 2-D max and average pools;
// PadBegin, the begin padding of a conv or pool window along spatial dim i of `spatial`, as the
// CPU kernels compute it.
Status PadBegin(const GraphSpec& g, const StepSpec& step, const ValueSpec& x, int64_t kernel,
                int64_t stride, int64_t dilation, int i, int64_t* pad, size_t spatial = 2);
Status EmitConv2d(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitConvOfRank(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitPool2d(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
// emit_conv.cc: 3-D convolutions (and 1-D ones conv2d's tiles do not take), transposed
// convolutions of 1 to 3 spatial dims.
Status EmitConv(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitConvTranspose(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitPool(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitAdaptivePool(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitGridSample(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
// emit_attention.cc
Status EmitAttention(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitCausalConv(GraphSpec& g, StepSpec& step, const std::string& name, std::string* code);
Status EmitRotaryEmbedding(GraphSpec& g, StepSpec& step, const std::string& name,
                           std::string* code);

}  // namespace quilt::compiler::opencl
