#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef WeightedSumDef(int pairs, const std::string& out = "Y",
                           std::vector<Argument> args = {}) {
  std::vector<std::string> in;
  for (int i = 0; i < pairs; ++i) {
    in.push_back("X" + std::to_string(i));
    in.push_back("w" + std::to_string(i));
  }
  return MakeOperatorDef("WeightedSum", "", in, {out}, std::move(args));
}

std::map<std::string, Tensor> Inputs(int pairs, const std::vector<int64_t>& dims, uint32_t seed) {
  std::map<std::string, Tensor> in;
  for (int i = 0; i < pairs; ++i) {
    in["X" + std::to_string(i)] = RandomTensor(dims, seed + 2 * i);
    in["w" + std::to_string(i)] = RandomTensor({1}, seed + 2 * i + 1, -2.f, 2.f);
  }
  return in;
}

std::vector<float> Naive(const std::map<std::string, Tensor>& in, int pairs) {
  std::vector<float> y(in.at("X0").numel(), 0.f);
  for (int i = 0; i < pairs; ++i) {
    const float w = in.at("w" + std::to_string(i)).data<float>()[0];
    std::vector<float> x = ToFloatVector(in.at("X" + std::to_string(i)));
    for (size_t j = 0; j < y.size(); ++j) y[j] += w * x[j];
  }
  return y;
}

std::string ErrorOf(const OperatorDef& def, const std::map<std::string, Tensor>& in) {
  Workspace ws;
  try {
    RunOp(def, in, &ws);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WeightedSumOpTest, Forward) {
  for (int pairs : {1, 3}) {
    auto in = Inputs(pairs, {3, 7, 5}, 1);
    ExpectNear(RunAndGet(WeightedSumDef(pairs), in), Naive(in, pairs), 1e-6f, 1e-5f);
  }
  auto y = RunAndGet(WeightedSumDef(2), {{"X0", FloatTensor({2}, {1, 2})},
                                         {"w0", FloatTensor({1}, {3})},
                                         {"X1", FloatTensor({2}, {10, 20})},
                                         {"w1", FloatTensor({1}, {-0.5f})}});
  EXPECT_EQ(y, (std::vector<float>{-2, -4}));
}

TEST(WeightedSumOpTest, InPlace) {
  auto in = Inputs(3, {4, 9}, 2);
  ExpectNear(RunAndGet(WeightedSumDef(3, "X0"), in), Naive(in, 3), 1e-6f, 1e-5f);
  // Only (X0, Y) may alias.
  auto bad = MakeOperatorDef("WeightedSum", "", {"X0", "w0", "X1", "w1"}, {"X1"});
  EXPECT_NE(ErrorOf(bad, Inputs(2, {3}, 3)).find("cannot run in place"), std::string::npos);
}

TEST(WeightedSumOpTest, Fp16DataWithFloatWeights) {
  auto in = Inputs(3, {5, 13}, 4);
  CheckFp16MatchesFp32(WeightedSumDef(3), in, {"X0", "X1", "X2"}, {0}, 2e-3f, 2e-3f);
  CheckFp16MatchesFp32(WeightedSumDef(3, "X0"), in, {"X0", "X1", "X2"}, {0}, 2e-3f, 2e-3f);
  Workspace ws;
  in["X0"] = ToHalf(in["X0"]);
  in["X1"] = ToHalf(in["X1"]);
  in["X2"] = ToHalf(in["X2"]);
  RunOp(WeightedSumDef(3), in, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
}

TEST(WeightedSumOpTest, Gradients) {
  auto in = Inputs(3, {2, 3, 7}, 5);
  GradientChecker checker;
  for (int i = 0; i < 6; i += 2) checker.Check(WeightedSumDef(3), in, i, 0);
  auto def = WeightedSumDef(3, "Y", {MakeArgument("grad_on_w", 1)});
  for (int i = 0; i < 6; ++i) checker.Check(def, in, i, 0);
}

TEST(WeightedSumOpTest, GradientMaker) {
  auto def = WeightedSumDef(2);
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& g = meta.ops[0];
  EXPECT_EQ(g.type(), "WeightedSumGradient");
  EXPECT_EQ(std::vector<std::string>(g.input().begin(), g.input().end()),
            (std::vector<std::string>{"Y_grad", "X0", "w0", "X1", "w1"}));
  EXPECT_EQ(std::vector<std::string>(g.output().begin(), g.output().end()),
            (std::vector<std::string>{"X0_grad", "X1_grad"}));
  EXPECT_FALSE(meta.g_input[1].IsDense());
  EXPECT_FALSE(meta.g_input[3].IsDense());

  auto meta_w = GetGradientForOp(WeightedSumDef(2, "Y", {MakeArgument("grad_on_w", 1)}),
                                 {GradientWrapper{"Y_grad", "", ""}});
  const OperatorDef& gw = meta_w.ops[0];
  EXPECT_EQ(std::vector<std::string>(gw.output().begin(), gw.output().end()),
            (std::vector<std::string>{"X0_grad", "X1_grad", "w0_grad", "w1_grad"}));
  EXPECT_EQ(meta_w.g_input[1].dense, "w0_grad");
  ASSERT_EQ(gw.arg_size(), 1);  // forward args are copied
  EXPECT_EQ(gw.arg(0).name(), "grad_on_w");
}

TEST(WeightedSumOpTest, GradientOpFp16MatchesFp32) {
  auto def = MakeOperatorDef("WeightedSumGradient", "", {"dY", "X0", "w0", "X1", "w1"},
                             {"dX0", "dX1", "dw0", "dw1"});
  std::map<std::string, Tensor> in{{"dY", RandomTensor({3, 11}, 1)},
                                   {"X0", RandomTensor({3, 11}, 2)},
                                   {"w0", FloatTensor({1}, {0.75f})},
                                   {"X1", RandomTensor({3, 11}, 3)},
                                   {"w1", FloatTensor({1}, {-1.5f})}};
  CheckFp16MatchesFp32(def, in, {"dY", "X0", "X1"}, {0, 1, 2, 3}, 5e-3f, 3e-3f);
}

TEST(WeightedSumOpTest, Errors) {
  auto in = Inputs(2, {3, 4}, 6);
  in["w1"] = RandomTensor({2}, 1);
  std::string msg = ErrorOf(WeightedSumDef(2), in);
  EXPECT_NE(msg.find("w1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one element"), std::string::npos) << msg;

  in = Inputs(2, {3, 4}, 6);
  in["X1"] = RandomTensor({4, 3}, 1);
  msg = ErrorOf(WeightedSumDef(2), in);
  EXPECT_NE(msg.find("[4, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;

  in = Inputs(2, {3}, 6);
  auto odd = MakeOperatorDef("WeightedSum", "", {"X0", "w0", "X1"}, {"Y"});
  msg = ErrorOf(odd, in);
  EXPECT_NE(msg.find("3 input(s)"), std::string::npos) << msg;

  in["X1"] = IntTensor({3}, {1, 2, 3});
  msg = ErrorOf(WeightedSumDef(2), in);
  EXPECT_NE(msg.find("X1 must be float, float16 or bfloat16"), std::string::npos) << msg;
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
