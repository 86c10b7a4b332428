#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(CopyOpTest, DeepCopy) {
  Tensor X = RandomTensor({3, 4}, 1);
  Workspace ws;
  RunOp(MakeOperatorDef("Copy", "", {"X"}, {"Y"}), {{"X", X}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_EQ(Y.dims(), X.dims());
  EXPECT_EQ(ToFloatVector(Y), ToFloatVector(X));
  EXPECT_FALSE(Y.SharesStorageWith(ws.GetTensor("X")));
  ws.CreateTensor("X")->mutable_data<float>()[0] = 42.f;
  EXPECT_EQ(Y.data<float>()[0], X.data<float>()[0]);
  // Any type.
  RunOp(MakeOperatorDef("Copy", "", {"I"}, {"J"}), {{"I", IntTensor({2}, {7, 8})}}, &ws);
  EXPECT_EQ(ws.GetTensor("J").data<int32_t>()[1], 8);
}

TEST(CopyOpTest, GradientIsCopyOnDeviceLike) {
  Tensor X = RandomTensor({2, 3, 7, 9}, 1);
  auto def = MakeOperatorDef("Copy", "", {"X"}, {"Y"});
  GradientChecker().Check(def, {{"X", X}}, 0, 0);
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "CopyOnDeviceLike");
  EXPECT_EQ(meta.ops[0].input(0), "Y_grad");
  EXPECT_EQ(meta.ops[0].input(1), "X");
  EXPECT_EQ(meta.ops[0].output(0), "X_grad");
}

TEST(CopyOpTest, CopyOnDeviceLike) {
  Tensor X = RandomTensor({5}, 1);
  auto y = RunAndGet(MakeOperatorDef("CopyOnDeviceLike", "", {"X", "L"}, {"Y"}),
                     {{"X", X}, {"L", IntTensor({1}, {0})}});
  EXPECT_EQ(y, ToFloatVector(X));
}

TEST(CopyOpTest, NotInPlace) {
  Workspace ws;
  EXPECT_THROW(RunOp(MakeOperatorDef("Copy", "", {"X"}, {"X"}), {{"X", RandomTensor({2}, 1)}},
                     &ws),
               EnforceNotMet);
}

TEST(AliasOpTest, SharesStorage) {
  Tensor X = RandomTensor({3, 2}, 1);
  Workspace ws;
  RunOp(MakeOperatorDef("Alias", "", {"X"}, {"Y"}), {{"X", X}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_TRUE(Y.SharesStorageWith(ws.GetTensor("X")));
  EXPECT_EQ(Y.dims(), X.dims());
  ws.CreateTensor("X")->mutable_data<float>()[2] = 5.f;
  EXPECT_EQ(Y.data<float>()[2], 5.f);
}

TEST(AliasOpTest, GradientPassesThrough) {
  auto def = MakeOperatorDef("Alias", "", {"X"}, {"Y"});
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  EXPECT_TRUE(meta.ops.empty());
  EXPECT_EQ(meta.g_input[0].dense, "Y_grad");
}

TEST(StopGradientOpTest, IdentityAndInPlace) {
  Tensor X = RandomTensor({4, 3}, 1);
  EXPECT_EQ(RunAndGet(MakeOperatorDef("StopGradient", "", {"X"}, {"Y"}), {{"X", X}}),
            ToFloatVector(X));
  EXPECT_EQ(RunAndGet(MakeOperatorDef("StopGradient", "", {"X"}, {"X"}), {{"X", X}}),
            ToFloatVector(X));
  Workspace ws;
  RunOp(MakeOperatorDef("StopGradient", "", {"X"}, {"Y"}), {{"X", IntTensor({2}, {3, 4})}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").data<int32_t>()[0], 3);
}

TEST(StopGradientOpTest, BlocksGradient) {
  auto meta = GetGradientForOp(MakeOperatorDef("StopGradient", "", {"X"}, {"Y"}),
                               {GradientWrapper{"Y_grad", "", ""}});
  EXPECT_TRUE(meta.ops.empty());
  ASSERT_EQ(meta.g_input.size(), 1u);
  EXPECT_TRUE(meta.g_input[0].IsEmpty());
}

TEST(CopyFromCPUInputOpTest, DeepCopyOfAnyType) {
  Tensor X = RandomTensor({3, 5}, 2);
  Workspace ws;
  auto def = MakeOperatorDef("CopyFromCPUInput", "", {"X"}, {"Y"});
  RunOp(def, {{"X", X}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_EQ(Y.dims(), X.dims());
  EXPECT_EQ(Y.device(), Device());
  EXPECT_EQ(ToFloatVector(Y), ToFloatVector(X));
  EXPECT_FALSE(Y.SharesStorageWith(ws.GetTensor("X")));
  RunOp(MakeOperatorDef("CopyFromCPUInput", "", {"H"}, {"G"}), {{"H", ToHalf(X)}}, &ws);
  EXPECT_EQ(ws.GetTensor("G").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("G")), ToFloatVector(RoundThroughHalf(X)));
  RunOp(MakeOperatorDef("CopyFromCPUInput", "", {"I"}, {"J"}), {{"I", IntTensor({3}, {4, 5, 6})}},
        &ws);
  EXPECT_EQ(ws.GetTensor("J").data<int32_t>()[2], 6);
}

TEST(CopyFromCPUInputOpTest, SchemaAndNoGradient) {
  const OpSchema* s = OpSchemaRegistry::Schema("CopyFromCPUInput");
  ASSERT_NE(s, nullptr);
  auto def = MakeOperatorDef("CopyFromCPUInput", "", {"X"}, {"Y"});
  auto out = s->InferShapes(def, {{{2, 7}, DataType::INT64}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(out[0].dtype, DataType::INT64);
  EXPECT_DOUBLE_EQ(s->InferCost(def, {{{2, 7}, DataType::INT64}}).bytes_written, 2 * 7 * 8);
  EXPECT_THROW(s->Verify(MakeOperatorDef("CopyFromCPUInput", "", {"X"}, {"X"})), EnforceNotMet);
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  EXPECT_TRUE(meta.ops.empty());
  EXPECT_TRUE(meta.g_input[0].IsEmpty());
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
