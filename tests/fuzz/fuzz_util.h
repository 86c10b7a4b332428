// Shared by the fuzz targets: each defines LLVMFuzzerTestOneInput. Built with clang and
// -DHALFCAF_FUZZ=ON they link libFuzzer (tools/sanitize.sh runs them for a bounded time); in every
// other build they link standalone_main.cc, which replays the seed corpus and the regressions
// (tests/fuzz/corpus/<target>/) as CTest tests.
//
// Expected failures are EnforceNotMet: a clear error about bad input. Anything else — a crash, a
// sanitizer report, another exception escaping — is a bug the fuzzer reports.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/enforce.h"

namespace halfcaf {
namespace fuzz {

// Runs `fn`, swallowing EnforceNotMet (bad input rejected with a clear error: fine).
template <typename F>
void ExpectCleanRejection(F&& fn) {
  try {
    fn();
  } catch (const EnforceNotMet&) {
  }
}

// A file of this process holding `bytes` (rewritten on each call); `tag` tells files apart.
inline std::string WriteTempFile(const std::string& bytes, const std::string& tag) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir && *dir ? dir : "/tmp") + "/halfcaf_fuzz_" +
                           std::to_string(getpid()) + "_" + tag;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace fuzz
}  // namespace halfcaf
