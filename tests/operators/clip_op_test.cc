#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::vector<Argument> Bounds(float lo, float hi) {
  return {MakeArgument("min", lo), MakeArgument("max", hi)};
}

TEST(ClipOpTest, Forward) {
  Tensor X = FloatTensor({2, 3}, {-3.f, -0.5f, 0.f, 0.7f, 2.f, 9.f});
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Clip", "", {"X"}, {"Y"}, Bounds(-1.f, 1.f)), {{"X", X}}),
            (std::vector<float>{-1.f, -0.5f, 0.f, 0.7f, 1.f, 1.f}));
  // Only one bound: the other side is unbounded.
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Clip", "", {"X"}, {"Y"}, {MakeArgument("min", 0.f)}),
                      {{"X", X}}),
            (std::vector<float>{0.f, 0.f, 0.f, 0.7f, 2.f, 9.f}));
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Clip", "", {"X"}, {"Y"}, {MakeArgument("max", 0.f)}),
                      {{"X", X}}),
            (std::vector<float>{-3.f, -0.5f, 0.f, 0.f, 0.f, 0.f}));
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Clip", "", {"X"}, {"Y"}), {{"X", X}}), ToFloatVector(X));
}

TEST(ClipOpTest, InPlace) {
  auto def = MakeOperatorDef("Clip", "", {"X"}, {"X"}, Bounds(0.f, 1.f));
  EXPECT_EQ(RunAndGet(def, {{"X", FloatTensor({3}, {-1.f, 0.5f, 4.f})}}),
            (std::vector<float>{0.f, 0.5f, 1.f}));
}

TEST(ClipOpTest, Gradient) {
  auto def = MakeOperatorDef("Clip", "", {"X"}, {"Y"}, Bounds(-0.4f, 0.5f));
  Tensor X = RandomTensorAwayFrom({2, 3, 7, 9}, 1, {-0.4f, 0.5f}, 0.05f);
  GradientChecker().Check(def, {{"X", X}}, 0, 0);
}

TEST(ClipOpTest, GradientOpPassesInsideOnly) {
  auto gdef = MakeOperatorDef("ClipGradient", "", {"Y", "dY"}, {"dY"}, Bounds(0.f, 1.f));
  auto dx = RunAndGet(gdef, {{"Y", FloatTensor({4}, {0.f, 0.5f, 1.f, 0.25f})},
                             {"dY", FloatTensor({4}, {1.f, 2.f, 3.f, 4.f})}});
  EXPECT_EQ(dx, (std::vector<float>{0.f, 2.f, 0.f, 4.f}));
  auto meta = GetGradientForOp(MakeOperatorDef("Clip", "", {"X"}, {"Y"}, Bounds(0.f, 1.f)),
                               {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "ClipGradient");
  EXPECT_EQ(meta.ops[0].input(0), "Y");
  EXPECT_EQ(meta.ops[0].input(1), "Y_grad");
  EXPECT_EQ(meta.ops[0].arg_size(), 2);
}

TEST(ClipOpTest, Fp16MatchesFp32) {
  CheckFp16MatchesFp32(MakeOperatorDef("Clip", "", {"X"}, {"Y"}, Bounds(-0.3f, 0.6f)),
                       {{"X", RandomTensor({2, 3, 7, 9}, 2)}}, {"X"});
  // Y values on the grid of the bounds so that fp16 rounding cannot move them across a bound.
  Tensor Y = RandomTensor({5, 13}, 3);
  for (int64_t i = 0; i < Y.numel(); i += 4) Y.mutable_data<float>()[i] = 0.5f;
  CheckFp16MatchesFp32(MakeOperatorDef("ClipGradient", "", {"Y", "dY"}, {"dX"},
                                       Bounds(-0.5f, 0.5f)),
                       {{"Y", Y}, {"dY", RandomTensor({5, 13}, 4)}}, {"Y", "dY"});
}

TEST(ClipOpTest, Errors) {
  Workspace ws;
  try {
    RunOp(MakeOperatorDef("Clip", "", {"X"}, {"Y"}, Bounds(1.f, -1.f)),
          {{"X", RandomTensor({2}, 1)}}, &ws);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("min <= max, got min = 1, max = -1"), std::string::npos)
        << e.what();
  }
  try {
    RunOp(MakeOperatorDef("Clip", "", {"X"}, {"Y"}), {{"X", IntTensor({2}, {1, 2})}}, &ws);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("float, float16 or bfloat16"), std::string::npos)
        << e.what();
  }
}

TEST(ClipOpTest, NaNPropagates) {
  const std::vector<Argument> bounds{MakeArgument("min", -1.f), MakeArgument("max", 1.f)};
  ExpectNaNPropagates(MakeOperatorDef("Clip", "", {"X"}, {"Y"}, bounds),
                      {{"X", FloatTensor({3}, {-5.f, 0.5f, 5.f})}}, "X", 1, "Y", {1});
  auto g = MakeOperatorDef("ClipGradient", "", {"Y", "dY"}, {"dX"}, bounds);
  const Tensor y = FloatTensor({3}, {-1.f, 0.5f, 1.f}), dy = FloatTensor({3}, {1, 2, 3});
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "Y", 2, "dX", {2});
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "dY", 0, "dX", {0});  // clipped, still NaN
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
