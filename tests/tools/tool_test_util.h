// Running the command-line tools from tests: exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/process_temp_dir.h"

namespace halfcaf {
namespace testing {

struct ToolResult {
  int exit_code;
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// This test process's folder, removed when it exits (tests/util/process_temp_dir.h).
inline std::string TestTempDir() { return ProcessTempDirs::Get("halfcaf_tools_"); }

inline int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs `cmd` through the shell (in a subshell), capturing stdout and stderr.
inline ToolResult RunShell(const std::string& cmd) {
  std::string dir = TestTempDir();
  std::string out = dir + "/stdout.txt", err = dir + "/stderr.txt";
  int status = std::system(("(" + cmd + ") >" + out + " 2>" + err).c_str());
  ToolResult r;
  r.exit_code = ExitCode(status);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

// Runs `<bin dir>/<tool> <args>` through the shell, after `shell_prefix` (e.g. "ulimit -f 4; ").
inline ToolResult RunTool(const std::string& tool, const std::string& args,
                          const std::string& shell_prefix = "") {
  return RunShell(shell_prefix + std::string(HALFCAF_BIN_DIR) + "/" + tool + " " + args);
}

// Starts `<bin dir>/<tool> <args>` without waiting, stdout and stderr to `out` and `err`; the
// returned pid is the tool's own (the shell execs it), for kill() and waitpid().
inline pid_t SpawnTool(const std::string& tool, const std::string& args, const std::string& out,
                       const std::string& err) {
  const std::string cmd = "exec " + std::string(HALFCAF_BIN_DIR) + "/" + tool + " " + args +
                          " >" + out + " 2>" + err;
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

inline int WaitExitCode(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return ExitCode(status);
}

// The losses of train_net's --log_csv lines (iteration, epoch, loss, ...), in order.
inline std::vector<double> CsvLosses(const std::string& csv) {
  std::vector<double> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string iter, epoch, loss;
    std::getline(f, iter, ',');
    std::getline(f, epoch, ',');
    std::getline(f, loss, ',');
    out.push_back(std::stod(loss));
  }
  return out;
}

inline int CountLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += (c == '\n');
  return n;
}

// The tool failed with exit code 1 and one line "<tool>: error: ..." holding `needle`.
inline void ExpectOneLineError(const ToolResult& r, const std::string& tool,
                               const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(tool + ": error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

}  // namespace testing
}  // namespace halfcaf
