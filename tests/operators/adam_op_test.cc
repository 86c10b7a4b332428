// Adam (Caffe2's rule) and MixedPrecisionAdamUpdate (PyTorch's Adam / AdamW on an FP32 master):
// 20 steps against the formula written out in double (<= 1e-6 relative), 16-bit gradients equal
// to the FP32 master math on the rounded gradient, the skipped step, the copy, bad inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

constexpr int kSteps = 20;
constexpr float kB1 = 0.9f, kB2 = 0.999f;

// Caffe2's Adam: lr negative, iter counted before the step (t = iter + 1).
TEST(AdamOpTest, CaffeFormulaOverTwentySteps) {
  const float lr = -0.01f, eps = 1e-5f;
  Workspace ws;
  SetInput(&ws, "p", RandomTensor({5, 7}, 1));
  SetInput(&ws, "m1", FloatTensor({5, 7}, std::vector<float>(35, 0.f)));
  SetInput(&ws, "m2", FloatTensor({5, 7}, std::vector<float>(35, 0.f)));
  SetInput(&ws, "lr", FloatTensor({1}, {lr}));
  std::vector<double> p, m1(35, 0), m2(35, 0);
  for (float v : ToFloatVector(ws.GetTensor("p"))) p.push_back(v);
  const OperatorDef def = MakeOperatorDef("Adam", "", {"p", "m1", "m2", "g", "lr", "iter"},
                                          {"p", "m1", "m2"}, {MakeArgument("epsilon", eps)});
  for (int step = 1; step <= kSteps; ++step) {
    const Tensor g = RandomTensor({5, 7}, 100 + step);
    SetInput(&ws, "g", g);
    SetInput(&ws, "iter", Int64Scalar(step));  // Iter has counted this step
    RunOp(def, {}, &ws);
    const int t = step + 1;
    const double c = std::sqrt(1 - std::pow(double(kB2), t)) / (1 - std::pow(double(kB1), t));
    const std::vector<float> gv = ToFloatVector(g);
    for (size_t i = 0; i < p.size(); ++i) {
      m1[i] = 0.9f * m1[i] + (1 - 0.9f) * gv[i];
      m2[i] = 0.999f * m2[i] + (1 - 0.999f) * double(gv[i]) * gv[i];
      p[i] += lr * c * m1[i] / (std::sqrt(m2[i]) + eps);
    }
    EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("p")), p), 1e-6) << "step " << step;
  }
  EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("m2")), m2), 1e-5);
}

// PyTorch's Adam (L2 weight decay) or AdamW (decoupled), written out in double.
struct Reference {
  std::vector<double> p, m1, m2;
  void Step(const std::vector<float>& g, double lr, double wd, double scale, bool decoupled,
            double eps, int t) {
    const double bc1 = 1 - std::pow(double(kB1), t), bc2 = 1 - std::pow(double(kB2), t);
    for (size_t i = 0; i < p.size(); ++i) {
      if (decoupled) p[i] *= 1 - lr * wd;
      const double gi = g[i] / scale + (decoupled ? 0 : wd * p[i]);
      m1[i] = kB1 * m1[i] + (1 - double(kB1)) * gi;
      m2[i] = kB2 * m2[i] + (1 - double(kB2)) * gi * gi;
      p[i] -= lr / bc1 * m1[i] / (std::sqrt(m2[i]) / std::sqrt(bc2) + eps);
    }
  }
};

// 20 steps; grad_type float, float16 or bfloat16 (the reference then sees the rounded gradient).
void ExpectMixedPrecisionAdam(bool decoupled, DataType grad_type) {
  const float lr = 0.01f, wd = 0.05f, scale = grad_type == DataType::FLOAT ? 1.f : 128.f;
  const float eps = 1e-8f;
  Workspace ws;
  const Tensor p0 = RandomTensor({4, 9}, 2);
  SetInput(&ws, "p", p0);
  SetInput(&ws, "m1", FloatTensor({4, 9}, std::vector<float>(36, 0.f)));
  SetInput(&ws, "m2", FloatTensor({4, 9}, std::vector<float>(36, 0.f)));
  SetInput(&ws, "lr", FloatTensor({}, {lr}));
  SetInput(&ws, "scale", FloatTensor({}, {scale}));
  SetInput(&ws, "inf", FloatTensor({}, {0.f}));
  Reference ref;
  for (float v : ToFloatVector(p0)) ref.p.push_back(v);
  ref.m1.assign(36, 0);
  ref.m2.assign(36, 0);
  const OperatorDef def = MakeOperatorDef(
      "MixedPrecisionAdamUpdate", "", {"g", "m1", "m2", "lr", "p", "iter", "scale", "inf"},
      {"m1", "m2", "p", "copy"},
      {MakeArgument("weight_decay", wd), MakeArgument("decoupled", decoupled ? 1 : 0),
       MakeArgument("epsilon", eps),
       MakeArgument("copy_dtype", std::string(grad_type == DataType::BFLOAT16 ? "bfloat16"
                                                                                : "float16"))});
  for (int t = 1; t <= kSteps; ++t) {
    const Tensor g32 = RandomTensor({4, 9}, 200 + t, -scale, scale);
    const Tensor g = grad_type == DataType::FLOAT ? g32 : ToFloat16Type(g32, grad_type);
    SetInput(&ws, "g", g);
    SetInput(&ws, "iter", Int64Scalar(t));
    RunOp(def, {}, &ws);
    ref.Step(ToFloatVector(g), lr, wd, scale, decoupled, eps, t);
    EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("p")), ref.p), 1e-6) << "step " << t;
  }
  // The copy is the new master rounded once.
  const Tensor copy = ws.GetTensor("copy");
  EXPECT_EQ(ToFloatVector(copy), ToFloatVector(RoundThrough(ws.GetTensor("p"), copy.dtype())));
}

TEST(MixedPrecisionAdamUpdateTest, AdamFormulaFloat) {
  ExpectMixedPrecisionAdam(false, DataType::FLOAT);
}
TEST(MixedPrecisionAdamUpdateTest, AdamWFormulaFloat) {
  ExpectMixedPrecisionAdam(true, DataType::FLOAT);
}
TEST(MixedPrecisionAdamUpdateTest, Float16GradientsAreTheMasterMath) {
  ExpectMixedPrecisionAdam(false, DataType::FLOAT16);
  ExpectMixedPrecisionAdam(true, DataType::FLOAT16);
}
TEST(MixedPrecisionAdamUpdateTest, BFloat16GradientsAreTheMasterMath) {
  ExpectMixedPrecisionAdam(true, DataType::BFLOAT16);
}

TEST(MixedPrecisionAdamUpdateTest, OverflowSkipsTheStep) {
  Workspace ws;
  const Tensor p = RandomTensor({6}, 3), m = RandomTensor({6}, 4, 0.f, 1.f);
  SetInput(&ws, "g", ToHalf(RandomTensor({6}, 5)));
  SetInput(&ws, "m1", m);
  SetInput(&ws, "m2", m);
  SetInput(&ws, "p", p);
  SetInput(&ws, "lr", FloatTensor({}, {0.1f}));
  SetInput(&ws, "iter", Int64Scalar(3));
  SetInput(&ws, "scale", FloatTensor({}, {8.f}));
  SetInput(&ws, "inf", FloatTensor({}, {1.f}));
  RunOp(MakeOperatorDef("MixedPrecisionAdamUpdate", "",
                        {"g", "m1", "m2", "lr", "p", "iter", "scale", "inf"}, {"m1", "m2", "p"}),
        {}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("p")), ToFloatVector(p));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("m1")), ToFloatVector(m));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("m2")), ToFloatVector(m));
}

TEST(MixedPrecisionAdamUpdateTest, BadInputs) {
  const std::map<std::string, Tensor> in{{"g", RandomTensor({6}, 1)},
                                         {"m1", RandomTensor({6}, 2)},
                                         {"m2", RandomTensor({5}, 3)},
                                         {"lr", FloatTensor({}, {0.1f})},
                                         {"p", RandomTensor({6}, 4)},
                                         {"iter", Int64Scalar(1)}};
  ExpectError(MakeOperatorDef("MixedPrecisionAdamUpdate", "",
                              {"g", "m1", "m2", "lr", "p", "iter"}, {"m1", "m2", "p"}),
              in, "same shape");
  std::map<std::string, Tensor> zero = in;
  zero["m2"] = RandomTensor({6}, 3);
  zero["iter"] = Int64Scalar(0);
  ExpectError(MakeOperatorDef("MixedPrecisionAdamUpdate", "",
                              {"g", "m1", "m2", "lr", "p", "iter"}, {"m1", "m2", "p"}),
              zero, "iter must count this step");
  ExpectError(MakeOperatorDef("MixedPrecisionAdamUpdate", "",
                              {"g", "m1", "m2", "lr", "p", "iter"}, {"m1", "m2", "p"},
                              {MakeArgument("beta1", 1.f)}),
              zero, "beta1 and beta2 must be in [0, 1)");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
