// The ONNX importer: ModelProto -> ir::IRModule with one function, "main", whose parameters
// are the graph inputs and whose result is the graph outputs (a tuple when there are several).
//
//   quilt::importers::onnx::ImportOptions options;
//   options.input_shapes["x"] = {1, 3, 224, 224};
//   Expected<ir::IRModule> mod = ImportOnnxFile("model.onnx", options);
//   if (!mod) std::cerr << mod.error().ToString();  // names the file, node, op type, opset
//
// Every unsupported op is reported in one diagnostic listing node name, op type, domain and
// opset for each; malformed models are diagnostics, never crashes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/module.h"

namespace quilt::importers::onnx {

// IR versions and default-domain opsets this importer reads.
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 14;
// Older opsets are read node by node: a node imports when a converter covers its op at that
// opset (`since` in the converter table), so unchanged ops of opsets 1-6 work.
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 28;

// A tensor value given for a graph input (little-endian elements, row-major). With dtype kVoid,
// `numbers` are the elements instead, converted to the input's declared dtype and shape (as
// `quiltc --input-value sr=16000` gives them).
struct InputValue {
  ir::DataType dtype = ir::DataType::kVoid;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::vector<double> numbers = {};
};

struct ImportOptions {
  // Fixes the shape of graph inputs by name (replacing symbolic or missing dims).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Fixes graph inputs to values: they become constants (as TVM's freeze_params does), so shape
  // computations that read them are resolved at compile time.
  std::map<std::string, InputValue> input_values;
  // Nesting limit for subgraphs (If/Loop/Scan bodies) and model-local functions; the protobuf
  // parser takes messages nested 8 deep per level (and 64 more).
  int max_nesting = 32;
  // Nodes that inlining model-local functions may add in all (functions that call each other
  // several times multiply).
  int64_t max_inlined_nodes = 1'000'000;
  // The model file's size: at most 2 GiB - 1 (protobuf's limit; weights beyond belong in
  // external data), checked before the file is read.
  int64_t max_model_bytes = 2147483647;
  // Told what the importer accepts but the user should know (a graph output whose declared
  // shape disagrees with the shape it computes: the computed one is used, as ONNX Runtime
  // does). Unset: not told.
  std::function<void(const Diagnostic&)> warn = {};
};

// Reads `path`; external data files are resolved inside the model's folder only.
Expected<ir::IRModule> ImportOnnxFile(const std::string& path, const ImportOptions& options = {});

// From memory. `model_dir` is where external data may be read from (empty: external data is an
// error); `name` names the model in messages.
Expected<ir::IRModule> ImportOnnxBytes(const void* data, size_t size, const std::string& model_dir,
                                       const std::string& name, const ImportOptions& options = {});

}  // namespace quilt::importers::onnx
