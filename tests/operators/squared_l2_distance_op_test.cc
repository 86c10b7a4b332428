#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(SquaredL2DistanceOpTest, MatchesNaive) {
  Tensor X = RandomTensor({3, 4, 5}, 1), Y = RandomTensor({3, 4, 5}, 2);
  auto def = MakeOperatorDef("SquaredL2Distance", "", {"X", "Y"}, {"D"});
  Workspace ws;
  RunOp(def, {{"X", X}, {"Y", Y}}, &ws);
  EXPECT_EQ(ws.GetTensor("D").dims(), (std::vector<int64_t>{3}));
  std::vector<float> want(3);
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 20; ++j) {
      double d = X.data<float>()[i * 20 + j] - Y.data<float>()[i * 20 + j];
      s += d * d;
    }
    want[i] = static_cast<float>(0.5 * s);
  }
  ExpectNear(ToFloatVector(ws.GetTensor("D")), want, 1e-6f, 1e-5f);
}

TEST(SquaredL2DistanceOpTest, Gradients) {
  auto def = MakeOperatorDef("SquaredL2Distance", "", {"X", "Y"}, {"D"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3, 7}, 3)},
                                   {"Y", RandomTensor({2, 3, 7}, 4)}};
  GradientChecker checker;
  checker.Check(def, in, 0, 0);
  checker.Check(def, in, 1, 0);
}

TEST(SquaredL2DistanceOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("SquaredL2Distance", "", {"X", "Y"}, {"D"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({5, 13}, 5)},
                                   {"Y", RandomTensor({5, 13}, 6)}};
  CheckFp16MatchesFp32(def, in, {"X", "Y"});
  in["dD"] = RandomTensor({5}, 7);
  auto gdef = MakeOperatorDef("SquaredL2DistanceGradient", "", {"X", "Y", "dD"}, {"dX", "dY"});
  CheckFp16MatchesFp32(gdef, in, {"X", "Y", "dD"}, {0, 1});
  Workspace ws;
  in["X"] = ToHalf(in["X"]);
  RunOp(gdef, in, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ws.GetTensor("dY").dtype(), DataType::FLOAT);
}

TEST(SquaredL2DistanceOpTest, ShapeMismatch) {
  auto def = MakeOperatorDef("SquaredL2Distance", "dist", {"X", "Y"}, {"D"});
  Workspace ws;
  try {
    RunOp(def, {{"X", RandomTensor({3, 4}, 1)}, {"Y", RandomTensor({3, 5}, 2)}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 5]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
