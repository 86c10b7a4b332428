#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(SqrOpTest, ForwardAndInPlace) {
  Tensor X = FloatTensor({2, 2}, {-3.f, 0.5f, 0.f, 2.f});
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Sqr", "", {"X"}, {"Y"}), {{"X", X}}),
            (std::vector<float>{9.f, 0.25f, 0.f, 4.f}));
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Sqr", "", {"X"}, {"X"}), {{"X", X}}),
            (std::vector<float>{9.f, 0.25f, 0.f, 4.f}));
}

TEST(SqrOpTest, Fp16MatchesFp32) {
  CheckFp16MatchesFp32(MakeOperatorDef("Sqr", "", {"X"}, {"Y"}),
                       {{"X", RandomTensor({2, 3, 7, 9}, 1, -3.f, 3.f)}}, {"X"});
}

TEST(SqrOpTest, GradientMakerStructure) {
  auto def = MakeOperatorDef("Sqr", "", {"X"}, {"Y"});
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 2u);
  const OperatorDef& scale = meta.ops[0];
  EXPECT_EQ(scale.type(), "Scale");
  EXPECT_EQ(scale.input(0), "Y_grad");
  EXPECT_EQ(scale.output(0), "Y_grad") << "Scale runs in place on dY";
  ASSERT_EQ(scale.arg_size(), 1);
  EXPECT_EQ(scale.arg(0).name(), "scale");
  EXPECT_EQ(scale.arg(0).f(), 2.f);
  const OperatorDef& mul = meta.ops[1];
  EXPECT_EQ(mul.type(), "Mul");
  EXPECT_EQ(std::vector<std::string>(mul.input().begin(), mul.input().end()),
            (std::vector<std::string>{"Y_grad", "X"}));
  EXPECT_EQ(mul.output(0), "X_grad");
  EXPECT_EQ(meta.g_input[0].dense, "X_grad");
}

TEST(SqrOpTest, GradientNumeric) {
  if (!OperatorRegistry::HasType(DeviceType::CPU, "Scale") ||
      !OperatorRegistry::HasType(DeviceType::CPU, "Mul")) {
    GTEST_SKIP() << "Scale and Mul are not registered in this build";
  }
  GradientChecker().Check(MakeOperatorDef("Sqr", "", {"X"}, {"Y"}),
                          {{"X", RandomTensor({2, 3, 7, 9}, 1)}}, 0, 0);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
