// CrossEntropy (soft labels): values against the formula written out for 2-d, 3-d and 1-d X,
// one-hot labels against LabelCrossEntropy (loss and gradient), the 1e-20 clamp, finite-difference
// gradients, float16 and bfloat16 X against float, bad inputs (labels outside [0, 1] included),
// and the gradient maker's Caffe2 wiring.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/gradient_def_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef XentDef() { return MakeOperatorDef("CrossEntropy", "", {"X", "L"}, {"Y"}); }
OperatorDef XentGradDef() {
  return MakeOperatorDef("CrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"});
}

TEST(CrossEntropyTest, MatchesTheFormula) {
  // (X dims, label dims): 2-d, 3-d with (N, D) or X-shaped labels, 1-d as one sample.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases{
      {{3, 5}, {3, 5}}, {{2, 3, 4}, {2, 12}}, {{2, 3, 4}, {2, 3, 4}}, {{6}, {1, 6}}};
  for (const auto& c : cases) {
    const Tensor X = RandomTensor(c.first, 1, 0.01f, 1.f);
    const Tensor L = RandomTensor(c.second, 2, 0.f, 1.f);
    const int64_t N = c.first.size() > 1 ? c.first[0] : 1, D = X.numel() / N;
    Workspace ws;
    RunOp(XentDef(), {{"X", X}, {"L", L}}, &ws);
    const Tensor& Y = ws.GetTensor("Y");
    ASSERT_EQ(Y.dims(), std::vector<int64_t>{N}) << DimsString(c.first);
    for (int64_t i = 0; i < N; ++i) {
      double want = 0;
      for (int64_t k = i * D; k < (i + 1) * D; ++k) {
        want -= double(L.data<float>()[k]) * std::log(double(X.data<float>()[k]));
      }
      EXPECT_NEAR(Y.data<float>()[i], want, 1e-5 * (1 + want)) << DimsString(c.first);
    }
  }
}

TEST(CrossEntropyTest, OneHotLabelsMatchLabelCrossEntropy) {
  const Tensor X = RandomTensor({4, 5}, 3, 0.01f, 1.f);
  const std::vector<int32_t> labels{4, 0, 2, 2};
  Tensor onehot({4, 5}, DataType::FLOAT);
  for (int i = 0; i < 20; ++i) onehot.mutable_data<float>()[i] = labels[i / 5] == i % 5;
  const Tensor dY = RandomTensor({4}, 4);
  const Tensor idx = IntTensor({4}, labels);
  ExpectNear(RunAndGet(XentDef(), {{"X", X}, {"L", onehot}}),
             RunAndGet(MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"}),
                       {{"X", X}, {"L", idx}}),
             1e-6f, 1e-6f);
  ExpectNear(RunAndGet(XentGradDef(), {{"X", X}, {"L", onehot}, {"dY", dY}}),
             RunAndGet(MakeOperatorDef("LabelCrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"}),
                       {{"X", X}, {"L", idx}, {"dY", dY}}),
             1e-6f, 1e-6f);
}

TEST(CrossEntropyTest, ClampsTinyProbabilities) {
  const std::map<std::string, Tensor> in{{"X", FloatTensor({1, 3}, {0.f, 1e-30f, 1.f})},
                                         {"L", FloatTensor({1, 3}, {0.5f, 0.25f, 0.25f})},
                                         {"dY", FloatTensor({1}, {1.f})}};
  EXPECT_NEAR(RunAndGet(XentDef(), in)[0], -0.75 * std::log(1e-20), 1e-4);
  // The clamp is flat: no gradient where it is active, -dY * label / X elsewhere.
  EXPECT_EQ(RunAndGet(XentGradDef(), in), (std::vector<float>{0.f, 0.f, -0.25f}));
}

TEST(CrossEntropyTest, Gradients) {
  GradientChecker().Check(
      XentDef(),
      {{"X", RandomTensor({3, 4}, 5, 0.2f, 1.f)}, {"L", RandomTensor({3, 4}, 6, 0.f, 1.f)}}, 0, 0);
}

TEST(CrossEntropyTest, LowPrecisionXMatchesFloat) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({5, 7}, 7, 0.05f, 1.f)},
                                   {"L", RandomTensor({5, 7}, 8, 0.f, 1.f)}};
  CheckFp16MatchesFp32(XentDef(), in, {"X"});
  in["dY"] = RandomTensor({5}, 9);
  CheckFp16MatchesFp32(XentGradDef(), in, {"X", "dY"});
  Workspace ws;
  RunOp(XentGradDef(), {{"X", ToHalf(in["X"])}, {"L", in["L"]}, {"dY", in["dY"]}}, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::FLOAT16);  // X's type
}

TEST(CrossEntropyTest, BadInputs) {
  const Tensor X = RandomTensor({2, 3}, 1, 0.1f, 1.f);
  ExpectError(XentDef(), {{"X", X}, {"L", FloatTensor({2, 3}, {0.f, 1.f, 0.f, 0.5f, 1.5f, 0.f})}},
              "soft labels must be probabilities in [0, 1], got label[1, 1] = 1.5");
  ExpectError(XentDef(), {{"X", X}, {"L", FloatTensor({2, 3}, {0.f, 1.f, 0.f, -0.1f, 1.f, 0.f})}},
              "label[1, 0] = -0.1");
  ExpectError(XentDef(), {{"X", X}, {"L", IntTensor({2}, {0, 1})}}, "label must be float");
  ExpectError(XentDef(), {{"X", X}, {"L", RandomTensor({3, 2}, 2, 0.f, 1.f)}},
              "label must have X's shape [2, 3] or (N, D) = (2, 3), got [3, 2]");
  ExpectError(XentGradDef(),
              {{"X", X}, {"L", RandomTensor({2, 3}, 2, 0.f, 1.f)}, {"dY", RandomTensor({3}, 3)}},
              "dY must hold one value per sample (2)");
}

TEST(CrossEntropyTest, GradientMakerFeedsXLabelAndDY) {
  ExpectSingleGradientOp(XentDef(), "CrossEntropyGradient", {"X", "L", "Y_grad"}, {"X_grad"});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
