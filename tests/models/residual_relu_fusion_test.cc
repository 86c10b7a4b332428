// The residual ReLU fusion (models/residual_relu_fusion.h): ResNet-18's eight Add + Relu pairs and
// the Sums before its ReluGradients become one op each, and three steps of momentum SGD train bit
// for bit as without (every loss and parameter), in float32 and in bfloat16 mixed precision; what
// it leaves alone, on small nets.
#include "models/residual_relu_fusion.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/context.h"
#include "core/workspace.h"
#include "models/job_runner.h"
#include "models/model_helper.h"
#include "models/passes/passes.h"
#include "models/training_job.h"
#include "models/zoo.h"
#include "operators/nn/channel_block.h"
#include "tests/util/op_test_util.h"
#include "tests/util/resnet_job.h"

namespace halfcaf {
namespace testing {
namespace {

int CountType(const NetDef& net, const std::string& type, int from = 0, int to = -1) {
  int n = 0;
  if (to < 0) to = net.op_size();
  for (int i = from; i < to; ++i) n += net.op(i).type() == type;
  return n;
}

// float32 on the channel-blocked layout with BN + ReLU fused, as the trainer runs it; bfloat16
// mixed precision channels last (its BN on oneDNN, the sums and ReLUs in bfloat16).
TrainedJob TrainResNet18(bool fuse, DataType precision) {
  return TrainResNet18Job(precision, [&](TrainingJob* job) {
    if (precision == DataType::FLOAT) {
      job->channel_block = CpuConvChannelBlock();
      job->fuse_bn_relu = true;
    } else {
      job->channels_last = true;
      job->nchw_filters = true;
    }
    job->fuse_residual_relu = fuse;
  });
}

class ResidualReluFusionTrainingTest : public ::testing::TestWithParam<DataType> {};

TEST_P(ResidualReluFusionTrainingTest, ResNetTrainsBitForBitAsWithout) {
  const TrainedJob plain = TrainResNet18(false, GetParam());
  const TrainedJob fused = TrainResNet18(true, GetParam());
  const JobNet& p = plain.job.nets[0];
  const JobNet& f = fused.job.nets[0];
  EXPECT_EQ(fused.job.residual_relu_fused, 8);
  // Every block's output but the last feeds two ops, so its gradient is a Sum: 7 go into the
  // ReluGradient after them, the eighth (pool1's output) into the max pool's gradient.
  EXPECT_EQ(fused.job.residual_sums_fused, 7);
  EXPECT_EQ(CountType(f.step, "Relu"), CountType(p.step, "Relu") - 8);
  EXPECT_EQ(CountType(f.step, "Sum"), CountType(p.step, "Sum") - 7);
  EXPECT_EQ(f.backward_begin, p.backward_begin - 8);
  EXPECT_EQ(CountType(f.step, "Add", 0, f.backward_begin), 8);
  EXPECT_EQ(CountType(f.step, "ReluGradient", f.backward_begin),
            CountType(p.step, "ReluGradient", p.backward_begin));
  // float32: the other ReLUs went into the batch normalizations (BN + ReLU fusion).
  if (GetParam() == DataType::FLOAT) {
    EXPECT_EQ(CountType(f.step, "ReluGradient", f.backward_begin), 8);
  }

  ExpectSameTraining(plain, fused);
}

INSTANTIATE_TEST_SUITE_P(Precisions, ResidualReluFusionTrainingTest,
                         ::testing::Values(DataType::FLOAT, DataType::BFLOAT16),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                           return std::string(DataTypeName(info.param));
                         });

OperatorDef Op(const std::string& type, const std::vector<std::string>& in,
               const std::vector<std::string>& out, std::vector<Argument> args = {}) {
  return MakeOperatorDef(type, "", in, out, std::move(args));
}

// A forward part `fwd` and a backward part `bwd`, fused; returns the result.
ResidualReluFusion Fuse(const std::vector<OperatorDef>& fwd, const std::vector<OperatorDef>& bwd,
                        const std::set<std::string>& keep = {},
                        const std::map<std::string, std::vector<int64_t>>& dims = {},
                        const std::vector<std::string>& outputs = {}) {
  NetDef step;
  for (const auto& op : fwd) *step.add_op() = op;
  for (const auto& op : bwd) *step.add_op() = op;
  for (const auto& o : outputs) step.add_external_output(o);
  return FuseResidualRelu(step, static_cast<int>(fwd.size()), keep, dims);
}

TEST(ResidualReluFusionTest, FusesInPlaceAndNewOutputPairs) {
  // In place, as Caffe2's ResNet writes it.
  ResidualReluFusion r =
      Fuse({Op("Add", {"a", "b"}, {"s"}), Op("Relu", {"s"}, {"s"})},
           {Op("Sum", {"g1", "g2"}, {"t"}), Op("ReluGradient", {"s", "t"}, {"t"})});
  EXPECT_EQ(r.adds, 1);
  EXPECT_EQ(r.sums, 1);
  ASSERT_EQ(r.net.op_size(), 2);
  EXPECT_EQ(r.backward_begin, 1);
  EXPECT_EQ(r.net.op(0).output(0), "s");
  EXPECT_EQ(ArgumentHelper(r.net.op(0)).GetSingleArgument<int>("fuse_relu", 0), 1);
  EXPECT_EQ(std::vector<std::string>(r.net.op(1).input().begin(), r.net.op(1).input().end()),
            (std::vector<std::string>{"s", "g1", "g2"}));
  // A new output, whose old name nothing reads afterwards; a Sum of three, whose output a later
  // op overwrites.
  r = Fuse({Op("Add", {"a", "b"}, {"s"}), Op("Relu", {"s"}, {"y"}), Op("FC", {"y", "w"}, {"z"})},
           {Op("Sum", {"g1", "g2", "g3"}, {"t"}), Op("ReluGradient", {"y", "t"}, {"u"}),
            Op("Copy", {"u"}, {"t"})});
  EXPECT_EQ(r.adds, 1);
  EXPECT_EQ(r.sums, 1);
  EXPECT_EQ(r.net.op(0).output(0), "y");
  EXPECT_EQ(r.net.op(2).input_size(), 4);
}

TEST(ResidualReluFusionTest, LeavesWhatItCannotFuse) {
  const auto add = Op("Add", {"a", "b"}, {"s"});
  const auto relu = Op("Relu", {"s"}, {"y"});
  // S read again (by the FC, or kept, or an external output), or not first by the Relu.
  EXPECT_EQ(Fuse({add, relu, Op("FC", {"s", "w"}, {"z"})}, {}).adds, 0);
  EXPECT_EQ(Fuse({add, relu}, {}, {"s"}).adds, 0);
  EXPECT_EQ(Fuse({add, relu}, {}, {}, {}, {"s"}).adds, 0);
  EXPECT_EQ(Fuse({add, Op("Sigmoid", {"s"}, {"q"}), relu}, {}).adds, 0);
  // S read in the backward part (the Relu not in place).
  EXPECT_EQ(Fuse({add, relu}, {Op("Copy", {"s"}, {"c"})}).adds, 0);
  // The legacy broadcast, inputs known to differ in shape, another engine, a Relu on the GPU.
  EXPECT_EQ(Fuse({Op("Add", {"a", "b"}, {"s"}, {MakeArgument("broadcast", 1)}), relu}, {}).adds, 0);
  EXPECT_EQ(Fuse({add, relu}, {}, {}, {{"a", {2, 3}}, {"b", {3}}}).adds, 0);
  EXPECT_EQ(Fuse({add, relu}, {}, {}, {{"a", {2, 3}}, {"b", {2, 3}}}).adds, 1);
  OperatorDef gpu_relu = relu;
  gpu_relu.mutable_device_option()->set_device_type(1);
  EXPECT_EQ(Fuse({add, gpu_relu}, {}).adds, 0);
  // The Relu's output is an input of the Add, or touched in between.
  EXPECT_EQ(Fuse({add, Op("Relu", {"s"}, {"a"})}, {}).adds, 0);
  EXPECT_EQ(Fuse({add, Op("Copy", {"y"}, {"c"}), relu}, {}).adds, 0);

  const auto sum = Op("Sum", {"g1", "g2"}, {"t"});
  const auto grad = Op("ReluGradient", {"y", "t"}, {"t"});
  EXPECT_EQ(Fuse({}, {sum, grad}).sums, 1);
  // T read again or outliving the net when the ReluGradient writes elsewhere (the update may read
  // it); kept.
  const auto elsewhere = Op("ReluGradient", {"y", "t"}, {"u"});
  EXPECT_EQ(Fuse({}, {sum, elsewhere, Op("Copy", {"t"}, {"c"})}).sums, 0);
  EXPECT_EQ(Fuse({}, {sum, elsewhere}).sums, 0);
  EXPECT_EQ(Fuse({}, {sum, grad}, {"t"}).sums, 0);
  // An input of the Sum written in between; the Sum's output as the ReluGradient's Y.
  EXPECT_EQ(Fuse({}, {sum, Op("Copy", {"x"}, {"g2"}), grad}).sums, 0);
  EXPECT_EQ(Fuse({}, {sum, Op("ReluGradient", {"t", "y"}, {"u"})}).sums, 0);
  // A Sum of one input; a ReluGradient already summing.
  EXPECT_EQ(Fuse({}, {Op("Sum", {"g1"}, {"t"}), grad}).sums, 0);
  EXPECT_EQ(Fuse({}, {sum, Op("ReluGradient", {"y", "t", "g3"}, {"u"})}).sums, 0);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
