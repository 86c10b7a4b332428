#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "operators/nn/bf16_kernels.h"
#include "operators/nn/channel_block.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kData = ::halfcaf::testing::SourceDir() + "/tests/fixtures/";
const std::string kTiny = "--net " + kData + "tiny_convnet_net.pbtxt --init_net " + kData +
                          "tiny_convnet_init.pbtxt --data_format synthetic "
                          "--synthetic_shape 1,8,8 --num_classes 4 --batch_size 16 "
                          "--base_lr 0.05 --threads 1 ";

// CSV column `col` (0-based) of every data row.
std::vector<std::string> CsvColumn(const std::string& path, int col) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> out;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    for (int i = 0; i <= col; ++i) std::getline(ss, cell, ',');
    out.push_back(cell);
  }
  return out;
}

void ExpectCleanError(const ToolResult& r, const std::string& needle);

double JsonNumber(const std::string& json, const std::string& key) {
  size_t p = json.find("\"" + key + "\": ");
  EXPECT_NE(p, std::string::npos) << key << " in " << json;
  return std::stod(json.substr(p + key.size() + 4));
}

TEST(TrainNetTest, LearnsSyntheticDataInEveryPrecision) {
  std::string dir = TestTempDir();
  for (const char* dtype : {"float", "float16", "bfloat16"}) {
    std::string summary = dir + "/summary_" + dtype + ".json";
    auto r = RunTool("train_net", kTiny + "--iters 120 --log_every 40 --dtype " + dtype +
                                      " --summary_json " + summary);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("iter 40"), std::string::npos) << r.out;
    if (std::string(dtype) == "bfloat16") {
      // Unscaled by default: bfloat16 has float's range.
      EXPECT_NE(r.out.find("mixed precision (bfloat16)"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("loss scale static 1"), std::string::npos) << r.out;
    }
    std::string json = ReadFile(summary);
    EXPECT_GT(JsonNumber(json, "test_accuracy"), 0.9) << dtype << "\n" << r.out;
    EXPECT_LT(JsonNumber(json, "final_loss"), 0.5) << dtype;
    EXPECT_EQ(JsonNumber(json, "iterations"), 120);
  }
}

// Stopping after K iterations and resuming gives exactly the losses of an uninterrupted run, with
// and without data augmentation (its random windows and flips continue where they stopped).
TEST(TrainNetTest, ResumeIsExact) {
  std::string dir = TestTempDir();
  struct Case {
    const char* name;
    std::string flags;
  };
  std::map<std::string, std::vector<std::string>> losses;
  for (const Case& c : {Case{"float", "--dtype float "}, Case{"float16", "--dtype float16 "},
                        Case{"augmented", "--dtype float --pad 1 --mirror --data_mean 0.5 "
                                          "--data_std 0.25 "}}) {
    std::string ck = dir + "/ck_" + c.name;
    std::system(("rm -rf " + ck).c_str());  // train_net creates the folder
    const std::string common = kTiny + "--log_every 1 " + c.flags;
    const std::string a_csv = dir + "/a_" + c.name + ".csv", b_csv = dir + "/b_" + c.name + ".csv";
    auto a = RunTool("train_net", common + "--iters 30 --log_csv " + a_csv);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b1 = RunTool("train_net", common + "--iters 12 --checkpoint_dir " + ck +
                                       " --checkpoint_every 5");
    ASSERT_EQ(b1.exit_code, 0) << b1.err;
    auto b2 = RunTool("train_net", common + "--iters 30 --resume --checkpoint_dir " + ck +
                                       " --log_csv " + b_csv);
    ASSERT_EQ(b2.exit_code, 0) << b2.err;
    EXPECT_NE(b2.out.find("resumed at iteration 12"), std::string::npos) << b2.out;
    auto la = CsvColumn(a_csv, 2), lb = CsvColumn(b_csv, 2);
    ASSERT_EQ(la.size(), 30u);
    ASSERT_EQ(lb.size(), 18u);
    for (size_t i = 0; i < lb.size(); ++i) {
      EXPECT_EQ(lb[i], la[12 + i]) << c.name << " iter " << 13 + i;
    }
    losses[c.name] = la;
  }
  // The augmentation flags reach the reader: the losses differ from the plain run's.
  EXPECT_NE(losses["augmented"], losses["float"]);
}

TEST(TrainNetTest, SeparateTestNet) {
  std::string dir = TestTempDir();
  // The test net computes only the loss and accuracy: no gradient ops, evaluated in test mode.
  auto r = RunTool("train_net", kTiny + "--iters 60 --log_every 60 --test_net " + kData +
                                    "tiny_convnet_net.pbtxt --summary_json " + dir + "/t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("test: 1024 samples"), std::string::npos) << r.out;
  std::string noloss = dir + "/test_noloss.pbtxt";
  std::ofstream(noloss) << "op { input: \"data\" input: \"fc_w\" input: \"fc_b\" output: \"p\" type: \"FC\" }\n";
  ExpectCleanError(RunTool("train_net", kTiny + "--iters 2 --test_net " + noloss),
                   "the test net has no loss");
}

TEST(TrainNetTest, HugeLossScaleSkipsStepsAndSettles) {
  std::string dir = TestTempDir();
  std::string summary = dir + "/huge.json";
  auto r = RunTool("train_net", kTiny + "--iters 120 --log_every 20 --dtype float16 "
                                        "--loss_scale dynamic:16777216 --scale_growth_interval 1000 "
                                        "--summary_json " + summary);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string json = ReadFile(summary);
  EXPECT_GT(JsonNumber(json, "skipped_steps"), 0) << r.out;
  EXPECT_LT(JsonNumber(json, "final_loss_scale"), 16777216.0) << r.out;
  EXPECT_GT(JsonNumber(json, "test_accuracy"), 0.9) << r.out;
}

// --replicas N trains data-parallel: the same losses as one device on the same total batch, and
// a checkpoint written by 2 replicas resumes on 1.
TEST(TrainNetTest, DataParallelReplicasFollowOneDevice) {
  std::string dir = TestTempDir();
  std::string ck = dir + "/ck_dp";
  std::system(("rm -rf " + ck).c_str());
  const std::string common = kTiny + "--log_every 1 --iters 20 ";
  auto one = RunTool("train_net", common + "--log_csv " + dir + "/one.csv");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto two = RunTool("train_net", common + "--replicas 2 --log_csv " + dir + "/two.csv "
                                           "--checkpoint_dir " + ck);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("2 data-parallel replicas (CPU, CPU), 8 images each"),
            std::string::npos) << two.out;
  auto l1 = CsvColumn(dir + "/one.csv", 2), l2 = CsvColumn(dir + "/two.csv", 2);
  ASSERT_EQ(l1.size(), 20u);
  ASSERT_EQ(l2.size(), 20u);
  for (size_t i = 0; i < l1.size(); ++i) {
    EXPECT_NEAR(std::stod(l2[i]), std::stod(l1[i]), 1e-4 * std::stod(l1[i])) << "iter " << i + 1;
  }
  // The dag executor runs the same net to the same losses, bit for bit.
  auto dag = RunTool("train_net", common + "--replicas 2 --net_type dag --log_csv " + dir +
                                      "/dag.csv");
  ASSERT_EQ(dag.exit_code, 0) << dag.err;
  EXPECT_EQ(CsvColumn(dir + "/dag.csv", 2), l2);
  auto resumed = RunTool("train_net", kTiny + "--iters 25 --resume --checkpoint_dir " + ck);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resumed at iteration 20"), std::string::npos) << resumed.out;
}

void ExpectCleanError(const ToolResult& r, const std::string& needle) {
  ExpectOneLineError(r, "train_net", needle);
}

// A log line shows the mean loss and accuracy of the iterations since the previous line (summed
// on the device between lines), as when every step was read back.
TEST(TrainNetTest, LoggedLossIsTheMeanSinceThePreviousLine) {
  const std::string dir = TestTempDir();
  for (const char* dtype : {"float", "float16"}) {
    const std::string every = dir + "/every_" + dtype + ".csv",
                      tens = dir + "/tens_" + dtype + ".csv";
    const std::string common = kTiny + "--iters 20 --dtype " + dtype;
    ASSERT_EQ(RunTool("train_net", common + " --log_every 1 --log_csv " + every).exit_code, 0);
    ASSERT_EQ(RunTool("train_net", common + " --log_every 10 --log_csv " + tens).exit_code, 0);
    for (int col : {2, 3}) {  // loss, accuracy
      const std::vector<std::string> per_step = CsvColumn(every, col),
                                     logged = CsvColumn(tens, col);
      ASSERT_EQ(per_step.size(), 20u);
      ASSERT_EQ(logged.size(), 2u);
      for (int w = 0; w < 2; ++w) {
        double sum = 0;
        for (int i = 0; i < 10; ++i) sum += std::stod(per_step[10 * w + i]);
        EXPECT_NEAR(std::stod(logged[w]), sum / 10, 1e-6 * std::fabs(sum / 10) + 1e-7)
            << dtype << " column " << col << " line " << w;
      }
    }
  }
}

// Labels out of the net's range in the training data (synthetic data of 5 classes for a net of 4)
// stop training with the loss / accuracy op's message, whether the check runs at once (CPU) or
// on the device and is read at the next log line (CUDA).
TEST(TrainNetTest, BadLabelStopsTrainingWithTheOpsMessage) {
  for (const char* dtype : {"float", "float16"}) {
    const ToolResult r =
        RunTool("train_net", kTiny + "--num_classes 5 --iters 20 --log_every 10 --dtype " + dtype);
    ExpectCleanError(r, " is out of range, expected 0 <= label < 4 (the number of classes)");
    EXPECT_NE(r.err.find(": label 4 of sample "), std::string::npos) << r.err;
  }
}

// Mixed precision that would train slower than float32 says so once at start-up: bfloat16 without
// oneDNN's BF16 kernels (switched off here as on a CPU without BF16 instructions), float16 on the
// CPU, bfloat16 whose convolutions compute in FP32 (its kernels slower than FP32 ones); float32
// and bfloat16 computing in BF16 train silently. The header line says when the net trains
// channels last (bfloat16 computing in BF16, by default; --channels_last on elsewhere).
TEST(TrainNetTest, SaysWhenMixedPrecisionIsSlowerAndWhenItTrainsChannelsLast) {
  const std::string run = kTiny + "--iters 2 --log_every 1 ";
  const ToolResult off = RunTool("train_net", run + "--dtype bfloat16", "HALFCAF_DNNL_BF16=0 ");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("train_net: warning: bfloat16 will train slower than float32 on this "
                         "machine: oneDNN's BF16 kernels are off (HALFCAF_DNNL_BF16=0 switches "
                         "them off)"),
            std::string::npos)
      << off.out;
  EXPECT_EQ(off.out.find("channels last"), std::string::npos) << off.out;
  const ToolResult fp16 = RunTool("train_net", run + "--dtype float16");
  ASSERT_EQ(fp16.exit_code, 0) << fp16.err;
  EXPECT_NE(fp16.out.find("warning: float16 on the CPU trains about half as fast as float32"),
            std::string::npos)
      << fp16.out;
  const ToolResult fp32 = RunTool("train_net", run + "--dtype float --channels_last on");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  EXPECT_EQ(fp32.out.find("warning"), std::string::npos) << fp32.out;
  EXPECT_NE(fp32.out.find("train_net: float32, channels last on "), std::string::npos) << fp32.out;
  if (CpuBFloat16KernelsEnabled()) {
    // Convolutions in BF16 (AMX; a CPU whose probe finds its BF16 kernels faster): channels last,
    // no warning. In FP32 over the copies (BF16 kernels slower than FP32 ones): a warning, and
    // channels last still (faster there than NCHW).
    const ToolResult bf16 =
        RunTool("train_net", run + "--dtype bfloat16", "HALFCAF_DNNL_BF16_MATH=bf16 ");
    ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
    EXPECT_EQ(bf16.out.find("warning"), std::string::npos) << bf16.out;
    EXPECT_NE(bf16.out.find("mixed precision (bfloat16), channels last on "), std::string::npos)
        << bf16.out;
    const ToolResult f32 =
        RunTool("train_net", run + "--dtype bfloat16", "HALFCAF_DNNL_BF16_MATH=f32 ");
    ASSERT_EQ(f32.exit_code, 0) << f32.err;
    EXPECT_NE(f32.out.find("warning: bfloat16 will not train faster than float32 here, and may "
                           "train slower: this CPU's BF16 convolution kernels are slower than its "
                           "FP32 ones (HALFCAF_DNNL_BF16_MATH=f32)"),
              std::string::npos)
        << f32.out;
    EXPECT_NE(f32.out.find("mixed precision (bfloat16), channels last on "), std::string::npos)
        << f32.out;
  }
  ExpectCleanError(RunTool("train_net", run + "--channels_last maybe"),
                   "channels_last must be auto, on or off, got 'maybe'");
}

// --recompute: the header says so, the losses are those of the run without it (the same values
// made again), and a bad value is one clear error.
TEST(TrainNetTest, RecomputeTrainsTheSameLossesAndSaysSo) {
  const std::string dir = TestTempDir();
  const std::string run = kTiny + "--iters 5 --log_every 1 --log_csv " + dir;
  const ToolResult off = RunTool("train_net", run + "/off.csv");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out.find("recomputing"), std::string::npos) << off.out;
  for (const std::string mode : {"elementwise", "all"}) {
    const ToolResult on = RunTool("train_net", run + "/" + mode + ".csv --recompute " + mode);
    ASSERT_EQ(on.exit_code, 0) << on.err;
    EXPECT_NE(on.out.find("train_net: float32, recomputing " + mode + " on "), std::string::npos)
        << on.out;
    EXPECT_EQ(CsvColumn(dir + "/" + mode + ".csv", 2), CsvColumn(dir + "/off.csv", 2)) << mode;
  }
  ExpectCleanError(RunTool("train_net", kTiny + "--recompute sometimes"),
                   "recompute: 'sometimes' is not one of off, elementwise, all");
}

// --blocked_layout (default auto): the header names the block the CPU's oneDNN computes in and the
// convolutions it took; "on" where it cannot be (bfloat16) and a bad value are one clear error
// each.
TEST(TrainNetTest, BlockedLayoutSaysSoAndRefusesWhatItCannotDo) {
  const ToolResult on = RunTool("train_net", kTiny + "--iters 2 --blocked_layout on");
  if (CpuConvChannelBlock() == 0) {
    ExpectCleanError(on, "blocked_layout on needs oneDNN with blocked FP32 kernels");
    return;
  }
  ASSERT_EQ(on.exit_code, 0) << on.err;
  const std::string block = std::to_string(CpuConvChannelBlock());
  // The tiny net's channels (4, 8) are no multiple of the block: nothing to take; under the
  // default (auto) the header then leaves it out.
  EXPECT_NE(on.out.find("train_net: float32, channel-blocked (" + block + ": 0 convolutions) on "),
            std::string::npos)
      << on.out;
  const ToolResult plain = RunTool("train_net", kTiny + "--iters 2");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("train_net: float32 on "), std::string::npos) << plain.out;
  // ResNet-18: every convolution (the stem reads the 3-channel image in NCHW).
  const std::string dir = TestTempDir();
  ASSERT_EQ(RunTool("make_model", "--model resnet18 --image_size 32 --out " + dir).exit_code, 0);
  const ToolResult resnet = RunTool(
      "train_net", "--net " + dir + "/train_net.pbtxt --init_net " + dir + "/init_net.pbtxt " +
                       "--data_format synthetic --synthetic_shape 3,32,32 --batch_size 4 "
                       "--iters 2");
  ASSERT_EQ(resnet.exit_code, 0) << resnet.err;
  EXPECT_NE(resnet.out.find("channel-blocked (" + block + ": 20 convolutions)"), std::string::npos)
      << resnet.out;
  ExpectCleanError(RunTool("train_net", kTiny + "--dtype bfloat16 --blocked_layout on"),
                   "blocked_layout on needs float32 training");
  ExpectCleanError(RunTool("train_net", kTiny + "--blocked_layout sometimes"),
                   "blocked_layout must be auto, on or off, got 'sometimes'");
}

// --conv_algorithm winograd: the header counts the convolutions that ask for it (ResNet-18's 3 x 3,
// stride 1 ones) and trains; what cannot take it (bfloat16) and a bad value are one clear error
// each.
TEST(TrainNetTest, WinogradSaysSoAndRefusesWhatItCannotDo) {
  const std::string dir = TestTempDir();
  // 64 x 64 images: the first stage's convolutions run on 16 x 16 (Winograd's kernels take 14 x 14
  // and more).
  ASSERT_EQ(RunTool("make_model", "--model resnet18 --image_size 64 --out " + dir).exit_code, 0);
  const std::string run = "--net " + dir + "/train_net.pbtxt --init_net " + dir +
                          "/init_net.pbtxt --data_format synthetic --synthetic_shape 3,64,64 "
                          "--batch_size 4 --iters 3 --log_every 1 --log_csv " + dir;
  const ToolResult direct = RunTool("train_net", run + "/direct.csv");
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(direct.out.find("Winograd"), std::string::npos) << direct.out;
  const ToolResult wino = RunTool("train_net", run + "/wino.csv --conv_algorithm winograd");
  ASSERT_EQ(wino.exit_code, 0) << wino.err;
  EXPECT_NE(wino.out.find("Winograd (13 convolutions)"), std::string::npos) << wino.out;
  const std::vector<std::string> a = CsvColumn(dir + "/direct.csv", 2);
  const std::vector<std::string> b = CsvColumn(dir + "/wino.csv", 2);
  // The first loss to float rounding; later ones drift apart as rounding differences do in a
  // batch-4 ResNet on random data (a max pool or ReLU decided the other way), the gradients being
  // the direct ones' to 1e-4 (ChannelBlockedTest.WinogradGradientsEqualTheDirectStep).
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_NEAR(std::stod(b[0]), std::stod(a[0]), 1e-4 * std::fabs(std::stod(a[0])));
  for (const std::string& loss : b) EXPECT_TRUE(std::isfinite(std::stod(loss))) << loss;
  ExpectCleanError(RunTool("train_net", kTiny + "--dtype bfloat16 --conv_algorithm winograd"),
                   "conv_algorithm winograd needs float32 training on the CPU");
  ExpectCleanError(RunTool("train_net", kTiny + "--conv_algorithm fast"),
                   "conv_algorithm must be direct or winograd, got 'fast'");
}

TEST(TrainNetTest, BadInputGivesOneClearLine) {
  std::string dir = TestTempDir();
  // A net without a loss.
  std::string noloss = dir + "/noloss.pbtxt";
  std::ofstream(noloss)
      << "op { input: \"data\" input: \"fc_w\" input: \"fc_b\" output: \"pred\" type: \"FC\" }\n"
         "op { input: \"pred\" input: \"label\" output: \"accuracy\" type: \"Accuracy\" }\n";
  const std::string init = " --init_net " + kData + "tiny_convnet_init.pbtxt";
  ExpectCleanError(RunTool("train_net", "--net " + noloss + init + " --data_format synthetic"),
                   "no op writes 'loss'");
  // A negative count is refused, not read as "train for --epochs".
  ExpectCleanError(RunTool("train_net", kTiny + "--iters -5"), "--iters must be >= 0");
  // Label blob missing from the net.
  ExpectCleanError(RunTool("train_net", kTiny + "--label_blob labels"), "label blob 'labels'");
  ExpectCleanError(RunTool("train_net", kTiny + "--data_blob images"), "data blob 'images'");
  // Dataset path missing, and corrupt.
  const std::string lenet = "--net " + kData + "tiny_convnet_net.pbtxt" + init;
  ExpectCleanError(RunTool("train_net", lenet + " --train_data " + dir + "/nope-images-idx3-ubyte"),
                   dir + "/nope-images-idx3-ubyte");
  std::string bad = dir + "/bad-images-idx3-ubyte";
  std::ofstream(bad) << "not an idx file";
  std::ofstream(dir + "/bad-labels-idx1-ubyte") << "nope";
  ExpectCleanError(RunTool("train_net", lenet + " --train_data " + bad), bad);
  // Unsupported dtype / device / loss scale.
  ExpectCleanError(RunTool("train_net", kTiny + "--dtype float64"),
                   "--dtype must be float, float16 or bfloat16, got 'float64'");
  ExpectCleanError(RunTool("train_net", kTiny + "--data_mean 0.1,x"), "--data_mean: 'x' is not a number");
  ExpectCleanError(RunTool("train_net", kTiny + "--data_std 1,2"), "`std` needs 1 or 1");
  ExpectCleanError(RunTool("train_net", kTiny + "--crop 12"), "`crop` 12 is larger than the 8x8");
  ExpectCleanError(RunTool("train_net", kTiny + "--pad -1"), "--crop and --pad must be >= 0");
  ExpectCleanError(RunTool("train_net", kTiny + "--net_type async"), "must be simple or dag");
  ExpectCleanError(RunTool("train_net", kTiny + "--device tpu"), "--device must be cpu or cuda");
#ifndef HALFCAF_WITH_CUDA
  ExpectCleanError(RunTool("train_net", kTiny + "--device cuda"), "needs the CUDA backend");
#endif
  ExpectCleanError(RunTool("train_net", kTiny + "--replicas 3"),
                   "--batch_size (16) must be a multiple of the number of replicas (3)");
  ExpectCleanError(RunTool("train_net", kTiny + "--gpus 0,x"), "--gpus: 'x' is not a GPU id");
  ExpectCleanError(RunTool("train_net", kTiny + "--device cpu --gpus 0,1"),
                   "--gpus runs on CUDA devices");
#ifndef HALFCAF_WITH_CUDA
  ExpectCleanError(RunTool("train_net", kTiny + "--gpus 0,1"), "needs the CUDA backend");
#endif
  ExpectCleanError(RunTool("train_net", kTiny + "--dtype float16 --loss_scale lots"),
                   "--loss_scale must be a number");
  // Resume without a checkpoint.
  ExpectCleanError(RunTool("train_net", kTiny + "--resume --checkpoint_dir " + dir + "/empty"),
                   "checkpoint.pb");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
