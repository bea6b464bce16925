// Helpers shared by the two runs over the ONNX node tests (inference_test.cc: the importer's
// inferred types; run_test.cc: compiled and run on the CPU).
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "importers/onnx/importer.h"

namespace quilt::conformance {

namespace fs = std::filesystem;

// A baseline file: one test per line, a tab, then a reason or note; '#' lines are comments.
inline std::map<std::string, std::string> ReadBaseline(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    out[line.substr(0, tab)] = tab == std::string::npos ? "" : line.substr(tab + 1);
  }
  return out;
}

inline bool ReadTensorProto(const fs::path& p, onnx::TensorProto* t) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return t->ParseFromString(s.str());
}

// The op types of a model, joined with '+' ("Conv+Relu").
inline std::string OpTypes(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream in(model, std::ios::binary);
  if (!m.ParseFromIstream(&in)) return "?";
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  std::string s;
  for (const auto& o : ops) s += (s.empty() ? "" : "+") + o;
  return s;
}

// Small integer inputs (rank <= 1: axes, shapes, indices of shape ops) are fixed to their test
// values, as deployment fixes them; every other input stays an input.
inline quilt::importers::onnx::ImportOptions PinShapeInputs(const fs::path& dir) {
  quilt::importers::onnx::ImportOptions options;
  onnx::ModelProto m;
  std::ifstream in(dir / "model.onnx", std::ios::binary);
  if (!m.ParseFromIstream(&in)) return options;
  std::set<std::string> initializers;
  for (const auto& t : m.graph().initializer()) initializers.insert(t.name());
  int j = 0;
  for (const auto& input : m.graph().input()) {
    if (initializers.count(input.name())) continue;
    onnx::TensorProto t;
    fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(j++) + ".pb");
    if (!fs::exists(p) || !ReadTensorProto(p, &t)) continue;
    bool small_int =
        (t.data_type() == onnx::TensorProto::INT64 || t.data_type() == onnx::TensorProto::INT32) &&
        t.dims_size() <= 1 && t.has_raw_data();
    if (!small_int) continue;
    quilt::importers::onnx::InputValue v;
    v.dtype = static_cast<quilt::ir::DataType>(t.data_type());
    v.shape.assign(t.dims().begin(), t.dims().end());
    v.bytes.assign(t.raw_data().begin(), t.raw_data().end());
    options.input_values[input.name()] = v;
  }
  return options;
}

}  // namespace quilt::conformance
