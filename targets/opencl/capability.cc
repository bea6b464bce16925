// What the OpenCL back end can run: the op families of ops.h on tensors whose shapes the compiler
// knows, of the types each family takes (float32; float16, int32, int64 and bool where elements
// only move or an elementwise op has code for them; float16 throughout for the families that
// compute in float), within each family's limits (below). Everything else stays on another
// device, with the reason in the placement report.
#include "targets/capability.h"

#include <algorithm>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/prim_expr.h"
#include "targets/opencl/elementwise.h"
#include "targets/opencl/ops.h"

namespace quilt::targets {
namespace {

using opencl::Family;

bool FloatTensor(const ir::StructInfo& s, ir::DataType t = ir::DataType::kFloat32) {
  return s && s->IsTensor() && s->dtype == t && s->shape.has_value();
}

// int32 or int64 indices: a tensor, or a prim value (arange's bounds).
bool IndexTensor(const ir::StructInfo& s) {
  bool tensor = s && s->IsTensor() && s->shape.has_value();
  bool prim = s && s->kind == ir::StructInfoKind::kPrim;
  return (tensor || prim) && (s->dtype == ir::DataType::kInt32 || s->dtype == ir::DataType::kInt64);
}

// A tensor of a type the kernels take (elementwise.h's ClType) whose shape the compiler knows.
bool TypedTensor(const ir::StructInfo& s) {
  return s && s->IsTensor() && s->shape.has_value() && opencl::ClType(s->dtype).has_value();
}

// A value's tensors: itself, or a tuple's fields.
std::vector<ir::StructInfo> Tensors(const ir::StructInfo& s) {
  if (s && s->kind == ir::StructInfoKind::kTuple) return s->fields;
  return {s};
}

bool IsInt(const ir::PrimExpr& e, int64_t v) {
  std::optional<int64_t> i = ir::AsInt(e);
  return i && *i == v;
}

// Whether `in` broadcasts (numpy, from the right) to `out` as the compiler can tell.
bool Broadcasts(const std::vector<ir::PrimExpr>& in, const std::vector<ir::PrimExpr>& out) {
  if (in.size() > out.size()) return false;
  size_t lead = out.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j) {
    if (!IsInt(in[j], 1) && !ir::PrimEqual(in[j], out[lead + j])) return false;
  }
  return true;
}

// SAME padding (auto_pad SAME_UPPER / SAME_LOWER) is worked out when compiling, from the spatial
// dims of `x` (dim 2 on): OpenCL takes it only where they are static.
Support SamePaddingOverStaticDims(const ir::CallNode& call, const std::vector<ir::PrimExpr>& x,
                                  const std::string& name) {
  const std::string* pad = call.attrs.Get<std::string>("auto_pad");
  if (!pad || (*pad != "SAME_UPPER" && *pad != "SAME_LOWER")) return Support::Yes();
  for (size_t i = 2; i < x.size(); ++i) {
    if (!ir::AsInt(x[i])) {
      return Support::No("OpenCL: " + name + " pads SAME over spatial dims only the run knows");
    }
  }
  return Support::Yes();
}

class OpenCl : public Capability {
 public:
  Support Supports(const ir::CallNode& call) const override {
    const ir::OpInfo* op = call.op();
    if (!op) return Support::Yes();  // calls of functions: their ops are placed one by one
    std::string name = "R." + op->name;
    std::optional<Family> family = opencl::FamilyOf(op->name);
    if (!family) return Support::No("no OpenCL kernel for " + name + " yet");
    std::vector<ir::StructInfo> outs = Tensors(call.struct_info);
    bool any_type = opencl::AnyTypeOut(*family);
    // The float data's type: float32, or float16 throughout where the family takes it (every
    // family whose data is float: the message for those alone).
    const bool half = opencl::TakesFloat16(*family) && !outs.empty() && outs[0] &&
                      outs[0]->dtype == ir::DataType::kFloat16;
    const ir::DataType data = half ? ir::DataType::kFloat16 : ir::DataType::kFloat32;
    std::string float_only =
        "OpenCL runs " + name + " on float32 (or all float16) tensors of known shape only";
    std::string typed_only = "OpenCL runs " + name +
                             " on float32, float16, int32, int64 and bool tensors of known " +
                             "shape only";
    for (const ir::StructInfo& o : outs) {
      if (!(any_type ? TypedTensor(o) : FloatTensor(o, data))) {
        return Support::No(any_type ? typed_only : float_only);
      }
    }
    if (outs.empty()) return Support::No(float_only);
    const std::vector<ir::PrimExpr>& out = *outs[0]->shape;
    // The tensors a family's kernel reads, as lowering flattens them (reshape's shape and the
    // like are not data).
    std::vector<ir::StructInfo> ins;
    for (const ir::Expr& arg : call.args) {
      for (const ir::StructInfo& t : Tensors(arg->struct_info)) ins.push_back(t);
    }
    for (size_t i = 0; i < ins.size(); ++i) {
      switch (opencl::InputUseOf(*family, i)) {
        case opencl::InputUse::kFloat:
          if (!FloatTensor(ins[i], data)) return Support::No(float_only);
          break;
        case opencl::InputUse::kAny:
          if (!TypedTensor(ins[i])) return Support::No(typed_only);
          break;
        case opencl::InputUse::kIndex:
          if (!IndexTensor(ins[i])) {
            return Support::No("OpenCL runs " + name + " with int32 or int64 indices only");
          }
          break;
        case opencl::InputUse::kUnread:
          break;
      }
    }
    auto shape = [&](size_t i) -> const std::vector<ir::PrimExpr>& {
      return *call.args[i]->struct_info->shape;
    };
    switch (*family) {
      case Family::kElementwise: {
        std::vector<std::string> operands(call.args.size(), "x");
        std::vector<ir::DataType> types;
        for (const ir::StructInfo& t : ins) types.push_back(t->dtype);
        if (!opencl::TypedExpr(op->name, call.attrs, operands, types, outs[0]->dtype)) {
          std::string list;
          for (ir::DataType t : types) {
            list += (list.empty() ? "" : ", ") + std::string(ir::DataTypeName(t));
          }
          return Support::No("no OpenCL kernel for " + name + " on (" + list + ")");
        }
        for (size_t i = 0; i < call.args.size(); ++i) {
          if (!Broadcasts(shape(i), out)) {
            return Support::No("OpenCL: " + name + " broadcasts argument " + std::to_string(i) +
                               " in a way only the run decides");
          }
        }
        return Support::Yes();
      }
      case Family::kBatchNorm:
        return BatchNormForm(call, "OpenCL");
      case Family::kIdentity:
      case Family::kPRelu:
      case Family::kReduce:
      case Family::kPermute:
      case Family::kConcat:
      case Family::kSplit:
        return Support::Yes();
      case Family::kNorm: {
        // Parameters broadcast to the data as the compiler can tell; group norm's channels known.
        const std::vector<ir::PrimExpr>& x = shape(0);
        if (op->name == "nn.layer_norm" || op->name == "nn.rms_norm") {
          for (size_t i = 1; i < call.args.size(); ++i) {
            if (!Broadcasts(shape(i), x)) {
              return Support::No("OpenCL: " + name + " broadcasts a parameter in a way only the " +
                                 "run decides");
            }
          }
        }
        if (op->name == "nn.group_norm") {
          const int64_t* axis = call.attrs.Get<int64_t>("channel_axis");
          int64_t c = axis ? *axis : 1;
          if (c < 0) c += static_cast<int64_t>(x.size());
          if (c < 0 || c >= static_cast<int64_t>(x.size()) || !ir::AsInt(x[c])) {
            return Support::No("OpenCL runs " + name + " with a static channel count only");
          }
          const int64_t* groups = call.attrs.Get<int64_t>("num_groups");
          if (!groups || *groups < 1 || *ir::AsInt(x[c]) % *groups != 0) {
            return Support::No("OpenCL: " + name + ": num_groups does not divide the channels");
          }
        }
        return Support::Yes();
      }
      case Family::kSlice: {
        const std::vector<ir::PrimExpr>& x = shape(0);
        const auto* axes = call.attrs.Get<std::vector<int64_t>>("axes");
        for (int64_t a : axes ? *axes : std::vector<int64_t>{}) {
          if (a < 0) a += static_cast<int64_t>(x.size());
          if (a < 0 || a >= static_cast<int64_t>(x.size()) || !ir::AsInt(x[a])) {
            return Support::No("OpenCL runs " + name + " over axes of static size only");
          }
        }
        return Support::Yes();
      }
      case Family::kResize: {
        // Static shapes and constant roi / scales / sizes: the emitter computes the taps; their
        // tables (about 8 bytes a tap) stay well within OpenCL's 64 KiB of constant memory.
        const std::vector<ir::PrimExpr>& x = shape(0);
        if (x.size() != out.size()) return Support::No(name + ": ranks differ");
        for (size_t i = 1; i < call.args.size() && i < 4; ++i) {
          if (call.args[i]->kind != ir::ExprKind::kConstant) {
            return Support::No("OpenCL runs " + name + " with constant roi, scales and sizes only");
          }
        }
        const std::string* mode = call.attrs.Get<std::string>("mode");
        const bool* antialias = call.attrs.Get<bool>("antialias");
        int64_t taps = mode && *mode == "cubic" ? 4 : 2, entries = 0;
        for (size_t a = 0; a < x.size(); ++a) {
          std::optional<int64_t> i = ir::AsInt(x[a]), o = ir::AsInt(out[a]);
          if (!i || !o) return Support::No("OpenCL runs " + name + " on static shapes only");
          // Antialiased downscaling widens the filter by the ratio.
          int64_t widen = antialias && *antialias && *o > 0 && *o < *i ? (*i + *o - 1) / *o : 1;
          entries += *o * taps * widen;
        }
        if (entries > 4096) {
          return Support::No("OpenCL: " + name + "'s tables would not fit constant memory");
        }
        return Support::Yes();
      }
      case Family::kAttention: {
        size_t rank = shape(0).size();
        if ((rank != 3 && rank != 4) || shape(1).size() != rank || shape(2).size() != rank) {
          return Support::No("OpenCL runs " + name + " on query, key and value of rank 3 or 4");
        }
        if (rank == 3 &&
            (!call.attrs.Get<int64_t>("q_num_heads") || !call.attrs.Get<int64_t>("kv_num_heads"))) {
          return Support::No("OpenCL runs 3-D " + name + " with q_num_heads and kv_num_heads");
        }
        if (shape(3).size() > 4) return Support::No("OpenCL: " + name + " masks of rank 5");
        const ir::DataType* sp = call.attrs.Get<ir::DataType>("softmax_precision");
        if (sp && *sp != ir::DataType::kFloat32 && !(half && *sp == ir::DataType::kFloat16)) {
          return Support::No("OpenCL runs " + name +
                             "'s softmax in float32 (or float16, for float16 data) only");
        }
        return Support::Yes();
      }
      case Family::kBroadcastTo:
        if (ins[0]->dtype != outs[0]->dtype || !Broadcasts(shape(0), out)) {
          return Support::No("OpenCL: " + name + " broadcasts in a way only the run decides");
        }
        return Support::Yes();
      case Family::kFull:
        if (ins.size() < 2 || ins[1]->dtype != outs[0]->dtype) {
          return Support::No("OpenCL runs " + name + " with a value of the result's type only");
        }
        return Support::Yes();
      case Family::kArange:
        if (outs[0]->dtype != ir::DataType::kInt64 && outs[0]->dtype != ir::DataType::kInt32) {
          return Support::No("OpenCL runs " + name + " of int32 or int64 only");
        }
        return Support::Yes();
      case Family::kGatherNd: {
        const std::vector<ir::PrimExpr>& ind = shape(1);
        if (ind.empty() || !ir::AsInt(ind.back())) {
          return Support::No("OpenCL runs " + name + " with index tuples of static length only");
        }
        return Support::Yes();
      }
      case Family::kTake:
        if (shape(0).empty()) return Support::No(name + " from a scalar");
        return Support::Yes();
      case Family::kPad: {
        const std::string* mode = call.attrs.Get<std::string>("pad_mode");
        if (mode && *mode != "constant" && *mode != "edge" && *mode != "reflect" &&
            *mode != "wrap") {
          return Support::No("OpenCL: " + name + " in mode '" + *mode + "'");
        }
        return Support::Yes();
      }
      case Family::kSoftmax: {
        if (out.empty()) return Support::No(name + " of a scalar");
        const int64_t* p = call.attrs.Get<int64_t>("p");
        if (op->name == "nn.lp_normalize" && p && *p != 1 && *p != 2) {
          return Support::No("OpenCL runs " + name + " with p 1 or 2 only");
        }
        return Support::Yes();
      }
      case Family::kSpaceDepth:
        if (shape(0).size() != 4) return Support::No("OpenCL runs " + name + " on 4-D NCHW only");
        return Support::Yes();
      case Family::kMatmul: {
        // numpy's matmul: 1-D operands a row / column; batch dims broadcast where the compiler
        // can tell which side does.
        const std::vector<ir::PrimExpr>& a = shape(0);
        const std::vector<ir::PrimExpr>& b = shape(1);
        if (a.empty() || b.empty()) return Support::No("OpenCL runs " + name + " on tensors only");
        std::vector<ir::PrimExpr> ab(a.begin(), a.end() - std::min<size_t>(a.size(), 2));
        std::vector<ir::PrimExpr> bb(b.begin(), b.end() - std::min<size_t>(b.size(), 2));
        size_t matrix = (a.size() > 1) + (b.size() > 1);
        if (out.size() < matrix) return Support::No(name + ": the result's rank");
        std::vector<ir::PrimExpr> batch(out.begin(), out.end() - static_cast<long>(matrix));
        if (!Broadcasts(ab, batch) || !Broadcasts(bb, batch)) {
          return Support::No("OpenCL: " + name +
                             " broadcasts a batch in a way only the run decides");
        }
        return Support::Yes();
      }
      case Family::kGridSample: {
        size_t rank = shape(0).size();
        if (rank < 3 || rank > 5 || shape(1).size() != rank || out.size() != rank) {
          return Support::No("OpenCL runs " + name + " on 1 to 3 spatial dims only");
        }
        return Support::Yes();
      }
      case Family::kRotary:
        if (shape(0).size() != 4 &&
            !(shape(0).size() == 3 && call.attrs.Get<int64_t>("num_heads"))) {
          return Support::No("OpenCL runs " + name + " on 4-D data, or 3-D with num_heads");
        }
        return Support::Yes();
      case Family::kCausalConv:
        if (shape(0).size() != 3 || shape(1).size() != 3) {
          return Support::No("OpenCL runs " + name + " on 3-D data and weight only");
        }
        return Support::Yes();
      case Family::kAdaptivePool:
        if (shape(0).size() < 3 || shape(0).size() > 5) {
          return Support::No("OpenCL runs " + name + " on 1 to 3 spatial dims only");
        }
        return Support::Yes();
      case Family::kPool: {
        const std::vector<ir::PrimExpr>& x = shape(0);
        if (x.size() < 3 || x.size() > 5) {
          return Support::No("OpenCL runs " + name + " on 1 to 3 spatial dims only");
        }
        return SamePaddingOverStaticDims(call, x, name);
      }
      case Family::kConv:
      case Family::kConvTranspose: {
        const std::vector<ir::PrimExpr>& x = shape(0);
        const std::vector<ir::PrimExpr>& w = shape(1);
        if (x.size() < 3 || x.size() > 5 || w.size() != x.size() || out.size() != x.size()) {
          return Support::No("OpenCL runs " + name + " on 1 to 3 spatial dims only");
        }
        for (size_t i = 1; i < w.size(); ++i) {
          if (!ir::AsInt(w[i])) return Support::No("OpenCL runs " + name + " with a static weight");
        }
        return SamePaddingOverStaticDims(call, x, name);
      }
      case Family::kConv2d:
      case Family::kPool2d:
      case Family::kGlobalPool: {
        const std::vector<ir::PrimExpr>& x = shape(0);
        if (x.size() != 4 || out.size() != 4) {
          return Support::No("OpenCL runs " + name + " on 4-D NCHW tensors only");
        }
        if (*family == Family::kGlobalPool) return Support::Yes();  // any output size
        if (*family == Family::kConv2d) {
          const std::vector<ir::PrimExpr>& w = shape(1);
          if (w.size() != 4 || !ir::AsInt(w[2]) || !ir::AsInt(w[3]) || !ir::AsInt(w[1])) {
            return Support::No("OpenCL runs " + name + " with a static 4-D weight only");
          }
        }
        return SamePaddingOverStaticDims(call, x, name);
      }
    }
    return Support::No("no OpenCL kernel for " + name);
  }
};

}  // namespace

const Capability& OpenClCapability() {
  static const OpenCl backend;
  return backend;
}

}  // namespace quilt::targets
