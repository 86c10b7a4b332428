// MakeTwoClass: (1 - x, x) pairs in a new last dimension for several shapes, the gradient's
// values and finite differences, float16 and bfloat16 against float (outputs keep the input's
// type), bad inputs, and the gradient maker's Caffe2 wiring.
#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/gradient_def_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef TwoClassDef() { return MakeOperatorDef("MakeTwoClass", "", {"X"}, {"Y"}); }
OperatorDef TwoClassGradDef() {
  return MakeOperatorDef("MakeTwoClassGradient", "", {"dY"}, {"dX"});
}

TEST(MakeTwoClassTest, PairsOneMinusXWithX) {
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{5}, std::vector<int64_t>{2, 3}, std::vector<int64_t>{}}) {
    const Tensor X = RandomTensor(dims, 1, 0.f, 1.f);
    Workspace ws;
    RunOp(TwoClassDef(), {{"X", X}}, &ws);
    const Tensor& Y = ws.GetTensor("Y");
    std::vector<int64_t> want_dims = dims;
    want_dims.push_back(2);
    ASSERT_EQ(Y.dims(), want_dims);
    for (int64_t i = 0; i < X.numel(); ++i) {
      EXPECT_EQ(Y.data<float>()[2 * i], 1.f - X.data<float>()[i]);
      EXPECT_EQ(Y.data<float>()[2 * i + 1], X.data<float>()[i]);
    }
  }
}

TEST(MakeTwoClassTest, Gradient) {
  Workspace ws;
  RunOp(TwoClassGradDef(), {{"dY", FloatTensor({2, 2}, {1.f, 3.f, 0.5f, -2.f})}}, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dims(), std::vector<int64_t>{2});
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")), (std::vector<float>{2.f, -2.5f}));
  GradientChecker().Check(TwoClassDef(), {{"X", RandomTensor({3, 4}, 2, 0.f, 1.f)}}, 0, 0);
}

TEST(MakeTwoClassTest, LowPrecisionMatchesFloatAndKeepsItsType) {
  const Tensor X = RandomTensor({4, 5}, 3, 0.f, 1.f);
  CheckFp16MatchesFp32(TwoClassDef(), {{"X", X}}, {"X"});
  const Tensor dY = RandomTensor({4, 5, 2}, 4);
  CheckFp16MatchesFp32(TwoClassGradDef(), {{"dY", dY}}, {"dY"});
  Workspace ws;
  RunOp(TwoClassDef(), {{"X", ToHalf(X)}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
  RunOp(TwoClassGradDef(), {{"dY", ToBFloat16(dY)}}, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::BFLOAT16);
}

TEST(MakeTwoClassTest, BadInputs) {
  ExpectError(TwoClassDef(), {{"X", IntTensor({2}, {0, 1})}}, "X must be float");
  ExpectError(TwoClassGradDef(), {{"dY", RandomTensor({2, 3}, 1)}},
              "dY must end in a dimension of 2 (the two classes), got dims [2, 3]");
}

TEST(MakeTwoClassTest, GradientMakerFeedsDY) {
  ExpectSingleGradientOp(TwoClassDef(), "MakeTwoClassGradient", {"Y_grad"}, {"X_grad"});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
