#include <gtest/gtest.h>

#include <cmath>

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

// Multipliers of the policy described by `args` at the given iterations.
std::vector<double> Multipliers(const std::vector<Argument>& args,
                                const std::vector<int64_t>& iters) {
  OperatorDef def = MakeOperatorDef("LearningRate", "", {"it"}, {"lr"}, args);
  ArgumentHelper helper(def);
  LearningRatePolicy policy(helper);
  std::vector<double> out;
  for (int64_t it : iters) out.push_back(policy(it));
  return out;
}

void ExpectMultipliers(const std::vector<Argument>& args, const std::vector<int64_t>& iters,
                       const std::vector<double>& want) {
  auto got = Multipliers(args, iters);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-6) << "iteration " << iters[i];
  }
}

std::string PolicyError(const std::vector<Argument>& args) {
  try {
    Multipliers(args, {0});
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(LearningRatePolicyTest, Fixed) {
  ExpectMultipliers({MakeArgument("policy", "fixed")}, {0, 5, 1000}, {1, 1, 1});
}

TEST(LearningRatePolicyTest, Step) {
  ExpectMultipliers({MakeArgument("policy", "step"), MakeArgument("stepsize", 10),
                     MakeArgument("gamma", 0.5f)},
                    {0, 9, 10, 19, 25}, {1, 1, 0.5, 0.5, 0.25});
}

TEST(LearningRatePolicyTest, Exp) {
  ExpectMultipliers({MakeArgument("policy", "exp"), MakeArgument("gamma", 0.9f)}, {0, 1, 3},
                    {1, 0.9, 0.729});
}

TEST(LearningRatePolicyTest, Inv) {
  // (1 + 0.1 * iter)^-0.5
  ExpectMultipliers({MakeArgument("policy", "inv"), MakeArgument("gamma", 0.1f),
                     MakeArgument("power", 0.5f)},
                    {0, 10, 30}, {1, 0.70710678, 0.5});
}

TEST(LearningRatePolicyTest, Poly) {
  // (1 - iter/100)^2, then 0.
  ExpectMultipliers({MakeArgument("policy", "poly"), MakeArgument("power", 2.f),
                     MakeArgument("max_iter", 100)},
                    {0, 50, 90, 100, 150}, {1, 0.25, 0.01, 0, 0});
}

TEST(LearningRatePolicyTest, LinearWarmup) {
  ExpectMultipliers({MakeArgument("policy", "linearWarmup"),
                     MakeArgument("start_multiplier", 0.2f), MakeArgument("num_iter", 4)},
                    {0, 1, 2, 3, 4, 10}, {0.2, 0.4, 0.6, 0.8, 1, 1});
}

TEST(LearningRatePolicyTest, ConstantWarmup) {
  ExpectMultipliers({MakeArgument("policy", "constantWarmup"), MakeArgument("multiplier", 0.1f),
                     MakeArgument("num_iter", 3)},
                    {0, 2, 3, 50}, {0.1, 0.1, 1, 1});
  // Default multiplier 0.5.
  ExpectMultipliers({MakeArgument("policy", "constantWarmup"), MakeArgument("num_iter", 2)},
                    {0, 1, 2}, {0.5, 0.5, 1});
}

TEST(LearningRatePolicyTest, Alter) {
  ExpectMultipliers({MakeArgument("policy", "alter"), MakeArgument("active_period", 2),
                     MakeArgument("inactive_period", 3)},
                    {0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 0, 0, 0, 1, 1, 0});
  ExpectMultipliers({MakeArgument("policy", "alter"), MakeArgument("active_first", false),
                     MakeArgument("active_period", 2), MakeArgument("inactive_period", 3)},
                    {0, 1, 2, 3, 4, 5}, {0, 0, 0, 1, 1, 0});
}

TEST(LearningRatePolicyTest, Hill) {
  // Warm-up 0.5 -> 1 over 2 iterations, then max(0.2, 1 / (1 + (iter - 2))).
  ExpectMultipliers({MakeArgument("policy", "hill"), MakeArgument("num_iter", 2),
                     MakeArgument("start_multiplier", 0.5f), MakeArgument("gamma", 1.f),
                     MakeArgument("power", 1.f), MakeArgument("end_multiplier", 0.2f)},
                    {0, 1, 2, 3, 5, 10}, {0.5, 0.75, 1, 0.5, 0.25, 0.2});
}

TEST(LearningRatePolicyTest, Multistep) {
  ExpectMultipliers({MakeArgument("policy", "multistep"),
                     MakeArgument("stepsizes", std::vector<int64_t>{3, 5}),
                     MakeArgument("gamma", 0.1f)},
                    {0, 2, 3, 4, 5, 100}, {1, 1, 0.1, 0.1, 0.01, 0.01});
}

TEST(LearningRatePolicyTest, BadArguments) {
  std::string e = PolicyError({});
  EXPECT_NE(e.find("`policy`"), std::string::npos) << e;
  EXPECT_NE(e.find("linearWarmup"), std::string::npos) << e;
  e = PolicyError({MakeArgument("policy", "cosine")});
  EXPECT_NE(e.find("unknown LearningRate policy 'cosine'"), std::string::npos) << e;
  EXPECT_NE(e.find("fixed, step, exp"), std::string::npos) << e;
  EXPECT_NE(e.find("multistep"), std::string::npos) << e;
  e = PolicyError({MakeArgument("policy", "step"), MakeArgument("gamma", 0.5f)});
  EXPECT_NE(e.find("stepsize > 0, got 0"), std::string::npos) << e;
  e = PolicyError({MakeArgument("policy", "exp")});
  EXPECT_NE(e.find("gamma > 0"), std::string::npos) << e;
  e = PolicyError({MakeArgument("policy", "poly"), MakeArgument("power", 1.f)});
  EXPECT_NE(e.find("max_iter > 0, got -1"), std::string::npos) << e;
  e = PolicyError({MakeArgument("policy", "alter")});
  EXPECT_NE(e.find("active_period"), std::string::npos) << e;
  e = PolicyError({MakeArgument("policy", "multistep"), MakeArgument("gamma", 0.1f)});
  EXPECT_NE(e.find("stepsizes"), std::string::npos) << e;
  e = PolicyError({MakeArgument("policy", "multistep"), MakeArgument("gamma", 0.1f),
                   MakeArgument("stepsizes", std::vector<int64_t>{5, 3})});
  EXPECT_NE(e.find("increasing order, got [5, 3]"), std::string::npos) << e;
}

Tensor Int64Scalar(int64_t v) {
  Tensor t({1}, DataType::INT64);
  t.mutable_data<int64_t>()[0] = v;
  return t;
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

TEST(LearningRateOpTest, FollowsIterInANet) {
  Workspace ws;
  ws.CreateBlob("it");
  auto iter = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  auto lr_op = CreateOperator(
      MakeOperatorDef("LearningRate", "", {"it"}, {"lr"},
                      {MakeArgument("base_lr", 0.2f), MakeArgument("policy", "exp"),
                       MakeArgument("gamma", 0.5f)}),
      &ws);
  std::vector<float> seen;
  for (int i = 0; i < 3; ++i) {
    iter->Run(0);
    lr_op->Run(0);
    seen.push_back(ws.GetTensor("lr").data<float>()[0]);
  }
  ExpectNear(seen, {0.1f, 0.05f, 0.025f}, 1e-7f, 0.f);
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

namespace halfcaf {
namespace {

TEST(LearningRateWarmupTest, RampsAnyPolicy) {
  OperatorDef def = MakeOperatorDef("LearningRate", "", {"it"}, {"lr"},
                                    {MakeArgument("policy", "step"), MakeArgument("stepsize", 10),
                                     MakeArgument("gamma", 0.5f), MakeArgument("base_lr", 1.f),
                                     MakeArgument("warmup_iters", 4),
                                     MakeArgument("warmup_start", 0.2f)});
  LearningRatePolicy policy{ArgumentHelper(def)};
  EXPECT_NEAR(policy(0), 0.2, 1e-6);
  EXPECT_NEAR(policy(2), 0.6, 1e-6);
  EXPECT_NEAR(policy(4), 1.0, 1e-6);
  EXPECT_NEAR(policy(10), 0.5, 1e-6);
}

}  // namespace
}  // namespace halfcaf
