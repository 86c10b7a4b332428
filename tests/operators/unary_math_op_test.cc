// Exp, Log, Sqrt, Abs(+AbsGradient), Reciprocal(+ReciprocalGradient): values, gradients (ops and
// finite differences), FP16 vs FP32, in-place use and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const float kInf = std::numeric_limits<float>::infinity();

OperatorDef Def(const std::string& type, const std::string& out = "Y") {
  return MakeOperatorDef(type, "", {"X"}, {out});
}

// "Type(in0,in1)->out0[,arg=value]" for each gradient op of `def` given Y's gradient "Y_grad".
std::vector<std::string> GradientOps(const OperatorDef& def) {
  std::vector<GradientWrapper> g(1);
  g[0].dense = def.output(0) + "_grad";
  std::vector<std::string> ops;
  for (const OperatorDef& op : GetGradientForOp(def, g).ops) {
    std::string s = op.type() + "(";
    for (int i = 0; i < op.input_size(); ++i) s += (i ? "," : "") + op.input(i);
    s += ")->";
    for (int i = 0; i < op.output_size(); ++i) s += (i ? "," : "") + op.output(i);
    for (const Argument& a : op.arg()) s += "," + a.name() + "=" + std::to_string(a.f());
    ops.push_back(s);
  }
  return ops;
}

TEST(UnaryMathOpTest, ExactValues) {
  const Tensor X = FloatTensor({2, 2}, {0.f, 1.f, -1.f, 2.f});
  ExpectNear(RunAndGet(Def("Exp"), {{"X", X}}),
             {1.f, 2.7182818f, 0.36787944f, 7.3890561f}, 0.f, 1e-6f, "Exp");
  ExpectNear(RunAndGet(Def("Abs"), {{"X", FloatTensor({4}, {-2.f, 0.f, 3.5f, -0.25f})}}),
             {2.f, 0.f, 3.5f, 0.25f}, 0.f, 0.f, "Abs");
  ExpectNear(RunAndGet(Def("Reciprocal"), {{"X", FloatTensor({3}, {2.f, -4.f, 0.5f})}}),
             {0.5f, -0.25f, 2.f}, 0.f, 0.f, "Reciprocal");
  ExpectNear(RunAndGet(Def("Sqrt"), {{"X", FloatTensor({4}, {0.f, 4.f, 2.25f, 2.f})}}),
             {0.f, 2.f, 1.5f, 1.4142135f}, 0.f, 1e-7f, "Sqrt");
  ExpectNear(RunAndGet(Def("Log"), {{"X", FloatTensor({3}, {1.f, 2.7182818f, 0.5f})}}),
             {0.f, 1.f, -0.69314718f}, 1e-7f, 1e-6f, "Log");
}

TEST(UnaryMathOpTest, DomainEdges) {
  // IEEE results outside the smooth domain, the same on every backend.
  auto log = RunAndGet(Def("Log"), {{"X", FloatTensor({2}, {0.f, -1.f})}});
  EXPECT_EQ(log[0], -kInf);
  EXPECT_TRUE(std::isnan(log[1]));
  EXPECT_TRUE(std::isnan(RunAndGet(Def("Sqrt"), {{"X", FloatTensor({1}, {-1.f})}})[0]));
  EXPECT_EQ(RunAndGet(Def("Reciprocal"), {{"X", FloatTensor({2}, {0.f, -0.f})}}),
            (std::vector<float>{kInf, -kInf}));
  EXPECT_EQ(RunAndGet(Def("Exp"), {{"X", FloatTensor({2}, {100.f, -200.f})}}),
            (std::vector<float>{kInf, 0.f}));
}

TEST(UnaryMathOpTest, InPlace) {
  const Tensor X = RandomTensor({3, 7}, 1, 0.5f, 2.f);
  for (const char* type : {"Exp", "Log", "Sqrt", "Reciprocal"}) {
    EXPECT_EQ(RunAndGet(Def(type, "X"), {{"X", X}}), RunAndGet(Def(type), {{"X", X}})) << type;
  }
}

TEST(UnaryMathOpTest, GradientMakers) {
  EXPECT_EQ(GradientOps(Def("Exp")), (std::vector<std::string>{"Mul(Y,Y_grad)->X_grad"}));
  EXPECT_EQ(GradientOps(Def("Exp", "X")), (std::vector<std::string>{"Mul(X,X_grad)->X_grad"}))
      << "Exp's gradient needs only Y, so an in-place Exp is differentiable";
  EXPECT_EQ(GradientOps(Def("Log")), (std::vector<std::string>{"Div(Y_grad,X)->X_grad"}));
  EXPECT_EQ(GradientOps(Def("Sqrt")),
            (std::vector<std::string>{"Scale(Y_grad)->X_grad,scale=0.500000",
                                      "Div(X_grad,Y)->X_grad"}));
  EXPECT_EQ(GradientOps(Def("Abs")), (std::vector<std::string>{"AbsGradient(X,Y_grad)->X_grad"}));
  EXPECT_EQ(GradientOps(Def("Reciprocal")),
            (std::vector<std::string>{"ReciprocalGradient(Y,Y_grad)->X_grad"}));
}

TEST(UnaryMathOpTest, InPlaceLogCannotBeDifferentiated) {
  std::vector<GradientWrapper> g(1);
  g[0].dense = "X_grad";
  try {
    GetGradientForOp(Def("Log", "X"), g);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("overwrites in place"), std::string::npos) << e.what();
  }
}

TEST(UnaryMathOpTest, Gradients) {
  GradientChecker checker;
  checker.Check(Def("Exp"), {{"X", RandomTensor({2, 3, 5, 7}, 2, -2.f, 2.f)}}, 0, 0);
  checker.Check(Def("Log"), {{"X", RandomTensor({2, 3, 5, 7}, 3, 0.5f, 3.f)}}, 0, 0);
  checker.Check(Def("Sqrt"), {{"X", RandomTensor({2, 3, 5, 7}, 4, 0.5f, 3.f)}}, 0, 0);
  // Abs has a kink at 0 and Reciprocal a pole: inputs at least 0.05 / 0.5 away.
  checker.Check(Def("Abs"), {{"X", RandomTensorAwayFrom({2, 3, 5, 7}, 5, {0.f}, 0.05f)}}, 0, 0);
  checker.Check(Def("Reciprocal"),
                {{"X", RandomTensorAwayFrom({2, 3, 5, 7}, 6, {0.f}, 0.5f, -2.f, 2.f)}}, 0, 0);
}

TEST(UnaryMathOpTest, GradientOpValues) {
  const Tensor dY = FloatTensor({4}, {1.f, -2.f, 3.f, 0.5f});
  EXPECT_EQ(RunAndGet(MakeOperatorDef("AbsGradient", "", {"X", "dY"}, {"dX"}),
                      {{"X", FloatTensor({4}, {2.f, -1.f, 0.f, -0.f})}, {"dY", dY}}),
            (std::vector<float>{1.f, 2.f, 0.f, 0.f}));
  EXPECT_EQ(RunAndGet(MakeOperatorDef("ReciprocalGradient", "", {"Y", "dY"}, {"dY"}),
                      {{"Y", FloatTensor({4}, {2.f, -1.f, 0.5f, 0.f})}, {"dY", dY}}),
            (std::vector<float>{-4.f, 2.f, -0.75f, -0.f}))
      << "in place on dY";
}

TEST(UnaryMathOpTest, AbsGradientNaN) {
  const auto def = MakeOperatorDef("AbsGradient", "", {"X", "dY"}, {"dX"});
  const std::map<std::string, Tensor> in{{"X", FloatTensor({3}, {1.f, 0.f, -1.f})},
                                         {"dY", FloatTensor({3}, {1.f, 1.f, 1.f})}};
  ExpectNaNPropagates(def, in, "X", 1, "dX", {1});
  ExpectNaNPropagates(def, in, "dY", 1, "dX", {1});
}

TEST(UnaryMathOpTest, Fp16MatchesFp32) {
  CheckFp16MatchesFp32(Def("Exp"), {{"X", RandomTensor({3, 5, 7}, 7, -4.f, 4.f)}}, {"X"});
  CheckFp16MatchesFp32(Def("Log"), {{"X", RandomTensor({3, 5, 7}, 8, 0.1f, 50.f)}}, {"X"});
  CheckFp16MatchesFp32(Def("Sqrt"), {{"X", RandomTensor({3, 5, 7}, 9, 0.f, 50.f)}}, {"X"});
  CheckFp16MatchesFp32(Def("Abs"), {{"X", RandomTensor({3, 5, 7}, 10, -9.f, 9.f)}}, {"X"});
  CheckFp16MatchesFp32(Def("Reciprocal"),
                       {{"X", RandomTensorAwayFrom({3, 5, 7}, 11, {0.f}, 0.1f, -9.f, 9.f)}},
                       {"X"});
  const Tensor dY = RandomTensor({5, 13}, 12);
  CheckFp16MatchesFp32(MakeOperatorDef("AbsGradient", "", {"X", "dY"}, {"dX"}),
                       {{"X", RandomTensorAwayFrom({5, 13}, 13, {0.f}, 0.01f)}, {"dY", dY}},
                       {"X", "dY"});
  CheckFp16MatchesFp32(MakeOperatorDef("ReciprocalGradient", "", {"Y", "dY"}, {"dX"}),
                       {{"Y", RandomTensor({5, 13}, 14, -3.f, 3.f)}, {"dY", dY}}, {"Y", "dY"});
}

TEST(UnaryMathOpTest, BadInput) {
  for (const char* type : {"Exp", "Log", "Sqrt", "Abs", "Reciprocal"}) {
    SCOPED_TRACE(type);
    ExpectError(Def(type), {{"X", IntTensor({2}, {1, 2})}}, "float, float16 or bfloat16");
    ExpectError(MakeOperatorDef(type, "", {"X", "X2"}, {"Y"}),
                {{"X", RandomTensor({2}, 1)}, {"X2", RandomTensor({2}, 2)}}, "got 2 input(s)");
  }
  ExpectError(Def("Abs", "X"), {{"X", RandomTensor({2}, 1)}},
              "cannot run in place on that pair");
  for (const char* type : {"AbsGradient", "ReciprocalGradient"}) {
    SCOPED_TRACE(type);
    const auto def = MakeOperatorDef(type, "", {"T", "dY"}, {"dX"});
    ExpectError(def, {{"T", RandomTensor({2, 3}, 1)}, {"dY", RandomTensor({3, 2}, 2)}},
                "must have the same shape, got [2, 3] and [3, 2]");
    ExpectError(def, {{"T", RandomTensor({2}, 1)}, {"dY", IntTensor({2}, {1, 2})}},
                "float, float16 or bfloat16");
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
