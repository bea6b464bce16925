// Runs a built tool as a user would and captures what it prints and its exit code.
#pragma once

#include <array>
#include <cstdio>
#include <string>

namespace quilt::testing {

struct ToolResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// `name` is a binary of the build's bin folder; `args` are passed through the shell, and so is
// `env` ("NAME=VALUE ...", set for the tool alone).
inline ToolResult RunTool(const std::string& name, const std::string& args,
                          const std::string& env = "") {
  std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(QUILT_BIN_DIR) + "/" +
                    name + " " + args + " 2>&1";
  ToolResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace quilt::testing
