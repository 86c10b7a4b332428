#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef ArgDef(const std::string& type, std::vector<Argument> args = {}) {
  return MakeOperatorDef(type, "", {"X"}, {"I"}, args);
}

std::vector<int64_t> RunArg(const OperatorDef& def, const Tensor& X,
                            std::vector<int64_t>* dims = nullptr) {
  Workspace ws;
  RunOp(def, {{"X", X}}, &ws);
  const Tensor& I = ws.GetTensor(def.output(0));
  EXPECT_EQ(I.dtype(), DataType::INT64);
  if (dims) *dims = I.dims();
  return std::vector<int64_t>(I.data<int64_t>(), I.data<int64_t>() + I.numel());
}

template <typename T>
Tensor Typed(std::vector<int64_t> dims, std::vector<T> v) {
  Tensor t(std::move(dims), DataTypeOf<T>());
  std::copy(v.begin(), v.end(), t.mutable_data<T>());
  return t;
}

// 3 x 5, with ties in rows 0 (max 4 twice) and 2 (min -1 twice).
const std::vector<float> kValues = {3,  4,  1,   4,  0,   // row 0
                                    -2, 7,  7.5, 6,  2,   // row 1
                                    5,  -1, 9,   -1, 8};  // row 2

TEST(ArgOpTest, ExactValuesOnEachAxisFirstTieWins) {
  const Tensor X = FloatTensor({3, 5}, kValues);
  std::vector<int64_t> dims;
  EXPECT_EQ(RunArg(ArgDef("ArgMax"), X, &dims), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(dims, (std::vector<int64_t>{3, 1})) << "default axis -1, keepdims 1";
  EXPECT_EQ(RunArg(ArgDef("ArgMin", {MakeArgument("keepdims", 0)}), X, &dims),
            (std::vector<int64_t>{4, 0, 1}));
  EXPECT_EQ(dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {MakeArgument("axis", 0)}), X, &dims),
            (std::vector<int64_t>{2, 1, 2, 1, 2}));
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(RunArg(ArgDef("ArgMin", {MakeArgument("axis", -2), MakeArgument("keepdims", 0)}), X),
            (std::vector<int64_t>{1, 2, 0, 2, 0}));
}

TEST(ArgOpTest, SelectLastIndexTakesTheLastTie) {
  const Tensor X = FloatTensor({3, 5}, kValues);
  const Argument last = MakeArgument("select_last_index", 1);
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {last}), X), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(RunArg(ArgDef("ArgMin", {last}), X), (std::vector<int64_t>{4, 0, 3}));
  // No column has a tie: the same answer as without the argument.
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {MakeArgument("axis", 0), last}), X),
            RunArg(ArgDef("ArgMax", {MakeArgument("axis", 0)}), X));
  // Every element equal: the first index by default, the last one when asked.
  const Tensor flat = FloatTensor({2, 4}, {2, 2, 2, 2, -1, -1, -1, -1});
  EXPECT_EQ(RunArg(ArgDef("ArgMin", {last}), flat), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {MakeArgument("axis", 0), last}), flat),
            (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {MakeArgument("select_last_index", 0)}), flat),
            (std::vector<int64_t>{0, 0}));
}

TEST(ArgOpTest, MiddleAxisOf3D) {
  // X[i, j, k] = (j * 7 + 3 * k + 5 * i) % 5 on 2 x 5 x 3: every column of j has distinct values.
  Tensor X({2, 5, 3}, DataType::FLOAT);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k)
        X.mutable_data<float>()[(i * 5 + j) * 3 + k] = (j * 7 + 3 * k + 5 * i) % 5;
  std::vector<int64_t> want_max, want_min;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) {
      int best = 0, worst = 0;
      for (int j = 1; j < 5; ++j) {
        const float* x = X.data<float>();
        if (x[(i * 5 + j) * 3 + k] > x[(i * 5 + best) * 3 + k]) best = j;
        if (x[(i * 5 + j) * 3 + k] < x[(i * 5 + worst) * 3 + k]) worst = j;
      }
      want_max.push_back(best);
      want_min.push_back(worst);
    }
  std::vector<int64_t> dims;
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {MakeArgument("axis", 1)}), X, &dims), want_max);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(
      RunArg(ArgDef("ArgMin", {MakeArgument("axis", 1), MakeArgument("keepdims", 0)}), X, &dims),
      want_min);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 3}));
}

TEST(ArgOpTest, IntegerAndHalfInputsAgreeWithFloat) {
  const Tensor X = FloatTensor({3, 5}, kValues);
  std::vector<int64_t> i32(kValues.size()), i64(kValues.size());
  std::vector<int32_t> v32;
  std::vector<int64_t> v64;
  for (float v : kValues) {
    v32.push_back(static_cast<int32_t>(v * 2));
    v64.push_back(static_cast<int64_t>(v * 2) + (int64_t{1} << 40));
  }
  for (const char* type : {"ArgMax", "ArgMin"}) {
    for (int axis : {0, 1}) {
      for (int last : {0, 1}) {
        const OperatorDef def = ArgDef(
            type, {MakeArgument("axis", axis), MakeArgument("select_last_index", last)});
        const std::vector<int64_t> want = RunArg(def, X);
        EXPECT_EQ(RunArg(def, ToHalf(X)), want) << type << " float16 last " << last;
        EXPECT_EQ(RunArg(def, Typed<int32_t>({3, 5}, v32)), want) << type << " int32 " << last;
        EXPECT_EQ(RunArg(def, Typed<int64_t>({3, 5}, v64)), want) << type << " int64 " << last;
      }
    }
  }
}

TEST(ArgOpTest, NaNIsTheExtreme) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor X = FloatTensor({2, 4}, {1, nan, 7, nan, -5, 2, 3, 0});
  EXPECT_EQ(RunArg(ArgDef("ArgMax"), X), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(RunArg(ArgDef("ArgMin"), X), (std::vector<int64_t>{1, 0}));
  // NaNs tie with each other: the last one wins, and still beats every number.
  const Argument last = MakeArgument("select_last_index", 1);
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {last}), X), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(RunArg(ArgDef("ArgMin", {last}), X), (std::vector<int64_t>{3, 0}));
  const Tensor nan_first = FloatTensor({1, 4}, {nan, 5, 5, 1});
  EXPECT_EQ(RunArg(ArgDef("ArgMax", {last}), nan_first), (std::vector<int64_t>{0}));
  EXPECT_EQ(RunArg(ArgDef("ArgMin", {last}), nan_first), (std::vector<int64_t>{0}));
}

TEST(ArgOpTest, Errors) {
  const Tensor X = RandomTensor({2, 3}, 1);
  ExpectError(ArgDef("ArgMax", {MakeArgument("axis", 2)}), {{"X", X}},
              "axis 2 is out of range for X with dims [2, 3]");
  ExpectError(ArgDef("ArgMin", {MakeArgument("axis", -3)}), {{"X", X}}, "out of range");
  ExpectError(ArgDef("ArgMax", {MakeArgument("axis", 1)}), {{"X", Tensor({2, 0}, DataType::FLOAT)}},
              "is empty along axis 1");
  ExpectError(ArgDef("ArgMax"), {{"X", Tensor({2}, DataType::BOOL)}},
              "X must be float, float16, int32 or int64");
  ExpectError(ArgDef("ArgMin"), {{"X", Tensor({}, DataType::FLOAT)}}, "out of range");
  for (const char* type : {"ArgMax", "ArgMin"}) {
    std::string error;
    try {
      GetGradientForOp(ArgDef(type), {GradientWrapper{"I_grad", "", ""}});
    } catch (const EnforceNotMet& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("should not be differentiated"), std::string::npos) << type << error;
  }
}

TEST(ArgOpTest, SchemaInfersInt64Shape) {
  const auto out = OpSchemaRegistry::Schema("ArgMax")->InferShapes(
      ArgDef("ArgMax", {MakeArgument("axis", 1), MakeArgument("keepdims", 0)}),
      {{{4, 5, 6}, DataType::FLOAT16}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(out[0].dtype, DataType::INT64);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
