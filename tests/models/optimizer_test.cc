#include "models/optimizer.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace testing
}  // namespace halfcaf
