// Running the command-line tools from tests: exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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

inline std::string TestTempDir() {
  std::string dir = ::testing::TempDir() + "/halfcaf_tools_" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  return dir;
}

// Runs `<bin dir>/<tool> <args>` through the shell.
inline ToolResult RunTool(const std::string& tool, const std::string& args) {
  std::string dir = TestTempDir();
  std::string out = dir + "/stdout.txt", err = dir + "/stderr.txt";
  std::string cmd = std::string(HALFCAF_BIN_DIR) + "/" + tool + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  ToolResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

inline int CountLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += (c == '\n');
  return n;
}

}  // namespace testing
}  // namespace halfcaf
