// Max, Min and their gradients MaxGradient / MinGradient (n inputs of one shape): values, ties,
// NaN, gradients (ops and finite differences), FP16 vs FP32 and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const char* const kTypes[] = {"Max", "Min"};

OperatorDef Def(const std::string& type, int n, const std::string& out = "Y") {
  std::vector<std::string> in;
  for (int i = 0; i < n; ++i) in.push_back("X" + std::to_string(i));
  return MakeOperatorDef(type, "", in, {out});
}

OperatorDef GradDef(const std::string& type, int n) {
  std::vector<std::string> in{"Y", "dY"}, out;
  for (int i = 0; i < n; ++i) {
    in.push_back("X" + std::to_string(i));
    out.push_back("dX" + std::to_string(i));
  }
  return MakeOperatorDef(type + "Gradient", "", in, out);
}

std::map<std::string, Tensor> ThreeInputs() {
  return {{"X0", FloatTensor({2, 2}, {1.f, -5.f, 3.f, 0.f})},
          {"X1", FloatTensor({2, 2}, {2.f, -6.f, 3.f, -1.f})},
          {"X2", FloatTensor({2, 2}, {0.f, -4.f, -7.f, 0.5f})}};
}

TEST(MinMaxOpTest, Values) {
  EXPECT_EQ(RunAndGet(Def("Max", 3), ThreeInputs()), (std::vector<float>{2.f, -4.f, 3.f, 0.5f}));
  EXPECT_EQ(RunAndGet(Def("Min", 3), ThreeInputs()), (std::vector<float>{0.f, -6.f, -7.f, -1.f}));
  EXPECT_EQ(RunAndGet(Def("Max", 3, "X0"), ThreeInputs()),
            (std::vector<float>{2.f, -4.f, 3.f, 0.5f}))
      << "in place on input 0";
  EXPECT_EQ(RunAndGet(Def("Min", 1), ThreeInputs()), (std::vector<float>{1.f, -5.f, 3.f, 0.f}))
      << "one input: a copy";
}

TEST(MinMaxOpTest, NaNInAnyInputGivesNaN) {
  for (const char* type : kTypes) {
    for (const char* input : {"X0", "X1", "X2"}) {
      ExpectNaNPropagates(Def(type, 3), ThreeInputs(), input, 1, "Y", {1});
    }
  }
}

TEST(MinMaxOpTest, GradientOpValuesWithTies) {
  // Y = max: element 2 ties between X0 and X1, and both get the whole dY.
  std::map<std::string, Tensor> in = ThreeInputs();
  in["Y"] = FloatTensor({2, 2}, {2.f, -4.f, 3.f, 0.5f});
  in["dY"] = FloatTensor({2, 2}, {10.f, 20.f, 30.f, 40.f});
  Workspace ws;
  RunOp(GradDef("Max", 3), in, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX0")), (std::vector<float>{0.f, 0.f, 30.f, 0.f}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX1")), (std::vector<float>{10.f, 0.f, 30.f, 0.f}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX2")), (std::vector<float>{0.f, 20.f, 0.f, 40.f}));
  in["Y"] = FloatTensor({2, 2}, {0.f, -6.f, -7.f, -1.f});
  RunOp(GradDef("Min", 3), in, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX0")), (std::vector<float>{0.f, 0.f, 0.f, 0.f}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX1")), (std::vector<float>{0.f, 20.f, 0.f, 40.f}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dX2")), (std::vector<float>{10.f, 0.f, 30.f, 0.f}));
}

TEST(MinMaxOpTest, GradientOpNaN) {
  std::map<std::string, Tensor> in{{"Y", FloatTensor({3}, {1.f, 2.f, 3.f})},
                                   {"dY", FloatTensor({3}, {1.f, 1.f, 1.f})},
                                   {"X0", FloatTensor({3}, {1.f, 0.f, 3.f})}};
  ExpectNaNPropagates(GradDef("Max", 1), in, "Y", 1, "dX0", {1});
  ExpectNaNPropagates(GradDef("Max", 1), in, "dY", 2, "dX0", {2});
}

TEST(MinMaxOpTest, GradientMaker) {
  for (const char* type : kTypes) {
    std::vector<GradientWrapper> g(1);
    g[0].dense = "Y_grad";
    GradientOpsMeta meta = GetGradientForOp(Def(type, 3), g);
    ASSERT_EQ(meta.ops.size(), 1u);
    const OperatorDef& op = meta.ops[0];
    EXPECT_EQ(op.type(), std::string(type) + "Gradient");
    EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
              (std::vector<std::string>{"Y", "Y_grad", "X0", "X1", "X2"}));
    EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
              (std::vector<std::string>{"X0_grad", "X1_grad", "X2_grad"}));
    // In place, X0 is gone: refused.
    try {
      GetGradientForOp(Def(type, 3, "X0"), g);
      ADD_FAILURE() << "expected an error for in-place " << type;
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find("overwrites in place"), std::string::npos) << e.what();
    }
  }
}

TEST(MinMaxOpTest, Gradients) {
  // Three inputs whose values differ by at least 0.05 at every element, so that the checker's
  // step (0.01) never changes which input wins.
  Tensor X0({3, 5, 7}, DataType::FLOAT), X1({3, 5, 7}, DataType::FLOAT),
      X2({3, 5, 7}, DataType::FLOAT);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int64_t i = 0; i < X0.numel(); ++i) {
    float a, b, c;
    do {
      a = u(rng);
      b = u(rng);
      c = u(rng);
    } while (std::fabs(a - b) < 0.05f || std::fabs(a - c) < 0.05f || std::fabs(b - c) < 0.05f);
    X0.mutable_data<float>()[i] = a;
    X1.mutable_data<float>()[i] = b;
    X2.mutable_data<float>()[i] = c;
  }
  const std::map<std::string, Tensor> in{{"X0", X0}, {"X1", X1}, {"X2", X2}};
  GradientChecker checker;
  for (const char* type : kTypes) {
    for (int i = 0; i < 3; ++i) checker.Check(Def(type, 3), in, i, 0);
  }
}

TEST(MinMaxOpTest, Fp16MatchesFp32) {
  const std::map<std::string, Tensor> in{{"X0", RandomTensor({3, 5, 7}, 4, -9.f, 9.f)},
                                         {"X1", RandomTensor({3, 5, 7}, 5, -9.f, 9.f)},
                                         {"X2", RandomTensor({3, 5, 7}, 6, -9.f, 9.f)}};
  for (const char* type : kTypes) {
    // Exact: selecting among float16 values needs no rounding.
    CheckFp16MatchesFp32(Def(type, 3), in, {"X0", "X1", "X2"}, {0}, 0.f, 0.f);
    // The gradient of the float16 forward pass (Y and X rounded alike) matches the float one.
    Workspace ws;
    std::map<std::string, Tensor> grad_in;
    for (const auto& kv : in) grad_in[kv.first] = RoundThroughHalf(kv.second);
    RunOp(Def(type, 3), grad_in, &ws);
    grad_in["Y"].CopyFrom(ws.GetTensor("Y"));
    grad_in["dY"] = RandomTensor({3, 5, 7}, 7);
    CheckFp16MatchesFp32(GradDef(type, 3), grad_in, {"Y", "dY", "X0", "X1", "X2"}, {0, 1, 2});
  }
}

TEST(MinMaxOpTest, BadInput) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    ExpectError(Def(type, 2), {{"X0", RandomTensor({2, 3}, 1)}, {"X1", RandomTensor({3, 2}, 2)}},
                "input 1 'X1' is");
    ExpectError(Def(type, 2),
                {{"X0", RandomTensor({2}, 1)}, {"X1", ToHalf(RandomTensor({2}, 2))}},
                "all inputs must have one shape and type");
    ExpectError(Def(type, 2), {{"X0", IntTensor({2}, {1, 2})}, {"X1", IntTensor({2}, {3, 4})}},
                "float, float16 or bfloat16");
    ExpectError(MakeOperatorDef(type, "", {}, {"Y"}), {}, "got 0 input(s)");
    ExpectError(Def(type, 2, "X1"), {{"X0", RandomTensor({2}, 1)}, {"X1", RandomTensor({2}, 2)}},
                "cannot run in place on that pair");
    const std::string grad = std::string(type) + "Gradient";
    ExpectError(MakeOperatorDef(grad, "", {"Y", "dY", "X0"}, {"dX0", "dX1"}),
                {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({2}, 2)},
                 {"X0", RandomTensor({2}, 3)}},
                "does not accept 3 input(s) with 2 output(s)");
    ExpectError(GradDef(type, 1),
                {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({3}, 2)},
                 {"X0", RandomTensor({2}, 3)}},
                "Y and dY must have the same shape, got [2] and [3]");
    ExpectError(GradDef(type, 2),
                {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({2}, 2)},
                 {"X0", RandomTensor({2}, 3)}, {"X1", RandomTensor({1, 2}, 4)}},
                "input 3 'X1' (forward input X2) is");
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
