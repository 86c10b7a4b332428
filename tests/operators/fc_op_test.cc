#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Y = X W^T + b computed by hand.
std::vector<float> NaiveFC(const Tensor& X, const Tensor& W, const Tensor& b, int64_t M,
                           int64_t K, int64_t N) {
  std::vector<float> y(M * N);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = b.data<float>()[j];
      for (int64_t k = 0; k < K; ++k) acc += X.data<float>()[i * K + k] * W.data<float>()[j * K + k];
      y[i * N + j] = static_cast<float>(acc);
    }
  }
  return y;
}

TEST(FCOpTest, MatchesNaive) {
  Tensor X = RandomTensor({5, 3, 4}, 1), W = RandomTensor({7, 12}, 2), b = RandomTensor({7}, 3);
  auto def = MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"});
  Workspace ws;
  RunOp(def, {{"X", X}, {"W", W}, {"b", b}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{5, 7}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), NaiveFC(X, W, b, 5, 12, 7), 1e-5f, 1e-5f);
}

TEST(FCOpTest, AxisArguments) {
  Tensor X = RandomTensor({2, 3, 4}, 1), W = RandomTensor({5, 1, 4}, 2), b = RandomTensor({5}, 3);
  auto def = MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"},
                             {MakeArgument("axis", 2), MakeArgument("axis_w", 2)});
  Workspace ws;
  RunOp(def, {{"X", X}, {"W", W}, {"b", b}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 3, 5}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), NaiveFC(X, W, b, 6, 4, 5), 1e-5f, 1e-5f);
}

TEST(FCOpTest, Gradients) {
  auto def = MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({3, 7}, 4)},
                                   {"W", RandomTensor({5, 7}, 5)},
                                   {"b", RandomTensor({5}, 6)}};
  GradientChecker checker;
  for (int i = 0; i < 3; ++i) checker.Check(def, in, i, 0);
}

TEST(FCOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({9, 13}, 4)},
                                   {"W", RandomTensor({6, 13}, 5)},
                                   {"b", RandomTensor({6}, 6)}};
  CheckFp16MatchesFp32(def, in, {"X", "W", "b"});
  auto gdef = MakeOperatorDef("FCGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"});
  CheckFp16MatchesFp32(gdef,
                       {{"X", RandomTensor({9, 13}, 7)},
                        {"W", RandomTensor({6, 13}, 8)},
                        {"dY", RandomTensor({9, 6}, 9)}},
                       {"X", "W", "dY"}, {0, 1, 2}, 5e-3f, 4e-3f);
}

TEST(FCOpTest, ShapeMismatchNamesDims) {
  auto def = MakeOperatorDef("FC", "fc1", {"X", "W", "b"}, {"Y"});
  Workspace ws;
  try {
    RunOp(def, {{"X", RandomTensor({2, 6}, 1)}, {"W", RandomTensor({3, 5}, 2)},
                {"b", RandomTensor({3}, 3)}}, &ws);
    FAIL() << "expected a shape error";
  } catch (const EnforceNotMet& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[2, 6]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 5]"), std::string::npos) << msg;
  }
}

TEST(FCOpTest, SchemaInfersShapeAndCost) {
  auto def = MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"});
  const OpSchema* s = OpSchemaRegistry::Schema("FC");
  ASSERT_NE(s, nullptr);
  std::vector<TensorShape> in{{{8, 20}, DataType::FLOAT}, {{10, 20}, DataType::FLOAT},
                              {{10}, DataType::FLOAT}};
  auto out = s->InferShapes(def, in);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{8, 10}));
  EXPECT_DOUBLE_EQ(s->InferCost(def, in).flops, 2.0 * 8 * 10 * 20);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
