#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(FlattenOpTest, Forward) {
  Tensor X = RandomTensor({2, 3, 4, 5}, 1);
  struct Case {
    int axis;
    std::vector<int64_t> dims;
  };
  for (const Case& c : {Case{1, {2, 60}}, Case{0, {1, 120}}, Case{3, {24, 5}}, Case{4, {120, 1}},
                        Case{-2, {6, 20}}}) {
    auto def = MakeOperatorDef("Flatten", "", {"X"}, {"Y"}, {MakeArgument("axis", c.axis)});
    Workspace ws;
    RunOp(def, {{"X", X}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), c.dims) << "axis " << c.axis;
    EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), ToFloatVector(X));
  }
}

TEST(FlattenOpTest, AnyDataTypeAndDefaultAxis) {
  auto def = MakeOperatorDef("Flatten", "", {"X"}, {"Y"});
  Workspace ws;
  RunOp(def, {{"X", IntTensor({2, 1, 2}, {1, 2, 3, 4})}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_EQ(Y.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::vector<int32_t>(Y.data<int32_t>(), Y.data<int32_t>() + 4),
            (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(FlattenOpTest, Gradient) {
  auto def = MakeOperatorDef("Flatten", "", {"X"}, {"Y"}, {MakeArgument("axis", 2)});
  GradientChecker().Check(def, {{"X", RandomTensor({2, 3, 7, 9}, 1)}}, 0, 0);
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "ResizeLike");
  EXPECT_EQ(meta.ops[0].input(0), "Y_grad");
  EXPECT_EQ(meta.ops[0].input(1), "X");
  EXPECT_EQ(meta.ops[0].output(0), "X_grad");
}

TEST(FlattenOpTest, BadAxis) {
  auto def = MakeOperatorDef("Flatten", "", {"X"}, {"Y"}, {MakeArgument("axis", 4)});
  Workspace ws;
  try {
    RunOp(def, {{"X", RandomTensor({2, 3, 4}, 1)}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("Flatten axis 4 is out of range for X [2, 3, 4]"),
              std::string::npos)
        << e.what();
  }
}

TEST(FlattenOpTest, SchemaInfersShape) {
  auto def = MakeOperatorDef("Flatten", "", {"X"}, {"Y"});
  auto out =
      OpSchemaRegistry::Schema("Flatten")->InferShapes(def, {{{4, 3, 2}, DataType::FLOAT16}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
}

TEST(ResizeLikeOpTest, TakesShapeOfSecondInput) {
  Tensor X = RandomTensor({6, 2}, 1);
  auto def = MakeOperatorDef("ResizeLike", "", {"X", "L"}, {"Y"});
  Workspace ws;
  RunOp(def, {{"X", X}, {"L", IntTensor({3, 4}, std::vector<int32_t>(12, 0))}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), ToFloatVector(X));
  // In place.
  auto inplace = MakeOperatorDef("ResizeLike", "", {"X", "L"}, {"X"});
  RunOp(inplace, {{"X", X}}, &ws);
  EXPECT_EQ(ws.GetTensor("X").dims(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("X")), ToFloatVector(X));
}

TEST(ResizeLikeOpTest, CountMismatch) {
  auto def = MakeOperatorDef("ResizeLike", "", {"X", "L"}, {"Y"});
  Workspace ws;
  try {
    RunOp(def, {{"X", RandomTensor({5}, 1)}, {"L", RandomTensor({2, 3}, 2)}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("has 5 elements but the shape input float[2, 3] has 6"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
