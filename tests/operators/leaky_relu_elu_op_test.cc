// LeakyRelu(+LeakyReluGradient) and Elu(+EluGradient): values, `alpha` handling, gradients (ops and
// finite differences), FP16 vs FP32, NaN and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef Def(const std::string& type, std::vector<Argument> args = {},
                const std::string& out = "Y") {
  return MakeOperatorDef(type, "", {"X"}, {out}, std::move(args));
}

OperatorDef GradDef(const std::string& type, std::vector<Argument> args = {},
                    const std::string& out = "dX") {
  return MakeOperatorDef(type, "", {"Y", "dY"}, {out}, std::move(args));
}

TEST(LeakyReluEluOpTest, LeakyReluValues) {
  const Tensor X = FloatTensor({5}, {-2.f, -0.5f, 0.f, 0.5f, 3.f});
  EXPECT_EQ(RunAndGet(Def("LeakyRelu"), {{"X", X}}),
            (std::vector<float>{-0.02f, -0.005f, 0.f, 0.5f, 3.f}))
      << "default alpha 0.01";
  EXPECT_EQ(RunAndGet(Def("LeakyRelu", {MakeArgument("alpha", 0.25f)}, "X"), {{"X", X}}),
            (std::vector<float>{-0.5f, -0.125f, 0.f, 0.5f, 3.f}))
      << "alpha 0.25, in place";
}

TEST(LeakyReluEluOpTest, EluValues) {
  const Tensor X = FloatTensor({4}, {-2.f, -0.5f, 0.f, 3.f});
  ExpectNear(RunAndGet(Def("Elu"), {{"X", X}}),
             {std::expm1(-2.f), std::expm1(-0.5f), 0.f, 3.f}, 0.f, 1e-7f, "default alpha 1");
  ExpectNear(RunAndGet(Def("Elu", {MakeArgument("alpha", 1.5f)}, "X"), {{"X", X}}),
             {1.5f * std::expm1(-2.f), 1.5f * std::expm1(-0.5f), 0.f, 3.f}, 0.f, 1e-7f,
             "alpha 1.5, in place");
  // Saturates at -alpha.
  EXPECT_EQ(
      RunAndGet(Def("Elu", {MakeArgument("alpha", 2.f)}), {{"X", FloatTensor({1}, {-100.f})}}),
      (std::vector<float>{-2.f}));
}

TEST(LeakyReluEluOpTest, GradientOpValues) {
  const Tensor Y = FloatTensor({4}, {-0.5f, 0.f, 0.25f, 2.f});
  const Tensor dY = FloatTensor({4}, {2.f, 4.f, -1.f, 3.f});
  EXPECT_EQ(RunAndGet(GradDef("LeakyReluGradient", {MakeArgument("alpha", 0.5f)}),
                      {{"Y", Y}, {"dY", dY}}),
            (std::vector<float>{1.f, 2.f, -1.f, 3.f}))
      << "Y = 0 takes the alpha side";
  EXPECT_EQ(RunAndGet(GradDef("EluGradient", {MakeArgument("alpha", 2.f)}, "dY"),
                      {{"Y", Y}, {"dY", dY}}),
            (std::vector<float>{3.f, 4.f, -1.f, 3.f}))
      << "dY * (Y + alpha) for Y < 0, in place on dY";
}

TEST(LeakyReluEluOpTest, LeakyReluWithZeroAlphaHasNoGradientBelowZero) {
  // Y = 0 * X = -0 for X < 0: the gradient there is 0 (Caffe2 would pass dY through).
  Workspace ws;
  const auto fwd = Def("LeakyRelu", {MakeArgument("alpha", 0.f)});
  RunOp(fwd, {{"X", FloatTensor({3}, {-1.f, -2.f, 1.f})}}, &ws);
  std::vector<GradientWrapper> g(1);
  g[0].dense = "dY";
  SetInput(&ws, "dY", FloatTensor({3}, {5.f, 5.f, 5.f}));
  for (const auto& op : GetGradientForOp(fwd, g).ops) CreateOperator(op, &ws)->Run(0);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("X_grad")), (std::vector<float>{0.f, 0.f, 5.f}));
}

TEST(LeakyReluEluOpTest, GradientMakersCopyAlpha) {
  for (const char* type : {"LeakyRelu", "Elu"}) {
    std::vector<GradientWrapper> g(1);
    g[0].dense = "Y_grad";
    GradientOpsMeta meta = GetGradientForOp(Def(type, {MakeArgument("alpha", 0.3f)}), g);
    ASSERT_EQ(meta.ops.size(), 1u);
    const OperatorDef& op = meta.ops[0];
    EXPECT_EQ(op.type(), std::string(type) + "Gradient");
    EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
              (std::vector<std::string>{"Y", "Y_grad"}));
    EXPECT_EQ(op.output(0), "X_grad");
    ASSERT_EQ(op.arg_size(), 1);
    EXPECT_EQ(op.arg(0).name(), "alpha");
    EXPECT_EQ(op.arg(0).f(), 0.3f);
  }
}

TEST(LeakyReluEluOpTest, Gradients) {
  GradientChecker checker;  // inputs kept 0.05 away from the kink at 0
  const Tensor X = RandomTensorAwayFrom({2, 3, 5, 7}, 1, {0.f}, 0.05f, -3.f, 3.f);
  checker.Check(Def("LeakyRelu"), {{"X", X}}, 0, 0);
  checker.Check(Def("LeakyRelu", {MakeArgument("alpha", 0.3f)}), {{"X", X}}, 0, 0);
  checker.Check(Def("Elu"), {{"X", X}}, 0, 0);
  checker.Check(Def("Elu", {MakeArgument("alpha", 0.4f)}), {{"X", X}}, 0, 0);
}

TEST(LeakyReluEluOpTest, Fp16MatchesFp32) {
  const Tensor X = RandomTensor({3, 5, 7}, 2, -6.f, 6.f);
  const Tensor Y = RandomTensor({5, 13}, 3, -0.9f, 3.f), dY = RandomTensor({5, 13}, 4);
  for (const char* type : {"LeakyRelu", "Elu"}) {
    SCOPED_TRACE(type);
    const std::vector<Argument> args{MakeArgument("alpha", 0.7f)};
    CheckFp16MatchesFp32(Def(type, args), {{"X", X}}, {"X"});
    CheckFp16MatchesFp32(GradDef(std::string(type) + "Gradient", args), {{"Y", Y}, {"dY", dY}},
                         {"Y", "dY"});
  }
}

TEST(LeakyReluEluOpTest, NaNPropagates) {
  const std::map<std::string, Tensor> x{{"X", RandomTensor({5}, 5)}};
  const std::map<std::string, Tensor> ydy{{"Y", RandomTensor({5}, 6)},
                                          {"dY", RandomTensor({5}, 7)}};
  for (const char* type : {"LeakyRelu", "Elu"}) {
    ExpectNaNPropagates(Def(type), x, "X", 2, "Y", {2});
    ExpectNaNPropagates(GradDef(std::string(type) + "Gradient"), ydy, "Y", 1, "dX", {1});
    ExpectNaNPropagates(GradDef(std::string(type) + "Gradient"), ydy, "dY", 3, "dX", {3});
  }
}

TEST(LeakyReluEluOpTest, BadInput) {
  for (const char* type : {"LeakyRelu", "Elu"}) {
    SCOPED_TRACE(type);
    const std::string grad = std::string(type) + "Gradient";
    ExpectError(Def(type), {{"X", IntTensor({2}, {1, 2})}}, "float, float16 or bfloat16");
    ExpectError(MakeOperatorDef(type, "", {"X"}, {"Y", "Z"}), {{"X", RandomTensor({2}, 1)}},
                "got 2 output(s)");
    ExpectError(GradDef(grad), {{"Y", RandomTensor({2, 3}, 1)}, {"dY", RandomTensor({6}, 2)}},
                "Y and dY must have the same shape, got [2, 3] and [6]");
    ExpectError(GradDef(grad), {{"Y", IntTensor({2}, {1, 2})}, {"dY", RandomTensor({2}, 2)}},
                "float, float16 or bfloat16");
  }
  ExpectError(GradDef("LeakyReluGradient", {MakeArgument("alpha", -0.1f)}),
              {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({2}, 2)}},
              "LeakyReluGradient needs alpha >= 0");
  ExpectError(GradDef("EluGradient", {MakeArgument("alpha", 0.f)}),
              {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({2}, 2)}},
              "EluGradient needs alpha > 0");
  // The forward ops take any alpha.
  EXPECT_EQ(RunAndGet(Def("LeakyRelu", {MakeArgument("alpha", -1.f)}),
                      {{"X", FloatTensor({2}, {-2.f, 2.f})}}),
            (std::vector<float>{2.f, 2.f}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
