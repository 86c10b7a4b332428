#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(AveragedLossOpTest, MeanOfAnyShape) {
  Tensor X = RandomTensor({2, 3, 7, 9}, 1);
  auto def = MakeOperatorDef("AveragedLoss", "", {"X"}, {"loss"});
  Workspace ws;
  RunOp(def, {{"X", X}}, &ws);
  const Tensor& y = ws.GetTensor("loss");
  EXPECT_EQ(y.ndim(), 0);
  EXPECT_EQ(y.dtype(), DataType::FLOAT);
  double sum = 0;
  for (float v : ToFloatVector(X)) sum += v;
  ExpectNear(ToFloatVector(y), {static_cast<float>(sum / X.numel())}, 1e-6f, 1e-5f);
}

TEST(AveragedLossOpTest, Gradient) {
  auto def = MakeOperatorDef("AveragedLoss", "", {"X"}, {"loss"});
  GradientChecker().Check(def, {{"X", RandomTensor({3, 5}, 2)}}, 0, 0);
  auto gdef = MakeOperatorDef("AveragedLossGradient", "", {"X", "dY"}, {"dX"});
  auto dx = RunAndGet(gdef, {{"X", RandomTensor({2, 4}, 3)}, {"dY", FloatTensor({}, {2.f})}});
  EXPECT_EQ(dx, std::vector<float>(8, 0.25f));
}

TEST(AveragedLossOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("AveragedLoss", "", {"X"}, {"loss"});
  CheckFp16MatchesFp32(def, {{"X", RandomTensor({4, 13}, 4, 0.f, 3.f)}}, {"X"});
  auto gdef = MakeOperatorDef("AveragedLossGradient", "", {"X", "dY"}, {"dX"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({3, 5}, 5)}, {"dY", FloatTensor({}, {0.9f})}};
  CheckFp16MatchesFp32(gdef, in, {"X", "dY"});
  Workspace ws;
  in["X"] = ToHalf(in["X"]);
  RunOp(gdef, in, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ws.GetTensor("dX").dims(), (std::vector<int64_t>{3, 5}));
}

TEST(AveragedLossOpTest, GradientNeedsScalarDy) {
  auto gdef = MakeOperatorDef("AveragedLossGradient", "", {"X", "dY"}, {"dX"});
  Workspace ws;
  try {
    RunOp(gdef, {{"X", RandomTensor({3}, 1)}, {"dY", RandomTensor({3}, 2)}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("dY must hold one value"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
