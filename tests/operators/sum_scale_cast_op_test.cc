#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(SumOpTest, AddsAllInputsAndRunsInPlace) {
  auto def = MakeOperatorDef("Sum", "", {"a", "b", "c"}, {"a"});
  auto y = RunAndGet(def, {{"a", FloatTensor({3}, {1, 2, 3})},
                           {"b", FloatTensor({3}, {10, 20, 30})},
                           {"c", FloatTensor({3}, {100, 200, 300})}});
  EXPECT_EQ(y, (std::vector<float>{111, 222, 333}));
  Workspace ws;
  RunOp(MakeOperatorDef("Sum", "", {"i", "j"}, {"k"}),
        {{"i", IntTensor({2}, {1, 2})}, {"j", IntTensor({2}, {3, 4})}}, &ws);
  EXPECT_EQ(ws.GetTensor("k").data<int32_t>()[1], 6);
}

TEST(SumOpTest, GradientIsPassThroughAndFp16) {
  auto def = MakeOperatorDef("Sum", "", {"a", "b"}, {"y"});
  std::map<std::string, Tensor> in{{"a", RandomTensor({2, 3, 7, 9}, 1)},
                                   {"b", RandomTensor({2, 3, 7, 9}, 2)}};
  GradientChecker checker;
  checker.Check(def, in, 0, 0);
  checker.Check(def, in, 1, 0);
  CheckFp16MatchesFp32(def, in, {"a", "b"});
}

TEST(SumOpTest, Fp16AccumulatesInFloatAndRoundsOnceAcrossBlocksAndInPlace) {
  // 5003 elements: several of the op's blocks and a partial one; three inputs, in place on the
  // first. Each output is the float sum of the half values, rounded once.
  const Tensor a = ToHalf(RandomTensor({5003}, 1)), b = ToHalf(RandomTensor({5003}, 2));
  const Tensor c = ToHalf(RandomTensor({5003}, 3));
  const std::vector<float> fa = ToFloatVector(a), fb = ToFloatVector(b), fc = ToFloatVector(c);
  for (const std::string out : {"y", "a"}) {
    Workspace ws;
    RunOp(MakeOperatorDef("Sum", "", {"a", "b", "c"}, {out}), {{"a", a}, {"b", b}, {"c", c}}, &ws);
    const Tensor& y = ws.GetTensor(out);
    ASSERT_EQ(y.dtype(), DataType::FLOAT16);
    const std::vector<float> got = ToFloatVector(y);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], static_cast<float>(Half(fa[i] + fb[i] + fc[i]))) << out << " " << i;
    }
  }
}

TEST(SumOpTest, MismatchedInputsNamed) {
  Workspace ws;
  try {
    RunOp(MakeOperatorDef("Sum", "", {"a", "b"}, {"y"}),
          {{"a", RandomTensor({2, 3}, 1)}, {"b", RandomTensor({3, 2}, 2)}}, &ws);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("'b' is float[3, 2]"), std::string::npos) << e.what();
  }
}

TEST(ScaleOpTest, ForwardGradientFp16) {
  auto def = MakeOperatorDef("Scale", "", {"x"}, {"y"}, {MakeArgument("scale", -0.25f)});
  EXPECT_EQ(RunAndGet(def, {{"x", FloatTensor({2}, {4, -8})}}), (std::vector<float>{-1, 2}));
  std::map<std::string, Tensor> in{{"x", RandomTensor({3, 5}, 3)}};
  GradientChecker().Check(def, in, 0, 0);
  CheckFp16MatchesFp32(def, in, {"x"});
}

TEST(CastOpTest, ConvertsBetweenTypes) {
  Workspace ws;
  RunOp(MakeOperatorDef("Cast", "", {"x"}, {"i"}, {MakeArgument("to", 2)}),
        {{"x", FloatTensor({3}, {1.7f, -2.2f, 0.f})}}, &ws);
  EXPECT_EQ(ws.GetTensor("i").dtype(), DataType::INT32);
  EXPECT_EQ(ws.GetTensor("i").data<int32_t>()[0], 1);
  EXPECT_EQ(ws.GetTensor("i").data<int32_t>()[1], -2);
  RunOp(MakeOperatorDef("Cast", "", {"i"}, {"h"}, {MakeArgument("to", "float16")}), {}, &ws);
  EXPECT_EQ(ws.GetTensor("h").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("h")), (std::vector<float>{1, -2, 0}));
  // In place with a size change (uint8 -> float, as Caffe2 data pipelines do).
  Tensor u8({2}, DataType::UINT8);
  u8.mutable_data<uint8_t>()[0] = 255;
  u8.mutable_data<uint8_t>()[1] = 7;
  RunOp(MakeOperatorDef("Cast", "", {"u"}, {"u"}, {MakeArgument("to", 1)}), {{"u", u8}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("u")), (std::vector<float>{255, 7}));
}

TEST(CastOpTest, HalfFloatConversionsAndGradients) {
  auto f2h = MakeOperatorDef("FloatToHalf", "", {"x"}, {"h"});
  Workspace ws;
  RunOp(f2h, {{"x", FloatTensor({3}, {1.f / 3, 70000.f, -0.f})}}, &ws);
  const Tensor& h = ws.GetTensor("h");
  EXPECT_EQ(h.dtype(), DataType::FLOAT16);
  EXPECT_EQ(h.data<Half>()[0].x, 0x3555);
  EXPECT_EQ(h.data<Half>()[1].x, 0x7c00);  // overflow -> inf
  RunOp(MakeOperatorDef("HalfToFloat", "", {"h"}, {"f"}), {}, &ws);
  EXPECT_FLOAT_EQ(ws.GetTensor("f").data<float>()[0], 0.333251953125f);
  // Gradient structure: FloatToHalf <-> HalfToFloat.
  std::vector<GradientWrapper> g{{"h_grad", "", ""}};
  auto meta = GetGradientForOp(f2h, g);
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "HalfToFloat");
  EXPECT_EQ(meta.ops[0].output(0), "x_grad");
  EXPECT_TRUE(meta.ops[0].is_gradient_op());
  // Wrong input type is a clear error.
  try {
    RunOp(MakeOperatorDef("HalfToFloat", "", {"x"}, {"y"}), {}, &ws);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("expects float16 input"), std::string::npos) << e.what();
  }
}

TEST(CastOpTest, GradientCastsBack) {
  auto def = MakeOperatorDef("Cast", "", {"x"}, {"y"},
                             {MakeArgument("to", 12), MakeArgument("from_type", 1)});
  std::vector<GradientWrapper> g{{"y_grad", "", ""}};
  auto meta = GetGradientForOp(def, g);
  ASSERT_EQ(meta.ops.size(), 1u);
  ArgumentHelper args(meta.ops[0]);
  EXPECT_EQ(args.GetSingleArgument<int>("to", 0), 1);
  EXPECT_EQ(args.GetSingleArgument<int>("from_type", 0), 12);
  auto no_from = MakeOperatorDef("Cast", "", {"x"}, {"y"}, {MakeArgument("to", 12)});
  EXPECT_THROW(GetGradientForOp(no_from, g), EnforceNotMet);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
