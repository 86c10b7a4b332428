// The training acceptance run: LeNet on Fashion-MNIST for 3 epochs, batch 64, in FP32 and in
// mixed precision with a dynamic loss scale; both reach at least 87% test accuracy and differ by
// at most one point. Needs Debian's dataset-fashion-mnist (skips without it); about two minutes.
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

TEST(LeNetAcceptanceTest, Fp32AndMixedPrecisionReachTheSameAccuracy) {
  // FP32, FP16 and BF16 mixed precision (BF16 unscaled, its default), 3 epochs each.
  struct stat st;
  if (stat((kData + "train-images-idx3-ubyte.gz").c_str(), &st) != 0) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const std::string dir = TestTempDir();
  const std::string src = ::halfcaf::testing::SourceDir();
  const std::string common =
      "--net " + src + "/models/lenet/lenet_train_net.pbtxt --init_net " + src +
      "/models/lenet/lenet_init_net.pbtxt --train_data " + kData +
      "train-images-idx3-ubyte.gz --test_data " + kData +
      "t10k-images-idx3-ubyte.gz --epochs 3 --batch_size 64 --base_lr 0.01 --momentum 0.9 "
      "--log_every 1000 ";
  auto fp32 = RunTool("train_net", common + "--dtype float --summary_json " + dir + "/fp32.json");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  auto fp16 = RunTool("train_net", common + "--dtype float16 --loss_scale dynamic --summary_json " +
                                       dir + "/fp16.json");
  ASSERT_EQ(fp16.exit_code, 0) << fp16.err;
  auto bf16 = RunTool("train_net", common + "--dtype bfloat16 --summary_json " + dir + "/bf16.json");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  const double a32 = TestAccuracy(dir + "/fp32.json"), a16 = TestAccuracy(dir + "/fp16.json");
  const double ab16 = TestAccuracy(dir + "/bf16.json");
  EXPECT_GE(a32, 0.87) << fp32.out;
  EXPECT_GE(a16, 0.87) << fp16.out;
  EXPECT_LE(std::fabs(a32 - a16), 0.01) << "fp32 " << a32 << " vs mixed precision " << a16;
  EXPECT_LE(std::fabs(a32 - ab16), 0.005) << "fp32 " << a32 << " vs bfloat16 " << ab16;
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
