#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef MinMaxDef(const std::string& type, std::vector<int> axes, int keepdims) {
  std::vector<Argument> args{MakeArgument("keepdims", keepdims)};
  if (!axes.empty()) args.push_back(MakeArgument("axes", axes));
  return MakeOperatorDef(type, "", {"X"}, {"Y"}, args);
}

// A float tensor whose values are distinct and at least `gap` apart (a shuffled ladder), so that
// finite differences never change which element is the extreme of a group.
Tensor DistinctTensor(std::vector<int64_t> dims, uint32_t seed, float gap = 0.05f) {
  Tensor t(std::move(dims), DataType::FLOAT);
  std::vector<int64_t> order(static_cast<size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  float* d = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = (order[i] - t.numel() / 2) * gap;
  return t;
}

// Max (or min) of a 3-D tensor over the dims flagged in `r`, in output order.
std::vector<float> NaiveMinMax(const Tensor& X, std::vector<bool> r, bool max) {
  const int64_t D0 = X.dim(0), D1 = X.dim(1), D2 = X.dim(2);
  const int64_t O1 = r[1] ? 1 : D1, O2 = r[2] ? 1 : D2;
  std::vector<float> out((r[0] ? 1 : D0) * O1 * O2, max ? -std::numeric_limits<float>::infinity()
                                                        : std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < D0; ++i)
    for (int64_t j = 0; j < D1; ++j)
      for (int64_t k = 0; k < D2; ++k) {
        const int64_t o = ((r[0] ? 0 : i) * O1 + (r[1] ? 0 : j)) * O2 + (r[2] ? 0 : k);
        const float v = X.data<float>()[(i * D1 + j) * D2 + k];
        out[o] = max ? std::max(out[o], v) : std::min(out[o], v);
      }
  return out;
}

TEST(ReduceMinMaxOpTest, ExactValues) {
  const Tensor X = FloatTensor({2, 3}, {1, 5, -2, 7, 0, 3});
  EXPECT_EQ(RunAndGet(MinMaxDef("ReduceMax", {1}, 1), {{"X", X}}), (std::vector<float>{5, 7}));
  EXPECT_EQ(RunAndGet(MinMaxDef("ReduceMin", {1}, 0), {{"X", X}}), (std::vector<float>{-2, 0}));
  EXPECT_EQ(RunAndGet(MinMaxDef("ReduceMax", {0}, 0), {{"X", X}}), (std::vector<float>{7, 5, 3}));
  EXPECT_EQ(RunAndGet(MinMaxDef("ReduceMin", {-2}, 1), {{"X", X}}), (std::vector<float>{1, 0, -2}));
  EXPECT_EQ(RunAndGet(MinMaxDef("ReduceMax", {}, 0), {{"X", X}}), (std::vector<float>{7}));
  EXPECT_EQ(RunAndGet(MinMaxDef("ReduceMin", {}, 1), {{"X", X}}), (std::vector<float>{-2}));
}

TEST(ReduceMinMaxOpTest, MatchesNaiveOnOddShapes) {
  const Tensor X = RandomTensor({3, 5, 7}, 11);
  struct Case {
    std::vector<int> axes;
    std::vector<bool> r;
    std::vector<int64_t> keep, drop;
  };
  for (const Case& c : {Case{{0}, {true, false, false}, {1, 5, 7}, {5, 7}},
                        Case{{1}, {false, true, false}, {3, 1, 7}, {3, 7}},
                        Case{{2, 0}, {true, false, true}, {1, 5, 1}, {5}},
                        Case{{-1, 1}, {false, true, true}, {3, 1, 1}, {3}},
                        Case{{}, {true, true, true}, {1, 1, 1}, {}}}) {
    for (bool max : {true, false}) {
      const std::string type = max ? "ReduceMax" : "ReduceMin";
      for (int keep : {1, 0}) {
        SCOPED_TRACE(type + " axes " + DimsString(c.axes) + " keepdims " + std::to_string(keep));
        Workspace ws;
        RunOp(MinMaxDef(type, c.axes, keep), {{"X", X}}, &ws);
        const Tensor& Y = ws.GetTensor("Y");
        EXPECT_EQ(Y.dims(), keep ? c.keep : c.drop);
        EXPECT_EQ(ToFloatVector(Y), NaiveMinMax(X, c.r, max));
      }
    }
  }
}

TEST(ReduceMinMaxOpTest, NaNWinsAndEmptyGroupsGiveInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor X = FloatTensor({2, 3}, {1, nan, 2, -1, -3, 4});
  for (const char* type : {"ReduceMax", "ReduceMin"}) {
    const std::vector<float> y = RunAndGet(MinMaxDef(type, {1}, 0), {{"X", X}});
    EXPECT_TRUE(std::isnan(y[0])) << type;
    EXPECT_EQ(y[1], std::string(type) == "ReduceMax" ? 4.f : -3.f) << type;
  }
  Workspace ws;
  RunOp(MinMaxDef("ReduceMax", {1}, 1), {{"X", Tensor({2, 0, 3}, DataType::FLOAT)}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 1, 3}));
  for (float v : ToFloatVector(ws.GetTensor("Y")))
    EXPECT_EQ(v, -std::numeric_limits<float>::infinity());
  const std::vector<float> mins =
      RunAndGet(MinMaxDef("ReduceMin", {1}, 0), {{"X", Tensor({2, 0}, DataType::FLOAT)}});
  EXPECT_EQ(mins, (std::vector<float>(2, std::numeric_limits<float>::infinity())));
}

TEST(ReduceMinMaxOpTest, GradientGoesToEveryTiedExtreme) {
  const Tensor X = FloatTensor({2, 3}, {1, 3, 3, -2, 5, -2});
  const Tensor dY = FloatTensor({2}, {10, 20});
  const std::vector<Argument> args{MakeArgument("axes", std::vector<int>{1}),
                                   MakeArgument("keepdims", 0)};
  const std::vector<float> dmax =
      RunAndGet(MakeOperatorDef("ReduceMaxGradient", "", {"dY", "X", "Y"}, {"dX"}, args),
                {{"dY", dY}, {"X", X}, {"Y", FloatTensor({2}, {3, 5})}});
  EXPECT_EQ(dmax, (std::vector<float>{0, 10, 10, 0, 20, 0}));
  const std::vector<float> dmin =
      RunAndGet(MakeOperatorDef("ReduceMinGradient", "", {"dY", "X", "Y"}, {"dX"}, args),
                {{"dY", dY}, {"X", X}, {"Y", FloatTensor({2}, {1, -2})}});
  EXPECT_EQ(dmin, (std::vector<float>{10, 0, 0, 20, 0, 20}));
  // A NaN result stays NaN in its whole group.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> dnan =
      RunAndGet(MakeOperatorDef("ReduceMaxGradient", "", {"dY", "X", "Y"}, {"dX"}, args),
                {{"dY", dY}, {"X", X}, {"Y", FloatTensor({2}, {nan, 5})}});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(dnan[i])) << i;
  EXPECT_EQ(std::vector<float>(dnan.begin() + 3, dnan.end()), (std::vector<float>{0, 20, 0}));
}

TEST(ReduceMinMaxOpTest, Gradients) {
  const std::map<std::string, Tensor> in{{"X", DistinctTensor({3, 5, 7}, 3)}};
  for (const char* type : {"ReduceMax", "ReduceMin"}) {
    GradientChecker().Check(MinMaxDef(type, {1}, 1), in, 0, 0);
    GradientChecker().Check(MinMaxDef(type, {0, 2}, 0), in, 0, 0);
    GradientChecker().Check(MinMaxDef(type, {}, 0), in, 0, 0);
  }
  for (bool max : {true, false}) {
    auto meta = GetGradientForOp(MinMaxDef(max ? "ReduceMax" : "ReduceMin", {1}, 0),
                                 {GradientWrapper{"Y_grad", "", ""}});
    ASSERT_EQ(meta.ops.size(), 1u);
    EXPECT_EQ(meta.ops[0].type(), max ? "ReduceMaxGradient" : "ReduceMinGradient");
    EXPECT_EQ(std::vector<std::string>(meta.ops[0].input().begin(), meta.ops[0].input().end()),
              (std::vector<std::string>{"Y_grad", "X", "Y"}));
    EXPECT_EQ(meta.ops[0].output(0), "X_grad");
    EXPECT_EQ(meta.ops[0].arg_size(), 2) << "axes and keepdims are copied";
  }
}

TEST(ReduceMinMaxOpTest, Fp16MatchesFp32) {
  const Tensor X = DistinctTensor({3, 5, 7}, 4, 0.01f);
  for (const char* type : {"ReduceMax", "ReduceMin"}) {
    CheckFp16MatchesFp32(MinMaxDef(type, {0, 2}, 1), {{"X", X}}, {"X"}, {0}, 0.f, 0.f);
  }
  Workspace ws;
  RunOp(MinMaxDef("ReduceMax", {0, 2}, 0), {{"X", RoundThroughHalf(X)}}, &ws);
  const Tensor Y = ws.GetTensor("Y");
  for (const char* type : {"ReduceMaxGradient", "ReduceMinGradient"}) {
    const OperatorDef g = MakeOperatorDef(
        type, "", {"dY", "X", "Y"}, {"dX"},
        {MakeArgument("axes", std::vector<int>{0, 2}), MakeArgument("keepdims", 0)});
    CheckFp16MatchesFp32(g, {{"dY", RandomTensor({5}, 5)}, {"X", X}, {"Y", Y}}, {"dY", "X", "Y"});
  }
}

TEST(ReduceMinMaxOpTest, Errors) {
  const Tensor X = RandomTensor({2, 3}, 1);
  ExpectError(MinMaxDef("ReduceMax", {2}, 1), {{"X", X}},
              "axis 2 is out of range for X with dims [2, 3]");
  ExpectError(MinMaxDef("ReduceMin", {-3}, 1), {{"X", X}}, "out of range");
  ExpectError(MinMaxDef("ReduceMax", {1, -1}, 1), {{"X", X}}, "lists dim 1 more than once");
  ExpectError(MinMaxDef("ReduceMin", {0, 0}, 1), {{"X", X}}, "more than once");
  ExpectError(MinMaxDef("ReduceMax", {0}, 1), {{"X", IntTensor({2}, {1, 2})}},
              "float, float16 or bfloat16");
  const OperatorDef g = MakeOperatorDef("ReduceMaxGradient", "", {"dY", "X", "Y"}, {"dX"},
                                        {MakeArgument("axes", std::vector<int>{0})});
  ExpectError(g, {{"dY", RandomTensor({2}, 2)}, {"X", X}, {"Y", RandomTensor({1, 3}, 3)}},
              "dY has dims [2] but reducing X [2, 3] over axes [0] gives [1, 3]");
  ExpectError(g, {{"dY", RandomTensor({1, 3}, 2)}, {"X", X}, {"Y", RandomTensor({4}, 3)}},
              "Y has dims [4]");
  ExpectError(g,
              {{"dY", RandomTensor({1, 3}, 2)},
               {"X", IntTensor({2, 3}, {1, 2, 3, 4, 5, 6})},
               {"Y", RandomTensor({1, 3}, 3)}},
              "X");
}

TEST(ReduceMinMaxOpTest, SchemaInfersShapeAndCost) {
  const OpSchema* s = OpSchemaRegistry::Schema("ReduceMin");
  ASSERT_NE(s, nullptr);
  const std::vector<TensorShape> in{{{4, 5, 6}, DataType::FLOAT16}};
  const auto out = s->InferShapes(MinMaxDef("ReduceMin", {0, 2}, 0), in);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{5}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_EQ(s->InferCost(MinMaxDef("ReduceMin", {0, 2}, 0), in).flops, 120.0);
  const auto grad =
      OpSchemaRegistry::Schema("ReduceMaxGradient")
          ->InferShapes(
              MinMaxDef("ReduceMaxGradient", {1}, 1),
              {{{4, 1}, DataType::FLOAT}, {{4, 7}, DataType::FLOAT}, {{4, 1}, DataType::FLOAT}});
  EXPECT_EQ(grad[0].dims, (std::vector<int64_t>{4, 7}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
