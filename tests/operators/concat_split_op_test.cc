#include <gtest/gtest.h>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Element (i, j, k) of a 3-D float tensor.
float At(const Tensor& t, int64_t i, int64_t j, int64_t k) {
  return t.data<float>()[(i * t.dim(1) + j) * t.dim(2) + k];
}

TEST(ConcatOpTest, ForwardAlongAxis1) {
  Tensor a = RandomTensor({2, 3, 4}, 1), b = RandomTensor({2, 1, 4}, 2),
         c = RandomTensor({2, 2, 4}, 3);
  auto def = MakeOperatorDef("Concat", "", {"a", "b", "c"}, {"Y", "info"});
  Workspace ws;
  RunOp(def, {{"a", a}, {"b", b}, {"c", c}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  ASSERT_EQ(Y.dims(), (std::vector<int64_t>{2, 6, 4}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      for (int64_t k = 0; k < 4; ++k) {
        float want = j < 3 ? At(a, i, j, k) : j < 4 ? At(b, i, j - 3, k) : At(c, i, j - 4, k);
        ASSERT_EQ(At(Y, i, j, k), want) << i << "," << j << "," << k;
      }
    }
  }
  const Tensor& info = ws.GetTensor("info");
  EXPECT_EQ(info.dtype(), DataType::INT32);
  EXPECT_EQ(info.device(), Device());
  EXPECT_EQ(std::vector<int32_t>(info.data<int32_t>(), info.data<int32_t>() + 3),
            (std::vector<int32_t>{3, 1, 2}));
}

TEST(ConcatOpTest, LastAxisByOrderAndNegativeAxis) {
  Tensor a = RandomTensor({2, 3, 2, 2}, 1), b = RandomTensor({2, 3, 2, 5}, 2);
  for (const auto& arg : {MakeArgument("order", "NHWC"), MakeArgument("axis", -1)}) {
    auto def = MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"}, {arg});
    Workspace ws;
    RunOp(def, {{"a", a}, {"b", b}}, &ws);
    const Tensor& Y = ws.GetTensor("Y");
    ASSERT_EQ(Y.dims(), (std::vector<int64_t>{2, 3, 2, 7}));
    for (int64_t r = 0; r < 12; ++r) {
      for (int64_t k = 0; k < 7; ++k) {
        float want = k < 2 ? a.data<float>()[r * 2 + k] : b.data<float>()[r * 5 + k - 2];
        ASSERT_EQ(Y.data<float>()[r * 7 + k], want);
      }
    }
  }
}

TEST(ConcatOpTest, AddAxisStacks) {
  Tensor a = RandomTensor({2, 3}, 1), b = RandomTensor({2, 3}, 2);
  auto def = MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"},
                             {MakeArgument("axis", 1), MakeArgument("add_axis", 1)});
  Workspace ws;
  RunOp(def, {{"a", a}, {"b", b}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  ASSERT_EQ(Y.dims(), (std::vector<int64_t>{2, 2, 3}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 3; ++k) {
      EXPECT_EQ(At(Y, i, 0, k), a.data<float>()[i * 3 + k]);
      EXPECT_EQ(At(Y, i, 1, k), b.data<float>()[i * 3 + k]);
    }
  }
  const Tensor& info = ws.GetTensor("info");
  EXPECT_EQ(info.data<int32_t>()[0], 1);
  EXPECT_EQ(info.data<int32_t>()[1], 1);
}

TEST(ConcatOpTest, AnyDataType) {
  auto def = MakeOperatorDef("DepthConcat", "", {"a", "b"}, {"Y", "info"},
                             {MakeArgument("axis", 0)});
  Workspace ws;
  RunOp(def, {{"a", IntTensor({2}, {1, 2})}, {"b", IntTensor({1}, {3})}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_EQ(std::vector<int32_t>(Y.data<int32_t>(), Y.data<int32_t>() + 3),
            (std::vector<int32_t>{1, 2, 3}));
  // float16 is copied bit for bit.
  Tensor a = RandomTensor({3, 2}, 4), b = RandomTensor({3, 5}, 5);
  auto hdef = MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"});
  Workspace ws16, ws32;
  RunOp(hdef, {{"a", ToHalf(a)}, {"b", ToHalf(b)}}, &ws16);
  RunOp(hdef, {{"a", RoundThroughHalf(a)}, {"b", RoundThroughHalf(b)}}, &ws32);
  EXPECT_EQ(ws16.GetTensor("Y").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(ws16.GetTensor("Y")), ToFloatVector(ws32.GetTensor("Y")));
}

TEST(ConcatOpTest, Gradient) {
  auto def = MakeOperatorDef("Concat", "", {"a", "b", "c"}, {"Y", "info"},
                             {MakeArgument("axis", 2)});
  std::map<std::string, Tensor> in{{"a", RandomTensor({2, 3, 7, 9}, 1)},
                                   {"b", RandomTensor({2, 3, 1, 9}, 2)},
                                   {"c", RandomTensor({2, 3, 4, 9}, 3)}};
  GradientChecker checker;
  for (int i = 0; i < 3; ++i) checker.Check(def, in, i, 0);
}

TEST(ConcatOpTest, GradientMakerEmitsSplit) {
  auto def = MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"},
                             {MakeArgument("axis", 2)});
  GradientOpsMeta meta =
      GetGradientForOp(def, {GradientWrapper{"Y_grad", "", ""}, GradientWrapper{}});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "Split");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"Y_grad", "info"}));
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
            (std::vector<std::string>{"a_grad", "b_grad"}));
  ASSERT_EQ(op.arg_size(), 1);
  EXPECT_EQ(op.arg(0).name(), "axis");
  // No gradient for Y: nothing to do.
  meta = GetGradientForOp(def, {GradientWrapper{}, GradientWrapper{}});
  EXPECT_TRUE(meta.ops.empty());
  EXPECT_TRUE(meta.g_input[0].IsEmpty());
}

TEST(ConcatOpTest, MismatchedDimsNamed) {
  auto def = MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"});
  ExpectError(def, {{"a", RandomTensor({2, 3, 4}, 1)}, {"b", RandomTensor({2, 3, 5}, 2)}},
              "all dims except axis 1 must match");
  ExpectError(def, {{"a", RandomTensor({2, 3, 4}, 1)}, {"b", RandomTensor({2, 3}, 2)}},
              "input 1 has 2 dims [2, 3]");
  ExpectError(def, {{"a", RandomTensor({2, 3}, 1)}, {"b", IntTensor({2, 1}, {1, 2})}},
              "must share one data type");
  auto stack = MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"},
                               {MakeArgument("add_axis", 1)});
  ExpectError(stack, {{"a", RandomTensor({2, 3}, 1)}, {"b", RandomTensor({2, 4}, 2)}},
              "with add_axis=1 all inputs must have the same shape");
  auto bad_axis = MakeOperatorDef("Concat", "", {"a"}, {"Y", "info"}, {MakeArgument("axis", 3)});
  ExpectError(bad_axis, {{"a", RandomTensor({2, 3}, 1)}}, "axis 3 is out of range");
  auto both = MakeOperatorDef("Concat", "", {"a"}, {"Y", "info"},
                              {MakeArgument("axis", 1), MakeArgument("order", "NCHW")});
  ExpectError(both, {{"a", RandomTensor({2, 3}, 1)}}, "not both");
  auto bad_order = MakeOperatorDef("Concat", "", {"a"}, {"Y", "info"},
                                   {MakeArgument("order", "CHWN")});
  ExpectError(bad_order, {{"a", RandomTensor({2, 3}, 1)}}, "\"CHWN\"");
}

TEST(ConcatOpTest, SchemaInfersShapes) {
  auto def = MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"},
                             {MakeArgument("axis", 0)});
  const OpSchema* s = OpSchemaRegistry::Schema("Concat");
  ASSERT_NE(s, nullptr);
  auto out = s->InferShapes(def, {{{2, 5}, DataType::FLOAT16}, {{3, 5}, DataType::FLOAT16}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_EQ(out[1].dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(out[1].dtype, DataType::INT32);
}

// ---- Split -----------------------------------------------------------------------------------

TEST(SplitOpTest, EqualParts) {
  Tensor X = RandomTensor({2, 6, 3}, 1);
  auto def = MakeOperatorDef("Split", "", {"X"}, {"a", "b", "c"});
  Workspace ws;
  RunOp(def, {{"X", X}}, &ws);
  const char* names[] = {"a", "b", "c"};
  for (int p = 0; p < 3; ++p) {
    const Tensor& Y = ws.GetTensor(names[p]);
    ASSERT_EQ(Y.dims(), (std::vector<int64_t>{2, 2, 3}));
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        for (int64_t k = 0; k < 3; ++k) ASSERT_EQ(At(Y, i, j, k), At(X, i, 2 * p + j, k));
      }
    }
  }
}

TEST(SplitOpTest, LengthsFromArgumentOrInput) {
  Tensor X = RandomTensor({3, 5}, 1);
  auto by_arg = MakeOperatorDef("Split", "", {"X"}, {"a", "b"},
                                {MakeArgument("axis", 1),
                                 MakeArgument("split", std::vector<int>{1, 4})});
  auto by_input = MakeOperatorDef("DepthSplit", "", {"X", "L"}, {"a", "b"},
                                  {MakeArgument("axis", -1)});
  for (const auto& def : {by_arg, by_input}) {
    Workspace ws;
    RunOp(def, {{"X", X}, {"L", IntTensor({2}, {1, 4})}}, &ws);
    const Tensor& a = ws.GetTensor("a");
    const Tensor& b = ws.GetTensor("b");
    ASSERT_EQ(a.dims(), (std::vector<int64_t>{3, 1}));
    ASSERT_EQ(b.dims(), (std::vector<int64_t>{3, 4}));
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(a.data<float>()[i], X.data<float>()[i * 5]);
      for (int64_t k = 0; k < 4; ++k) {
        EXPECT_EQ(b.data<float>()[i * 4 + k], X.data<float>()[i * 5 + 1 + k]);
      }
    }
  }
}

TEST(SplitOpTest, AddAxisRemovesAxisAndInvertsConcat) {
  Tensor a = RandomTensor({2, 3}, 1), b = RandomTensor({2, 3}, 2);
  std::vector<Argument> args{MakeArgument("axis", 1), MakeArgument("add_axis", 1)};
  Workspace ws;
  RunOp(MakeOperatorDef("Concat", "", {"a", "b"}, {"Y", "info"}, args), {{"a", a}, {"b", b}},
        &ws);
  RunOp(MakeOperatorDef("Split", "", {"Y", "info"}, {"a2", "b2"}, args), {}, &ws);
  EXPECT_EQ(ws.GetTensor("a2").dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("a2")), ToFloatVector(a));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("b2")), ToFloatVector(b));
}

TEST(SplitOpTest, Gradient) {
  auto def = MakeOperatorDef("Split", "", {"X"}, {"a", "b", "c"},
                             {MakeArgument("axis", 3),
                              MakeArgument("split", std::vector<int>{2, 4, 3})});
  std::map<std::string, Tensor> in{{"X", RandomTensor({2, 3, 7, 9}, 1)}};
  GradientChecker checker;
  for (int o = 0; o < 3; ++o) checker.Check(def, in, 0, o);
}

TEST(SplitOpTest, GradientMakerEmitsConcat) {
  auto def = MakeOperatorDef("Split", "", {"X"}, {"a", "b"},
                             {MakeArgument("axis", 0)});
  GradientOpsMeta meta =
      GetGradientForOp(def, {GradientWrapper{"a_grad", "", ""}, GradientWrapper{"b_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 1u);
  const OperatorDef& op = meta.ops[0];
  EXPECT_EQ(op.type(), "Concat");
  EXPECT_EQ(std::vector<std::string>(op.input().begin(), op.input().end()),
            (std::vector<std::string>{"a_grad", "b_grad"}));
  EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
            (std::vector<std::string>{"X_grad", "_X_grad_dims"}));
  ASSERT_EQ(op.arg_size(), 1);
  EXPECT_EQ(op.arg(0).name(), "axis");
  EXPECT_TRUE(op.is_gradient_op());
  EXPECT_EQ(meta.g_input[0].dense, "X_grad");
}

TEST(SplitOpTest, MissingOutputGradientBecomesZeros) {
  auto def = MakeOperatorDef("Split", "", {"X"}, {"a", "b"}, {MakeArgument("axis", 1)});
  GradientOpsMeta meta =
      GetGradientForOp(def, {GradientWrapper{}, GradientWrapper{"b_grad", "", ""}});
  ASSERT_EQ(meta.ops.size(), 2u);
  EXPECT_EQ(meta.ops[0].type(), "ConstantFill");
  EXPECT_EQ(meta.ops[0].input(0), "a");
  EXPECT_EQ(meta.ops[0].output(0), "_a_grad_zero");
  ASSERT_EQ(meta.ops[0].arg_size(), 1);  // only value = 0, not Split's args
  EXPECT_EQ(meta.ops[0].arg(0).name(), "value");
  EXPECT_EQ(meta.ops[0].arg(0).f(), 0.f);
  EXPECT_EQ(meta.ops[1].type(), "Concat");
  EXPECT_EQ(meta.ops[1].input(0), "_a_grad_zero");
  EXPECT_EQ(meta.ops[1].input(1), "b_grad");
  ASSERT_EQ(meta.ops[1].arg_size(), 1);
  EXPECT_EQ(meta.ops[1].arg(0).name(), "axis");
  // No output gradient at all: no ops.
  meta = GetGradientForOp(def, {GradientWrapper{}, GradientWrapper{}});
  EXPECT_TRUE(meta.ops.empty());
}

TEST(SplitOpTest, BadLengthsNamed) {
  Tensor X = RandomTensor({2, 7}, 1);
  ExpectError(MakeOperatorDef("Split", "", {"X"}, {"a", "b"},
                              {MakeArgument("split", std::vector<int>{3, 3})}),
              {{"X", X}}, "split lengths [3, 3] sum to 6 but axis 1 of X [2, 7] has size 7");
  ExpectError(MakeOperatorDef("Split", "", {"X", "L"}, {"a", "b"}),
              {{"X", X}, {"L", IntTensor({2}, {5, 1})}}, "sum to 6");
  ExpectError(MakeOperatorDef("Split", "", {"X"}, {"a", "b"},
                              {MakeArgument("split", std::vector<int>{7})}),
              {{"X", X}}, "got 1 split lengths [7] for 2 outputs");
  ExpectError(MakeOperatorDef("Split", "", {"X"}, {"a", "b"}), {{"X", X}},
              "into 2 equal parts");
  ExpectError(MakeOperatorDef("Split", "", {"X", "L"}, {"a", "b"},
                              {MakeArgument("split", std::vector<int>{3, 4})}),
              {{"X", X}, {"L", IntTensor({2}, {3, 4})}}, "not both");
  ExpectError(MakeOperatorDef("Split", "", {"X"}, {"a", "b"},
                              {MakeArgument("split", std::vector<int>{-1, 8})}),
              {{"X", X}}, "must be >= 0");
}

TEST(SplitOpTest, SchemaInfersShapes) {
  auto def = MakeOperatorDef("Split", "", {"X"}, {"a", "b"},
                             {MakeArgument("split", std::vector<int>{1, 3})});
  auto out = OpSchemaRegistry::Schema("Split")->InferShapes(def, {{{5, 4, 2}, DataType::FLOAT}});
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{5, 1, 2}));
  EXPECT_EQ(out[1].dims, (std::vector<int64_t>{5, 3, 2}));
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
