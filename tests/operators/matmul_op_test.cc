#include "operators/math/matmul_op.h"

#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// A MatMul def; an axis of 1 (the default) is left out.
OperatorDef MatMulDef(int trans_a, int trans_b, int axis_a = 1, int axis_b = 1,
                      std::vector<std::string> inputs = {"A", "B"}) {
  std::vector<Argument> args;
  if (trans_a) args.push_back(MakeArgument("trans_a", trans_a));
  if (trans_b) args.push_back(MakeArgument("trans_b", trans_b));
  if (axis_a != 1) args.push_back(MakeArgument("axis_a", axis_a));
  if (axis_b != 1) args.push_back(MakeArgument("axis_b", axis_b));
  return MakeOperatorDef("MatMul", "", inputs, {"Y"}, args);
}

// Y = op(A2) op(B2) in double, with A2 the data of A read as a_rows rows (B2 likewise) and op()
// a transpose when ta / tb: the definition, element by element.
std::vector<float> Reference(const Tensor& A, int64_t a_rows, bool ta, const Tensor& B,
                             int64_t b_rows, bool tb) {
  const int64_t a_cols = A.numel() / a_rows, b_cols = B.numel() / b_rows;
  const float* a = A.data<float>();
  const float* b = B.data<float>();
  const int64_t M = ta ? a_cols : a_rows, K = ta ? a_rows : a_cols, N = tb ? b_rows : b_cols;
  EXPECT_EQ(K, tb ? b_cols : b_rows) << "test shapes";
  auto op_a = [&](int64_t i, int64_t k) { return ta ? a[k * a_cols + i] : a[i * a_cols + k]; };
  auto op_b = [&](int64_t k, int64_t j) { return tb ? b[j * b_cols + k] : b[k * b_cols + j]; };
  std::vector<float> y;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += static_cast<double>(op_a(i, k)) * op_b(k, j);
      y.push_back(static_cast<float>(sum));
    }
  }
  return y;
}

// Dims of a matrix stored as rows x cols, or cols x rows when transposed.
std::vector<int64_t> Stored(int64_t rows, int64_t cols, bool transposed) {
  return transposed ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{rows, cols};
}

TEST(MatMulOpTest, ExactValues) {
  const Tensor A = FloatTensor({2, 3}, {2, -1, 0, 1, 3, -2});
  const Tensor B = FloatTensor({3, 2}, {1, 4, 0, -1, 5, 2});
  EXPECT_EQ(RunAndGet(MatMulDef(0, 0), {{"A", A}, {"B", B}}), (std::vector<float>{2, 9, -9, -3}));
  // A^T A (3 x 3), A A^T (2 x 2) and A^T B^T = (B A)^T (3 x 3).
  EXPECT_EQ(RunAndGet(MatMulDef(1, 0), {{"A", A}, {"B", A}}),
            (std::vector<float>{5, 1, -2, 1, 10, -6, -2, -6, 4}));
  EXPECT_EQ(RunAndGet(MatMulDef(0, 1), {{"A", A}, {"B", A}}), (std::vector<float>{5, -1, -1, 14}));
  EXPECT_EQ(RunAndGet(MatMulDef(1, 1), {{"A", A}, {"B", B}}),
            (std::vector<float>{6, -1, 12, 11, -3, 1, -8, 2, -4}));
}

TEST(MatMulOpTest, AllTransposesMatchReference) {
  const int64_t M = 3, N = 5, K = 7;
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
      const Tensor A = RandomTensor(Stored(M, K, ta), 10 + ta);
      const Tensor B = RandomTensor(Stored(K, N, tb), 20 + tb);
      Workspace ws;
      RunOp(MatMulDef(ta, tb), {{"A", A}, {"B", B}}, &ws);
      const Tensor& Y = ws.GetTensor("Y");
      EXPECT_EQ(Y.dims(), (std::vector<int64_t>{M, N}));
      ExpectNear(ToFloatVector(Y), Reference(A, ta ? K : M, ta, B, tb ? N : K, tb), 1e-5f, 1e-5f);
    }
  }
}

// Inputs of more than two dims are split at axis_a / axis_b; Y is 2-D.
TEST(MatMulOpTest, AxesViewInputsAsMatrices) {
  struct Case {
    std::vector<int64_t> a_dims;
    int axis_a, ta;
    int64_t a_rows;  // rows of A's stored matrix view
    std::vector<int64_t> b_dims;
    int axis_b, tb;
    int64_t b_rows;
    std::vector<int64_t> y_dims;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, 2, 0, 6, {2, 2, 5}, 2, 0, 4, {6, 5}},  // (6 x 4) (4 x 5)
      {{2, 3, 4}, -1, 0, 6, {4, 5}, -1, 0, 4, {6, 5}},   // negative axes count from the end
      {{4, 3, 2}, 1, 1, 4, {5, 2, 2}, 1, 1, 5, {6, 5}},  // (4 x 6)^T (5 x 4)^T
      {{2, 3, 2, 2}, 2, 0, 6, {5, 2, 2}, 1, 1, 5, {6, 5}},
      {{4}, 0, 0, 1, {2, 2, 3}, 2, 0, 4, {1, 3}},     // axis 0: a single row
      {{2, 2, 3}, 0, 1, 1, {12}, 0, 0, 1, {12, 12}},  // (1 x 12)^T (1 x 12)
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("A " + DimsString(c.a_dims) + " axis_a " + std::to_string(c.axis_a) + ", B " +
                 DimsString(c.b_dims) + " axis_b " + std::to_string(c.axis_b));
    const Tensor A = RandomTensor(c.a_dims, 30);
    const Tensor B = RandomTensor(c.b_dims, 31);
    Workspace ws;
    RunOp(MatMulDef(c.ta, c.tb, c.axis_a, c.axis_b), {{"A", A}, {"B", B}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), c.y_dims);
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), Reference(A, c.a_rows, c.ta, B, c.b_rows, c.tb),
               1e-5f, 1e-5f);
  }
}

TEST(MatMulOpTest, ThirdInputGivesYItsDims) {
  const Tensor A = RandomTensor({4, 3}, 1);
  const Tensor B = RandomTensor({3, 6}, 2);
  const std::vector<float> plain = RunAndGet(MatMulDef(0, 0), {{"A", A}, {"B", B}});
  Workspace ws;
  RunOp(MatMulDef(0, 0, 1, 1, {"A", "B", "like"}),
        {{"A", A}, {"B", B}, {"like", IntTensor({2, 3, 4}, std::vector<int32_t>(24, 0))}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT) << "Y keeps A's dtype";
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), plain);
  ExpectError(MatMulDef(0, 0, 1, 1, {"A", "B", "like"}),
              {{"A", A}, {"B", B}, {"like", RandomTensor({5, 5}, 3)}},
              "the third input [5, 5] has 25 elements but Y is 4 x 6");
}

TEST(MatMulOpTest, EmptyDims) {
  // K = 0: empty sums are 0.
  EXPECT_EQ(RunAndGet(MatMulDef(0, 0), {{"A", Tensor({2, 0}, DataType::FLOAT)},
                                        {"B", Tensor({0, 3}, DataType::FLOAT)}}),
            std::vector<float>(6, 0.f));
  Workspace ws;
  RunOp(MatMulDef(1, 0), {{"A", Tensor({4, 0}, DataType::FLOAT)}, {"B", RandomTensor({4, 3}, 1)}},
        &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{0, 3}));
}

TEST(MatMulOpTest, Errors) {
  ExpectError(MatMulDef(0, 0), {{"A", RandomTensor({2, 3, 4}, 1)}, {"B", RandomTensor({5, 6}, 2)}},
              "the inner dims differ: A is 2 x 12 but B is 5 x 6 (A [2, 3, 4] split at axis_a "
              "1, B [5, 6] split at axis_b 1)");
  ExpectError(MatMulDef(1, 1, 2, 1),
              {{"A", RandomTensor({2, 3, 4}, 1)}, {"B", RandomTensor({6, 5}, 2)}},
              "A^T is 4 x 6 but B^T is 5 x 6");
  ExpectError(MatMulDef(0, 0, 3),
              {{"A", RandomTensor({2, 3, 4}, 1)}, {"B", RandomTensor({4, 6}, 2)}},
              "axis_a 3 is out of range for A [2, 3, 4] (valid: -3 to 2)");
  ExpectError(MatMulDef(0, 0, 1, -3),
              {{"A", RandomTensor({2, 3}, 1)}, {"B", RandomTensor({3, 6}, 2)}},
              "axis_b -3 is out of range for B [3, 6] (valid: -2 to 1)");
  ExpectError(MatMulDef(0, 0), {{"A", FloatTensor({}, {1})}, {"B", RandomTensor({1, 2}, 2)}},
              "A must have at least one dim");
  ExpectError(MatMulDef(0, 0),
              {{"A", RandomTensor({2, 3}, 1)}, {"B", ToHalf(RandomTensor({3, 2}, 2))}},
              "A and B must have one dtype");
  ExpectError(MatMulDef(0, 0), {{"A", IntTensor({1, 1}, {1})}, {"B", IntTensor({1, 1}, {1})}},
              "float, float16 or bfloat16");
}

TEST(MatMulOpTest, Fp16MatchesFp32) {
  for (int ta : {0, 1}) {
    CheckFp16MatchesFp32(
        MatMulDef(ta, 1 - ta, 2, 2),
        {{"A", RandomTensor({3, 5, 7}, 40 + ta)}, {"B", RandomTensor({3, 5, 7}, 50 + ta)}},
        {"A", "B"}, {0}, 2e-3f, 2e-3f);
  }
}

// The ops Caffe2 emits: inputs, the forward input each differentiates as third input, the trans
// flags that are set, and the forward axis of the input each views.
TEST(MatMulOpTest, GradientMakerEmitsCaffe2Ops) {
  struct Want {
    std::vector<std::string> inputs;
    int trans_a, trans_b;
    std::string axis_name;
    int axis;
  };
  struct Case {
    int ta, tb;
    Want da, db;
  };
  // axis_a 3 and axis_b 2 show which forward axis goes where.
  const std::vector<Case> cases = {
      {0, 0, {{"Y_grad", "B", "A"}, 0, 1, "axis_b", 2}, {{"A", "Y_grad", "B"}, 1, 0, "axis_a", 3}},
      {0, 1, {{"Y_grad", "B", "A"}, 0, 0, "axis_b", 2}, {{"Y_grad", "A", "B"}, 1, 0, "axis_b", 3}},
      {1, 0, {{"B", "Y_grad", "A"}, 0, 1, "axis_a", 2}, {{"A", "Y_grad", "B"}, 0, 0, "axis_a", 3}},
      {1, 1, {{"B", "Y_grad", "A"}, 1, 1, "axis_a", 2}, {{"Y_grad", "A", "B"}, 1, 1, "axis_b", 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("trans_a " + std::to_string(c.ta) + " trans_b " + std::to_string(c.tb));
    const GradientOpsMeta meta =
        GetGradientForOp(MatMulDef(c.ta, c.tb, 3, 2), {GradientWrapper{"Y_grad", "", ""}});
    ASSERT_EQ(meta.ops.size(), 2u);
    const std::string grads[] = {"A_grad", "B_grad"};
    const Want* wants[] = {&c.da, &c.db};
    for (int i = 0; i < 2; ++i) {
      const OperatorDef& op = meta.ops[i];
      const Want& w = *wants[i];
      EXPECT_EQ(op.type(), "MatMul");
      EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()), w.inputs);
      EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
                std::vector<std::string>{grads[i]});
      const ArgumentHelper args(op);
      EXPECT_EQ(args.HasArgument("trans_a"), w.trans_a == 1) << op.ShortDebugString();
      EXPECT_EQ(args.HasArgument("trans_b"), w.trans_b == 1) << op.ShortDebugString();
      EXPECT_EQ(args.GetSingleArgument<int>("trans_a", 0), w.trans_a);
      EXPECT_EQ(args.GetSingleArgument<int>("trans_b", 0), w.trans_b);
      EXPECT_EQ(op.arg_size(), w.trans_a + w.trans_b + 1) << op.ShortDebugString();
      EXPECT_EQ(args.GetSingleArgument<int>(w.axis_name, -100), w.axis) << op.ShortDebugString();
      EXPECT_EQ(meta.g_input[i].dense, grads[i]);
    }
  }
  std::string error;
  try {
    GetGradientForOp(MatMulDef(0, 0, 1, 1, {"A", "B", "like"}),
                     {GradientWrapper{"Y_grad", "", ""}});
  } catch (const EnforceNotMet& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("MatMul with a third input (the dims of Y) is not supported"),
            std::string::npos)
      << error;
}

TEST(MatMulOpTest, GradientsMatchFiniteDifferences) {
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
      const std::map<std::string, Tensor> in{{"A", RandomTensor(Stored(3, 5, ta), 1)},
                                             {"B", RandomTensor(Stored(5, 4, tb), 2)}};
      GradientChecker().Check(MatMulDef(ta, tb), in, 0, 0);
      GradientChecker().Check(MatMulDef(ta, tb), in, 1, 0);
    }
  }
}

// Axes past 1 (Caffe2's gradient turned them into 1) and negative ones: op(A2) is 6 x 4 and op(B2)
// 4 x 5 for every trans combination.
TEST(MatMulOpTest, GradientsWithAxesMatchFiniteDifferences) {
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
      const std::vector<int64_t> a_dims =
          ta ? std::vector<int64_t>{2, 2, 3, 2} : std::vector<int64_t>{2, 3, 4};
      const int axis_a = ta ? 2 : -1;
      const std::vector<int64_t> b_dims =
          tb ? std::vector<int64_t>{5, 2, 2} : std::vector<int64_t>{2, 2, 5};
      const int axis_b = tb ? 1 : 2;
      const OperatorDef def = MatMulDef(ta, tb, axis_a, axis_b);
      const std::map<std::string, Tensor> in{{"A", RandomTensor(a_dims, 3)},
                                             {"B", RandomTensor(b_dims, 4)}};
      GradientChecker().Check(def, in, 0, 0);
      GradientChecker().Check(def, in, 1, 0);
      // The gradients have the dims of A and B (the checker compares element counts only).
      Workspace ws;
      RunOp(def, in, &ws);
      SetInput(&ws, "Y_grad", RandomTensor(ws.GetTensor("Y").dims(), 5));
      const GradientOpsMeta meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
      for (const auto& op : meta.ops) CreateOperator(op, &ws)->Run(0);
      EXPECT_EQ(ws.GetTensor("A_grad").dims(), a_dims);
      EXPECT_EQ(ws.GetTensor("B_grad").dims(), b_dims);
    }
  }
}

TEST(MatMulOpTest, SchemaInfersShapeAndCost) {
  const OpSchema* s = OpSchemaRegistry::Schema("MatMul");
  ASSERT_NE(s, nullptr);
  const std::vector<TensorShape> in{{{2, 3, 4}, DataType::FLOAT16}, {{5, 2, 2}, DataType::FLOAT16}};
  const OperatorDef def = MatMulDef(0, 1, 2, 1);
  const auto out = s->InferShapes(def, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{6, 5}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  const OpCost cost = s->InferCost(def, in);
  EXPECT_EQ(cost.flops, 2.0 * 6 * 5 * 4);
  EXPECT_EQ(cost.bytes_read, (24.0 + 20.0) * 2);
  EXPECT_EQ(cost.bytes_written, 30.0 * 2);
  // With a third input Y takes its dims.
  auto with_like = in;
  with_like.push_back({{3, 10}, DataType::INT32});
  EXPECT_EQ(s->InferShapes(MatMulDef(0, 1, 2, 1, {"A", "B", "like"}), with_like)[0].dims,
            (std::vector<int64_t>{3, 10}));
  EXPECT_THROW(s->InferShapes(MatMulDef(0, 0, 2, 1), in), EnforceNotMet) << "inner dims differ";
}

// A NaN in row i of A2 fills row i of Y; one in column j of B2, column j.
TEST(MatMulOpTest, NaNPropagates) {
  const std::map<std::string, Tensor> in{{"A", RandomTensor({2, 2, 3}, 51)},
                                         {"B", RandomTensor({3, 3}, 52)}};
  const OperatorDef def = MatMulDef(0, 0, 2, 1);  // A2: 4 x 3
  ExpectNaNPropagates(def, in, "A", 4, "Y", {3, 4, 5});
  ExpectNaNPropagates(def, in, "B", 7, "Y", {1, 4, 7, 10});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
