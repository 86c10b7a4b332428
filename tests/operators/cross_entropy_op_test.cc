#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::string ErrorOf(const OperatorDef& def, const std::map<std::string, Tensor>& in) {
  Workspace ws;
  try {
    RunOp(def, in, &ws);
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error from " << def.type();
  return "";
}

TEST(LabelCrossEntropyOpTest, MatchesNaive) {
  Tensor X = RandomTensor({4, 6}, 1, 0.01f, 1.f);
  std::vector<int32_t> labels{5, 0, 2, 2};
  auto def = MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"});
  for (std::vector<int64_t> ldims : {std::vector<int64_t>{4}, std::vector<int64_t>{4, 1}}) {
    Workspace ws;
    RunOp(def, {{"X", X}, {"L", IntTensor(ldims, labels)}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{4}));
    std::vector<float> want(4);
    for (int i = 0; i < 4; ++i)
      want[i] = static_cast<float>(-std::log(double(X.data<float>()[i * 6 + labels[i]])));
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), want, 1e-6f, 1e-5f);
  }
}

TEST(LabelCrossEntropyOpTest, OneDimensionalInputIsOneSample) {
  auto def = MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"});
  Workspace ws;
  RunOp(def, {{"X", FloatTensor({3}, {0.2f, 0.5f, 0.3f})}, {"L", IntTensor({1}, {1})}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{1}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), {static_cast<float>(-std::log(0.5))}, 1e-6f, 1e-6f);
}

TEST(LabelCrossEntropyOpTest, ClampsTinyProbabilities) {
  auto def = MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"});
  auto y = RunAndGet(
      def, {{"X", FloatTensor({2, 2}, {0.f, 1.f, 1.f, 1e-30f})}, {"L", IntTensor({2}, {0, 1})}});
  const float clamp = static_cast<float>(-std::log(1e-20));
  ExpectNear(y, {clamp, clamp}, 1e-4f, 1e-6f);
  auto gdef = MakeOperatorDef("LabelCrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"});
  auto dx = RunAndGet(gdef, {{"X", FloatTensor({2, 2}, {0.f, 1.f, 1.f, 1e-30f})},
                             {"L", IntTensor({2}, {0, 1})},
                             {"dY", FloatTensor({2}, {1.f, 1.f})}});
  for (float v : dx) EXPECT_TRUE(std::isfinite(v));
}

TEST(LabelCrossEntropyOpTest, Gradient) {
  auto def = MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"});
  GradientChecker().Check(
      def, {{"X", RandomTensor({5, 7}, 2, 0.2f, 1.f)}, {"L", IntTensor({5}, {6, 0, 3, 3, 1})}}, 0,
      0);
}

TEST(LabelCrossEntropyOpTest, Fp16MatchesFp32) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({6, 9}, 3, 0.05f, 1.f)},
                                   {"L", IntTensor({6}, {0, 8, 4, 4, 1, 7})}};
  auto def = MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"});
  CheckFp16MatchesFp32(def, in, {"X"});
  in["dY"] = RandomTensor({6}, 4);
  auto gdef = MakeOperatorDef("LabelCrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"});
  CheckFp16MatchesFp32(gdef, in, {"X", "dY"}, {0}, 1e-2f, 2e-3f);
  Workspace ws;
  in["X"] = ToHalf(in["X"]);
  RunOp(gdef, in, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::FLOAT16);
}

TEST(LabelCrossEntropyOpTest, Errors) {
  auto def = MakeOperatorDef("LabelCrossEntropy", "lce", {"X", "L"}, {"Y"});
  std::string msg =
      ErrorOf(def, {{"X", RandomTensor({3, 4}, 1, 0.1f, 1.f)}, {"L", IntTensor({3}, {0, 4, 1})}});
  for (const char* part : {"LabelCrossEntropy 'lce'", "label 4 of sample 1", "< 4"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  msg = ErrorOf(def, {{"X", RandomTensor({2, 3, 4}, 1)}, {"L", IntTensor({2}, {0, 1})}});
  EXPECT_NE(msg.find("[2, 3, 4]"), std::string::npos) << msg;
  msg = ErrorOf(def, {{"X", RandomTensor({3, 4}, 1)}, {"L", IntTensor({2}, {0, 1})}});
  EXPECT_NE(msg.find("3 samples"), std::string::npos) << msg;
}

TEST(LabelCrossEntropyOpTest, NaNPropagates) {
  auto def = MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"});
  ExpectNaNPropagates(def, {{"X", FloatTensor({2, 2}, {0.2f, 0.8f, 0.6f, 0.4f})},
                            {"L", IntTensor({2}, {1, 0})}},
                      "X", 1, "Y", {0});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
