// Where the tests find the files they read (tests/fixtures, models/lenet, tools/): the source
// folder, without depending on the absolute path of the machine that built them, so test
// binaries carried to another machine (tools/gpu_bundle.sh) still find their fixtures.
//
// In order: the environment variable HALFCAF_SOURCE_DIR; the folder above the test binary's
// bin/ when it holds tests/fixtures (a bundle: <root>/bin/gpu_tests, <root>/tests/fixtures); the
// source folder the binary was built from (compiled in).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <sys/stat.h>

namespace halfcaf {
namespace testing {

inline bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The folder `levels` levels above the running binary ("" if /proc/self/exe cannot be read).
inline std::string ExecutableAncestor(int levels) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string p(buf, static_cast<size_t>(n));
  for (int i = 0; i < levels; ++i) {
    const size_t k = p.rfind('/');
    if (k == std::string::npos || k == 0) return "";
    p.resize(k);
  }
  return p;
}

inline std::string SourceDir() {
  const char* env = std::getenv("HALFCAF_SOURCE_DIR");
  if (env != nullptr && *env != '\0') return env;
  const std::string beside = ExecutableAncestor(2);
  if (!beside.empty() && IsDirectory(beside + "/tests/fixtures")) return beside;
  return HALFCAF_SOURCE_DIR;
}

}  // namespace testing
}  // namespace halfcaf
