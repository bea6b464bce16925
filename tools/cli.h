// Command-line parsing and the main body shared by the tools: CLI11, with the exit codes every
// quilt tool uses (0 for --help, 1 for an error in the input, 2 for bad usage).
//
//   int main(int argc, char** argv) {
//     return quilt::tools::RunMain("quiltc", [&] { return Main(argc, argv); });
//   }
#pragma once

#include <CLI/CLI.hpp>
#include <csignal>
#include <exception>
#include <iostream>
#include <new>
#include <optional>

namespace quilt::tools {

// Parses argv; returns the exit code to stop with (help printed, or a usage error), or nullopt
// to go on.
inline std::optional<int> ParseArgs(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return std::nullopt;
}

// Runs a tool's main body: an exception that escapes it (memory ran out, a thread could not be
// started, a library's error) becomes "TOOL: error: ..." and exit 1, never an abort.
template <typename Body>
int RunMain(const char* tool, Body&& body) {
  // A write past the file-size limit then fails with EFBIG, which the writer reports and cleans
  // up after, instead of the signal killing the tool halfway.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::cerr << tool << ": error: out of memory (an allocation failed)\n";
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << tool << ": error: an unknown exception\n";
  }
  return 1;
}

}  // namespace quilt::tools
