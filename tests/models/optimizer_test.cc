#include "models/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/argument.h"
#include "core/net.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const OperatorDef* FindOp(const NetDef& net, const std::string& name) {
  for (const auto& op : net.op()) {
    if (op.name() == name) return &op;
  }
  return nullptr;
}

TEST(OptimizerTest, UpdatesDecayOnlyWeightsAndRefreshCopies) {
  OptimizerOptions o;
  o.weight_decay = 1e-4f;
  o.momentum = 0.8f;
  o.nesterov = true;
  o.lr_policy = "step";
  o.stepsize = 10;
  std::vector<ParamGradient> params{{"w", "w_fp16_grad", ParamRole::WEIGHT, "w_fp16"},
                                    {"b", "b_grad", ParamRole::BIAS, ""},
                                    {"s", "s_grad", ParamRole::BN_SCALE, ""}};
  NetDef train, init;
  AddMomentumSGD(o, params, "loss_scale", "found_inf", &train, &init);
  ASSERT_EQ(train.op(0).type(), "Iter");
  ASSERT_EQ(train.op(1).type(), "LearningRate");
  EXPECT_EQ(ArgumentHelper(train.op(1)).GetSingleArgument<int64_t>("stepsize", 0), 10);
  const OperatorDef* w = FindOp(train, "update_w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->input_size(), 6);
  EXPECT_EQ(w->output(2), "w_fp16");
  EXPECT_FLOAT_EQ(ArgumentHelper(*w).GetSingleArgument<float>("weight_decay", -1), 1e-4f);
  EXPECT_EQ(ArgumentHelper(*w).GetSingleArgument<int>("nesterov", 0), 1);
  EXPECT_FLOAT_EQ(ArgumentHelper(*FindOp(train, "update_b")).GetSingleArgument<float>("weight_decay", -1), 0.f);
  EXPECT_FLOAT_EQ(ArgumentHelper(*FindOp(train, "update_s")).GetSingleArgument<float>("weight_decay", -1), 0.f);
  EXPECT_EQ(FindOp(train, "update_b")->output_size(), 2);
  o.weight_decay_on_bias_and_bn = true;
  NetDef train2, init2;
  AddMomentumSGD(o, params, "", "", &train2, &init2);
  EXPECT_FLOAT_EQ(ArgumentHelper(*FindOp(train2, "update_b")).GetSingleArgument<float>("weight_decay", -1), 1e-4f);
  EXPECT_EQ(FindOp(train2, "update_b")->input_size(), 4);  // no loss scaling
}

// Runs the built nets: after one step with lr = 0.5, no momentum history, a unit gradient moves
// each parameter by -0.5.
TEST(OptimizerTest, BuiltNetsRun) {
  OptimizerOptions o;
  o.base_lr = 0.5f;
  std::vector<ParamGradient> params{{"w", "w_grad", ParamRole::WEIGHT, ""}};
  NetDef train, init;
  AddMomentumSGD(o, params, "", "", &train, &init);
  Workspace ws;
  SetInput(&ws, "w", FloatTensor({2}, {1.f, 2.f}));
  SetInput(&ws, "w_grad", FloatTensor({2}, {1.f, 1.f}));
  ws.RunNetOnce(init);
  ws.RunNetOnce(train);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("w")), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(ws.GetTensor("iter").data<int64_t>()[0], 1);
}

// LARS: the weight's rate is scaled by trust |w| / (|g| + wd |w|) (Caffe2's Lars, offset 0), then
// momentum SGD with weight decay; the bias keeps the plain rate.
TEST(OptimizerTest, LarsScalesTheWeightsRate) {
  OptimizerOptions o;
  o.type = "lars";
  o.base_lr = 0.1f;
  o.lars_trust = 0.5f;
  o.weight_decay = 0.1f;
  std::vector<ParamGradient> params{{"w", "w_grad", ParamRole::WEIGHT, ""},
                                    {"b", "b_grad", ParamRole::BIAS, ""}};
  NetDef train, init;
  AddOptimizer(o, params, "", "", &train, &init);
  Workspace ws;
  SetInput(&ws, "w", FloatTensor({2}, {3.f, 4.f}));       // |w| = 5
  SetInput(&ws, "w_grad", FloatTensor({2}, {0.6f, 0.8f}));  // |g| = 1
  SetInput(&ws, "b", FloatTensor({1}, {1.f}));
  SetInput(&ws, "b_grad", FloatTensor({1}, {1.f}));
  ws.RunNetOnce(init);
  ws.RunNetOnce(train);
  const double rate = 0.1 * 0.5 * 5 / (1 + 0.1 * 5);  // lr * trust |w| / (|g| + wd |w|)
  const std::vector<float> w = ToFloatVector(ws.GetTensor("w"));
  EXPECT_NEAR(w[0], 3 - rate * (0.6 + 0.1 * 3), 1e-6);
  EXPECT_NEAR(w[1], 4 - rate * (0.8 + 0.1 * 4), 1e-6);
  EXPECT_NEAR(ToFloatVector(ws.GetTensor("b"))[0], 1 - 0.1, 1e-6);
}

// Every optimizer type builds nets that run and move the parameter against its gradient; an
// unknown type is refused naming the known ones.
TEST(OptimizerTest, EveryTypeRuns) {
  for (const char* type : kOptimizerTypes) {
    SCOPED_TRACE(type);
    OptimizerOptions o;
    o.type = type;
    o.base_lr = 0.01f;
    NetDef train, init;
    AddOptimizer(o, {{"w", "w_grad", ParamRole::WEIGHT, "w_fp16"}}, "scale", "found_inf", &train,
                 &init);
    Workspace ws;
    SetInput(&ws, "w", FloatTensor({2}, {1.f, -1.f}));
    SetInput(&ws, "w_grad", ToHalf(FloatTensor({2}, {8.f, -8.f})));
    SetInput(&ws, "scale", FloatTensor({}, {8.f}));
    SetInput(&ws, "found_inf", FloatTensor({}, {0.f}));
    ws.RunNetOnce(init);
    ws.RunNetOnce(train);
    const std::vector<float> w = ToFloatVector(ws.GetTensor("w"));
    EXPECT_LT(w[0], 1.f);
    EXPECT_GT(w[1], -1.f);
    EXPECT_EQ(ToFloatVector(ws.GetTensor("w_fp16")),
              ToFloatVector(RoundThroughHalf(ws.GetTensor("w"))));
  }
  OptimizerOptions bad;
  bad.type = "adamax";
  NetDef train, init;
  try {
    AddOptimizer(bad, {{"w", "w_grad", ParamRole::WEIGHT, ""}}, "", "", &train, &init);
    ADD_FAILURE() << "adamax accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("unknown optimizer 'adamax' (sgd, momentum"),
              std::string::npos) << e.what();
  }
}

// The cosine policy decays base_lr to min_lr over max_iter iterations (Caffe2's cosine with
// max_lr 1, min_lr as a multiplier of base_lr).
TEST(OptimizerTest, CosineReachesMinLr) {
  OptimizerOptions o;
  o.base_lr = 0.1f;
  o.lr_policy = "cosine";
  o.max_iter = 4;
  o.min_lr = 0.02f;
  NetDef train, init;
  AddOptimizer(o, {{"w", "w_grad", ParamRole::WEIGHT, ""}}, "", "", &train, &init);
  Workspace ws;
  SetInput(&ws, "w", FloatTensor({1}, {1.f}));
  SetInput(&ws, "w_grad", FloatTensor({1}, {0.f}));
  ws.RunNetOnce(init);
  for (int t = 1; t <= 3; ++t) {
    ws.RunNetOnce(train);
    const double want = 0.02 + 0.5 * (0.1 - 0.02) * (1 + std::cos(M_PI * t / 4));
    EXPECT_NEAR(ws.GetTensor("lr").data<float>()[0], want, 1e-7) << "iteration " << t;
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
