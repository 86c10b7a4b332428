// Free and ZeroGradient (operators/util/blob_lifetime_op.h).
#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(FreeOpTest, EmptiesEveryBlob) {
  Workspace ws;
  SetInput(&ws, "a", RandomTensor({3, 4}, 1));
  SetInput(&ws, "b", IntTensor({2}, {5, 6}));
  auto op = CreateOperator(MakeOperatorDef("Free", "", {"a", "b"}, {"a", "b"}), &ws);
  op->Run(0);
  EXPECT_TRUE(ws.GetBlob("a")->empty());
  EXPECT_TRUE(ws.GetBlob("b")->empty());
  // A reader of a freed blob fails clearly; writing it again brings it back, and Free runs again.
  auto copy = CreateOperator(MakeOperatorDef("Copy", "", {"a"}, {"c"}), &ws);
  try {
    copy->Run(0);
    FAIL() << "reading a freed blob should fail";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("'a' is empty"), std::string::npos) << e.what();
  }
  SetInput(&ws, "a", RandomTensor({2}, 2));
  copy->Run(0);
  EXPECT_EQ(ws.GetTensor("c").numel(), 2);
  op->Run(0);
  EXPECT_TRUE(ws.GetBlob("a")->empty());
}

TEST(FreeOpTest, ReleasesStorageOthersStillShare) {
  // A tensor sharing the freed blob's storage keeps its data (only the blob's reference goes).
  Workspace ws;
  SetInput(&ws, "a", FloatTensor({3}, {1, 2, 3}));
  Tensor view;
  view.ShareData(ws.GetTensor("a"));
  RunOp(MakeOperatorDef("Free", "", {"a"}, {"a"}), {}, &ws);
  EXPECT_TRUE(ws.GetBlob("a")->empty());
  EXPECT_EQ(ToFloatVector(view), (std::vector<float>{1, 2, 3}));
}

TEST(FreeOpTest, SchemaEnforcesOneToOneInPlace) {
  const OpSchema* s = OpSchemaRegistry::Schema("Free");
  ASSERT_NE(s, nullptr);
  EXPECT_NO_THROW(s->Verify(MakeOperatorDef("Free", "", {"a", "b", "c"}, {"a", "b", "c"})));
  EXPECT_THROW(s->Verify(MakeOperatorDef("Free", "", {"a"}, {"b"})), EnforceNotMet);
  EXPECT_THROW(s->Verify(MakeOperatorDef("Free", "", {"a", "b"}, {"b", "a"})), EnforceNotMet);
  EXPECT_THROW(s->Verify(MakeOperatorDef("Free", "", {"a", "b"}, {"a"})), EnforceNotMet);
  EXPECT_THROW(s->Verify(MakeOperatorDef("Free", "", {}, {})), EnforceNotMet);
  EXPECT_FALSE(s->doc().empty());
}

TEST(FreeOpTest, ShouldNotBeDifferentiated) {
  try {
    GetGradientForOp(MakeOperatorDef("Free", "", {"a"}, {"a"}),
                     {GradientWrapper{"a_grad", "", ""}});
    FAIL() << "Free has no gradient";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("should not be differentiated"), std::string::npos)
        << e.what();
  }
}

TEST(ZeroGradientOpTest, RunsAsANoOp) {
  Workspace ws;
  Tensor X = RandomTensor({2, 3}, 3);
  RunOp(MakeOperatorDef("ZeroGradient", "", {"X"}, {}), {{"X", X}}, &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("X")), ToFloatVector(X));
  const OpSchema* s = OpSchemaRegistry::Schema("ZeroGradient");
  ASSERT_NE(s, nullptr);
  EXPECT_THROW(s->Verify(MakeOperatorDef("ZeroGradient", "", {"X"}, {"Y"})), EnforceNotMet);
  EXPECT_THROW(s->Verify(MakeOperatorDef("ZeroGradient", "", {"X", "Z"}, {})), EnforceNotMet);
  EXPECT_TRUE(
      s->InferShapes(MakeOperatorDef("ZeroGradient", "", {"X"}, {}), {{{2, 3}, DataType::FLOAT}})
          .empty());
}

TEST(ZeroGradientOpTest, GradientIsAZeroFillOfXsShape) {
  // No output gradients at all: the maker still gives X a gradient.
  auto meta = GetGradientForOp(MakeOperatorDef("ZeroGradient", "", {"X"}, {}), {});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& fill = meta.ops[0];
  EXPECT_EQ(fill.type(), "ConstantFill");
  ASSERT_EQ(fill.input_size(), 1);
  EXPECT_EQ(fill.input(0), "X");
  EXPECT_EQ(fill.output(0), "X_grad");
  ASSERT_EQ(meta.g_input.size(), 1u);
  EXPECT_EQ(meta.g_input[0].dense, "X_grad");
  ASSERT_EQ(fill.arg_size(), 1);
  EXPECT_EQ(fill.arg(0).name(), "value");
  EXPECT_TRUE(fill.arg(0).has_f());
  EXPECT_EQ(fill.arg(0).f(), 0.f);
  Workspace ws;
  RunOp(fill, {{"X", RandomTensor({3, 1, 4}, 4, 1.f, 2.f)}}, &ws);
  const Tensor& dX = ws.GetTensor("X_grad");
  EXPECT_EQ(dX.dims(), (std::vector<int64_t>{3, 1, 4}));
  EXPECT_EQ(dX.dtype(), DataType::FLOAT);
  EXPECT_EQ(ToFloatVector(dX), std::vector<float>(12, 0.f));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
