#include <gtest/gtest.h>

#include "operators/tensor/transpose_op.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef PadDef(const std::string& mode, std::vector<int64_t> pads,
                   const std::string& order = "NCHW", std::vector<Argument> extra = {},
                   const std::string& type = "PadImage") {
  std::vector<Argument> args{MakeArgument("mode", mode), MakeArgument("pads", pads),
                             MakeArgument("order", order)};
  args.insert(args.end(), extra.begin(), extra.end());
  return MakeOperatorDef(type, "", {"X"}, {"Y"}, args);
}

// [[1, 2, 3], [4, 5, 6]] as (1, 1, 2, 3), padded t 1, l 2, b 1, r 1.
const Tensor kImage = FloatTensor({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
const std::vector<int64_t> kPads = {1, 2, 1, 1};

TEST(PadImageOpTest, ExactValuesPerMode) {
  Workspace ws;
  RunOp(PadDef("constant", kPads, "NCHW", {MakeArgument("value", 9.f)}), {{"X", kImage}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{1, 1, 4, 6}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), (std::vector<float>{9, 9, 9, 9, 9, 9,  //
                                                                  9, 9, 1, 2, 3, 9,  //
                                                                  9, 9, 4, 5, 6, 9,  //
                                                                  9, 9, 9, 9, 9, 9}));
  EXPECT_EQ(RunAndGet(PadDef("reflect", kPads), {{"X", kImage}}),
            (std::vector<float>{6, 5, 4, 5, 6, 5,  //
                                3, 2, 1, 2, 3, 2,  //
                                6, 5, 4, 5, 6, 5,  //
                                3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(RunAndGet(PadDef("edge", kPads), {{"X", kImage}}),
            (std::vector<float>{1, 1, 1, 2, 3, 3,  //
                                1, 1, 1, 2, 3, 3,  //
                                4, 4, 4, 5, 6, 6,  //
                                4, 4, 4, 5, 6, 6}));
  // The default mode is constant 0, and the pad forms of conv / pool work.
  const std::vector<float> zero_pad = RunAndGet(
      MakeOperatorDef("PadImage", "", {"X"}, {"Y"}, {MakeArgument("pad", 1)}), {{"X", kImage}});
  EXPECT_EQ(zero_pad.size(), 20u);
  EXPECT_EQ(zero_pad[6], 1.f);
  EXPECT_EQ(zero_pad[0], 0.f);
  const OperatorDef named =
      MakeOperatorDef("PadImage", "", {"X"}, {"Y"},
                      {MakeArgument("pad_t", 1), MakeArgument("pad_l", 2), MakeArgument("pad_b", 1),
                       MakeArgument("pad_r", 1), MakeArgument("mode", "edge")});
  EXPECT_EQ(RunAndGet(named, {{"X", kImage}}), RunAndGet(PadDef("edge", kPads), {{"X", kImage}}));
}

TEST(PadImageOpTest, GradientSumsTheCopies) {
  const Tensor ones = FloatTensor({1, 1, 4, 6}, std::vector<float>(24, 1.f));
  auto grad = [&](const std::string& mode) {
    return RunAndGet(PadDef(mode, kPads, "NCHW", {}, "PadImageGradient"), {{"X", ones}});
  };
  EXPECT_EQ(grad("constant"), std::vector<float>(6, 1.f));
  EXPECT_EQ(grad("reflect"), (std::vector<float>{2, 6, 4, 2, 6, 4}));
  EXPECT_EQ(grad("edge"), (std::vector<float>{6, 2, 4, 6, 2, 4}));
  auto meta = GetGradientForOp(PadDef("edge", kPads), {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "PadImageGradient");
  EXPECT_EQ(meta.ops[0].input(0), "Y_grad");
  EXPECT_EQ(meta.ops[0].output(0), "X_grad");
  EXPECT_EQ(ArgumentHelper(meta.ops[0]).GetSingleArgument<std::string>("mode", ""), "edge");
}

TEST(PadImageOpTest, NhwcMatchesNchw) {
  const Tensor x = RandomTensor({2, 3, 4, 5}, 1);
  Tensor x_nhwc({2, 4, 5, 3}, DataType::FLOAT);
  TransposeBytes(x.dims(), {0, 2, 3, 1}, sizeof(float), x.data<float>(),
                 x_nhwc.mutable_data<float>());
  for (const char* mode : {"constant", "reflect", "edge"}) {
    SCOPED_TRACE(mode);
    const std::vector<int64_t> pads{1, 2, 3, 0};
    Workspace ws;
    RunOp(PadDef(mode, pads, "NCHW", {MakeArgument("value", -2.5f)}), {{"X", x}}, &ws);
    const Tensor& y = ws.GetTensor("Y");
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 8, 7}));
    Tensor want({2, 8, 7, 3}, DataType::FLOAT);
    TransposeBytes(y.dims(), {0, 2, 3, 1}, sizeof(float), y.data<float>(),
                   want.mutable_data<float>());
    RunOp(PadDef(mode, pads, "NHWC", {MakeArgument("value", -2.5f)}), {{"X", x_nhwc}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), want.dims());
    EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), ToFloatVector(want));
  }
}

TEST(PadImageOpTest, GradientsMatchFiniteDifferences) {
  const std::vector<int64_t> pads{2, 1, 1, 4};
  for (const char* mode : {"constant", "reflect", "edge"}) {
    SCOPED_TRACE(mode);
    GradientChecker().Check(PadDef(mode, pads), {{"X", RandomTensor({1, 2, 3, 5}, 7)}}, 0, 0);
    GradientChecker().Check(PadDef(mode, pads, "NHWC"), {{"X", RandomTensor({2, 3, 5, 3}, 8)}}, 0,
                            0);
  }
}

TEST(PadImageOpTest, Fp16MatchesFp32) {
  const Tensor x = RandomTensor({2, 3, 5, 7}, 9);
  for (const char* mode : {"constant", "reflect", "edge"}) {
    // The border value 0.25 is exact in float16.
    CheckFp16MatchesFp32(PadDef(mode, {1, 2, 3, 4}, "NCHW", {MakeArgument("value", 0.25f)}),
                         {{"X", x}}, {"X"}, {0}, 0.f, 0.f);
    CheckFp16MatchesFp32(PadDef(mode, {4, 3, 2, 1}, "NHWC", {}, "PadImageGradient"),
                         {{"X", RandomTensor({2, 11, 11, 3}, 10)}}, {"X"});
  }
}

TEST(PadImageOpTest, Errors) {
  ExpectError(PadDef("reflect", {2, 0, 0, 0}), {{"X", kImage}},
              "reflect pads must be smaller than the dim they mirror, got pads 2 and 0 for "
              "height 2");
  ExpectError(PadDef("reflect", {0, 0, 0, 3}), {{"X", kImage}}, "for width 3");
  ExpectError(PadDef("edge", {1, 0, 0, 0}), {{"X", Tensor({1, 1, 0, 3}, DataType::FLOAT)}},
              "edge pads need a non-empty height");
  ExpectError(PadDef("wrap", kPads), {{"X", kImage}},
              "unknown mode 'wrap' (expected \"constant\", \"reflect\" or \"edge\")");
  ExpectError(PadDef("constant", kPads, "NCHW", {MakeArgument("stride", 2)}), {{"X", kImage}},
              "stride and dilation must be 1");
  ExpectError(MakeOperatorDef("PadImage", "", {"X"}, {"Y"}, {MakeArgument("legacy_pad", 2)}),
              {{"X", kImage}}, "only explicit pads are supported, got legacy_pad SAME");
  ExpectError(PadDef("constant", {1, -1, 0, 0}), {{"X", kImage}}, "pads must be >= 0");
  ExpectError(PadDef("constant", {1, 1, 1, 1, 1, 1}, "NCHW",
                     {MakeArgument("kernels", std::vector<int64_t>{1, 1, 1})}),
              {{"X", kImage}}, "PadImage pads 2-D images");
  ExpectError(PadDef("constant", kPads), {{"X", RandomTensor({1, 2, 3}, 1)}},
              "X must be 4-D (NCHW), got dims [1, 2, 3]");
  ExpectError(PadDef("constant", kPads), {{"X", IntTensor({1, 1, 1, 1}, {1})}},
              "X must be float, float16 or bfloat16");
  ExpectError(PadDef("constant", kPads, "NHWC", {}, "PadImageGradient"),
              {{"X", RandomTensor({1, 1, 2, 1}, 1)}},
              "dY [1, 1, 2, 1] is smaller than the pads (t 1, l 2, b 1, r 1)");
}

TEST(PadImageOpTest, SchemasInferShapes) {
  const auto y =
      OpSchemaRegistry::Schema("PadImage")
          ->InferShapes(PadDef("edge", kPads, "NHWC"), {{{2, 5, 7, 3}, DataType::FLOAT16}});
  EXPECT_EQ(y[0].dims, (std::vector<int64_t>{2, 7, 10, 3}));
  EXPECT_EQ(y[0].dtype, DataType::FLOAT16);
  const auto dx = OpSchemaRegistry::Schema("PadImageGradient")
                      ->InferShapes(PadDef("edge", kPads, "NCHW", {}, "PadImageGradient"),
                                    {{{2, 3, 7, 10}, DataType::FLOAT}});
  EXPECT_EQ(dx[0].dims, (std::vector<int64_t>{2, 3, 5, 7}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
