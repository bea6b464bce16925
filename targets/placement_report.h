// The placement report: which device runs each op and why, the regions, the copies between
// devices, and every fallback with its reason. quiltc always prints the summary; the text, DOT
// (regions as clusters colored by device) and JSON forms are written on request, and the text
// form is stored in the package's metadata.
//
//   PlacementReport r = BuildPlacementReport(partitioned_module, assign_result.ops);
//   std::cerr << ReportSummary(r);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/module.h"
#include "passes/assign.h"

namespace quilt::compiler {

struct PlacementReport {
  struct Device {
    std::string name;    // the device string: "cuda", "llvm:1"
    std::string target;  // "cuda -arch=sm_80"
    std::string type;    // "cuda", "cpu"
    int id = 0;
  };
  struct Region {
    std::string function;  // the function it was lifted into
    int device = 0;
    std::vector<std::string> values;  // its ops, by bound value
  };
  struct Copy {
    std::string value;  // the copied value (in the entry function)
    int from = 0, to = 0;
    int64_t bytes = -1;                        // -1: not known before run time
    std::string from_region = {};              // the region that made the value, if any
    std::vector<std::string> to_regions = {};  // the regions that read the copy
  };
  std::string model;
  std::vector<Device> devices;
  int host = -1;  // the device of shape computations and fallbacks (passes::HostVDevice)
  std::vector<passes::OpPlacement> ops;
  std::vector<Region> regions;
  std::vector<Copy> copies;
};

// `module` is the module after partition and insert-device-copies; `ops` what assign decided.
PlacementReport BuildPlacementReport(const ir::IRModule& module,
                                     const std::vector<passes::OpPlacement>& ops,
                                     const std::string& model = "");

// A few lines: ops per device, regions, copies, fallbacks.
std::string ReportSummary(const PlacementReport& r);
// Everything, readable: per device its ops (by op type) and regions, the copies, every op that
// did not run on its first choice and why, and the full op list.
std::string ReportText(const PlacementReport& r);
// Graphviz: regions as clusters colored by device, copies as edges between them.
std::string ReportDot(const PlacementReport& r);
// Machine-readable, the same content as the text.
std::string ReportJson(const PlacementReport& r);

}  // namespace quilt::compiler
