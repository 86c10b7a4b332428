// Add, Sub, Mul, Div (legacy broadcast), their gradient makers and DivGradient. NumPy
// broadcasting: numpy_broadcast_test.cc, elementwise_gradient_op_test.cc.
#include <gtest/gtest.h>

#include <functional>

#include "core/gradient.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const char* const kOps[] = {"Add", "Sub", "Mul", "Div"};

double Apply(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  return a / b;
}

// C[idx] = op(A[idx], B[bidx]) where B's dim i lines up with A's dim axis + i (-1: trailing) and
// B's size-1 dims repeat. Written from the multi-index, independently of the (pre, n, post) view.
std::vector<float> NaiveBroadcast(const std::string& op, const Tensor& A, const Tensor& B,
                                  int axis) {
  const auto& ad = A.dims();
  const auto& bd = B.dims();
  const int an = static_cast<int>(ad.size()), bn = static_cast<int>(bd.size());
  if (axis == -1) axis = an - bn;
  std::vector<float> a = ToFloatVector(A), b = ToFloatVector(B), c(a.size());
  for (size_t flat = 0; flat < a.size(); ++flat) {
    std::vector<int64_t> idx(an);
    int64_t rest = static_cast<int64_t>(flat);
    for (int d = an - 1; d >= 0; --d) {
      idx[d] = rest % ad[d];
      rest /= ad[d];
    }
    int64_t bidx = 0;
    if (b.size() > 1) {
      for (int i = 0; i < bn; ++i) bidx = bidx * bd[i] + (bd[i] == 1 ? 0 : idx[axis + i]);
    }
    c[flat] = static_cast<float>(Apply(op, a[flat], b[bidx]));
  }
  return c;
}

// B values away from zero so that Div is well conditioned.
Tensor Divisor(std::vector<int64_t> dims, uint32_t seed) {
  return RandomTensorAwayFrom(std::move(dims), seed, {0.f}, 0.5f, -2.f, 2.f);
}

OperatorDef BinaryDef(const std::string& op, std::vector<Argument> args = {}) {
  return MakeOperatorDef(op, "", {"A", "B"}, {"C"}, std::move(args));
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const EnforceNotMet& e) {
    return e.what();
  }
  return "(no error)";
}

void ExpectError(const std::function<void()>& f, const std::vector<std::string>& parts) {
  const std::string msg = ErrorOf(f);
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
}

template <typename T>
Tensor Typed(std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t(std::move(dims), DataTypeOf<T>());
  std::copy(values.begin(), values.end(), t.mutable_data<T>());
  return t;
}

TEST(ElementwiseOpTest, SameShapeForward) {
  Tensor A = RandomTensor({2, 3, 7}, 1), B = Divisor({2, 3, 7}, 2);
  for (const char* op : kOps) {
    auto c = RunAndGet(BinaryDef(op), {{"A", A}, {"B", B}});
    ExpectNear(c, NaiveBroadcast(op, A, B, -1), 1e-6f, 1e-6f, op);
  }
}

struct BroadcastCase {
  std::vector<int64_t> a, b;
  std::vector<Argument> args;
  int axis;  // the axis the naive reference uses
};

std::vector<BroadcastCase> BroadcastCases() {
  const Argument bc = MakeArgument("broadcast", 1);
  return {
      {{2, 3, 4, 5}, {4, 5}, {bc}, -1},                                       // trailing
      {{2, 3, 4, 5}, {5}, {bc}, -1},                                          // last dim only
      {{2, 3, 4, 5}, {3, 4}, {bc, MakeArgument("axis", 1)}, 1},               // axis
      {{2, 3, 4, 5}, {2}, {bc, MakeArgument("axis", 0)}, 0},                  // leading dim
      {{2, 3, 4, 5}, {3}, {bc, MakeArgument("axis_str", "C")}, 1},            // NCHW channel
      {{2, 4, 5, 3}, {3}, {bc, MakeArgument("axis_str", "C"), MakeArgument("order", "NHWC")}, 3},
      {{2, 4, 5, 3}, {4, 5}, {bc, MakeArgument("axis_str", "H"), MakeArgument("order", "NHWC")},
       1},
      {{2, 3, 4, 5}, {1}, {bc}, -1},                                          // scalar
      {{2, 3, 4, 5}, {1, 1}, {bc, MakeArgument("axis", 1)}, 1},               // scalar (1, 1)
      {{2, 3, 4, 5}, {1, 3, 1}, {bc, MakeArgument("axis", 0)}, 0},            // leading+trailing 1s
      {{2, 3, 4, 5}, {1, 4, 5}, {bc}, -1},                                    // leading 1
      {{2, 3, 4, 5}, {3, 4, 1}, {bc, MakeArgument("axis", 1)}, 1},            // trailing 1
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {bc}, -1},                                 // same shape
  };
}

TEST(ElementwiseOpTest, BroadcastForward) {
  for (const auto& tc : BroadcastCases()) {
    Tensor A = RandomTensor(tc.a, 3), B = Divisor(tc.b, 4);
    for (const char* op : kOps) {
      Workspace ws;
      RunOp(BinaryDef(op, tc.args), {{"A", A}, {"B", B}}, &ws);
      const Tensor& C = ws.GetTensor("C");
      EXPECT_EQ(C.dims(), tc.a);
      ExpectNear(ToFloatVector(C), NaiveBroadcast(op, A, B, tc.axis), 1e-6f, 1e-6f,
                 std::string(op) + " A " + DimsString(tc.a) + " B " + DimsString(tc.b));
    }
  }
}

TEST(ElementwiseOpTest, KnownValuesWithAxis) {
  // A (2, 3), B (2) at axis 0: each row of A combined with one element of B.
  auto def = BinaryDef("Sub", {MakeArgument("broadcast", 1), MakeArgument("axis", 0)});
  auto c = RunAndGet(def, {{"A", FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6})},
                           {"B", FloatTensor({2}, {10, 100})}});
  EXPECT_EQ(c, (std::vector<float>{-9, -8, -7, -96, -95, -94}));
}

TEST(ElementwiseOpTest, IntegerAndDoubleTypes) {
  const std::vector<int32_t> a{7, -8, 9, 10, 11, -12}, b{2, 3, -4};
  const std::vector<int32_t> add{9, -5, 5, 12, 14, -16}, sub{5, -11, 13, 8, 8, -8},
      mul{14, -24, -36, 20, 33, 48}, div{3, -2, -2, 5, 3, 3};
  const std::map<std::string, std::vector<int32_t>> want{
      {"Add", add}, {"Sub", sub}, {"Mul", mul}, {"Div", div}};
  const std::vector<Argument> bc{MakeArgument("broadcast", 1)};
  for (const char* op : kOps) {
    {
      Workspace ws;
      RunOp(BinaryDef(op, bc), {{"A", Typed<int32_t>({2, 3}, a)}, {"B", Typed<int32_t>({3}, b)}},
            &ws);
      const Tensor& C = ws.GetTensor("C");
      ASSERT_EQ(C.dtype(), DataType::INT32);
      EXPECT_EQ(std::vector<int32_t>(C.data<int32_t>(), C.data<int32_t>() + 6), want.at(op))
          << op;
    }
    {
      std::vector<int64_t> a64(a.begin(), a.end()), b64(b.begin(), b.end());
      Workspace ws;
      RunOp(BinaryDef(op, bc), {{"A", Typed<int64_t>({2, 3}, a64)},
                                {"B", Typed<int64_t>({3}, b64)}}, &ws);
      const Tensor& C = ws.GetTensor("C");
      ASSERT_EQ(C.dtype(), DataType::INT64);
      for (int i = 0; i < 6; ++i) EXPECT_EQ(C.data<int64_t>()[i], want.at(op)[i]) << op;
    }
    {
      std::vector<double> ad{1.5, -2, 3, 4, 5, 6}, bd{0.5, 4, -8};
      Workspace ws;
      RunOp(BinaryDef(op, bc), {{"A", Typed<double>({2, 3}, ad)}, {"B", Typed<double>({3}, bd)}},
            &ws);
      const Tensor& C = ws.GetTensor("C");
      ASSERT_EQ(C.dtype(), DataType::DOUBLE);
      for (int i = 0; i < 6; ++i) {
        EXPECT_DOUBLE_EQ(C.data<double>()[i], Apply(op, ad[i], bd[i % 3]));
      }
    }
  }
}

TEST(ElementwiseOpTest, InPlace) {
  Tensor A = RandomTensor({3, 5}, 5), B = Divisor({3, 5}, 6), b = Divisor({5}, 7);
  for (const char* op : kOps) {
    // C is A, with broadcast.
    auto def = MakeOperatorDef(op, "", {"A", "B"}, {"A"}, {MakeArgument("broadcast", 1)});
    ExpectNear(RunAndGet(def, {{"A", A}, {"B", b}}), NaiveBroadcast(op, A, b, -1), 1e-6f, 1e-6f,
               op);
  }
  for (const char* op : {"Add", "Sub", "Mul"}) {
    // C is B, same shapes.
    auto def = MakeOperatorDef(op, "", {"A", "B"}, {"B"});
    ExpectNear(RunAndGet(def, {{"A", A}, {"B", B}}), NaiveBroadcast(op, A, B, -1), 1e-6f, 1e-6f,
               op);
  }
  Workspace ws;
  ExpectError([&] { RunOp(MakeOperatorDef("Div", "", {"A", "B"}, {"B"}), {{"A", A}, {"B", B}},
                          &ws); },
              {"cannot run in place"});
  ExpectError([&] {
    RunOp(MakeOperatorDef("Add", "", {"A", "B"}, {"B"}, {MakeArgument("broadcast", 1)}),
          {{"A", A}, {"B", b}}, &ws);
  }, {"only A", "in place"});
}

TEST(ElementwiseOpTest, Errors) {
  Workspace ws;
  Tensor A = RandomTensor({2, 3, 4}, 1);
  // Shapes that do not broadcast NumPy-style (without broadcast=1): the op and both shapes named
  // (numpy_broadcast_test.cc has more).
  ExpectError([&] { RunOp(BinaryDef("Add"), {{"A", A}, {"B", RandomTensor({2, 4}, 2)}}, &ws); },
              {"Add", "[2, 3, 4]", "[2, 4]", "do not broadcast"});
  const Argument bc = MakeArgument("broadcast", 1);
  // B not alignable to A.
  ExpectError([&] { RunOp(BinaryDef("Sub", {bc}), {{"A", A}, {"B", RandomTensor({3}, 2)}}, &ws); },
              {"[2, 3, 4]", "[3]", "axis 2"});
  ExpectError([&] {
    RunOp(BinaryDef("Sub", {bc, MakeArgument("axis", 2)}),
          {{"A", A}, {"B", RandomTensor({3, 4}, 2)}}, &ws);
  }, {"axis 2", "out of range", "[3, 4]"});
  ExpectError([&] {
    RunOp(BinaryDef("Div", {bc}), {{"A", A}, {"B", RandomTensor({1, 2, 3, 4}, 2)}}, &ws);
  }, {"more dimensions", "[1, 2, 3, 4]"});
  // Argument problems.
  ExpectError([&] {
    RunOp(BinaryDef("Add", {MakeArgument("axis", 1)}), {{"A", A}, {"B", A}}, &ws);
  }, {"only apply with broadcast=1"});
  ExpectError([&] {
    RunOp(BinaryDef("Add", {bc, MakeArgument("axis", 1), MakeArgument("axis_str", "C")}),
          {{"A", A}, {"B", A}}, &ws);
  }, {"axis", "axis_str", "together"});
  ExpectError([&] {
    RunOp(BinaryDef("Add", {bc, MakeArgument("axis_str", "D")}), {{"A", A}, {"B", A}}, &ws);
  }, {"'D'", "NCHW"});
  ExpectError([&] {
    RunOp(BinaryDef("Add", {bc, MakeArgument("axis_str", "C"), MakeArgument("order", "CHWN")}),
          {{"A", A}, {"B", A}}, &ws);
  }, {"order", "CHWN"});
  // Types.
  ExpectError([&] {
    RunOp(BinaryDef("Add"), {{"A", IntTensor({2}, {1, 2})}, {"B", FloatTensor({2}, {1, 2})}},
          &ws);
  }, {"same type", "int32", "float"});
  ExpectError([&] {
    RunOp(BinaryDef("Div"), {{"A", IntTensor({2}, {1, 2})}, {"B", IntTensor({2}, {1, 0})}}, &ws);
  }, {"division by zero"});
}

TEST(ElementwiseOpTest, Fp16MatchesFp32) {
  for (const auto& tc : BroadcastCases()) {
    for (const char* op : kOps) {
      std::map<std::string, Tensor> in{{"A", RandomTensor(tc.a, 8, -4.f, 4.f)},
                                       {"B", Divisor(tc.b, 9)}};
      CheckFp16MatchesFp32(BinaryDef(op, tc.args), in, {"A", "B"});
      CheckFp16MatchesFp32(BinaryDef(op, tc.args), in, {"A"});  // float16 A, float B
    }
  }
  // float16 in, float16 out.
  Workspace ws;
  RunOp(BinaryDef("Add"), {{"A", ToHalf(FloatTensor({2}, {1, 2}))},
                           {"B", ToHalf(FloatTensor({2}, {0.5f, 0.25f}))}}, &ws);
  EXPECT_EQ(ws.GetTensor("C").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("C")), (std::vector<float>{1.5f, 2.25f}));
}

TEST(ElementwiseOpTest, GradientsWithoutBroadcast) {
  std::map<std::string, Tensor> in{{"A", RandomTensor({2, 3, 7, 9}, 10)},
                                   {"B", Divisor({2, 3, 7, 9}, 11)}};
  GradientChecker checker;
  for (const char* op : kOps) {
    for (int i = 0; i < 2; ++i) checker.Check(BinaryDef(op), in, i, 0);
  }
}

TEST(ElementwiseOpTest, GradientsWithBroadcast) {
  GradientChecker checker;
  for (const auto& tc : BroadcastCases()) {
    std::map<std::string, Tensor> in{{"A", RandomTensor(tc.a, 12)}, {"B", Divisor(tc.b, 13)}};
    for (const char* op : {"Add", "Sub", "Mul"}) {
      SCOPED_TRACE(std::string(op) + " B " + DimsString(tc.b));
      for (int i = 0; i < 2; ++i) checker.Check(BinaryDef(op, tc.args), in, i, 0);
    }
  }
  // broadcast present but 0: the broadcast gradient path with identical shapes.
  std::map<std::string, Tensor> in{{"A", RandomTensor({3, 5}, 14)}, {"B", Divisor({3, 5}, 15)}};
  for (const char* op : {"Add", "Sub", "Mul"}) {
    for (int i = 0; i < 2; ++i) {
      checker.Check(BinaryDef(op, {MakeArgument("broadcast", 0)}), in, i, 0);
    }
  }
}

TEST(ElementwiseOpTest, DivGradientFp16MatchesFp32) {
  auto def = MakeOperatorDef("DivGradient", "", {"B", "C", "dC"}, {"dA", "dB"});
  CheckFp16MatchesFp32(def, {{"B", Divisor({3, 7, 5}, 1)}, {"C", RandomTensor({3, 7, 5}, 2)},
                             {"dC", RandomTensor({3, 7, 5}, 3)}},
                       {"B", "C", "dC"}, {0, 1});
  Workspace ws;
  ExpectError([&] {
    RunOp(def, {{"B", Divisor({3}, 1)}, {"C", RandomTensor({3}, 2)}, {"dC", RandomTensor({4}, 3)}},
          &ws);
  }, {"[3]", "[4]"});
}

// ---- gradient maker structure -------------------------------------------------------------------

std::vector<std::string> ArgNames(const OperatorDef& op) {
  std::vector<std::string> names;
  for (const auto& a : op.arg()) names.push_back(a.name());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Strings(const google::protobuf::RepeatedPtrField<std::string>& r) {
  return std::vector<std::string>(r.begin(), r.end());
}

GradientOpsMeta MakerFor(const std::string& type, std::vector<Argument> args) {
  args.push_back(MakeArgument("foo", 7));  // an unrelated argument, to see which ops copy it
  auto def = MakeOperatorDef(type, "", {"A", "B"}, {"C"}, args);
  return GetGradientForOp(def, {GradientWrapper{"C_grad", "", ""}});
}

TEST(ElementwiseGradientMakerTest, AddAndSub) {
  auto add = MakerFor("Add", {});
  EXPECT_TRUE(add.ops.empty());
  EXPECT_EQ(add.g_input[0].dense, "C_grad");
  EXPECT_EQ(add.g_input[1].dense, "C_grad");

  auto addb = MakerFor("Add", {MakeArgument("broadcast", 1), MakeArgument("axis", 1)});
  ASSERT_EQ(addb.ops.size(), 1u);
  EXPECT_EQ(addb.ops[0].type(), "SumReduceLike");
  EXPECT_EQ(Strings(addb.ops[0].input()), (std::vector<std::string>{"C_grad", "B"}));
  EXPECT_EQ(Strings(addb.ops[0].output()), (std::vector<std::string>{"B_grad"}));
  EXPECT_EQ(ArgNames(addb.ops[0]), (std::vector<std::string>{"axis", "broadcast", "foo"}));
  EXPECT_TRUE(addb.ops[0].is_gradient_op());
  EXPECT_EQ(addb.g_input[0].dense, "C_grad");
  EXPECT_EQ(addb.g_input[1].dense, "B_grad");

  auto sub = MakerFor("Sub", {});
  ASSERT_EQ(sub.ops.size(), 1u);
  EXPECT_EQ(sub.ops[0].type(), "Negative");
  EXPECT_EQ(Strings(sub.ops[0].input()), (std::vector<std::string>{"C_grad"}));
  EXPECT_EQ(Strings(sub.ops[0].output()), (std::vector<std::string>{"B_grad"}));
  EXPECT_TRUE(ArgNames(sub.ops[0]).empty());
  EXPECT_EQ(sub.g_input[0].dense, "C_grad");

  auto subb = MakerFor("Sub", {MakeArgument("broadcast", 1), MakeArgument("axis_str", "C"),
                               MakeArgument("order", "NHWC")});
  ASSERT_EQ(subb.ops.size(), 2u);
  EXPECT_EQ(subb.ops[0].type(), "Negative");
  EXPECT_EQ(Strings(subb.ops[0].output()), (std::vector<std::string>{"B_grad_autogen_pre_red"}));
  EXPECT_TRUE(ArgNames(subb.ops[0]).empty());
  EXPECT_EQ(subb.ops[1].type(), "SumReduceLike");
  EXPECT_EQ(Strings(subb.ops[1].input()),
            (std::vector<std::string>{"B_grad_autogen_pre_red", "B"}));
  EXPECT_EQ(Strings(subb.ops[1].output()), (std::vector<std::string>{"B_grad"}));
  EXPECT_EQ(ArgNames(subb.ops[1]), (std::vector<std::string>{"axis", "axis_str", "order"}));
  ArgumentHelper sargs(subb.ops[1]);
  EXPECT_EQ(sargs.GetSingleArgument<int>("axis", 0), -1);
  EXPECT_EQ(sargs.GetSingleArgument<std::string>("axis_str", ""), "C");
  EXPECT_EQ(sargs.GetSingleArgument<std::string>("order", ""), "NHWC");
}

TEST(ElementwiseGradientMakerTest, MulAndDiv) {
  auto mul = MakerFor("Mul", {});
  ASSERT_EQ(mul.ops.size(), 2u);
  EXPECT_EQ(mul.ops[0].type(), "Mul");
  EXPECT_EQ(Strings(mul.ops[0].input()), (std::vector<std::string>{"C_grad", "B"}));
  EXPECT_EQ(Strings(mul.ops[0].output()), (std::vector<std::string>{"A_grad"}));
  EXPECT_EQ(Strings(mul.ops[1].input()), (std::vector<std::string>{"C_grad", "A"}));
  EXPECT_EQ(Strings(mul.ops[1].output()), (std::vector<std::string>{"B_grad"}));
  EXPECT_TRUE(ArgNames(mul.ops[0]).empty());
  EXPECT_TRUE(ArgNames(mul.ops[1]).empty());

  auto mulb = MakerFor("Mul", {MakeArgument("broadcast", 1), MakeArgument("axis", 0)});
  ASSERT_EQ(mulb.ops.size(), 3u);
  EXPECT_EQ(Strings(mulb.ops[0].output()), (std::vector<std::string>{"A_grad"}));
  EXPECT_EQ(ArgNames(mulb.ops[0]),
            (std::vector<std::string>{"axis", "axis_str", "broadcast", "order"}));
  EXPECT_EQ(ArgumentHelper(mulb.ops[0]).GetSingleArgument<int>("axis", -1), 0);
  EXPECT_EQ(mulb.ops[1].type(), "Mul");
  EXPECT_EQ(Strings(mulb.ops[1].input()), (std::vector<std::string>{"C_grad", "A"}));
  EXPECT_EQ(Strings(mulb.ops[1].output()), (std::vector<std::string>{"B_grad_autogen_pre_red"}));
  EXPECT_TRUE(ArgNames(mulb.ops[1]).empty());
  EXPECT_EQ(mulb.ops[2].type(), "SumReduceLike");
  EXPECT_EQ(Strings(mulb.ops[2].output()), (std::vector<std::string>{"B_grad"}));
  EXPECT_EQ(ArgNames(mulb.ops[2]), (std::vector<std::string>{"axis", "axis_str", "order"}));

  // Mul run in place cannot be differentiated.
  auto inplace = MakeOperatorDef("Mul", "", {"A", "B"}, {"A"});
  ExpectError([&] { GetGradientForOp(inplace, {GradientWrapper{"A_grad", "", ""}}); },
              {"in place"});

  auto div = MakerFor("Div", {});
  ASSERT_EQ(div.ops.size(), 1u);
  EXPECT_EQ(div.ops[0].type(), "DivGradient");
  EXPECT_EQ(Strings(div.ops[0].input()), (std::vector<std::string>{"B", "C", "C_grad"}));
  EXPECT_EQ(Strings(div.ops[0].output()), (std::vector<std::string>{"A_grad", "B_grad"}));
  EXPECT_EQ(ArgNames(div.ops[0]), (std::vector<std::string>{"foo"}));  // default copying
  // The test is on the presence of the argument, not its value.
  ExpectError([&] { MakerFor("Div", {MakeArgument("broadcast", 0)}); },
              {"Div", "not supported", "broadcast"});
}

TEST(ElementwiseOpTest, SchemaInfersShapeAndChecksBroadcast) {
  const OpSchema* s = OpSchemaRegistry::Schema("Mul");
  ASSERT_NE(s, nullptr);
  auto def = BinaryDef("Mul", {MakeArgument("broadcast", 1), MakeArgument("axis", 1)});
  std::vector<TensorShape> in{{{2, 3, 4}, DataType::FLOAT16}, {{3}, DataType::FLOAT16}};
  auto out = s->InferShapes(def, in);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_DOUBLE_EQ(s->InferCost(def, in).flops, 24.0);
  std::vector<TensorShape> bad{{{2, 3, 4}, DataType::FLOAT}, {{4}, DataType::FLOAT}};
  ExpectError([&] { s->InferShapes(def, bad); }, {"[2, 3, 4]", "[4]"});
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
