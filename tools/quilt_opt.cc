// quilt-opt: runs passes on IR text and prints IR text.
//
//   quilt-opt FILE.{qir,onnx} [--pass NAME[{key=value ...}]]... [--print-ir-after-all]
//             [--check-equal EXPECTED.qir] [-o OUT.qir]
//
// Exit status: 0 success (or structurally equal), 1 an error in the input (a file that is missing
// or not a regular file, parse, verification, a pass's diagnostic) or not equal, 2 bad usage
// (unknown pass or option). -o writes through a temporary file renamed over OUT.
#include <filesystem>
#include <iostream>

#include "importers/onnx/importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "ir/verifier.h"
#include "passes/pass.h"
#include "tools/cli.h"
#include "tools/files.h"

namespace {

using quilt::Expected;

Expected<quilt::ir::IRModule> Load(const std::string& path) {
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) {
    // Checked before the importer opens it: a FIFO would block the open forever.
    if (quilt::Status s = quilt::tools::CheckInputFile(path, ""); !s) return s.error();
    Expected<quilt::ir::IRModule> mod = quilt::importers::onnx::ImportOnnxFile(path);
    if (!mod) return mod;
    if (quilt::Status s = quilt::ir::Verify(*mod); !s) {
      return quilt::Error("verification failed after import: " + s.error().ToString(), path);
    }
    return mod;
  }
  Expected<std::string> text = quilt::tools::ReadRegularFile(path, "");
  if (!text) return text.error();
  Expected<quilt::ir::IRModule> mod = quilt::ir::ParseModule(*text, path);
  if (!mod) return mod;
  if (quilt::Status s = quilt::ir::Verify(*mod); !s) {
    return quilt::Error("verification failed after parsing: " + s.error().ToString(), path);
  }
  return mod;
}

int Fail(const quilt::Diagnostic& d, int code) {
  std::cerr << "quilt-opt: error: " << d.ToString() << "\n";
  return code;
}

int Main(int argc, char** argv) {
  CLI::App app{"quilt-opt: run quilt passes on IR text and print the result"};
  std::string input, output, expected;
  std::vector<std::string> pass_specs;
  bool print_after_all = false;
  app.add_option("input", input, "IR text (.qir) or ONNX model (.onnx)")->required();
  app.add_option("--pass", pass_specs,
                 "pass to run, NAME or NAME{key=value ...}; repeatable, in order");
  app.add_flag("--print-ir-after-all", print_after_all, "print the IR after each pass to stderr");
  app.add_option("--check-equal", expected,
                 "compare the result with this IR file: exit 0 when structurally equal, else "
                 "print a diff and exit 1");
  app.add_option("-o,--output", output, "write the result here instead of stdout");
  std::string footer = "passes:\n";
  for (const auto& p : quilt::passes::AllPasses())
    footer += "  " + std::string(p.name) + ": " + p.summary + "\n";
  app.footer(footer);
  if (std::optional<int> code = quilt::tools::ParseArgs(app, argc, argv)) return *code;

  std::vector<quilt::passes::Pass> passes;
  for (const std::string& spec : pass_specs) {
    Expected<quilt::passes::Pass> p = quilt::passes::CreatePass(spec);
    if (!p) return Fail(p.error(), 2);
    passes.push_back(*p);
  }
  std::error_code ec;
  if (!output.empty() && (output == input || (std::filesystem::exists(output, ec) &&
                                              std::filesystem::exists(input, ec) &&
                                              std::filesystem::equivalent(output, input, ec)))) {
    return Fail(quilt::Error("refusing to overwrite the input file '" + input + "'"), 2);
  }
  if (!output.empty()) {
    if (quilt::Status s = quilt::tools::CheckOutputFile(output, ""); !s) return Fail(s.error(), 1);
  }

  Expected<quilt::ir::IRModule> mod = Load(input);
  if (!mod) return Fail(mod.error(), 1);
  for (const quilt::passes::Pass& p : passes) {
    Expected<quilt::ir::IRModule> next = p.Run(*mod);
    if (!next)
      return Fail(quilt::Error("pass '" + p.name + "': " + next.error().ToString(), input), 1);
    if (quilt::Status s = quilt::ir::Verify(*next); !s) {
      return Fail(
          quilt::Error("verification failed after pass '" + p.name + "': " + s.error().ToString(),
                       input),
          1);
    }
    mod = std::move(next);
    if (print_after_all) {
      std::cerr << "# ----- IR after " << p.name << " -----\n" << quilt::ir::PrintModule(*mod);
    }
  }

  std::string text = quilt::ir::PrintModule(*mod);
  if (!expected.empty()) {
    Expected<quilt::ir::IRModule> want = Load(expected);
    if (!want) return Fail(want.error(), 1);
    std::string why;
    if (quilt::ir::StructuralEqual(*mod, *want, &why)) return 0;
    std::cout << "not structurally equal to " << expected << ": " << why << "\n"
              << "--- " << expected << "\n+++ result\n"
              << quilt::ir::LineDiff(quilt::ir::PrintModule(*want), text);
    return 1;
  }
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  if (quilt::Status s = quilt::tools::WriteFileAtomically(output, text, ""); !s) {
    return Fail(s.error(), 1);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return quilt::tools::RunMain("quilt-opt", [&] { return Main(argc, argv); });
}
