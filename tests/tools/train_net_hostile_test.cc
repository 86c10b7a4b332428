// train_net against a hostile user and a fault tester (issue #13): file-size limits, diverging
// runs, corrupt checkpoints, signals, closed pipes, unwritable or shared output folders, absurd
// sizes and flags, and kill -9 at random moments. Each case ends in one clear error line or the
// documented graceful behaviour, and never in a lost or corrupt checkpoint.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "core/argument.h"
#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "core/workspace.h"
#include "models/trainer.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

namespace fs = std::filesystem;

const std::string kData = ::halfcaf::testing::SourceDir() + "/tests/fixtures/";
const std::string kTiny = "--net " + kData + "tiny_convnet_net.pbtxt --init_net " + kData +
                          "tiny_convnet_init.pbtxt --data_format synthetic "
                          "--synthetic_shape 1,8,8 --num_classes 4 --batch_size 16 "
                          "--base_lr 0.05 --threads 1 ";

void ExpectCleanError(const ToolResult& r, const std::string& needle) {
  ExpectOneLineError(r, "train_net", needle);
}

// A fresh folder under the test's temp dir.
std::string FreshDir(const std::string& name) {
  const std::string dir = TestTempDir() + "/" + name;
  fs::remove_all(dir);
  return dir;
}

TensorProtos ReadCheckpoint(const std::string& path) {
  TensorProtos protos;
  ReadTensorProtosFile(path, Checksum::kRequired, &protos);
  return protos;
}

int64_t CheckpointIteration(const std::string& path) {
  const TensorProtos protos = ReadCheckpoint(path);
  for (const auto& p : protos.protos()) {
    if (p.name() == "iter") return p.int64_data(0);
  }
  ADD_FAILURE() << path << " has no iteration";
  return -1;
}

// Waits (up to 60 s) until the file has at least `lines` lines.
bool WaitForLines(const std::string& path, int lines) {
  for (int i = 0; i < 6000; ++i) {
    if (CountLines(ReadFile(path)) >= lines) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A checkpoint write past `ulimit -f` fails with EFBIG (SIGXFSZ is ignored) and one clear line;
// the previous checkpoint stays as it was.
TEST(TrainNetHostileTest, FileSizeLimitFailsCleanlyAndKeepsCheckpoint) {
  const std::string ck = FreshDir("ck_fsize");
  ASSERT_EQ(RunTool("train_net", kTiny + "--iters 3 --checkpoint_dir " + ck).exit_code, 0);
  const std::string before = ReadFile(ck + "/checkpoint.pb");
  ASSERT_GT(before.size(), 2048u);
  auto r = RunTool("train_net", kTiny + "--iters 6 --resume --checkpoint_every 1 "
                                        "--checkpoint_dir " + ck, "ulimit -f 2; ");
  ExpectCleanError(r, "File too large");
  EXPECT_NE(r.err.find("checkpoint of iteration 4 not written (" + ck +
                       "/checkpoint.pb still holds iteration 3)"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(ck + "/checkpoint.pb"), before);
}

// A diverging FP32 run stops; whatever checkpoint is on disk holds only finite values.
TEST(TrainNetHostileTest, DivergedRunLeavesOnlyFiniteCheckpoints) {
  const std::string ck = FreshDir("ck_diverge");
  auto r = RunTool("train_net", kTiny + "--iters 20 --base_lr 1e37 --checkpoint_every 1 "
                                        "--checkpoint_dir " + ck);
  // The loss is read only at log lines; the checkpoint's own check stops the run first.
  ExpectCleanError(r, "training diverged at iteration");
  const TensorProtos protos = ReadCheckpoint(ck + "/checkpoint.pb");
  for (const auto& p : protos.protos()) {
    EXPECT_EQ(CountNonFinite(p), 0) << p.name();
  }
}

// SaveCheckpoint refuses parameters or optimizer state holding inf or NaN and leaves the last good
// checkpoint untouched.
TEST(TrainNetHostileTest, NonFiniteStateIsNeverCheckpointed) {
  const std::string dir = FreshDir("ck_nonfinite");
  fs::create_directories(dir);
  const std::string path = dir + "/checkpoint.pb";
  NetDef init, forward;
  ReadProtoFromFile(kData + "tiny_convnet_init.pbtxt", &init);
  ReadProtoFromFile(kData + "tiny_convnet_net.pbtxt", &forward);
  for (const bool fp16 : {false, true}) {
    TrainerOptions o;
    o.data_format = "synthetic";
    o.synthetic_shape = {1, 8, 8};
    o.num_classes = 4;
    o.batch_size = 16;
    o.precision = fp16 ? DataType::FLOAT16 : DataType::FLOAT;
    o.dynamic_loss_scale = fp16;
    o.loss_scale = fp16 ? 1024.f : 1.f;
    Trainer trainer(init, forward, o);
    trainer.Initialize();
    trainer.Step();
    trainer.SaveCheckpoint(path);
    const std::string good = ReadFile(path);
    for (const std::string blob : {"fc_w", "fc_w_momentum"}) {
      Tensor* t = trainer.workspace()->CreateTensor(blob);
      const float saved = t->mutable_data<float>()[1];
      t->mutable_data<float>()[1] = blob == "fc_w" ? NAN : INFINITY;
      try {
        trainer.SaveCheckpoint(path);
        ADD_FAILURE() << "a checkpoint with a non-finite '" << blob << "' was written";
      } catch (const EnforceNotMet& e) {
        EXPECT_NE(std::string(e.what()).find("training diverged at iteration 1: 1 parameter or "
                                             "optimizer values are inf or NaN (in '" + blob + "'"),
                  std::string::npos) << e.what();
      }
      EXPECT_EQ(ReadFile(path), good);
      t->mutable_data<float>()[1] = saved;
    }
  }
}

// Mixed precision skips overflowing steps, but K in a row is a diverged run: an error, not exit 0.
TEST(TrainNetHostileTest, ConsecutiveSkippedStepsFailTheRun) {
  const std::string flags = kTiny + "--dtype float16 --loss_scale 1e30 --iters 40 ";
  auto r = RunTool("train_net", flags + "--log_every 1 --max_skipped_steps 5");
  ExpectCleanError(r, "training diverged: 5 consecutive steps overflowed and were skipped (the "
                      "limit is 5");
  EXPECT_NE(r.out.find("skipped 5\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("iter 6 "), std::string::npos) << r.out;
  // The default limit (32) catches a 40-step run that skips every step.
  ExpectCleanError(RunTool("train_net", flags + "--log_every 100"),
                   "consecutive steps overflowed and were skipped (the limit is 32;");
  // No checkpoint is written past the limit.
  const std::string ck = FreshDir("ck_skips");
  r = RunTool("train_net", flags + "--max_skipped_steps 3 --log_every 100 --checkpoint_every 1 "
                                   "--checkpoint_dir " + ck);
  ExpectCleanError(r, "checkpoint of iteration 3 not written (" + ck +
                          "/checkpoint.pb still holds iteration 2)");
  // 0 turns the check off; a run with a few overflows (a huge starting scale) passes.
  EXPECT_EQ(RunTool("train_net", flags + "--max_skipped_steps 0").exit_code, 0);
  EXPECT_EQ(RunTool("train_net", kTiny + "--dtype float16 --loss_scale dynamic:16777216 "
                                         "--iters 40").exit_code, 0);
}

// Every single-bit flip of a checkpoint's payload (binary, and the text form) is detected.
TEST(TrainNetHostileTest, EveryPayloadBitFlipIsDetected) {
  const std::string ck = FreshDir("ck_flip");
  ASSERT_EQ(RunTool("train_net", kTiny + "--iters 2 --checkpoint_dir " + ck).exit_code, 0);
  const std::string binary = ReadFile(ck + "/checkpoint.pb");
  TensorProtos protos;
  ParseTensorProtos(binary, "checkpoint.pb", Checksum::kRequired, &protos);
  const std::string text_path = ck + "/checkpoint.pbtxt";
  WriteTensorProtosFile(protos, text_path);
  const std::string text = ReadFile(text_path);
  for (const auto& [content, record] :
       {std::make_pair(binary, size_t{18}), std::make_pair(text, size_t{25})}) {
    int64_t flips = 0, detected = 0;
    for (size_t i = 0; i + record < content.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string bad = content;
        bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
        ++flips;
        try {
          TensorProtos out;
          ParseTensorProtos(bad, "checkpoint.pb", Checksum::kRequired, &out);
        } catch (const EnforceNotMet& e) {
          detected += std::string(e.what()).find("checkpoint.pb: the file is corrupt") !=
                          std::string::npos ||
                      std::string(e.what()).find("checkpoint.pb: the file has no checksum") !=
                          std::string::npos;
        }
      }
    }
    EXPECT_GT(flips, 8 * 2000);
    EXPECT_EQ(detected, flips) << "of " << content.size() << " bytes";
  }
}

// --resume and the Load operator refuse a corrupt file with one line naming it; Load still reads
// files without a checksum (Caffe2's), and protobuf reads a checksummed file as plain TensorProtos.
TEST(TrainNetHostileTest, CorruptCheckpointRefusedByResumeAndLoad) {
  const std::string ck = FreshDir("ck_corrupt");
  ASSERT_EQ(RunTool("train_net", kTiny + "--iters 2 --checkpoint_dir " + ck).exit_code, 0);
  const std::string path = ck + "/checkpoint.pb";
  const std::string good = ReadFile(path);
  TensorProtos plain;
  ASSERT_TRUE(plain.ParseFromString(good));  // a Caffe2 reader skips the checksum field
  EXPECT_EQ(plain.protos_size(), ReadCheckpoint(path).protos_size());
  std::string bad = good;
  bad[bad.size() - 100] ^= 0x10;  // inside the last tensors' data
  std::ofstream(path, std::ios::binary) << bad;
  ExpectCleanError(RunTool("train_net", kTiny + "--iters 4 --resume --checkpoint_dir " + ck),
                   path + ": the file is corrupt");
  Workspace ws;
  NetDef load;
  *load.add_op() = MakeOperatorDef("Load", "", {}, {},
                                   {MakeArgument("db", path), MakeArgument("load_all", 1)});
  try {
    ws.RunNetOnce(load);
    ADD_FAILURE() << "Load read a corrupt file";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": the file is corrupt"), std::string::npos)
        << e.what();
  }
  // Without its checksum record: Load reads it, --resume refuses it.
  std::ofstream(path, std::ios::binary) << good.substr(0, good.size() - 18);
  ws.RunNetOnce(load);
  EXPECT_TRUE(ws.HasBlob("fc_w"));
  ExpectCleanError(RunTool("train_net", kTiny + "--iters 4 --resume --checkpoint_dir " + ck),
                   path + ": the file has no checksum record");
}

// SIGINT / SIGTERM: the step finishes, a checkpoint is written, the exit code is 130 / 143 and
// the message says how to resume; a second signal exits at once.
TEST(TrainNetHostileTest, StopSignalsCheckpointAndExit) {
  const std::string dir = TestTempDir();
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string ck = FreshDir("ck_sig" + std::to_string(sig));
    const std::string csv = dir + "/sig.csv", err = dir + "/sig.err";
    fs::remove(csv);
    pid_t pid = SpawnTool("train_net", kTiny + "--iters 100000000 --log_every 1 --log_csv " + csv +
                                           " --checkpoint_dir " + ck, "/dev/null", err);
    ASSERT_TRUE(WaitForLines(csv, 4));
    kill(pid, sig);
    EXPECT_EQ(WaitExitCode(pid), 128 + sig);
    const std::string msg = ReadFile(err);
    EXPECT_EQ(CountLines(msg), 1) << msg;
    const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    EXPECT_NE(msg.find("train_net: stopped by " + name + " after iteration "), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("checkpoint written to " + ck + "/checkpoint.pb; to continue, run the same "
                       "command with --resume"), std::string::npos) << msg;
    const int64_t iter = CheckpointIteration(ck + "/checkpoint.pb");
    EXPECT_NE(msg.find("after iteration " + std::to_string(iter) + " of"), std::string::npos) << msg;
    auto r = RunTool("train_net", kTiny + "--iters " + std::to_string(iter + 2) +
                                      " --resume --checkpoint_dir " + ck);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("resumed at iteration " + std::to_string(iter)), std::string::npos);
  }
  // Without a checkpoint folder nothing is saved; two signals at once: out at once.
  const std::string csv = dir + "/sig2.csv", err = dir + "/sig2.err";
  fs::remove(csv);
  pid_t pid = SpawnTool("train_net", kTiny + "--iters 100000000 --log_every 1 --log_csv " + csv,
                        "/dev/null", err);
  ASSERT_TRUE(WaitForLines(csv, 4));
  kill(pid, SIGINT);
  kill(pid, SIGTERM);
  const int code = WaitExitCode(pid);
  const std::string msg = ReadFile(err);
  if (msg.find("train_net: second signal, exiting at once") != std::string::npos) {
    EXPECT_TRUE(code == 130 || code == 143) << code;  // 128 + the second one delivered
  } else {  // the first signal's clean stop won the race
    EXPECT_EQ(code, 130);
    EXPECT_NE(msg.find("no --checkpoint_dir, so nothing was saved"), std::string::npos) << msg;
  }
}

// train_net | head: SIGPIPE does not kill training; it goes on to the end, logging to the CSV.
TEST(TrainNetHostileTest, ClosedStdoutKeepsTraining) {
  const std::string dir = TestTempDir();
  const std::string csv = dir + "/pipe.csv", rc = dir + "/pipe.rc", err = dir + "/pipe.err";
  const std::string cmd = "(" + std::string(HALFCAF_BIN_DIR) + "/train_net " + kTiny +
                          "--iters 2000 --log_every 1 --log_csv " + csv + " 2>" + err +
                          "; echo $? >" + rc + ") | head -n 1 >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(ReadFile(rc), "0\n");
  EXPECT_EQ(CountLines(ReadFile(csv)), 2001);
  EXPECT_NE(ReadFile(err).find("train_net: note: standard output is closed (broken pipe); "
                               "training goes on, logging to --log_csv"), std::string::npos);
}

// Output paths are checked before training; a symbolic link is written through.
TEST(TrainNetHostileTest, OutputsCheckedAtStartup) {
  const std::string dir = FreshDir("outputs");
  fs::create_directories(dir);
  const std::string flags = kTiny + "--iters 2 ";
  auto r = RunTool("train_net", flags + "--log_csv " + dir + "/missing/log.csv");
  ExpectCleanError(r, "--log_csv " + dir + "/missing/log.csv: the folder " + dir +
                          "/missing does not exist");
  EXPECT_EQ(r.out, "");  // nothing ran
  ExpectCleanError(RunTool("train_net", flags + "--summary_json /proc/s.json"),
                   "--summary_json /proc/s.json: cannot write in /proc");
  ExpectCleanError(RunTool("train_net", flags + "--summary_json " + dir), "is a folder");
  std::ofstream(dir + "/file") << "x";
  ExpectCleanError(RunTool("train_net", flags + "--checkpoint_dir " + dir + "/file"),
                   "--checkpoint_dir " + dir + "/file: cannot create the folder");
  ExpectCleanError(RunTool("train_net", flags + "--checkpoint_dir /proc/ck"),
                   "--checkpoint_dir /proc/ck: cannot create the folder");
  // Symbolic links are written through: the link stays, its target gets the content.
  fs::create_directories(dir + "/real");
  fs::create_symlink("real/summary.json", dir + "/summary.json");
  fs::create_symlink("real/log.csv", dir + "/log.csv");
  r = RunTool("train_net", flags + "--summary_json " + dir + "/summary.json --log_csv " + dir +
                               "/log.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir + "/summary.json"));
  EXPECT_TRUE(fs::is_symlink(dir + "/log.csv"));
  EXPECT_NE(ReadFile(dir + "/real/summary.json").find("\"iterations\": 2"), std::string::npos);
  EXPECT_EQ(CountLines(ReadFile(dir + "/real/log.csv")), 2);
}

// A second train_net on a checkpoint folder in use stops at start naming the first one's pid;
// temp files of killed runs are removed, those of live processes kept.
TEST(TrainNetHostileTest, CheckpointFolderLockAndStaleTempFiles) {
  const std::string dir = TestTempDir(), ck = FreshDir("ck_lock");
  const std::string csv = dir + "/lock.csv";
  fs::remove(csv);
  pid_t first = SpawnTool("train_net", kTiny + "--iters 100000000 --log_every 1 --log_csv " + csv +
                                           " --checkpoint_dir " + ck, "/dev/null", "/dev/null");
  ASSERT_TRUE(WaitForLines(csv, 2));
  auto r = RunTool("train_net", kTiny + "--iters 2 --checkpoint_dir " + ck);
  ExpectCleanError(r, ck + " is in use by another train_net (pid " + std::to_string(first) +
                          ", lock file " + ck + "/train_net.lock)");
  kill(first, SIGTERM);
  EXPECT_EQ(WaitExitCode(first), 143);
  // A pid that is surely gone: a child that has exited and been reaped.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  WaitExitCode(gone);
  const std::string stale = "checkpoint.pb.tmp." + std::to_string(gone);
  const std::string live = "checkpoint.pb.tmp." + std::to_string(getpid());
  const std::string other = "notes.tmp." + std::to_string(gone);
  for (const auto& f : {stale, live, other}) std::ofstream(ck + "/" + f) << "partial";
  r = RunTool("train_net", kTiny + "--iters 2 --checkpoint_dir " + ck);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("train_net: note: removed " + stale + ", left by a run that was killed"),
            std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(ck + "/" + stale));
  EXPECT_TRUE(fs::exists(ck + "/" + live));
  EXPECT_TRUE(fs::exists(ck + "/" + other));
}

// Absurd sizes say what was too large and how much memory it needed; non-finite or out-of-range
// numbers are refused at parse time.
TEST(TrainNetHostileTest, AbsurdSizesAndNumbers) {
  ExpectCleanError(RunTool("train_net", kTiny + "--batch_size 1000000000"),
                   "--batch_size 1000000000 with --synthetic_shape 1,8,8: one input batch needs "
                   "238.4 GiB, more than this machine's");
  ExpectCleanError(RunTool("train_net", kTiny + "--synthetic_shape 1,100000,100000"),
                   "one input batch needs 596.0 GiB");
  ExpectCleanError(RunTool("train_net", kTiny + "--synthetic_shape 1,4294967296,4294967296"),
                   "one input batch would hold more than 2^63 values");
  for (const auto& [flag, needle] :
       std::vector<std::pair<std::string, std::string>>{
           {"--momentum nan", "--momentum must be a finite number in [0, 1), got nan"},
           {"--momentum 1.5", "--momentum must be a finite number in [0, 1), got 1.5"},
           {"--base_lr inf", "--base_lr must be a finite number"},
           {"--base_lr -0.1", "--base_lr must be a finite number"},
           {"--weight_decay nan", "--weight_decay must be a finite number"},
           {"--gamma -inf", "--gamma must be a finite number"},
           {"--power nan", "--power must be a finite number"},
           {"--warmup_start 2", "--warmup_start must be a finite number in [0, 1]"},
           {"--epochs nan", "--epochs must be a finite number"},
           {"--data_scale inf", "--data_scale must be a finite number"},
           {"--initial_loss_scale 0", "--initial_loss_scale must be a finite number"},
           {"--data_mean 0.5,nan", "--data_mean: nan is not finite"},
           {"--data_std inf", "--data_std: inf is not finite"},
           {"--iters -5", "--iters must be >= 0"},
           {"--checkpoint_every -1", "--checkpoint_every must be >= 0"},
           {"--max_skipped_steps -1", "--max_skipped_steps must be >= 0"},
           {"--scale_growth_interval 0", "--scale_growth_interval must be >= 1"},
       }) {
    ExpectCleanError(RunTool("train_net", kTiny + flag), needle);
  }
}

// kill -9 at random moments of a run that checkpoints every step, then --resume, again and again:
// the last completed checkpoint is never lost or corrupt, and the run ends bit for bit where an
// uninterrupted one does. HALFCAF_KILL_LOOP_KILLS sets the number of kills (default 20).
TEST(TrainNetHostileTest, KillNineLoopResumesExactly) {
  const char* env = std::getenv("HALFCAF_KILL_LOOP_KILLS");
  const int kills = env ? std::atoi(env) : 20;
  const std::string dir = TestTempDir();
  const int64_t iters = 600;
  const std::string common = kTiny + "--iters " + std::to_string(iters) +
                             " --checkpoint_every 1 --dtype float16 --loss_scale dynamic:1024 "
                             "--scale_growth_interval 7 ";
  const std::string ref = FreshDir("ck_ref"), ck = FreshDir("ck_kill");
  auto r = RunTool("train_net", common + "--checkpoint_dir " + ref + " --summary_json " + dir +
                                    "/ref.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Half the kills at a random moment of start-up (or resume), half a random number of steps
  // into training plus a random fraction of a step (inside a step or a checkpoint write); at most
  // about half the run is done by the killed runs, the rest by the last, uninterrupted one.
  auto time_ms = [&](int64_t n) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(RunTool("train_net", common + "--iters " + std::to_string(n) +
                                       " --checkpoint_dir " + FreshDir("ck_time")).exit_code, 0);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
        .count();
  };
  const double startup_ms = time_ms(1);
  const double step_ms = std::max(0.1, (time_ms(21) - startup_ms) / 20);
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int64_t max_steps = std::max<int64_t>(1, iters / std::max(2 * kills, 1));
  const std::string path = ck + "/checkpoint.pb", csv = dir + "/kill.csv";
  int64_t last = 0, killed_with_checkpoint = 0, advanced = 0;
  for (int k = 0; k < kills; ++k) {
    const bool resume = fs::exists(path);
    fs::remove(csv);
    pid_t pid = SpawnTool("train_net", common + "--log_every 1 --log_csv " + csv +
                                           " --checkpoint_dir " + ck + (resume ? " --resume" : ""),
                          "/dev/null", "/dev/null");
    double delay_ms = uniform(rng) * startup_ms;
    if (k % 2 == 1) {
      // Wait for a random number of logged steps (the process may finish first).
      const int steps = 1 + static_cast<int>(uniform(rng) * static_cast<double>(max_steps));
      int status = 0;
      while (CountLines(ReadFile(csv)) < steps + 1 && waitpid(pid, &status, WNOHANG) == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      delay_ms = uniform(rng) * step_ms;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(1000 * delay_ms)));
    kill(pid, SIGKILL);
    WaitExitCode(pid);
    if (!fs::exists(path)) {
      ASSERT_EQ(last, 0) << "kill " << k << ": the checkpoint disappeared";
      continue;
    }
    const int64_t iter = CheckpointIteration(path);  // verifies its checksum
    ASSERT_GE(iter, last) << "kill " << k << ": the checkpoint went back";
    advanced += iter > last;
    last = iter;
    ++killed_with_checkpoint;
  }
  EXPECT_GT(advanced, kills / 8);
  EXPECT_LT(last, iters) << "the kills should leave work for the last run";
  r = RunTool("train_net", common + "--checkpoint_dir " + ck + (fs::exists(path) ? " --resume" : "") +
                               " --summary_json " + dir + "/killed.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(path), ReadFile(ref + "/checkpoint.pb")) << "after " << kills << " kills, "
                                                              << "last at iteration " << last;
  auto final_loss = [](const std::string& json) {
    return json.substr(json.find("\"final_loss\""), 30);
  };
  EXPECT_EQ(final_loss(ReadFile(dir + "/killed.json")), final_loss(ReadFile(dir + "/ref.json")));
  std::cout << kills << " kills (" << advanced << " after progress, " << killed_with_checkpoint
            << " with a checkpoint on disk); the last one left iteration " << last << "\n";
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
