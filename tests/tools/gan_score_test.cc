// gan_score end to end: a LeNet trained for 100 iterations on Fashion-MNIST by train_net scores
// real test images given as "generated" ones. With their true labels the GAN-test accuracy is
// the classifier's real accuracy on the same images and the Frechet distance is ~0; with
// shuffled labels the accuracy falls to chance; other real images are near, noise is far. Bad
// inputs end with one error line and exit code 1. The training tests skip without Debian's
// dataset-fashion-mnist; the error tests use LeNet's initial parameters and no data set.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "core/proto_io.h"
#include "core/tensor_proto.h"
#include "data/dataset_reader.h"
#include "data/image_codec.h"
#include "data/npy.h"
#include "tests/tools/tool_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {
namespace {

const std::string kData = "/usr/share/datasets/fashion-mnist/";
const std::string kTestImages = kData + "t10k-images-idx3-ubyte.gz";
constexpr int64_t kCount = 1000;

bool HaveFashionMnist() {
  struct stat st;
  return stat((kData + "train-images-idx3-ubyte.gz").c_str(), &st) == 0 &&
         stat(kTestImages.c_str(), &st) == 0;
}

std::string LeNetNet() { return SourceDir() + "/models/lenet/lenet_train_net.pbtxt"; }

// A number after `"key": ` in a JSON file.
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t p = json.find("\"" + key + "\": ");
  EXPECT_NE(p, std::string::npos) << key << " in " << json;
  return p == std::string::npos ? std::nan("") : std::stod(json.substr(p + key.size() + 4));
}

// Images [first, first + count) of the test set as (count, 1, 28, 28) float in [0, 1] and
// their labels (int64), written as .npy files into `dir`.
void WriteRealSamples(const std::string& dir, int64_t first, int64_t count, bool shuffle_labels) {
  std::unique_ptr<DataSource> data = LoadIdxDataset(kTestImages);
  Tensor images({count, 1, 28, 28}, DataType::FLOAT);
  Tensor labels({count}, DataType::INT64);
  std::vector<uint8_t> px(784);
  for (int64_t i = 0; i < count; ++i) {
    data->ReadSample(first + i, px.data());
    for (int j = 0; j < 784; ++j) images.mutable_data<float>()[i * 784 + j] = px[j] / 255.0f;
    labels.mutable_data<int64_t>()[i] = data->Label(first + i);
  }
  if (shuffle_labels) {
    std::mt19937 rng(5);
    std::shuffle(labels.mutable_data<int64_t>(), labels.mutable_data<int64_t>() + count, rng);
  }
  WriteNpy(images, dir + "/images.npy");
  WriteNpy(labels, dir + "/labels.npy");
}

class GanScoreTrainedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveFashionMnist()) return;
    dir_ = new std::string(TestTempDir() + "/gan_score");
    mkdir(dir_->c_str(), 0755);
    const std::string src = SourceDir();
    auto r = RunTool("train_net", "--net " + LeNetNet() + " --init_net " + src +
                                      "/models/lenet/lenet_init_net.pbtxt --train_data " + kData +
                                      "train-images-idx3-ubyte.gz --iters 100 --batch_size 64 "
                                      "--base_lr 0.01 --momentum 0.9 --threads 1 --log_every 1000 "
                                      "--checkpoint_dir " +
                                      *dir_ + "/ckpt");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!HaveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }

  // gan_score on dir_/images.npy and labels.npy against the first kCount real test images.
  static ToolResult Score(const std::string& extra = "") {
    return RunTool("gan_score", "--images " + *dir_ + "/images.npy --labels " + *dir_ +
                                    "/labels.npy --classifier_net " + LeNetNet() +
                                    " --classifier_params " + *dir_ + "/ckpt/checkpoint.pb" +
                                    " --real_data " + kTestImages + " --real_count " +
                                    std::to_string(kCount) + " --threads 1 --json " + *dir_ +
                                    "/scores.json " + extra);
  }
  static std::string Json() { return ReadFile(*dir_ + "/scores.json"); }

  static std::string* dir_;
};
std::string* GanScoreTrainedTest::dir_ = nullptr;

TEST_F(GanScoreTrainedTest, RealImagesWithTrueLabelsScoreLikeTheRealData) {
  WriteRealSamples(*dir_, 0, kCount, /*shuffle_labels=*/false);
  auto r = Score("--grid " + *dir_ + "/grid.png --grid_per_class 10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("GAN-test accuracy: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  class 9: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Frechet distance (fc3, 500 features): "), std::string::npos) << r.out;
  const std::string json = Json();
  const double gan = JsonNumber(json, "gan_test_accuracy");
  const double real = JsonNumber(json, "real_accuracy");
  EXPECT_GT(real, 0.5) << "100 iterations of LeNet should do better than that";
  EXPECT_EQ(gan, real) << "the same images with their true labels";
  EXPECT_LT(JsonNumber(json, "frechet_distance"), 1e-6) << "identical sets";
  EXPECT_EQ(JsonNumber(json, "count"), kCount);
  EXPECT_EQ(JsonNumber(json, "real_count"), kCount);
  EXPECT_EQ(JsonNumber(json, "feature_size"), 500);

  // The grid: 10 rows (classes) of 10, 2-pixel gaps; row c starts with the first image of c.
  if (!image::FormatAvailable(image::Format::PNG)) return;
  const std::string png = ReadFile(*dir_ + "/grid.png");
  image::Image img;
  image::Decode(png.data(), png.size(), 1, &img);
  ASSERT_EQ(img.height, 10 * 28 + 9 * 2);
  ASSERT_EQ(img.width, 10 * 28 + 9 * 2);
  std::unique_ptr<DataSource> data = LoadIdxDataset(kTestImages);
  std::vector<uint8_t> px(784);
  for (int c = 0; c < 10; ++c) {
    int64_t first = 0;
    while (data->Label(first) != c) ++first;
    data->ReadSample(first, px.data());
    for (int y = 0; y < 28; ++y) {
      for (int x = 0; x < 28; ++x) {
        ASSERT_EQ(img.pixels[(c * 30 + y) * img.width + x], px[y * 28 + x])
            << "class " << c << " pixel " << y << "," << x;
      }
    }
  }
}

TEST_F(GanScoreTrainedTest, ShuffledLabelsScoreAtChance) {
  WriteRealSamples(*dir_, 0, kCount, /*shuffle_labels=*/true);
  auto r = Score();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = Json();
  const double gan = JsonNumber(json, "gan_test_accuracy");
  EXPECT_GT(gan, 0.06) << json;  // 10 classes: 0.1, sd about 0.01 over 1000 images
  EXPECT_LT(gan, 0.14) << json;
  EXPECT_GT(JsonNumber(json, "real_accuracy"), 0.5);
  EXPECT_LT(JsonNumber(json, "frechet_distance"), 1e-6) << "the images are still the real ones";
}

TEST_F(GanScoreTrainedTest, OtherRealImagesAreNearAndNoiseIsFar) {
  WriteRealSamples(*dir_, kCount, kCount, /*shuffle_labels=*/false);
  auto r = Score();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double real_vs_real = JsonNumber(Json(), "frechet_distance");
  EXPECT_GT(real_vs_real, 0.0);

  Tensor noise({kCount, 1, 28, 28}, DataType::FLOAT);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < noise.numel(); ++i) noise.mutable_data<float>()[i] = u(rng);
  WriteNpy(noise, *dir_ + "/images.npy");
  r = Score();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double noise_vs_real = JsonNumber(Json(), "frechet_distance");
  EXPECT_GT(noise_vs_real, 10 * real_vs_real) << real_vs_real << " vs " << noise_vs_real;
}

// ---- bad input (no data set needed: LeNet's initial parameters, no real data) ----------------

class GanScoreErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestTempDir() + "/gan_score_errors";
    mkdir(dir_.c_str(), 0755);
    NetDef init;
    ReadProtoFromFile(SourceDir() + "/models/lenet/lenet_init_net.pbtxt", &init);
    Workspace ws;
    ws.RunNetOnce(init);
    WriteBlobsToFile(ws, ws.Blobs(), dir_ + "/params.pb");
    WriteBlobsToFile(ws, {"conv1_w", "conv1_b"}, dir_ + "/partial.pb");
    Write(Tensor({20, 1, 28, 28}, DataType::FLOAT), 0.5f, "images.npy");
    Labels({20}, 3, "labels.npy");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(Tensor t, float value, const std::string& name) {
    std::fill(t.mutable_data<float>(), t.mutable_data<float>() + t.numel(), value);
    WriteNpy(t, dir_ + "/" + name);
  }
  void Labels(std::vector<int64_t> dims, int64_t value, const std::string& name) {
    Tensor t(dims, DataType::INT64);
    std::fill(t.mutable_data<int64_t>(), t.mutable_data<int64_t>() + t.numel(), value);
    WriteNpy(t, dir_ + "/" + name);
  }
  ToolResult Score(const std::string& images, const std::string& labels,
                   const std::string& params = "params.pb", const std::string& extra = "") {
    return RunTool("gan_score", "--images " + dir_ + "/" + images + " --labels " + dir_ + "/" +
                                    labels + " --classifier_net " + LeNetNet() +
                                    " --classifier_params " + dir_ + "/" + params +
                                    " --real_data '' " + extra);
  }
  std::string dir_;
};

TEST_F(GanScoreErrorTest, GoodInputRuns) {
  auto r = Score("images.npy", "labels.npy", "params.pb", "--grid " + dir_ + "/g.png");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("images: 20 from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  class 3: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Frechet"), std::string::npos) << "no real data given";
}

TEST_F(GanScoreErrorTest, MissingFiles) {
  ExpectOneLineError(Score("nope.npy", "labels.npy"), "gan_score", "nope.npy");
  ExpectOneLineError(Score("images.npy", "nope.npy"), "gan_score", "nope.npy");
  ExpectOneLineError(Score("images.npy", "labels.npy", "nope.pb"), "gan_score", "nope.pb");
  ExpectOneLineError(RunTool("gan_score", "--labels x --classifier_net y --classifier_params z"),
                     "gan_score", "give --images");
}

TEST_F(GanScoreErrorTest, MismatchedCounts) {
  Labels({19}, 3, "labels19.npy");
  ExpectOneLineError(Score("images.npy", "labels19.npy"), "gan_score",
                     "has 19 labels but " + dir_ + "/images.npy has 20 images");
}

TEST_F(GanScoreErrorTest, WrongShapesAndTypes) {
  Write(Tensor({20, 1, 32, 32}, DataType::FLOAT), 0.5f, "big.npy");
  ExpectOneLineError(Score("big.npy", "labels.npy"), "gan_score",
                     "expected float32 images of shape (N, 1, 28, 28), got float[20, 1, 32, 32]");
  Write(Tensor({20, 784}, DataType::FLOAT), 0.5f, "flat.npy");
  ExpectOneLineError(Score("flat.npy", "labels.npy"), "gan_score", "got float[20, 784]");
  Labels({20, 1}, 3, "labels2d.npy");
  ExpectOneLineError(Score("images.npy", "labels2d.npy"), "gan_score",
                     "expected a 1-d int64 (or int32) array");
  ExpectOneLineError(Score("labels.npy", "labels.npy"), "gan_score",
                     "expected float32 images of shape (N, 1, 28, 28), got int64[20]");
}

TEST_F(GanScoreErrorTest, BadValues) {
  Write(Tensor({20, 1, 28, 28}, DataType::FLOAT), -1.0f, "tanh.npy");
  ExpectOneLineError(Score("tanh.npy", "labels.npy"), "gan_score", "(x + 1) / 2");
  Labels({20}, 10, "label10.npy");
  ExpectOneLineError(Score("images.npy", "label10.npy"), "gan_score",
                     "label 0 is 10, outside the classifier's classes [0, 10)");
  ExpectOneLineError(Score("images.npy", "labels.npy", "partial.pb"), "gan_score",
                     "no parameter 'conv2_w'");
  ExpectOneLineError(Score("images.npy", "labels.npy", "params.pb", "--feature_blob fc4"),
                     "gan_score", "no feature blob 'fc4'");
  ExpectOneLineError(Score("images.npy", "labels.npy", "params.pb",
                           "--grid_per_class 30 --grid " + dir_ + "/g.png"),
                     "gan_score", "class 3 has only 20 images");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
