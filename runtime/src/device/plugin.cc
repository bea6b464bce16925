#include "runtime/src/device/plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace quilt::rt {
namespace {

// The folder this code was loaded from (the executable or libquilt.so).
std::string OwnFolder() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&OwnFolder), &info) == 0 || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::vector<std::string> SearchFolders() {
  std::vector<std::string> folders;
  if (const char* env = std::getenv("QUILT_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t colon = list.find(':', start);
      if (colon == std::string::npos) colon = list.size();
      if (colon > start) folders.push_back(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  std::string own = OwnFolder();
  if (!own.empty()) {
    folders.push_back(own);
    folders.push_back(own + "/../lib");
  }
  return folders;
}

struct Loaded {
  Status status;
  const DevicePlugin* plugin = nullptr;
};

Loaded Open(DeviceKind kind) {
  std::string file = DevicePluginFile(kind);
  std::string tried;
  void* handle = nullptr;
  for (const std::string& folder : SearchFolders()) {
    std::string path = folder + "/" + file;
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* why = dlerror();
    // A plug-in that is there but cannot be opened (its own libraries missing) is the answer.
    if (why && std::string(why).find("No such file") == std::string::npos) {
      return {Status::Error(path + " cannot be opened: " + why), nullptr};
    }
    tried += (tried.empty() ? "" : ", ") + folder;
  }
  if (!handle) {
    handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      return {Status::Error(file + " was not found (looked in " + tried +
                            ", then the loader's path" + (why ? ": " + std::string(why) : "") +
                            "); set QUILT_PLUGIN_PATH to its folder"),
              nullptr};
    }
  }
  auto fn = reinterpret_cast<QuiltDevicePluginFn>(dlsym(handle, "quilt_device_plugin"));
  if (!fn) return {Status::Error(file + " is not a quilt device plug-in"), nullptr};
  const DevicePlugin* plugin = fn();
  if (!plugin || plugin->abi != kDevicePluginAbi || plugin->kind != kind || !plugin->create) {
    return {Status::Error(file + " was built for another quilt runtime (plug-in ABI " +
                          std::to_string(plugin ? plugin->abi : -1) + ", this runtime's is " +
                          std::to_string(kDevicePluginAbi) + ")"),
            nullptr};
  }
  // Kept open for the life of the process: its devices may outlive any one session.
  return {Status::Ok(), plugin};
}

}  // namespace

std::string DevicePluginFile(DeviceKind kind) {
  return "libquilt_" + std::string(DeviceKindName(kind)) + ".so";
}

Status LoadDevicePlugin(DeviceKind kind, const DevicePlugin** out) {
  static std::mutex mutex;
  static std::map<DeviceKind, Loaded> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(kind);
  if (it == loaded.end()) it = loaded.emplace(kind, Open(kind)).first;
  *out = it->second.plugin;
  return it->second.status;
}

}  // namespace quilt::rt

#if defined(__SANITIZE_ADDRESS__)
// In sanitizer builds only: a plug-in's driver may bring a compiler that keeps its state until
// the process exits (PoCL builds OpenCL kernels with LLVM and never frees that compiler's
// caches). LeakSanitizer reports that as leaks of the driver's own allocations; they are not
// ours, and only frames inside those libraries are excused.
extern "C" __attribute__((visibility("default"))) const char* __lsan_default_suppressions() {
  return "leak:libpocl\nleak:libLLVM\nleak:libclang-cpp\n";
}
#endif
