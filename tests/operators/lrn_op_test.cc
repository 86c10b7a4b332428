#include <gtest/gtest.h>

#include <cmath>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

struct LrnCase {
  int size;
  float alpha, beta, bias;
  bool nhwc;
};

std::vector<Argument> Args(const LrnCase& c) {
  return {MakeArgument("size", c.size), MakeArgument("alpha", c.alpha),
          MakeArgument("beta", c.beta), MakeArgument("bias", c.bias),
          MakeArgument("order", std::string(c.nhwc ? "NHWC" : "NCHW"))};
}

// (outer, C, inner) view of dims, as the operator's documentation describes it.
void View(const std::vector<int64_t>& d, bool nhwc, int64_t* outer, int64_t* C, int64_t* inner) {
  int64_t all = 1;
  for (int64_t v : d) all *= v;
  *C = nhwc ? d.back() : d[1];
  *outer = nhwc ? all / *C : d[0];
  *inner = all / (*outer * *C);
}

// Y and scale from the definition, in double.
void Naive(const LrnCase& c, const Tensor& X, std::vector<float>* y, std::vector<float>* scale) {
  int64_t outer, C, inner;
  View(X.dims(), c.nhwc, &outer, &C, &inner);
  const float* x = X.data<float>();
  const int64_t pre = (c.size - 1) / 2;
  y->resize(static_cast<size_t>(X.numel()));
  scale->resize(y->size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t ch = 0; ch < C; ++ch) {
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t c2 = ch - pre; c2 < ch - pre + c.size; ++c2) {
          if (c2 < 0 || c2 >= C) continue;
          const double v = x[(o * C + c2) * inner + i];
          sum += v * v;
        }
        const int64_t j = (o * C + ch) * inner + i;
        const double s = c.bias + c.alpha / c.size * sum;
        (*scale)[j] = static_cast<float>(s);
        (*y)[j] = static_cast<float>(x[j] * std::pow(s, -static_cast<double>(c.beta)));
      }
    }
  }
}

OperatorDef LrnDef(const LrnCase& c, bool with_scale = true) {
  return MakeOperatorDef(
      "LRN", "", {"X"},
      with_scale ? std::vector<std::string>{"Y", "scale"} : std::vector<std::string>{"Y"}, Args(c));
}

std::vector<LrnCase> Cases() {
  return {{3, 0.5f, 0.75f, 1.f, false},
          {5, 2e-2f, 0.75f, 2.f, true},
          {4, 0.3f, 0.6f, 1.5f, false},
          {1, 1.f, 0.5f, 1.f, true},
          {4, 0.3f, 0.6f, 1.5f, true}};
}

std::vector<int64_t> Dims(bool nhwc) {
  return nhwc ? std::vector<int64_t>{2, 3, 5, 7} : std::vector<int64_t>{2, 7, 3, 5};
}

TEST(LrnOpTest, HandComputedValues) {
  // Channels 1, 2, 3 at one pixel; size 3, alpha 3, beta 1, bias 1:
  // scale = 1 + (0 + 1 + 4), 1 + (1 + 4 + 9), 1 + (4 + 9) = 6, 15, 14.
  const LrnCase c{3, 3.f, 1.f, 1.f, false};
  Workspace ws;
  RunOp(LrnDef(c), {{"X", FloatTensor({1, 3, 1, 1}, {1.f, 2.f, 3.f})}}, &ws);
  ExpectNear(ToFloatVector(ws.GetTensor("scale")), {6.f, 15.f, 14.f}, 0.f, 1e-7f);
  ExpectNear(ToFloatVector(ws.GetTensor("Y")), {1.f / 6, 2.f / 15, 3.f / 14}, 0.f, 1e-6f);
  // Even size 2 looks one channel ahead: windows {0, 1}, {1, 2}, {2}.
  const LrnCase even{2, 2.f, 1.f, 0.f, false};
  Workspace ws2;
  RunOp(LrnDef(even), {{"X", FloatTensor({1, 3, 1, 1}, {1.f, 2.f, 3.f})}}, &ws2);
  ExpectNear(ToFloatVector(ws2.GetTensor("scale")), {5.f, 13.f, 9.f}, 0.f, 1e-7f);
}

TEST(LrnOpTest, MatchesDefinition) {
  for (const LrnCase& c : Cases()) {
    SCOPED_TRACE(::testing::Message() << "size " << c.size << (c.nhwc ? " NHWC" : " NCHW"));
    const Tensor X = RandomTensor(Dims(c.nhwc), 3, -2.f, 2.f);
    std::vector<float> y, scale;
    Naive(c, X, &y, &scale);
    Workspace ws;
    RunOp(LrnDef(c), {{"X", X}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), X.dims());
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), y, 1e-6f, 1e-5f, "Y");
    ExpectNear(ToFloatVector(ws.GetTensor("scale")), scale, 1e-6f, 1e-6f, "scale");
    // Without the scale output the same Y.
    ExpectNear(RunAndGet(LrnDef(c, false), {{"X", X}}), y, 1e-6f, 1e-5f, "Y alone");
  }
}

TEST(LrnOpTest, HigherRankNchw) {
  // (N, C, D, H, W): the window runs over dim 1 whatever follows.
  const LrnCase c{3, 0.5f, 0.75f, 1.f, false};
  const Tensor X = RandomTensor({2, 5, 3, 1, 3}, 4);
  std::vector<float> y, scale;
  Naive(c, X, &y, &scale);
  ExpectNear(RunAndGet(LrnDef(c, false), {{"X", X}}), y, 1e-6f, 1e-5f);
}

TEST(LrnOpTest, GradientMatchesFiniteDifferences) {
  for (const LrnCase& c : Cases()) {
    SCOPED_TRACE(::testing::Message() << "size " << c.size << (c.nhwc ? " NHWC" : " NCHW"));
    const Tensor X = RandomTensor(Dims(c.nhwc), 5, -2.f, 2.f);
    GradientCheckOptions opts;
    opts.stepsize = 1e-2f;
    opts.threshold = 5e-3f;
    GradientChecker(opts).Check(LrnDef(c), {{"X", X}}, 0, 0);
  }
}

TEST(LrnOpTest, GradientFormsAgree) {
  const LrnCase c{5, 0.4f, 0.75f, 1.f, false};
  const Tensor X = RandomTensor(Dims(false), 6, -2.f, 2.f);
  Workspace ws;
  RunOp(LrnDef(c), {{"X", X}}, &ws);
  SetInput(&ws, "dY", RandomTensor(X.dims(), 7));
  RunOp(MakeOperatorDef("LRNGradient", "", {"X", "Y", "dY"}, {"dX3"}, Args(c)), {}, &ws);
  RunOp(MakeOperatorDef("LRNGradient", "", {"X", "Y", "scale", "dY"}, {"dX4"}, Args(c)), {}, &ws);
  ExpectNear(ToFloatVector(ws.GetTensor("dX4")), ToFloatVector(ws.GetTensor("dX3")), 1e-7f, 1e-6f);
  // The given scale is really used: a different one changes dX.
  Tensor scale2;
  scale2.CopyFrom(ws.GetTensor("scale"));
  for (int64_t i = 0; i < scale2.numel(); ++i) scale2.mutable_data<float>()[i] *= 2.f;
  SetInput(&ws, "scale", scale2);
  RunOp(MakeOperatorDef("LRNGradient", "", {"X", "Y", "scale", "dY"}, {"dX4"}, Args(c)), {}, &ws);
  EXPECT_GT(std::fabs(ws.GetTensor("dX4").data<float>()[0] - ws.GetTensor("dX3").data<float>()[0]),
            1e-3f);
}

TEST(LrnOpTest, GradientMakerIsCaffe2s) {
  const LrnCase c{3, 0.5f, 0.75f, 1.f, false};
  std::vector<GradientWrapper> g(2);
  g[0].dense = "Y_grad";
  GradientOpsMeta meta = GetGradientForOp(LrnDef(c), g);
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "LRNGradient");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"X", "Y", "Y_grad"}));
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
            (std::vector<std::string>{"X_grad"}));
}

TEST(LrnOpTest, Fp16MatchesFp32) {
  for (const LrnCase& c : Cases()) {
    SCOPED_TRACE(::testing::Message() << "size " << c.size << (c.nhwc ? " NHWC" : " NCHW"));
    const Tensor X = RandomTensor(Dims(c.nhwc), 8, -2.f, 2.f);
    CheckFp16MatchesFp32(LrnDef(c), {{"X", X}}, {"X"}, {0, 1});
    Workspace ws;
    RunOp(LrnDef(c), {{"X", X}}, &ws);
    Tensor y;
    y.CopyFrom(ws.GetTensor("Y"));
    const std::map<std::string, Tensor> in{{"X", X}, {"Y", y}, {"dY", RandomTensor(X.dims(), 9)}};
    CheckFp16MatchesFp32(MakeOperatorDef("LRNGradient", "", {"X", "Y", "dY"}, {"dX"}, Args(c)), in,
                         {"X", "Y", "dY"}, {0}, 2e-3f, 3e-3f);
  }
}

TEST(LrnOpTest, BadInputIsOneClearError) {
  const Tensor X = RandomTensor({1, 3, 2, 2}, 1);
  ExpectError(MakeOperatorDef("LRN", "", {"X"}, {"Y"}), {{"X", X}}, "'size'");
  ExpectError(MakeOperatorDef("LRN", "", {"X"}, {"Y"}, {MakeArgument("size", 0)}), {{"X", X}},
              "size must be >= 1, got 0");
  ExpectError(MakeOperatorDef("LRN", "", {"X"}, {"Y"},
                              {MakeArgument("size", 3), MakeArgument("order", std::string("CHW"))}),
              {{"X", X}}, "unknown order 'CHW'");
  ExpectError(MakeOperatorDef("LRN", "", {"X"}, {"Y"}, {MakeArgument("size", 3)}),
              {{"X", FloatTensor({3}, {1.f, 2.f, 3.f})}}, "at least 2 dims");
  ExpectError(
      MakeOperatorDef("LRNGradient", "", {"X", "Y", "dY"}, {"dX"}, {MakeArgument("size", 3)}),
      {{"X", X}, {"Y", X}, {"dY", RandomTensor({1, 3, 2, 3}, 2)}},
      "dY has dims [1, 3, 2, 3] but X has [1, 3, 2, 2]");
}

// A NaN reaches the outputs of the channels whose window holds it, and no others.
TEST(LrnOpTest, NaNPropagates) {
  const LrnCase c{3, 0.5f, 0.75f, 1.f, false};
  const std::map<std::string, Tensor> in{{"X", RandomTensor({1, 5, 1, 1}, 21)}};
  ExpectNaNPropagates(LrnDef(c), in, "X", 2, "Y", {1, 2, 3});
  ExpectNaNPropagates(LrnDef(c), in, "X", 0, "Y", {0, 1});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
