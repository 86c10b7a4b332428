#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

int64_t CounterValue(const Workspace& ws, const std::string& name) {
  const Tensor& t = ws.GetTensor(name);
  EXPECT_EQ(t.dtype(), DataType::INT64);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{1}));
  return t.data<int64_t>()[0];
}

TEST(IterOpTest, StartsFromZeroAndIncrements) {
  Workspace ws;
  ws.CreateBlob("it");  // exists, holds no data yet
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "it"), 1);
  op->Run(0);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "it"), 3);
}

TEST(IterOpTest, ContinuesFromExistingValue) {
  Workspace ws;
  Tensor* t = ws.CreateTensor("it");
  t->Resize({1});
  t->mutable_data<int64_t>()[0] = 41;
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "it"), 42);
}

TEST(IterOpTest, WithoutInput) {
  Workspace ws;
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {}, {"c"}), &ws);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "c"), 1);
  op->Run(0);
  EXPECT_EQ(CounterValue(ws, "c"), 2);
}

TEST(IterOpTest, InPlaceIsEnforced) {
  Workspace ws;
  ws.CreateBlob("a");
  try {
    CreateOperator(MakeOperatorDef("Iter", "", {"a"}, {"b"}), &ws);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("must be the same blob"), std::string::npos)
        << e.what();
  }
}

TEST(IterOpTest, RejectsWrongCounterType) {
  Workspace ws;
  SetInput(&ws, "it", IntTensor({1}, {3}));
  auto op = CreateOperator(MakeOperatorDef("Iter", "", {"it"}, {"it"}), &ws);
  try {
    op->Run(0);
    FAIL() << "expected an error";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("int64 tensor with one element"), std::string::npos)
        << e.what();
  }
}

TEST(IterOpTest, NoGradient) {
  auto meta = GetGradientForOp(MakeOperatorDef("Iter", "", {"it"}, {"it"}), {GradientWrapper{}});
  EXPECT_TRUE(meta.ops.empty());
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
