#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::vector<float> Apply(const Tensor& x, float (*f)(float)) {
  std::vector<float> y;
  for (int64_t i = 0; i < x.numel(); ++i) y.push_back(f(x.data<float>()[i]));
  return y;
}

float NaiveSigmoid(float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-double(x)))); }
float NaiveTanh(float x) { return static_cast<float>(std::tanh(double(x))); }

TEST(SigmoidTanhOpTest, SigmoidForward) {
  Tensor X = RandomTensor({3, 5, 7}, 1, -6.f, 6.f);
  auto y = RunAndGet(MakeOperatorDef("Sigmoid", "", {"X"}, {"Y"}), {{"X", X}});
  ExpectNear(y, Apply(X, NaiveSigmoid), 1e-6f, 1e-5f);
  // Saturation: no NaN or inf at the extremes.
  auto ext = RunAndGet(MakeOperatorDef("Sigmoid", "", {"X"}, {"Y"}),
                       {{"X", FloatTensor({4}, {-1000.f, -90.f, 90.f, 1000.f})}});
  ExpectNear(ext, {0.f, 0.f, 1.f, 1.f}, 1e-30f, 0.f, "saturated sigmoid");
}

TEST(SigmoidTanhOpTest, TanhForward) {
  Tensor X = RandomTensor({3, 5, 7}, 2, -4.f, 4.f);
  auto y = RunAndGet(MakeOperatorDef("Tanh", "", {"X"}, {"Y"}), {{"X", X}});
  ExpectNear(y, Apply(X, NaiveTanh), 1e-6f, 1e-5f);
}

TEST(SigmoidTanhOpTest, InPlaceForward) {
  Tensor X = RandomTensor({2, 9}, 3, -3.f, 3.f);
  for (const char* type : {"Sigmoid", "Tanh"}) {
    auto y = RunAndGet(MakeOperatorDef(type, "", {"X"}, {"X"}), {{"X", X}});
    ExpectNear(y, Apply(X, std::string(type) == "Sigmoid" ? NaiveSigmoid : NaiveTanh), 1e-6f, 1e-5f,
               type);
  }
}

TEST(SigmoidTanhOpTest, GradientOpsMatchFormulaAndRunInPlace) {
  Tensor Y = RandomTensor({4, 6}, 4, -0.99f, 0.99f), dY = RandomTensor({4, 6}, 5);
  const float* y = Y.data<float>();
  const float* dy = dY.data<float>();
  std::vector<float> want_sig, want_tanh;
  for (int i = 0; i < 24; ++i) {
    want_sig.push_back(dy[i] * y[i] * (1.f - y[i]));
    want_tanh.push_back(dy[i] * (1.f - y[i] * y[i]));
  }
  ExpectNear(RunAndGet(MakeOperatorDef("SigmoidGradient", "", {"Y", "dY"}, {"dX"}),
                       {{"Y", Y}, {"dY", dY}}),
             want_sig, 1e-6f, 1e-5f, "SigmoidGradient");
  ExpectNear(
      RunAndGet(MakeOperatorDef("TanhGradient", "", {"Y", "dY"}, {"dY"}), {{"Y", Y}, {"dY", dY}}),
      want_tanh, 1e-6f, 1e-5f, "TanhGradient in place");
}

TEST(SigmoidTanhOpTest, GradientMakerUsesOutput) {
  for (const char* type : {"Sigmoid", "Tanh"}) {
    auto def = MakeOperatorDef(type, "", {"X"}, {"Y"});
    std::vector<GradientWrapper> g(1);
    g[0].dense = "Y_grad";
    GradientOpsMeta meta = GetGradientForOp(def, g);
    ASSERT_EQ(meta.ops.size(), 1u);
    EXPECT_EQ(meta.ops[0].type(), std::string(type) + "Gradient");
    EXPECT_EQ(meta.ops[0].input(0), "Y");
    EXPECT_EQ(meta.ops[0].input(1), "Y_grad");
    EXPECT_EQ(meta.ops[0].output(0), "X_grad");
  }
}

TEST(SigmoidTanhOpTest, Gradients) {
  GradientChecker checker;
  Tensor X = RandomTensor({2, 3, 7, 9}, 6, -3.f, 3.f);
  checker.Check(MakeOperatorDef("Sigmoid", "", {"X"}, {"Y"}), {{"X", X}}, 0, 0);
  checker.Check(MakeOperatorDef("Tanh", "", {"X"}, {"Y"}), {{"X", X}}, 0, 0);
}

TEST(SigmoidTanhOpTest, Fp16MatchesFp32) {
  for (const char* type : {"Sigmoid", "Tanh"}) {
    CheckFp16MatchesFp32(MakeOperatorDef(type, "", {"X"}, {"Y"}),
                         {{"X", RandomTensor({2, 3, 7, 9}, 7, -5.f, 5.f)}}, {"X"});
    CheckFp16MatchesFp32(
        MakeOperatorDef(std::string(type) + "Gradient", "", {"Y", "dY"}, {"dX"}),
        {{"Y", RandomTensor({5, 13}, 8, -1.f, 1.f)}, {"dY", RandomTensor({5, 13}, 9)}},
        {"Y", "dY"});
  }
}

TEST(SigmoidTanhOpTest, RejectsIntegerInput) {
  for (const char* type : {"Sigmoid", "Tanh"}) {
    Workspace ws;
    try {
      RunOp(MakeOperatorDef(type, "", {"X"}, {"Y"}), {{"X", IntTensor({2}, {1, 2})}}, &ws);
      FAIL() << "expected an error for " << type;
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find("float, float16 or bfloat16"), std::string::npos)
          << e.what();
    }
  }
}

TEST(SigmoidTanhOpTest, NaNPropagates) {
  for (const char* type : {"Sigmoid", "Tanh"}) {
    ExpectNaNPropagates(MakeOperatorDef(type, "", {"X"}, {"Y"}), {{"X", RandomTensor({5}, 3)}},
                        "X", 2, "Y", {2});
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
