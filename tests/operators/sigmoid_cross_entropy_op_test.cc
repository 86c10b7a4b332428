// SigmoidCrossEntropyWithLogits: values against the formula written out (and PyTorch's
// BCEWithLogits rule, which it is), large logits without overflow, the log_D_trick form,
// finite-difference gradients of both forms, float16 logits against float, bad inputs.
// WeightedSigmoidCrossEntropyWithLogits: the same with weights (unit weights give the unweighted
// op), and both ops' gradient makers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/gradient_def_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// -t log sigmoid(x) - (1 - t) log(1 - sigmoid(x)), in double, naively (fine for |x| < 30).
double Bce(double x, double t) {
  const double s = 1 / (1 + std::exp(-x));
  return -t * std::log(s) - (1 - t) * std::log(1 - s);
}

TEST(SigmoidCrossEntropyWithLogitsTest, MeanOverTheLastDimension) {
  const Tensor X = RandomTensor({3, 4, 5}, 1, -6.f, 6.f);
  const Tensor T = RandomTensor({3, 4, 5}, 2, 0.f, 1.f);
  for (int trick : {0, 1}) {
    Workspace ws;
    RunOp(MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"},
                          {MakeArgument("log_D_trick", trick)}),
          {{"X", X}, {"T", T}}, &ws);
    const Tensor& Y = ws.GetTensor("Y");
    ASSERT_EQ(Y.dims(), (std::vector<int64_t>{3, 4}));
    for (int i = 0; i < 12; ++i) {
      double want = 0;
      for (int j = 0; j < 5; ++j) {
        const double x = X.data<float>()[i * 5 + j], t = T.data<float>()[i * 5 + j];
        want += trick ? -(2 * t - 1) * std::log(1 / (1 + std::exp(-x))) : Bce(x, t);
      }
      EXPECT_NEAR(Y.data<float>()[i], want / 5, 1e-5) << "row " << i << " trick " << trick;
    }
  }
}

TEST(SigmoidCrossEntropyWithLogitsTest, LargeLogitsStayFinite) {
  Workspace ws;
  RunOp(MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"}),
        {{"X", FloatTensor({1, 4}, {-200.f, 200.f, -90.f, 90.f})},
         {"T", FloatTensor({1, 4}, {1.f, 0.f, 0.f, 1.f})}},
        &ws);
  // Losses 200, 200, ~0, ~0: mean 100.
  EXPECT_NEAR(ws.GetTensor("Y").data<float>()[0], 100.f, 1e-3f);
}

TEST(SigmoidCrossEntropyWithLogitsTest, Gradients) {
  const std::map<std::string, Tensor> in{{"X", RandomTensor({4, 6}, 3, -3.f, 3.f)},
                                         {"T", RandomTensor({4, 6}, 4, 0.f, 1.f)}};
  GradientChecker checker;
  for (int trick : {0, 1}) {
    checker.Check(MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"},
                                  {MakeArgument("log_D_trick", trick)}),
                  in, 0, 0);
  }
}

TEST(SigmoidCrossEntropyWithLogitsTest, Float16LogitsMatchFloat) {
  CheckFp16MatchesFp32(
      MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"}),
      {{"X", RandomTensor({5, 7}, 5, -4.f, 4.f)}, {"T", RandomTensor({5, 7}, 6, 0.f, 1.f)}}, {"X"});
}

TEST(SigmoidCrossEntropyWithLogitsTest, BadInputs) {
  const auto def = MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"});
  ExpectError(def, {{"X", RandomTensor({2, 3}, 1)}, {"T", RandomTensor({3, 2}, 2)}},
              "must have the same shape");
  ExpectError(def, {{"X", RandomTensor({2, 3}, 1)}, {"T", IntTensor({2, 3}, {0, 1, 0, 1, 0, 1})}},
              "targets must be float");
  ExpectError(MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"},
                              {MakeArgument("unjoined_lr_loss", 1)}),
              {{"X", RandomTensor({2, 3}, 1)}, {"T", RandomTensor({2, 3}, 2)}},
              "unjoined_lr_loss is not supported");
}

OperatorDef WeightedDef() {
  return MakeOperatorDef("WeightedSigmoidCrossEntropyWithLogits", "", {"X", "T", "W"}, {"Y"});
}

std::map<std::string, Tensor> WeightedInputs(const std::vector<int64_t>& dims) {
  return {{"X", RandomTensor(dims, 1, -6.f, 6.f)},
          {"T", RandomTensor(dims, 2, 0.f, 1.f)},
          {"W", RandomTensor(dims, 3, 0.f, 3.f)}};
}

TEST(WeightedSigmoidCrossEntropyWithLogitsTest, WeightedMeanOverTheLastDimension) {
  const auto in = WeightedInputs({3, 4, 5});
  Workspace ws;
  RunOp(WeightedDef(), in, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  ASSERT_EQ(Y.dims(), (std::vector<int64_t>{3, 4}));
  for (int i = 0; i < 12; ++i) {
    double want = 0;
    for (int k = i * 5; k < (i + 1) * 5; ++k) {
      want += in.at("W").data<float>()[k] *
              Bce(in.at("X").data<float>()[k], in.at("T").data<float>()[k]);
    }
    EXPECT_NEAR(Y.data<float>()[i], want / 5, 1e-5) << "row " << i;
  }
  // Unit weights: the unweighted op.
  std::map<std::string, Tensor> ones = in;
  std::fill_n(ones["W"].mutable_data<float>(), 60, 1.f);
  ExpectNear(RunAndGet(WeightedDef(), ones),
             RunAndGet(MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"}), in),
             0.f, 0.f);
}

TEST(WeightedSigmoidCrossEntropyWithLogitsTest, Gradients) {
  GradientChecker().Check(WeightedDef(), WeightedInputs({4, 6}), 0, 0);
}

TEST(WeightedSigmoidCrossEntropyWithLogitsTest, LowPrecisionLogitsMatchFloat) {
  auto in = WeightedInputs({5, 7});
  CheckFp16MatchesFp32(WeightedDef(), in, {"X"});
  in["dY"] = RandomTensor({5}, 4);
  const auto grad = MakeOperatorDef("WeightedSigmoidCrossEntropyWithLogitsGradient", "",
                                    {"dY", "X", "T", "W"}, {"dX"});
  CheckFp16MatchesFp32(grad, in, {"X", "dY"});
  in["X"] = ToHalf(in["X"]);
  Workspace ws;
  RunOp(grad, in, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::FLOAT16);  // the logits' type
}

TEST(WeightedSigmoidCrossEntropyWithLogitsTest, BadInputs) {
  auto in = WeightedInputs({2, 3});
  in["W"] = RandomTensor({3, 2}, 3);
  ExpectError(WeightedDef(), in, "weights [3, 2] must have the logits' shape [2, 3]");
  in["W"] = IntTensor({2, 3}, {1, 1, 1, 1, 1, 1});
  ExpectError(WeightedDef(), in, "weights must be float");
}

TEST(SigmoidCrossEntropyWithLogitsTest, GradientMakersFeedCaffe2Inputs) {
  ExpectSingleGradientOp(MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"}),
                         "SigmoidCrossEntropyWithLogitsGradient", {"Y_grad", "X", "T"}, {"X_grad"});
  ExpectSingleGradientOp(WeightedDef(), "WeightedSigmoidCrossEntropyWithLogitsGradient",
                         {"Y_grad", "X", "T", "W"}, {"X_grad"});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
