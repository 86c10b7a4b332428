// The tools' OpenMP wait setting (tools/tool_common.cc): with neither OMP_WAIT_POLICY nor
// GOMP_SPINCOUNT in the environment a tool runs with GOMP_SPINCOUNT=2000 (it executes itself again
// with it, so that libgomp reads it), which the benchmark peers inherit; a setting the caller
// made is kept. Seen here through a stand-in peer interpreter that records its environment.
#include <sys/stat.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/tools/tool_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::string PeerEnvironment(const std::string& tag, const std::string& env) {
  const std::string dir = TestTempDir() + "/wait_" + tag;
  mkdir(dir.c_str(), 0755);
  const std::string py = dir + "/python", seen = dir + "/seen.txt";
  {
    std::ofstream f(py);
    f << "#!/bin/sh\n"
         "case \"$1\" in -c) exit 0 ;; esac\n"  // the `import torch, torchvision` check
         "echo \"spin:${GOMP_SPINCOUNT-unset} policy:${OMP_WAIT_POLICY-unset}\" >" << seen << "\n"
         "exit 3\n";
  }
  chmod(py.c_str(), 0755);
  const ToolResult r = RunShell(
      "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + env + " " + std::string(HALFCAF_BIN_DIR) +
      "/benchmark --model resnet18 --image_size 32 --num_classes 10 --batch_size 2 --iters 1 "
      "--warmup 0 --precision fp32 --compare pytorch --python " + py);
  EXPECT_EQ(r.exit_code, 0) << r.err;  // the peer failed; halfcaf's results stand
  return ReadFile(seen);
}

TEST(ThreadWaitTest, ToolsSpinBrieflyUnlessTheCallerChose) {
  EXPECT_EQ(PeerEnvironment("default", ""), "spin:2000 policy:unset\n");
  EXPECT_EQ(PeerEnvironment("active", "OMP_WAIT_POLICY=ACTIVE"), "spin:unset policy:ACTIVE\n");
  EXPECT_EQ(PeerEnvironment("spin", "GOMP_SPINCOUNT=50"), "spin:50 policy:unset\n");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
