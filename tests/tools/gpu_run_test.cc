// The GPU run kit, exercised without a GPU: tools/gpu_suites.py (one process per test suite,
// summary table) on a fixture binary with passing, failing, skipping, aborting and hanging
// suites and on the real gpu_tests; tools/gpu_run.sh's dry run and its stop when there is no
// device; benchmark writing its results before a peer that hangs; the fixtures' path override.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string Runner() { return "python3 " + SourceDir() + "/tools/gpu_suites.py"; }
std::string Fixture() { return std::string(HALFCAF_BIN_DIR) + "/suite_runner_fixture"; }

struct Row {
  int passed = -1, failed = -1, skipped = -1;
  std::string note;
};

// The summary table's rows by suite name.
std::map<std::string, Row> Rows(const std::string& out) {
  std::map<std::string, Row> rows;
  std::istringstream in(out);
  std::string line;
  bool table = false;
  while (std::getline(in, line)) {
    if (line.rfind("suite ", 0) == 0) {
      table = true;
      continue;
    }
    if (!table || line.rfind("check ", 0) == 0) continue;
    std::istringstream f(line);
    std::string name;
    Row r;
    double seconds;
    if (!(f >> name >> r.passed >> r.failed >> r.skipped >> seconds)) continue;
    std::getline(f, r.note);
    rows[name] = r;
  }
  return rows;
}

TEST(GpuSuitesTest, OneProcessPerSuiteSurvivesAbortsAndHangs) {
  const std::string log = TestTempDir() + "/suites_log.txt";
  auto r = RunShell(Runner() + " --binary " + Fixture() + " --suite_timeout 3 --log " + log +
                    " --highlight Fails.Wrong Passes.One NoDevice.NeedsGpu Gone.Test");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto rows = Rows(r.out);
  ASSERT_EQ(rows.size(), 8u) << r.out;  // 7 suites and the total
  auto expect = [&](const std::string& suite, int p, int f, int s, const std::string& note) {
    SCOPED_TRACE(suite);
    ASSERT_TRUE(rows.count(suite)) << r.out;
    EXPECT_EQ(rows[suite].passed, p);
    EXPECT_EQ(rows[suite].failed, f);
    EXPECT_EQ(rows[suite].skipped, s);
    EXPECT_NE(rows[suite].note.find(note), std::string::npos) << rows[suite].note;
  };
  expect("Passes", 2, 0, 0, "");
  expect("Fails", 1, 1, 0, "exit 1");
  expect("NoDevice", 0, 0, 1, "");
  expect("OtherSkip", 0, 0, 1, "");
  // The abort kills the process in the second test; the first keeps its pass, the third never ran.
  expect("Aborts", 1, 2, 0, "in Aborts.Abort");
  expect("Hangs", 0, 1, 0, "TIMEOUT after 3s");
  expect("Inst/Param", 2, 0, 0, "");
  expect("total", 6, 4, 2, "");
  EXPECT_NE(r.out.find("check Fails.Wrong: FAILED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check Passes.One: passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check NoDevice.NeedsGpu: skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check Gone.Test: not in the binary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n6 passed, 4 failed, 2 skipped\n"), std::string::npos) << r.out;
  // Every suite's raw output is in the log, the planted failure's message too.
  const std::string text = ReadFile(log);
  EXPECT_NE(text.find("planted failure"), std::string::npos);
  EXPECT_NE(text.find("#### Hangs: TIMEOUT after 3s"), std::string::npos);
}

TEST(GpuSuitesTest, NoDeviceSkipsFailWhenADeviceIsPresent) {
  auto r = RunShell(Runner() + " --binary " + Fixture() +
                    " --device_present --filter 'NoDevice' --highlight NoDevice.NeedsGpu");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto rows = Rows(r.out);
  ASSERT_TRUE(rows.count("NoDevice")) << r.out;
  EXPECT_EQ(rows["NoDevice"].failed, 1);
  EXPECT_EQ(rows["NoDevice"].skipped, 0);
  EXPECT_NE(rows["NoDevice"].note.find("skipped for 'no CUDA device' with a device present"),
            std::string::npos);
  EXPECT_NE(r.out.find("check NoDevice.NeedsGpu: FAILED (skipped: no CUDA device)"),
            std::string::npos) << r.out;
  // Other skips stay skips.
  r = RunShell(Runner() + " --binary " + Fixture() + " --device_present --filter 'OtherSkip'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n0 passed, 0 failed, 1 skipped\n"), std::string::npos) << r.out;
}

TEST(GpuSuitesTest, BudgetSpentCountsTheRestAsNotRun) {
  // Hangs comes before Inst/Param in the binary and eats the whole budget.
  auto r = RunShell(Runner() + " --binary " + Fixture() +
                    " --filter '[HI]*' --suite_timeout 30 --budget 3");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto rows = Rows(r.out);
  ASSERT_TRUE(rows.count("Hangs")) << r.out;
  ASSERT_TRUE(rows.count("Inst/Param")) << r.out;
  EXPECT_EQ(rows["Hangs"].failed, 1);
  EXPECT_NE(rows["Hangs"].note.find("TIMEOUT after 3s"), std::string::npos) << r.out;
  EXPECT_EQ(rows["Inst/Param"].failed, 2);
  EXPECT_NE(rows["Inst/Param"].note.find("NOT RUN (budget spent)"), std::string::npos) << r.out;
}

TEST(GpuSuitesTest, UnusableBinaryIsAClearError) {
  auto r = RunShell(Runner() + " --binary /nonexistent/gpu_tests");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("cannot list the tests of /nonexistent/gpu_tests"), std::string::npos)
      << r.out;
  r = RunShell(Runner() + " --binary " + Fixture() + " --filter 'Nothing*'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no test suite matching 'Nothing*'"), std::string::npos) << r.out;
}

// The real GPU test binary: every suite runs in its own process and, with no device, skips (or
// passes, for the device-free tests) cleanly; told a device is present, the skips fail.
TEST(GpuSuitesTest, GpuTestsSkipCleanlySuiteBySuiteWithoutADevice) {
  const std::string bin = std::string(HALFCAF_BIN_DIR) + "/gpu_tests";
  if (!Exists(bin)) GTEST_SKIP() << "not a CUDA build (no gpu_tests)";
  if (RunShell(std::string(HALFCAF_BIN_DIR) + "/gpu_preflight").exit_code != 1) {
    GTEST_SKIP() << "a CUDA device is present: tools/gpu_run.sh runs the suites there";
  }
  auto r = RunShell(Runner() + " --binary " + bin + " --suite_timeout 120");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rows = Rows(r.out);
  EXPECT_GT(rows.size(), 20u) << r.out;
  ASSERT_TRUE(rows.count("total")) << r.out;
  EXPECT_EQ(rows["total"].failed, 0) << r.out;
  EXPECT_GT(rows["total"].skipped, 100) << r.out;
  EXPECT_GT(rows["total"].passed, 0) << r.out;  // the device-free tests
  r = RunShell(Runner() + " --binary " + bin + " --device_present --filter 'ConvCudnnTest' " +
               "--highlight ConvCudnnTest.Fp32IsNotTf32");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("check ConvCudnnTest.Fp32IsNotTf32: FAILED (skipped: no CUDA device)"),
            std::string::npos) << r.out;
}

TEST(GpuRunTest, DryRunPrintsThePlanCapsAndCommands) {
  const std::string res = TestTempDir() + "/dry";
  auto r = RunShell("bash " + SourceDir() + "/tools/gpu_run.sh --dry_run --bin " +
                    std::string(HALFCAF_BIN_DIR) + " " + res);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The plan, in order: preflight, ResNet-50 NCHW with the peer, the tests suite by suite, NHWC,
  // LeNet, the AC-GAN sweep, then the BF16 recipe; the caps add up to about 10 minutes (the budget, 470 s, may cut
  // the last step short).
  const char* steps[] = {"preflight",
                         "resnet50_nchw",
                         "gpu_tests",
                         "resnet50_nhwc",
                         "lenet_float",
                         "lenet_float16",
                         "lenet_float16_2replicas",
                         "lenet_float16_2processes",
                         "acgan",
                         "lenet_bfloat16",
                         "resnet50_bf16"};
  size_t at = 0;
  for (const char* s : steps) {
    const size_t k = r.out.find(std::string("  ") + s + " ", at);
    ASSERT_NE(k, std::string::npos) << s << "\n" << r.out;
    at = k + 1;
  }
  EXPECT_NE(r.out.find("total of caps 605s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--precision bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--peer_timeout_s 70"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu_suites.py --binary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--device_present"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--highlight ConvCudnnTest.Fp32IsNotTf32 FCGpuTest.Fp32IsNotTf32"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
  // The plan is in the summary too.
  EXPECT_NE(ReadFile(res + "/summary.txt").find("gpu_run plan"), std::string::npos);
}

// Here there is no GPU: the run stops at the preflight, within seconds, saying why, non-zero.
TEST(GpuRunTest, NoDeviceStopsAtThePreflight) {
  const std::string res = TestTempDir() + "/nodev";
  auto r = RunShell("BUDGET_S=60 bash " + SourceDir() + "/tools/gpu_run.sh --bin " +
                    std::string(HALFCAF_BIN_DIR) + " " + res);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string summary = ReadFile(res + "/summary.txt");
  if (!Exists(std::string(HALFCAF_BIN_DIR) + "/gpu_preflight")) {
    EXPECT_NE(summary.find("not a CUDA build"), std::string::npos) << summary;
    return;
  }
  if (RunShell(std::string(HALFCAF_BIN_DIR) + "/gpu_preflight").exit_code != 1) {
    GTEST_SKIP() << "a CUDA device is present";
  }
  EXPECT_NE(summary.find("gpu_run: STOP: gpu_preflight: no CUDA device: "), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("cuDNN: "), std::string::npos) << summary;
  EXPECT_NE(summary.find("driver: "), std::string::npos) << summary;
  EXPECT_EQ(summary.find("resnet50_nchw:"), std::string::npos) << summary;  // never started
  EXPECT_FALSE(Exists(res + "/resnet50.txt"));
  EXPECT_FALSE(Exists(res + "/gpu_tests.txt"));
}

// The peer hangs: halfcaf's JSON is already written when it starts, the peer is stopped at
// --peer_timeout_s, and the run still succeeds with halfcaf's numbers. The peer gets the
// library path given in HALFCAF_PEER_LD_LIBRARY_PATH, not the one halfcaf ran with.
TEST(BenchmarkPeerTest, HangingPeerLosesNothing) {
  const std::string dir = TestTempDir() + "/peer";
  mkdir(dir.c_str(), 0755);
  const std::string json = dir + "/r.json", seen = dir + "/seen.txt", py = dir + "/python";
  {
    std::ofstream f(py);
    f << "#!/bin/sh\n"
         "case \"$1\" in -c) exit 0 ;; esac\n"  // the `import torch, torchvision` check
         "{ echo \"json:$(test -s " << json << " && echo yes)\"; "
         "echo \"ld:${LD_LIBRARY_PATH-unset}\"; } >" << seen << "\n"
         "exec sleep 60\n";
  }
  chmod(py.c_str(), 0755);
  const std::string cmd = "LD_LIBRARY_PATH=/halfcaf/libs HALFCAF_PEER_LD_LIBRARY_PATH=/peer/libs " +
                          std::string(HALFCAF_BIN_DIR) +
                          "/benchmark --model resnet18 --image_size 32 --num_classes 10 "
                          "--batch_size 2 --iters 1 --warmup 0 --precision fp32 "
                          "--compare pytorch --peer_timeout_s 2 --python " + py + " --json " + json;
  auto r = RunShell(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("the PyTorch peer timed out after 2 s"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  const std::string s = ReadFile(seen);
  EXPECT_NE(s.find("json:yes"), std::string::npos) << s;  // written before the peer started
  EXPECT_NE(s.find("ld:/peer/libs"), std::string::npos) << s;
  EXPECT_NE(ReadFile(json).find("\"images_per_sec\""), std::string::npos);
}

// oneDNN's ISA cap reaches the PyTorch peer's own kernels (ATEN_CPU_CAPABILITY) unless the caller
// set that: AVX2 -> avx2, SSE41 -> default, no cap or an AVX-512 one -> left alone.
TEST(BenchmarkPeerTest, TheIsaCapReachesThePeersKernels) {
  const std::string dir = TestTempDir() + "/peer_isa";
  mkdir(dir.c_str(), 0755);
  const std::string seen = dir + "/seen.txt", py = dir + "/python";
  {
    std::ofstream f(py);
    f << "#!/bin/sh\n"
         "case \"$1\" in -c) exit 0 ;; esac\n"
         "echo \"aten:${ATEN_CPU_CAPABILITY-unset}\" >"
      << seen << "\n";
  }
  chmod(py.c_str(), 0755);
  struct Case {
    const char* env;
    const char* want;
  };
  for (const Case& c : {Case{"ONEDNN_MAX_CPU_ISA=AVX2", "aten:avx2"},
                        Case{"DNNL_MAX_CPU_ISA=SSE41", "aten:default"},
                        Case{"ONEDNN_MAX_CPU_ISA=AVX512_CORE", "aten:unset"},
                        Case{"ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx512", "aten:avx512"},
                        Case{"", "aten:unset"}}) {
    SCOPED_TRACE(c.env);
    std::remove(seen.c_str());
    const std::string cmd =
        "env -u ONEDNN_MAX_CPU_ISA -u DNNL_MAX_CPU_ISA -u ATEN_CPU_CAPABILITY " +
        std::string(c.env) + " " + HALFCAF_BIN_DIR +
        "/benchmark --model resnet18 --image_size 32 --num_classes 10 --batch_size 2 --iters 1 "
        "--warmup 0 "
        "--precision fp32 --compare pytorch --peer_timeout_s 20 --python " +
        py;
    const auto r = RunShell(cmd);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(ReadFile(seen), std::string(c.want) + "\n");
  }
}

TEST(SourceDirTest, EnvironmentOverridesTheCompiledPath) {
  const char* old = std::getenv("HALFCAF_SOURCE_DIR");
  const std::string saved = old ? old : "";
  setenv("HALFCAF_SOURCE_DIR", "/somewhere/else", 1);
  EXPECT_EQ(SourceDir(), "/somewhere/else");
  unsetenv("HALFCAF_SOURCE_DIR");
  EXPECT_EQ(SourceDir(), std::string(HALFCAF_SOURCE_DIR));  // the build tree has no bin/../tests
  if (old) setenv("HALFCAF_SOURCE_DIR", saved.c_str(), 1);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
