// Small helpers shared by the passes that place tensors on virtual devices.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/builder.h"
#include "ir/module.h"

namespace quilt::passes {

using VDeviceMap = std::function<std::optional<ir::VDevice>(const std::optional<ir::VDevice>&)>;

// `s` with every tensor's vdevice (tuple fields included) replaced by `map(vdevice)`.
ir::StructInfo MapVDevices(const ir::StructInfo& s, const VDeviceMap& map);

// The list entry an R.hint_on_device call names (its device_type and index attributes), or a
// diagnostic "R.hint_on_device: ..." when it names none.
Expected<int> HintTarget(const ir::CallNode& hint, const std::vector<ir::VDevice>& list);

// The host: the last entry whose target runs on the CPU; the last entry when none does.
// -1 for an empty list.
int HostVDevice(const std::vector<ir::VDevice>& list);

}  // namespace quilt::passes

namespace quilt::passes {

// The module with the vdevice list `list`, every vdevice annotation (parameters, bindings,
// returns, constants, to_vdevice destinations) replaced by `map(old)`, and every struct info
// inferred again.
Expected<ir::IRModule> RemapVDevices(const ir::IRModule& mod, std::vector<ir::VDevice> list,
                                     const VDeviceMap& map);

}  // namespace quilt::passes
