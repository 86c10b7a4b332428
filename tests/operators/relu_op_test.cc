#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(ReluOpTest, Forward) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  auto y = RunAndGet(def, {{"X", FloatTensor({2, 2}, {-1.f, 0.5f, 0.f, 3.f})}});
  EXPECT_EQ(y, (std::vector<float>{0.f, 0.5f, 0.f, 3.f}));
}

TEST(ReluOpTest, InPlace) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"X"});
  auto y = RunAndGet(def, {{"X", FloatTensor({3}, {-2.f, 1.f, -0.f})}});
  EXPECT_EQ(y, (std::vector<float>{0.f, 1.f, 0.f}));
}

TEST(ReluOpTest, Gradient) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  GradientCheckOptions opts;
  opts.kink_range = 0.02f;
  GradientChecker(opts).Check(def, {{"X", RandomTensorAwayFrom({2, 3, 7, 9}, 1, {0.f}, 0.05f)}},
                              0, 0);
}

TEST(ReluOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  CheckFp16MatchesFp32(def, {{"X", RandomTensor({2, 3, 7, 9}, 2, -4.f, 4.f)}}, {"X"});
  auto gdef = MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"});
  CheckFp16MatchesFp32(gdef,
                       {{"Y", RandomTensor({5, 13}, 3, -1.f, 1.f)},
                        {"dY", RandomTensor({5, 13}, 4)}},
                       {"Y", "dY"});
}

TEST(ReluOpTest, RejectsIntegerInput) {
  auto def = MakeOperatorDef("Relu", "", {"X"}, {"Y"});
  Workspace ws;
  try {
    RunOp(def, {{"X", IntTensor({2}, {1, 2})}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("float, float16 or bfloat16"), std::string::npos)
        << e.what();
  }
}

// NaN propagates (PyTorch, ONNX Runtime): a NaN weight must not become a finite activation.
TEST(ReluOpTest, NaNPropagates) {
  ExpectNaNPropagates(MakeOperatorDef("Relu", "", {"X"}, {"Y"}),
                      {{"X", FloatTensor({4}, {-1.f, 2.f, 0.f, 3.f})}}, "X", 0, "Y", {0});
  auto g = MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"});
  const Tensor y = FloatTensor({4}, {0.f, 2.f, 0.f, 3.f}), dy = FloatTensor({4}, {1, 2, 3, 4});
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "Y", 1, "dX", {1});
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "dY", 2, "dX", {2});  // also where Y <= 0
  ExpectNaNPropagates(g, {{"Y", y}, {"dY", dy}}, "dY", 3, "dX", {3});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
