// The inference plan (models/inference_optimize.h): ResNet-50 and LeNet give the unoptimized
// net's outputs within 1e-5 relative; the fusion and folding rules on small nets, including the
// cases where they must not apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/context.h"
#include "core/net.h"
#include "core/workspace.h"
#include "models/inference_optimize.h"
#include "models/zoo.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

bool HaveDnnl() {
  return OperatorRegistry::Find(DeviceType::CPU, "ConvFusion", "DNNL") != nullptr;
}

int CountType(const NetDef& net, const std::string& type) {
  return static_cast<int>(std::count_if(net.op().begin(), net.op().end(),
                                        [&](const OperatorDef& op) { return op.type() == type; }));
}

// Gives every test-mode SpatialBN random statistics, so that folding them is visible.
void RandomizeBatchNorm(const NetDef& net, Workspace* ws, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pos(0.5f, 1.5f), sym(-0.3f, 0.3f);
  for (const auto& op : net.op()) {
    if (op.type() != "SpatialBN") continue;
    for (int i = 1; i <= 4; ++i) {
      float* p = ws->GetBlob(op.input(i))->GetMutableTensor(Device())->mutable_data<float>();
      const int64_t n = ws->GetTensor(op.input(i)).numel();
      for (int64_t k = 0; k < n; ++k) p[k] = (i == 1 || i == 4) ? pos(rng) : sym(rng);
    }
  }
}

// Runs init + forward with and without the plan on the same data; returns the max relative
// difference of `fetch` (max |a - b| / max |b|) and the optimized net in *optimized.
double PlanDifference(const NetDef& init, const NetDef& net, const std::vector<int64_t>& data_dims,
                      int num_classes, const std::string& fetch, InferenceReport* report,
                      NetDef* optimized, const std::set<std::string>& keep = {}) {
  const Tensor data = RandomTensor(data_dims, 17);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < data_dims[0]; ++i) labels.push_back(static_cast<int32_t>(i % num_classes));
  const Tensor label = IntTensor({data_dims[0]}, labels);
  std::vector<float> out[2];
  for (int plan = 0; plan < 2; ++plan) {
    Workspace ws;
    SetGlobalSeed(3);  // the same parameters in both runs
    ws.RunNetOnce(init);
    RandomizeBatchNorm(net, &ws, 5);
    SetInput(&ws, kZooData, data);
    SetInput(&ws, kZooLabel, label);
    NetDef run = net;
    if (plan == 1) {
      InferenceOptions o;
      o.keep = keep;
      o.keep.insert(fetch);
      *report = OptimizeForInference(&run, &ws, o);
      *optimized = run;
    }
    NetBase* n = ws.CreateNet(run);
    n->Run();
    n->Run();  // the second run uses the cached, reordered filters
    out[plan] = ToFloatVector(ws.GetTensor(fetch));
  }
  EXPECT_EQ(out[0].size(), out[1].size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < out[0].size() && i < out[1].size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(out[1][i] - out[0][i])));
    scale = std::max(scale, static_cast<double>(std::fabs(out[0][i])));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(InferenceOptimizeTest, ResNet50MatchesTheUnoptimizedNet) {
  ModelHelper m("resnet50", "NCHW", true);
  BuildResNet(&m, 50, 10, 32);
  InferenceReport r;
  NetDef opt;
  const double rel = PlanDifference(m.init_net(), m.net(), {2, 3, 32, 32}, 10, "pred", &r, &opt);
  EXPECT_LE(rel, 1e-5);
  ASSERT_TRUE(r.applied) << r.reason;
  EXPECT_EQ(r.bn_folded, 53);
  EXPECT_EQ(r.conv_fusion, 53);
  EXPECT_EQ(r.sum_fused, 16);
  EXPECT_EQ(r.relu_fused, 49);  // the stem's, 2 per block (a and b), and the 16 block sums
  EXPECT_EQ(CountType(opt, "SpatialBN"), 0);
  EXPECT_EQ(CountType(opt, "Relu"), 0);
  EXPECT_EQ(CountType(opt, "Add") + CountType(opt, "Sum"), 0);
  EXPECT_EQ(CountType(opt, "ConvFusion"), 53);
  if (HaveDnnl()) {
    // One conversion in (the data) and one out (before the FC).
    EXPECT_EQ(r.transposes, 2);
    EXPECT_EQ(CountType(opt, "NCHW2NHWC"), 1);
    EXPECT_EQ(CountType(opt, "NHWC2NCHW"), 1);
  }
}

TEST(InferenceOptimizeTest, ResNet50SoftmaxAndLossToo) {
  ModelHelper m("resnet50", "NCHW", true);
  BuildResNet(&m, 50, 10, 32);
  InferenceReport r;
  NetDef opt;
  EXPECT_LE(PlanDifference(m.init_net(), m.net(), {2, 3, 32, 32}, 10, "softmax", &r, &opt), 1e-5);
}

TEST(InferenceOptimizeTest, LeNetMatchesTheUnoptimizedNet) {
  ModelHelper m("lenet", "NCHW", true);
  BuildLeNet(&m, 10, 1, 28);
  InferenceReport r;
  NetDef opt;
  EXPECT_LE(PlanDifference(m.init_net(), m.net(), {3, 1, 28, 28}, 10, "pred", &r, &opt), 1e-5);
  ASSERT_TRUE(r.applied) << r.reason;
  EXPECT_EQ(r.bn_folded, 0);
  EXPECT_EQ(r.conv_fusion, 2);  // conv1 and conv2 are followed by pooling: type 0
  EXPECT_EQ(r.relu_fused, 0);
  if (HaveDnnl()) {
    EXPECT_EQ(CountType(opt, "NHWC2NCHW"), 1);  // before fc3: LeNet's pool2 is 4x4, not 1x1
  }
}

TEST(InferenceOptimizeTest, AFetchedActivationKeepsItsValueAndLayout) {
  // res2_0_branch2a (the BN output, after an in-place Relu) is fetched: it stays NCHW with the
  // unoptimized net's values, and what feeds it is not fused away.
  ModelHelper m("resnet50", "NCHW", true);
  BuildResNet(&m, 50, 10, 32);
  InferenceReport r;
  NetDef opt;
  for (const std::string fetch : {"res2_0_branch2a_bn", "res3_1_sum", "pool1"}) {
    SCOPED_TRACE(fetch);
    EXPECT_LE(PlanDifference(m.init_net(), m.net(), {2, 3, 32, 32}, 10, fetch, &r, &opt), 1e-5);
    ASSERT_TRUE(r.applied) << r.reason;
  }
}

// conv -> SpatialBN -> Relu, with a choice of extra readers and BN mode.
NetDef SmallNet(bool bn_is_test, bool extra_reader_of_conv) {
  NetDef net;
  net.set_name("small");
  const std::vector<Argument> conv_args{MakeArgument("kernel", 3), MakeArgument("pad", 1)};
  *net.add_op() = MakeOperatorDef("Conv", "conv", {"data", "w", "b"}, {"c"}, conv_args);
  if (bn_is_test) {
    *net.add_op() = MakeOperatorDef("SpatialBN", "bn", {"c", "s", "sb", "rm", "rv"}, {"n"},
                                    {MakeArgument("is_test", 1)});
  } else {
    *net.add_op() =
        MakeOperatorDef("SpatialBN", "bn", {"c", "s", "sb", "rm", "rv"},
                        {"n", "rm", "rv", "sm", "siv"}, {MakeArgument("is_test", 0)});
  }
  *net.add_op() = MakeOperatorDef("Relu", "relu", {"n"}, {"r"});
  if (extra_reader_of_conv) *net.add_op() = MakeOperatorDef("Sigmoid", "sig", {"c"}, {"other"});
  net.add_external_output("r");
  return net;
}

void FillSmallNet(Workspace* ws) {
  SetInput(ws, "data", RandomTensor({2, 4, 6, 6}, 1));
  SetInput(ws, "w", RandomTensor({8, 4, 3, 3}, 2));
  SetInput(ws, "b", RandomTensor({8}, 3));
  SetInput(ws, "s", RandomTensor({8}, 4, 0.5f, 1.5f));
  SetInput(ws, "sb", RandomTensor({8}, 5));
  SetInput(ws, "rm", RandomTensor({8}, 6));
  SetInput(ws, "rv", RandomTensor({8}, 7, 0.5f, 1.5f));
}

std::vector<float> RunSmall(const NetDef& net, bool optimize, InferenceReport* r,
                            NetDef* optimized = nullptr) {
  Workspace ws;
  FillSmallNet(&ws);
  NetDef run = net;
  if (optimize) *r = OptimizeForInference(&run, &ws, InferenceOptions());
  if (optimized) *optimized = run;
  ws.RunNetOnce(run);
  return ToFloatVector(ws.GetTensor("r"));
}

TEST(InferenceOptimizeTest, ConvBatchNormReluBecomesOneOp) {
  InferenceReport r;
  NetDef opt;
  const NetDef net = SmallNet(true, false);
  const std::vector<float> want = RunSmall(net, false, &r);
  ExpectNear(RunSmall(net, true, &r, &opt), want, 1e-5f, 1e-5f);
  EXPECT_EQ(r.bn_folded, 1);
  EXPECT_EQ(r.relu_fused, 1);
  EXPECT_EQ(CountType(opt, "ConvFusion"), 1);
  EXPECT_EQ(CountType(opt, "SpatialBN") + CountType(opt, "Relu"), 0);
  // The folded filter and bias replaced w and b, which no op reads any more.
  EXPECT_EQ(r.params_dropped, 6);  // w, b, s, sb, rm, rv
}

TEST(InferenceOptimizeTest, AConvOutputReadTwiceIsNotFolded) {
  InferenceReport r;
  NetDef opt;
  const NetDef net = SmallNet(true, true);
  const std::vector<float> want = RunSmall(net, false, &r);
  ExpectNear(RunSmall(net, true, &r, &opt), want, 1e-5f, 1e-5f);
  ASSERT_TRUE(r.applied);
  EXPECT_EQ(r.bn_folded, 0);
  EXPECT_EQ(CountType(opt, "SpatialBN"), 1);
}

TEST(InferenceOptimizeTest, TrainingNetsAreLeftAlone) {
  InferenceReport r;
  NetDef opt;
  // Training-mode BN (is_test 0) makes a training net, whatever else it does.
  RunSmall(SmallNet(false, false), true, &r, &opt);
  EXPECT_FALSE(r.applied);
  EXPECT_NE(r.reason.find("op 1 (SpatialBN) runs in training mode"), std::string::npos)
      << r.reason;
  EXPECT_EQ(CountType(opt, "Conv"), 1);

  // The plan's reason for refusing the small net with `extra` appended.
  auto refusal = [](const OperatorDef& extra, const std::string& bn_is_test = "") {
    NetDef net = SmallNet(true, false);
    *net.add_op() = extra;
    for (auto& bn : *net.mutable_op()) {
      if (bn.type() == "SpatialBN" && bn_is_test == "0") SetArgument(&bn, "is_test", 0);
    }
    Workspace ws;
    FillSmallNet(&ws);
    const InferenceReport report = OptimizeForInference(&net, &ws, InferenceOptions());
    EXPECT_FALSE(report.applied);
    return report.reason;
  };
  // So does every other op with an is_test argument left at 0 (Dropout draws its mask), and a
  // SpatialBN with is_test given as 0 rather than left out.
  const OperatorDef dropout = MakeOperatorDef("Dropout", "", {"r"}, {"r_drop", "r_mask"});
  EXPECT_NE(refusal(dropout).find("op 3 (Dropout) runs in training mode"), std::string::npos)
      << refusal(dropout);
  const OperatorDef test_dropout = MakeOperatorDef("Dropout", "", {"r"}, {"r_drop"},
                                                   {MakeArgument("is_test", 1)});
  EXPECT_NE(refusal(test_dropout, "0").find("op 1 (SpatialBN) runs in training mode"),
            std::string::npos);
  // An update without a training-mode op (a running average kept in place), a gradient op.
  EXPECT_NE(refusal(MakeOperatorDef("Scale", "", {"rm"}, {"rm"})).find("writes 'rm'"),
            std::string::npos);
  EXPECT_NE(refusal(MakeOperatorDef("ReluGradient", "", {"r", "r"}, {"r_grad"})).find(
                "gradient op"),
            std::string::npos);
}

TEST(InferenceOptimizeTest, AnAddThatBroadcastsIsNotFused) {
  // conv (2, 8, 6, 6) + a (8, 1, 1) bias-like tensor, NumPy-broadcast: stays an Add.
  NetDef net;
  net.set_name("bcast");
  *net.add_op() = MakeOperatorDef("Conv", "conv", {"data", "w", "b"}, {"c"},
                                  {MakeArgument("kernel", 3), MakeArgument("pad", 1)});
  *net.add_op() = MakeOperatorDef("Add", "add", {"c", "t"}, {"r"});
  net.add_external_output("r");
  std::vector<float> out[2];
  InferenceReport r;
  for (int plan = 0; plan < 2; ++plan) {
    Workspace ws;
    FillSmallNet(&ws);
    SetInput(&ws, "t", RandomTensor({8, 1, 1}, 9));
    NetDef run = net;
    if (plan) r = OptimizeForInference(&run, &ws, InferenceOptions());
    ws.RunNetOnce(run);
    out[plan] = ToFloatVector(ws.GetTensor("r"));
    if (plan) EXPECT_EQ(CountType(run, "Add"), 1);
  }
  ExpectNear(out[1], out[0], 1e-5f, 1e-5f);
  EXPECT_EQ(r.sum_fused, 0);
}

// An Add with its ReLU fused in (halfcaf's fuse_relu, from a training step) keeps it: the plan
// does not take it into the convolution as a plain sum.
TEST(InferenceOptimizeTest, AnAddWithItsReluFusedInKeepsIt) {
  NetDef net;
  net.set_name("add_relu");
  *net.add_op() = MakeOperatorDef("Conv", "conv", {"data", "w", "b"}, {"c"},
                                  {MakeArgument("kernel", 3), MakeArgument("pad", 1)});
  *net.add_op() = MakeOperatorDef("Add", "add", {"c", "t"}, {"r"}, {MakeArgument("fuse_relu", 1)});
  net.add_external_output("r");
  std::vector<float> out[2];
  for (int plan = 0; plan < 2; ++plan) {
    Workspace ws;
    FillSmallNet(&ws);
    SetInput(&ws, "t", RandomTensor({2, 8, 6, 6}, 9));
    NetDef run = net;
    if (plan) OptimizeForInference(&run, &ws, InferenceOptions());
    ws.RunNetOnce(run);
    out[plan] = ToFloatVector(ws.GetTensor("r"));
  }
  ExpectNear(out[1], out[0], 1e-5f, 1e-5f);
  int negatives = 0;
  for (float v : out[0]) negatives += v < 0.f;
  EXPECT_EQ(negatives, 0);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
