// The compiler as one call: the fixed pipeline from an ONNX model (or a module) to a package.
//
//   import, normalize, update-vdevice (the --device list, the CPU appended as host when it is
//   not in it), placement rules (--place) as hints, realize-vdevice{fill=false hints=keep},
//   assign, simplify, fold-constants, partition, insert-device-copies, lower per target,
//   package.
//
//   quilt::compiler::CompileOptions options;
//   options.import.input_shapes["x"] = {1, 3, 48, 192};
//   Expected<Compiled> c = CompileOnnx("model.onnx", options);   // c->package, c->report
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "importers/onnx/importer.h"
#include "ir/module.h"
#include "passes/assign.h"
#include "targets/lower.h"
#include "targets/placement_report.h"

namespace quilt::compiler {

struct CompileOptions {
  importers::onnx::ImportOptions import;
  // Target strings, in priority order ("opencl", "llvm"); empty: the module's own vdevice list,
  // or the CPU alone when it has none.
  std::vector<std::string> devices = {"llvm"};
  // Placement rules: op:TYPE=DEVICE, node:GLOB=DEVICE, region:FROM..TO=DEVICE.
  std::vector<std::string> place;
  // Any fallback from the first device is an error listing each op.
  bool strict = false;
  // Portable package (quiltc --portable): every accelerator device may fall back to the CPU when
  // it is absent at load; compiling checks that the CPU has a kernel for each of its steps.
  bool portable = false;
  // Fragments of at most this many cheap ops between host ops stay on the host (assign.h).
  int max_fragment_ops = 3;
  // Which device can run which op; by default each target's own answer. Tests use fakes.
  std::function<targets::Support(const ir::VDevice&, const ir::CallNode&)> supports;
  // Run fold-constants after simplify (batch_norm folded into the conv2d before it).
  bool fold_constants = true;
  // Called with the module after each step of the pipeline (--print-ir-after-all).
  std::function<void(const std::string& step, const ir::IRModule&)> after_step;
  LowerOptions lower;
};

struct Compiled {
  std::vector<uint8_t> package;
  PlacementReport report;
  ir::IRModule module;  // after the last pass, before lowering
};

// Runs the pipeline from a normalized module.
Expected<Compiled> Compile(const ir::IRModule& module, const CompileOptions& options,
                           const std::string& source_name = "",
                           const std::string& source_sha256 = "");
Expected<Compiled> CompileOnnx(const std::string& path, const CompileOptions& options = {});
// A module in the text form (TVMScript as TVM prints it, `.qir`): parsed, verified and compiled
// from its function "main". With options.devices empty, the module's own vdevice list is kept.
Expected<Compiled> CompileText(const std::string& path, const CompileOptions& options = {});

Expected<std::vector<uint8_t>> CompileModule(const ir::IRModule& module,
                                             const CompileOptions& options,
                                             const std::string& source_name = "",
                                             const std::string& source_sha256 = "");
Expected<std::vector<uint8_t>> CompileOnnxFile(const std::string& path,
                                               const CompileOptions& options = {});

// Hex SHA-256 of a byte range (the source model's fingerprint in the package metadata).
std::string Sha256Hex(const void* data, size_t size);

}  // namespace quilt::compiler
