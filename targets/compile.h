// The compiler as one call: import an ONNX model, normalize, lower, write the package.
//
//   quilt::compiler::CompileOptions options;
//   options.import.input_shapes["x"] = {1, 3, 48, 192};
//   Expected<std::vector<uint8_t>> bytes = CompileOnnxFile("model.onnx", options);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "importers/onnx/importer.h"
#include "ir/module.h"
#include "targets/lower.h"

namespace quilt::compiler {

struct CompileOptions {
  importers::onnx::ImportOptions import;
  // Target strings, in priority order; today only "llvm" (the CPU).
  std::vector<std::string> devices = {"llvm"};
  LowerOptions lower;
};

Expected<std::vector<uint8_t>> CompileModule(const ir::IRModule& module,
                                             const CompileOptions& options,
                                             const std::string& source_name = "",
                                             const std::string& source_sha256 = "");
Expected<std::vector<uint8_t>> CompileOnnxFile(const std::string& path,
                                               const CompileOptions& options = {});

// Hex SHA-256 of a byte range (the source model's fingerprint in the package metadata).
std::string Sha256Hex(const void* data, size_t size);

}  // namespace quilt::compiler
