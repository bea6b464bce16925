// Target: what kind of code a device runs ("llvm", "cuda -arch=sm_80", "opencl") and
// VDevice: one entry of a module's virtual-device list (target, device id, memory scope).
// Both compare by value.
//
//   auto t = Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76");
//   t->kind == "llvm"; t->attrs.at("mcpu") == "cortex-a76"; t->DeviceType() == "cpu"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/diagnostic.h"

namespace quilt::ir {

// A target attribute's value: text ("sm_80"), an integer (max_num_threads), a flag, or a list
// (TVM's "keys": ["cuda", "gpu"]). The string form writes each as "-key=value", lists joined by
// commas; the dict form keeps the type, so TVM's canonical target dicts print back as they read.
using TargetAttr =
    std::variant<std::string, int64_t, bool, std::vector<std::string>, std::vector<int64_t>>;

// "-key=value" text of a value: "sm_80", "1024", "true", "cuda,gpu".
std::string TargetAttrText(const TargetAttr& v);

struct Target {
  std::string kind;
  std::map<std::string, TargetAttr> attrs;  // "-key=value" is text; a bare "-flag" is true

  // "kind -key=value -flag ...". Unknown kinds are an error listing the known ones.
  static Expected<Target> Parse(std::string_view text);
  // The dict form: {"kind": "cuda", "arch": "sm_80", "max_num_threads": 1024}.
  static Expected<Target> FromDict(const std::vector<std::pair<std::string, TargetAttr>>& kv);

  // The text of attribute `key` ("-key=value" form), or empty when absent.
  std::string Attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? "" : TargetAttrText(it->second);
  }

  // "cpu", "cuda", "opencl", ...: which physical kind of device runs this target.
  std::string DeviceType() const;
  // Canonical string form: kind first, then attributes sorted by key.
  std::string ToString() const;

  bool operator==(const Target&) const = default;
};

// The target kinds quilt knows and the device type each one runs on.
const std::vector<std::pair<std::string, std::string>>& KnownTargetKinds();

struct VDevice {
  Target target;
  int vdevice_id = 0;
  std::string memory_scope = "global";

  // Same physical device: same device type and id (memory scope and target attributes aside).
  bool SamePhysicalDevice(const VDevice& other) const {
    return target.DeviceType() == other.target.DeviceType() && vdevice_id == other.vdevice_id;
  }
  // For messages: `cuda -arch=sm_80 (id 0, global)`.
  std::string ToString() const;

  bool operator==(const VDevice&) const = default;
};

// The list for messages: `[0: llvm (id 0, global), 1: cuda (id 0, global)]`.
std::string ListVDevices(const std::vector<VDevice>& list);

// How an annotation names an entry of the module's vdevice list:
//   "kind" / "kind:i": the i-th (default 0) entry of that target kind;
//   "kind:i:scope": the same entry, which must have that memory scope (TVM prints this form);
//   "vdevice:j": entry j of the list.
// Returns the list index, or a diagnostic naming the string and the list.
Expected<int> ResolveDeviceString(std::string_view text, const std::vector<VDevice>& list);
// The shortest device string that names entry `index` of `list` ("cuda", "cuda:1", ...).
std::string DeviceString(int index, const std::vector<VDevice>& list);
// `tvm.cuda(0)`: the first entry whose device type is `device_type` with that id (and scope,
// when not empty). Returns the index or a diagnostic.
Expected<int> ResolvePhysicalDevice(std::string_view device_type, int id, std::string_view scope,
                                    const std::vector<VDevice>& list);

}  // namespace quilt::ir
