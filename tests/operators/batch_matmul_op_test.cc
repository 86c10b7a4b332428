#include "operators/math/batch_matmul_op.h"

#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef MatMulDef(int trans_a, int trans_b, int broadcast = 0) {
  std::vector<Argument> args;
  if (trans_a) args.push_back(MakeArgument("trans_a", trans_a));
  if (trans_b) args.push_back(MakeArgument("trans_b", trans_b));
  if (broadcast) args.push_back(MakeArgument("broadcast", broadcast));
  return MakeOperatorDef("BatchMatMul", "", {"A", "B"}, {"Y"}, args);
}

// Y = op(A) op(B) for one matrix each, by the definition.
std::vector<float> NaiveMatMul(const float* a, const float* b, int64_t M, int64_t N, int64_t K,
                               bool ta, bool tb) {
  std::vector<float> y(M * N, 0.f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        acc += static_cast<double>(ta ? a[k * M + i] : a[i * K + k]) *
               (tb ? b[j * K + k] : b[k * N + j]);
      }
      y[i * N + j] = static_cast<float>(acc);
    }
  return y;
}

TEST(BatchMatMulOpTest, ExactTwoByThree) {
  const Tensor A = FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor B = FloatTensor({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(RunAndGet(MatMulDef(0, 0), {{"A", A}, {"B", B}}),
            (std::vector<float>{58, 64, 139, 154}));
  // trans_a: A^T (3 x 2) times A (2 x 3).
  EXPECT_EQ(RunAndGet(MatMulDef(1, 0), {{"A", A}, {"B", A}}),
            (std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45}));
  // trans_b: A (2 x 3) times A^T.
  EXPECT_EQ(RunAndGet(MatMulDef(0, 1), {{"A", A}, {"B", A}}), (std::vector<float>{14, 32, 32, 77}));
}

TEST(BatchMatMulOpTest, BatchedAllTransposesMatchNaive) {
  const int64_t M = 3, N = 5, K = 7;
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      const Tensor A = RandomTensor(
          ta ? std::vector<int64_t>{2, 3, K, M} : std::vector<int64_t>{2, 3, M, K}, 10 + ta);
      const Tensor B = RandomTensor(
          tb ? std::vector<int64_t>{2, 3, N, K} : std::vector<int64_t>{2, 3, K, N}, 20 + tb);
      Workspace ws;
      RunOp(MatMulDef(ta, tb), {{"A", A}, {"B", B}}, &ws);
      const Tensor& Y = ws.GetTensor("Y");
      ASSERT_EQ(Y.dims(), (std::vector<int64_t>{2, 3, M, N}));
      for (int64_t b = 0; b < 6; ++b) {
        ExpectNear(
            std::vector<float>(Y.data<float>() + b * M * N, Y.data<float>() + (b + 1) * M * N),
            NaiveMatMul(A.data<float>() + b * M * K, B.data<float>() + b * K * N, M, N, K, ta, tb),
            1e-5f, 1e-5f, "batch " + std::to_string(b));
      }
    }
  }
}

TEST(BatchMatMulOpTest, BroadcastFollowsNumpyMatmul) {
  const Tensor A = RandomTensor({3, 1, 2, 5}, 1);  // batch dims (3, 1)
  const Tensor B = RandomTensor({4, 5, 3}, 2);     // batch dims (4)
  Workspace ws;
  RunOp(MatMulDef(0, 0, 1), {{"A", A}, {"B", B}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  ASSERT_EQ(Y.dims(), (std::vector<int64_t>{3, 4, 2, 3}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      ExpectNear(
          std::vector<float>(Y.data<float>() + (i * 4 + j) * 6,
                             Y.data<float>() + (i * 4 + j + 1) * 6),
          NaiveMatMul(A.data<float>() + i * 10, B.data<float>() + j * 15, 2, 3, 5, false, false),
          1e-5f, 1e-5f, "batch " + std::to_string(i) + "," + std::to_string(j));
    }
  // Vectors: [5] x [5, 3] -> [3]; [2, 5] x [5] -> [2]; [5] x [5] -> [1]; the trans flags are
  // ignored for vectors.
  const Tensor v = FloatTensor({5}, {1, 2, 3, 4, 5});
  const Tensor m = RandomTensor({5, 3}, 3);
  RunOp(MatMulDef(1, 0, 1), {{"A", v}, {"B", m}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{3}));
  ExpectNear(ToFloatVector(ws.GetTensor("Y")),
             NaiveMatMul(v.data<float>(), m.data<float>(), 1, 3, 5, false, false), 1e-5f, 1e-5f,
             "vector x matrix");
  RunOp(MatMulDef(0, 1, 1), {{"A", RandomTensor({2, 5}, 4)}, {"B", v}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2}));
  RunOp(MatMulDef(0, 0, 1), {{"A", v}, {"B", v}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{1}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), (std::vector<float>{55}));
  // A vector against a batch of matrices.
  RunOp(MatMulDef(0, 0, 1), {{"A", v}, {"B", RandomTensor({4, 5, 3}, 5)}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{4, 3}));
}

TEST(BatchMatMulOpTest, EmptyDims) {
  Workspace ws;
  RunOp(MatMulDef(0, 0),
        {{"A", Tensor({2, 3, 0}, DataType::FLOAT)}, {"B", Tensor({2, 0, 4}, DataType::FLOAT)}},
        &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), std::vector<float>(24, 0.f)) << "empty sums are 0";
  RunOp(MatMulDef(0, 0),
        {{"A", Tensor({0, 3, 2}, DataType::FLOAT)}, {"B", Tensor({0, 2, 4}, DataType::FLOAT)}},
        &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{0, 3, 4}));
}

TEST(BatchMatMulOpTest, StridedRunsGroupTheProducts) {
  const auto equal = MakeBatchMatMulPlan({2, 3, 4, 5}, {2, 3, 5, 6}, false, false, false, "t");
  const auto runs = StridedBatchRuns(equal);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].count, 6);
  EXPECT_EQ(runs[0].a_step, 1);
  EXPECT_EQ(runs[0].b_step, 1);
  const auto shared = MakeBatchMatMulPlan({7, 4, 5}, {5, 6}, false, false, true, "t");
  const auto shared_runs = StridedBatchRuns(shared);
  ASSERT_EQ(shared_runs.size(), 1u);
  EXPECT_EQ(shared_runs[0].count, 7);
  EXPECT_EQ(shared_runs[0].b_step, 0) << "one B for every product";
  // A (3, 1) against B (4): the index pairs (i, j) form 3 runs of 4.
  const auto mixed = MakeBatchMatMulPlan({3, 1, 2, 5}, {4, 5, 3}, false, false, true, "t");
  EXPECT_EQ(mixed.a_index, (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(mixed.b_index, (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  const auto mixed_runs = StridedBatchRuns(mixed);
  ASSERT_EQ(mixed_runs.size(), 3u);
  EXPECT_EQ(mixed_runs[1].first, 4);
  EXPECT_EQ(mixed_runs[1].a_first, 1);
  EXPECT_EQ(mixed_runs[1].a_step, 0);
  EXPECT_EQ(mixed_runs[1].b_step, 1);
}

TEST(BatchMatMulOpTest, GradientsMatchFiniteDifferences) {
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
      const std::map<std::string, Tensor> in{
          {"A",
           RandomTensor(ta ? std::vector<int64_t>{3, 5, 2} : std::vector<int64_t>{3, 2, 5}, 1)},
          {"B",
           RandomTensor(tb ? std::vector<int64_t>{3, 7, 5} : std::vector<int64_t>{3, 5, 7}, 2)}};
      GradientChecker().Check(MatMulDef(ta, tb), in, 0, 0);
      GradientChecker().Check(MatMulDef(ta, tb), in, 1, 0);
    }
  }
  const std::map<std::string, Tensor> plain{{"A", RandomTensor({3, 4}, 3)},
                                            {"B", RandomTensor({4, 5}, 4)}};
  GradientChecker().Check(MatMulDef(0, 0), plain, 0, 0);
  GradientChecker().Check(MatMulDef(0, 0), plain, 1, 0);
}

TEST(BatchMatMulOpTest, GradientMakerEmitsTwoBatchMatMuls) {
  auto meta = GetGradientForOp(MatMulDef(0, 0), {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 2u);
  EXPECT_EQ(meta.ops[0].type(), "BatchMatMul");
  EXPECT_EQ(std::vector<std::string>(meta.ops[0].input().begin(), meta.ops[0].input().end()),
            (std::vector<std::string>{"Y_grad", "B"}));
  EXPECT_EQ(meta.ops[0].output(0), "A_grad");
  EXPECT_EQ(ArgumentHelper(meta.ops[0]).GetSingleArgument<int>("trans_b", 0), 1);
  EXPECT_EQ(std::vector<std::string>(meta.ops[1].input().begin(), meta.ops[1].input().end()),
            (std::vector<std::string>{"A", "Y_grad"}));
  EXPECT_EQ(meta.ops[1].output(0), "B_grad");
  EXPECT_EQ(ArgumentHelper(meta.ops[1]).GetSingleArgument<int>("trans_a", 0), 1);
  std::string error;
  try {
    GetGradientForOp(MatMulDef(0, 0, 1), {GradientWrapper{"Y_grad", "", ""}});
  } catch (const EnforceNotMet& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("broadcast=1 is not supported"), std::string::npos) << error;
}

TEST(BatchMatMulOpTest, Fp16MatchesFp32) {
  for (int ta : {0, 1}) {
    CheckFp16MatchesFp32(
        MatMulDef(ta, 1 - ta),
        {{"A", RandomTensor({3, 5, 7}, 40 + ta)}, {"B", RandomTensor({3, 5, 7}, 50 + ta)}},
        {"A", "B"}, {0}, 2e-3f, 2e-3f);
  }
  CheckFp16MatchesFp32(MatMulDef(0, 0, 1),
                       {{"A", RandomTensor({3, 1, 2, 5}, 6)}, {"B", RandomTensor({4, 5, 3}, 7)}},
                       {"A", "B"}, {0}, 2e-3f, 2e-3f);
}

TEST(BatchMatMulOpTest, Errors) {
  const Tensor A = RandomTensor({2, 3, 4}, 1);
  ExpectError(MatMulDef(0, 0), {{"A", A}, {"B", RandomTensor({2, 5, 6}, 2)}},
              "the inner dims differ: A is 3 x 4 but B is 5 x 6");
  ExpectError(MatMulDef(1, 1), {{"A", A}, {"B", RandomTensor({2, 6, 5}, 2)}},
              "A^T is 4 x 3 but B^T is 5 x 6");
  ExpectError(MatMulDef(0, 0), {{"A", A}, {"B", RandomTensor({4, 6}, 2)}},
              "must have the same rank, at least 2, without broadcast");
  ExpectError(MatMulDef(0, 0), {{"A", A}, {"B", RandomTensor({3, 4, 6}, 2)}},
              "the batch dims of A [2, 3, 4] and B [3, 4, 6] differ");
  ExpectError(MatMulDef(0, 0, 1), {{"A", A}, {"B", RandomTensor({3, 4, 6}, 2)}},
              "do not broadcast (2 vs 3)");
  ExpectError(MatMulDef(0, 0), {{"A", A}, {"B", ToHalf(RandomTensor({2, 4, 6}, 2))}},
              "A and B must have one dtype");
  ExpectError(MatMulDef(0, 0), {{"A", IntTensor({1, 1}, {1})}, {"B", IntTensor({1, 1}, {1})}},
              "float, float16 or bfloat16");
  ExpectError(MatMulDef(0, 0, 1), {{"A", FloatTensor({}, {1})}, {"B", A}},
              "must have at least one dim");
}

TEST(BatchMatMulOpTest, SchemaInfersShapeAndCost) {
  const OpSchema* s = OpSchemaRegistry::Schema("BatchMatMul");
  const std::vector<TensorShape> in{{{6, 3, 4}, DataType::FLOAT16}, {{6, 5, 4}, DataType::FLOAT16}};
  const auto out = s->InferShapes(MatMulDef(0, 1), in);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{6, 3, 5}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_EQ(s->InferCost(MatMulDef(0, 1), in).flops, 2.0 * 6 * 3 * 5 * 4);
}

// A NaN in row i of A fills row i of its batch's Y; one in column j of B, column j.
TEST(BatchMatMulOpTest, NaNPropagates) {
  const std::map<std::string, Tensor> in{{"A", RandomTensor({2, 2, 3}, 51)},
                                         {"B", RandomTensor({2, 3, 2}, 52)}};
  ExpectNaNPropagates(MatMulDef(0, 0), in, "A", 1, "Y", {0, 1});
  ExpectNaNPropagates(MatMulDef(0, 0), in, "A", 10, "Y", {6, 7});
  ExpectNaNPropagates(MatMulDef(0, 0), in, "B", 7, "Y", {5, 7});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
