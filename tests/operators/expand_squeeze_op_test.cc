#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef DimsDef(const std::string& type, std::vector<int> dims, const std::string& in = "X",
                    const std::string& out = "Y") {
  return MakeOperatorDef(type, "", {in}, {out}, {MakeArgument("dims", dims)});
}

std::vector<int64_t> OutDims(const OperatorDef& def, const Tensor& X) {
  Workspace ws;
  RunOp(def, {{def.input(0), X}}, &ws);
  const Tensor& Y = ws.GetTensor(def.output(0));
  EXPECT_EQ(ToFloatVector(Y), ToFloatVector(X)) << "the elements must not change";
  return Y.dims();
}

TEST(ExpandSqueezeOpTest, Shapes) {
  const Tensor X = RandomTensor({3, 4, 5}, 1);
  EXPECT_EQ(OutDims(DimsDef("ExpandDims", {0, 4}), X), (std::vector<int64_t>{1, 3, 4, 5, 1}));
  EXPECT_EQ(OutDims(DimsDef("ExpandDims", {3}), X), (std::vector<int64_t>{3, 4, 5, 1}));
  EXPECT_EQ(OutDims(DimsDef("ExpandDims", {2, 1, 2}), X), (std::vector<int64_t>{3, 1, 1, 4, 5}))
      << "repeats count once, order does not matter";
  const Tensor Z = RandomTensor({1, 3, 1, 5, 1}, 2);
  EXPECT_EQ(OutDims(DimsDef("Squeeze", {0, 4}), Z), (std::vector<int64_t>{3, 1, 5}));
  EXPECT_EQ(OutDims(DimsDef("Squeeze", {4, 2, 0, 2}), Z), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(OutDims(DimsDef("ExpandDims", {0}), FloatTensor({}, {2.f})), (std::vector<int64_t>{1}));
}

TEST(ExpandSqueezeOpTest, InPlaceAndAnyType) {
  Workspace ws;
  Tensor X({2, 3}, DataType::INT64);
  for (int i = 0; i < 6; ++i) X.mutable_data<int64_t>()[i] = (int64_t{1} << 40) + i;
  RunOp(DimsDef("ExpandDims", {1}, "X", "X"), {{"X", X}}, &ws);
  const Tensor& Y = ws.GetTensor("X");
  EXPECT_EQ(Y.dims(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(Y.data<int64_t>()[5], (int64_t{1} << 40) + 5);
  RunOp(DimsDef("Squeeze", {1}, "X", "X"), {}, &ws);
  EXPECT_EQ(ws.GetTensor("X").dims(), (std::vector<int64_t>{2, 3}));
  const Tensor h = ToHalf(RandomTensor({3}, 4));
  RunOp(DimsDef("ExpandDims", {0, 2}, "H", "H2"), {{"H", h}}, &ws);
  EXPECT_EQ(ws.GetTensor("H2").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ws.GetTensor("H2").dims(), (std::vector<int64_t>{1, 3, 1}));
}

TEST(ExpandSqueezeOpTest, EachIsTheOthersGradient) {
  const Tensor X = RandomTensor({3, 1, 5}, 3);
  GradientChecker().Check(DimsDef("ExpandDims", {0, 3}), {{"X", X}}, 0, 0);
  GradientChecker().Check(DimsDef("Squeeze", {1}), {{"X", X}}, 0, 0);
  for (const char* type : {"ExpandDims", "Squeeze"}) {
    auto meta = GetGradientForOp(DimsDef(type, {1}), {GradientWrapper{"Y_grad", "", ""}});
    ASSERT_EQ(meta.ops.size(), 1u);
    EXPECT_EQ(meta.ops[0].type(), std::string(type) == "Squeeze" ? "ExpandDims" : "Squeeze");
    EXPECT_EQ(meta.ops[0].input(0), "Y_grad");
    EXPECT_EQ(meta.ops[0].output(0), "X_grad");
    EXPECT_EQ(ArgumentHelper(meta.ops[0]).GetRepeatedArgument<int>("dims"), (std::vector<int>{1}));
  }
}

TEST(ExpandSqueezeOpTest, Errors) {
  const Tensor X = RandomTensor({3, 1, 5}, 1);
  ExpectError(MakeOperatorDef("ExpandDims", "", {"X"}, {"Y"}), {{"X", X}},
              "the `dims` argument is required");
  ExpectError(MakeOperatorDef("Squeeze", "", {"X"}, {"Y"}), {{"X", X}},
              "the `dims` argument is required");
  ExpectError(DimsDef("ExpandDims", {-1}), {{"X", X}}, "must be >= 0");
  ExpectError(DimsDef("ExpandDims", {0, 5}), {{"X", X}},
              "cannot insert dims [0, 5] into X with dims [3, 1, 5]: the result has 5 dims");
  ExpectError(DimsDef("Squeeze", {0}), {{"X", X}},
              "dim 0 of X [3, 1, 5] has size 3; only size-1 dims can be squeezed");
  ExpectError(DimsDef("Squeeze", {3}), {{"X", X}},
              "cannot squeeze dims [3] of X with dims [3, 1, 5]");
}

TEST(ExpandSqueezeOpTest, SchemasInferShapes) {
  const auto e = OpSchemaRegistry::Schema("ExpandDims")
                     ->InferShapes(DimsDef("ExpandDims", {0, 2}), {{{4, 5}, DataType::INT32}});
  EXPECT_EQ(e[0].dims, (std::vector<int64_t>{1, 4, 1, 5}));
  EXPECT_EQ(e[0].dtype, DataType::INT32);
  const auto s = OpSchemaRegistry::Schema("Squeeze")->InferShapes(DimsDef("Squeeze", {2}),
                                                                  {{{4, 5, 1}, DataType::FLOAT}});
  EXPECT_EQ(s[0].dims, (std::vector<int64_t>{4, 5}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
