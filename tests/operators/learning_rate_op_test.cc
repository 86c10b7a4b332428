#include <gtest/gtest.h>

#include "core/gradient.h"
#include "operators/optimizer/learning_rate_op.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

GradientWrapper DenseGrad(const std::string& name) {
  GradientWrapper g;
  g.dense = name;
  return g;
}

TEST(LearningRateOpTest, BaseLrTimesPolicy) {
  auto def = MakeOperatorDef("LearningRate", "", {"it"}, {"lr"},
                             {MakeArgument("base_lr", -0.1f), MakeArgument("policy", "step"),
                              MakeArgument("stepsize", 10), MakeArgument("gamma", 0.5f)});
  Workspace ws;
  RunOp(def, {{"it", Int64Scalar(25)}}, &ws);
  const Tensor& lr = ws.GetTensor("lr");
  EXPECT_EQ(lr.dtype(), DataType::FLOAT);
  EXPECT_EQ(lr.ndim(), 0);
  EXPECT_EQ(lr.numel(), 1);
  EXPECT_NEAR(lr.data<float>()[0], -0.025f, 1e-7f);
}

// The rates a net of Iter then LearningRate (with `args`) produces over `steps` steps.
std::vector<float> RatesOverSteps(const std::vector<Argument>& args, int steps) {
  Workspace ws;
  ws.CreateBlob("it");
  auto iter = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  auto lr_op = CreateOperator(MakeOperatorDef("LearningRate", "", {"it"}, {"lr"}, args), &ws);
  std::vector<float> seen;
  for (int i = 0; i < steps; ++i) {
    iter->Run(0);
    lr_op->Run(0);
    seen.push_back(ws.GetTensor("lr").data<float>()[0]);
  }
  return seen;
}

TEST(LearningRateOpTest, FollowsIterInANet) {
  ExpectNear(RatesOverSteps({MakeArgument("base_lr", 0.2f), MakeArgument("policy", "exp"),
                             MakeArgument("gamma", 0.5f)},
                            3),
             {0.1f, 0.05f, 0.025f}, 1e-7f, 0.f);
}

// Iter's first value is 1, so Caffe2's composite gives stage 0 the first n0 steps exactly.
TEST(LearningRateOpTest, CompositeStagesFollowIter) {
  ExpectNear(RatesOverSteps({MakeArgument("base_lr", 0.2f), MakeArgument("policy", "composite"),
                             MakeArgument("sub_policy_num_iters", std::vector<int64_t>{2, 2}),
                             MakeArgument("sub_policy_0_policy", "fixed"),
                             MakeArgument("sub_policy_1_policy", "fixed"),
                             MakeArgument("sub_policy_1_lr_scale", 0.5f)},
                            5),
             {0.2f, 0.2f, 0.1f, 0.1f, 0.1f}, 1e-7f, 0.f);
}

TEST(LearningRateOpTest, CyclicalUsesTheOpsBaseLr) {
  auto def = MakeOperatorDef("LearningRate", "", {"it"}, {"lr"},
                             {MakeArgument("base_lr", -0.1f), MakeArgument("policy", "cyclical"),
                              MakeArgument("max_lr", 0.4f), MakeArgument("stepsize", 4)});
  Workspace ws;
  RunOp(def, {{"it", Int64Scalar(4)}}, &ws);
  EXPECT_NEAR(ws.GetTensor("lr").data<float>()[0], -0.4f, 1e-7f);
  RunOp(def, {{"it", Int64Scalar(2)}}, &ws);
  EXPECT_NEAR(ws.GetTensor("lr").data<float>()[0], -0.25f, 1e-7f);
}

std::string OpError(const OperatorDef& def, const Tensor& iter) {
  Workspace ws;
  try {
    RunOp(def, {{"it", iter}}, &ws);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(LearningRateOpTest, Errors) {
  std::string e = OpError(
      MakeOperatorDef("LearningRate", "", {"it"}, {"lr"}, {MakeArgument("policy", "fixed")}),
      Int64Scalar(0));
  EXPECT_NE(e.find("`base_lr`"), std::string::npos) << e;
  e = OpError(
      MakeOperatorDef("LearningRate", "", {"it"}, {"lr"}, {MakeArgument("base_lr", 0.1f)}),
      Int64Scalar(0));
  EXPECT_NE(e.find("known policies"), std::string::npos) << e;
  auto good = MakeOperatorDef("LearningRate", "", {"it"}, {"lr"},
                              {MakeArgument("base_lr", 0.1f), MakeArgument("policy", "fixed")});
  e = OpError(good, IntTensor({1}, {3}));
  EXPECT_NE(e.find("int64"), std::string::npos) << e;
  e = OpError(good, Int64Scalar(-1));
  EXPECT_NE(e.find("iter must be >= 0, got -1"), std::string::npos) << e;
}

TEST(LearningRateOpTest, NoGradient) {
  auto def = MakeOperatorDef("LearningRate", "", {"it"}, {"lr"});
  EXPECT_TRUE(GetGradientForOp(def, {DenseGrad("lr_grad")}).ops.empty());
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
