// Loading: bytes -> ModelProto (protobuf), then the checks that come before any graph work:
// IR version and opsets in range, model-local functions indexed; then GraphImporter.
#include "importers/onnx/importer.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "importers/onnx/graph.h"

namespace quilt::importers::onnx {
namespace {

Expected<ir::IRModule> Import(const ::onnx::ModelProto& model, ModelContext ctx) {
  if (!model.has_ir_version()) return Error("the model has no ir_version");
  int64_t ir = model.ir_version();
  if (ir < kMinIrVersion || ir > kMaxIrVersion) {
    return Error("IR version " + std::to_string(ir) + " is not supported (this importer reads " +
                 std::to_string(kMinIrVersion) + " to " + std::to_string(kMaxIrVersion) + ")");
  }
  for (const auto& op : model.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    ctx.opsets[domain] = op.version();
  }
  // A model of other domains only (training ops, say) may import no default opset; one with
  // default-domain nodes must, since the opset decides what each op means.
  if (!ctx.opsets.count("") && model.has_graph()) {
    for (int i = 0; i < model.graph().node_size(); ++i) {
      const ::onnx::NodeProto& n = model.graph().node(i);
      if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
      std::string imported;
      for (const auto& [d, v] : ctx.opsets) imported += (imported.empty() ? "" : ", ") + d;
      return Error("the model imports no opset for 'ai.onnx' (its opset_import lists " +
                   (imported.empty() ? std::string("nothing") : "only " + imported) +
                   "), yet node '" + (n.name().empty() ? "#" + std::to_string(i) : n.name()) +
                   "' (" + n.op_type() + ") is in that domain");
    }
  }
  ctx.opset = ctx.opsets.count("") ? ctx.opsets[""] : kMaxOpset;
  if (ctx.opset > kMaxOpset) {
    return Error("the model's opset " + std::to_string(ctx.opset) +
                 " is newer than the newest this importer supports (" + std::to_string(kMaxOpset) +
                 ")");
  }
  if (ctx.opset < kMinOpset) {
    return Error("the model's opset " + std::to_string(ctx.opset) + " is older than " +
                 std::to_string(kMinOpset) + ", the oldest this importer supports");
  }
  for (const auto& f : model.functions()) {
    if (!ctx.functions.emplace(std::make_pair(f.domain(), f.name()), &f).second) {
      return Error("model-local function '" + f.domain() + "." + f.name() + "' is defined twice");
    }
  }
  if (!model.has_graph()) return Error("the model has no graph");
  std::vector<std::pair<std::string, ir::Function>> lifted;
  ctx.lifted = &lifted;
  GraphImporter g(ctx);
  Expected<ir::Function> main = g.ImportMain(model.graph());
  if (!main) return main.error();
  ir::IRModule mod;
  mod.functions.emplace_back("main", *main);
  for (auto& f : lifted) mod.functions.push_back(std::move(f));
  return mod;
}

}  // namespace

bool CheckModelSize(uint64_t size, const ImportOptions& options, Diagnostic* d) {
  uint64_t limit = static_cast<uint64_t>(
      std::clamp<int64_t>(options.max_model_bytes, 0, std::numeric_limits<int>::max()));
  if (size <= limit) return true;
  *d = Error("the model is " + std::to_string(size) + " bytes, past the limit of " +
             std::to_string(limit) +
             (limit == static_cast<uint64_t>(std::numeric_limits<int>::max())
                  ? " (protobuf's 2 GiB); store its weights as external data"
                  : " (ImportOptions::max_model_bytes; quiltc --max-model-bytes)"));
  return false;
}

namespace {

// Parses with `depth` levels of nested messages at most (protobuf's default is 100).
bool Parse(const void* data, size_t size, int depth, ::onnx::ModelProto* model) {
  ::google::protobuf::io::CodedInputStream in(static_cast<const uint8_t*>(data),
                                              static_cast<int>(size));
  in.SetRecursionLimit(depth);
  return model->ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

}  // namespace

bool ParseOnnxModel(const void* data, size_t size, const ImportOptions& options,
                    ::onnx::ModelProto* model, Diagnostic* error) {
  if (!CheckModelSize(size, options, error)) return false;
  int depth = 8 * std::max(options.max_nesting, 1) + 64;
  if (Parse(data, size, depth, model)) return true;
  // A model that parses with room to spare was nested too deep; say so, and how to allow it.
  ::onnx::ModelProto deeper;
  if (depth < 1 << 16 && Parse(data, size, depth * 4, &deeper)) {
    *error = Error("the model's messages nest deeper than " + std::to_string(depth) +
                   " (subgraphs or functions more than " + std::to_string(options.max_nesting) +
                   " deep: ImportOptions::max_nesting; quiltc --max-nesting)");
  } else {
    *error = Error(
        "not a valid ONNX model (the protobuf does not parse: truncated, corrupt or not an ONNX "
        "file)");
  }
  return false;
}

Expected<ir::IRModule> ImportOnnxBytes(const void* data, size_t size, const std::string& model_dir,
                                       const std::string& name, const ImportOptions& options) {
  auto located = [&](Diagnostic d) {
    d.location = d.location.empty() ? name : name + ": " + d.location;
    return d;
  };
  if (size == 0) return located(Error("the file is empty"));
  ::onnx::ModelProto model;
  if (Diagnostic d; !ParseOnnxModel(data, size, options, &model, &d)) return located(d);
  ModelContext ctx;
  ctx.name = name;
  ctx.model_dir = model_dir;
  ctx.options = options;
  Expected<ir::IRModule> mod = Import(model, std::move(ctx));
  if (!mod) return located(mod.error());
  return mod;
}

Expected<ir::IRModule> ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Error("cannot read '" + path + "': not a regular file");
  }
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error("cannot read '" + path + "': " + ec.message());
  if (Diagnostic d; !CheckModelSize(size, options, &d)) {
    d.location = path;
    return d;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  std::string bytes = s.str();
  std::string dir = std::filesystem::absolute(path, ec).parent_path().string();
  return ImportOnnxBytes(bytes.data(), bytes.size(), dir, path, options);
}

}  // namespace quilt::importers::onnx
