// Scores for conditional GANs, computed with a classifier trained on the real data (as train_net
// trains one, e.g. LeNet on Fashion-MNIST):
//   - GAN-test accuracy: the share of generated images the classifier assigns to the class the
//     generator was asked for;
//   - the Frechet distance between real and generated images in the classifier's penultimate
//     features (FID's formula over another network's features);
//   - a PNG grid of samples, one row per class.
// tools/gan_score runs them on images.npy / labels.npy from any framework.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/workspace.h"
#include "proto/halfcaf.pb.h"

namespace halfcaf {

// Frechet distance between Gaussians fitted to two sets of feature vectors:
//   ||mu_a - mu_b||^2 + Tr(S_a + S_b - 2 (S_a S_b)^{1/2})
// with unbiased (n - 1) covariances, computed in double. Tr((S_a S_b)^{1/2}) is the sum of the
// square roots of the eigenvalues (negative rounding noise clamped to 0) of the symmetric
// S_a^{1/2} S_b S_a^{1/2}, from LAPACK's dsyevd. `a` is (N, D), `b` (M, D), float or double on
// the CPU; throws EnforceNotMet for other shapes, a different D, fewer than 2 rows in either, or a
// non-finite value. The result is clamped at 0 (identical sets give ~1e-12 either way).
double FrechetDistance(const Tensor& a, const Tensor& b);

// Overall and per-class share of predictions equal to labels.
struct ClassAccuracy {
  double overall = 0;
  std::vector<double> per_class;         // num_classes entries; NaN for a class with no label
  std::vector<int64_t> per_class_count;  // labels of each class
};
// `predictions` and `labels`: N class indices each (int32 or int64, any shape of N elements),
// labels in [0, num_classes) (else EnforceNotMet naming the first bad one).
ClassAccuracy ScorePredictions(const Tensor& predictions, const Tensor& labels, int num_classes);

struct ClassifierScorerOptions {
  std::string data_blob = "data";     // images go here, (N, C, H, W) float
  std::string label_blob = "label";   // ops reading it (loss, accuracy) are removed
  std::string prob_blob = "softmax";  // (N, classes) probabilities (or logits): argmax = class
  // The penultimate activation; for models/lenet, "fc3" (after its in-place Relu), 500 values.
  std::string feature_blob = "fc3";
  std::vector<int64_t> image_dims = {1, 28, 28};  // C, H, W of one image; empty: not checked
  int64_t batch_size = 500;
};

// A trained classifier in test mode, run on the CPU. Built from the forward net train_net trained
// (with its loss) and a TensorProtos file of its parameters (train_net's
// <checkpoint_dir>/checkpoint.pb; only the blobs the net reads are taken from it):
// BatchNorm and Dropout are switched to test mode (models/trainer_util.h TestModeForward), a
// SoftmaxWithLoss reading the label becomes a Softmax writing its probability output, and every
// other op reading the label (Accuracy, ...) is dropped with whatever depends on it. Images must
// be preprocessed as in training: train_net's default is pixels / 255, i.e. values in [0, 1].
class ClassifierScorer {
 public:
  // Throws EnforceNotMet when the net lacks the probability or feature blob, or the file lacks a
  // parameter the net reads (naming the parameter and the op).
  ClassifierScorer(const NetDef& forward, const std::string& params_path,
                   ClassifierScorerOptions options = {});
  ClassifierScorer(const ClassifierScorer&) = delete;
  ClassifierScorer& operator=(const ClassifierScorer&) = delete;

  struct Output {
    Tensor predictions;  // int32 (N): argmax of the probability blob (lowest index on ties)
    Tensor features;     // float (N, D): the feature blob, flattened after dim 0
  };
  // Runs `images` ((N, C, H, W) float, finite; N >= 1) through the net in batches of
  // options.batch_size. The feature blob is read after the whole net ran (LeNet's fc3 is the
  // Relu's in-place output).
  Output Run(const Tensor& images);

  Tensor Features(const Tensor& images) { return Run(images).features; }
  // Share of `images` classified as `requested_labels` (N int32 or int64 in [0, num_classes)).
  double GanTestAccuracy(const Tensor& images, const Tensor& requested_labels);

  // Width of the probability blob: known after construction when options.image_dims is set (a
  // probe image runs then), else after the first Run (0 before).
  int num_classes() const { return num_classes_; }
  // The test-mode net that runs.
  const NetDef& test_net() const { return test_net_; }
  const ClassifierScorerOptions& options() const { return options_; }

 private:
  void CheckImages(const Tensor& images) const;

  ClassifierScorerOptions options_;
  NetDef test_net_;
  Workspace ws_;
  bool created_ = false;
  int num_classes_ = 0;
};

// Strips a forward training net to the test-mode classifier ClassifierScorer runs (see above),
// every op on the CPU (device options cleared).
NetDef ClassifierTestNet(const NetDef& forward, const ClassifierScorerOptions& options);

// A grid of grey images as a PNG: `images` (N, 1, H, W) float, values clamped to [0, 1] (NaN as
// 0) and scaled to 0..255 (0 black, the data's background; 1 white, the stroke), N = rows * cols,
// image i at grid row i / cols, column i % cols; tiles separated by `gap` black pixels (none at
// the border). Callers that order images class-major get one class per row. Returns the PNG
// bytes; throws when N is not a multiple of rows or this build lacks PNG (libpng-dev).
std::string EncodeSampleGrid(const Tensor& images, int rows, int gap = 2);

}  // namespace halfcaf
