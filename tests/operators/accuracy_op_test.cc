#include <gtest/gtest.h>

#include <algorithm>

#include "core/gradient.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

float Accuracy(const Tensor& X, const Tensor& L, int top_k) {
  auto def = MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}, {MakeArgument("top_k", top_k)});
  Workspace ws;
  RunOp(def, {{"X", X}, {"L", L}}, &ws);
  const Tensor& y = ws.GetTensor("acc");
  EXPECT_EQ(y.ndim(), 0);
  EXPECT_EQ(y.dtype(), DataType::FLOAT);
  return ToFloatVector(y)[0];
}

// Fraction correct by sorting each row (stable, by descending score, index ascending on ties).
float NaiveAccuracy(const Tensor& X, const std::vector<int32_t>& labels, int top_k) {
  const int64_t N = X.dim(0), D = X.dim(1);
  int correct = 0;
  for (int64_t i = 0; i < N; ++i) {
    std::vector<int> order(D);
    for (int j = 0; j < D; ++j) order[j] = j;
    const float* row = X.data<float>() + i * D;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    for (int r = 0; r < top_k && r < D; ++r) correct += order[r] == labels[i];
  }
  return static_cast<float>(correct) / N;
}

TEST(AccuracyOpTest, TopOne) {
  Tensor X =
      FloatTensor({4, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f, 0.2f, 0.2f, 0.6f, 0.3f, 0.3f, 0.4f});
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({4}, {1, 0, 0, 2}), 1), 0.75f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({4, 1}, {1, 1, 0, 0}), 1), 0.25f);
}

TEST(AccuracyOpTest, TopKWithTiesFavoursLowerIndex) {
  // Scores 0.5 at classes 0, 1 and 3: class 0 ranks first, then 1, then 3.
  Tensor X = FloatTensor({1, 4}, {0.5f, 0.5f, 0.1f, 0.5f});
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {0}), 1), 1.f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {1}), 1), 0.f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {1}), 2), 1.f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {3}), 2), 0.f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {3}), 3), 1.f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {2}), 3), 0.f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {2}), 4), 1.f);
  EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({1}, {2}), 9), 1.f);
}

TEST(AccuracyOpTest, MatchesSortingOnRandomScoresWithTies) {
  // Scores quantised to a few levels so that ties are common.
  Tensor X = RandomTensor({40, 7}, 1, 0.f, 4.f);
  float* d = X.mutable_data<float>();
  for (int64_t i = 0; i < X.numel(); ++i) d[i] = static_cast<float>(static_cast<int>(d[i]));
  std::vector<int32_t> labels(40);
  for (int i = 0; i < 40; ++i) labels[i] = (i * 5 + 3) % 7;
  for (int k : {1, 2, 3, 5}) {
    EXPECT_FLOAT_EQ(Accuracy(X, IntTensor({40}, labels), k), NaiveAccuracy(X, labels, k))
        << "top_k " << k;
  }
}

TEST(AccuracyOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}, {MakeArgument("top_k", 2)});
  std::vector<int32_t> labels(12);
  for (int i = 0; i < 12; ++i) labels[i] = i % 5;
  CheckFp16MatchesFp32(def, {{"X", RandomTensor({12, 5}, 2)}, {"L", IntTensor({12}, labels)}},
                       {"X"}, {0}, 0.f, 0.f);
}

TEST(AccuracyOpTest, Errors) {
  auto def = MakeOperatorDef("Accuracy", "acc1", {"X", "L"}, {"acc"});
  Workspace ws;
  try {
    RunOp(def, {{"X", RandomTensor({3, 4}, 1)}, {"L", IntTensor({3}, {0, 1, 4})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("Accuracy 'acc1'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("label 4 of sample 2"), std::string::npos) << msg;
  }
  auto bad_k = MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}, {MakeArgument("top_k", 0)});
  try {
    RunOp(bad_k, {{"X", RandomTensor({3, 4}, 1)}, {"L", IntTensor({3}, {0, 1, 2})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("top_k must be >= 1, got 0"), std::string::npos)
        << e.what();
  }
  try {
    RunOp(def, {{"X", RandomTensor({3, 4, 2}, 1)}, {"L", IntTensor({3}, {0, 1, 2})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 4, 2]"), std::string::npos) << e.what();
  }
}

TEST(AccuracyOpTest, GradientIsAnError) {
  auto def = MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"});
  std::vector<GradientWrapper> g(1);
  g[0].dense = "acc_grad";
  EXPECT_THROW(GetGradientForOp(def, g), EnforceNotMet);
}

// Documented behaviour: any NaN score makes the accuracy NaN, even one at the label (which a
// plain comparison would count as a hit), so a diverged model cannot look accurate.
TEST(AccuracyOpTest, NaNScoreGivesNaN) {
  auto def = MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"});
  const std::map<std::string, Tensor> in{{"X", FloatTensor({2, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f})},
                                         {"L", IntTensor({2}, {1, 0})}};
  EXPECT_EQ(RunAndGet(def, in), (std::vector<float>{1.f}));
  ExpectNaNPropagates(def, in, "X", 1, "acc", {0});  // at the label
  ExpectNaNPropagates(def, in, "X", 5, "acc", {0});  // elsewhere
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
