// The kernel interface: what a kernel of any device sees of one step.
//
//   Status Relu(KernelContext& ctx) {
//     const Tensor& x = *ctx.input(0);
//     Tensor* y;
//     QUILT_RETURN_IF_ERROR(ctx.Output(0, x.dtype, x.shape, &y));
//     ...
//     return Status::Ok();
//   }
//
// A kernel computes the shape of each output from its inputs and attributes and asks the context
// for the memory (`Output`). Where the compiler's dims give the shape, the executor has placed
// the output before the step was queued and `Output` checks the kernel's shape against it; where
// they do not (data-dependent shapes), `Output` places it. Either way the two can never silently
// disagree. Kernels check data-dependent conditions
// (an index out of range) and return an error; everything static was checked by the compiler.
// Kernels are found by op name ("nn.conv2d") in an explicit table per device.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/src/inline_vector.h"
#include "runtime/src/status.h"
#include "runtime/src/tensor.h"
#include "runtime/src/thread_pool.h"

namespace quilt::pkg {
struct Attr;
}
namespace flatbuffers {
template <typename T>
class Vector;
template <typename T>
struct Offset;
}  // namespace flatbuffers

namespace quilt::rt {

using AttrList = flatbuffers::Vector<flatbuffers::Offset<pkg::Attr>>;

// A step's attributes laid out once, when the session prepares the step, for AttrView's lookups:
// each name's length and address beside its attribute, in the package's order, so that a lookup
// compares lengths along one array, and names only where those agree, rather than reading the
// package's tables for every name (a kernel reads its attributes at every run: a VAD of 52 small
// steps made 116 lookups a run).
class AttrIndex {
 public:
  explicit AttrIndex(const AttrList* attrs);
  // The first attribute named prefix + name, or null.
  const pkg::Attr* Find(std::string_view prefix, std::string_view name) const;

 private:
  struct Entry {
    size_t size;
    const char* name;
    const pkg::Attr* attr;
  };
  std::vector<Entry> entries_;
};

// The attributes of a step, by name. Absent attributes and None read as the fallback. A view with
// a prefix sees only the attributes named `prefix` + name, by name (a fused step's member's:
// targets/cpu/kernels/fused.h). With an index (the step's, as the session prepared it), lookups
// go through it.
class AttrView {
 public:
  using List = AttrList;
  explicit AttrView(const List* attrs, std::string prefix = {}, const AttrIndex* index = nullptr)
      : attrs_(attrs), index_(index), prefix_(std::move(prefix)) {}
  // The same attributes (and index) seen through `prefix`.
  AttrView WithPrefix(std::string prefix) const {
    return AttrView(attrs_, std::move(prefix), index_);
  }
  bool Has(std::string_view name) const;  // present and not None
  int64_t Int(std::string_view name, int64_t fallback = 0) const;
  double Float(std::string_view name, double fallback = 0) const;
  bool Bool(std::string_view name, bool fallback = false) const;
  std::string_view Str(std::string_view name, std::string_view fallback = {}) const;
  DType Dtype(std::string_view name, DType fallback = DType::kVoid) const;
  // Lists come inline (InlineVector: numbers up to 8, names up to 32, a fused step's members): a
  // kernel's per-run reads do not allocate.
  InlineVector<int64_t, 8> Ints(std::string_view name) const;
  // The same list read in place, valid while the package is (a kernel's per-run reads: no copy).
  std::span<const int64_t> IntsView(std::string_view name) const;
  InlineVector<double, 8> Floats(std::string_view name) const;
  InlineVector<std::string_view, 32> Strs(std::string_view name) const;
  // Every attribute of the step, whatever the prefix.
  const List* list() const { return attrs_; }

 private:
  const pkg::Attr* Find(std::string_view name) const;
  const List* attrs_;
  const AttrIndex* index_;
  std::string prefix_;
};

// What a kernel derives once from inputs that are the same in every run of a session (weights
// converted or packed for its inner loop), kept with the step for the session's life:
//
//   if (ctx.constant_input(1) && ctx.cache()) {
//     auto packed = ctx.cache()->Get<PackedWeights>([&] { return Pack(*ctx.input(1)); });
//     ...
//   }
//
// A kernel keeps only what depends on its constant inputs (and attributes) alone, and a copy of
// what it derives, never a pointer into an input other than a constant of the package itself
// (a weight quiltc packed, read where it is): a constant input has the same values in every run
// but not always the same buffer (a loop body's weight carried as loop state is copied at every
// run).
// A step attribute: the position of an input whose memory the step's output 0 may take (the
// kernel reads each of that input's elements before it writes the output's at the same place),
// where that input's last reader is this step. The compiler's memory plan does this for values
// of known size; the executor for those it allocates at run time.
inline constexpr std::string_view kInPlaceInput = "in_place_input";

class StepCache {
 public:
  // The object `make()` returns (a std::shared_ptr<T>; null: nothing worth keeping) on the first
  // call; every later call, from any thread, returns that same object.
  template <class T, class F>
  std::shared_ptr<const T> Get(F&& make) {
    std::call_once(once_, [&] { value_ = std::shared_ptr<const T>(make()); });
    return std::static_pointer_cast<const T>(value_);
  }

 private:
  std::once_flag once_;
  std::shared_ptr<const void> value_;
};

class KernelContext {
 public:
  virtual ~KernelContext() = default;
  // Inputs, flattened: an argument that is a tuple contributes several inputs (see ArgBegin).
  // nullptr for an absent optional input or an index past the end.
  virtual int num_inputs() const = 0;
  virtual const Tensor* input(int i) const = 0;
  // Where argument `arg` of the op starts in the inputs, and how many inputs it has (1 for a
  // tensor, N for a tuple of N tensors).
  virtual int ArgBegin(int arg) const = 0;
  virtual int ArgSize(int arg) const = 0;
  virtual int num_outputs() const = 0;
  // The element type the compiler inferred for output i (kVoid when unknown).
  virtual DType output_dtype(int i) const = 0;
  // Memory for output i. Fails (with a message naming the sizes) on an impossible size.
  virtual Status Output(int i, DType dtype, const Shape& shape, Tensor** out) = 0;
  virtual const AttrView& attrs() const = 0;
  // The number of threads the kernel may use.
  virtual int threads() const = 0;
  // Whether input i is the same tensor in every run of the session (a constant of the package, or
  // made from constants alone when the session was created).
  virtual bool constant_input(int i) const {
    (void)i;
    return false;
  }
  // The step's cache for the session's life (StepCache); null where there is none.
  virtual StepCache* cache() const { return nullptr; }
  // The threads of this run (null: the calling thread alone). Kernels split work with
  // ParallelFor rather than using it directly.
  virtual ThreadPool* thread_pool() const { return nullptr; }
  // fn(begin, end) over disjoint ranges covering [0, n), each at least `grain` long (but the
  // last), on the run's threads; returns when all are done. See thread_pool.h.
  template <typename F>
  void ParallelFor(int64_t n, int64_t grain, F&& fn) const {
    rt::ParallelFor(thread_pool(), n, grain, fn);
  }
};

using KernelFn = Status (*)(KernelContext& ctx);

struct KernelEntry {
  std::string_view name;  // the op name: "add", "nn.conv2d"
  KernelFn fn;
};

}  // namespace quilt::rt
