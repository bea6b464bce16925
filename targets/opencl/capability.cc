// What the OpenCL back end can run: the op families of ops.h on float32 tensors whose shapes the
// compiler knows, within each family's limits (below). Everything else stays on another device,
// with the reason in the placement report.
#include "targets/capability.h"

#include "ir/op.h"
#include "ir/prim_expr.h"
#include "targets/opencl/elementwise.h"
#include "targets/opencl/ops.h"

namespace quilt::targets {
namespace {

using opencl::Family;

bool FloatTensor(const ir::StructInfo& s) {
  return s && s->IsTensor() && s->dtype == ir::DataType::kFloat32 && s->shape.has_value();
}

bool IsInt(const ir::PrimExpr& e, int64_t v) {
  std::optional<int64_t> i = ir::AsInt(e);
  return i && *i == v;
}

class OpenCl : public Capability {
 public:
  Support Supports(const ir::CallNode& call) const override {
    const ir::OpInfo* op = call.op();
    if (!op) return Support::Yes();  // calls of functions: their ops are placed one by one
    std::string name = "R." + op->name;
    std::optional<Family> family = opencl::FamilyOf(op->name);
    if (!family) return Support::No("no OpenCL kernel for " + name + " yet");
    std::string float_only = "OpenCL runs " + name + " on float32 tensors of known shape only";
    if (!FloatTensor(call.struct_info)) return Support::No(float_only);
    const std::vector<ir::PrimExpr>& out = *call.struct_info->shape;
    // The tensors a family's kernel reads (reshape's shape and the like are not data).
    size_t data_args = *family == Family::kIdentity || *family == Family::kSoftmax ||
                               *family == Family::kPool2d || *family == Family::kGlobalPool
                           ? 1
                           : call.args.size();
    if (call.args.size() < data_args) return Support::No(name + ": too few arguments");
    for (size_t i = 0; i < data_args; ++i) {
      if (!FloatTensor(call.args[i]->struct_info)) return Support::No(float_only);
    }
    auto shape = [&](size_t i) -> const std::vector<ir::PrimExpr>& {
      return *call.args[i]->struct_info->shape;
    };
    switch (*family) {
      case Family::kElementwise: {
        std::vector<std::string> operands(call.args.size(), "x");
        if (!opencl::FloatExpr(op->name, call.attrs, operands)) {
          return Support::No("no OpenCL kernel for " + name + " with " +
                             std::to_string(call.args.size()) + " arguments");
        }
        for (size_t i = 0; i < call.args.size(); ++i) {
          const std::vector<ir::PrimExpr>& in = shape(i);
          if (in.size() > out.size()) return Support::No(name + ": an argument of higher rank");
          size_t lead = out.size() - in.size();
          for (size_t j = 0; j < in.size(); ++j) {
            if (IsInt(in[j], 1) || ir::PrimEqual(in[j], out[lead + j])) continue;
            return Support::No("OpenCL: " + name + " broadcasts dim " + std::to_string(j) +
                               " of argument " + std::to_string(i) +
                               " in a way only the run decides");
          }
        }
        return Support::Yes();
      }
      case Family::kIdentity:
      case Family::kBatchNorm:
        return Support::Yes();
      case Family::kSoftmax:
        if (out.empty()) return Support::No(name + " of a scalar");
        return Support::Yes();
      case Family::kMatmul: {
        const std::vector<ir::PrimExpr>& a = shape(0);
        const std::vector<ir::PrimExpr>& b = shape(1);
        if (a.size() < 2 || b.size() < 2 || out.size() != a.size()) {
          return Support::No("OpenCL runs " + name + " on operands of rank 2 or more only");
        }
        if (b.size() != 2) {
          if (b.size() != a.size()) return Support::No("OpenCL: " + name + " broadcasts a batch");
          for (size_t j = 0; j + 2 < a.size(); ++j) {
            if (!ir::PrimEqual(a[j], b[j])) {
              return Support::No("OpenCL: " + name + " broadcasts a batch");
            }
          }
        }
        return Support::Yes();
      }
      case Family::kConv2d:
      case Family::kPool2d:
      case Family::kGlobalPool: {
        const std::vector<ir::PrimExpr>& x = shape(0);
        if (x.size() != 4 || out.size() != 4) {
          return Support::No("OpenCL runs " + name + " on 4-D NCHW tensors only");
        }
        if (*family == Family::kGlobalPool) {
          if (!IsInt(out[2], 1) || !IsInt(out[3], 1)) {
            return Support::No("OpenCL runs " + name + " to a 1 x 1 output only");
          }
          return Support::Yes();
        }
        if (*family == Family::kConv2d) {
          const std::vector<ir::PrimExpr>& w = shape(1);
          if (w.size() != 4 || !ir::AsInt(w[2]) || !ir::AsInt(w[3]) || !ir::AsInt(w[1])) {
            return Support::No("OpenCL runs " + name + " with a static 4-D weight only");
          }
        }
        const std::string* pad = call.attrs.Get<std::string>("auto_pad");
        bool same = pad && (*pad == "SAME_UPPER" || *pad == "SAME_LOWER");
        if (same && (!ir::AsInt(x[2]) || !ir::AsInt(x[3]))) {
          return Support::No("OpenCL: " + name + " pads SAME over spatial dims only the run knows");
        }
        return Support::Yes();
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
