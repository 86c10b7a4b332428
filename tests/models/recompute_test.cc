// Recomputation in the backward pass (models/recompute.h) and the trainer's `recompute` option:
// the backward part reads no batch-normalization or ReLU output the forward part wrote, the
// running statistics are updated once, training is bit for bit what it is without it, and the
// memory plan needs less.
#include "models/recompute.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/model_helper.h"
#include "models/passes/passes.h"
#include "models/trainer.h"
#include "models/zoo.h"
#include "operators/nn/channel_block.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

// The ResNet-18 step (forward + backward) built by the standard passes.
JobNet ResNetStep(bool recompute, int* backward_begin, bool convolutions = false) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  TrainingJob job = MakeJob(h.init_net(), DataType::FLOAT);
  job.recompute = recompute;
  job.recompute_convolutions = convolutions;
  job.nets.push_back(JobNet::Make("", h.net(), {{"loss", 1.f}}, OptimizerOptions()));
  RunPasses(StandardPasses(), &job);
  *backward_begin = job.nets[0].backward_begin;
  return job.nets[0];
}

TEST(RecomputeTest, ResNetBackwardReadsNoBatchNormOrReluOutputOfTheForwardPart) {
  int plain_begin = 0, begin = 0;
  const JobNet plain = ResNetStep(false, &plain_begin);
  const JobNet net = ResNetStep(true, &begin);
  ASSERT_EQ(begin, plain_begin);
  ASSERT_EQ(plain.step.op(begin).type().find("Gradient") != std::string::npos ||
                plain.step.op(begin).type() == "ConstantFill",
            true)
      << plain.step.op(begin).type();
  // What the forward part's SpatialBN (output 0), Relu and Sum write, by name.
  std::set<std::string> cheap, conv_outputs, running;
  for (int i = 0; i < begin; ++i) {
    const OperatorDef& op = net.step.op(i);
    if (op.type() == "SpatialBN" || op.type() == "Relu" || op.type() == "Sum") {
      cheap.insert(op.output(0));
    }
    if (op.type() == "Conv") conv_outputs.insert(op.output(0));
    if (op.type() == "SpatialBN") running.insert({op.output(1), op.output(2)});
  }
  ASSERT_FALSE(cheap.empty());
  int recomputed_ops = 0, bn_copies = 0;
  std::set<std::string> conv_outputs_read;
  for (int i = begin; i < net.step.op_size(); ++i) {
    const OperatorDef& op = net.step.op(i);
    for (const auto& in : op.input()) {
      EXPECT_FALSE(cheap.count(in)) << op.type() << " (op " << i << ") reads the forward's " << in;
      if (conv_outputs.count(in)) conv_outputs_read.insert(in);
    }
    // Recomputed outputs: "<blob>_recomputed", or "<blob>_recomputed_<op>" for an earlier version.
    const bool recompute =
        !op.output().empty() && op.output(0).find(kRecomputedSuffix) != std::string::npos;
    if (!recompute && op.type() == "Copy") ADD_FAILURE() << "a Copy that is not a recompute";
    if (op.type() == "Copy") ++bn_copies;
    if (recompute && op.type() != "Copy") ++recomputed_ops;
    // The running statistics are written by the forward part only.
    for (const auto& out : op.output()) EXPECT_FALSE(running.count(out)) << op.type() << " " << out;
  }
  // Every BN, ReLU and residual Sum once more (the conv outputs they read stay: the gradients
  // read them too); each BN's two throwaway running statistics.
  int bns = 0;
  for (int i = 0; i < begin; ++i) bns += net.step.op(i).type() == "SpatialBN";
  EXPECT_EQ(bn_copies, 2 * bns);
  EXPECT_GE(recomputed_ops, static_cast<int>(cheap.size()));
  EXPECT_EQ(conv_outputs_read, conv_outputs);
  EXPECT_EQ(net.step.op_size() - plain.step.op_size(), recomputed_ops + bn_copies);
}

struct StepsRun {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> state;  // parameters and BN statistics
  int64_t planned_bytes = 0;
};

StepsRun Train(const TrainerOptions& o, const NetDef& init, const NetDef& fwd, int steps) {
  Trainer t(init, fwd, o);
  t.Initialize();
  StepsRun r;
  for (int i = 0; i < steps; ++i) {
    t.Step();
    r.losses.push_back(t.ReadStats().loss);
  }
  for (const auto& op : t.train_init_net().op()) {
    for (const auto& name : op.output()) {
      const Blob* b = t.workspace()->GetBlob(name);
      if (b && b->IsTensor() && b->GetTensor().dtype() == DataType::FLOAT) {
        r.state[name] = ToFloatVector(b->GetTensor());
      }
    }
  }
  r.planned_bytes = t.train_memory_plan().bytes_after;
  return r;
}

void ExpectSameTraining(const StepsRun& a, const StepsRun& b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_EQ(a.losses[i], b.losses[i]) << "step " << i;
  ASSERT_EQ(a.state.size(), b.state.size());
  for (const auto& [name, v] : a.state) {
    ASSERT_TRUE(b.state.count(name)) << name;
    EXPECT_EQ(v, b.state.at(name)) << name;
  }
}

// Three momentum-SGD steps of ResNet-18: the same losses, parameters and running statistics,
// bit for bit, and a smaller memory plan.
// With convolutions ("all"), the same, and less again.
TEST(RecomputeTest, ResNetTrainsBitForBitAsWithoutAndPlansLessMemory) {
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  TrainerOptions o = SyntheticImageOptions({3, 32, 32}, 10, 4);
  o.optimizer.momentum = 0.9f;
  const StepsRun plain = Train(o, h.init_net(), h.net(), 3);
  EXPECT_GT(plain.state.size(), 60u);  // 21 weights, 20 BNs' scale, bias, mean, variance, fc
  o.recompute = "elementwise";
  const StepsRun elementwise = Train(o, h.init_net(), h.net(), 3);
  ExpectSameTraining(plain, elementwise);
  EXPECT_LT(elementwise.planned_bytes, 0.8 * plain.planned_bytes)
      << elementwise.planned_bytes << " vs " << plain.planned_bytes;
  o.recompute = "all";
  const StepsRun all = Train(o, h.init_net(), h.net(), 3);
  ExpectSameTraining(plain, all);
  EXPECT_LT(all.planned_bytes, 0.9 * elementwise.planned_bytes)
      << all.planned_bytes << " vs " << elementwise.planned_bytes;
  o.recompute = "sometimes";
  EXPECT_THROW(Trainer(h.init_net(), h.net(), o), EnforceNotMet);
}

// Mixed precision (the casts are recomputed too) and channels last (the layout transposes).
TEST(RecomputeTest, BFloat16ChannelsLastTrainsBitForBitAsWithout) {
  NetDef init, fwd;
  LoadTinyConvnet(&init, &fwd);
  TrainerOptions o = TinyTrainingOptions(DataType::BFLOAT16, 16);
  o.channels_last = "on";
  const StepsRun plain = Train(o, init, fwd, 4);
  o.recompute = "all";
  const StepsRun rec = Train(o, init, fwd, 4);
  ExpectSameTraining(plain, rec);
}

// FP32 on oneDNN's channel-blocked layout (batch normalization on its kernels, the conversions at
// the pools recomputed too).
TEST(RecomputeTest, BlockedLayoutTrainsBitForBitAsWithout) {
  if (CpuConvChannelBlock() == 0) GTEST_SKIP() << "no oneDNN blocked kernels";
  ModelHelper h("resnet18", "NCHW", false);
  BuildResNet(&h, 18, 10, 32);
  TrainerOptions o = SyntheticImageOptions({3, 32, 32}, 10, 4);
  o.blocked_layout = "on";
  const StepsRun plain = Train(o, h.init_net(), h.net(), 3);
  o.recompute = "all";
  const StepsRun all = Train(o, h.init_net(), h.net(), 3);
  ExpectSameTraining(plain, all);
  EXPECT_LT(all.planned_bytes, 0.8 * plain.planned_bytes)
      << all.planned_bytes << " vs " << plain.planned_bytes;
}

// A blob the caller keeps is not recomputed; an in-place chain is recomputed version by
// version; an op that is not cheap (Dropout draws random numbers) is never run again, nor
// anything that needs its output.
TEST(RecomputeTest, KeepsWhatItMustAndRecomputesEarlierVersions) {
  NetDef step;
  auto add = [&](const std::string& type, std::vector<std::string> in,
                 std::vector<std::string> out) {
    OperatorDef* op = step.add_op();
    op->set_type(type);
    for (const auto& i : in) op->add_input(i);
    for (const auto& o : out) op->add_output(o);
  };
  add("Sigmoid", {"x"}, {"a"});
  add("Tanh", {"a"}, {"a"});  // in place: the gradient reads the Tanh's a
  add("Dropout", {"a"}, {"d", "mask"});
  add("Relu", {"d"}, {"r"});
  add("Sigmoid", {"x"}, {"k"});
  const int begin = step.op_size();
  add("ReluGradient", {"r", "dr"}, {"dd"});
  add("DropoutGradient", {"dd", "mask"}, {"da"});
  add("TanhGradient", {"a", "da"}, {"da2"});
  add("SigmoidGradient", {"k", "dk"}, {"dx"});
  const RecomputeResult r = RecomputeInBackward(step, begin, {"k"}, false);
  // r from d (Dropout's output, kept), a from x through both versions of a.
  EXPECT_EQ(r.blobs, (std::vector<std::string>{"r", "a"}));
  std::vector<std::string> types;
  for (int i = begin; i < r.net.op_size(); ++i) types.push_back(r.net.op(i).type());
  EXPECT_EQ(types, (std::vector<std::string>{"Relu", "ReluGradient", "DropoutGradient", "Sigmoid",
                                              "Tanh", "TanhGradient", "SigmoidGradient"}));
  const OperatorDef& relu = r.net.op(begin);
  EXPECT_EQ(relu.input(0), "d");
  EXPECT_EQ(relu.output(0), std::string("r") + kRecomputedSuffix);
  const OperatorDef& sigmoid = r.net.op(begin + 3);
  const OperatorDef& tanh = r.net.op(begin + 4);
  EXPECT_EQ(sigmoid.input(0), "x");
  EXPECT_EQ(tanh.input(0), sigmoid.output(0));
  EXPECT_NE(sigmoid.output(0), tanh.output(0));
  EXPECT_EQ(r.net.op(begin + 5).input(0), tanh.output(0));
  EXPECT_EQ(r.net.op(begin + 6).input(0), "k");  // kept
  EXPECT_EQ(r.ops_added, 3);
}

TEST(RecomputeTest, RefusesABoundaryOutsideTheNet) {
  NetDef step;
  step.add_op()->set_type("Relu");
  EXPECT_THROW(RecomputeInBackward(step, 2, {}, false), EnforceNotMet);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
