#include "runtime/src/package.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "runtime/src/checksum.h"
#include "runtime/src/dtype.h"
#include "runtime/src/op_attrs.h"
#include "runtime/src/tensor.h"

namespace quilt::rt {

// The bytes of a package: memory it owns (64-byte aligned, as the data section's offsets are), or
// a mapped file.
class PackageBytes {
 public:
  PackageBytes(void* map, size_t size)
      : map_(map), data_(static_cast<uint8_t*>(map)), size_(size) {}
  // Owned memory of `size` bytes; null data() when it cannot be had.
  explicit PackageBytes(size_t size)
      : data_(static_cast<uint8_t*>(::operator new(size, kAlign, std::nothrow))), size_(size) {}
  PackageBytes(const PackageBytes&) = delete;
  PackageBytes& operator=(const PackageBytes&) = delete;
  ~PackageBytes() {
    if (map_) {
      munmap(map_, size_);
    } else {
      ::operator delete(data_, kAlign);
    }
  }
  const uint8_t* data() const { return data_; }
  uint8_t* mutable_data() { return map_ ? nullptr : data_; }
  size_t size() const { return size_; }

 private:
  static constexpr std::align_val_t kAlign{64};
  void* map_ = nullptr;
  uint8_t* data_;
  size_t size_;
};

namespace {

std::string OutOfMemory(const std::string& origin, size_t size) {
  return "cannot hold " + origin + " in memory: " + std::to_string(size) +
         " bytes could not be allocated";
}

}  // namespace

LoadedPackage::~LoadedPackage() = default;

Status LoadedPackage::FromFile(const std::string& path, std::unique_ptr<LoadedPackage>* out,
                               const LoadOptions& options) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a file.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::Error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Error("'" + path + "' is not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return Status::Error("'" + path + "' is empty, not a quilt package");
  }
  std::unique_ptr<PackageBytes> bytes;
  if (options.map_file) {
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
      return Status::Error("cannot map '" + path + "': " + std::strerror(errno));
    }
    bytes = std::make_unique<PackageBytes>(map, size);
  } else {
    bytes = std::make_unique<PackageBytes>(size);
    if (!bytes->data()) {
      close(fd);
      return Status::Error(OutOfMemory("'" + path + "'", size));
    }
    size_t done = 0;
    while (done < size) {
      ssize_t n = pread(fd, bytes->mutable_data() + done, size - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::string why = n < 0 ? std::strerror(errno) : "the file became shorter while read";
        close(fd);
        return Status::Error("cannot read '" + path + "': " + why);
      }
      done += static_cast<size_t>(n);
    }
    close(fd);
  }
  std::unique_ptr<LoadedPackage> p(new LoadedPackage());
  p->bytes_ = std::move(bytes);
  QUILT_RETURN_IF_ERROR(p->Check("'" + path + "'", options));
  *out = std::move(p);
  return Status::Ok();
}

Status LoadedPackage::FromMemory(const void* data, size_t size, std::unique_ptr<LoadedPackage>* out,
                                 const LoadOptions& options) {
  if (data == nullptr || size == 0) return Status::Error("package in memory: no bytes given");
  auto bytes = std::make_unique<PackageBytes>(size);
  if (!bytes->data()) return Status::Error(OutOfMemory("the package", size));
  std::memcpy(bytes->mutable_data(), data, size);
  std::unique_ptr<LoadedPackage> p(new LoadedPackage());
  p->bytes_ = std::move(bytes);
  QUILT_RETURN_IF_ERROR(p->Check("package in memory", options));
  *out = std::move(p);
  return Status::Ok();
}

const uint8_t* LoadedPackage::BufferData(int i) const {
  return bytes_->data() + root_->data_offset() + root_->buffers()->Get(i)->offset();
}

uint64_t LoadedPackage::BufferSize(int i) const { return root_->buffers()->Get(i)->size(); }

std::optional<pkg::StepKind> BuiltinStepKind(std::string_view name) {
  if (name == "copy") return pkg::StepKind::Copy;
  for (std::string_view control : {"shape_expr", "prim_value", "if", "while_loop", "scan"}) {
    if (name == control) return pkg::StepKind::Control;
  }
  return std::nullopt;
}

namespace {

// Semantic checks of one graph; `where` names it in messages.
// The FlatBuffers verifier checks a vector's length field, not that elements of 8 bytes (longs,
// doubles, DimNodes) are aligned to 8; the package's bytes are, so an offset decides. An empty
// vector's data may lie anywhere: the writer aligns only what it holds.
template <typename V>
bool Aligned8(const V* v) {
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % 8 == 0;
}

class GraphChecker {
 public:
  GraphChecker(const pkg::Package& p, const pkg::Graph& g, std::string where)
      : p_(p), g_(g), where_(std::move(where)) {}

  Status Run() {
    if (!g_.values() || !g_.steps() || !g_.inputs() || !g_.outputs() || !g_.dims()) {
      return Fail("missing values, steps, inputs, outputs or dims");
    }
    num_values_ = static_cast<int64_t>(g_.values()->size());
    QUILT_RETURN_IF_ERROR(CheckDims());
    // Before CheckValue reads the arena sizes.
    if (!Aligned8(g_.arena_bytes())) return Fail("the arena sizes are not aligned to 8 bytes");
    if (g_.arena_bytes()) {
      for (int64_t a : *g_.arena_bytes()) {
        if (a < 0) return Fail("an arena of " + std::to_string(a) + " bytes");
      }
    }
    defined_.assign(num_values_, false);
    for (uint32_t i = 0; i < g_.values()->size(); ++i) {
      QUILT_RETURN_IF_ERROR(CheckValue(static_cast<int>(i)));
    }
    // An arena larger than all its values laid end to end is a damaged size, not a plan.
    if (g_.arena_bytes()) {
      for (int64_t a : *g_.arena_bytes()) {
        if (a > arena_need_) {
          return Fail("an arena of " + std::to_string(a) + " bytes for values of " +
                      std::to_string(arena_need_));
        }
      }
    }
    for (int32_t v : *g_.inputs()) {
      QUILT_RETURN_IF_ERROR(CheckIndex(v, "graph input"));
      if (g_.values()->Get(v)->kind() != pkg::ValueKind::Input) {
        return Fail("graph input " + std::to_string(v) + " is not an input value");
      }
    }
    for (uint32_t s = 0; s < g_.steps()->size(); ++s) {
      QUILT_RETURN_IF_ERROR(CheckStep(static_cast<int>(s)));
    }
    QUILT_RETURN_IF_ERROR(CheckRegions());
    for (int32_t v : *g_.outputs()) {
      QUILT_RETURN_IF_ERROR(CheckIndex(v, "graph output"));
      if (!defined_[v]) return Fail("graph output " + std::to_string(v) + " is never defined");
    }
    return Status::Ok();
  }

 private:
  Status Fail(const std::string& what) const { return Status::Error(where_ + ": " + what); }

  Status CheckIndex(int64_t v, const char* what) const {
    if (v < 0 || v >= num_values_) {
      return Fail(std::string(what) + " refers to value " + std::to_string(v) + " of " +
                  std::to_string(num_values_));
    }
    return Status::Ok();
  }

  Status CheckDims() {
    if (!Aligned8(g_.dims())) return Fail("the dims are not aligned to 8 bytes");
    int64_t num_symbols = g_.symbols() ? g_.symbols()->size() : 0;
    for (uint32_t i = 0; i < g_.dims()->size(); ++i) {
      const pkg::DimNode* d = g_.dims()->Get(i);
      switch (d->kind()) {
        case pkg::DimKind::Int:
          break;
        case pkg::DimKind::Sym:
          if (d->a() < 0 || d->a() >= num_symbols) return Fail("dim refers to a missing symbol");
          break;
        case pkg::DimKind::Add:
        case pkg::DimKind::Sub:
        case pkg::DimKind::Mul:
        case pkg::DimKind::FloorDiv:
        case pkg::DimKind::FloorMod:
        case pkg::DimKind::Min:
        case pkg::DimKind::Max:
          if (d->a() < 0 || d->b() < 0 || d->a() >= static_cast<int>(i) ||
              d->b() >= static_cast<int>(i)) {
            return Fail("dim " + std::to_string(i) + " refers to a later or missing dim");
          }
          break;
        default:
          return Fail("dim " + std::to_string(i) + " has an unknown kind");
      }
    }
    return Status::Ok();
  }

  Status CheckDimList(const flatbuffers::Vector<int32_t>* dims, const std::string& what) const {
    if (!dims) return Status::Ok();
    for (int32_t d : *dims) {
      if (d < 0 || d >= static_cast<int>(g_.dims()->size())) {
        return Fail(what + " refers to a missing dim");
      }
    }
    return Status::Ok();
  }

  Status CheckValue(int i) {
    const pkg::Value* v = g_.values()->Get(i);
    std::string what = "value " + std::to_string(i);
    if (!IsValidDType(v->dtype())) return Fail(what + " has an unknown element type");
    // Every value carries its dims list, empty for a scalar or an unknown rank (the runtime reads
    // it without asking).
    if (!v->dims()) return Fail(what + " has no dims list");
    int64_t rank = v->dims()->size();
    if (v->rank() != -1 && v->rank() != rank) return Fail(what + ": rank and dims disagree");
    if (v->rank() < -1) return Fail(what + " has a negative rank");
    QUILT_RETURN_IF_ERROR(CheckDimList(v->dims(), what));
    int num_devices = p_.devices() ? static_cast<int>(p_.devices()->size()) : 0;
    if (v->device() < 0 || v->device() >= num_devices) return Fail(what + ": no such device");
    // Only an input has a default (the session reads it wherever it is set).
    if (v->kind() != pkg::ValueKind::Input && v->default_buffer() != -1) {
      return Fail(what + " has a default value but is not an input");
    }
    switch (v->kind()) {
      case pkg::ValueKind::Input:
        defined_[i] = true;
        if (v->default_buffer() >= 0)
          QUILT_RETURN_IF_ERROR(CheckConstant(v, v->default_buffer(), what));
        break;
      case pkg::ValueKind::Constant:
        defined_[i] = true;
        QUILT_RETURN_IF_ERROR(CheckConstant(v, v->buffer(), what));
        break;
      case pkg::ValueKind::Intermediate:
        if (v->byte_size() >= 0) QUILT_RETURN_IF_ERROR(CheckStaticSize(v, what));
        if (v->arena_offset() >= 0) {
          // The arena sizes are not negative (checked above) and the value's size is its
          // dtype and dims' (CheckStaticSize: at most 2^50 elements), so nothing overflows.
          const auto* arenas = g_.arena_bytes();
          if (!arenas || v->device() >= static_cast<int>(arenas->size()) || v->byte_size() < 0 ||
              v->arena_offset() > arenas->Get(v->device()) - v->byte_size()) {
            return Fail(what + " lies outside its device's arena");
          }
          int64_t padded = (v->byte_size() + 63) / 64 * 64;
          constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
          arena_need_ = padded > kMax - arena_need_ ? kMax : arena_need_ + padded;
          // As the memory plan lays values out: kernels read elements at their alignment.
          if (v->arena_offset() % 64 != 0) {
            return Fail(what + " lies at arena offset " + std::to_string(v->arena_offset()) +
                        ", not a multiple of 64");
          }
        }
        break;
      default:
        return Fail(what + " has an unknown kind");
    }
    return Status::Ok();
  }

  // The dims of v when all are non-negative constants; nullopt otherwise.
  std::optional<Shape> StaticDims(const pkg::Value* v) const {
    Shape shape;
    for (int32_t d : *v->dims()) {
      const pkg::DimNode* node = g_.dims()->Get(d);
      if (node->kind() != pkg::DimKind::Int || node->value() < 0) return std::nullopt;
      shape.push_back(node->value());
    }
    return shape;
  }

  // The static size recorded for an intermediate is what its dtype and dims give.
  Status CheckStaticSize(const pkg::Value* v, const std::string& what) const {
    std::optional<Shape> shape = StaticDims(v);
    if (!shape) return Fail(what + ": a static size for symbolic dims");
    std::optional<size_t> bytes = CheckedByteSize(static_cast<DType>(v->dtype()), *shape);
    if (!bytes) return Fail(what + ": dims overflow");
    if (v->rank() < 0 || static_cast<uint64_t>(v->byte_size()) != *bytes) {
      return Fail(what + ": its size does not match its dtype and dims");
    }
    return Status::Ok();
  }

  // A constant's buffer exists and holds exactly dtype x static shape bytes.
  Status CheckConstant(const pkg::Value* v, int buffer, const std::string& what) const {
    if (!p_.buffers() || buffer < 0 || buffer >= static_cast<int>(p_.buffers()->size())) {
      return Fail(what + " refers to a missing buffer");
    }
    if (v->rank() < 0) return Fail(what + ": a constant needs a known rank");
    std::optional<Shape> shape = StaticDims(v);
    if (!shape) return Fail(what + ": a constant needs static dims");
    std::optional<size_t> bytes = CheckedByteSize(static_cast<DType>(v->dtype()), *shape);
    if (!bytes) return Fail(what + ": dims overflow");
    uint64_t want = *bytes;
    if (p_.buffers()->Get(buffer)->size() != want) {
      return Fail(what + ": buffer holds " + std::to_string(p_.buffers()->Get(buffer)->size()) +
                  " bytes, dtype and shape need " + std::to_string(want));
    }
    return Status::Ok();
  }

  Status CheckStep(int s) {
    const pkg::Step* step = g_.steps()->Get(s);
    std::string what = "step " + std::to_string(s);
    if (!step->kernel()) return Fail(what + " names no kernel");
    what += " (" + step->kernel()->str() + ")";
    int num_devices = p_.devices() ? static_cast<int>(p_.devices()->size()) : 0;
    if (step->device() < 0 || step->device() >= num_devices) return Fail(what + ": no such device");
    QUILT_RETURN_IF_ERROR(CheckKind(*step, what));
    // Every step has both lists (the writer stores them, empty or not); the executor reads them.
    if (!step->inputs() || !step->outputs()) return Fail(what + ": no list of inputs or outputs");
    if (step->attrs()) {
      for (const pkg::Attr* a : *step->attrs()) {
        if (!Aligned8(a->ints()) || !Aligned8(a->floats())) {
          return Fail(what + ": an attribute's values are not aligned to 8 bytes");
        }
      }
    }
    QUILT_RETURN_IF_ERROR(CheckAttributes(*step, what));
    QUILT_RETURN_IF_ERROR(CheckArguments(*step, what));
    int64_t num_inputs = step->inputs()->size();
    for (int32_t v : *step->inputs()) {
      if (v == -1) continue;
      QUILT_RETURN_IF_ERROR(CheckIndex(v, what.c_str()));
      if (!defined_[v]) {
        return Fail(what + " reads value " + std::to_string(v) + " before it is defined");
      }
    }
    if (step->input_arity()) {
      int64_t total = 0;
      for (int32_t a : *step->input_arity()) {
        if (a < 0) return Fail(what + ": negative argument arity");
        total += a;
      }
      if (total != num_inputs) return Fail(what + ": argument arities do not add up to its inputs");
    }
    QUILT_RETURN_IF_ERROR(CheckTensorArguments(*step, what));
    QUILT_RETURN_IF_ERROR(CheckDimList(step->dims(), what));
    if (step->subgraphs()) {
      for (int32_t gi : *step->subgraphs()) {
        if (gi <= 0 || gi >= static_cast<int>(p_.graphs()->size())) {
          return Fail(what + " refers to a missing subgraph");
        }
      }
    }
    if (step->kind() == pkg::StepKind::Copy) {
      if (num_inputs != 1 || !step->outputs() || step->outputs()->size() != 1 ||
          (*step->inputs())[0] < 0) {
        return Fail(what + ": a copy takes one value and makes one");
      }
      int out = (*step->outputs())[0];
      if (out < 0 || out >= num_values_ || g_.values()->Get(out)->device() != step->device()) {
        return Fail(what + ": a copy's result must live on the copy's device");
      }
    }
    for (int32_t v : *step->outputs()) {
      QUILT_RETURN_IF_ERROR(CheckIndex(v, what.c_str()));
      if (defined_[v]) return Fail(what + " redefines value " + std::to_string(v));
      if (g_.values()->Get(v)->kind() != pkg::ValueKind::Intermediate) {
        return Fail(what + " writes value " + std::to_string(v) + ", which is not an intermediate");
      }
      defined_[v] = true;
    }
    return Status::Ok();
  }

  // The kind agrees with the name: builtins by name, kernels never a builtin's name, dispatch
  // steps an entry point of a code section of their own device.
  Status CheckKind(const pkg::Step& step, const std::string& what) const {
    pkg::StepKind kind = step.kind();
    if (kind < pkg::StepKind::MIN || kind > pkg::StepKind::MAX) {
      return Fail(what + ": unknown step kind " + std::to_string(static_cast<int>(kind)));
    }
    std::optional<pkg::StepKind> builtin = BuiltinStepKind(step.kernel()->string_view());
    std::string kind_name = pkg::EnumNameStepKind(kind);
    if ((kind == pkg::StepKind::Copy || kind == pkg::StepKind::Control) && builtin != kind) {
      return Fail(what + ": a " + kind_name + " step that names no " + kind_name + " builtin");
    }
    if ((kind == pkg::StepKind::Kernel || kind == pkg::StepKind::Dispatch) && builtin) {
      return Fail(what + ": a " + kind_name + " step names the builtin '" + step.kernel()->str() +
                  "'");
    }
    if (kind != pkg::StepKind::Dispatch) return Status::Ok();
    int num_code = p_.code() ? static_cast<int>(p_.code()->size()) : 0;
    if (step.code() < 0 || step.code() >= num_code) {
      return Fail(what + ": dispatches code section " + std::to_string(step.code()) +
                  ", which the package lacks");
    }
    const pkg::TargetCode* code = p_.code()->Get(step.code());
    if (code->device() != step.device()) {
      return Fail(what + " on device " + std::to_string(step.device()) +
                  " dispatches code for device " + std::to_string(code->device()));
    }
    if (code->entry_points()) {
      for (const flatbuffers::String* e : *code->entry_points()) {
        if (e->string_view() == step.kernel()->string_view()) return Status::Ok();
      }
    }
    return Fail(what + ": code section " + std::to_string(step.code()) + " has no entry point '" +
                step.kernel()->str() + "'");
  }

  // A kernel step carries only attributes its op takes (op_attrs.h): a kernel ignores any other,
  // so a damaged name would silently change what runs. A fused elementwise step's member
  // attributes ("<member>:<name>") are checked against the member's op.
  Status CheckAttributes(const pkg::Step& step, const std::string& what) const {
    if (step.kind() != pkg::StepKind::Kernel || !step.attrs()) return Status::Ok();
    std::string_view op = step.kernel()->string_view();
    bool known = false;
    std::span<const std::string_view> names = KernelAttributes(op, &known);
    if (!known) return Status::Ok();  // refused by name when the session looks the kernel up
    std::vector<std::string_view> members;
    if (op == "fused_elementwise") {
      for (const pkg::Attr* a : *step.attrs()) {
        if (a->name() && a->name()->string_view() == "ops" && a->strs()) {
          for (const flatbuffers::String* m : *a->strs()) members.push_back(m->string_view());
        }
      }
    }
    for (const pkg::Attr* a : *step.attrs()) {
      if (!a->name()) return Fail(what + ": an attribute without a name");
      std::string_view name = a->name()->string_view();
      std::string_view of = op;
      std::span<const std::string_view> allowed = names;
      size_t colon = name.find(':');
      if (!members.empty() && colon != std::string_view::npos) {
        size_t m = 0;
        bool digits = colon > 0 && colon <= 9;
        for (size_t i = 0; digits && i < colon; ++i) {
          digits = name[i] >= '0' && name[i] <= '9';
          m = m * 10 + static_cast<size_t>(name[i] - '0');
        }
        if (!digits || m >= members.size()) {
          return Fail(what + ": attribute '" + std::string(name) + "' names no member of its " +
                      std::to_string(members.size()) + " ops");
        }
        of = members[m];
        allowed = KernelAttributes(of, &known);
        if (!known) continue;  // the member's kernel is looked up by name too
        name = name.substr(colon + 1);
      }
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string list;
        for (std::string_view n : allowed) list += (list.empty() ? "" : ", ") + std::string(n);
        return Fail(what + ": unknown attribute '" + std::string(name) + "' of " + std::string(of) +
                    " (it takes " + (list.empty() ? "none" : list) + ")");
      }
    }
    return Status::Ok();
  }

  // A kernel step gives its op's arguments (op_attrs.h); a control step has the subgraphs and
  // argument groups its builtin runs (lowering's layout: if(cond, captured) with then and else;
  // while_loop(body, max_trip, cond, carried, captured); scan(body, states, scan inputs,
  // captured)), and at least one output per carried value or state.
  // An argument of a kernel step that is not a tuple is one tensor, present: kernels read it as
  // input(i) without asking. (After the arities are known to add up to the inputs.)
  Status CheckTensorArguments(const pkg::Step& step, const std::string& what) const {
    std::string_view op = step.kernel()->string_view();
    int count = 0, extra = 0;
    if (step.kind() != pkg::StepKind::Kernel || !KernelArguments(op, &count, &extra)) {
      return Status::Ok();
    }
    const auto* arity = step.input_arity();
    uint32_t args = arity ? arity->size() : step.inputs()->size();
    uint32_t begin = 0;
    for (uint32_t a = 0; a < args; ++a) {
      int size = arity ? arity->Get(a) : 1;
      if (!KernelTupleArgument(op, static_cast<int>(a)) &&
          (size != 1 || step.inputs()->Get(begin) < 0)) {
        return Fail(what + ": argument " + std::to_string(a) + " of " + std::string(op) +
                    " is not one tensor");
      }
      begin += static_cast<uint32_t>(size);
    }
    return Status::Ok();
  }

  Status CheckArguments(const pkg::Step& step, const std::string& what) const {
    std::string_view op = step.kernel()->string_view();
    int args = step.input_arity() ? static_cast<int>(step.input_arity()->size())
                                  : static_cast<int>(step.inputs()->size());
    int subgraphs = step.subgraphs() ? static_cast<int>(step.subgraphs()->size()) : 0;
    if (step.kind() == pkg::StepKind::Kernel) {
      int count = 0, extra = 0;
      if (KernelArguments(op, &count, &extra) && (args < count || args > count + extra)) {
        return Fail(what + ": " + std::string(op) + " takes " + std::to_string(count) +
                    (extra ? " to " + std::to_string(count + extra) : "") +
                    " argument(s), the step gives " + std::to_string(args));
      }
    }
    int want_subgraphs = op == "if" ? 2 : (op == "while_loop" || op == "scan") ? 1 : 0;
    if (step.kind() != pkg::StepKind::Control && step.kind() != pkg::StepKind::Kernel) {
      want_subgraphs = 0;
    }
    if (subgraphs != want_subgraphs) {
      return Fail(what + " has " + std::to_string(subgraphs) + " subgraph(s), expected " +
                  std::to_string(want_subgraphs));
    }
    if (want_subgraphs == 0) return Status::Ok();
    int want_args = op == "if" ? 2 : op == "while_loop" ? 5 : 4;
    if (!step.input_arity() || args != want_args) {
      return Fail(what + ": expected " + std::to_string(want_args) + " argument groups, got " +
                  (step.input_arity() ? std::to_string(args) : std::string("none")));
    }
    int carried = op == "while_loop" ? step.input_arity()->Get(3)
                  : op == "scan"     ? step.input_arity()->Get(1)
                                     : 0;
    if (static_cast<int64_t>(step.outputs()->size()) < carried) {
      return Fail(what + " carries " + std::to_string(carried) + " values but has only " +
                  std::to_string(step.outputs()->size()) + " outputs");
    }
    return Status::Ok();
  }

  // Regions in step order, apart, inside the graph. A region holds kernel and dispatch steps of
  // its device, and between them only its host feed: shape_expr and prim_value steps (they read
  // no tensor) and copies of their results onto the region's device. Every kernel and dispatch
  // step lies in a region.
  Status CheckRegions() const {
    int num_steps = static_cast<int>(g_.steps()->size());
    std::vector<bool> covered(num_steps, false);
    std::vector<int> made_by(static_cast<size_t>(num_values_), -1);
    for (int s = 0; s < num_steps; ++s) {
      for (int32_t v : *g_.steps()->Get(s)->outputs()) made_by[static_cast<size_t>(v)] = s;
    }
    int end = 0;
    int num_devices = static_cast<int>(p_.devices()->size());
    for (uint32_t r = 0; g_.regions() && r < g_.regions()->size(); ++r) {
      const pkg::Region* region = g_.regions()->Get(r);
      std::string what = "region " + std::to_string(r);
      if (region->name() && region->name()->size()) what += " '" + region->name()->str() + "'";
      if (region->device() < 0 || region->device() >= num_devices) {
        return Fail(what + ": no such device");
      }
      if (region->first_step() < end || region->num_steps() <= 0 ||
          region->num_steps() > num_steps - region->first_step()) {
        return Fail(what + ": steps " + std::to_string(region->first_step()) + " + " +
                    std::to_string(region->num_steps()) +
                    " are out of order, overlap another region or lie outside the graph");
      }
      int begin = region->first_step();
      end = begin + region->num_steps();
      for (int s = begin; s < end; ++s) {
        const pkg::Step* step = g_.steps()->Get(s);
        std::string name = step->kernel()->str();
        bool ok = false;
        switch (step->kind()) {
          case pkg::StepKind::Kernel:
          case pkg::StepKind::Dispatch:
            ok = step->device() == region->device();
            covered[s] = true;
            break;
          case pkg::StepKind::Control:
            ok = name == "shape_expr" || name == "prim_value";
            break;
          case pkg::StepKind::Copy: {
            int from = made_by[static_cast<size_t>((*step->inputs())[0])];
            ok = step->device() == region->device() && from >= begin &&
                 g_.steps()->Get(from)->kind() == pkg::StepKind::Control;
            break;
          }
        }
        if (!ok) {
          return Fail(what + " on device " + std::to_string(region->device()) + " holds step " +
                      std::to_string(s) + " (" + name + ", a " +
                      pkg::EnumNameStepKind(step->kind()) + " step on device " +
                      std::to_string(step->device()) + "), which does not belong in it");
        }
      }
    }
    for (int s = 0; s < num_steps; ++s) {
      pkg::StepKind kind = g_.steps()->Get(s)->kind();
      if ((kind == pkg::StepKind::Kernel || kind == pkg::StepKind::Dispatch) && !covered[s]) {
        return Fail("step " + std::to_string(s) + " (" + g_.steps()->Get(s)->kernel()->str() +
                    ") lies in no region");
      }
    }
    return Status::Ok();
  }

  const pkg::Package& p_;
  const pkg::Graph& g_;
  std::string where_;
  int64_t num_values_ = 0;
  int64_t arena_need_ = 0;
  std::vector<bool> defined_;
};

}  // namespace

Status LoadedPackage::Check(const std::string& origin, const LoadOptions& options) {
  const uint8_t* data = bytes_->data();
  size_t size = bytes_->size();
  if (size < 8 || !pkg::PackageBufferHasIdentifier(data)) {
    return Status::Error(origin + " is not a quilt package (no \"QUIL\" identifier)");
  }
  // The footer first: a damaged byte anywhere is named as damage, before any field is read.
  bool footer = size >= 8 + kChecksumBytes &&
                std::memcmp(data + size - kChecksumBytes, kChecksumMagic, 4) == 0;
  if (footer && options.verify_checksum) {
    uint32_t algorithm;
    uint64_t stored;
    std::memcpy(&algorithm, data + size - kChecksumBytes + 4, 4);
    std::memcpy(&stored, data + size - kChecksumBytes + 8, 8);
    if (algorithm != kChecksumXxh3) {
      return Status::Error(origin + ": unknown checksum algorithm " + std::to_string(algorithm) +
                           " (this runtime knows 1, XXH3-64)");
    }
    if (PackageChecksum(data, size - kChecksumBytes) != stored) {
      return Status::Error(origin +
                           " is damaged: its checksum does not match its bytes (a truncated "
                           "copy, a failing disk, or bytes changed after it was written)");
    }
  }
  // The FlatBuffer ends where the data section begins; verify only that part.
  const pkg::Package* peek = pkg::GetPackage(data);
  flatbuffers::Verifier::Options limits;
  limits.max_tables = 100'000'000;
  flatbuffers::Verifier verifier(data, size, limits);
  if (!pkg::VerifyPackageBuffer(verifier)) {
    return Status::Error(origin + " is damaged: the package structure does not verify");
  }
  root_ = peek;
  const pkg::FormatVersion* version = root_->version();
  if (!version) return Status::Error(origin + ": no format version");
  if (version->major() != kFormatMajor) {
    std::string message = origin + " has package format " + std::to_string(version->major()) + "." +
                          std::to_string(version->minor()) + "; this runtime reads format " +
                          std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor);
    if (version->major() < kFormatMajor) {
      message += ": compile the model again with a quiltc of this release";
    } else {
      message += ": run it with a newer quilt runtime";
    }
    return Status::Error(message);
  }
  if (version->minor() >= kFormatMinorChecksum) {
    if (!footer) return Status::Error(origin + " is damaged: its checksum footer is missing");
    size -= kChecksumBytes;
  } else if (options.verify_checksum) {
    return Status::Error(origin + " has package format " + std::to_string(version->major()) + "." +
                         std::to_string(version->minor()) +
                         ", which carries no checksum to verify: compile the model again with a "
                         "quiltc of this release, or load it unverified");
  }
  if (root_->data_offset() % 64 != 0 || root_->data_offset() > size ||
      root_->data_size() > size - root_->data_offset()) {
    return Status::Error(origin + ": the data section lies outside the file");
  }
  if (footer && version->minor() >= kFormatMinorChecksum &&
      root_->data_offset() + root_->data_size() != size) {
    return Status::Error(origin + " is damaged: " +
                         std::to_string(size - root_->data_offset() - root_->data_size()) +
                         " bytes lie between its data section and its checksum");
  }
  if (root_->buffers()) {
    for (uint32_t i = 0; i < root_->buffers()->size(); ++i) {
      const pkg::Buffer* b = root_->buffers()->Get(i);
      if (b->offset() % 64 != 0 || b->offset() > root_->data_size() ||
          b->size() > root_->data_size() - b->offset()) {
        return Status::Error(origin + ": buffer " + std::to_string(i) +
                             " lies outside the data section");
      }
    }
  }
  if (!root_->devices() || root_->devices()->size() == 0) {
    return Status::Error(origin + ": no devices");
  }
  if (root_->code()) {
    int num_buffers = root_->buffers() ? static_cast<int>(root_->buffers()->size()) : 0;
    for (uint32_t i = 0; i < root_->code()->size(); ++i) {
      const pkg::TargetCode* c = root_->code()->Get(i);
      if (c->device() < 0 || c->device() >= static_cast<int>(root_->devices()->size()) ||
          c->buffer() < 0 || c->buffer() >= num_buffers) {
        return Status::Error(origin + ": code section " + std::to_string(i) +
                             " refers to a missing device or buffer");
      }
      if (!c->format() || c->format()->size() == 0) {
        return Status::Error(origin + ": code section " + std::to_string(i) + " names no format");
      }
    }
  }
  if (!root_->graphs() || root_->graphs()->size() == 0) {
    return Status::Error(origin + ": no graphs");
  }
  for (uint32_t i = 0; i < root_->graphs()->size(); ++i) {
    GraphChecker checker(*root_, *root_->graphs()->Get(i), origin + ", graph " + std::to_string(i));
    QUILT_RETURN_IF_ERROR(checker.Run());
  }
  return Status::Ok();
}

}  // namespace quilt::rt
