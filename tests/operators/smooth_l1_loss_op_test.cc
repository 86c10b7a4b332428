// SmoothL1Loss: the loss against the formula written out (inside and outside weights, beta,
// scale, the 1/N with N the first dimension), a hand-computed case, Caffe2's shape rules (same
// element count, same first dimension), an empty batch, finite-difference gradients for several
// beta, float16 and bfloat16 inputs against float, bad inputs and arguments, and the gradient
// maker's Caffe2 wiring.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/gradient_def_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef LossDef(float beta = 1.f, float scale = 1.f) {
  return MakeOperatorDef("SmoothL1Loss", "", {"Y_hat", "Y", "A_in", "A_out"}, {"loss"},
                         {MakeArgument("beta", beta), MakeArgument("scale", scale)});
}

OperatorDef GradDef(float beta = 1.f, float scale = 1.f) {
  return MakeOperatorDef("SmoothL1LossGradient", "", {"Y_hat", "Y", "A_in", "A_out", "dL"},
                         {"dY_hat"}, {MakeArgument("beta", beta), MakeArgument("scale", scale)});
}

std::map<std::string, Tensor> Inputs(const std::vector<int64_t>& dims) {
  return {{"Y_hat", RandomTensor(dims, 1, -2.f, 2.f)},
          {"Y", RandomTensor(dims, 2, -2.f, 2.f)},
          {"A_in", RandomTensor(dims, 3, 0.f, 2.f)},
          {"A_out", RandomTensor(dims, 4, 0.f, 2.f)}};
}

// scale / N * sum alpha_out f(alpha_in (y_hat - y)), naively in double.
double Naive(const std::map<std::string, Tensor>& in, double beta, double scale) {
  const Tensor& yh = in.at("Y_hat");
  double sum = 0;
  for (int64_t k = 0; k < yh.numel(); ++k) {
    const double d = double(in.at("A_in").data<float>()[k]) *
                     (double(yh.data<float>()[k]) - in.at("Y").data<float>()[k]);
    const double f = std::fabs(d) < beta ? 0.5 * d * d / beta : std::fabs(d) - 0.5 * beta;
    sum += in.at("A_out").data<float>()[k] * f;
  }
  return scale / yh.dim(0) * sum;
}

TEST(SmoothL1LossTest, MatchesTheFormula) {
  const auto in = Inputs({4, 3, 5});
  for (float beta : {1.f, 0.25f, 3.f}) {
    for (float scale : {1.f, 0.5f}) {
      Workspace ws;
      RunOp(LossDef(beta, scale), in, &ws);
      const Tensor& L = ws.GetTensor("loss");
      ASSERT_EQ(L.dims(), std::vector<int64_t>{});
      ASSERT_EQ(L.dtype(), DataType::FLOAT);
      const double want = Naive(in, beta, scale);
      EXPECT_NEAR(L.data<float>()[0], want, 1e-5 * (1 + std::fabs(want)))
          << "beta " << beta << " scale " << scale;
    }
  }
}

TEST(SmoothL1LossTest, HandComputedCase) {
  // Two samples; d = 0.5 (quadratic: 0.125), 3 (linear: 2.5), inside weight 0 (no loss), and
  // 1 with outside weight 2 (2 * 0.5 * 1 = 1): (0.125 + 2.5 + 0 + 1) / N = 3.625 / 2.
  const std::map<std::string, Tensor> in{{"Y_hat", FloatTensor({2, 2}, {0.5f, 3.f, 9.f, 1.f})},
                                         {"Y", FloatTensor({2, 2}, {0.f, 0.f, 0.f, 0.f})},
                                         {"A_in", FloatTensor({2, 2}, {1.f, 1.f, 0.f, 1.f})},
                                         {"A_out", FloatTensor({2, 2}, {1.f, 1.f, 1.f, 2.f})}};
  EXPECT_FLOAT_EQ(RunAndGet(LossDef(), in)[0], 3.625f / 2);
  std::map<std::string, Tensor> gin = in;
  gin["dL"] = FloatTensor({1}, {2.f});
  // dL * scale / N * a_in * a_out * f'(d): f' = d / beta inside, sign(d) outside.
  EXPECT_EQ(RunAndGet(GradDef(), gin), (std::vector<float>{0.5f, 1.f, 0.f, 2.f}));
}

TEST(SmoothL1LossTest, ShapesFollowCaffe2) {
  // Y (and the weights) need Y_hat's element count; Y also its first dimension.
  auto in = Inputs({2, 4});
  const double want = Naive(in, 1, 1);
  in["Y"] = RandomTensor({2, 2, 2}, 2, -2.f, 2.f);
  in["A_out"] = RandomTensor({8}, 4, 0.f, 2.f);
  EXPECT_NEAR(RunAndGet(LossDef(), in)[0], want, 1e-5 * (1 + std::fabs(want)));
  // An empty batch has loss 0, not 0 / 0.
  EXPECT_EQ(RunAndGet(LossDef(), Inputs({0, 4}))[0], 0.f);
}

TEST(SmoothL1LossTest, Gradients) {
  const auto in = Inputs({3, 4});
  GradientChecker checker;
  for (float beta : {1.f, 0.3f}) checker.Check(LossDef(beta, 2.f), in, 0, 0);
}

TEST(SmoothL1LossTest, LowPrecisionInputsMatchFloat) {
  auto in = Inputs({5, 6});
  const std::vector<std::string> low{"Y_hat", "Y", "A_in", "A_out"};
  CheckFp16MatchesFp32(LossDef(0.5f), in, low);
  in["dL"] = FloatTensor({1}, {1.5f});
  CheckFp16MatchesFp32(GradDef(0.5f), in, {"Y_hat", "Y", "A_in", "A_out", "dL"});
  in["Y_hat"] = ToBFloat16(in["Y_hat"]);
  Workspace ws;
  RunOp(GradDef(), in, &ws);
  EXPECT_EQ(ws.GetTensor("dY_hat").dtype(), DataType::BFLOAT16);  // Y_hat's type
}

TEST(SmoothL1LossTest, BadInputs) {
  auto in = Inputs({2, 3});
  in["A_in"] = RandomTensor({5}, 3);
  ExpectError(LossDef(), in,
              "Y_hat, Y, alpha_in and alpha_out must have the same number of elements and Y_hat "
              "and Y the same first dimension, got Y_hat [2, 3], Y [2, 3], alpha_in [5], "
              "alpha_out [2, 3]");
  in = Inputs({2, 3});
  in["Y"] = RandomTensor({3, 2}, 2);  // same count, other first dimension
  ExpectError(LossDef(), in, "Y [3, 2]");
  ExpectError(LossDef(0.f), Inputs({2, 3}), "beta must be > 0, got 0");
  ExpectError(LossDef(1.f, -1.f), Inputs({2, 3}), "scale must be >= 0, got -1");
  in = Inputs({2, 3});
  in["dL"] = FloatTensor({2}, {1.f, 1.f});
  ExpectError(GradDef(), in, "d_loss must hold one value");
}

TEST(SmoothL1LossTest, GradientMakerFeedsAllInputsAndDLoss) {
  ExpectSingleGradientOp(LossDef(), "SmoothL1LossGradient",
                         {"Y_hat", "Y", "A_in", "A_out", "loss_grad"}, {"Y_hat_grad"});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
