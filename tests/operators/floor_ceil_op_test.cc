// Floor and Ceil: values (negative halves, exact integers, infinities), in place, FP16 vs FP32,
// NaN, no gradient (as in Caffe2) and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "tests/util/nan_check.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef Def(const std::string& type, const std::string& out = "Y") {
  return MakeOperatorDef(type, "", {"X"}, {out});
}

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(FloorCeilOpTest, Values) {
  const Tensor X = FloatTensor({3, 3}, {-1.5f, -0.5f, 0.f, 0.5f, 1.f, 2.7f, -2.f, kInf, -kInf});
  EXPECT_EQ(RunAndGet(Def("Floor"), {{"X", X}}),
            (std::vector<float>{-2.f, -1.f, 0.f, 0.f, 1.f, 2.f, -2.f, kInf, -kInf}));
  EXPECT_EQ(RunAndGet(Def("Ceil"), {{"X", X}}),
            (std::vector<float>{-1.f, -0.f, 0.f, 1.f, 1.f, 3.f, -2.f, kInf, -kInf}));
  // In place; ceil(-0.5) is -0.
  const std::vector<float> y = RunAndGet(Def("Ceil", "X"), {{"X", FloatTensor({1}, {-0.5f})}});
  EXPECT_TRUE(y[0] == 0.f && std::signbit(y[0]));
  EXPECT_EQ(RunAndGet(Def("Floor", "X"), {{"X", FloatTensor({2}, {7.9f, -7.1f})}}),
            (std::vector<float>{7.f, -8.f}));
}

TEST(FloorCeilOpTest, Fp16MatchesFp32) {
  for (const char* type : {"Floor", "Ceil"}) {
    SCOPED_TRACE(type);
    // float16 results are exact, so no tolerance is needed.
    CheckFp16MatchesFp32(Def(type), {{"X", RandomTensor({3, 5, 7}, 1, -50.f, 50.f)}}, {"X"}, {0},
                         0.f, 0.f);
    Workspace ws;
    RunOp(Def(type), {{"X", ToHalf(FloatTensor({2}, {1.5f, -1.5f}))}}, &ws);
    EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
  }
}

TEST(FloorCeilOpTest, NaNPropagates) {
  for (const char* type : {"Floor", "Ceil"}) {
    ExpectNaNPropagates(Def(type), {{"X", RandomTensor({5}, 2)}}, "X", 3, "Y", {3});
  }
}

TEST(FloorCeilOpTest, NoGradient) {
  for (const char* type : {"Floor", "Ceil"}) {
    std::vector<GradientWrapper> g(1);
    g[0].dense = "Y_grad";
    try {
      GetGradientForOp(Def(type), g);
      ADD_FAILURE() << type << ": expected an error";
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find("the gradient of operator " + std::string(type) +
                                           " is not implemented yet"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(FloorCeilOpTest, BadInput) {
  for (const char* type : {"Floor", "Ceil"}) {
    SCOPED_TRACE(type);
    ExpectError(Def(type), {{"X", IntTensor({2}, {1, 2})}}, "float, float16 or bfloat16");
    ExpectError(MakeOperatorDef(type, "", {"X", "Z"}, {"Y"}),
                {{"X", RandomTensor({2}, 1)}, {"Z", RandomTensor({2}, 1)}}, "got 2 input(s)");
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
