// quilt-inspect: what is in a model or a package.
//
//   quilt-inspect MODEL.onnx [--ir] [--device T]... [--input-shape NAME:D,D]... [--input-value ...]
//   quilt-inspect OUT.quilt [--steps] [--placement]
//   quilt-inspect OUT.quilt --kernels
//
// For a model: inputs and outputs (symbolic dims by name), opsets, an op histogram and the ops
// quilt has no converter for; then the model goes through quiltc's whole pipeline (import,
// placement, lowering) and the verdict is quiltc's: the placement summary, or the error that
// names the node, op type and reason. With --ir, the imported IR too. For a package: devices,
// signature, steps by kernel and device, arena sizes and constant bytes; with --steps, every
// step; with --kernels, only the CPU kernels it may run, a name per line (the list a runtime built
// with chosen kernels takes: QUILT_KERNELS, runtime/README.md). Exit status 0; 1 when the file
// cannot be read (missing, not a regular file, damaged), or a model would not compile; 2 for bad
// usage.
#include <iostream>

#include "importers/onnx/importer.h"
#include "importers/onnx/summary.h"
#include "ir/printer.h"
#include "targets/compile.h"
#include "tools/cli.h"
#include "tools/files.h"
#include "tools/import_flags.h"
#include "tools/package_summary.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"quilt-inspect: summarize a model"};
  std::string input;
  bool ir = false, steps = false, placement = false, kernels = false;
  app.add_option("file", input, "ONNX model (.onnx) or package (.quilt)")->required();
  app.add_flag("--ir", ir, "also import the model and print its IR");
  app.add_flag("--steps", steps, "list every step of a package");
  app.add_flag("--placement", placement, "print the package's full placement report");
  app.add_flag("--kernels", kernels,
               "print only the CPU kernels a package may run, one per line (for a runtime built "
               "with those alone: QUILT_KERNELS)");
  std::vector<std::string> devices;
  app.add_option("--device", devices,
                 "a model: the targets to check it against, as quiltc takes them");
  quilt::tools::ImportFlags import_flags;
  import_flags.Add(app);
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  bool is_package = input.ends_with(".quilt");
  if (kernels && !is_package) {
    std::cerr << "quilt-inspect: error: --kernels lists a package's kernels; " << input
              << " is not a package (.quilt): compile it with quiltc first\n";
    return 2;
  }
  // Before any reader opens it: a FIFO would block the reader forever.
  if (quilt::Status s =
          quilt::tools::CheckInputFile(input, is_package ? "the package" : "the model");
      !s) {
    std::cerr << "quilt-inspect: error: " << s.error().ToString() << "\n";
    return 1;
  }
  if (is_package) {
    std::unique_ptr<quilt::rt::LoadedPackage> package;
    quilt::rt::Status st = quilt::rt::LoadedPackage::FromFile(input, &package);
    if (!st.ok()) {
      std::cerr << "quilt-inspect: error: " << st.message() << "\n";
      return 1;
    }
    if (kernels) {
      for (const std::string& name : quilt::tools::PackageKernels(*package)) {
        std::cout << name << "\n";
      }
      return 0;
    }
    std::cout << input << "\n" << quilt::tools::SummarizePackage(*package, steps);
    const quilt::pkg::Metadata* m = package->root().metadata();
    if (placement && m && m->placement_report()) std::cout << "\n" << m->placement_report()->str();
    return 0;
  }
  quilt::compiler::CompileOptions options;
  if (std::optional<int> code = import_flags.Apply("quilt-inspect", &options.import)) return *code;
  if (!devices.empty()) options.devices = devices;
  quilt::Expected<quilt::importers::onnx::ModelSummary> s =
      quilt::importers::onnx::SummarizeOnnxFile(input);
  if (!s) {
    std::cerr << "quilt-inspect: error: " << s.error().ToString() << "\n";
    return 1;
  }
  std::cout << input << "\n" << quilt::importers::onnx::FormatSummary(*s);
  // What quiltc would say: the whole pipeline, not only the converter table.
  quilt::Expected<quilt::compiler::Compiled> compiled =
      quilt::compiler::CompileOnnx(input, options);
  if (!compiled) {
    std::cout << "compiles: no\n";
    std::cerr << "quilt-inspect: error: " << compiled.error().ToString() << "\n";
    return 1;
  }
  std::cout << "compiles: yes\n" << quilt::compiler::ReportSummary(compiled->report);
  if (!ir) return 0;
  quilt::Expected<quilt::ir::IRModule> mod =
      quilt::importers::onnx::ImportOnnxFile(input, options.import);
  if (!mod) {
    std::cerr << "quilt-inspect: error: " << mod.error().ToString() << "\n";
    return 1;
  }
  std::cout << "\n" << quilt::ir::PrintModule(*mod);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return quilt::tools::RunMain("quilt-inspect", [&] { return Main(argc, argv); });
}
