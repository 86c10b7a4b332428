#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(NegativeOpTest, Forward) {
  auto def = MakeOperatorDef("Negative", "", {"X"}, {"Y"});
  EXPECT_EQ(RunAndGet(def, {{"X", FloatTensor({2, 2}, {-1.f, 0.5f, 0.f, 3.f})}}),
            (std::vector<float>{1.f, -0.5f, -0.f, -3.f}));
}

TEST(NegativeOpTest, InPlaceAndIntegerTypes) {
  auto def = MakeOperatorDef("Negative", "", {"X"}, {"X"});
  Workspace ws;
  RunOp(def, {{"X", IntTensor({3}, {1, -2, 0})}}, &ws);
  const Tensor& X = ws.GetTensor("X");
  ASSERT_EQ(X.dtype(), DataType::INT32);
  EXPECT_EQ(std::vector<int32_t>(X.data<int32_t>(), X.data<int32_t>() + 3),
            (std::vector<int32_t>{-1, 2, 0}));

  Tensor l({2}, DataType::INT64), d({2}, DataType::DOUBLE);
  l.mutable_data<int64_t>()[0] = 5000000000LL;
  l.mutable_data<int64_t>()[1] = -3;
  d.mutable_data<double>()[0] = 0.25;
  d.mutable_data<double>()[1] = -1e300;
  Workspace ws2;
  RunOp(MakeOperatorDef("Negative", "", {"L"}, {"L2"}), {{"L", l}}, &ws2);
  RunOp(MakeOperatorDef("Negative", "", {"D"}, {"D2"}), {{"D", d}}, &ws2);
  EXPECT_EQ(ws2.GetTensor("L2").data<int64_t>()[0], -5000000000LL);
  EXPECT_EQ(ws2.GetTensor("L2").data<int64_t>()[1], 3);
  EXPECT_EQ(ws2.GetTensor("D2").data<double>()[0], -0.25);
  EXPECT_EQ(ws2.GetTensor("D2").data<double>()[1], 1e300);
}

TEST(NegativeOpTest, Gradient) {
  GradientChecker().Check(MakeOperatorDef("Negative", "", {"X"}, {"Y"}),
                          {{"X", RandomTensor({2, 3, 7, 9}, 1)}}, 0, 0);
}

TEST(NegativeOpTest, Fp16MatchesFp32) {
  auto def = MakeOperatorDef("Negative", "", {"X"}, {"Y"});
  CheckFp16MatchesFp32(def, {{"X", RandomTensor({5, 13}, 2, -100.f, 100.f)}}, {"X"}, {0}, 0.f,
                       0.f);
}

TEST(NegativeOpTest, RejectsBool) {
  Tensor b({2}, DataType::BOOL);
  b.mutable_data<bool>()[0] = true;
  b.mutable_data<bool>()[1] = false;
  Workspace ws;
  try {
    RunOp(MakeOperatorDef("Negative", "", {"X"}, {"Y"}), {{"X", b}}, &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("bool"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
