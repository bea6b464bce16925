// Command-line parsing shared by the tools: CLI11, with the exit codes every quilt tool uses
// (0 for --help, 2 for bad usage).
#pragma once

#include <CLI/CLI.hpp>
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

}  // namespace quilt::tools
