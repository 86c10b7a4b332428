// HardSigmoid(+HardSigmoidGradient): values with default and given alpha / beta, the gradient op
// and its maker, finite differences away from the two kinks, FP16 vs FP32, NaN and bad input.
#include <gtest/gtest.h>

#include <limits>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef Def(std::vector<Argument> args = {}, const std::string& out = "Y") {
  return MakeOperatorDef("HardSigmoid", "", {"X"}, {out}, std::move(args));
}

OperatorDef GradDef(std::vector<Argument> args = {}, const std::string& out = "dX") {
  return MakeOperatorDef("HardSigmoidGradient", "", {"Y", "dY"}, {out}, std::move(args));
}

std::vector<Argument> AlphaBeta(float alpha, float beta) {
  return {MakeArgument("alpha", alpha), MakeArgument("beta", beta)};
}

TEST(HardSigmoidOpTest, Values) {
  const Tensor X = FloatTensor({7}, {-3.f, -2.5f, -1.f, 0.f, 1.f, 2.5f, 4.f});
  ExpectNear(RunAndGet(Def(), {{"X", X}}), {0.f, 0.f, 0.3f, 0.5f, 0.7f, 1.f, 1.f}, 1e-7f, 0.f,
             "default alpha 0.2, beta 0.5");
  EXPECT_EQ(RunAndGet(Def(AlphaBeta(0.25f, 0.5f), "X"),
                      {{"X", FloatTensor({6}, {-3.f, -2.f, 0.f, 1.f, 2.f, 3.f})}}),
            (std::vector<float>{0.f, 0.f, 0.5f, 0.75f, 1.f, 1.f}))
      << "alpha 0.25, in place";
  // A negative alpha mirrors it; beta shifts it.
  EXPECT_EQ(RunAndGet(Def(AlphaBeta(-0.5f, 0.25f)), {{"X", FloatTensor({3}, {-4.f, 0.f, 1.f})}}),
            (std::vector<float>{1.f, 0.25f, 0.f}));
}

TEST(HardSigmoidOpTest, GradientOpValues) {
  const Tensor Y = FloatTensor({5}, {0.f, 0.25f, 0.5f, 1.f, 0.75f});
  const Tensor dY = FloatTensor({5}, {2.f, 4.f, -1.f, 3.f, 5.f});
  EXPECT_EQ(RunAndGet(GradDef(AlphaBeta(0.25f, 0.5f)), {{"Y", Y}, {"dY", dY}}),
            (std::vector<float>{0.f, 1.f, -0.25f, 0.f, 1.25f}))
      << "alpha * dY inside (0, 1), 0 at the clamped ends";
  ExpectNear(RunAndGet(GradDef({}, "dY"), {{"Y", Y}, {"dY", dY}}), {0.f, 0.8f, -0.2f, 0.f, 1.f},
             1e-7f, 0.f, "default alpha 0.2, in place on dY");
}

TEST(HardSigmoidOpTest, GradientMakerCopiesArgs) {
  std::vector<GradientWrapper> g(1);
  g[0].dense = "Y_grad";
  GradientOpsMeta meta = GetGradientForOp(Def(AlphaBeta(0.3f, 0.4f)), g);
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "HardSigmoidGradient");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"Y", "Y_grad"}));
  EXPECT_EQ(op.output(0), "X_grad");
  ASSERT_EQ(op.arg_size(), 2);
  EXPECT_EQ(op.arg(0).name(), "alpha");
  EXPECT_EQ(op.arg(0).f(), 0.3f);
}

TEST(HardSigmoidOpTest, Gradients) {
  GradientChecker checker;
  // Kinks where alpha * X + beta is 0 or 1: X = -2.5 and 2.5 by default.
  const Tensor X = RandomTensorAwayFrom({3, 5, 7}, 1, {-2.5f, 2.5f}, 0.05f, -4.f, 4.f);
  checker.Check(Def(), {{"X", X}}, 0, 0);
  // alpha 0.5, beta 0.25: kinks at -0.5 and 1.5.
  const Tensor X2 = RandomTensorAwayFrom({3, 5, 7}, 2, {-0.5f, 1.5f}, 0.05f, -2.f, 3.f);
  checker.Check(Def(AlphaBeta(0.5f, 0.25f)), {{"X", X2}}, 0, 0);
}

TEST(HardSigmoidOpTest, Fp16MatchesFp32) {
  CheckFp16MatchesFp32(Def(), {{"X", RandomTensor({3, 5, 7}, 3, -4.f, 4.f)}}, {"X"});
  CheckFp16MatchesFp32(Def(AlphaBeta(0.7f, 0.1f)), {{"X", RandomTensor({13}, 4, -2.f, 2.f)}},
                       {"X"});
  const std::map<std::string, Tensor> ydy{{"Y", RandomTensor({5, 13}, 5, -0.2f, 1.2f)},
                                          {"dY", RandomTensor({5, 13}, 6)}};
  CheckFp16MatchesFp32(GradDef(), ydy, {"Y", "dY"});
  CheckFp16MatchesFp32(GradDef(), ydy, {"dY"});  // mixed: float Y
}

TEST(HardSigmoidOpTest, NaNPropagates) {
  ExpectNaNPropagates(Def(), {{"X", RandomTensor({5}, 7)}}, "X", 2, "Y", {2});
  const std::map<std::string, Tensor> ydy{{"Y", FloatTensor({3}, {0.f, 0.5f, 1.f})},
                                          {"dY", RandomTensor({3}, 8)}};
  ExpectNaNPropagates(GradDef(), ydy, "Y", 1, "dX", {1});
  ExpectNaNPropagates(GradDef(), ydy, "dY", 0, "dX", {0});  // even where Y is clamped
}

TEST(HardSigmoidOpTest, BadInput) {
  ExpectError(Def(), {{"X", IntTensor({2}, {1, 2})}}, "float, float16 or bfloat16");
  ExpectError(Def(AlphaBeta(std::numeric_limits<float>::infinity(), 0.5f)),
              {{"X", RandomTensor({2}, 1)}}, "HardSigmoid needs finite alpha and beta");
  ExpectError(GradDef(), {{"Y", RandomTensor({2, 3}, 1)}, {"dY", RandomTensor({6}, 2)}},
              "Y and dY must have the same shape, got [2, 3] and [6]");
  ExpectError(GradDef(), {{"Y", IntTensor({2}, {1, 2})}, {"dY", RandomTensor({2}, 2)}},
              "float, float16 or bfloat16");
  ExpectError(MakeOperatorDef("HardSigmoid", "", {"X"}, {"Y", "Z"}), {{"X", RandomTensor({2}, 1)}},
              "got 2 output(s)");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
