// The package as plain tables, before it is written: what lowering produces and the writer
// turns into bytes (package_writer.h). The runtime reads the same schema
// (runtime/schema/package.fbs); the field meanings are documented there.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "quilt/package_generated.h"

namespace quilt::compiler {

struct DimSpec {
  pkg::DimKind kind = pkg::DimKind::Int;
  int a = 0, b = 0;
  int64_t value = 0;
};

struct ValueSpec {
  std::string name = {};
  pkg::ValueKind kind = pkg::ValueKind::Intermediate;
  int32_t dtype = 0;
  int rank = -1;
  std::vector<int> dims = {};  // indices into GraphSpec::dims
  int device = 0;
  int buffer = -1;
  int default_buffer = -1;
  int64_t arena_offset = -1;
  int64_t byte_size = -1;
};

struct StepSpec {
  std::string kernel = {};
  int device = 0;
  std::vector<int> inputs = {};  // -1: absent
  std::vector<int> input_arity = {};
  std::vector<int> outputs = {};
  ir::Attrs attrs = {};
  std::vector<int> dims = {};
  std::vector<int> subgraphs = {};
  std::string source = {};
  // The partition region the step came from (its function's name; empty for none). The writer
  // makes the package's regions from it: each run of consecutive kernel and dispatch steps with
  // one device and one region name is one region.
  std::string region = {};
  pkg::StepKind kind = pkg::StepKind::Kernel;
  int code = -1;        // Dispatch: index into PackageSpec::code
  std::string op = {};  // Dispatch: the op its code computes
};

// A kernel step of one input and one output made beside `like` (its device, source and region):
// a step lowering adds (a weight packed, a layout changed).
inline StepSpec OneInputStep(std::string kernel, const StepSpec& like, int in, int out) {
  StepSpec s;
  s.kernel = std::move(kernel);
  s.device = like.device;
  s.inputs = {in};
  s.input_arity = {1};
  s.outputs = {out};
  s.source = like.source;
  s.region = like.region;
  return s;
}

struct GraphSpec {
  std::string name = {};
  std::vector<std::string> symbols = {};
  std::vector<DimSpec> dims = {};
  std::vector<ValueSpec> values = {};
  std::vector<int> inputs = {};
  std::vector<int> outputs = {};
  std::vector<StepSpec> steps = {};
  std::vector<int64_t> arena_bytes = {};  // per device
};

struct DeviceSpec {
  std::string target = {};  // "llvm"
  std::string kind = {};    // "cpu"
  int id = 0;
  bool cpu_fallback = false;  // quiltc --portable: absent at load, its steps run on the CPU
  std::string memory_scope = "global";  // the vdevice's memory scope
};

struct TargetCodeSpec {
  int device = 0;
  std::string format = {};
  int buffer = -1;
  std::vector<std::string> entry_points = {};
  std::string target = {};
};

struct PackageSpec {
  std::vector<DeviceSpec> devices = {};
  std::deque<GraphSpec> graphs = {};  // a deque: adding a graph keeps references valid
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> buffers = {};
  std::string producer = "quilt 0.1.0";
  std::string source_model = {};
  std::string source_sha256;
  std::string placement_report = {};
  std::vector<TargetCodeSpec> code = {};
};

}  // namespace quilt::compiler
