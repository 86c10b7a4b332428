#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef ReduceDef(const std::string& type, std::vector<int> axes, int keepdims,
                      const std::string& x = "X") {
  std::vector<Argument> args{MakeArgument("keepdims", keepdims)};
  if (!axes.empty()) args.push_back(MakeArgument("axes", axes));
  return MakeOperatorDef(type, "", {x}, {"Y"}, args);
}

// Sum (or mean) of a 3-D tensor over the dims flagged in `r`, in output order.
std::vector<float> NaiveReduce(const Tensor& X, std::vector<bool> r, bool mean) {
  const int64_t D0 = X.dim(0), D1 = X.dim(1), D2 = X.dim(2);
  const int64_t O0 = r[0] ? 1 : D0, O1 = r[1] ? 1 : D1, O2 = r[2] ? 1 : D2;
  std::vector<double> acc(O0 * O1 * O2, 0.0);
  for (int64_t i = 0; i < D0; ++i)
    for (int64_t j = 0; j < D1; ++j)
      for (int64_t k = 0; k < D2; ++k) {
        int64_t o = ((r[0] ? 0 : i) * O1 + (r[1] ? 0 : j)) * O2 + (r[2] ? 0 : k);
        acc[o] += X.data<float>()[(i * D1 + j) * D2 + k];
      }
  const double count = static_cast<double>(X.numel()) / acc.size();
  std::vector<float> out;
  for (double a : acc) out.push_back(static_cast<float>(mean ? a / count : a));
  return out;
}

TEST(ReduceOpTest, MatchesNaive) {
  Tensor X = RandomTensor({3, 4, 5}, 1);
  struct Case {
    std::vector<int> axes;
    std::vector<bool> r;
    std::vector<int64_t> keep, drop;
  };
  for (const Case& c : {Case{{0}, {true, false, false}, {1, 4, 5}, {4, 5}},
                        Case{{1}, {false, true, false}, {3, 1, 5}, {3, 5}},
                        Case{{2, 0}, {true, false, true}, {1, 4, 1}, {4}},
                        Case{{-1}, {false, false, true}, {3, 4, 1}, {3, 4}},
                        Case{{}, {true, true, true}, {1, 1, 1}, {}}}) {
    for (bool mean : {false, true}) {
      const std::string type = mean ? "ReduceMean" : "ReduceSum";
      for (int keep : {1, 0}) {
        Workspace ws;
        RunOp(ReduceDef(type, c.axes, keep), {{"X", X}}, &ws);
        const Tensor& Y = ws.GetTensor("Y");
        EXPECT_EQ(Y.dims(), keep ? c.keep : c.drop) << type << " " << DimsString(c.axes);
        ExpectNear(ToFloatVector(Y), NaiveReduce(X, c.r, mean), 1e-5f, 1e-5f,
                   type + " " + DimsString(c.axes));
      }
    }
  }
}

TEST(ReduceOpTest, Gradients) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3, 7, 9}, 1)}};
  for (const char* type : {"ReduceSum", "ReduceMean"}) {
    GradientChecker().Check(ReduceDef(type, {1, 3}, 1), in, 0, 0);
    GradientChecker().Check(ReduceDef(type, {0, 2}, 0), in, 0, 0);
    GradientChecker().Check(ReduceDef(type, {}, 0), in, 0, 0);
  }
  auto meta =
      GetGradientForOp(ReduceDef("ReduceMean", {1}, 0), {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "ReduceMeanGradient");
  EXPECT_EQ(std::vector<std::string>(meta.ops[0].input().begin(), meta.ops[0].input().end()),
            (std::vector<std::string>{"Y_grad", "X", "Y"}));
  EXPECT_EQ(meta.ops[0].output(0), "X_grad");
}

TEST(ReduceOpTest, Fp16MatchesFp32) {
  Tensor X = RandomTensor({2, 3, 7, 9}, 2);
  for (const char* type : {"ReduceSum", "ReduceMean"}) {
    CheckFp16MatchesFp32(ReduceDef(type, {1, 2}, 1), {{"X", X}}, {"X"}, {0}, 5e-3f, 2e-3f);
  }
  for (const char* type : {"ReduceSumGradient", "ReduceMeanGradient"}) {
    auto gdef = MakeOperatorDef(type, "", {"dY", "X", "Y"}, {"dX"},
                                {MakeArgument("axes", std::vector<int>{1, 2}),
                                 MakeArgument("keepdims", 0)});
    CheckFp16MatchesFp32(gdef,
                         {{"dY", RandomTensor({2, 9}, 3)},
                          {"X", X},
                          {"Y", RandomTensor({2, 9}, 4)}},
                         {"dY", "X", "Y"});
  }
}

TEST(ReduceOpTest, Errors) {
  Tensor X = RandomTensor({2, 3}, 1);
  ExpectError(ReduceDef("ReduceSum", {2}, 1), {{"X", X}},
              "axis 2 is out of range for X with dims [2, 3]");
  ExpectError(ReduceDef("ReduceMean", {1, -1}, 1), {{"X", X}}, "lists dim 1 more than once");
  ExpectError(ReduceDef("ReduceMean", {0, 0}, 1), {{"X", X}}, "more than once");
  ExpectError(ReduceDef("ReduceSum", {0}, 1), {{"X", IntTensor({2}, {1, 2})}},
              "float, float16 or bfloat16");
  auto gdef = MakeOperatorDef("ReduceSumGradient", "", {"dY", "X", "Y"}, {"dX"},
                              {MakeArgument("axes", std::vector<int>{0})});
  ExpectError(gdef, {{"dY", RandomTensor({2}, 2)}, {"X", X}, {"Y", X}},
              "dY has dims [2] but reducing X [2, 3] over axes [0] gives [1, 3]");
}

TEST(ReduceOpTest, SchemaInfersShape) {
  auto out = OpSchemaRegistry::Schema("ReduceSum")
                 ->InferShapes(ReduceDef("ReduceSum", {0, 2}, 0), {{{4, 5, 6}, DataType::FLOAT}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{5}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
