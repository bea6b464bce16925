// Command-line parsing and the main body shared by the tools: CLI11, with the exit codes every
// quilt tool uses (0 for --help, 1 for an error in the input, 2 for bad usage).
//
//   int main(int argc, char** argv) {
//     return quilt::tools::RunMain("quiltc", [&] { return Main(argc, argv); });
//   }
#pragma once

#include <CLI/CLI.hpp>
#include <cctype>
#include <csignal>
#include <cstdint>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <string>

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

// A size in bytes as a flag gives it: a count, or a count with the binary suffix K, M, G or T
// ("512M" = 512 x 2^20), at least 1 and at most 2^62; nullopt for anything else.
inline std::optional<uint64_t> ParseByteSize(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 18 || text.size() - digits > 1) return std::nullopt;
  uint64_t n = std::stoull(text.substr(0, digits));
  int shift = 0;
  if (digits < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[digits]))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        return std::nullopt;
    }
  }
  if (n == 0 || n > (uint64_t{1} << (62 - shift))) return std::nullopt;
  return n << shift;
}

// A CLI11 validator for ParseByteSize.
inline CLI::Validator ByteSize() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return ParseByteSize(text) ? "" : "'" + text + "' is not a size (N, NK, NM, NG or NT)";
      },
      "SIZE");
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
