// quiltc: compile an ONNX model, or a module in the text form, into a quilt package.
//
//   quiltc {MODEL.onnx | MODULE.qir} -o OUT.quilt [--device T]... [--input-shape NAME:D,D,...]...
//          [--input-value NAME=V,V,...]...
//          [--place RULE]... [--strict] [--portable] [--report FILE.{txt,dot,json}]...
//          [--print-ir-after-all]
//
// A module in the text form (.qir, or .py as TVM writes TVMScript) is compiled from its function
// "main"; without --device it keeps its own vdevice list (the CPU alone when it has none).
// --input-shape and --input-value apply to ONNX models only.
// The placement summary always goes to stderr; --report writes the full report.
// Exit status 0 on success, 1 when the model cannot be compiled (the message names the file,
// node, op type and why) or a file cannot be read or written, 2 for bad usage. Never overwrites
// the model it reads. The package (and each report) is written to a unique temporary file in
// its folder and renamed over the output: a failed compile or write leaves the output as it was.
#include <filesystem>
#include <iostream>

#include "ir/printer.h"
#include "targets/compile.h"
#include "tools/cli.h"
#include "tools/files.h"
#include "tools/import_flags.h"

namespace {

namespace fs = std::filesystem;

// `a` and `b` name the same existing file.
bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  return a == b || (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec));
}

int Fail(const quilt::Diagnostic& d) {
  std::cerr << "quiltc: error: " << d.ToString() << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"quiltc: compile an ONNX model or an IR text module into a quilt package"};
  std::string model, output;
  std::vector<std::string> devices, place, reports;
  bool strict = false, portable = false, print_ir = false;
  app.add_option("model", model,
                 "ONNX model (.onnx), or a module in the text form (.qir; .py as TVM prints it)")
      ->required();
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
  std::string cpu_layout = "auto";
  app.add_option("--cpu-layout", cpu_layout,
                 "layout of the CPU's convolutions: auto (chains of 1x1, 3x3 and depthwise convs "
                 "in the channel-blocked layout NCHW16c, channels padded to multiples of 16, "
                 "transforms at their edges, where the convs' work outweighs the transforms; "
                 "the default) or nchw (every conv NCHW)")
      ->check(CLI::IsMember({"auto", "nchw"}));
  int winograd_tile = 2;
  app.add_option("--cpu-winograd-tile", winograd_tile,
                 "output tile of the Winograd convolution that the CPU's blocked dense 3x3 convs "
                 "of unit strides run as: 2, F(2x2, 3x3) (the default); 4, F(4x4, 3x3) on planes "
                 "of 16 x 16 or more, 2.25 multiplies an output against 4 (0.86-0.97 of the time "
                 "of the conv-heavy models measured) for about 5 times the rounding")
      ->check(CLI::IsMember({2, 4}));
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  quilt::compiler::CompileOptions options;
  // A text module: anything not named .onnx (TVMScript is Python; .qir is the usual name).
  bool text = fs::path(model).extension() != ".onnx";
  if (!devices.empty()) options.devices = devices;
  if (devices.empty() && text) options.devices.clear();  // the module's own vdevice list
  options.place = place;
  options.strict = strict;
  options.portable = portable;
  options.lower.block_layout = cpu_layout == "auto";
  options.lower.winograd_tile = winograd_tile;
  if (print_ir) {
    options.after_step = [](const std::string& step, const quilt::ir::IRModule& m) {
      std::cerr << "# ----- IR after " << step << " -----\n" << quilt::ir::PrintModule(m);
    };
  }
  for (const std::string& r : reports) {
    std::string ext = fs::path(r).extension().string();
    if (ext != ".txt" && ext != ".dot" && ext != ".json") {
      std::cerr << "quiltc: error: --report " << r
                << ": the name must end in .txt, .dot or .json\n";
      return 2;
    }
    if (SameFile(model, r)) {
      std::cerr << "quiltc: error: --report " << r << " is the model itself\n";
      return 2;
    }
    if (SameFile(output, r)) {
      std::cerr << "quiltc: error: --report " << r << " is the output package itself\n";
      return 2;
    }
  }
  if (std::optional<int> code = import_flags.Apply("quiltc", &options.import)) return *code;
  if (text && (!import_flags.shapes.empty() || !import_flags.values.empty())) {
    std::cerr << "quiltc: error: --input-shape and --input-value apply to ONNX models; " << model
              << " is a text module, whose signature gives its shapes\n";
    return 2;
  }
  if (SameFile(model, output)) {
    std::cerr << "quiltc: error: the output '" << output << "' is the model itself\n";
    return 2;
  }
  // Paths before the compile: a directory or a FIFO as the model would hang or mislead the
  // reader, and an output that cannot be written is better said before the work than after.
  if (quilt::Status s = quilt::tools::CheckInputFile(model, "the model"); !s)
    return Fail(s.error());
  if (quilt::Status s = quilt::tools::CheckOutputFile(output, "the package"); !s) {
    return Fail(s.error());
  }
  for (const std::string& r : reports) {
    if (quilt::Status s = quilt::tools::CheckOutputFile(r, "the report"); !s)
      return Fail(s.error());
  }
  quilt::Expected<quilt::compiler::Compiled> compiled =
      text ? quilt::compiler::CompileText(model, options)
           : quilt::compiler::CompileOnnx(model, options);
  if (!compiled) return Fail(compiled.error());
  const std::vector<uint8_t>* bytes = &compiled->package;
  std::cerr << quilt::compiler::ReportSummary(compiled->report);
  for (const std::string& r : reports) {
    std::string ext = fs::path(r).extension().string();
    std::string text = ext == ".dot"    ? quilt::compiler::ReportDot(compiled->report)
                       : ext == ".json" ? quilt::compiler::ReportJson(compiled->report)
                                        : quilt::compiler::ReportText(compiled->report);
    if (quilt::Status s = quilt::tools::WriteFileAtomically(r, text, "the report"); !s) {
      return Fail(s.error());
    }
  }
  std::string_view package(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  if (quilt::Status s = quilt::tools::WriteFileAtomically(output, package, "the package"); !s) {
    return Fail(s.error());
  }
  std::cerr << "quiltc: wrote " << output << " (" << bytes->size() << " bytes)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return quilt::tools::RunMain("quiltc", [&] { return Main(argc, argv); });
}
