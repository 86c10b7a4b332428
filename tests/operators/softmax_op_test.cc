#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Softmax of the rows of an (N, D) matrix, in double, without any shift.
std::vector<float> NaiveSoftmax(const std::vector<float>& x, int64_t N, int64_t D) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < N; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < D; ++j) sum += std::exp(static_cast<double>(x[i * D + j]));
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = static_cast<float>(std::exp(x[i * D + j]) / sum);
  }
  return y;
}

void ExpectErrorContains(const OperatorDef& def, const std::map<std::string, Tensor>& in,
                         const std::vector<std::string>& parts) {
  Workspace ws;
  try {
    RunOp(def, in, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(SoftmaxOpTest, MatchesNaiveForEachAxis) {
  Tensor X = RandomTensor({2, 3, 7, 9}, 1, -3.f, 3.f);
  std::vector<float> x = ToFloatVector(X);
  struct Case {
    int axis;
    int64_t N, D;
  };
  for (Case c :
       {Case{1, 2, 189}, Case{0, 1, 378}, Case{2, 6, 63}, Case{-1, 42, 9}, Case{3, 42, 9}}) {
    auto def = MakeOperatorDef("Softmax", "", {"X"}, {"Y"}, {MakeArgument("axis", c.axis)});
    Workspace ws;
    RunOp(def, {{"X", X}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dims(), X.dims());
    ExpectNear(ToFloatVector(ws.GetTensor("Y")), NaiveSoftmax(x, c.N, c.D), 1e-7f, 1e-5f,
               "axis " + std::to_string(c.axis));
  }
}

TEST(SoftmaxOpTest, LargeInputsDoNotOverflow) {
  auto def = MakeOperatorDef("Softmax", "", {"X"}, {"Y"});
  auto y = RunAndGet(
      def, {{"X", FloatTensor({2, 3}, {1000.f, 1001.f, 1002.f, -1000.f, -1000.f, -999.f})}});
  auto want = NaiveSoftmax({0.f, 1.f, 2.f, 0.f, 0.f, 1.f}, 2, 3);
  ExpectNear(y, want, 1e-7f, 1e-5f);
}

TEST(SoftmaxOpTest, Gradient) {
  auto def = MakeOperatorDef("Softmax", "", {"X"}, {"Y"});
  GradientChecker().Check(def, {{"X", RandomTensor({2, 3, 7, 9}, 2, -2.f, 2.f)}}, 0, 0);
  auto def3 = MakeOperatorDef("Softmax", "", {"X"}, {"Y"}, {MakeArgument("axis", 3)});
  GradientChecker().Check(def3, {{"X", RandomTensor({2, 3, 7, 9}, 3, -2.f, 2.f)}}, 0, 0);
}

TEST(SoftmaxOpTest, GradientOpMatchesFormula) {
  Tensor Y = RandomTensor({3, 5}, 4, 0.f, 1.f), dY = RandomTensor({3, 5}, 5);
  auto def = MakeOperatorDef("SoftmaxGradient", "", {"Y", "dY"}, {"dX"});
  auto dx = RunAndGet(def, {{"Y", Y}, {"dY", dY}});
  const float* y = Y.data<float>();
  const float* dy = dY.data<float>();
  std::vector<float> want(15);
  for (int i = 0; i < 3; ++i) {
    double dot = 0;
    for (int j = 0; j < 5; ++j) dot += y[i * 5 + j] * dy[i * 5 + j];
    for (int j = 0; j < 5; ++j)
      want[i * 5 + j] = static_cast<float>(y[i * 5 + j] * (dy[i * 5 + j] - dot));
  }
  ExpectNear(dx, want, 1e-6f, 1e-5f);
}

TEST(SoftmaxOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("Softmax", "", {"X"}, {"Y"});
  CheckFp16MatchesFp32(def, {{"X", RandomTensor({5, 13}, 6, -4.f, 4.f)}}, {"X"});
  auto gdef = MakeOperatorDef("SoftmaxGradient", "", {"Y", "dY"}, {"dX"});
  CheckFp16MatchesFp32(
      gdef, {{"Y", RandomTensor({5, 13}, 7, 0.f, 1.f)}, {"dY", RandomTensor({5, 13}, 8)}},
      {"Y", "dY"});
  Workspace ws;
  RunOp(def, {{"X", ToHalf(RandomTensor({2, 4}, 9))}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
}

TEST(SoftmaxOpTest, BadAxisNamesAxisAndDims) {
  auto def = MakeOperatorDef("Softmax", "sm", {"X"}, {"Y"}, {MakeArgument("axis", 2)});
  ExpectErrorContains(def, {{"X", RandomTensor({4, 5}, 1)}}, {"Softmax 'sm'", "axis 2", "[4, 5]"});
}

TEST(SoftmaxOpTest, GradientShapeMismatch) {
  auto def = MakeOperatorDef("SoftmaxGradient", "", {"Y", "dY"}, {"dX"});
  ExpectErrorContains(def, {{"Y", RandomTensor({4, 5}, 1)}, {"dY", RandomTensor({4, 6}, 2)}},
                      {"[4, 5]", "[4, 6]"});
}

TEST(SoftmaxOpTest, GradientMakerUsesOutput) {
  auto def = MakeOperatorDef("Softmax", "", {"X"}, {"Y"}, {MakeArgument("axis", 2)});
  std::vector<GradientWrapper> g(1);
  g[0].dense = "Y_grad";
  GradientOpsMeta meta = GetGradientForOp(def, g);
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "SoftmaxGradient");
  EXPECT_EQ(meta.ops[0].input(0), "Y");
  EXPECT_EQ(meta.ops[0].input(1), "Y_grad");
  EXPECT_EQ(meta.ops[0].output(0), "X_grad");
  EXPECT_EQ(ArgumentHelper(meta.ops[0]).GetSingleArgument<int>("axis", 1), 2);
}

// A NaN in a row makes that whole row NaN (it is in every normaliser), and no other row.
TEST(SoftmaxOpTest, NaNPropagates) {
  const Tensor x = RandomTensor({3, 5}, 7);
  for (int64_t at : {5, 7}) {  // first element of row 1, and a later one
    ExpectNaNPropagates(MakeOperatorDef("Softmax", "", {"X"}, {"Y"}), {{"X", x}}, "X", at, "Y",
                        {5, 6, 7, 8, 9});
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
