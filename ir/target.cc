#include "ir/target.h"

#include <charconv>
#include <optional>
#include <sstream>

namespace quilt::ir {
namespace {

std::string ListKinds() {
  std::string s;
  for (const auto& [kind, device] : KnownTargetKinds()) s += (s.empty() ? "" : ", ") + kind;
  return s;
}

bool ValidKind(const std::string& kind) {
  for (const auto& [k, device] : KnownTargetKinds()) {
    if (k == kind) return true;
  }
  return false;
}

}  // namespace

std::string TargetAttrText(const TargetAttr& v) {
  struct Visitor {
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string s;
      for (const std::string& x : l) s += (s.empty() ? "" : ",") + x;
      return s;
    }
    std::string operator()(const std::vector<int64_t>& l) const {
      std::string s;
      for (int64_t x : l) s += (s.empty() ? "" : ",") + std::to_string(x);
      return s;
    }
  };
  return std::visit(Visitor{}, v);
}

std::string ListVDevices(const std::vector<VDevice>& list) {
  std::string s = "[";
  for (size_t i = 0; i < list.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(i) + ": " + list[i].ToString();
  }
  return s + "]";
}

const std::vector<std::pair<std::string, std::string>>& KnownTargetKinds() {
  static const std::vector<std::pair<std::string, std::string>> kinds = {
      {"llvm", "cpu"},      {"c", "cpu"},           {"cuda", "cuda"},     {"nvptx", "cuda"},
      {"opencl", "opencl"}, {"metal", "metal"},     {"vulkan", "vulkan"}, {"rocm", "rocm"},
      {"webgpu", "webgpu"}, {"hexagon", "hexagon"},
  };
  return kinds;
}

Expected<Target> Target::Parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  Target t;
  if (!(in >> t.kind)) return Error("empty target string");
  if (!ValidKind(t.kind)) {
    return Error("unknown target kind '" + t.kind + "' in \"" + std::string(text) +
                 "\" (known: " + ListKinds() + ")");
  }
  std::string word;
  while (in >> word) {
    if (word.size() < 2 || word[0] != '-') {
      return Error("bad target attribute '" + word + "' in \"" + std::string(text) +
                   "\": expected -key=value");
    }
    size_t eq = word.find('=');
    std::string key = word.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
    if (key.empty()) return Error("empty attribute key in target \"" + std::string(text) + "\"");
    if (eq == std::string::npos) {
      t.attrs[key] = true;
    } else {
      t.attrs[key] = word.substr(eq + 1);
    }
  }
  return t;
}

Expected<Target> Target::FromDict(const std::vector<std::pair<std::string, TargetAttr>>& kv) {
  Target t;
  for (const auto& [key, value] : kv) {
    if (key == "kind") {
      const auto* kind = std::get_if<std::string>(&value);
      if (!kind) return Error("the target dict's \"kind\" must be a string");
      t.kind = *kind;
    } else {
      t.attrs[key] = value;
    }
  }
  if (t.kind.empty()) return Error("target dict has no \"kind\"");
  if (!ValidKind(t.kind)) {
    return Error("unknown target kind '" + t.kind + "' (known: " + ListKinds() + ")");
  }
  return t;
}

std::string Target::DeviceType() const {
  for (const auto& [k, device] : KnownTargetKinds()) {
    if (k == kind) return device;
  }
  return kind;
}

std::string Target::ToString() const {
  std::string s = kind;
  for (const auto& [key, value] : attrs) s += " -" + key + "=" + TargetAttrText(value);
  return s;
}

std::string VDevice::ToString() const {
  return target.ToString() + " (id " + std::to_string(vdevice_id) + ", " + memory_scope + ")";
}

Expected<int> ResolveDeviceString(std::string_view text, const std::vector<VDevice>& list) {
  std::string s(text);
  size_t colon = s.find(':');
  std::string kind = s.substr(0, colon);
  int index = 0;
  std::optional<std::string> scope;
  if (colon != std::string::npos) {
    size_t second = s.find(':', colon + 1);
    std::string_view num = std::string_view(s).substr(
        colon + 1, second == std::string::npos ? std::string::npos : second - colon - 1);
    if (second != std::string::npos) scope = s.substr(second + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    if (ec != std::errc() || ptr != num.data() + num.size() || num.empty() || index < 0 ||
        (scope && (scope->empty() || kind == "vdevice"))) {
      return Error("bad device string \"" + s + "\": expected \"kind\", \"kind:i\", " +
                   "\"kind:i:scope\" or \"vdevice:j\" with i, j >= 0");
    }
  }
  if (kind == "vdevice") {
    if (colon == std::string::npos || index >= static_cast<int>(list.size())) {
      return Error("device string \"" + s + "\" names no entry of the vdevice list " +
                   ListVDevices(list));
    }
    return index;
  }
  int seen = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].target.kind != kind) continue;
    if (seen++ != index) continue;
    if (scope && *scope != list[i].memory_scope) {
      return Error("device string \"" + s + "\" names entry " + std::to_string(i) + " (" +
                   list[i].ToString() + "), whose memory scope is \"" + list[i].memory_scope +
                   "\", not \"" + *scope + "\"");
    }
    return static_cast<int>(i);
  }
  return Error("device string \"" + s + "\" names no entry of the vdevice list " +
               ListVDevices(list));
}

std::string DeviceString(int index, const std::vector<VDevice>& list) {
  QUILT_CHECK(index >= 0 && index < static_cast<int>(list.size())) << index;
  const std::string& kind = list[index].target.kind;
  int ordinal = 0;
  for (int i = 0; i < index; ++i) ordinal += list[i].target.kind == kind;
  return ordinal == 0 ? kind : kind + ":" + std::to_string(ordinal);
}

Expected<int> ResolvePhysicalDevice(std::string_view device_type, int id, std::string_view scope,
                                    const std::vector<VDevice>& list) {
  if (id < 0) {
    return Error("device id " + std::to_string(id) + " of " + std::string(device_type) +
                 " is negative");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const VDevice& d = list[i];
    if (d.target.DeviceType() == device_type && d.vdevice_id == id &&
        (scope.empty() || d.memory_scope == scope)) {
      return static_cast<int>(i);
    }
  }
  return Error("no entry of the vdevice list " + ListVDevices(list) + " is " +
               std::string(device_type) + " device " + std::to_string(id));
}

}  // namespace quilt::ir
