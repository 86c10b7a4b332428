// train_gan as a user runs it: a short run on synthetic data and on a Quick, Draw! folder, in
// every precision, with its grids, samples and summary; and one clear error for bad input.
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "data/npy.h"
#include "tests/tools/tool_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kSynthetic = "--data_format synthetic --batch_size 16 --threads 1 ";

double JsonNumber(const std::string& json, const std::string& key) {
  const size_t p = json.find("\"" + key + "\": ");
  EXPECT_NE(p, std::string::npos) << key << " in " << json;
  return p == std::string::npos ? -1 : std::stod(json.substr(p + key.size() + 4));
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

TEST(TrainGanTest, TrainsAndWritesGridsSamplesAndSummary) {
  const std::string dir = TestTempDir() + "/train_gan";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  for (const char* dtype : {"float", "bfloat16", "float16"}) {
    SCOPED_TRACE(dtype);
    const std::string out = dir + "/" + dtype;
    // 1024 synthetic images = 64 iterations per epoch: 70 iterations cross one epoch.
    const auto r = RunTool("train_gan", kSynthetic + "--iters 70 --log_every 35 --dtype " +
                                            dtype + " --out_dir " + out + " --grid_per_class 3 " +
                                            "--samples 4 --samples_out " + out + "/samples " +
                                            "--summary_json " + out + "/summary.json");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("iter 35"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("done: 70 iterations"), std::string::npos) << r.out;
    EXPECT_TRUE(Exists(out + "/grid_epoch_1.png"));
    EXPECT_TRUE(Exists(out + "/grid.png"));
    const Tensor images = ReadNpy(out + "/samples/images.npy");
    const Tensor labels = ReadNpy(out + "/samples/labels.npy");
    EXPECT_EQ(images.dims(), (std::vector<int64_t>{40, 1, 28, 28}));
    EXPECT_EQ(images.dtype(), DataType::FLOAT);
    EXPECT_EQ(labels.dtype(), DataType::INT64);
    EXPECT_EQ(labels.data<int64_t>()[39], 9);
    for (int64_t i = 0; i < images.numel(); ++i) {
      ASSERT_TRUE(images.data<float>()[i] >= 0.f && images.data<float>()[i] <= 1.f);
    }
    const std::string json = ReadFile(out + "/summary.json");
    EXPECT_EQ(JsonNumber(json, "iterations"), 70);
    EXPECT_GT(JsonNumber(json, "final_d_loss"), 0);
    EXPECT_LT(JsonNumber(json, "d_skipped_steps") + JsonNumber(json, "g_skipped_steps"), 20);
  }
}

// A Quick, Draw! folder (one .npy of (N, 784) uint8 per class) trains like any data set.
TEST(TrainGanTest, QuickDrawFolder) {
  const std::string dir = TestTempDir() + "/train_gan_quickdraw";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir + "/data").c_str());
  for (int c = 0; c < 3; ++c) {
    Tensor t({40, 784}, DataType::UINT8);
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>((i % 784) / 28 % 3 == c ? 255 : 0);
    }
    WriteNpy(t, dir + "/data/class" + std::to_string(c) + ".npy");
  }
  const auto r = RunTool("train_gan", "--data_format quickdraw --train_data " + dir + "/data " +
                                          "--num_classes 3 --batch_size 12 --iters 4 --threads 1 "
                                          "--grid_per_class 2 --out_dir " + dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("108 training images"), std::string::npos) << r.out;
  EXPECT_TRUE(Exists(dir + "/out/grid.png"));
}

// SIGINT stops training at the next iteration; what was trained is still written and scored.
TEST(TrainGanTest, StopSignalKeepsTheResults) {
  const std::string dir = TestTempDir() + "/train_gan_signal";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  const auto r = RunShell(std::string(HALFCAF_BIN_DIR) + "/train_gan " + kSynthetic +
                          "--iters 100000 --log_every 1000 --grid_per_class 2 --out_dir " + dir +
                          " --samples 2 --samples_out " + dir + "/samples --summary_json " + dir +
                          "/summary.json > " + dir + "/out 2>&1 & p=$!; sleep 4; kill -INT $p; "
                          "wait $p");
  EXPECT_EQ(r.exit_code, 130) << ReadFile(dir + "/out");
  EXPECT_NE(ReadFile(dir + "/out").find("stopped by signal 2 at iteration"), std::string::npos)
      << ReadFile(dir + "/out");
  EXPECT_TRUE(Exists(dir + "/grid.png"));
  EXPECT_TRUE(Exists(dir + "/samples/images.npy"));
  const std::string json = ReadFile(dir + "/summary.json");
  EXPECT_EQ(JsonNumber(json, "stopped_by_signal"), 2);
  EXPECT_GT(JsonNumber(json, "iterations"), 0);
}

TEST(TrainGanTest, BadInputGivesOneClearLine) {
  const std::string dir = TestTempDir();
  auto expect_error = [](const ToolResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  };
  expect_error(RunTool("train_gan", "--iters 2"), "--train_data is required");
  expect_error(RunTool("train_gan", "--train_data " + dir + "/nope-images-idx3-ubyte --iters 2"),
               dir + "/nope-images-idx3-ubyte");
  expect_error(RunTool("train_gan", kSynthetic + "--dtype float64"), "--dtype must be");
  // Not a run of --epochs (5 by default) instead.
  expect_error(RunTool("train_gan", kSynthetic + "--iters -5"), "--iters must be >= 0");
  expect_error(RunTool("train_gan", kSynthetic + "--grid_per_class -1"),
               "--grid_per_class must be >= 0");
  expect_error(RunTool("train_gan", kSynthetic + "--dtype float16 --scale_growth_interval 0"),
               "--scale_growth_interval must be >= 1");
  expect_error(RunTool("train_gan", kSynthetic + "--dropout 1"), "--dropout must be");
  expect_error(RunTool("train_gan", kSynthetic + "--samples 3"), "--samples N needs");
  expect_error(RunTool("train_gan", kSynthetic + "--classifier_net x.pbtxt"),
               "--classifier_net and --classifier_params go together");
  expect_error(RunTool("train_gan", kSynthetic + "--iters 1 --classifier_net " + dir +
                                        "/missing.pbtxt --classifier_params " + dir + "/c.pb"),
               "missing.pbtxt");
  expect_error(RunTool("train_gan", kSynthetic + "--dtype float16 --loss_scale lots"),
               "--loss_scale must be a number");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
