// Runs a built tool as a user would and captures what it prints, its exit code, and whether it
// died by a signal or hung: every run is under `timeout`, so a tool that blocks (on a FIFO, say)
// fails its test instead of blocking the test binary.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace quilt::testing {

struct ToolResult {
  int code = -1;   // the exit status; -1 when the tool did not exit on its own
  int signal = 0;  // the signal that ended it, 0 when none did
  bool timed_out = false;
  std::string out;  // stdout and stderr together

  // Ended by a message and exit 1 or 2: no signal, no hang, no sanitizer report.
  bool FailedCleanly() const {
    return (code == 1 || code == 2) && signal == 0 && !timed_out &&
           out.find("Sanitizer") == std::string::npos &&
           out.find("runtime error:") == std::string::npos &&
           out.find("terminate called") == std::string::npos;
  }
  // What happened, for a failure message.
  std::string Describe() const {
    std::string how = timed_out ? "timed out"
                      : signal  ? "killed by signal " + std::to_string(signal)
                                : "exit " + std::to_string(code);
    return how + "; output:\n" + out;
  }
};

struct ToolOptions {
  std::string env;           // "NAME=VALUE ...", set for the tool alone
  std::string shell;         // shell commands run first, in the tool's shell ("ulimit -f 4")
  int timeout_seconds = 60;  // then the tool is killed and the result says timed_out
};

// `name` is a binary of the build's bin folder; `args` are passed through the shell.
inline ToolResult RunTool(const std::string& name, const std::string& args,
                          const ToolOptions& options) {
  // `timeout` exits 124 when the time ran out (after TERM, then KILL 5 s later), and dies by the
  // tool's own signal when a signal ended the tool.
  std::string cmd = (options.shell.empty() ? "" : options.shell + "; ") + "exec timeout -k 5 " +
                    std::to_string(options.timeout_seconds) + " " +
                    (options.env.empty() ? "" : "env " + options.env + " ") +
                    std::string(QUILT_BIN_DIR) + "/" + name + " " + args + " 2>&1";
  ToolResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 124) {
    r.timed_out = true;
  } else if (WIFEXITED(status)) {
    r.code = WEXITSTATUS(status);
    // A shell reports a child's death by signal N as 128 + N.
    if (r.code > 128 && r.code < 128 + 65) r.signal = r.code - 128, r.code = -1;
  }
  return r;
}

inline ToolResult RunTool(const std::string& name, const std::string& args,
                          const std::string& env = "") {
  ToolOptions options;
  options.env = env;
  return RunTool(name, args, options);
}

}  // namespace quilt::testing
