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

// ---- FCTransposed: W stored as (K, N), Y = X W + b ----------------------------------------------

// Y = X W + b computed by hand, W (K, N).
std::vector<float> NaiveFCTransposed(const Tensor& X, const Tensor& W, const Tensor& b, int64_t M,
                                     int64_t K, int64_t N) {
  std::vector<float> y(M * N);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = b.data<float>()[j];
      for (int64_t k = 0; k < K; ++k) acc += X.data<float>()[i * K + k] * W.data<float>()[k * N + j];
      y[i * N + j] = static_cast<float>(acc);
    }
  }
  return y;
}

TEST(FCTransposedOpTest, MatchesNaive) {
  Tensor X = RandomTensor({5, 3, 4}, 1), W = RandomTensor({12, 7}, 2), b = RandomTensor({7}, 3);
  auto def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"});
  Workspace ws;
  RunOp(def, {{"X", X}, {"W", W}, {"b", b}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{5, 7}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), NaiveFCTransposed(X, W, b, 5, 12, 7), 1e-5f,
             1e-5f);
}

TEST(FCTransposedOpTest, EqualsFCWithTransposedWeights) {
  // FCTransposed(X, W) == FC(X, W^T).
  const int64_t K = 9, N = 5;
  Tensor X = RandomTensor({4, K}, 11), W = RandomTensor({K, N}, 12), b = RandomTensor({N}, 13);
  Tensor Wt({N, K}, DataType::FLOAT);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < N; ++n) Wt.mutable_data<float>()[n * K + k] = W.data<float>()[k * N + n];
  }
  auto t = RunAndGet(MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"}),
                     {{"X", X}, {"W", W}, {"b", b}});
  auto f = RunAndGet(MakeOperatorDef("FC", "", {"X", "W", "b"}, {"Y"}),
                     {{"X", X}, {"W", Wt}, {"b", b}});
  ExpectNear(t, f, 1e-6f, 1e-6f);
}

TEST(FCTransposedOpTest, AxisArguments) {
  // X (2, 3, 4) split at axis 2: M = 6, K = 4; W (4, 5, 1) split at axis_w 1: K = 4, N = 5.
  Tensor X = RandomTensor({2, 3, 4}, 1), W = RandomTensor({4, 5, 1}, 2), b = RandomTensor({5}, 3);
  auto def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"},
                             {MakeArgument("axis", 2), MakeArgument("axis_w", 1)});
  Workspace ws;
  RunOp(def, {{"X", X}, {"W", W}, {"b", b}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 3, 5}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), NaiveFCTransposed(X, W, b, 6, 4, 5), 1e-5f, 1e-5f);
}

TEST(FCTransposedOpTest, Gradients) {
  auto def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({3, 7}, 4)},
                                   {"W", RandomTensor({7, 5}, 5)},
                                   {"b", RandomTensor({5}, 6)}};
  GradientChecker checker;
  for (int i = 0; i < 3; ++i) checker.Check(def, in, i, 0);
  // Split axes other than 1.
  auto def2 = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"},
                              {MakeArgument("axis", 2), MakeArgument("axis_w", 2)});
  std::map<std::string, Tensor> in2{{"X", RandomTensor({2, 3, 5}, 7)},
                                    {"W", RandomTensor({5, 1, 4}, 8)},
                                    {"b", RandomTensor({4}, 9)}};
  for (int i = 0; i < 3; ++i) checker.Check(def2, in2, i, 0);
}

TEST(FCTransposedOpTest, GradientMakerAndOptionalDX) {
  auto def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"});
  GradientOpsMeta meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "FCTransposedGradient");
  EXPECT_EQ(std::vector<std::string>(meta.ops[0].input().begin(), meta.ops[0].input().end()),
            (std::vector<std::string>{"X", "W", "Y_grad"}));
  EXPECT_EQ(std::vector<std::string>(meta.ops[0].output().begin(), meta.ops[0].output().end()),
            (std::vector<std::string>{"W_grad", "b_grad", "X_grad"}));
  // Two outputs: dW and db only, with the same values.
  std::map<std::string, Tensor> in{{"X", RandomTensor({4, 6}, 1)},
                                   {"W", RandomTensor({6, 3}, 2)},
                                   {"dY", RandomTensor({4, 3}, 3)}};
  Workspace ws2, ws3;
  RunOp(MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db"}), in, &ws2);
  RunOp(MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}), in,
        &ws3);
  EXPECT_EQ(ws2.GetTensor("dW").dims(), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(ws3.GetTensor("dX").dims(), (std::vector<int64_t>{4, 6}));
  ExpectNear(ToFloatVector(ws2.GetTensor("dW")), ToFloatVector(ws3.GetTensor("dW")), 0, 0);
  ExpectNear(ToFloatVector(ws2.GetTensor("db")), ToFloatVector(ws3.GetTensor("db")), 0, 0);
}

TEST(FCTransposedOpTest, EmptyBatchGivesZeroWeightGradients) {
  Workspace ws;
  Tensor X({0, 4}, DataType::FLOAT);
  X.mutable_data<float>();
  Tensor dY({0, 3}, DataType::FLOAT);
  dY.mutable_data<float>();
  RunOp(MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}),
        {{"X", X}, {"W", RandomTensor({4, 3}, 1)}, {"dY", dY}}, &ws);
  for (float v : ToFloatVector(ws.GetTensor("dW"))) EXPECT_EQ(v, 0.f);
  for (float v : ToFloatVector(ws.GetTensor("db"))) EXPECT_EQ(v, 0.f);
  EXPECT_EQ(ws.GetTensor("dX").numel(), 0);
}

TEST(FCTransposedOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"});
  std::map<std::string, Tensor> in{{"X", RandomTensor({9, 13}, 4)},
                                   {"W", RandomTensor({13, 6}, 5)},
                                   {"b", RandomTensor({6}, 6)}};
  CheckFp16MatchesFp32(def, in, {"X", "W", "b"});
  auto gdef =
      MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"});
  CheckFp16MatchesFp32(gdef,
                       {{"X", RandomTensor({9, 13}, 7)},
                        {"W", RandomTensor({13, 6}, 8)},
                        {"dY", RandomTensor({9, 6}, 9)}},
                       {"X", "W", "dY"}, {0, 1, 2}, 5e-3f, 4e-3f);
}

TEST(FCTransposedOpTest, BadShapes) {
  auto def = MakeOperatorDef("FCTransposed", "fct", {"X", "W", "b"}, {"Y"});
  // An FC-layout W (N, K) = (3, 6) for K = 6 is wrong here: W must be (K, N).
  ExpectError(def, {{"X", RandomTensor({2, 6}, 1)}, {"W", RandomTensor({3, 6}, 2)},
                    {"b", RandomTensor({6}, 3)}},
              "inner dimensions must match");
  ExpectError(def, {{"X", RandomTensor({2, 6}, 1)}, {"W", RandomTensor({6, 3}, 2)},
                    {"b", RandomTensor({4}, 3)}},
              "b has 4 elements");
  ExpectError(def, {{"X", RandomTensor({2, 6}, 1)}, {"W", RandomTensor({6, 3}, 2)},
                    {"b", IntTensor({3}, {1, 2, 3})}},
              "b must be float, float16 or bfloat16, got int32");
  ExpectError(MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"}),
              {{"X", RandomTensor({2, 6}, 1)}, {"W", RandomTensor({6, 3}, 2)},
               {"dY", RandomTensor({2, 4}, 3)}},
              "dY has dims [2, 4]");
  ExpectError(MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"},
                              {MakeArgument("axis_w", 3)}),
              {{"X", RandomTensor({2, 6}, 1)}, {"W", RandomTensor({6, 3}, 2)},
               {"b", RandomTensor({3}, 3)}},
              "axis_w 3 out of range");
}

TEST(FCTransposedOpTest, SchemaInfersShapeAndCost) {
  auto def = MakeOperatorDef("FCTransposed", "", {"X", "W", "b"}, {"Y"});
  const OpSchema* s = OpSchemaRegistry::Schema("FCTransposed");
  ASSERT_NE(s, nullptr);
  std::vector<TensorShape> in{{{8, 20}, DataType::FLOAT16}, {{20, 10}, DataType::FLOAT16},
                              {{10}, DataType::FLOAT16}};
  auto out = s->InferShapes(def, in);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_DOUBLE_EQ(s->InferCost(def, in).flops, 2.0 * 8 * 10 * 20);
  // The FC layout of the same W does not fit.
  EXPECT_THROW(s->InferShapes(def, {{{8, 10}, DataType::FLOAT}, {{20, 10}, DataType::FLOAT},
                                    {{10}, DataType::FLOAT}}),
               EnforceNotMet);
  auto gdef = MakeOperatorDef("FCTransposedGradient", "", {"X", "W", "dY"}, {"dW", "db", "dX"});
  const OpSchema* gs = OpSchemaRegistry::Schema("FCTransposedGradient");
  ASSERT_NE(gs, nullptr);
  auto gout = gs->InferShapes(gdef, {{{8, 20}, DataType::FLOAT}, {{20, 10}, DataType::FLOAT},
                                     {{8, 10}, DataType::FLOAT}});
  ASSERT_EQ(gout.size(), 3u);
  EXPECT_EQ(gout[0].dims, (std::vector<int64_t>{20, 10}));
  EXPECT_EQ(gout[1].dims, (std::vector<int64_t>{10}));
  EXPECT_EQ(gout[2].dims, (std::vector<int64_t>{8, 20}));
  EXPECT_DOUBLE_EQ(gs->InferCost(gdef, {{{8, 20}, DataType::FLOAT}, {{20, 10}, DataType::FLOAT},
                                        {{8, 10}, DataType::FLOAT}})
                       .flops,
                   4.0 * 8 * 10 * 20);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
