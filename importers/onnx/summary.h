// A summary of an ONNX model without importing it: what quilt-inspect prints.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "importers/onnx/graph.h"

namespace quilt::importers::onnx {

struct ValueSummary {
  std::string name;
  std::string dtype;              // "float32"; "?" when not a tensor
  std::vector<std::string> dims;  // "3", "batch", "?"; empty with has_shape false: unknown rank
  bool has_shape = false;
  bool has_default = false;  // an input that is also an initializer
};

struct ModelSummary {
  int64_t ir_version = 0;
  std::string producer;
  std::map<std::string, int64_t> opsets;  // "" is the default domain
  std::vector<ValueSummary> inputs, outputs;
  int64_t initializers = 0;
  int64_t initializer_bytes = 0;             // inline data only
  std::map<std::string, int> op_histogram;   // "Conv" or "domain.Op" -> count
  std::vector<UnsupportedNode> unsupported;  // nodes with no converter
};

// Reads and summarizes `path`; only unreadable files are errors.
Expected<ModelSummary> SummarizeOnnxFile(const std::string& path);

// Text for a terminal.
std::string FormatSummary(const ModelSummary& s);

}  // namespace quilt::importers::onnx
