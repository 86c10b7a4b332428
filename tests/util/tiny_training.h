// Training the tiny convnet of tests/fixtures (Conv, Relu, MaxPool, FC, SoftmaxWithLoss, Accuracy;
// no BatchNorm, so data-parallel replicas compute exactly what one device computes on the whole
// batch) on synthetic data with the Trainer, for tests that compare runs.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/proto_io.h"
#include "models/trainer.h"
#include "tests/util/op_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {

// Momentum SGD with weight decay; float16 mixed precision uses a dynamic loss scale from 1024,
// bfloat16 none. `replicas`: empty (or one entry) = one device, `device`.
inline TrainerOptions TinyTrainingOptions(DataType precision, int64_t batch,
                                          Device device = Device(),
                                          std::vector<Device> replicas = {}) {
  TrainerOptions o;
  o.data_format = "synthetic";
  o.synthetic_shape = {1, 8, 8};
  o.num_classes = 4;
  o.batch_size = batch;
  o.optimizer.base_lr = 0.05f;
  o.optimizer.weight_decay = 1e-3f;
  o.precision = precision;
  o.dynamic_loss_scale = precision == DataType::FLOAT16;
  o.loss_scale = o.dynamic_loss_scale ? 1024.f : 1.f;
  o.prefetch = false;
  o.device = device;
  if (replicas.size() > 1) o.replicas = std::move(replicas);
  return o;
}
inline TrainerOptions TinyTrainingOptions(bool float16, int64_t batch, Device device = Device(),
                                          std::vector<Device> replicas = {}) {
  return TinyTrainingOptions(float16 ? DataType::FLOAT16 : DataType::FLOAT, batch, device,
                             std::move(replicas));
}

// Synthetic images of `image` (C, H, W) in `classes` classes, FP32, no prefetching.
inline TrainerOptions SyntheticImageOptions(std::vector<int64_t> image, int64_t classes,
                                            int64_t batch) {
  TrainerOptions o;
  o.data_format = "synthetic";
  o.synthetic_shape = std::move(image);
  o.num_classes = classes;
  o.batch_size = batch;
  o.prefetch = false;
  return o;
}

struct TinyTrainingRun {
  std::vector<float> losses;  // per step
  std::vector<float> fc_w;    // after the last step (replica 0's)
  double test_loss = 0;       // Evaluate() after the last step
};

inline void LoadTinyConvnet(NetDef* init, NetDef* forward) {
  const std::string dir = ::halfcaf::testing::SourceDir() + "/tests/fixtures/";
  ReadProtoFromFile(dir + "tiny_convnet_init.pbtxt", init);
  ReadProtoFromFile(dir + "tiny_convnet_net.pbtxt", forward);
}

// Trains up to iteration `iters` (from a fresh start, or from the checkpoint `resume`), then
// writes the checkpoint `save` when given.
inline TinyTrainingRun TrainTiny(const TrainerOptions& o, int iters, const std::string& save = "",
                                 const std::string& resume = "") {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  Trainer t(init, fwd, o);
  if (resume.empty()) {
    t.Initialize();
  } else {
    t.Resume(resume);
  }
  TinyTrainingRun run;
  while (t.iteration() < iters) {
    t.Step();
    run.losses.push_back(t.ReadStats().loss);
  }
  if (!save.empty()) t.SaveCheckpoint(save);
  const std::string w = t.replicas().empty() ? "fc_w" : t.replicas()[0].Blob("fc_w");
  Tensor host;
  host.CopyFrom(t.workspace()->GetTensor(w));
  run.fc_w = ToFloatVector(host);
  run.test_loss = t.Evaluate().loss;
  return run;
}

// ReadStats reports the window of steps since the previous read: a trainer read every step and
// one read after `n` steps see the same last step, and the window means are the means of the
// per-step values. Losses agree within `rtol` (0 on CPU; on CUDA cuDNN's algorithms may sum in
// another order from run to run, and the window sums are float sums on the device).
inline void ExpectStatsOfTheWindow(const TrainerOptions& o, int n, double rtol = 0) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  // One after the other: each trainer seeds the process-wide generator its ops draw from.
  Trainer every(init, fwd, o);
  every.Initialize();
  double sum_loss = 0, sum_acc = 0;
  StepStats last;
  for (int i = 0; i < n; ++i) {
    every.Step();
    last = every.ReadStats();
    EXPECT_EQ(last.steps, 1);
    EXPECT_EQ(last.mean_loss, static_cast<double>(last.loss));
    sum_loss += last.loss;
    sum_acc += last.accuracy;
  }
  Trainer window(init, fwd, o);
  window.Initialize();
  for (int i = 0; i < n; ++i) window.Step();
  const StepStats s = window.ReadStats();
  const double mean_loss = sum_loss / n;
  EXPECT_EQ(s.iter, n);
  EXPECT_EQ(s.steps, n);
  EXPECT_TRUE(s.has_accuracy);
  EXPECT_NEAR(s.loss, last.loss, rtol * std::fabs(last.loss));
  EXPECT_NEAR(s.mean_loss, mean_loss, 1e-6 * mean_loss + rtol * mean_loss);
  const double one_sample = 1.0 / static_cast<double>(o.batch_size) + 1e-6;
  EXPECT_NEAR(s.accuracy, last.accuracy, rtol > 0 ? one_sample : 0.0);
  EXPECT_NEAR(s.mean_accuracy, sum_acc / n, rtol > 0 ? one_sample : 1e-6);
  EXPECT_EQ(s.lr, last.lr);
  EXPECT_EQ(s.loss_scale, last.loss_scale);
  EXPECT_EQ(s.skipped_steps, last.skipped_steps);
  const StepStats empty = window.ReadStats();  // a new window, with no step yet
  EXPECT_EQ(empty.steps, 0);
  EXPECT_EQ(empty.mean_loss, 0);
  EXPECT_EQ(empty.loss, s.loss);
}

// Training on labels out of the net's range (synthetic data of 5 classes for the tiny convnet's
// 4) stops with the loss or accuracy op's error: the op, the bad label, the valid range. On CPU
// the step throws; on CUDA the check is on the device and the error comes at the next ReadStats.
inline void ExpectBadLabelStopsTraining(TrainerOptions o) {
  o.num_classes = 5;
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  Trainer t(init, fwd, o);
  t.Initialize();
  try {
    for (int i = 0; i < 4; ++i) t.Step();
    t.ReadStats();
    ADD_FAILURE() << "labels out of range were accepted";
  } catch (const EnforceNotMet& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(": label 4 of sample "), std::string::npos) << msg;
    EXPECT_NE(msg.find(" is out of range, expected 0 <= label < 4 (the number of classes)"),
              std::string::npos)
        << msg;
    EXPECT_TRUE(msg.find("SoftmaxWithLoss") != std::string::npos ||
                msg.find("Accuracy") != std::string::npos)
        << msg;
  }
}

}  // namespace testing
}  // namespace halfcaf
