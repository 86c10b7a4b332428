#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef ReshapeDef(std::vector<int64_t> shape, const std::string& out = "Y") {
  return MakeOperatorDef("Reshape", "", {"X"}, {out, "old"}, {MakeArgument("shape", shape)});
}

TEST(ReshapeOpTest, ShapeArgumentWithKeepAndInfer) {
  Tensor X = RandomTensor({2, 3, 4}, 1);
  struct Case {
    std::vector<int64_t> shape, want;
  };
  for (const Case& c : {Case{{6, 4}, {6, 4}}, Case{{0, -1}, {2, 12}}, Case{{-1, 0, 2}, {4, 3, 2}},
                        Case{{24}, {24}}, Case{{0, 0, 0}, {2, 3, 4}}}) {
    Workspace ws;
    RunOp(ReshapeDef(c.shape), {{"X", X}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), c.want) << DimsString(c.shape);
    EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), ToFloatVector(X));
    const Tensor& old = ws.GetTensor("old");
    ASSERT_EQ(old.dtype(), DataType::INT64);
    EXPECT_EQ(std::vector<int64_t>(old.data<int64_t>(), old.data<int64_t>() + old.numel()),
              (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(ws.GetTensor("X").dims(), (std::vector<int64_t>{2, 3, 4})) << "X untouched";
  }
}

TEST(ReshapeOpTest, ShapeInputKeepsItsType) {
  Tensor X = RandomTensor({4, 5}, 1);
  auto def = MakeOperatorDef("Reshape", "", {"X", "S"}, {"Y", "old"});
  Workspace ws;
  RunOp(def, {{"X", X}, {"S", IntTensor({3}, {2, -1, 5})}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 2, 5}));
  const Tensor& old = ws.GetTensor("old");
  ASSERT_EQ(old.dtype(), DataType::INT32);
  EXPECT_EQ(old.data<int32_t>()[0], 4);
  EXPECT_EQ(old.data<int32_t>()[1], 5);
}

TEST(ReshapeOpTest, InPlaceAndAnyType) {
  auto def = ReshapeDef({-1}, "X");
  Workspace ws;
  RunOp(def, {{"X", IntTensor({2, 2}, {1, 2, 3, 4})}}, &ws);
  const Tensor& X = ws.GetTensor("X");
  EXPECT_EQ(X.dims(), (std::vector<int64_t>{4}));
  EXPECT_EQ(X.data<int32_t>()[3], 4);
  EXPECT_EQ(ws.GetTensor("old").data<int64_t>()[0], 2);
}

TEST(ReshapeOpTest, Gradient) {
  auto def = ReshapeDef({0, -1, 9});
  GradientChecker().Check(def, {{"X", RandomTensor({2, 3, 7, 9}, 1)}}, 0, 0);
  auto inplace = ReshapeDef({-1, 9}, "X");
  GradientChecker().Check(inplace, {{"X", RandomTensor({2, 3, 9}, 2)}}, 0, 0);
}

TEST(ReshapeOpTest, GradientMaker) {
  auto def = ReshapeDef({-1});
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}, GradientWrapper{}});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "Reshape");
  EXPECT_EQ(op.input(0), "Y_grad");
  EXPECT_EQ(op.input(1), "old");
  EXPECT_EQ(op.output(0), "X_grad");
  EXPECT_EQ(op.output(1), "_X_grad_dims");
  EXPECT_EQ(op.arg_size(), 0) << "the forward `shape` must not be copied";
}

TEST(ReshapeOpTest, Errors) {
  Tensor X = RandomTensor({2, 3, 4}, 1);
  ExpectError(ReshapeDef({-1, -1}), {{"X", X}}, "more than one -1");
  ExpectError(ReshapeDef({5, 5}), {{"X", X}},
              "cannot reshape input [2, 3, 4] (24 elements) to [5, 5] (25 elements)");
  ExpectError(ReshapeDef({5, -1}), {{"X", X}}, "24 is not a multiple of 5");
  ExpectError(ReshapeDef({0, 0, 0, 0}), {{"X", X}}, "has 0 at position 3");
  ExpectError(ReshapeDef({-2, 12}), {{"X", X}}, "invalid entry -2");
  ExpectError(MakeOperatorDef("Reshape", "", {"X"}, {"Y", "old"}), {{"X", X}}, "no new shape");
  ExpectError(MakeOperatorDef("Reshape", "", {"X", "S"}, {"Y", "old"},
                              {MakeArgument("shape", std::vector<int64_t>{24})}),
              {{"X", X}, {"S", IntTensor({1}, {24})}}, "give exactly one");
  ExpectError(MakeOperatorDef("Reshape", "", {"X", "S"}, {"Y", "old"}),
              {{"X", X}, {"S", RandomTensor({1}, 2)}}, "1-D int32 or int64");
}

TEST(ReshapeOpTest, SchemaInfersShape) {
  auto out = OpSchemaRegistry::Schema("Reshape")->InferShapes(ReshapeDef({0, -1}),
                                                              {{{3, 4, 5}, DataType::FLOAT}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{3, 20}));
  EXPECT_EQ(out[1].dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(out[1].dtype, DataType::INT64);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
