// Training the tiny convnet of tests/fixtures (Conv, Relu, MaxPool, FC, SoftmaxWithLoss, Accuracy;
// no BatchNorm, so data-parallel replicas compute exactly what one device computes on the whole
// batch) on synthetic data with the Trainer, for tests that compare runs.
#pragma once

#include <string>
#include <vector>

#include "core/proto_io.h"
#include "models/trainer.h"
#include "tests/util/op_test_util.h"
#include "tests/util/source_dir.h"

namespace halfcaf {
namespace testing {

// Momentum SGD with weight decay; mixed precision uses a dynamic loss scale from 1024.
// `replicas`: empty (or one entry) = one device, `device`.
inline TrainerOptions TinyTrainingOptions(bool float16, int64_t batch, Device device = Device(),
                                          std::vector<Device> replicas = {}) {
  TrainerOptions o;
  o.data_format = "synthetic";
  o.synthetic_shape = {1, 8, 8};
  o.num_classes = 4;
  o.batch_size = batch;
  o.optimizer.base_lr = 0.05f;
  o.optimizer.weight_decay = 1e-3f;
  o.float16 = float16;
  o.dynamic_loss_scale = float16;
  o.loss_scale = float16 ? 1024.f : 1.f;
  o.prefetch = false;
  o.device = device;
  if (replicas.size() > 1) o.replicas = std::move(replicas);
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
  while (t.iteration() < iters) run.losses.push_back(t.Step().loss);
  if (!save.empty()) t.SaveCheckpoint(save);
  const std::string w = t.replicas().empty() ? "fc_w" : t.replicas()[0].Blob("fc_w");
  Tensor host;
  host.CopyFrom(t.workspace()->GetTensor(w));
  run.fc_w = ToFloatVector(host);
  run.test_loss = t.Evaluate().loss;
  return run;
}

}  // namespace testing
}  // namespace halfcaf
