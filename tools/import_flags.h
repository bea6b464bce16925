// --input-shape and --input-value, as quiltc and quilt-inspect take them.
#pragma once

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "importers/onnx/importer.h"
#include "tools/cli.h"

namespace quilt::tools {

// "x:1,3,224,224" -> name and dims.
inline bool ParseInputShape(const std::string& text, std::string* name,
                            std::vector<int64_t>* dims) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *name = text.substr(0, colon);
  dims->clear();
  std::string rest = text.substr(colon + 1) + ",";
  std::string num;
  for (char c : rest) {
    if (c == ',') {
      if (num.empty() && rest != ",") return false;
      if (!num.empty()) {
        if (num.size() > 15) return false;
        dims->push_back(std::stoll(num));
      }
      num.clear();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      num.push_back(c);
    } else {
      return false;
    }
  }
  return true;
}

// "sr=16000" or "scales=1,1,2,2" -> name and numbers.
inline bool ParseInputValue(const std::string& text, std::string* name,
                            std::vector<double>* values) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return false;
  *name = text.substr(0, eq);
  values->clear();
  size_t pos = eq + 1;
  for (;;) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    char* end = nullptr;
    double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0') return false;
    values->push_back(v);
    if (comma == std::string::npos) return true;
    pos = comma + 1;
  }
}

// --input-shape and --input-value, as quiltc and quilt-inspect take them.
struct ImportFlags {
  std::vector<std::string> shapes, values;
  importers::onnx::ImportOptions limits;  // its max_* fields only
  std::string max_model_bytes;

  void Add(CLI::App& app) {
    app.add_option("--input-shape", shapes, "fix an input's shape: NAME:D,D,...");
    app.add_option("--input-value", values,
                   "freeze an input to a value at compile time: NAME=V,V,... (in the input's "
                   "declared dtype and shape); the input leaves the package's signature");
    app.add_option("--max-nesting", limits.max_nesting,
                   "the deepest nesting of subgraphs and functions a model may have (default " +
                       std::to_string(limits.max_nesting) + ")")
        ->check(CLI::Range(1, 1000));
    app.add_option("--max-inlined-nodes", limits.max_inlined_nodes,
                   "the most nodes that inlining model-local functions may make (default " +
                       std::to_string(limits.max_inlined_nodes) + ")")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    app.add_option("--max-model-bytes", max_model_bytes,
                   "the largest model file (default 2G - 1: protobuf's limit, which is also the "
                   "most this option takes)")
        ->check(ByteSize());
  }

  // Fills `options`; the exit code for a malformed flag (2), or nullopt.
  // Warnings go to stderr.
  std::optional<int> Apply(const char* tool, importers::onnx::ImportOptions* options) const {
    options->max_nesting = limits.max_nesting;
    options->max_inlined_nodes = limits.max_inlined_nodes;
    if (!max_model_bytes.empty()) {
      uint64_t bytes = *ParseByteSize(max_model_bytes);
      if (bytes > uint64_t{2147483647}) {
        std::cerr << tool << ": error: --max-model-bytes " << max_model_bytes
                  << ": an ONNX model file holds at most 2147483647 bytes (2G - 1); larger "
                     "weights go in external data files\n";
        return 2;
      }
      options->max_model_bytes = static_cast<int64_t>(bytes);
    }
    options->warn = [tool](const Diagnostic& d) {
      std::cerr << tool << ": warning: " << d.ToString() << "\n";
    };
    for (const std::string& s : shapes) {
      std::string name;
      std::vector<int64_t> dims;
      if (!ParseInputShape(s, &name, &dims)) {
        std::cerr << tool << ": error: --input-shape '" << s << "': expected NAME:D,D,...\n";
        return 2;
      }
      options->input_shapes[name] = dims;
    }
    for (const std::string& v : values) {
      std::string name;
      importers::onnx::InputValue value;
      if (!ParseInputValue(v, &name, &value.numbers)) {
        std::cerr << tool << ": error: --input-value '" << v << "': expected NAME=V,V,...\n";
        return 2;
      }
      options->input_values[name] = value;
    }
    return std::nullopt;
  }
};

}  // namespace quilt::tools
