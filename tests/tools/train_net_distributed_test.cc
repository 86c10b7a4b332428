// train_net across processes (Gloo, file store in a temp folder, 127.0.0.1): the --num_shards
// and mpirun forms train LeNet as one process does; rank 0 alone writes; resume with another
// number of processes; faults (a killed rank, a rank that never starts, mismatched nets, bad
// flags) end every process with an error naming the problem, within bounded time. Every wait
// here is bounded: a process still running at its deadline is killed and the test fails.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/common_world.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/bounded_wait.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kData = "/usr/share/datasets/fashion-mnist/";

bool HaveFashionMnist() {
  struct stat st;
  return stat((kData + "train-images-idx3-ubyte.gz").c_str(), &st) == 0;
}

std::string Lenet() {
  const std::string src = SourceDir();
  return "--net " + src + "/models/lenet/lenet_train_net.pbtxt --init_net " + src +
         "/models/lenet/lenet_init_net.pbtxt ";
}

// Synthetic data: fast, and the same on every machine.
std::string Synthetic() {
  return Lenet() + "--data_format synthetic --synthetic_shape 1,28,28 --batch_size 64 "
                   "--base_lr 0.01 --threads 1 --log_every 10 --gloo_interface lo ";
}

struct ProcRun {
  int exit_code = -1;  // -1: killed at the deadline
  double seconds = 0;
  std::string out, err;
};

class TrainNetDistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GlooAvailable()) GTEST_SKIP() << "built without Gloo";
    char tmpl[] = "/tmp/halfcaf_tn_dist_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void ExpectTwoProcessesTrainLeNetLikeOne(const std::string& dtype);

  // Starts one train_net per entry of `args` (stdout / stderr to files), waits for all at most
  // `deadline_s`, kills what is left. `on_start(pids)` runs once they are started.
  std::vector<ProcRun> RunAll(const std::vector<std::string>& args, double deadline_s,
                          const std::function<void(const std::vector<pid_t>&)>& on_start = {}) {
    std::vector<pid_t> pids;
    std::vector<ProcRun> runs(args.size());
    const auto start = Clock::now();
    for (size_t k = 0; k < args.size(); ++k) {
      pids.push_back(SpawnTool(tool_, args[k], Out(k), Err(k)));
    }
    if (on_start) on_start(pids);
    const auto status = WaitAllBounded(pids, deadline_s, start);
    for (size_t k = 0; k < args.size(); ++k) {
      runs[k].exit_code = status[k].exit_code;
      runs[k].seconds = status[k].seconds;
    }
    for (size_t k = 0; k < args.size(); ++k) {
      runs[k].out = ReadFile(Out(k));
      runs[k].err = ReadFile(Err(k));
    }
    return runs;
  }

  // The same arguments for ranks 0..n-1 with --num_shards n and a new rendezvous folder.
  std::vector<std::string> Shards(int n, const std::string& args) {
    const std::string rv = dir_ + "/rv" + std::to_string(rendezvous_++);
    std::vector<std::string> out;
    for (int r = 0; r < n; ++r) {
      out.push_back(args + " --num_shards " + std::to_string(n) + " --shard_id " +
                    std::to_string(r) + " --rendezvous " + rv);
    }
    return out;
  }

  std::string Out(size_t k) const { return dir_ + "/out" + std::to_string(k); }
  std::string Err(size_t k) const { return dir_ + "/err" + std::to_string(k); }

  std::string dir_;
  std::string tool_ = "train_net";  // what RunAll starts
  int rendezvous_ = 0;
};

double JsonNumber(const std::string& json, const std::string& key) {
  const size_t p = json.find("\"" + key + "\": ");
  EXPECT_NE(p, std::string::npos) << key << " in " << json;
  return p == std::string::npos ? -1 : std::stod(json.substr(p + key.size() + 4));
}

void ExpectAllSucceeded(const std::vector<ProcRun>& runs) {
  for (size_t k = 0; k < runs.size(); ++k) {
    EXPECT_EQ(runs[k].exit_code, 0) << "rank " << k << ":\n" << runs[k].out << runs[k].err;
  }
}

// Acceptance: LeNet on Fashion-MNIST trained by two processes (the --num_shards form) reaches
// the accuracy of one process, FP32 and mixed precision (one test each); rank 0 alone logs and
// writes.
void TrainNetDistributedTest::ExpectTwoProcessesTrainLeNetLikeOne(const std::string& dtype) {
  SCOPED_TRACE(dtype);
  const std::string common = Lenet() + "--train_data " + kData +
                             "train-images-idx3-ubyte.gz --test_data " + kData +
                             "t10k-images-idx3-ubyte.gz --iters 400 --batch_size 64 "
                             "--base_lr 0.01 --momentum 0.9 --log_every 100 --threads 1 "
                             "--gloo_interface lo --dtype " + dtype + " ";
  auto one = RunAll({common + "--summary_json " + dir_ + "/one.json"}, 300);
  ExpectAllSucceeded(one);
  auto two = RunAll(Shards(2, common + "--summary_json " + dir_ + "/two.json --log_csv " +
                                  dir_ + "/two.csv --checkpoint_dir " + dir_ + "/ckpt_" + dtype),
                    300);
  ExpectAllSucceeded(two);
  const double a1 = JsonNumber(ReadFile(dir_ + "/one.json"), "test_accuracy");
  const double a2 = JsonNumber(ReadFile(dir_ + "/two.json"), "test_accuracy");
  EXPECT_GT(a1, 0.75);
  EXPECT_LE(std::fabs(a1 - a2), 0.005) << "one process " << a1 << ", two " << a2;
  EXPECT_EQ(JsonNumber(ReadFile(dir_ + "/two.json"), "num_shards"), 2);
  // Rank 0 logs (with the exchange times); rank 1 writes nothing at all.
  EXPECT_NE(two[0].out.find("exchange "), std::string::npos) << two[0].out;
  EXPECT_NE(two[0].out.find("test: 10000 samples"), std::string::npos) << two[0].out;
  EXPECT_EQ(two[1].out, "");
  EXPECT_EQ(two[1].err, "");
  EXPECT_TRUE(fs::exists(dir_ + "/ckpt_" + dtype + "/checkpoint.pb"));
  EXPECT_EQ(CountLines(ReadFile(dir_ + "/two.csv")), 5);  // header + 4 log lines
}

TEST_F(TrainNetDistributedTest, TwoProcessesTrainLeNetLikeOneFp32) {
  if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  ExpectTwoProcessesTrainLeNetLikeOne("float");
}

TEST_F(TrainNetDistributedTest, TwoProcessesTrainLeNetLikeOneFloat16) {
  if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  ExpectTwoProcessesTrainLeNetLikeOne("float16");
}

// Started by mpirun with no multi-process flags at all: rank and size come from its
// environment, the rendezvous folder is made in /tmp for the job and removed at the end.
TEST_F(TrainNetDistributedTest, MpirunNeedsNoExtraFlags) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  const std::string env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";
  auto r = RunShell(env + "timeout -s KILL 240 mpirun --oversubscribe -np 2 " +
                    std::string(HALFCAF_BIN_DIR) + "/train_net " + Synthetic() +
                    "--iters 20 --summary_json " + dir_ + "/mpi.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("on 2 processes"), std::string::npos) << r.out;
  EXPECT_EQ(JsonNumber(ReadFile(dir_ + "/mpi.json"), "num_shards"), 2);
  // The same run in one process with two replicas (the same arithmetic): the same final loss.
  auto one = RunAll({Synthetic() + "--iters 20 --replicas 2 --summary_json " + dir_ + "/one.json"},
                    120);
  ExpectAllSucceeded(one);
  const double l2 = JsonNumber(ReadFile(dir_ + "/mpi.json"), "final_loss");
  const double l1 = JsonNumber(ReadFile(dir_ + "/one.json"), "final_loss");
  EXPECT_NEAR(l2, l1, 1e-4 * std::fabs(l1));
}

// A checkpoint written by two processes resumes in one, and one process's in two: the result
// is that of a run never interrupted. (The one-process runs use two replicas, whose arithmetic
// is that of two processes; one replica sums each gradient in another order, which FP32
// rounding and 40 steps of training turn into differences of about 1e-3.)
TEST_F(TrainNetDistributedTest, ResumeWithAnotherNumberOfProcesses) {
  const std::string ck2 = dir_ + "/ck2", ck1 = dir_ + "/ck1";
  auto straight = RunAll({Synthetic() + "--iters 40 --replicas 2 --summary_json " + dir_ +
                          "/s.json"},
                         120);
  ExpectAllSucceeded(straight);
  const double want = JsonNumber(ReadFile(dir_ + "/s.json"), "final_loss");

  ExpectAllSucceeded(RunAll(Shards(2, Synthetic() + "--iters 20 --checkpoint_dir " + ck2), 120));
  auto resumed1 = RunAll({Synthetic() + "--iters 40 --replicas 2 --resume --checkpoint_dir " + ck2 +
                          " --summary_json " + dir_ + "/r1.json"},
                         120);
  ExpectAllSucceeded(resumed1);
  EXPECT_NE(resumed1[0].out.find("resumed at iteration 20"), std::string::npos) << resumed1[0].out;
  EXPECT_NEAR(JsonNumber(ReadFile(dir_ + "/r1.json"), "final_loss"), want, 1e-4 * want);

  ExpectAllSucceeded(
      RunAll({Synthetic() + "--iters 20 --replicas 2 --checkpoint_dir " + ck1}, 120));
  // Only rank 0 reads the checkpoint (rank 1's --checkpoint_dir may not even exist).
  auto args = Shards(2, Synthetic() + "--iters 40 --resume --summary_json " + dir_ + "/r2.json");
  args[0] += " --checkpoint_dir " + ck1;
  args[1] += " --checkpoint_dir " + dir_ + "/nowhere";
  auto resumed2 = RunAll(args, 120);
  ExpectAllSucceeded(resumed2);
  EXPECT_NE(resumed2[0].out.find("resumed at iteration 20"), std::string::npos) << resumed2[0].out;
  EXPECT_NEAR(JsonNumber(ReadFile(dir_ + "/r2.json"), "final_loss"), want, 1e-4 * want);
}

// kill -9 of rank 1 mid-run: rank 0 stops within the timeout naming rank 1; its last
// checkpoint is intact and resumes. Then the same with rank 0 killed: rank 1 names rank 0.
TEST_F(TrainNetDistributedTest, KilledRankStopsTheOthersAndTheCheckpointResumes) {
  for (int victim : {1, 0}) {
    SCOPED_TRACE(victim);
    const std::string ck = dir_ + "/kill" + std::to_string(victim);
    auto args = Shards(2, Synthetic() + "--iters 1000000 --checkpoint_every 10 --gloo_timeout_s 5 "
                          "--checkpoint_dir " + ck);
    auto runs = RunAll(args, 90, [&](const std::vector<pid_t>& pids) {
      // Once a checkpoint exists (rank 0 has trained at least 10 steps), kill the victim.
      const auto until = Clock::now() + std::chrono::seconds(60);
      while (!fs::exists(ck + "/checkpoint.pb") && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      kill(pids[victim], SIGKILL);
    });
    const int other = 1 - victim;
    EXPECT_EQ(runs[victim].exit_code, 128 + SIGKILL);
    EXPECT_EQ(runs[other].exit_code, 1) << runs[other].err;
    EXPECT_LT(runs[other].seconds, 45);
    EXPECT_NE(runs[other].err.find("lost rank " + std::to_string(victim)), std::string::npos)
        << runs[other].err;
    EXPECT_NE(runs[other].err.find("timeout 5000 ms"), std::string::npos) << runs[other].err;
    // The checkpoint on disk is whole and resumes (in one process): first read its iteration,
    // then train 10 more steps from it.
    auto peek = RunAll({Synthetic() + "--iters 1 --resume --checkpoint_dir " + ck}, 120);
    ASSERT_EQ(peek[0].exit_code, 0) << peek[0].out << peek[0].err;
    const size_t at = peek[0].out.find("resumed at iteration ");
    ASSERT_NE(at, std::string::npos) << peek[0].out;
    const int64_t n = std::stoll(peek[0].out.substr(at + 21));
    EXPECT_GE(n, 10);
    auto resumed = RunAll({Synthetic() + "--iters " + std::to_string(n + 10) +
                           " --resume --checkpoint_dir " + ck},
                          120);
    ASSERT_EQ(resumed[0].exit_code, 0) << resumed[0].out << resumed[0].err;
    EXPECT_NE(resumed[0].out.find("done: " + std::to_string(n + 10) + " iterations"),
              std::string::npos)
        << resumed[0].out;
  }
}

// A rank that never starts: the others stop at the rendezvous within the timeout, naming it.
TEST_F(TrainNetDistributedTest, RankThatNeverStartsFailsTheRendezvous) {
  auto args = Shards(3, Synthetic() + "--iters 10 --gloo_timeout_s 3 --batch_size 63");
  args.pop_back();  // rank 2 never starts
  auto runs = RunAll(args, 60);
  for (const ProcRun& r : runs) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_LT(r.seconds, 20);
    EXPECT_NE(r.err.find("rank(s) 2 of 3 did not arrive"), std::string::npos) << r.err;
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
  }
}

// Processes started with different nets stop before training, saying so.
TEST_F(TrainNetDistributedTest, MismatchedNetsFailAtStart) {
  auto args = Shards(2, Synthetic() + "--iters 10 --gloo_timeout_s 10");
  args[1] += " --dtype float16";
  auto runs = RunAll(args, 60);
  for (const ProcRun& r : runs) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("do not train the same net"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("iter 10"), std::string::npos) << r.out;
  }
  auto replicas = Shards(2, Synthetic() + "--iters 10 --gloo_timeout_s 10");
  replicas[0] += " --replicas 2";
  runs = RunAll(replicas, 60);
  for (const ProcRun& r : runs) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("replica(s)"), std::string::npos) << r.err;
  }
}

// A rendezvous folder left by an earlier run is refused at once instead of connecting to the
// old run's addresses.
TEST_F(TrainNetDistributedTest, ReusedRendezvousFolderIsRefused) {
  const std::string rv = " --rendezvous " + dir_ + "/same";
  const std::string args = Synthetic() + "--iters 5 --num_shards 2" + rv;
  ExpectAllSucceeded(RunAll({args + " --shard_id 0", args + " --shard_id 1"}, 120));
  auto again = RunAll({args + " --shard_id 0", args + " --shard_id 1"}, 60);
  for (const ProcRun& r : again) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("from an earlier run"), std::string::npos) << r.err;
    EXPECT_LT(r.seconds, 20);
  }
  // Another --run_id shares the folder.
  ExpectAllSucceeded(RunAll({args + " --shard_id 0 --run_id b", args + " --shard_id 1 --run_id b"},
                            120));
}

TEST_F(TrainNetDistributedTest, BadFlagsAreOneLineErrors) {
  const std::string base = Synthetic() + "--iters 5 ";
  ExpectOneLineError(RunTool("train_net", base + "--num_shards 2"), "train_net",
                     "--num_shards 2 needs --shard_id");
  ExpectOneLineError(RunTool("train_net", base + "--num_shards 2 --shard_id 2 --rendezvous " +
                                              dir_ + "/x"),
                     "train_net", "--shard_id must be in [0, 2)");
  ExpectOneLineError(RunTool("train_net", base + "--num_shards 2 --shard_id 0"), "train_net",
                     "needs --rendezvous");
  ExpectOneLineError(RunTool("train_net", base + "--num_shards 3 --shard_id 0 --rendezvous " +
                                              dir_ + "/x"),
                     "train_net", "multiple of their number");
  ExpectOneLineError(RunTool("train_net", base + "--num_shards 2 --shard_id 0 --rendezvous " +
                                              dir_ + "/y --gloo_timeout_s 0"),
                     "train_net", "--gloo_timeout_s");
  ExpectOneLineError(RunTool("train_net", base + "--num_shards -1"), "train_net",
                     "--num_shards must be >= 0");
  // The ring all-reduce would let the processes' parameters drift apart. The flag is checked
  // before the rendezvous: a process alone fails at once, and two fail alike (neither sees the
  // other's connection drop).
  ExpectOneLineError(RunTool("train_net", base + "--num_shards 2 --shard_id 0 --rendezvous " +
                                              dir_ + "/z --allreduce ring"),
                     "train_net", "drift apart");
  ExpectOneLineError(RunTool("train_net", base + "--num_shards 2 --shard_id 1 --rendezvous " +
                                              dir_ + "/z --allreduce rings"),
                     "train_net", "unknown all-reduce algorithm 'rings'");
  auto ring = RunAll(Shards(2, base + "--allreduce ring --gloo_timeout_s 10"), 60);
  for (const ProcRun& r : ring) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("drift apart"), std::string::npos) << r.err;
  }
}

// benchmark across processes: rank 0 reports the table (with the exchange times) and writes the
// JSON; the other rank prints nothing.
TEST_F(TrainNetDistributedTest, BenchmarkAcrossProcesses) {
  const std::string rv = dir_ + "/bench_rv";
  std::vector<std::string> args;
  for (int r = 0; r < 2; ++r) {
    args.push_back("--model lenet --precision fp32 --batch_size 64 --iters 5 --warmup 2 "
                   "--threads 1 --gloo_interface lo --num_shards 2 --bucket_mb 0.5 --shard_id " +
                   std::to_string(r) + " --rendezvous " + rv + " --json " + dir_ + "/b" +
                   std::to_string(r) + ".json");
  }
  tool_ = "benchmark";
  ExpectAllSucceeded(RunAll(args, 120));
  const std::string out0 = ReadFile(Out(0)), out1 = ReadFile(Out(1));
  EXPECT_NE(out0.find("2 processes x cpu"), std::string::npos) << out0 << ReadFile(Err(0));
  EXPECT_NE(out0.find("exchange ms"), std::string::npos) << out0;
  EXPECT_EQ(out1, "");
  const std::string json = ReadFile(dir_ + "/b0.json");
  EXPECT_EQ(JsonNumber(json, "num_shards"), 2);
  EXPECT_GT(JsonNumber(json, "exchange_ms_per_iter"), 0);
  EXPECT_GE(JsonNumber(json, "exposed_exchange_ms_per_iter"), 0);
  EXPECT_FALSE(fs::exists(dir_ + "/b1.json"));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
