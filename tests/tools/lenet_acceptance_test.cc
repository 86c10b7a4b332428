// The training acceptance runs: LeNet on Fashion-MNIST, batch 64, momentum SGD. FP32 reaches 87%
// test accuracy in 2 epochs; FP16 mixed precision (dynamic loss scale) and BF16 (unscaled) each
// reach the same accuracy as FP32 after one epoch, within one point (FP16) and half a point
// (BF16). Each run uses one thread (--threads 1), so the tests keep their pace when CTest runs
// two at once on two cores: about 40 s each. Needs Debian's dataset-fashion-mnist (skips
// without it). Step-by-step agreement with PyTorch is tested elsewhere; this is the end-to-end
// check on real data.
#include <sys/stat.h>

#include <cmath>

#include <gtest/gtest.h>

#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kData = "/usr/share/datasets/fashion-mnist/";

double TestAccuracy(const std::string& summary_json) {
  std::string json = ReadFile(summary_json);
  size_t p = json.find("\"test_accuracy\": ");
  EXPECT_NE(p, std::string::npos) << json;
  return p == std::string::npos ? 0 : std::stod(json.substr(p + 17));
}

bool HaveFashionMnist() {
  struct stat st;
  return stat((kData + "train-images-idx3-ubyte.gz").c_str(), &st) == 0;
}

// Trains for `epochs` in `dtype` (with `extra` flags) and returns the test accuracy.
double TrainLeNet(int epochs, const std::string& dtype, const std::string& extra = "") {
  const std::string src = ::halfcaf::testing::SourceDir();
  const std::string json = TestTempDir() + "/" + dtype + "_" + std::to_string(epochs) + ".json";
  auto r = RunTool("train_net",
                   "--net " + src + "/models/lenet/lenet_train_net.pbtxt --init_net " + src +
                       "/models/lenet/lenet_init_net.pbtxt --train_data " + kData +
                       "train-images-idx3-ubyte.gz --test_data " + kData +
                       "t10k-images-idx3-ubyte.gz --epochs " + std::to_string(epochs) +
                       " --batch_size 64 --base_lr 0.01 --momentum 0.9 --log_every 1000 "
                       "--threads 1 --dtype " + dtype + " " + extra + " --summary_json " + json);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return 0;
  return TestAccuracy(json);
}

TEST(LeNetAcceptanceTest, Fp32ReachesEightySevenPercentInTwoEpochs) {
  if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  EXPECT_GE(TrainLeNet(2, "float"), 0.87);
}

TEST(LeNetAcceptanceTest, Float16MixedPrecisionReachesFp32Accuracy) {
  if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const double a32 = TrainLeNet(1, "float");
  const double a16 = TrainLeNet(1, "float16", "--loss_scale dynamic");
  EXPECT_GE(a16, 0.85);
  EXPECT_LE(std::fabs(a32 - a16), 0.01) << "fp32 " << a32 << " vs mixed precision " << a16;
}

TEST(LeNetAcceptanceTest, BFloat16ReachesFp32Accuracy) {
  if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const double a32 = TrainLeNet(1, "float");
  const double ab16 = TrainLeNet(1, "bfloat16");
  EXPECT_GE(ab16, 0.85);
  EXPECT_LE(std::fabs(a32 - ab16), 0.005) << "fp32 " << a32 << " vs bfloat16 " << ab16;
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
