// gan_score: scores class-conditional GAN samples with a classifier trained on the real data
// (models/gan_metrics.h), so that samples from any framework (halfcaf's AC-GAN trainer, a PyTorch
// peer) are judged by the same network:
//   - GAN-test accuracy: the share of images the classifier assigns to their requested class,
//     overall and per class;
//   - the classifier's accuracy on the first --real_count real images (a sanity check: a
//     trained LeNet gets about 0.89 on Fashion-MNIST's test set);
//   - the Frechet distance between the real and the generated images in the classifier's
//     features (--feature_blob, LeNet's "fc3": 500 values after its Relu);
//   - optionally a PNG grid, one row per class, and a JSON file of the numbers.
// Inputs: --images, a float32 .npy of (N, 1, 28, 28) images with values in [0, 1] (the
// classifier's training input: pixels / 255; 0 is the background); --labels, an int64 (or
// int32) .npy of N requested classes; the classifier's forward net as train_net trained it
// (--classifier_net, with its loss) and its parameters (--classifier_params, a train_net
// checkpoint.pb).
#include <gflags/gflags.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "core/math.h"
#include "core/proto_io.h"
#include "data/dataset_reader.h"
#include "data/npy.h"
#include "models/gan_metrics.h"
#include "tools/benchmark_output.h"
#include "tools/tool_common.h"

DEFINE_string(images, "", "float32 .npy of (N, 1, 28, 28) generated images, values in [0, 1]");
DEFINE_string(labels, "", "int64 or int32 .npy of the N requested classes");
DEFINE_string(classifier_net, "",
              "the classifier's forward net with its loss, as train_net trained it (e.g. "
              "models/lenet/lenet_train_net.pbtxt)");
DEFINE_string(classifier_params, "",
              "its parameters: a TensorProtos file such as train_net's <checkpoint_dir>/"
              "checkpoint.pb");
DEFINE_string(data_blob, "data", "the classifier's image input blob");
DEFINE_string(label_blob, "label", "the classifier's label blob (ops reading it are removed)");
DEFINE_string(prob_blob, "softmax", "the classifier's class-probability blob");
DEFINE_string(feature_blob, "fc3",
              "the classifier's penultimate activation, for the Frechet distance (LeNet: fc3, "
              "500 values after its Relu)");
DEFINE_string(real_data, "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
              "idx images file of real data (labels beside it), scaled by 1/255; empty: skip the "
              "real accuracy and the Frechet distance");
DEFINE_int64(real_count, 10000, "use the first this many real images (all when fewer)");
DEFINE_string(grid, "", "write a PNG grid of samples here: one row per class");
DEFINE_int32(grid_per_class, 10, "images per row of --grid (the first of each class)");
DEFINE_string(json, "", "write the scores here as JSON");
DEFINE_int64(batch_size, 500, "images per classifier run");
DEFINE_int32(threads, 0, "CPU threads for BLAS (0: all cores)");

namespace halfcaf {
namespace {

// Values this far outside [0, 1] are taken as another scaling (e.g. a tanh generator's [-1, 1]).
constexpr float kRangeSlack = 1e-3f;

void CheckImages(const Tensor& images, const std::string& path) {
  HALFCAF_ENFORCE(images.dtype() == DataType::FLOAT && images.ndim() == 4 && images.dim(1) == 1 &&
                      images.dim(2) == 28 && images.dim(3) == 28 && images.dim(0) >= 1,
                  path, ": expected float32 images of shape (N, 1, 28, 28), got ",
                  images.DebugString());
  const float* x = images.data<float>();
  const int64_t per = images.size_from_dim(1);
  for (int64_t i = 0; i < images.numel(); ++i) {
    HALFCAF_ENFORCE(std::isfinite(x[i]), path, ": image ", i / per, " has a non-finite value (",
                    x[i], ")");
    HALFCAF_ENFORCE(x[i] >= -kRangeSlack && x[i] <= 1 + kRangeSlack, path, ": image ", i / per,
                    " has the value ", x[i],
                    "; images must lie in [0, 1] (pixels / 255, as the "
                    "classifier was trained; a tanh output x maps with (x + 1) / 2)");
  }
}

std::vector<int64_t> ReadLabels(const Tensor& labels, const std::string& path, int64_t n) {
  HALFCAF_ENFORCE((labels.dtype() == DataType::INT64 || labels.dtype() == DataType::INT32) &&
                      labels.ndim() == 1,
                  path, ": expected a 1-d int64 (or int32) array of requested classes, got ",
                  labels.DebugString());
  HALFCAF_ENFORCE(labels.numel() == n, path, " has ", labels.numel(), " labels but ", FLAGS_images,
                  " has ", n, " images");
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out[i] =
        labels.dtype() == DataType::INT64 ? labels.data<int64_t>()[i] : labels.data<int32_t>()[i];
  }
  return out;
}

// The first `per_class` images of each class present, class-major, as one tensor.
Tensor GridImages(const Tensor& images, const std::vector<int64_t>& labels, int per_class,
                  int* rows) {
  std::map<int64_t, std::vector<int64_t>> by_class;
  for (int64_t i = 0; i < static_cast<int64_t>(labels.size()); ++i) {
    auto& v = by_class[labels[i]];
    if (static_cast<int>(v.size()) < per_class) v.push_back(i);
  }
  for (const auto& [c, v] : by_class) {
    HALFCAF_ENFORCE(static_cast<int>(v.size()) == per_class, "--grid: class ", c, " has only ",
                    v.size(), " images in ", FLAGS_labels, "; --grid_per_class is ", per_class);
  }
  *rows = static_cast<int>(by_class.size());
  const int64_t per = images.size_from_dim(1);
  std::vector<int64_t> dims = images.dims();
  dims[0] = static_cast<int64_t>(by_class.size()) * per_class;
  Tensor grid(dims, DataType::FLOAT);
  float* dst = grid.mutable_data<float>();
  for (const auto& [c, v] : by_class) {
    for (int64_t i : v) {
      std::copy(images.data<float>() + i * per, images.data<float>() + (i + 1) * per, dst);
      dst += per;
    }
  }
  return grid;
}

// The first `count` images of an idx file (labels beside it) as float (pixels / 255).
void LoadReal(const std::string& path, int64_t count, const std::vector<int64_t>& image_dims,
              Tensor* images, Tensor* labels) {
  std::unique_ptr<DataSource> data = LoadIdxDataset(path);
  HALFCAF_ENFORCE(data->sample_dims() == image_dims, path, ": real images are ",
                  DimsString(data->sample_dims()), ", the generated ones ", DimsString(image_dims));
  const int64_t n = std::min(count, data->size());
  HALFCAF_ENFORCE(n >= 2, path, ": needs at least 2 real images, has ", data->size());
  std::vector<int64_t> dims = {n};
  dims.insert(dims.end(), image_dims.begin(), image_dims.end());
  *images = Tensor(dims, DataType::FLOAT);
  *labels = Tensor({n}, DataType::INT32);
  const int64_t per = data->sample_numel();
  std::vector<uint8_t> pixels(static_cast<size_t>(per));
  float* x = images->mutable_data<float>();
  int32_t* y = labels->mutable_data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    data->ReadSample(i, pixels.data());
    for (int64_t j = 0; j < per; ++j) x[i * per + j] = pixels[j] * (1.0f / 255.0f);
    y[i] = data->Label(i);
  }
}

int Main() {
  HALFCAF_ENFORCE(!FLAGS_images.empty(), "give --images (a float32 .npy of (N, 1, 28, 28))");
  HALFCAF_ENFORCE(!FLAGS_labels.empty(), "give --labels (an int64 .npy of N classes)");
  HALFCAF_ENFORCE(!FLAGS_classifier_net.empty(),
                  "give --classifier_net (e.g. models/lenet/lenet_train_net.pbtxt)");
  HALFCAF_ENFORCE(!FLAGS_classifier_params.empty(),
                  "give --classifier_params (train_net's <checkpoint_dir>/checkpoint.pb)");
  HALFCAF_ENFORCE(FLAGS_real_count >= 2, "--real_count must be >= 2, got ", FLAGS_real_count);
  HALFCAF_ENFORCE(FLAGS_grid_per_class >= 1, "--grid_per_class must be >= 1, got ",
                  FLAGS_grid_per_class);
  HALFCAF_ENFORCE(FLAGS_batch_size >= 1, "--batch_size must be >= 1, got ", FLAGS_batch_size);
  HALFCAF_ENFORCE(FLAGS_threads >= 0, "--threads must be >= 0, got ", FLAGS_threads);
  if (!FLAGS_grid.empty()) CheckWritableFile(FLAGS_grid, "--grid");
  if (!FLAGS_json.empty()) CheckWritableFile(FLAGS_json, "--json");
  math::SetBlasThreads(FLAGS_threads);

  const Tensor images = ReadNpy(FLAGS_images);
  CheckImages(images, FLAGS_images);
  const int64_t n = images.dim(0);
  const std::vector<int64_t> labels = ReadLabels(ReadNpy(FLAGS_labels), FLAGS_labels, n);
  const std::vector<int64_t> image_dims(images.dims().begin() + 1, images.dims().end());
  int grid_rows = 0;
  Tensor grid;
  if (!FLAGS_grid.empty()) grid = GridImages(images, labels, FLAGS_grid_per_class, &grid_rows);

  NetDef net;
  ReadProtoFromFile(FLAGS_classifier_net, &net);
  ClassifierScorerOptions opt;
  opt.data_blob = FLAGS_data_blob;
  opt.label_blob = FLAGS_label_blob;
  opt.prob_blob = FLAGS_prob_blob;
  opt.feature_blob = FLAGS_feature_blob;
  opt.image_dims = image_dims;
  opt.batch_size = FLAGS_batch_size;
  ClassifierScorer scorer(net, FLAGS_classifier_params, opt);
  const int k = scorer.num_classes();
  for (int64_t i = 0; i < n; ++i) {
    HALFCAF_ENFORCE(labels[i] >= 0 && labels[i] < k, FLAGS_labels, ": label ", i, " is ", labels[i],
                    ", outside the classifier's classes [0, ", k, ")");
  }
  Tensor label_tensor({n}, DataType::INT64);
  std::copy(labels.begin(), labels.end(), label_tensor.mutable_data<int64_t>());

  const ClassifierScorer::Output gen = scorer.Run(images);
  const ClassAccuracy acc = ScorePredictions(gen.predictions, label_tensor, k);
  const int64_t feature_size = gen.features.dim(1);
  std::printf("images: %lld from %s, %d classes\n", static_cast<long long>(n), FLAGS_images.c_str(),
              k);
  std::printf("GAN-test accuracy: %.4f\n", acc.overall);
  for (int c = 0; c < k; ++c) {
    if (acc.per_class_count[c] == 0) continue;
    std::printf("  class %d: %.4f (%lld images)\n", c, acc.per_class[c],
                static_cast<long long>(acc.per_class_count[c]));
  }

  double real_accuracy = std::nan(""), fid = std::nan("");
  int64_t real_n = 0;
  if (!FLAGS_real_data.empty()) {
    Tensor real_images, real_labels;
    LoadReal(FLAGS_real_data, FLAGS_real_count, image_dims, &real_images, &real_labels);
    real_n = real_images.dim(0);
    const ClassifierScorer::Output real = scorer.Run(real_images);
    real_accuracy = ScorePredictions(real.predictions, real_labels, k).overall;
    HALFCAF_ENFORCE(n >= 2, "the Frechet distance needs at least 2 generated images, got ", n);
    fid = FrechetDistance(gen.features, real.features);
    std::printf("real accuracy: %.4f (%lld images of %s)\n", real_accuracy,
                static_cast<long long>(real_n), FLAGS_real_data.c_str());
    std::printf("Frechet distance (%s, %lld features): %.6g\n", FLAGS_feature_blob.c_str(),
                static_cast<long long>(feature_size), fid);
  }

  if (!FLAGS_grid.empty()) {
    WriteFileAtomically(FLAGS_grid, EncodeSampleGrid(grid, grid_rows));
    std::printf("grid: %s (%d rows of %d)\n", FLAGS_grid.c_str(), grid_rows, FLAGS_grid_per_class);
  }
  if (!FLAGS_json.empty()) {
    using bench::JsonString;
    using bench::Num;
    std::ostringstream j;
    j << "{\n  \"images\": " << JsonString(FLAGS_images) << ",\n  \"count\": " << n
      << ",\n  \"num_classes\": " << k << ",\n  \"gan_test_accuracy\": " << Num(acc.overall, 10)
      << ",\n  \"per_class_accuracy\": [";
    for (int c = 0; c < k; ++c) j << (c ? ", " : "") << Num(acc.per_class[c], 10);
    j << "],\n  \"per_class_count\": [";
    for (int c = 0; c < k; ++c) j << (c ? ", " : "") << acc.per_class_count[c];
    j << "],\n  \"classifier_params\": " << JsonString(FLAGS_classifier_params)
      << ",\n  \"feature_blob\": " << JsonString(FLAGS_feature_blob)
      << ",\n  \"feature_size\": " << feature_size
      << ",\n  \"real_data\": " << JsonString(FLAGS_real_data) << ",\n  \"real_count\": " << real_n
      << ",\n  \"real_accuracy\": " << Num(real_accuracy, 10)
      << ",\n  \"frechet_distance\": " << Num(fid, 10) << "\n}\n";
    WriteFileAtomically(FLAGS_json, j.str());
  }
  return 0;
}

}  // namespace
}  // namespace halfcaf

int main(int argc, char** argv) {
  return halfcaf::RunTool(
      "gan_score",
      "gan_score --images images.npy --labels labels.npy --classifier_net NET "
      "--classifier_params checkpoint.pb [--feature_blob fc3] [--real_data IDX_IMAGES] "
      "[--real_count 10000] [--grid out.png --grid_per_class 10] [--json out.json]",
      argc, argv, halfcaf::Main);
}
