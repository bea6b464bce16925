// What the OpenCL back end can run: the ops its emitter writes code for (elementwise.h), on
// float32 tensors of known shape, with broadcasting that the compiler can see (each argument dim
// either 1 or the result's own dim). Everything else stays on another device, with the reason.
#include "targets/capability.h"

#include "ir/op.h"
#include "ir/prim_expr.h"
#include "targets/opencl/elementwise.h"

namespace quilt::targets {
namespace {

class OpenCl : public Capability {
 public:
  Support Supports(const ir::CallNode& call) const override {
    const ir::OpInfo* op = call.op();
    if (!op) return Support::Yes();  // calls of functions: their ops are placed one by one
    std::string name = "R." + op->name;
    std::vector<std::string> operands(call.args.size(), "x");
    if (!opencl::FloatExpr(op->name, call.attrs, operands)) {
      return Support::No("no OpenCL kernel for " + name + " yet");
    }
    const ir::StructInfo& result = call.struct_info;
    if (!FloatTensorOfKnownShape(result)) {
      return Support::No("OpenCL runs " + name + " on float32 tensors of known shape only");
    }
    const std::vector<ir::PrimExpr>& out = *result->shape;
    for (size_t i = 0; i < call.args.size(); ++i) {
      const ir::StructInfo& arg = call.args[i]->struct_info;
      if (!FloatTensorOfKnownShape(arg)) {
        return Support::No("OpenCL runs " + name + " on float32 tensors of known shape only");
      }
      const std::vector<ir::PrimExpr>& in = *arg->shape;
      if (in.size() > out.size()) return Support::No(name + ": an argument of higher rank");
      size_t lead = out.size() - in.size();
      for (size_t j = 0; j < in.size(); ++j) {
        std::optional<int64_t> v = ir::AsInt(in[j]);
        if ((v && *v == 1) || ir::PrimEqual(in[j], out[lead + j])) continue;
        return Support::No("OpenCL: " + name + " broadcasts dim " + std::to_string(j) +
                           " of argument " + std::to_string(i) + " in a way only the run decides");
      }
    }
    return Support::Yes();
  }

 private:
  static bool FloatTensorOfKnownShape(const ir::StructInfo& s) {
    return s && s->IsTensor() && s->dtype == ir::DataType::kFloat32 && s->shape.has_value();
  }
};

}  // namespace

const Capability& OpenClCapability() {
  static const OpenCl backend;
  return backend;
}

}  // namespace quilt::targets
