// Trainer behaviour not covered through train_net: exact resume of a net with random ops
// (Dropout's generator state travels in the checkpoint), in FP32 and mixed precision.
#include "models/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

// The tiny convnet with Dropout (ratio 0.5) between Relu and MaxPool.
NetDef TinyConvnetWithDropout(NetDef* init) {
  NetDef fwd, out;
  LoadTinyConvnet(init, &fwd);
  for (const auto& op : fwd.op()) {
    OperatorDef copy = op;
    if (op.type() == "MaxPool") copy.set_input(0, "conv1_dropped");
    *out.add_op() = copy;
    if (op.type() == "Relu") {
      *out.add_op() = MakeOperatorDef("Dropout", "drop1", {"conv1"}, {"conv1_dropped", "drop1_mask"},
                                      {MakeArgument("ratio", 0.5f)});
    }
  }
  return out;
}

std::vector<float> Losses(Trainer* t, int until) {
  std::vector<float> out;
  while (t->iteration() < until) {
    t->Step();
    out.push_back(t->ReadStats().loss);
  }
  return out;
}

TEST(TrainerTest, ResumeWithDropoutIsExact) {
  NetDef init;
  const NetDef fwd = TinyConvnetWithDropout(&init);
  const std::string ck = ::testing::TempDir() + "/trainer_dropout_ck.pb";
  for (bool fp16 : {false, true}) {
    const TrainerOptions o = TinyTrainingOptions(fp16, 8);
    Trainer straight(init, fwd, o);
    straight.Initialize();
    const std::vector<float> want = Losses(&straight, 12);

    Trainer first(init, fwd, o);
    first.Initialize();
    Losses(&first, 5);
    first.SaveCheckpoint(ck);
    Trainer resumed(init, fwd, o);
    resumed.Resume(ck);
    const std::vector<float> got = Losses(&resumed, 12);
    ASSERT_EQ(got.size(), 7u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], want[5 + i]) << (fp16 ? "fp16" : "fp32") << " iteration " << 6 + i;
    }
  }
  std::remove(ck.c_str());
}

// The evaluation covers each test sample exactly once, whether or not the preferred evaluation
// batch (the training batch, at least 100) divides the set; the mean loss does not depend on how
// the set is cut into batches.
TEST(TrainerTest, EvaluateCoversEveryTestSampleOnce) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  for (int64_t count : {150, 300, 97}) {
    std::vector<double> losses;
    for (int64_t batch : {int64_t{8}, count}) {
      TrainerOptions o = TinyTrainingOptions(false, batch);
      o.synthetic_count = count;
      Trainer t(init, fwd, o);
      t.Initialize();
      const EvalStats e = t.Evaluate();
      EXPECT_EQ(e.samples, count) << "count " << count << ", batch " << batch;
      losses.push_back(e.loss);
    }
    EXPECT_NEAR(losses[0], losses[1], 1e-5 * std::abs(losses[1])) << "count " << count;
  }
}

TEST(TrainerTest, ReadStatsReportsTheWindow) {
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ExpectStatsOfTheWindow(TinyTrainingOptions(fp16, 8), 5);
  }
  // Data-parallel: the means are over the replicas too.
  ExpectStatsOfTheWindow(TinyTrainingOptions(false, 8, Device(), {Device(), Device()}), 3);
}

TEST(TrainerTest, BadLabelStopsTraining) {
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    ExpectBadLabelStopsTraining(TinyTrainingOptions(fp16, 8));
  }
}

// BF16 mixed precision: FP32 masters, BF16 copies (refreshed by the update, equal to the masters
// rounded once), BF16 activations and gradients, no loss scale; it learns as FP32 does.
TEST(TrainerTest, BFloat16TrainsWithFloatMastersAndBFloat16Copies) {
  const TinyTrainingRun fp32 = TrainTiny(TinyTrainingOptions(DataType::FLOAT, 16), 40);
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  TrainerOptions o = TinyTrainingOptions(DataType::BFLOAT16, 16);
  o.keep_blobs = {"conv1"};  // an activation, fetched below (the memory plan keeps its name)
  Trainer t(init, fwd, o);
  t.Initialize();
  const std::vector<float> losses = Losses(&t, 40);
  const Workspace& ws = *t.workspace();
  EXPECT_EQ(ws.GetTensor("fc_w").dtype(), DataType::FLOAT);
  const Tensor& copy = ws.GetTensor("fc_w_bf16");
  ASSERT_EQ(copy.dtype(), DataType::BFLOAT16);
  const std::vector<float> master = ToFloatVector(ws.GetTensor("fc_w"));
  for (size_t i = 0; i < master.size(); ++i) {
    ASSERT_EQ(copy.data<BFloat16>()[i].x, BFloat16(master[i]).x) << i;
  }
  EXPECT_EQ(ws.GetTensor("conv1").dtype(), DataType::BFLOAT16);  // an activation
  EXPECT_EQ(t.ReadStats().loss_scale, 1.f);
  EXPECT_EQ(t.ReadStats().skipped_steps, 0);
  auto mean = [](const std::vector<float>& v, size_t from, size_t to) {
    double s = 0;
    for (size_t i = from; i < to; ++i) s += v[i];
    return s / static_cast<double>(to - from);
  };
  EXPECT_LT(mean(losses, 30, 40), 0.7 * mean(losses, 0, 10));
  // Within BF16's precision of the FP32 run (same data, same initial weights).
  EXPECT_NEAR(mean(losses, 30, 40), mean(fp32.losses, 30, 40), 0.1 * mean(fp32.losses, 30, 40));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
