// quilt-inspect: what is in a model or a package.
//
//   quilt-inspect MODEL.onnx [--ir]
//   quilt-inspect OUT.quilt [--steps]
//
// For a model: inputs and outputs (symbolic dims by name), opsets, an op histogram and the ops
// quilt cannot import yet; with --ir, the imported IR too. For a package: devices, signature,
// steps by kernel and device, arena sizes and constant bytes; with --steps, every step. Exit
// status 0, or 1 when the file cannot be read (or, with --ir, imported).
#include <iostream>

#include "importers/onnx/importer.h"
#include "importers/onnx/summary.h"
#include "ir/printer.h"
#include "tools/cli.h"
#include "tools/package_summary.h"

int main(int argc, char** argv) {
  CLI::App app{"quilt-inspect: summarize a model"};
  std::string input;
  bool ir = false, steps = false, placement = false;
  app.add_option("file", input, "ONNX model (.onnx) or package (.quilt)")->required();
  app.add_flag("--ir", ir, "also import the model and print its IR");
  app.add_flag("--steps", steps, "list every step of a package");
  app.add_flag("--placement", placement, "print the package's full placement report");
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;
  if (input.ends_with(".quilt")) {
    std::unique_ptr<quilt::rt::LoadedPackage> package;
    quilt::rt::Status st = quilt::rt::LoadedPackage::FromFile(input, &package);
    if (!st.ok()) {
      std::cerr << "quilt-inspect: error: " << st.message() << "\n";
      return 1;
    }
    std::cout << input << "\n" << quilt::tools::SummarizePackage(*package, steps);
    const quilt::pkg::Metadata* m = package->root().metadata();
    if (placement && m && m->placement_report()) std::cout << "\n" << m->placement_report()->str();
    return 0;
  }
  quilt::Expected<quilt::importers::onnx::ModelSummary> s =
      quilt::importers::onnx::SummarizeOnnxFile(input);
  if (!s) {
    std::cerr << "quilt-inspect: error: " << s.error().ToString() << "\n";
    return 1;
  }
  std::cout << input << "\n" << quilt::importers::onnx::FormatSummary(*s);
  if (!ir) return 0;
  quilt::Expected<quilt::ir::IRModule> mod = quilt::importers::onnx::ImportOnnxFile(input);
  if (!mod) {
    std::cerr << "quilt-inspect: error: " << mod.error().ToString() << "\n";
    return 1;
  }
  std::cout << "\n" << quilt::ir::PrintModule(*mod);
  return 0;
}
