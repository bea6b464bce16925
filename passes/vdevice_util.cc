#include "passes/vdevice_util.h"

namespace quilt::passes {

ir::StructInfo MapVDevices(const ir::StructInfo& s, const VDeviceMap& map) {
  if (!s) return s;
  if (s->IsTensor()) return ir::WithVDevice(s, map(s->vdevice));
  if (s->kind != ir::StructInfoKind::kTuple && s->kind != ir::StructInfoKind::kFunc) return s;
  auto n = std::make_shared<ir::StructInfoNode>(*s);
  bool changed = false;
  for (ir::StructInfo& f : n->fields) {
    ir::StructInfo g = MapVDevices(f, map);
    changed |= g != f;
    f = g;
  }
  if (n->ret) {
    ir::StructInfo r = MapVDevices(n->ret, map);
    changed |= r != n->ret;
    n->ret = r;
  }
  return changed ? n : s;
}

Expected<int> HintTarget(const ir::CallNode& hint, const std::vector<ir::VDevice>& list) {
  const auto* type = hint.attrs.Get<std::string>("device_type");
  const auto* id = hint.attrs.Get<int64_t>("index");
  const auto* scope = hint.attrs.Get<std::string>("memory_scope");
  Expected<int> d = ir::ResolvePhysicalDevice(type ? *type : "", id ? static_cast<int>(*id) : 0,
                                              scope ? *scope : "global", list);
  if (!d) return Error("R.hint_on_device: " + d.error().message);
  return d;
}

int HostVDevice(const std::vector<ir::VDevice>& list) {
  for (int i = static_cast<int>(list.size()) - 1; i >= 0; --i) {
    if (list[static_cast<size_t>(i)].target.DeviceType() == "cpu") return i;
  }
  return static_cast<int>(list.size()) - 1;
}

}  // namespace quilt::passes

namespace quilt::passes {

Expected<ir::IRModule> RemapVDevices(const ir::IRModule& mod, std::vector<ir::VDevice> list,
                                     const VDeviceMap& map) {
  ir::IRModule in = mod;
  in.vdevices = std::move(list);
  ir::NormalizeHooks hooks;
  hooks.annotation = [&](const std::string&, const ir::Var& v) {
    return MapVDevices(v->struct_info, map);
  };
  hooks.ret = [&](const std::string&, const ir::StructInfo& s) { return MapVDevices(s, map); };
  hooks.call = [&](const std::string&, const ir::CallNode& call, const std::vector<ir::Expr>& args,
                   ir::NormalizeHooks::Emitter&) -> Expected<ir::Expr> {
    if (!call.op() || call.op()->kind != ir::OpKind::kToVDevice) return ir::Expr();
    ir::Attrs attrs = call.attrs;
    std::optional<ir::VDevice> dst = map(*attrs.Get<ir::VDevice>("dst_vdevice"));
    if (!dst) return Error("R.to_vdevice has no destination after the change");
    attrs.Set("dst_vdevice", *dst);
    return ir::MakeOpCall(*call.op(), args, attrs);
  };
  hooks.constant = [&](const std::string&, const ir::Expr& e) -> ir::Expr {
    const auto* c = ir::As<ir::ConstantNode>(e);
    std::optional<ir::VDevice> d = map(e->struct_info->vdevice);
    if (d == e->struct_info->vdevice) return nullptr;
    Expected<ir::Expr> n = ir::MakeConstant(c->dtype, c->shape, c->data, d);
    return n ? *n : nullptr;
  };
  return ir::NormalizeModule(in, hooks);
}

}  // namespace quilt::passes
