#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Straightforward transpose of a float tensor: Y[idx] = X[idx permuted back].
std::vector<float> NaiveTranspose(const Tensor& X, const std::vector<int>& axes) {
  const int nd = X.ndim();
  std::vector<int64_t> ydims(nd);
  for (int i = 0; i < nd; ++i) ydims[i] = X.dim(axes[i]);
  std::vector<float> y(X.numel());
  std::vector<int64_t> yi(nd, 0);
  for (int64_t flat = 0; flat < X.numel(); ++flat) {
    int64_t rem = flat;
    for (int d = nd - 1; d >= 0; --d) {
      yi[d] = rem % ydims[d];
      rem /= ydims[d];
    }
    std::vector<int64_t> xi(nd);
    for (int d = 0; d < nd; ++d) xi[axes[d]] = yi[d];
    int64_t off = 0;
    for (int d = 0; d < nd; ++d) off = off * X.dim(d) + xi[d];
    y[flat] = X.data<float>()[off];
  }
  return y;
}

// Runs Transpose of the 4-D `X` by `axes`: Y's dims are X's permuted, its values the naive
// transpose's. Returns Y's values.
std::vector<float> ExpectTransposeMatchesNaive(const Tensor& X, const std::vector<int>& axes) {
  auto def = MakeOperatorDef("Transpose", "", {"X"}, {"Y"}, {MakeArgument("axes", axes)});
  Workspace ws;
  RunOp(def, {{"X", X}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Y.dim(i), X.dim(axes[i]));
  std::vector<float> y = ToFloatVector(Y);
  EXPECT_EQ(y, NaiveTranspose(X, axes)) << DimsString(axes);
  return y;
}

TEST(TransposeOpTest, MatchesNaive) {
  Tensor X = RandomTensor({2, 3, 7, 9}, 1);
  for (const std::vector<int>& axes :
       {std::vector<int>{0, 2, 3, 1}, {3, 1, 0, 2}, {0, 1, 3, 2}, {1, 0, 2, 3}}) {
    ExpectTransposeMatchesNaive(X, axes);
  }
}

TEST(TransposeOpTest, LargeTensorsTakeTheTiledPathAndStillMatchNaive) {
  // 4096 elements and more, permutations that are block swaps ((B, R, C) -> (B, C, R)), with
  // sizes that are not multiples of the tile; and some that are not block swaps.
  Tensor X = RandomTensor({3, 37, 5, 41}, 2);
  for (const std::vector<int>& axes :
       {std::vector<int>{0, 2, 3, 1}, {0, 3, 1, 2}, {2, 3, 0, 1}, {3, 0, 1, 2}, {1, 0, 2, 3},
        {0, 2, 1, 3}, {3, 2, 1, 0}}) {
    auto def = MakeOperatorDef("Transpose", "", {"X"}, {"Y"}, {MakeArgument("axes", axes)});
    Workspace ws;
    RunOp(def, {{"X", X}}, &ws);
    EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), NaiveTranspose(X, axes)) << DimsString(axes);
  }
}

// A 1x1 filter between NCHW and NHWC ((M, C, 1, 1) <-> (M, 1, 1, C)) moves only axes of size 1:
// a copy of the bytes, with the permuted dims.
TEST(TransposeOpTest, MovingOnlySizeOneAxesCopies) {
  Tensor X = RandomTensor({64, 96, 1, 1}, 3);
  for (const std::vector<int>& axes : {std::vector<int>{0, 2, 3, 1}, {0, 3, 1, 2}}) {
    EXPECT_EQ(ExpectTransposeMatchesNaive(X, axes), ToFloatVector(X)) << DimsString(axes);
  }
}

TEST(TransposeOpTest, DefaultReversesAndAnyType) {
  Tensor X = RandomTensor({2, 3, 5}, 1);
  auto def = MakeOperatorDef("Transpose", "", {"X"}, {"Y"});
  Workspace ws;
  RunOp(def, {{"X", X}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{5, 3, 2}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), NaiveTranspose(X, {2, 1, 0}));
  // int32, int64 (8-byte), float16 and uint8 elements.
  RunOp(def, {{"X", IntTensor({2, 3}, {1, 2, 3, 4, 5, 6})}}, &ws);
  const Tensor& Yi = ws.GetTensor("Y");
  EXPECT_EQ(std::vector<int32_t>(Yi.data<int32_t>(), Yi.data<int32_t>() + 6),
            (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  Tensor L({2, 2}, DataType::INT64);
  for (int i = 0; i < 4; ++i) L.mutable_data<int64_t>()[i] = (int64_t{1} << 40) + i;
  RunOp(def, {{"X", L}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").data<int64_t>()[1], (int64_t{1} << 40) + 2);
  Tensor B({3, 2}, DataType::UINT8);
  for (int i = 0; i < 6; ++i) B.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i);
  RunOp(def, {{"X", B}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").data<uint8_t>()[1], 2);
  RunOp(def, {{"X", ToHalf(X)}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), NaiveTranspose(RoundThroughHalf(X), {2, 1, 0}));
}

TEST(TransposeOpTest, Gradient) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3, 7, 9}, 1)}};
  GradientChecker().Check(MakeOperatorDef("Transpose", "", {"X"}, {"Y"},
                                          {MakeArgument("axes", std::vector<int>{2, 0, 3, 1})}),
                          in, 0, 0);
  GradientChecker().Check(MakeOperatorDef("Transpose", "", {"X"}, {"Y"}), in, 0, 0);
}

TEST(TransposeOpTest, GradientMakerInvertsAxes) {
  auto def = MakeOperatorDef("Transpose", "", {"X"}, {"Y"},
                             {MakeArgument("axes", std::vector<int>{2, 0, 1})});
  auto meta = GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "Transpose");
  EXPECT_EQ(op.input(0), "Y_grad");
  EXPECT_EQ(op.output(0), "X_grad");
  ASSERT_EQ(op.arg_size(), 1);
  EXPECT_EQ(op.arg(0).name(), "axes");
  EXPECT_EQ(std::vector<int64_t>(op.arg(0).ints().begin(), op.arg(0).ints().end()),
            (std::vector<int64_t>{1, 2, 0}));
}

TEST(TransposeOpTest, Errors) {
  Tensor X = RandomTensor({2, 3, 4}, 1);
  ExpectError(MakeOperatorDef("Transpose", "", {"X"}, {"Y"},
                              {MakeArgument("axes", std::vector<int>{0, 0, 1})}),
              {{"X", X}}, "axes [0, 0, 1] is not a permutation of 0..2");
  ExpectError(MakeOperatorDef("Transpose", "", {"X"}, {"Y"},
                              {MakeArgument("axes", std::vector<int>{0, 3, 1})}),
              {{"X", X}}, "is not a permutation");
  ExpectError(MakeOperatorDef("Transpose", "", {"X"}, {"Y"},
                              {MakeArgument("axes", std::vector<int>{1, 0})}),
              {{"X", X}}, "axes [1, 0] has 2 entries but the input [2, 3, 4] has 3 dims");
}

TEST(OrderSwitchOpTest, ForwardRoundTripAndGradient) {
  Tensor X = RandomTensor({2, 3, 7, 9}, 1);
  Workspace ws;
  RunOp(MakeOperatorDef("NCHW2NHWC", "", {"X"}, {"Y"}), {{"X", X}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 7, 9, 3}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Y")), NaiveTranspose(X, {0, 2, 3, 1}));
  RunOp(MakeOperatorDef("NHWC2NCHW", "", {"Y"}, {"Z"}), {}, &ws);
  EXPECT_EQ(ws.GetTensor("Z").dims(), X.dims());
  EXPECT_EQ(ToFloatVector(ws.GetTensor("Z")), ToFloatVector(X));

  std::map<std::string, Tensor> in{{"X", X}};
  GradientChecker().Check(MakeOperatorDef("NCHW2NHWC", "", {"X"}, {"Y"}), in, 0, 0);
  GradientChecker().Check(MakeOperatorDef("NHWC2NCHW", "", {"X"}, {"Y"}), in, 0, 0);
  auto meta = GetGradientForOp(MakeOperatorDef("NCHW2NHWC", "", {"X"}, {"Y"}),
                               {GradientWrapper{"Y_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  EXPECT_EQ(meta.ops[0].type(), "NHWC2NCHW");
}

TEST(OrderSwitchOpTest, NeedsThreeDims) {
  ExpectError(MakeOperatorDef("NHWC2NCHW", "", {"X"}, {"Y"}), {{"X", RandomTensor({4, 5}, 1)}},
              "at least 3 dims");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
