#include <cmath>

#include <gtest/gtest.h>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

Tensor RunFill(const OperatorDef& def, Workspace* ws) {
  RunOp(def, {}, ws);
  Tensor out;
  out.CopyFrom(ws->GetTensor(def.output(0)));
  return out;
}

TEST(FillerOpTest, ConstantFillTypesAndShapes) {
  Workspace ws;
  Tensor t = RunFill(MakeOperatorDef("ConstantFill", "", {}, {"y"},
                                     {MakeArgument("shape", std::vector<int>{2, 3}),
                                      MakeArgument("value", 2.5f)}),
                     &ws);
  EXPECT_EQ(t.dtype(), DataType::FLOAT);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ToFloatVector(t), std::vector<float>(6, 2.5f));
  // value given as an integer -> INT64, as Caffe2 infers.
  t = RunFill(MakeOperatorDef("ConstantFill", "", {}, {"i"},
                              {MakeArgument("shape", std::vector<int>{1}), MakeArgument("value", 7)}),
              &ws);
  EXPECT_EQ(t.dtype(), DataType::INT64);
  EXPECT_EQ(t.data<int64_t>()[0], 7);
  // dtype by name and by enum value.
  t = RunFill(MakeOperatorDef("ConstantFill", "", {}, {"h"},
                              {MakeArgument("shape", std::vector<int>{4}),
                               MakeArgument("value", 0.1f), MakeArgument("dtype", "float16")}),
              &ws);
  EXPECT_EQ(t.dtype(), DataType::FLOAT16);
  EXPECT_EQ(t.data<Half>()[3].x, Half(0.1f).x);
  t = RunFill(MakeOperatorDef("ConstantFill", "", {}, {"b"},
                              {MakeArgument("shape", std::vector<int>{2}),
                               MakeArgument("value", 1.f), MakeArgument("dtype", 5)}),
              &ws);
  EXPECT_EQ(t.dtype(), DataType::BOOL);
  EXPECT_TRUE(t.data<bool>()[1]);
}

TEST(FillerOpTest, ShapeFromInputAndExtraShape) {
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({3, 2}, 1));
  Tensor t = RunFill(MakeOperatorDef("ConstantFill", "", {"x"}, {"y"},
                                     {MakeArgument("value", 1.f),
                                      MakeArgument("extra_shape", std::vector<int>{4})}),
                     &ws);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 2, 4}));
  // A 0-d loss gives a 0-d seed (the gradient seed Backward emits).
  SetInput(&ws, "loss", FloatTensor({}, {0.7f}));
  t = RunFill(MakeOperatorDef("ConstantFill", "", {"loss"}, {"loss_autogen_grad"},
                              {MakeArgument("value", 1.f)}),
              &ws);
  EXPECT_EQ(t.ndim(), 0);
  EXPECT_EQ(t.data<float>()[0], 1.f);
  // input_as_shape.
  Tensor shape({2}, DataType::INT64);
  shape.mutable_data<int64_t>()[0] = 5;
  shape.mutable_data<int64_t>()[1] = 1;
  SetInput(&ws, "s", shape);
  t = RunFill(MakeOperatorDef("ConstantFill", "", {"s"}, {"z"},
                              {MakeArgument("input_as_shape", 1)}),
              &ws);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{5, 1}));
}

TEST(FillerOpTest, RandomFillsHaveTheRightStatistics) {
  Workspace ws;
  Tensor u = RunFill(MakeOperatorDef("UniformFill", "", {}, {"u"},
                                     {MakeArgument("shape", std::vector<int>{100, 100}),
                                      MakeArgument("min", -2.f), MakeArgument("max", 3.f)}),
                     &ws);
  double mean = 0;
  for (float v : ToFloatVector(u)) {
    ASSERT_GE(v, -2.f);
    ASSERT_LT(v, 3.f);
    mean += v;
  }
  EXPECT_NEAR(mean / 10000, 0.5, 0.05);

  Tensor g = RunFill(MakeOperatorDef("GaussianFill", "", {}, {"g"},
                                     {MakeArgument("shape", std::vector<int>{200, 50}),
                                      MakeArgument("mean", 1.f), MakeArgument("std", 2.f)}),
                     &ws);
  double s = 0, s2 = 0;
  for (float v : ToFloatVector(g)) {
    s += v;
    s2 += v * v;
  }
  double m = s / 10000, var = s2 / 10000 - m * m;
  EXPECT_NEAR(m, 1.0, 0.08);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.08);

  // Xavier: |x| <= sqrt(3 / fan_in) with fan_in = 20*5*5.
  Tensor x = RunFill(MakeOperatorDef("XavierFill", "", {}, {"x"},
                                     {MakeArgument("shape", std::vector<int>{50, 20, 5, 5})}),
                     &ws);
  float bound = std::sqrt(3.f / 500.f), mx = 0;
  for (float v : ToFloatVector(x)) mx = std::max(mx, std::fabs(v));
  EXPECT_LE(mx, bound);
  EXPECT_GT(mx, 0.9f * bound);

  // MSRA: std = sqrt(2 / fan_out), fan_out = 64*3*3.
  Tensor r = RunFill(MakeOperatorDef("MSRAFill", "", {}, {"r"},
                                     {MakeArgument("shape", std::vector<int>{64, 32, 3, 3})}),
                     &ws);
  s2 = 0;
  for (float v : ToFloatVector(r)) s2 += v * v;
  EXPECT_NEAR(std::sqrt(s2 / r.numel()), std::sqrt(2.0 / 576), 0.003);
}

TEST(FillerOpTest, SeedMakesFillsRepeatable) {
  auto def = MakeOperatorDef("GaussianFill", "", {}, {"g"},
                             {MakeArgument("shape", std::vector<int>{10})});
  def.mutable_device_option()->set_random_seed(42);
  Workspace a, b;
  EXPECT_EQ(ToFloatVector(RunFill(def, &a)), ToFloatVector(RunFill(def, &b)));
}

TEST(FillerOpTest, GivenTensorFills) {
  Workspace ws;
  Tensor t = RunFill(MakeOperatorDef("GivenTensorFill", "", {}, {"w"},
                                     {MakeArgument("shape", std::vector<int>{2, 2}),
                                      MakeArgument("values", std::vector<float>{1, 2, 3, 4})}),
                     &ws);
  EXPECT_EQ(ToFloatVector(t), (std::vector<float>{1, 2, 3, 4}));
  t = RunFill(MakeOperatorDef("GivenTensorIntFill", "", {}, {"i"},
                              {MakeArgument("shape", std::vector<int>{3}),
                               MakeArgument("values", std::vector<int>{-1, 0, 9})}),
              &ws);
  EXPECT_EQ(t.dtype(), DataType::INT32);
  EXPECT_EQ(t.data<int32_t>()[2], 9);
  t = RunFill(MakeOperatorDef("GivenTensorInt64Fill", "", {}, {"l"},
                              {MakeArgument("shape", std::vector<int>{1}),
                               MakeArgument("values", std::vector<int64_t>{int64_t{1} << 35})}),
              &ws);
  EXPECT_EQ(t.data<int64_t>()[0], int64_t{1} << 35);
  t = RunFill(MakeOperatorDef("GivenTensorFill", "", {}, {"h"},
                              {MakeArgument("shape", std::vector<int>{2}),
                               MakeArgument("values", std::vector<float>{0.5f, 65504.f}),
                               MakeArgument("dtype", "FLOAT16")}),
              &ws);
  EXPECT_EQ(t.dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(t), (std::vector<float>{0.5f, 65504.f}));
}

TEST(FillerOpTest, BadArgumentsAreClearErrors) {
  Workspace ws;
  auto expect_error = [&](const OperatorDef& def, const std::string& needle) {
    try {
      RunOp(def, {}, &ws);
      ADD_FAILURE() << "expected an error containing: " << needle;
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(MakeOperatorDef("GivenTensorFill", "", {}, {"w"},
                               {MakeArgument("shape", std::vector<int>{2, 2}),
                                MakeArgument("values", std::vector<float>{1, 2, 3})}),
               "4 elements but 3 values");
  expect_error(MakeOperatorDef("UniformFill", "", {}, {"u"},
                               {MakeArgument("shape", std::vector<int>{2}),
                                MakeArgument("min", 1.f), MakeArgument("max", 0.f)}),
               "min < max");
  expect_error(MakeOperatorDef("ConstantFill", "", {}, {"c"}, {MakeArgument("shape", 3)}),
               "list of ints");
  expect_error(MakeOperatorDef("ConstantFill", "", {}, {"c"},
                               {MakeArgument("shape", std::vector<int>{2}),
                                MakeArgument("dtype", "complex")}),
               "unknown data type 'complex'");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
