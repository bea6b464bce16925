// quiltc: compile an ONNX model into a quilt package.
//
//   quiltc MODEL.onnx -o OUT.quilt [--device T]... [--input-shape NAME:D,D,...]...
//          [--input-value NAME=V,V,...]...
//          [--place RULE]... [--strict] [--portable] [--report FILE.{txt,dot,json}]...
//          [--print-ir-after-all]
//
// The placement summary always goes to stderr; --report writes the full report.
// Exit status 0 on success, 1 when the model cannot be compiled (the message names the file,
// node, op type and why), 2 for bad usage. Never overwrites the model it reads.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "ir/printer.h"
#include "targets/compile.h"
#include "tools/cli.h"
#include "tools/import_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"quiltc: compile an ONNX model into a quilt package"};
  std::string model, output;
  std::vector<std::string> devices, place, reports;
  bool strict = false, portable = false, print_ir = false;
  app.add_option("model", model, "ONNX model (.onnx)")->required();
  app.add_option("-o,--output", output, "package to write (.quilt)")->required();
  app.add_option("--device", devices,
                 "target to compile for, in priority order (default llvm); the CPU is added as "
                 "the host when no target runs on it; \"opencl:1\" or \"opencl -device=1\" is "
                 "the machine's second OpenCL device");
  quilt::tools::ImportFlags import_flags;
  import_flags.Add(app);
  app.add_option("--place", place,
                 "placement rule: op:TYPE=DEVICE, node:GLOB=DEVICE or region:FROM..TO=DEVICE "
                 "(repeatable)");
  app.add_flag("--strict", strict, "fail when any op falls back from the first device");
  app.add_flag("--portable", portable,
               "also let the package run where an accelerator it names is absent: those "
               "devices' steps then run on the CPU, and the session says so");
  app.add_option("--report", reports,
                 "write the placement report: FILE.txt (text), FILE.dot (Graphviz) or FILE.json");
  app.add_flag("--print-ir-after-all", print_ir, "print the IR after each step to stderr");
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  quilt::compiler::CompileOptions options;
  if (!devices.empty()) options.devices = devices;
  options.place = place;
  options.strict = strict;
  options.portable = portable;
  if (print_ir) {
    options.after_step = [](const std::string& step, const quilt::ir::IRModule& m) {
      std::cerr << "# ----- IR after " << step << " -----\n" << quilt::ir::PrintModule(m);
    };
  }
  for (const std::string& r : reports) {
    std::string ext = std::filesystem::path(r).extension().string();
    if (ext != ".txt" && ext != ".dot" && ext != ".json") {
      std::cerr << "quiltc: error: --report " << r
                << ": the name must end in .txt, .dot or .json\n";
      return 2;
    }
    std::error_code ec;
    if (std::filesystem::exists(r, ec) && std::filesystem::equivalent(model, r, ec)) {
      std::cerr << "quiltc: error: --report " << r << " is the model itself\n";
      return 2;
    }
  }
  if (std::optional<int> code = import_flags.Apply("quiltc", &options.import)) return *code;
  std::error_code ec;
  if (std::filesystem::exists(output, ec) && std::filesystem::equivalent(model, output, ec)) {
    std::cerr << "quiltc: error: the output '" << output << "' is the model itself\n";
    return 2;
  }
  quilt::Expected<quilt::compiler::Compiled> compiled =
      quilt::compiler::CompileOnnx(model, options);
  if (!compiled) {
    std::cerr << "quiltc: error: " << compiled.error().ToString() << "\n";
    return 1;
  }
  const std::vector<uint8_t>* bytes = &compiled->package;
  std::cerr << quilt::compiler::ReportSummary(compiled->report);
  for (const std::string& r : reports) {
    std::string ext = std::filesystem::path(r).extension().string();
    std::string text = ext == ".dot"    ? quilt::compiler::ReportDot(compiled->report)
                       : ext == ".json" ? quilt::compiler::ReportJson(compiled->report)
                                        : quilt::compiler::ReportText(compiled->report);
    std::ofstream out(r, std::ios::binary | std::ios::trunc);
    if (!(out << text)) {
      std::cerr << "quiltc: error: cannot write the report '" << r << "'\n";
      return 1;
    }
  }
  // Write next to the target and rename, so a failed write never leaves half a package.
  std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes->data()),
              static_cast<std::streamsize>(bytes->size()));
    if (!out) {
      std::cerr << "quiltc: error: cannot write '" << tmp << "'\n";
      return 1;
    }
  }
  std::filesystem::rename(tmp, output, ec);
  if (ec) {
    std::cerr << "quiltc: error: cannot write '" << output << "': " << ec.message() << "\n";
    return 1;
  }
  std::cerr << "quiltc: wrote " << output << " (" << bytes->size() << " bytes)\n";
  return 0;
}
