// L1Distance: row sums of |X - Y| against the formula written out (and Caffe2's documented
// example), the gradient's sign and dead zone, finite-difference gradients for X and Y, float16
// and bfloat16 inputs against float, bad inputs, and the gradient maker's Caffe2 wiring.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/gradient_def_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef L1Def() { return MakeOperatorDef("L1Distance", "", {"X", "Y"}, {"Z"}); }
OperatorDef L1GradDef() {
  return MakeOperatorDef("L1DistanceGradient", "", {"X", "Y", "dZ"}, {"dX", "dY"});
}

// X random and Y = X - D with |D| >= 0.1: no element near the kink at X = Y.
std::map<std::string, Tensor> AwayFromKink(const std::vector<int64_t>& dims) {
  const Tensor X = RandomTensor(dims, 11, -2.f, 2.f);
  const Tensor D = RandomTensorAwayFrom(dims, 12, {0.f}, 0.1f);
  Tensor Y(dims, DataType::FLOAT);
  for (int64_t k = 0; k < X.numel(); ++k) {
    Y.mutable_data<float>()[k] = X.data<float>()[k] - D.data<float>()[k];
  }
  return {{"X", X}, {"Y", Y}};
}

TEST(L1DistanceTest, RowSumsOfAbsoluteDifferences) {
  const Tensor X = RandomTensor({3, 4, 5}, 1, -3.f, 3.f);
  const Tensor Y = RandomTensor({3, 4, 5}, 2, -3.f, 3.f);
  Workspace ws;
  RunOp(L1Def(), {{"X", X}, {"Y", Y}}, &ws);
  const Tensor& Z = ws.GetTensor("Z");
  ASSERT_EQ(Z.dims(), (std::vector<int64_t>{3}));
  ASSERT_EQ(Z.dtype(), DataType::FLOAT);
  for (int i = 0; i < 3; ++i) {
    double want = 0;
    for (int k = i * 20; k < (i + 1) * 20; ++k) {
      want += std::fabs(double(X.data<float>()[k]) - Y.data<float>()[k]);
    }
    EXPECT_NEAR(Z.data<float>()[i], want, 1e-5 * (1 + want)) << "row " << i;
  }
  // Caffe2's documented example: 5 * ones(1, 4) against ones(1, 4) is 16.
  EXPECT_EQ(RunAndGet(L1Def(), {{"X", FloatTensor({1, 4}, {5, 5, 5, 5})},
                                {"Y", FloatTensor({1, 4}, {1, 1, 1, 1})}}),
            std::vector<float>{16.f});
}

TEST(L1DistanceTest, GradientIsSignWithDeadZone) {
  Workspace ws;
  RunOp(L1GradDef(),
        {{"X", FloatTensor({2, 3}, {1.f, 2.f, 3.f, -1.f, 0.5f, 7.f})},
         {"Y", FloatTensor({2, 3}, {0.f, 2.f, 5.f, -1.f, 0.25f, 7.f})},
         {"dZ", FloatTensor({2}, {2.f, -3.f})}},
        &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")), (std::vector<float>{2, 0, -2, 0, -3, 0}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dY")), (std::vector<float>{-2, 0, 2, 0, 3, 0}));
}

TEST(L1DistanceTest, Gradients) {
  const auto in = AwayFromKink({4, 2, 3});
  GradientChecker checker;
  checker.Check(L1Def(), in, 0, 0);
  checker.Check(L1Def(), in, 1, 0);
}

TEST(L1DistanceTest, LowPrecisionInputsMatchFloat) {
  std::map<std::string, Tensor> in = AwayFromKink({5, 7});
  CheckFp16MatchesFp32(L1Def(), in, {"X", "Y"});
  in["dZ"] = RandomTensor({5}, 13);
  CheckFp16MatchesFp32(L1GradDef(), in, {"X", "Y", "dZ"}, {0, 1});
  // dX and dY take their input's type.
  Workspace ws;
  RunOp(L1GradDef(), {{"X", ToHalf(in["X"])}, {"Y", ToBFloat16(in["Y"])}, {"dZ", in["dZ"]}}, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ws.GetTensor("dY").dtype(), DataType::BFLOAT16);
}

TEST(L1DistanceTest, BadInputs) {
  ExpectError(L1Def(), {{"X", RandomTensor({2, 3}, 1)}, {"Y", RandomTensor({3, 2}, 2)}},
              "X and Y must have the same shape, got [2, 3] and [3, 2]");
  ExpectError(L1Def(), {{"X", IntTensor({2}, {1, 2})}, {"Y", RandomTensor({2}, 2)}},
              "X must be float");
  ExpectError(L1GradDef(),
              {{"X", RandomTensor({2, 3}, 1)},
               {"Y", RandomTensor({2, 3}, 2)},
               {"dZ", RandomTensor({3}, 3)}},
              "dZ must hold one value per row (2)");
}

TEST(L1DistanceTest, GradientMakerFeedsXYAndDZ) {
  ExpectSingleGradientOp(L1Def(), "L1DistanceGradient", {"X", "Y", "Z_grad"}, {"X_grad", "Y_grad"});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
