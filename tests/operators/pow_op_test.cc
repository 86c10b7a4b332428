// Pow in both forms (`exponent` argument; two same-shape inputs): values, gradients (ops and
// finite differences, in-place too), FP16 vs FP32 and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef PowArg(float exponent, const std::string& out = "Y") {
  return MakeOperatorDef("Pow", "", {"X"}, {out}, {MakeArgument("exponent", exponent)});
}

OperatorDef PowTensor(const std::string& out = "Y") {
  return MakeOperatorDef("Pow", "", {"X", "E"}, {out});
}

GradientOpsMeta Gradient(const OperatorDef& def, const std::string& dy) {
  std::vector<GradientWrapper> g(1);
  g[0].dense = dy;
  return GetGradientForOp(def, g);
}

std::vector<std::string> Inputs(const OperatorDef& op) {
  return {op.input().begin(), op.input().end()};
}

TEST(PowOpTest, ExponentArgumentValues) {
  const Tensor X = FloatTensor({2, 2}, {-3.f, 0.5f, 0.f, 2.f});
  EXPECT_EQ(RunAndGet(PowArg(2.f), {{"X", X}}), (std::vector<float>{9.f, 0.25f, 0.f, 4.f}));
  EXPECT_EQ(RunAndGet(PowArg(3.f), {{"X", X}}), (std::vector<float>{-27.f, 0.125f, 0.f, 8.f}));
  EXPECT_EQ(RunAndGet(PowArg(-1.f), {{"X", FloatTensor({2}, {2.f, -4.f})}}),
            (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(RunAndGet(PowArg(0.5f), {{"X", FloatTensor({2}, {4.f, 2.25f})}}),
            (std::vector<float>{2.f, 1.5f}));
  EXPECT_EQ(RunAndGet(PowArg(0.f), {{"X", X}}), (std::vector<float>{1.f, 1.f, 1.f, 1.f}));
  EXPECT_TRUE(std::isnan(RunAndGet(PowArg(0.5f), {{"X", FloatTensor({1}, {-4.f})}})[0]));
  // In place.
  EXPECT_EQ(RunAndGet(PowArg(2.f, "X"), {{"X", X}}), (std::vector<float>{9.f, 0.25f, 0.f, 4.f}));
}

TEST(PowOpTest, TwoInputValues) {
  const Tensor X = FloatTensor({2, 2}, {2.f, 3.f, 4.f, 9.f});
  const Tensor E = FloatTensor({2, 2}, {3.f, 2.f, 0.5f, -0.5f});
  const std::vector<float> want{8.f, 9.f, 2.f, 1.f / 3.f};
  ExpectNear(RunAndGet(PowTensor(), {{"X", X}, {"E", E}}), want, 0.f, 1e-7f);
  ExpectNear(RunAndGet(PowTensor("X"), {{"X", X}, {"E", E}}), want, 0.f, 1e-7f, "in place on X");
  ExpectNear(RunAndGet(PowTensor("E"), {{"X", X}, {"E", E}}), want, 0.f, 1e-7f, "in place on E");
  // Y follows X's dtype; E may be of the other float type.
  Workspace ws;
  RunOp(PowTensor(), {{"X", ToHalf(X)}, {"E", E}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), want, 0.f, 1e-3f, "float16 X, float E");
  RunOp(PowTensor("E"), {{"X", X}, {"E", ToHalf(E)}}, &ws);
  EXPECT_EQ(ws.GetTensor("E").dtype(), DataType::FLOAT);
  ExpectNear(ToFloatVector(ws.GetTensor("E")), want, 0.f, 1e-7f, "float X in place on half E");
}

TEST(PowOpTest, ExponentArgumentGradientOps) {
  GradientOpsMeta meta = Gradient(PowArg(3.f), "Y_grad");
  ASSERT_EQ(meta.ops.size(), 3u);
  EXPECT_EQ(meta.ops[0].type(), "Pow");
  EXPECT_EQ(Inputs(meta.ops[0]), (std::vector<std::string>{"X"}));
  EXPECT_EQ(meta.ops[0].output(0), "X_grad");
  ASSERT_EQ(meta.ops[0].arg_size(), 1) << "the forward arguments are not copied";
  EXPECT_EQ(meta.ops[0].arg(0).name(), "exponent");
  EXPECT_EQ(meta.ops[0].arg(0).f(), 2.f);
  EXPECT_EQ(meta.ops[1].type(), "Mul");
  EXPECT_EQ(Inputs(meta.ops[1]), (std::vector<std::string>{"X_grad", "Y_grad"}));
  EXPECT_EQ(meta.ops[1].output(0), "X_grad");
  EXPECT_EQ(meta.ops[1].arg_size(), 0);
  EXPECT_EQ(meta.ops[2].type(), "Scale");
  EXPECT_EQ(Inputs(meta.ops[2]), (std::vector<std::string>{"X_grad"}));
  EXPECT_EQ(meta.ops[2].output(0), "X_grad");
  ASSERT_EQ(meta.ops[2].arg_size(), 1);
  EXPECT_EQ(meta.ops[2].arg(0).name(), "scale");
  EXPECT_EQ(meta.ops[2].arg(0).f(), 3.f);
  // In place: X^(e-1) recovered from Y as Y^((e-1)/e).
  meta = Gradient(PowArg(4.f, "X"), "dY");
  ASSERT_EQ(meta.ops.size(), 3u);
  EXPECT_EQ(meta.ops[0].arg(0).f(), 0.75f);
}

TEST(PowOpTest, TwoInputGradientOps) {
  GradientOpsMeta meta = Gradient(PowTensor(), "Y_grad");
  std::vector<std::string> got;
  for (const auto& op : meta.ops) {
    std::string s = op.type() + "(";
    for (const auto& in : op.input()) s += in + " ";
    got.push_back(s + ")->" + op.output(0));
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "ConstantFill(E )->E_grad", "Sub(E E_grad )->E_grad",
                     "Pow(X E_grad )->X_grad", "Mul(X_grad Y_grad )->X_grad",
                     "Mul(X_grad E )->X_grad", "Log(X )->E_grad_autogen_pre_red",
                     "Mul(E_grad_autogen_pre_red Y )->E_grad_autogen_pre_red",
                     "Mul(E_grad_autogen_pre_red Y_grad )->E_grad"}));
  EXPECT_EQ(meta.g_input[0].dense, "X_grad");
  EXPECT_EQ(meta.g_input[1].dense, "E_grad");
}

TEST(PowOpTest, Gradients) {
  GradientChecker checker;
  // Integer exponent: any sign of X.
  checker.Check(PowArg(3.f), {{"X", RandomTensor({2, 3, 5, 7}, 1, -2.f, 2.f)}}, 0, 0);
  checker.Check(PowArg(2.5f), {{"X", RandomTensor({2, 3, 5, 7}, 2, 0.5f, 2.f)}}, 0, 0);
  checker.Check(PowArg(-1.5f), {{"X", RandomTensor({2, 3, 5, 7}, 3, 0.5f, 2.f)}}, 0, 0);
  const std::map<std::string, Tensor> in{{"X", RandomTensor({3, 5, 7}, 4, 0.5f, 2.f)},
                                         {"E", RandomTensor({3, 5, 7}, 5, -2.f, 2.f)}};
  checker.Check(PowTensor(), in, 0, 0);
  checker.Check(PowTensor(), in, 1, 0);
}

// After an in-place Pow the gradient ops read Y where X was; for X > 0 the result is exact.
TEST(PowOpTest, InPlaceGradientForPositiveX) {
  const Tensor X = RandomTensor({4, 9}, 6, 0.5f, 2.f);
  const Tensor dY = RandomTensor({4, 9}, 7);
  const float e = 2.5f;
  Workspace ws;
  RunOp(PowArg(e, "X"), {{"X", X}, {"dY", dY}}, &ws);
  for (const auto& op : Gradient(PowArg(e, "X"), "dY").ops) CreateOperator(op, &ws)->Run(0);
  std::vector<float> want;
  for (int64_t i = 0; i < X.numel(); ++i) {
    want.push_back(e * std::pow(X.data<float>()[i], e - 1.f) * dY.data<float>()[i]);
  }
  ExpectNear(ToFloatVector(ws.GetTensor("X_grad")), want, 1e-5f, 1e-5f);
}

TEST(PowOpTest, Fp16MatchesFp32) {
  CheckFp16MatchesFp32(PowArg(2.5f), {{"X", RandomTensor({3, 5, 7}, 8, 0.f, 4.f)}}, {"X"});
  CheckFp16MatchesFp32(PowArg(-2.f), {{"X", RandomTensor({3, 5, 7}, 9, 0.5f, 4.f)}}, {"X"});
  const std::map<std::string, Tensor> in{{"X", RandomTensor({3, 5, 7}, 10, 0.1f, 3.f)},
                                         {"E", RandomTensor({3, 5, 7}, 11, -2.f, 2.f)}};
  CheckFp16MatchesFp32(PowTensor(), in, {"X", "E"});
  CheckFp16MatchesFp32(PowTensor(), in, {"E"});
}

TEST(PowOpTest, BadInput) {
  ExpectError(MakeOperatorDef("Pow", "", {"X"}, {"Y"}), {{"X", RandomTensor({2}, 1)}},
              "needs the `exponent` argument");
  const std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3}, 1)},
                                         {"E", RandomTensor({2, 3}, 2)}};
  ExpectError(MakeOperatorDef("Pow", "", {"X", "E"}, {"Y"}, {MakeArgument("exponent", 2.f)}), in,
              "not from both");
  ExpectError(PowTensor(), {{"X", RandomTensor({2, 3}, 1)}, {"E", RandomTensor({3}, 2)}},
              "same shape (broadcasting is not supported), got X dims [2, 3] and E dims [3]");
  ExpectError(MakeOperatorDef("Pow", "", {"X", "E"}, {"Y"}, {MakeArgument("broadcast", 1)}),
              {{"X", RandomTensor({2, 3}, 1)}, {"E", RandomTensor({1}, 2)}},
              "broadcasting is not supported");
  ExpectError(PowArg(2.f), {{"X", IntTensor({2}, {1, 2})}}, "float, float16 or bfloat16");
  ExpectError(PowTensor(), {{"X", RandomTensor({2}, 1)}, {"E", IntTensor({2}, {1, 2})}},
              "float, float16 or bfloat16");
  ExpectError(MakeOperatorDef("Pow", "", {"X", "E", "F"}, {"Y"}),
              {{"X", RandomTensor({2}, 1)}, {"E", RandomTensor({2}, 2)},
               {"F", RandomTensor({2}, 3)}},
              "got 3 input(s)");
}

TEST(PowOpTest, GradientRefusals) {
  auto error = [](const OperatorDef& def) {
    try {
      Gradient(def, "dY");
    } catch (const EnforceNotMet& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(PowArg(0.f, "X")).find("needs a nonzero exponent"), std::string::npos);
  EXPECT_NE(error(PowTensor("X")).find("overwrites in place"), std::string::npos);
  EXPECT_NE(error(PowTensor("E")).find("overwrites in place"), std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
