// Training nets that broadcast NumPy-style, as imported ONNX models do (a convolution's bias added
// as an Add of a [C, 1, 1] initializer): with the blobs' dims the trainer's gradients match the
// legacy-broadcast net's, and an imported model brings those dims along.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/argument.h"
#include "models/imported_model.h"
#include "models/trainer.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "tests/onnx/export_cases.h"
#include "tests/util/op_test_util.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

struct Losses {
  std::vector<float> losses;
  std::vector<float> bias;
};

Losses Train(const NetDef& init, const NetDef& fwd, TrainerOptions o, const std::string& bias) {
  Trainer t(init, fwd, o);
  t.Initialize();
  Losses r;
  for (int i = 0; i < 6; ++i) {
    t.Step();
    r.losses.push_back(t.ReadStats().loss);
  }
  r.bias = ToFloatVector(t.workspace()->GetTensor(bias));
  return r;
}

// The tiny conv net with its bias added after the convolution: Caffe2's legacy broadcast
// (bias [4], broadcast=1, axis=1) or NumPy's (bias [4, 1, 1], no broadcast argument).
void BiasNet(bool numpy, NetDef* init, NetDef* fwd) {
  *init->add_op() = RandomFill("conv_w", {4, 1, 3, 3}, 1);
  OperatorDef b = RandomFill("conv_b", {4}, 2);
  if (numpy) SetArgument(&b, "shape", std::vector<int64_t>{4, 1, 1});
  *init->add_op() = b;
  *init->add_op() = RandomFill("fc_w", {4, 256}, 3);
  *init->add_op() = RandomFill("fc_b", {4}, 4);
  *fwd->add_op() = MakeOperatorDef("Conv", "", {"data", "conv_w"}, {"conv"},
                                   {MakeArgument("kernel", 3), MakeArgument("pad", 1)});
  *fwd->add_op() = MakeOperatorDef(
      "Add", "", {"conv", "conv_b"}, {"biased"},
      numpy ? std::vector<Argument>{}
            : std::vector<Argument>{MakeArgument("broadcast", 1), MakeArgument("axis", 1)});
  *fwd->add_op() = MakeOperatorDef("Relu", "", {"biased"}, {"relu"});
  *fwd->add_op() = MakeOperatorDef("FC", "", {"relu", "fc_w", "fc_b"}, {"logits"});
  *fwd->add_op() = MakeOperatorDef("SoftmaxWithLoss", "", {"logits", "label"}, {"softmax", "loss"});
}

// With the blobs' dims (TrainerOptions::blob_dims, which train_net fills from an imported model),
// the NumPy Add's gradient sums over the broadcast dims: the same losses and bias as the legacy
// net. Without them the pass-through gradient has the wrong shape and training stops with an
// error instead of updating the bias wrongly.
TEST(OnnxTrainingTest, NumpyBroadcastTrainsLikeTheLegacyBroadcast) {
  const TrainerOptions o = TinyTrainingOptions(false, 8);
  NetDef init, fwd;
  BiasNet(false, &init, &fwd);
  const Losses want = Train(init, fwd, o, "conv_b");
  NetDef ninit, nfwd;
  BiasNet(true, &ninit, &nfwd);
  TrainerOptions with_dims = o;
  with_dims.blob_dims = {{"conv", {8, 4, 8, 8}}, {"conv_b", {4, 1, 1}}};
  const Losses got = Train(ninit, nfwd, with_dims, "conv_b");
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i) {
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5f * std::max(1.f, want.losses[i])) << i;
  }
  ASSERT_EQ(got.bias.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got.bias[i], want.bias[i], 1e-5f) << i;
  Workspace start;
  start.RunNetOnce(init);
  EXPECT_NE(want.bias, ToFloatVector(start.GetTensor("conv_b")));  // the bias did train
  EXPECT_THROW(Train(ninit, nfwd, o, "conv_b"), EnforceNotMet);
}

// An imported model carries its static dims to the trainer: those of a NumPy-broadcasting Add's
// inputs among them.
TEST(OnnxTrainingTest, ImportedModelsCarryTheirDims) {
  if (!OnnxAvailable()) GTEST_SKIP() << OnnxMissingHint();
  NetDef init, predict;
  BiasNet(true, &init, &predict);
  predict.mutable_op()->RemoveLast();  // the loss
  OnnxExportOptions eo;
  eo.input_dims["data"] = {8, 1, 8, 8};
  const TrainableNets t =
      MakeTrainable(ImportOnnxBytes(ExportOnnx(init, predict, eo), "bias.onnx"), {});
  EXPECT_EQ(t.blob_dims.at("conv"), (std::vector<int64_t>{8, 4, 8, 8}));
  EXPECT_EQ(t.blob_dims.at("conv_b"), (std::vector<int64_t>{4, 1, 1}));
  EXPECT_EQ(t.blob_dims.at("data"), (std::vector<int64_t>{8, 1, 8, 8}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
