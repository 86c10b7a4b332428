// Gather and the ops of its dense gradient, BatchGatherGradient and SparseToDense.
#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef GatherDef(std::vector<Argument> args = {}) {
  return MakeOperatorDef("Gather", "", {"D", "I"}, {"Y"}, args);
}

Tensor Int64Tensor(std::vector<int64_t> dims, std::vector<int64_t> values) {
  Tensor t(std::move(dims), DataType::INT64);
  std::copy(values.begin(), values.end(), t.mutable_data<int64_t>());
  return t;
}

const Tensor kData = FloatTensor({3, 2}, {1.f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});

TEST(GatherOpTest, Axis0ExactValues) {
  Workspace ws;
  RunOp(GatherDef(), {{"D", kData}, {"I", IntTensor({2, 2}, {0, 1, 1, 2})}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_EQ(Y.dims(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(ToFloatVector(Y), (std::vector<float>{1.f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f}));
  // int64 indices, repeats, and negative indices (wrapped by default for axis 0).
  EXPECT_EQ(RunAndGet(GatherDef(), {{"D", kData}, {"I", Int64Tensor({3}, {2, -1, -3})}}),
            (std::vector<float>{4.5f, 5.7f, 4.5f, 5.7f, 1.f, 1.2f}));
}

TEST(GatherOpTest, OtherAxesAndTypes) {
  // D[i, j, k] = 100 i + 10 j + k on 2 x 3 x 5; gather along axis 2 and axis -2.
  Tensor D({2, 3, 5}, DataType::INT32);
  for (int i = 0; i < 30; ++i)
    D.mutable_data<int32_t>()[i] = 100 * (i / 15) + 10 * (i / 5 % 3) + i % 5;
  Workspace ws;
  RunOp(GatherDef({MakeArgument("axis", 2)}), {{"D", D}, {"I", IntTensor({1, 2}, {4, 0})}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_EQ(Y.dims(), (std::vector<int64_t>{2, 3, 1, 2}));
  EXPECT_EQ(std::vector<int32_t>(Y.data<int32_t>(), Y.data<int32_t>() + 12),
            (std::vector<int32_t>{4, 0, 14, 10, 24, 20, 104, 100, 114, 110, 124, 120}));
  RunOp(GatherDef({MakeArgument("axis", -2)}), {{"D", D}, {"I", Int64Tensor({2}, {2, 2})}}, &ws);
  const Tensor& Y2 = ws.GetTensor("Y");
  EXPECT_EQ(Y2.dims(), (std::vector<int64_t>{2, 2, 5}));
  EXPECT_EQ(Y2.data<int32_t>()[0], 20);
  EXPECT_EQ(Y2.data<int32_t>()[19], 124);
  // float16 and double data move unchanged; indices may be 0-d.
  const Tensor h = ToHalf(kData);
  RunOp(GatherDef(), {{"D", h}, {"I", IntTensor({}, {1})}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")),
            ToFloatVector(RoundThroughHalf(FloatTensor({2}, {2.3f, 3.4f}))));
}

TEST(GatherOpTest, EmptyAxisGivesDataShapeAsInCaffe2) {
  Workspace ws;
  RunOp(GatherDef(), {{"D", Tensor({0, 4}, DataType::FLOAT)}, {"I", IntTensor({3}, {0, 5, 9})}},
        &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{0, 4}));
  RunOp(GatherDef(), {{"D", kData}, {"I", IntTensor({0}, {})}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{0, 2}));
}

TEST(GatherOpTest, GradientMakers) {
  // Axis 0: Caffe2's sparse gradient, no op.
  auto sparse = GetGradientForOp(GatherDef(), {GradientWrapper{"Y_grad", "", ""}});
  EXPECT_TRUE(sparse.ops.empty());
  EXPECT_EQ(sparse.g_input[0].indices, "I");
  EXPECT_EQ(sparse.g_input[0].values, "Y_grad");
  EXPECT_TRUE(sparse.g_input[1].IsEmpty());
  // Axis 0 dense: SparseToDense(INDICES, dY, DATA) with the forward wrapping made explicit.
  auto dense = GetGradientForOp(GatherDef({MakeArgument("dense_gradient", 1)}),
                                {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(dense.ops.size(), 1u);
  EXPECT_EQ(dense.ops[0].type(), "SparseToDense");
  EXPECT_EQ(std::vector<std::string>(dense.ops[0].input().begin(), dense.ops[0].input().end()),
            (std::vector<std::string>{"I", "Y_grad", "D"}));
  EXPECT_EQ(dense.ops[0].output(0), "D_grad");
  EXPECT_EQ(ArgumentHelper(dense.ops[0]).GetSingleArgument<int>("wrap_indices", -1), 1);
  // Other axes: BatchGatherGradient(DATA, INDICES, dY).
  auto batch =
      GetGradientForOp(GatherDef({MakeArgument("axis", 1)}), {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(batch.ops.size(), 1u);
  EXPECT_EQ(batch.ops[0].type(), "BatchGatherGradient");
  EXPECT_EQ(std::vector<std::string>(batch.ops[0].input().begin(), batch.ops[0].input().end()),
            (std::vector<std::string>{"D", "I", "Y_grad"}));
  EXPECT_EQ(ArgumentHelper(batch.ops[0]).GetSingleArgument<int>("axis", -1), 1);
  EXPECT_EQ(ArgumentHelper(batch.ops[0]).GetSingleArgument<int>("wrap_indices", -1), 0);
  std::string error;
  try {
    GetGradientForOp(GatherDef({MakeArgument("axis", 1), MakeArgument("dense_gradient", 0)}),
                     {GradientWrapper{"Y_grad", "", ""}});
  } catch (const EnforceNotMet& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("has only a dense gradient"), std::string::npos) << error;
}

TEST(GatherOpTest, DenseGradientsMatchFiniteDifferences) {
  const Tensor D = RandomTensor({5, 3, 7}, 21);
  const Tensor I = IntTensor({2, 2}, {4, 0, 4, 2});  // a repeated index sums two slices
  GradientChecker().Check(GatherDef({MakeArgument("dense_gradient", 1)}), {{"D", D}, {"I", I}}, 0,
                          0);
  GradientChecker().Check(GatherDef({MakeArgument("axis", 1)}),
                          {{"D", D}, {"I", IntTensor({3}, {2, 2, 0})}}, 0, 0);
  GradientChecker().Check(GatherDef({MakeArgument("axis", -1)}), {{"D", D}, {"I", I}}, 0, 0);
  GradientChecker().Check(GatherDef({MakeArgument("dense_gradient", 1)}),
                          {{"D", D}, {"I", Int64Tensor({3}, {-1, 1, -1})}}, 0,
                          0);  // wrapped negatives
}

TEST(GatherOpTest, BatchGatherGradientExact) {
  // DATA 2 x 3; indices [2, 0, 2] along axis 1; GRAD 2 x 3.
  const OperatorDef def = MakeOperatorDef("BatchGatherGradient", "", {"D", "I", "G"}, {"dD"});
  const std::vector<float> got =
      RunAndGet(def, {{"D", RandomTensor({2, 3}, 1)},
                      {"I", IntTensor({3}, {2, 0, 2})},
                      {"G", FloatTensor({2, 3}, {1, 2, 3, 10, 20, 30})}});
  EXPECT_EQ(got, (std::vector<float>{2, 0, 4, 20, 0, 40}));
}

TEST(SparseToDenseOpTest, ExactValuesAndFirstDim) {
  const OperatorDef def = MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"});
  const Tensor V = FloatTensor({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Workspace ws;
  RunOp(def, {{"I", IntTensor({4}, {2, 4, 0, 2})}, {"V", V}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), (std::vector<float>{5, 6, 0, 0, 8, 10, 0, 0, 3, 4}));
  // First dim from output_first_dim or from data_to_infer_dim.
  RunOp(MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"},
                        {MakeArgument("output_first_dim", 7)}),
        {{"I", IntTensor({4}, {2, 4, 0, 2})}, {"V", V}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{7, 2}));
  RunOp(MakeOperatorDef("SparseToDense", "", {"I", "V", "L"}, {"Y"}),
        {{"I", Int64Tensor({2, 2}, {2, 4, 0, 2})},
         {"V", FloatTensor({2, 2}, {1, 2, 3, 4})},
         {"L", RandomTensor({6, 9}, 2)}},
        &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{6}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), (std::vector<float>{3, 0, 5, 0, 2, 0}));
  // Integer values add up exactly; no indices give an empty first dim.
  RunOp(def, {{"I", IntTensor({3}, {1, 1, 0})}, {"V", IntTensor({3}, {5, -7, 9})}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::INT32);
  EXPECT_EQ(std::vector<int32_t>(ws.GetTensor("Y").data<int32_t>(),
                                 ws.GetTensor("Y").data<int32_t>() + 2),
            (std::vector<int32_t>{9, -2}));
  RunOp(def, {{"I", IntTensor({0}, {})}, {"V", Tensor({0, 3}, DataType::FLOAT)}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{0, 3}));
}

TEST(SparseToDenseOpTest, GradientIsGather) {
  const OperatorDef def = MakeOperatorDef("SparseToDense", "", {"I", "V", "L"}, {"Y"});
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "Gather");
  EXPECT_EQ(std::vector<std::string>(meta.ops[0].input().begin(), meta.ops[0].input().end()),
            (std::vector<std::string>{"Y_grad", "I"}));
  EXPECT_EQ(meta.ops[0].output(0), "V_grad");
  GradientChecker().Check(def,
                          {{"I", IntTensor({2, 2}, {3, 1, 3, 0})},
                           {"V", RandomTensor({2, 2, 3}, 7)},
                           {"L", RandomTensor({5}, 8)}},
                          1, 0);
}

TEST(GatherOpTest, Fp16MatchesFp32) {
  const Tensor D = RandomTensor({5, 3, 7}, 31);
  CheckFp16MatchesFp32(GatherDef({MakeArgument("axis", 1)}),
                       {{"D", D}, {"I", IntTensor({4}, {2, 0, 2, 1})}}, {"D"}, {0}, 0.f, 0.f);
  CheckFp16MatchesFp32(MakeOperatorDef("BatchGatherGradient", "", {"D", "I", "G"}, {"dD"},
                                       {MakeArgument("axis", 2)}),
                       {{"D", D},
                        {"I", IntTensor({2, 3}, {6, 0, 6, 3, 6, 1})},
                        {"G", RandomTensor({5, 3, 2, 3}, 32)}},
                       {"G"});
  CheckFp16MatchesFp32(MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"}),
                       {{"I", IntTensor({4}, {2, 4, 0, 2})}, {"V", RandomTensor({4, 3}, 33)}},
                       {"V"});
}

TEST(GatherOpTest, Errors) {
  const Tensor I = IntTensor({2}, {0, 3});
  ExpectError(GatherDef(), {{"D", kData}, {"I", I}},
              "index 3 at position 1 of the indices is out of range for a dim of size 3");
  ExpectError(GatherDef(), {{"D", kData}, {"I", IntTensor({1}, {-4})}}, "expected -3 <= index < 3");
  ExpectError(GatherDef({MakeArgument("axis", 1)}), {{"D", kData}, {"I", IntTensor({1}, {-1})}},
              "expected 0 <= index < 2");
  ExpectError(GatherDef({MakeArgument("axis", 2)}), {{"D", kData}, {"I", I}},
              "axis 2 is out of range for DATA with dims [3, 2]");
  ExpectError(GatherDef(), {{"D", kData}, {"I", FloatTensor({1}, {0})}},
              "indices must be int32 or int64");
  ExpectError(GatherDef({MakeArgument("match_outer", 1)}), {{"D", kData}, {"I", I}},
              "match_outer=1 is not supported");
  ExpectError(MakeOperatorDef("BatchGatherGradient", "", {"D", "I", "G"}, {"dD"}),
              {{"D", kData}, {"I", IntTensor({1}, {1})}, {"G", RandomTensor({3, 2}, 1)}},
              "GRAD has dims [3, 2] but gathering DATA [3, 2] along axis 1 at indices [1] gives "
              "[3, 1]");
  ExpectError(MakeOperatorDef("BatchGatherGradient", "", {"D", "I", "G"}, {"dD"}),
              {{"D", kData}, {"I", IntTensor({1}, {2})}, {"G", RandomTensor({3, 1}, 1)}},
              "out of range for a dim of size 2");
  ExpectError(MakeOperatorDef("BatchGatherGradient", "", {"D", "I", "G"}, {"dD"}),
              {{"D", kData}, {"I", IntTensor({1}, {1})}, {"G", IntTensor({3, 1}, {1, 2, 3})}},
              "GRAD");
  const OperatorDef s2d = MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"});
  ExpectError(s2d, {{"I", IntTensor({2}, {0, -1})}, {"V", RandomTensor({2}, 1)}},
              "index -1 at position 1");
  ExpectError(s2d, {{"I", IntTensor({2}, {0, 1})}, {"V", RandomTensor({3}, 1)}},
              "values [3] must start with the indices' dims [2]");
  ExpectError(s2d, {{"I", IntTensor({1}, {0})}, {"V", Tensor({1}, DataType::BOOL)}},
              "values must be float, float16, bfloat16, int32 or int64");
  ExpectError(MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"},
                              {MakeArgument("output_first_dim", 2)}),
              {{"I", IntTensor({1}, {2})}, {"V", RandomTensor({1}, 1)}},
              "out of range for a dim of size 2");
  ExpectError(MakeOperatorDef("SparseToDense", "", {"I", "V", "L"}, {"Y"},
                              {MakeArgument("output_first_dim", 2)}),
              {{"I", I}, {"V", RandomTensor({2}, 1)}, {"L", kData}}, "give one of them");
}

TEST(GatherOpTest, SchemasInferShapes) {
  const auto out = OpSchemaRegistry::Schema("Gather")->InferShapes(
      GatherDef({MakeArgument("axis", 1)}),
      {{{4, 5, 6}, DataType::FLOAT16}, {{2, 3}, DataType::INT64}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{4, 2, 3, 6}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  const OpSchema* s2d = OpSchemaRegistry::Schema("SparseToDense");
  const auto known = s2d->InferShapes(
      MakeOperatorDef("SparseToDense", "", {"I", "V", "L"}, {"Y"}),
      {{{3}, DataType::INT32}, {{3, 4}, DataType::FLOAT}, {{9, 4}, DataType::FLOAT}});
  EXPECT_EQ(known[0].dims, (std::vector<int64_t>{9, 4}));
  const auto unknown = s2d->InferShapes(MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"}),
                                        {{{3}, DataType::INT32}, {{3, 4}, DataType::FLOAT}});
  EXPECT_TRUE(unknown[0].unknown);
}

// A NaN in a gathered row is copied wherever the row is taken; one in a row left out vanishes.
TEST(GatherOpTest, NaNPropagates) {
  const std::map<std::string, Tensor> in{{"D", RandomTensor({4, 2}, 41)},
                                         {"I", IntTensor({3}, {3, 1, 3})}};
  ExpectNaNPropagates(GatherDef(), in, "D", 7, "Y", {1, 5});
  ExpectNaNPropagates(GatherDef(), in, "D", 2, "Y", {2});
  ExpectNaNPropagates(GatherDef(), in, "D", 0, "Y", {});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
