#include "importers/onnx/summary.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "importers/onnx/graph.h"
#include "importers/onnx/tensor.h"

namespace quilt::importers::onnx {
namespace {

ValueSummary Describe(const ::onnx::ValueInfoProto& v) {
  ValueSummary s;
  s.name = v.name();
  s.dtype = "?";
  if (!v.type().has_tensor_type()) return s;
  const auto& tt = v.type().tensor_type();
  std::optional<ir::DataType> t = ElemType(tt.elem_type());
  s.dtype = t ? std::string(ir::DataTypeName(*t)) : "type " + std::to_string(tt.elem_type());
  s.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    s.dims.push_back(d.has_dim_value()   ? std::to_string(d.dim_value())
                     : d.has_dim_param() ? d.dim_param()
                                         : "?");
  }
  return s;
}

std::string Shape(const ValueSummary& v) {
  if (!v.has_shape) return "(unknown rank)";
  std::string s = "(";
  for (size_t i = 0; i < v.dims.size(); ++i) s += (i ? ", " : "") + v.dims[i];
  return s + (v.dims.size() == 1 ? ",)" : ")");
}

}  // namespace

Expected<ModelSummary> SummarizeOnnxFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Error("cannot read '" + path + "': not a regular file");
  }
  uint64_t size = std::filesystem::file_size(path, ec);
  Diagnostic d;
  if (ec) return Error("cannot read '" + path + "': " + ec.message());
  if (!CheckModelSize(size, {}, &d)) return Error(d.message, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot read '" + path + "'");
  std::stringstream buf;
  buf << in.rdbuf();
  std::string bytes = buf.str();
  ::onnx::ModelProto m;
  if (bytes.empty()) return Error("the file is empty", path);
  if (!ParseOnnxModel(bytes.data(), bytes.size(), {}, &m, &d)) return Error(d.message, path);
  ModelSummary s;
  s.ir_version = m.ir_version();
  s.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  for (const auto& o : m.opset_import())
    s.opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  int64_t opset = s.opsets.count("") ? s.opsets[""] : 0;
  std::map<std::string, bool> init;
  for (const auto& t : m.graph().initializer()) {
    init[t.name()] = true;
    ++s.initializers;
    s.initializer_bytes += static_cast<int64_t>(t.raw_data().size());
  }
  for (const auto& v : m.graph().input()) {
    ValueSummary d = Describe(v);
    d.has_default = init.count(v.name()) > 0;
    s.inputs.push_back(d);
  }
  for (const auto& v : m.graph().output()) s.outputs.push_back(Describe(v));
  std::map<std::pair<std::string, std::string>, bool> local;
  for (const auto& f : m.functions()) local[{f.domain(), f.name()}] = true;
  int index = 0;
  for (const auto& n : m.graph().node()) {
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    ++s.op_histogram[domain.empty() ? n.op_type() : domain + "." + n.op_type()];
    bool supported =
        local.count({n.domain(), n.op_type()}) ||
        FindConverter(n.op_type(), s.opsets.count(domain) ? s.opsets[domain] : 0, domain);
    if (!supported) {
      std::string name = n.name().empty() ? n.op_type() + "#" + std::to_string(index) : n.name();
      int64_t v = s.opsets.count(domain) ? s.opsets[domain] : opset;
      s.unsupported.push_back({name, n.op_type(), domain, v, LeftOutReason(domain, n.op_type())});
    }
    ++index;
  }
  return s;
}

std::string FormatSummary(const ModelSummary& s) {
  std::ostringstream o;
  o << "IR version " << s.ir_version;
  if (!s.producer.empty() && s.producer != " ") o << ", produced by " << s.producer;
  o << "\nopsets:";
  for (const auto& [d, v] : s.opsets) o << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
  o << "\ninputs:\n";
  for (const auto& v : s.inputs) {
    o << "  " << v.name << ": " << v.dtype << " " << Shape(v)
      << (v.has_default ? "  (has a default)" : "") << "\n";
  }
  o << "outputs:\n";
  for (const auto& v : s.outputs) o << "  " << v.name << ": " << v.dtype << " " << Shape(v) << "\n";
  o << "initializers: " << s.initializers << " (" << s.initializer_bytes << " bytes inline)\n";
  int total = 0;
  for (const auto& [op, n] : s.op_histogram) total += n;
  o << "ops: " << total << " nodes, " << s.op_histogram.size() << " op types\n";
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto& [op, n] : s.op_histogram) sorted.emplace_back(-n, op);
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [n, op] : sorted) o << "  " << -n << "\t" << op << "\n";
  if (s.unsupported.empty()) {
    o << "unsupported: none\n";
  } else {
    o << UnsupportedMessage(s.unsupported) << "\n";
  }
  return o.str();
}

}  // namespace quilt::importers::onnx
