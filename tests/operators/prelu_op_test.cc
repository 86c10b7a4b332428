// PRelu(+PReluGradient): values with a shared and a per-channel slope in NCHW and NHWC, the
// gradient op and its maker, finite-difference gradients of X and Slope, FP16 vs FP32, NaN and
// bad input.
#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef Def(std::vector<Argument> args = {}, const std::string& out = "Y") {
  return MakeOperatorDef("PRelu", "", {"X", "Slope"}, {out}, std::move(args));
}

OperatorDef GradDef(std::vector<Argument> args = {}) {
  return MakeOperatorDef("PReluGradient", "", {"Y", "dY", "X", "Slope"}, {"dX", "dSlope"},
                         std::move(args));
}

Argument Nhwc() { return MakeArgument("order", std::string("NHWC")); }

// X values shared by the exact-value tests: (1, 3, 2) in NCHW, or (2, 3) in NHWC.
const std::vector<float> kX = {-2.f, 1.f, -1.f, 3.f, -4.f, -0.5f};
const std::vector<float> kSlopes = {0.5f, 2.f, 0.25f};

TEST(PReluOpTest, SharedSlope) {
  const std::map<std::string, Tensor> in{{"X", FloatTensor({5}, {-2.f, -0.5f, 0.f, 0.5f, 3.f})},
                                         {"Slope", FloatTensor({1}, {0.25f})}};
  EXPECT_EQ(RunAndGet(Def(), in), (std::vector<float>{-0.5f, -0.125f, 0.f, 0.5f, 3.f}));
  EXPECT_EQ(RunAndGet(Def({Nhwc()}, "X"), in), (std::vector<float>{-0.5f, -0.125f, 0.f, 0.5f, 3.f}))
      << "NHWC, in place";
  // A shared slope of any shape with one element; X of rank 0 too.
  EXPECT_EQ(
      RunAndGet(Def(), {{"X", FloatTensor({}, {-4.f})}, {"Slope", FloatTensor({1, 1}, {3.f})}}),
      (std::vector<float>{-12.f}));
}

TEST(PReluOpTest, PerChannelSlope) {
  EXPECT_EQ(
      RunAndGet(Def(), {{"X", FloatTensor({1, 3, 2}, kX)}, {"Slope", FloatTensor({3}, kSlopes)}}),
      (std::vector<float>{-1.f, 1.f, -2.f, 3.f, -1.f, -0.125f}))
      << "NCHW: channel = dim 1";
  EXPECT_EQ(RunAndGet(Def({Nhwc()}),
                      {{"X", FloatTensor({2, 3}, kX)}, {"Slope", FloatTensor({3}, kSlopes)}}),
            (std::vector<float>{-1.f, 1.f, -0.25f, 3.f, -8.f, -0.125f}))
      << "NHWC: channel = last dim";
  // Lower-case order strings are accepted, as in Caffe2.
  EXPECT_EQ(RunAndGet(Def({MakeArgument("order", std::string("nhwc"))}),
                      {{"X", FloatTensor({2, 3}, kX)}, {"Slope", FloatTensor({3}, kSlopes)}}),
            (std::vector<float>{-1.f, 1.f, -0.25f, 3.f, -8.f, -0.125f}));
}

TEST(PReluOpTest, GradientOpValues) {
  const Tensor dY = FloatTensor({1, 3, 2}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  {
    Workspace ws;
    RunOp(GradDef(),
          {{"Y", dY},
           {"dY", dY},
           {"X", FloatTensor({1, 3, 2}, kX)},
           {"Slope", FloatTensor({3}, kSlopes)}},
          &ws);
    EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")),
              (std::vector<float>{0.5f, 2.f, 6.f, 4.f, 1.25f, 1.5f}));
    EXPECT_EQ(ToFloatVector(ws.GetTensor("dSlope")), (std::vector<float>{-2.f, -3.f, -23.f}));
  }
  {
    Workspace ws;  // shared slope: dSlope keeps Slope's shape
    RunOp(GradDef(),
          {{"Y", dY},
           {"dY", dY},
           {"X", FloatTensor({1, 3, 2}, kX)},
           {"Slope", FloatTensor({1, 1}, {0.5f})}},
          &ws);
    EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")),
              (std::vector<float>{0.5f, 2.f, 1.5f, 4.f, 2.5f, 3.f}));
    EXPECT_EQ(ws.GetTensor("dSlope").dims(), (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(ToFloatVector(ws.GetTensor("dSlope")), (std::vector<float>{-28.f}));
  }
  {
    Workspace ws;
    const Tensor dY2 = FloatTensor({2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
    RunOp(GradDef({Nhwc()}),
          {{"Y", dY2},
           {"dY", dY2},
           {"X", FloatTensor({2, 3}, kX)},
           {"Slope", FloatTensor({3}, kSlopes)}},
          &ws);
    EXPECT_EQ(ToFloatVector(ws.GetTensor("dX")),
              (std::vector<float>{0.5f, 2.f, 0.75f, 4.f, 10.f, 1.5f}));
    EXPECT_EQ(ToFloatVector(ws.GetTensor("dSlope")), (std::vector<float>{-2.f, -20.f, -6.f}));
  }
}

TEST(PReluOpTest, GradientMaker) {
  std::vector<GradientWrapper> g(1);
  g[0].dense = "Y_grad";
  GradientOpsMeta meta = GetGradientForOp(Def({Nhwc()}), g);
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "PReluGradient");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"Y", "Y_grad", "X", "Slope"}));
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
            (std::vector<std::string>{"X_grad", "Slope_grad"}));
  ASSERT_EQ(op.arg_size(), 1);
  EXPECT_EQ(op.arg(0).name(), "order");
  EXPECT_EQ(op.arg(0).s(), "NHWC");
  // The gradient reads X, which an in-place PRelu has overwritten.
  try {
    GetGradientForOp(Def({}, "X"), g);
    ADD_FAILURE() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("overwrites in place"), std::string::npos) << e.what();
  }
}

TEST(PReluOpTest, Gradients) {
  GradientChecker checker;  // X kept 0.05 away from the kink at 0
  const Tensor X = RandomTensorAwayFrom({3, 5, 7}, 1, {0.f}, 0.05f, -2.f, 2.f);
  const Tensor per_channel = RandomTensor({5}, 2, -0.5f, 1.5f);
  const Tensor shared = FloatTensor({1}, {0.3f});
  for (const auto& slope : {per_channel, shared}) {
    SCOPED_TRACE(slope.numel() == 1 ? "shared slope" : "per-channel slope");
    checker.Check(Def(), {{"X", X}, {"Slope", slope}}, 0, 0);
    checker.Check(Def(), {{"X", X}, {"Slope", slope}}, 1, 0);
  }
  const Tensor X_nhwc = RandomTensorAwayFrom({3, 7, 5}, 3, {0.f}, 0.05f, -2.f, 2.f);
  checker.Check(Def({Nhwc()}), {{"X", X_nhwc}, {"Slope", per_channel}}, 0, 0);
  checker.Check(Def({Nhwc()}), {{"X", X_nhwc}, {"Slope", per_channel}}, 1, 0);
}

TEST(PReluOpTest, Fp16MatchesFp32) {
  const Tensor X = RandomTensor({3, 5, 7}, 4, -4.f, 4.f);
  const Tensor S = RandomTensor({5}, 5, -1.f, 1.f);
  const Tensor dY = RandomTensor({3, 5, 7}, 6);
  CheckFp16MatchesFp32(Def(), {{"X", X}, {"Slope", S}}, {"X", "Slope"});
  CheckFp16MatchesFp32(Def(), {{"X", X}, {"Slope", S}}, {"X"});  // mixed: float Slope
  const std::map<std::string, Tensor> g{{"Y", X}, {"dY", dY}, {"X", X}, {"Slope", S}};
  CheckFp16MatchesFp32(GradDef(), g, {"Y", "dY", "X", "Slope"}, {0, 1});
  CheckFp16MatchesFp32(GradDef(), g, {"dY", "X"}, {0, 1});
  CheckFp16MatchesFp32(GradDef({Nhwc()}),
                       {{"Y", X}, {"dY", dY}, {"X", X}, {"Slope", RandomTensor({7}, 7)}},
                       {"Y", "dY", "X", "Slope"}, {0, 1});
  // Output dtypes: Y follows X, dX follows dY, dSlope follows Slope.
  Workspace ws;
  RunOp(GradDef(), {{"Y", X}, {"dY", ToHalf(dY)}, {"X", X}, {"Slope", S}}, &ws);
  EXPECT_EQ(ws.GetTensor("dX").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ws.GetTensor("dSlope").dtype(), DataType::FLOAT);
}

TEST(PReluOpTest, NaNPropagates) {
  const std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3}, 8)},
                                         {"Slope", RandomTensor({3}, 9)}};
  ExpectNaNPropagates(Def(), in, "X", 4, "Y", {4});
  // Slope 1 (channel 1) reaches the negative elements of channel 1 only.
  const std::map<std::string, Tensor> in2{{"X", FloatTensor({1, 3, 2}, kX)},
                                          {"Slope", FloatTensor({3}, kSlopes)}};
  ExpectNaNPropagates(Def(), in2, "Slope", 1, "Y", {2});
  const std::map<std::string, Tensor> g{{"Y", FloatTensor({1, 3, 2}, kX)},
                                        {"dY", RandomTensor({1, 3, 2}, 10)},
                                        {"X", FloatTensor({1, 3, 2}, kX)},
                                        {"Slope", FloatTensor({3}, kSlopes)}};
  ExpectNaNPropagates(GradDef(), g, "X", 3, "dX", {3});
  ExpectNaNPropagates(GradDef(), g, "X", 3, "dSlope", {1});
  ExpectNaNPropagates(GradDef(), g, "dY", 4, "dSlope", {2});
}

TEST(PReluOpTest, BadInput) {
  const Tensor X = RandomTensor({2, 3, 5}, 11);
  ExpectError(Def(), {{"X", X}, {"Slope", RandomTensor({5}, 12)}},
              "PRelu: Slope must have 1 value or one per channel (3 channels in X [2, 3, 5], "
              "NCHW), got 5 values");
  ExpectError(Def({Nhwc()}), {{"X", X}, {"Slope", RandomTensor({3}, 12)}},
              "(5 channels in X [2, 3, 5], NHWC), got 3 values");
  ExpectError(Def(), {{"X", RandomTensor({4}, 13)}, {"Slope", RandomTensor({4}, 12)}},
              "a Slope of 4 values needs X with a channel dimension");
  ExpectError(Def({MakeArgument("order", std::string("NCWH"))}),
              {{"X", X}, {"Slope", RandomTensor({3}, 12)}}, "unknown order 'NCWH'");
  ExpectError(Def(), {{"X", IntTensor({2}, {1, 2})}, {"Slope", RandomTensor({1}, 12)}},
              "float, float16 or bfloat16");
  ExpectError(Def(), {{"X", X}, {"Slope", IntTensor({1}, {1})}}, "float, float16 or bfloat16");
  ExpectError(
      GradDef(),
      {{"Y", X}, {"dY", RandomTensor({30}, 14)}, {"X", X}, {"Slope", RandomTensor({3}, 12)}},
      "PReluGradient: Y, dY and X must have the same shape, got [2, 3, 5], [30] and "
      "[2, 3, 5]");
  ExpectError(GradDef(), {{"Y", X}, {"dY", X}, {"X", X}, {"Slope", RandomTensor({2}, 12)}},
              "PReluGradient: Slope must have 1 value or one per channel");
  ExpectError(MakeOperatorDef("PRelu", "", {"X"}, {"Y"}), {{"X", X}}, "got 1 input(s)");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
