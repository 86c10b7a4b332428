// Caffe2's Adagrad, Adadelta, RmsProp, Wngrad and Lars, and the fused MixedPrecisionAdagrad /
// Adadelta / RmsPropUpdate (PyTorch's Adagrad, Adadelta and RMSprop on an FP32 master): 20 steps
// against the formulas written out in double (<= 1e-6 relative), 16-bit gradients equal to the
// master math on the rounded gradient, the skipped step, the copy, bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

constexpr int kSteps = 20;

std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> out;
  for (float v : ToFloatVector(t)) out.push_back(v);
  return out;
}

Tensor Zeros(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return FloatTensor(dims, std::vector<float>(n, 0.f));
}

// Runs `def` for kSteps with fresh gradients in "g" and checks "p" against `ref`, which applies
// one step of the formula in double to p (and its own state) given the gradient values.
void ExpectSteps(Workspace* ws, const OperatorDef& def, std::vector<double> p,
                 const std::function<void(const std::vector<float>&, std::vector<double>*)>& ref,
                 std::vector<int64_t> dims = {5, 7}) {
  for (int step = 1; step <= kSteps; ++step) {
    const Tensor g = RandomTensor(dims, 100 + step);
    SetInput(ws, "g", g);
    RunOp(def, {}, ws);
    ref(ToFloatVector(g), &p);
    EXPECT_LT(MaxRelativeError(ToFloatVector(ws->GetTensor("p")), p), 1e-6) << def.type() << " step "
                                                                   << step;
  }
}

TEST(AdagradOpTest, CaffeFormulaOverTwentySteps) {
  const float lr = -0.05f, eps = 1e-5f, decay = 0.95f, wd = 0.01f;
  Workspace ws;
  SetInput(&ws, "p", RandomTensor({5, 7}, 1));
  SetInput(&ws, "h", Zeros({5, 7}));
  SetInput(&ws, "lr", FloatTensor({1}, {lr}));
  std::vector<double> h(35, 0), elr(35), upd(35);
  const OperatorDef def = MakeOperatorDef(
      "Adagrad", "", {"p", "h", "g", "lr"}, {"p", "h", "elr", "upd"},
      {MakeArgument("epsilon", eps), MakeArgument("decay", decay),
       MakeArgument("weight_decay", wd)});
  ExpectSteps(&ws, def, Doubles(ws.GetTensor("p")),
              [&](const std::vector<float>& g, std::vector<double>* p) {
                for (size_t i = 0; i < p->size(); ++i) {
                  const double gi = g[i] + wd * (*p)[i];
                  h[i] = decay * h[i] + gi * gi;
                  elr[i] = lr / (std::sqrt(h[i]) + eps);
                  upd[i] = elr[i] * gi;
                  (*p)[i] += upd[i];
                }
              });
  EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("h")), h), 1e-6);
  EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("elr")), elr), 1e-6);
  EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("upd")), upd), 1e-6);
}

TEST(AdadeltaOpTest, CaffeFormulaOverTwentySteps) {
  const float lr = -1.f, eps = 1e-5f, decay = 0.95f;
  Workspace ws;
  SetInput(&ws, "p", RandomTensor({5, 7}, 1));
  SetInput(&ws, "h", Zeros({5, 7}));
  SetInput(&ws, "u", Zeros({5, 7}));
  SetInput(&ws, "lr", FloatTensor({1}, {lr}));
  std::vector<double> h(35, 0), u(35, 0);
  ExpectSteps(&ws, MakeOperatorDef("Adadelta", "", {"p", "h", "u", "g", "lr"}, {"p", "h", "u"}),
              Doubles(ws.GetTensor("p")),
              [&](const std::vector<float>& g, std::vector<double>* p) {
                for (size_t i = 0; i < p->size(); ++i) {
                  h[i] = decay * h[i] + (1 - decay) * double(g[i]) * g[i];
                  const double d = std::sqrt(u[i] + eps) / std::sqrt(h[i] + eps) * g[i];
                  (*p)[i] += lr * d;
                  u[i] = decay * u[i] + (1 - decay) * d * d;
                }
              });
  EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("u")), u), 1e-5);
}

TEST(RmsPropOpTest, CaffeFormulaOverTwentySteps) {
  // Caffe2's nets add grad_out to the parameter (WeightedSum); here the test does.
  const float lr = -0.01f, eps = 1e-5f, decay = 0.9f, momentum = 0.5f;
  Workspace ws;
  SetInput(&ws, "ms", Zeros({5, 7}));
  SetInput(&ws, "mom", Zeros({5, 7}));
  SetInput(&ws, "lr", FloatTensor({1}, {lr}));
  const OperatorDef def = MakeOperatorDef("RmsProp", "", {"g", "ms", "mom", "lr"},
                                          {"g", "ms", "mom"},
                                          {MakeArgument("momentum", momentum)});
  std::vector<double> ms(35, 0), mom(35, 0);
  for (int step = 1; step <= kSteps; ++step) {
    const Tensor g = RandomTensor({5, 7}, 100 + step);
    SetInput(&ws, "g", g);
    RunOp(def, {}, &ws);
    const std::vector<float> gv = ToFloatVector(g);
    for (size_t i = 0; i < ms.size(); ++i) {
      ms[i] += (1 - decay) * (double(gv[i]) * gv[i] - ms[i]);
      mom[i] = momentum * mom[i] + lr * gv[i] / std::sqrt(eps + ms[i]);
    }
    EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("g")), mom), 1e-6) << "step " << step;
  }
  EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("ms")), ms), 1e-6);
}

TEST(WngradOpTest, CaffeFormulaOverTwentySteps) {
  const float lr = -0.1f, eps = 1e-5f;
  Workspace ws;
  SetInput(&ws, "p", RandomTensor({5, 7}, 1));
  SetInput(&ws, "b", FloatTensor({1}, {1.f}));
  SetInput(&ws, "lr", FloatTensor({1}, {lr}));
  double b = 1, elr = 0;
  ExpectSteps(&ws,
              MakeOperatorDef("Wngrad", "", {"p", "b", "g", "lr"}, {"p", "b", "elr", "upd"}),
              Doubles(ws.GetTensor("p")),
              [&](const std::vector<float>& g, std::vector<double>* p) {
                double sum_sq = 0;
                elr = lr / (b + eps);
                for (size_t i = 0; i < p->size(); ++i) {
                  (*p)[i] += elr * g[i];
                  sum_sq += double(g[i]) * g[i];
                }
                b += sum_sq / (b + eps);
              });
  EXPECT_NEAR(ws.GetTensor("b").data<float>()[0], b, 1e-5 * b);
  EXPECT_NEAR(ws.GetTensor("elr").data<float>()[0], elr, 1e-6 * std::fabs(elr));
}

float RunLars(const Tensor& x, const Tensor& dx, float wd, float trust, float lr_max,
              std::vector<Argument> args, float loss_scale = 0.f) {
  std::map<std::string, Tensor> in{{"x", x},
                                   {"dx", dx},
                                   {"wd", FloatTensor({1}, {wd})},
                                   {"trust", FloatTensor({1}, {trust})},
                                   {"lr_max", FloatTensor({1}, {lr_max})}};
  std::vector<std::string> names{"x", "dx", "wd", "trust", "lr_max"};
  if (loss_scale > 0.f) {
    in["scale"] = FloatTensor({1}, {loss_scale});
    names.push_back("scale");
  }
  return RunAndGet(MakeOperatorDef("Lars", "", names, {"rate"}, args), in)[0];
}

TEST(LarsOpTest, TrustRatioClampedAsCaffe2) {
  const Tensor x = FloatTensor({2, 2}, {3.f, 0.f, 0.f, 4.f});     // |x| = 5
  const Tensor dx = FloatTensor({2, 2}, {0.f, 0.6f, 0.8f, 0.f});  // |dx| = 1
  // trust / (1 / 5 + wd + offset) = 0.5 / (0.2 + 0.1 + 0.2) = 1
  EXPECT_NEAR(RunLars(x, dx, 0.1f, 0.5f, 10.f, {MakeArgument("offset", 0.2f)}), 1.f, 1e-6);
  // Clamped to lr_max, then to lr_min (defaults: offset 0.5, lr_min 0.02).
  EXPECT_NEAR(RunLars(x, dx, 0.f, 10.f, 3.f, {}), 3.f, 1e-6);
  EXPECT_NEAR(RunLars(x, dx, 0.f, 1e-4f, 3.f, {}), 0.02f, 1e-7);
  // A zero parameter: 1, clamped.
  EXPECT_NEAR(RunLars(FloatTensor({2}, {0.f, 0.f}), FloatTensor({2}, {1.f, 1.f}), 0.f, 1.f, 0.5f,
                      {}),
              0.5f, 1e-7);
  // A loss-scaled float16 gradient gives the rate of the unscaled one.
  const Tensor scaled = ToHalf(FloatTensor({2, 2}, {0.f, 0.6f * 64, 0.8f * 64, 0.f}));
  std::vector<float> unscaled = ToFloatVector(scaled);
  for (float& v : unscaled) v /= 64;
  const float want =
      RunLars(x, FloatTensor({2, 2}, unscaled), 0.01f, 0.3f, 10.f, {MakeArgument("offset", 0.f)});
  EXPECT_NEAR(RunLars(x, scaled, 0.01f, 0.3f, 10.f, {MakeArgument("offset", 0.f)}, 64.f), want,
              1e-6);
  // An overflowed gradient (its step is skipped) gives lr_min, not an error.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(RunLars(x, FloatTensor({2, 2}, {inf, 0.f, 0.f, 0.f}), 0.f, 1.f, 10.f, {}), 0.02f);
}

// ---- the fused updates against PyTorch's formulas -----------------------------------------------

struct FusedCase {
  const char* type;
  int states;
  std::vector<Argument> args;
  // One step of PyTorch's rule in double on element i: g (unscaled, with weight decay), the
  // states, returns the direction subtracted times lr.
  std::function<double(double g, double* s0, double* s1)> rule;
};

std::vector<FusedCase> FusedCases() {
  return {
      {"MixedPrecisionAdagradUpdate", 1, {MakeArgument("epsilon", 1e-10f)},
       [](double g, double* h, double*) {
         *h += g * g;
         return g / (std::sqrt(*h) + 1e-10);
       }},
      {"MixedPrecisionAdadeltaUpdate", 2, {},  // rho 0.9, eps 1e-6
       [](double g, double* v, double* u) {
         *v = 0.9 * *v + 0.1 * g * g;
         const double d = std::sqrt(*u + 1e-6) / std::sqrt(*v + 1e-6) * g;
         *u = 0.9 * *u + 0.1 * d * d;
         return d;
       }},
      {"MixedPrecisionRmsPropUpdate", 2, {},  // alpha 0.99, eps 1e-8, no momentum
       [](double g, double* v, double*) {
         *v = 0.99 * *v + 0.01 * g * g;
         return g / (std::sqrt(*v) + 1e-8);
       }},
      {"MixedPrecisionRmsPropUpdate", 2, {MakeArgument("momentum", 0.9f)},
       [](double g, double* v, double* b) {
         *v = 0.99 * *v + 0.01 * g * g;
         *b = 0.9 * *b + g / (std::sqrt(*v) + 1e-8);
         return *b;
       }},
  };
}

std::vector<std::string> FusedInputs(int states, bool scaled) {
  std::vector<std::string> in{"g", "s0"};
  if (states > 1) in.push_back("s1");
  for (const char* s : {"lr", "p"}) in.push_back(s);
  if (scaled) {
    in.push_back("scale");
    in.push_back("inf");
  }
  return in;
}

std::vector<std::string> FusedOutputs(int states, bool copy) {
  std::vector<std::string> out{"s0"};
  if (states > 1) out.push_back("s1");
  out.push_back("p");
  if (copy) out.push_back("copy");
  return out;
}

// 20 steps; grad_type float, float16 or bfloat16 (the reference then sees the rounded gradient).
void ExpectFused(const FusedCase& c, DataType grad_type) {
  const float lr = 0.01f, wd = 0.05f, scale = grad_type == DataType::FLOAT ? 1.f : 128.f;
  const std::vector<int64_t> dims{4, 9};
  Workspace ws;
  const Tensor p0 = RandomTensor(dims, 2);
  SetInput(&ws, "p", p0);
  SetInput(&ws, "s0", Zeros(dims));
  SetInput(&ws, "s1", Zeros(dims));
  SetInput(&ws, "lr", FloatTensor({}, {lr}));
  SetInput(&ws, "scale", FloatTensor({}, {scale}));
  SetInput(&ws, "inf", FloatTensor({}, {0.f}));
  std::vector<Argument> args = c.args;
  args.push_back(MakeArgument("weight_decay", wd));
  args.push_back(MakeArgument(
      "copy_dtype", std::string(grad_type == DataType::BFLOAT16 ? "bfloat16" : "float16")));
  const OperatorDef def = MakeOperatorDef(c.type, "", FusedInputs(c.states, true),
                                          FusedOutputs(c.states, true), args);
  std::vector<double> p = Doubles(p0), s0(36, 0), s1(36, 0);
  for (int t = 1; t <= kSteps; ++t) {
    const Tensor g32 = RandomTensor(dims, 200 + t, -scale, scale);
    const Tensor g = grad_type == DataType::FLOAT ? g32 : ToFloat16Type(g32, grad_type);
    SetInput(&ws, "g", g);
    RunOp(def, {}, &ws);
    const std::vector<float> gv = ToFloatVector(g);
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] -= lr * c.rule(gv[i] / scale + wd * p[i], &s0[i], &s1[i]);
    }
    ASSERT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("p")), p), 1e-6) << c.type << " step " << t;
  }
  EXPECT_LT(MaxRelativeError(ToFloatVector(ws.GetTensor("s0")), s0), 1e-5) << c.type;
  const Tensor copy = ws.GetTensor("copy");
  EXPECT_EQ(ToFloatVector(copy), ToFloatVector(RoundThrough(ws.GetTensor("p"), copy.dtype())));
}

TEST(FusedAdaptiveUpdateTest, PyTorchFormulasFloat) {
  for (const auto& c : FusedCases()) ExpectFused(c, DataType::FLOAT);
}
TEST(FusedAdaptiveUpdateTest, Float16GradientsAreTheMasterMath) {
  for (const auto& c : FusedCases()) ExpectFused(c, DataType::FLOAT16);
}
TEST(FusedAdaptiveUpdateTest, BFloat16GradientsAreTheMasterMath) {
  for (const auto& c : FusedCases()) ExpectFused(c, DataType::BFLOAT16);
}

TEST(FusedAdaptiveUpdateTest, OverflowSkipsTheStep) {
  for (const auto& c : FusedCases()) {
    Workspace ws;
    const Tensor p = RandomTensor({6}, 3), s = RandomTensor({6}, 4, 0.f, 1.f);
    SetInput(&ws, "g", ToHalf(RandomTensor({6}, 5)));
    SetInput(&ws, "s0", s);
    SetInput(&ws, "s1", s);
    SetInput(&ws, "p", p);
    SetInput(&ws, "lr", FloatTensor({}, {0.1f}));
    SetInput(&ws, "scale", FloatTensor({}, {8.f}));
    SetInput(&ws, "inf", FloatTensor({}, {1.f}));
    RunOp(MakeOperatorDef(c.type, "", FusedInputs(c.states, true), FusedOutputs(c.states, false),
                          c.args),
          {}, &ws);
    EXPECT_EQ(ToFloatVector(ws.GetTensor("p")), ToFloatVector(p)) << c.type;
    EXPECT_EQ(ToFloatVector(ws.GetTensor("s0")), ToFloatVector(s)) << c.type;
    EXPECT_EQ(ToFloatVector(ws.GetTensor("s1")), ToFloatVector(s)) << c.type;
  }
}

TEST(FusedAdaptiveUpdateTest, BadInputs) {
  const std::map<std::string, Tensor> in{{"g", RandomTensor({6}, 1)},
                                         {"s0", RandomTensor({6}, 2)},
                                         {"s1", RandomTensor({5}, 3)},
                                         {"lr", FloatTensor({}, {0.1f})},
                                         {"p", RandomTensor({6}, 4)}};
  const auto def = MakeOperatorDef("MixedPrecisionRmsPropUpdate", "", FusedInputs(2, false),
                                   FusedOutputs(2, false));
  ExpectError(def, in, "same shape");
  std::map<std::string, Tensor> bad_lr = in;
  bad_lr["s1"] = RandomTensor({6}, 3);
  bad_lr["lr"] = FloatTensor({2}, {0.1f, 0.2f});
  ExpectError(def, bad_lr, "lr must be a 1-element float tensor");
  bad_lr["lr"] = FloatTensor({}, {0.1f});
  ExpectError(MakeOperatorDef("MixedPrecisionRmsPropUpdate", "", FusedInputs(2, false),
                              FusedOutputs(2, false), {MakeArgument("decay", 1.5f)}),
              bad_lr, "decay must be in [0, 1]");
  ExpectError(MakeOperatorDef("Adagrad", "", {"p", "s0", "g", "lr"}, {"p", "s0"}),
              {{"p", RandomTensor({6}, 1)},
               {"s0", RandomTensor({6}, 2)},
               {"g", ToHalf(RandomTensor({6}, 3))},
               {"lr", FloatTensor({1}, {-0.1f})}},
              "Adagrad takes float tensors of one shape");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
