#include <gtest/gtest.h>

#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Sums A into B's shape: B's dim i lines up with A's dim axis + i (-1: trailing) and size-1 dims
// of B collect everything. Written from multi-indices, independently of the (pre, n, post) view.
std::vector<float> NaiveSumReduceLike(const Tensor& A, const std::vector<int64_t>& bd, int axis) {
  const auto& ad = A.dims();
  const int an = static_cast<int>(ad.size()), bn = static_cast<int>(bd.size());
  if (axis == -1) axis = an - bn;
  int64_t bsize = 1;
  for (int64_t d : bd) bsize *= d;
  std::vector<float> a = ToFloatVector(A);
  std::vector<double> c(bsize, 0.0);
  for (size_t flat = 0; flat < a.size(); ++flat) {
    std::vector<int64_t> idx(an);
    int64_t rest = static_cast<int64_t>(flat);
    for (int d = an - 1; d >= 0; --d) {
      idx[d] = rest % ad[d];
      rest /= ad[d];
    }
    int64_t bidx = 0;
    if (bsize > 1) {
      for (int i = 0; i < bn; ++i) bidx = bidx * bd[i] + (bd[i] == 1 ? 0 : idx[axis + i]);
    }
    c[bidx] += a[flat];
  }
  return std::vector<float>(c.begin(), c.end());
}

struct Case {
  std::vector<int64_t> a, b;
  std::vector<Argument> args;
  int axis;
};

std::vector<Case> Cases() {
  return {
      {{2, 3, 4, 5}, {4, 5}, {}, -1},
      {{2, 3, 4, 5}, {3, 4}, {MakeArgument("axis", 1)}, 1},
      {{2, 3, 4, 5}, {2}, {MakeArgument("axis", 0)}, 0},
      {{2, 3, 4, 5}, {3}, {MakeArgument("axis_str", "C")}, 1},
      {{2, 4, 5, 3}, {3}, {MakeArgument("axis_str", "C"), MakeArgument("order", "NHWC")}, 3},
      {{2, 3, 4, 5}, {1}, {}, -1},
      {{2, 3, 4, 5}, {1, 1}, {MakeArgument("axis", 1)}, 1},
      {{2, 3, 4, 5}, {1, 3, 1}, {MakeArgument("axis", 0)}, 0},
      {{2, 3, 4, 5}, {1, 4, 5}, {}, -1},
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {}, -1},
      // A `broadcast` argument (copied from Add by its gradient maker) is ignored.
      {{3, 7}, {7}, {MakeArgument("broadcast", 1)}, -1},
  };
}

TEST(SumReduceLikeOpTest, MatchesNaive) {
  for (const auto& tc : Cases()) {
    Tensor A = RandomTensor(tc.a, 1);
    auto def = MakeOperatorDef("SumReduceLike", "", {"A", "B"}, {"C"}, tc.args);
    Workspace ws;
    RunOp(def, {{"A", A}, {"B", RandomTensor(tc.b, 2)}}, &ws);
    const Tensor& C = ws.GetTensor("C");
    EXPECT_EQ(C.dims(), tc.b);
    EXPECT_EQ(C.dtype(), DataType::FLOAT);
    ExpectNear(ToFloatVector(C), NaiveSumReduceLike(A, tc.b, tc.axis), 1e-5f, 1e-5f,
               "A " + DimsString(tc.a) + " B " + DimsString(tc.b));
  }
}

TEST(SumReduceLikeOpTest, KnownValues) {
  auto def = MakeOperatorDef("SumReduceLike", "", {"A", "B"}, {"C"}, {MakeArgument("axis", 0)});
  auto c = RunAndGet(def, {{"A", FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6})},
                           {"B", FloatTensor({2}, {0, 0})}});
  EXPECT_EQ(c, (std::vector<float>{6, 15}));
}

TEST(SumReduceLikeOpTest, Double) {
  Tensor A({2, 3}, DataType::DOUBLE), B({3}, DataType::DOUBLE);
  for (int i = 0; i < 6; ++i) A.mutable_data<double>()[i] = 0.1 * (i + 1);
  B.mutable_data<double>();
  Workspace ws;
  RunOp(MakeOperatorDef("SumReduceLike", "", {"A", "B"}, {"C"}), {{"A", A}, {"B", B}}, &ws);
  const Tensor& C = ws.GetTensor("C");
  ASSERT_EQ(C.dtype(), DataType::DOUBLE);
  EXPECT_DOUBLE_EQ(C.data<double>()[0], 0.1 + 0.4);
  EXPECT_DOUBLE_EQ(C.data<double>()[2], 0.3 + 0.6);
}

TEST(SumReduceLikeOpTest, Fp16MatchesFp32) {
  for (const auto& tc : Cases()) {
    auto def = MakeOperatorDef("SumReduceLike", "", {"A", "B"}, {"C"}, tc.args);
    // Sums of up to 120 values in [-1, 1]: absolute tolerance for the final rounding.
    CheckFp16MatchesFp32(def, {{"A", RandomTensor(tc.a, 3)}, {"B", RandomTensor(tc.b, 4)}},
                         {"A", "B"}, {0}, 3e-2f, 2e-3f);
  }
}

TEST(SumReduceLikeOpTest, Errors) {
  Workspace ws;
  auto def = MakeOperatorDef("SumReduceLike", "", {"A", "B"}, {"C"});
  try {
    RunOp(def, {{"A", RandomTensor({2, 3, 4}, 1)}, {"B", RandomTensor({3}, 2)}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[2, 3, 4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3]"), std::string::npos) << msg;
  }
  try {
    RunOp(def, {{"A", IntTensor({2}, {1, 2})}, {"B", IntTensor({2}, {1, 2})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("float, float16, bfloat16 or double"), std::string::npos)
        << e.what();
  }
}

TEST(SumReduceLikeOpTest, SchemaInfersShape) {
  const OpSchema* s = OpSchemaRegistry::Schema("SumReduceLike");
  ASSERT_NE(s, nullptr);
  auto def = MakeOperatorDef("SumReduceLike", "", {"A", "B"}, {"C"}, {MakeArgument("axis", 1)});
  auto out = s->InferShapes(def, {{{2, 3, 4}, DataType::FLOAT16}, {{3}, DataType::FLOAT}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
