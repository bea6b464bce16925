// update-vdevice: sets the module's list of virtual devices from the deployment.
//
//   update-vdevice{target="cuda -arch=sm_80"}                  appends an entry
//   update-vdevice{index=1 target="cuda -arch=sm_80" id=0 scope="global"}
//                                                              replaces entry 1: every tensor
//                                                              on it moves to the new entry
//   update-vdevice{reset="llvm;opencl"}                        replaces the whole list
//
// `id` and `scope` default to 0 and "global"; in a reset, a target kind listed again gets the next
// id ("llvm;llvm": the CPU seen as two devices, ids 0 and 1). A reset keeps every tensor whose
// vdevice is in the new list; one on a dropped entry is an error naming the entry (replace it by
// index instead). Inferred struct info follows the change.
#include <map>
#include <sstream>

#include "ir/parser.h"
#include "passes/pass.h"
#include "passes/vdevice_util.h"

namespace quilt::passes {
namespace {

Expected<ir::VDevice> MakeVDevice(const std::string& target, int64_t id, const std::string& scope) {
  Expected<ir::Target> t = ir::ParseTarget(target);
  if (!t) return t.error();
  if (id < 0) return Error("vdevice id " + std::to_string(id) + " is negative");
  if (scope.empty()) return Error("empty memory scope");
  return ir::VDevice{*t, static_cast<int>(id), scope};
}

// The first place a tensor sits on `d`, for messages: "function 'main', parameter 'x'".
std::string FirstUse(const ir::IRModule& mod, const ir::VDevice& d) {
  auto on = [&](const ir::StructInfo& s) {
    bool found = false;
    MapVDevices(s, [&](const std::optional<ir::VDevice>& v) {
      found |= v == d;
      return v;
    });
    return found;
  };
  for (const auto& [name, f] : mod.functions) {
    for (const ir::Var& p : f->params) {
      if (on(p->struct_info)) return "function '" + name + "', parameter '" + p->name_hint + "'";
    }
    for (const ir::BindingBlock& b : f->body->blocks) {
      for (const ir::Binding& bind : b.bindings) {
        if (on(bind.var->struct_info)) {
          return "function '" + name + "', binding '" + bind.var->name_hint + "'";
        }
      }
    }
    if (on(f->ret_struct_info)) return "function '" + name + "', return";
  }
  return "";
}

Expected<ir::IRModule> Reset(const ir::IRModule& mod, const std::string& targets) {
  std::vector<ir::VDevice> list;
  std::stringstream in(targets);
  std::string item;
  std::map<std::string, int> seen;  // entries so far per target kind
  while (std::getline(in, item, ';')) {
    // A kind named again is the next device of that kind: "cuda;cuda" is GPUs 0 and 1,
    // "llvm;llvm" the CPU seen as two devices. "-device=N" names the machine's device N.
    Expected<ir::Target> t = ir::Target::Parse(item);
    int id = t ? seen[t->kind]++ : 0;
    if (t && t->attrs.count("device")) {
      const std::string n = t->Attr("device");
      if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos) {
        return Error("reset=\"" + targets + "\": -device=" + n + " is not a device number");
      }
      id = std::stoi(n);
    }
    Expected<ir::VDevice> d = MakeVDevice(item, id, "global");
    if (!d) return Error("reset=\"" + targets + "\": " + d.error().message);
    list.push_back(*d);
  }
  if (list.empty()) return Error("reset=\"\" leaves no vdevice");
  for (const ir::VDevice& old : mod.vdevices) {
    bool kept = false;
    for (const ir::VDevice& d : list) kept |= d == old;
    if (kept) continue;
    std::string use = FirstUse(mod, old);
    if (!use.empty()) {
      return Error("reset=\"" + targets + "\" drops vdevice " + old.ToString() + ", which " + use +
                   " is on; replace that entry with index= instead");
    }
  }
  return RemapVDevices(mod, std::move(list), [](const std::optional<ir::VDevice>& v) { return v; });
}

// Replaces entry `at` with `d` (appends when `at` is negative).
Expected<ir::IRModule> Update(const ir::IRModule& mod, const ir::VDevice& d, int64_t at) {
  std::vector<ir::VDevice> list = mod.vdevices;
  if (at >= static_cast<int64_t>(list.size())) {
    return Error("update-vdevice: index " + std::to_string(at) +
                 " is past the end of the vdevice list " + ir::ListVDevices(list) +
                 " (leave index out to append)");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (static_cast<int64_t>(i) != at && list[i] == d) {
      return Error("update-vdevice: " + d.ToString() + " is already entry " + std::to_string(i) +
                   " of the vdevice list");
    }
  }
  if (at < 0) {
    list.push_back(d);
    return RemapVDevices(mod, std::move(list),
                         [](const std::optional<ir::VDevice>& v) { return v; });
  }
  ir::VDevice old = list[static_cast<size_t>(at)];
  list[static_cast<size_t>(at)] = d;
  return RemapVDevices(mod, std::move(list), [old, d](const std::optional<ir::VDevice>& v) {
    return v == old ? std::optional<ir::VDevice>(d) : v;
  });
}

}  // namespace

Expected<Pass> CreateUpdateVDevice(const PassSpec& spec) {
  if (Status s = CheckOptions(spec, {"index", "target", "id", "scope", "reset"}); !s) {
    return s.error();
  }
  std::string reset = StrOption(spec, "reset", "");
  if (spec.options.count("reset")) {
    if (spec.options.size() != 1) {
      return Error(
          "pass 'update-vdevice': reset= replaces the whole list and takes no other "
          "option");
    }
    return Pass{"update-vdevice", [reset](const ir::IRModule& mod) { return Reset(mod, reset); }};
  }
  if (!spec.options.count("target")) {
    return Error("pass 'update-vdevice' needs target=\"...\" (or reset=\"a;b\")");
  }
  Expected<int64_t> index = IntOption(spec, "index", -1);
  if (!index) return index.error();
  if (spec.options.count("index") && *index < 0) {
    return Error("pass 'update-vdevice': index " + std::to_string(*index) + " is negative");
  }
  Expected<int64_t> id = IntOption(spec, "id", 0);
  if (!id) return id.error();
  Expected<ir::VDevice> entry =
      MakeVDevice(StrOption(spec, "target", ""), *id, StrOption(spec, "scope", "global"));
  if (!entry) return Error("pass 'update-vdevice': " + entry.error().message);
  ir::VDevice d = *entry;
  int64_t at = *index;
  return Pass{"update-vdevice", [d, at](const ir::IRModule& mod) { return Update(mod, d, at); }};
}

}  // namespace quilt::passes
