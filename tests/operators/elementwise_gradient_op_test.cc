// The gradients of Add, Sub, Mul, Div under NumPy broadcasting: AddGradient, SubGradient,
// MulGradient and the four-input DivGradient (against a naive reduction and by finite
// differences of the forward ops), the gradient makers' choice between them and Caffe2's
// same-shape / legacy gradient ops, the legacy broadcast arguments, FP16 vs FP32, double, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "tests/util/broadcast_cases.h"
#include "tests/util/error_of.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef BinaryDef(const std::string& op, std::vector<Argument> args = {}) {
  return MakeOperatorDef(op, "", {"A", "B"}, {"C"}, std::move(args));
}

// The gradient op of `op` for (A, B) -> C, as the maker emits it for these dims.
GradientOpsMeta MakerFor(const std::string& op, const ShapePair& c,
                         std::vector<Argument> args = {}) {
  const std::vector<std::vector<int64_t>> dims{c.a, c.b};
  return GetGradientForOp(BinaryDef(op, std::move(args)), {GradientWrapper{"C_grad", "", ""}},
                          &dims);
}

std::vector<std::string> Strings(const google::protobuf::RepeatedPtrField<std::string>& r) {
  return std::vector<std::string>(r.begin(), r.end());
}

TEST(ElementwiseGradientOpTest, FiniteDifferences) {
  GradientChecker checker;
  for (const auto& tc : NumpyBroadcastPairs()) {
    std::map<std::string, Tensor> in{{"A", RandomTensor(tc.a, 1)},
                                     {"B", RandomTensorAwayFrom(tc.b, 2, {0.f}, 0.5f, -2.f, 2.f)}};
    for (const char* op : kBinaryOps) {
      SCOPED_TRACE(std::string(op) + " A " + DimsString(tc.a) + " B " + DimsString(tc.b));
      for (int i = 0; i < 2; ++i) checker.Check(BinaryDef(op), in, i, 0);
    }
  }
}

// dA and dB from the formulas, summed over the repeated dims by walking every output element.
void NaiveGradients(const std::string& op, const ShapePair& c, const Tensor& A, const Tensor& B,
                    const Tensor& dC, std::vector<double>* da, std::vector<double>* db) {
  const std::vector<int64_t>& od = dC.dims();
  const std::vector<float> a = ToFloatVector(A), b = ToFloatVector(B), g = ToFloatVector(dC);
  da->assign(a.size(), 0.0);
  db->assign(b.size(), 0.0);
  auto index = [&](std::vector<int64_t> idx, const std::vector<int64_t>& x) {
    idx.erase(idx.begin(), idx.begin() + static_cast<int64_t>(od.size() - x.size()));
    int64_t flat = 0;
    for (size_t d = 0; d < x.size(); ++d) flat = flat * x[d] + (x[d] == 1 ? 0 : idx[d]);
    return flat;
  };
  std::vector<int64_t> idx(od.size());
  for (int64_t i = 0; i < dC.numel(); ++i) {
    int64_t rest = i;
    for (size_t d = od.size(); d-- > 0;) {
      idx[d] = rest % od[d];
      rest /= od[d];
    }
    const int64_t ia = index(idx, c.a), ib = index(idx, c.b);
    const double av = a[ia], bv = b[ib], gv = g[i];
    const double ga = op == "Mul" ? gv * bv : op == "Div" ? gv / bv : gv;
    const double gb = op == "Add" ? gv : op == "Sub" ? -gv : op == "Mul" ? gv * av
                                                                         : -gv * (av / bv) / bv;
    (*da)[ia] += ga;
    (*db)[ib] += gb;
  }
}

TEST(ElementwiseGradientOpTest, GradientOpsMatchNaiveSums) {
  for (const auto& tc : NumpyBroadcastPairs()) {
    const Tensor A = RandomTensor(tc.a, 3);
    const Tensor B = RandomTensorAwayFrom(tc.b, 4, {0.f}, 0.5f, -2.f, 2.f);
    for (const char* op : kBinaryOps) {
      SCOPED_TRACE(std::string(op) + " A " + DimsString(tc.a) + " B " + DimsString(tc.b));
      const GradientOpsMeta meta = MakerFor(op, tc);
      ASSERT_EQ(meta.ops.size(), 1u);
      Workspace ws;
      RunOp(BinaryDef(op), {{"A", A}, {"B", B}}, &ws);
      const Tensor dC = RandomTensor(ws.GetTensor("C").dims(), 5);
      RunOp(meta.ops[0], {{"C_grad", dC}}, &ws);
      const Tensor& dA = ws.GetTensor("A_grad");
      const Tensor& dB = ws.GetTensor("B_grad");
      EXPECT_EQ(dA.dims(), tc.a);
      EXPECT_EQ(dB.dims(), tc.b);
      std::vector<double> da, db;
      NaiveGradients(op, tc, A, B, dC, &da, &db);
      ExpectNear(ToFloatVector(dA), std::vector<float>(da.begin(), da.end()), 1e-5f, 1e-5f, "dA");
      ExpectNear(ToFloatVector(dB), std::vector<float>(db.begin(), db.end()), 1e-5f, 1e-5f, "dB");
    }
  }
}

TEST(ElementwiseGradientOpTest, KnownValues) {
  // dC = 1 over (2, 3): A (2, 1) gets row sums, B (3) column sums.
  Workspace ws;
  RunOp(MakeOperatorDef("SubGradient", "", {"dC", "A", "B"}, {"dA", "dB"}),
        {{"dC", FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6})},
         {"A", FloatTensor({2, 1}, {0, 0})},
         {"B", FloatTensor({3}, {0, 0, 0})}},
        &ws);
  EXPECT_EQ(ws.GetTensor("dA").dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dA")), (std::vector<float>{6, 15}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("dB")), (std::vector<float>{-5, -7, -9}));
}

// A NaN in dC reaches exactly the elements of dA and dB it is summed into.
TEST(ElementwiseGradientOpTest, NaNPropagates) {
  Tensor dC = RandomTensor({2, 3}, 1);
  dC.mutable_data<float>()[4] = std::numeric_limits<float>::quiet_NaN();  // row 1, column 1
  Workspace ws;
  RunOp(MakeOperatorDef("AddGradient", "", {"dC", "A", "B"}, {"dA", "dB"}),
        {{"dC", dC}, {"A", RandomTensor({2, 1}, 2)}, {"B", RandomTensor({3}, 3)}}, &ws);
  const std::vector<float> da = ToFloatVector(ws.GetTensor("dA"));
  const std::vector<float> db = ToFloatVector(ws.GetTensor("dB"));
  EXPECT_FALSE(std::isnan(da[0]));
  EXPECT_TRUE(std::isnan(da[1]));
  EXPECT_FALSE(std::isnan(db[0]));
  EXPECT_TRUE(std::isnan(db[1]));
  EXPECT_FALSE(std::isnan(db[2]));
}

// With broadcast=1 the gradient ops line B up with A as the forward op did: dB is SumReduceLike's.
TEST(ElementwiseGradientOpTest, LegacyBroadcastArguments) {
  const Tensor A = RandomTensor({2, 3, 4, 5}, 6), B = RandomTensorAwayFrom({3, 4}, 7, {0.f}, 0.5f);
  const std::vector<Argument> args{MakeArgument("broadcast", 1), MakeArgument("axis", 1)};
  Workspace ws;
  RunOp(BinaryDef("Mul", args), {{"A", A}, {"B", B}}, &ws);
  const Tensor dC = RandomTensor({2, 3, 4, 5}, 8);
  RunOp(MakeOperatorDef("MulGradient", "", {"dC", "A", "B"}, {"dA", "dB"}, args), {{"dC", dC}},
        &ws);
  // Reference: Caffe2's legacy gradient ops.
  RunOp(MakeOperatorDef("Mul", "", {"dC", "B"}, {"ref_dA"}, args), {}, &ws);
  RunOp(MakeOperatorDef("Mul", "", {"dC", "A"}, {"pre"}), {}, &ws);
  RunOp(MakeOperatorDef("SumReduceLike", "", {"pre", "B"}, {"ref_dB"}, {args[1]}), {}, &ws);
  EXPECT_EQ(ws.GetTensor("dB").dims(), (std::vector<int64_t>{3, 4}));
  ExpectNear(ToFloatVector(ws.GetTensor("dA")), ToFloatVector(ws.GetTensor("ref_dA")), 1e-6f,
             1e-6f, "dA");
  ExpectNear(ToFloatVector(ws.GetTensor("dB")), ToFloatVector(ws.GetTensor("ref_dB")), 1e-5f,
             1e-5f, "dB");
}

TEST(ElementwiseGradientOpTest, Fp16MatchesFp32AndDouble) {
  const ShapePair tc{{1, 4, 1}, {3, 1, 5}};
  const std::map<std::string, Tensor> in{
      {"dC", RandomTensor({3, 4, 5}, 9)}, {"A", RandomTensor(tc.a, 10)},
      {"B", RandomTensorAwayFrom(tc.b, 11, {0.f}, 0.5f)}, {"C", RandomTensor({3, 4, 5}, 12)}};
  for (const char* op : kBinaryOps) {
    SCOPED_TRACE(op);
    std::vector<std::string> inputs{"dC", "A", "B"};
    if (std::string(op) == "Div") inputs.push_back("C");
    const OperatorDef def = MakeOperatorDef(std::string(op) + "Gradient", "", inputs, {"dA", "dB"});
    CheckFp16MatchesFp32(def, in, inputs, {0, 1});
    CheckFp16MatchesFp32(def, in, {"dC"}, {0, 1});  // float16 dC with float A, B
    // Double, against the float results.
    std::map<std::string, Tensor> in64;
    for (const auto& name : inputs) {
      const Tensor& f = in.at(name);
      Tensor d(f.dims(), DataType::DOUBLE);
      for (int64_t i = 0; i < f.numel(); ++i) d.mutable_data<double>()[i] = f.data<float>()[i];
      in64[name] = std::move(d);
    }
    Workspace ws64, ws32;
    RunOp(def, in64, &ws64);
    RunOp(def, in, &ws32);
    for (const char* out : {"dA", "dB"}) {
      const Tensor& t = ws64.GetTensor(out);
      ASSERT_EQ(t.dtype(), DataType::DOUBLE);
      ExpectNear(std::vector<float>(t.data<double>(), t.data<double>() + t.numel()),
                 ToFloatVector(ws32.GetTensor(out)), 1e-5f, 1e-5f, out);
    }
  }
}

TEST(ElementwiseGradientOpTest, Errors) {
  Workspace ws;
  // dC must have the broadcast shape of A and B.
  std::string err = ErrorOf([&] {
    RunOp(MakeOperatorDef("AddGradient", "", {"dC", "A", "B"}, {"dA", "dB"}),
          {{"dC", RandomTensor({3, 5}, 1)}, {"A", RandomTensor({3, 1}, 2)},
           {"B", RandomTensor({4}, 3)}},
          &ws);
  });
  for (const char* part : {"AddGradient", "[3, 5]", "[3, 1]", "[4]", "[3, 4]"}) {
    EXPECT_NE(err.find(part), std::string::npos) << err;
  }
  err = ErrorOf([&] {
    RunOp(MakeOperatorDef("MulGradient", "", {"dC", "A", "B"}, {"dA", "dB"}),
          {{"dC", RandomTensor({3, 4}, 1)}, {"A", RandomTensor({3, 4}, 2)},
           {"B", RandomTensor({2, 4}, 3)}},
          &ws);
  });
  for (const char* part : {"MulGradient", "[3, 4]", "[2, 4]", "do not broadcast"}) {
    EXPECT_NE(err.find(part), std::string::npos) << err;
  }
  err = ErrorOf([&] {
    RunOp(MakeOperatorDef("DivGradient", "", {"dC", "A", "B", "C"}, {"dA", "dB"}),
          {{"dC", RandomTensor({3, 4}, 1)}, {"A", RandomTensor({3, 1}, 2)},
           {"B", RandomTensor({4}, 3)}, {"C", RandomTensor({4, 3}, 4)}},
          &ws);
  });
  for (const char* part : {"DivGradient", "C has dims [4, 3]", "[3, 4]"}) {
    EXPECT_NE(err.find(part), std::string::npos) << err;
  }
  err = ErrorOf([&] {
    RunOp(MakeOperatorDef("DivGradient", "", {"B", "C", "dC"}, {"dA", "dB"}),
          {{"B", RandomTensor({4}, 1)}, {"C", RandomTensor({3, 4}, 2)},
           {"dC", RandomTensor({3, 4}, 3)}},
          &ws);
  });
  for (const char* part : {"DivGradient (B, C, dC)", "[4]", "[3, 4]", "four-input"}) {
    EXPECT_NE(err.find(part), std::string::npos) << err;
  }
}

// The makers: Caffe2 1.0's ops when the dims they are given differ without broadcast=1; the
// same-shape and legacy gradient ops otherwise (elementwise_op_test.cc checks those in detail).
TEST(ElementwiseGradientMakerTest, NumpyBroadcastOps) {
  const ShapePair numpy{{3, 4, 5}, {3, 1, 5}};
  for (const char* op : {"Add", "Sub", "Mul"}) {
    SCOPED_TRACE(op);
    const GradientOpsMeta meta = MakerFor(op, numpy);
    ASSERT_EQ(meta.ops.size(), 1u);
    EXPECT_EQ(meta.ops[0].type(), std::string(op) + "Gradient");
    EXPECT_EQ(Strings(meta.ops[0].input()), (std::vector<std::string>{"C_grad", "A", "B"}));
    EXPECT_EQ(Strings(meta.ops[0].output()), (std::vector<std::string>{"A_grad", "B_grad"}));
    EXPECT_TRUE(meta.ops[0].is_gradient_op());
    EXPECT_EQ(meta.g_input[0].dense, "A_grad");
    EXPECT_EQ(meta.g_input[1].dense, "B_grad");
  }
  const GradientOpsMeta div = MakerFor("Div", numpy);
  ASSERT_EQ(div.ops.size(), 1u);
  EXPECT_EQ(div.ops[0].type(), "DivGradient");
  EXPECT_EQ(Strings(div.ops[0].input()), (std::vector<std::string>{"C_grad", "A", "B", "C"}));
  EXPECT_EQ(Strings(div.ops[0].output()), (std::vector<std::string>{"A_grad", "B_grad"}));
  // broadcast=0 given explicitly is still the NumPy case.
  EXPECT_EQ(MakerFor("Add", numpy, {MakeArgument("broadcast", 0)}).ops.at(0).type(),
            "AddGradient");

  // Identical dims, or no dims at all: exactly the ops made without them.
  const ShapePair same{{3, 4, 5}, {3, 4, 5}};
  for (const char* op : kBinaryOps) {
    SCOPED_TRACE(op);
    const GradientOpsMeta with_dims = MakerFor(op, same);
    const GradientOpsMeta without =
        GetGradientForOp(BinaryDef(op), {GradientWrapper{"C_grad", "", ""}});
    ASSERT_EQ(with_dims.ops.size(), without.ops.size());
    for (size_t i = 0; i < without.ops.size(); ++i) {
      EXPECT_EQ(with_dims.ops[i].SerializeAsString(), without.ops[i].SerializeAsString());
    }
    EXPECT_EQ(with_dims.g_input[0].dense, without.g_input[0].dense);
    EXPECT_EQ(with_dims.g_input[1].dense, without.g_input[1].dense);
  }
  // broadcast=1: the legacy ops whatever the dims.
  const GradientOpsMeta legacy =
      MakerFor("Add", {{2, 3, 4}, {3, 4}}, {MakeArgument("broadcast", 1)});
  ASSERT_EQ(legacy.ops.size(), 1u);
  EXPECT_EQ(legacy.ops[0].type(), "SumReduceLike");
  // The dims must come one per input.
  const std::vector<std::vector<int64_t>> one{{3}};
  EXPECT_NE(ErrorOf([&] {
              GetGradientForOp(BinaryDef("Add"), {GradientWrapper{"C_grad", "", ""}}, &one);
            }).find("1 input dims given for 2 inputs"),
            std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
