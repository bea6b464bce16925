// Passes: a named module-to-module transformation with MLIR-style options.
//
//   Expected<Pass> p = CreatePass("update-vdevice{index=1 target=\"cuda -arch=sm_80\"}");
//   Expected<ir::IRModule> out = p->Run(mod);
//
// A pass never changes its input module; it returns a new one (sharing what it did not change).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"

namespace quilt::passes {

struct PassSpec {
  std::string name;
  std::map<std::string, std::string> options;
};

// "name" or "name{key=value key2="quoted value"}". A malformed spec is a diagnostic.
Expected<PassSpec> ParsePassSpec(std::string_view text);

struct Pass {
  std::string name;
  std::function<Expected<ir::IRModule>(const ir::IRModule&)> run;

  Expected<ir::IRModule> Run(const ir::IRModule& mod) const { return run(mod); }
};

struct PassInfo {
  const char* name;
  const char* summary;
  // Builds the pass from its options; an unknown or bad option is a diagnostic.
  Expected<Pass> (*create)(const PassSpec& spec);
};

// Every pass, in pipeline order (passes/registry.cc).
const std::vector<PassInfo>& AllPasses();

// Looks the pass up and builds it. Unknown names list the known ones.
Expected<Pass> CreatePass(const PassSpec& spec);
Expected<Pass> CreatePass(std::string_view text);

// Refuses options other than `known` with a message naming the pass and the known ones.
Status CheckOptions(const PassSpec& spec, const std::vector<std::string>& known);

// Option `key` as an integer (`fallback` when absent); not an integer is a diagnostic naming the
// pass and the option.
Expected<int64_t> IntOption(const PassSpec& spec, const std::string& key, int64_t fallback);
// Option `key` as text (`fallback` when absent).
std::string StrOption(const PassSpec& spec, const std::string& key, const std::string& fallback);

// The passes (one file each).
Expected<Pass> CreateNormalize(const PassSpec& spec);
Expected<Pass> CreateUpdateVDevice(const PassSpec& spec);
Expected<Pass> CreateRealizeVDevice(const PassSpec& spec);
Expected<Pass> CreateAssign(const PassSpec& spec);
Expected<Pass> CreateSimplify(const PassSpec& spec);
Expected<Pass> CreateFoldConstants(const PassSpec& spec);
Expected<Pass> CreatePartition(const PassSpec& spec);
Expected<Pass> CreateInsertDeviceCopies(const PassSpec& spec);

}  // namespace quilt::passes
