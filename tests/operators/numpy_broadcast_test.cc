// NumPy (multidirectional) broadcasting of Add, Sub, Mul, Div without broadcast=1: the merged
// walk of numpy_broadcast.h, the forward ops against a naive multi-index reference (float,
// float16, double, integers), shape inference, in place and errors. Gradients:
// elementwise_gradient_op_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/op_schema.h"
#include "operators/math/numpy_broadcast.h"
#include "tests/util/broadcast_cases.h"
#include "tests/util/error_of.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Integer division truncates toward zero, as in C++.
template <typename T>
T Apply(const std::string& op, T a, T b) {
  if (op == "Add") return static_cast<T>(a + b);
  if (op == "Sub") return static_cast<T>(a - b);
  if (op == "Mul") return static_cast<T>(a * b);
  return static_cast<T>(a / b);
}

std::vector<int64_t> NaiveDims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t nd = std::max(a.size(), b.size());
  std::vector<int64_t> out(nd);
  for (size_t k = 0; k < nd; ++k) {  // k counts from the last dim
    const int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t y = k < b.size() ? b[b.size() - 1 - k] : 1;
    out[nd - 1 - k] = x == 1 ? y : x;
  }
  return out;
}

// Flat index into an input of dims `x` of the output element at multi-index `idx`.
int64_t InputIndex(const std::vector<int64_t>& idx, const std::vector<int64_t>& x) {
  const size_t off = idx.size() - x.size();
  int64_t flat = 0;
  for (size_t d = 0; d < x.size(); ++d) flat = flat * x[d] + (x[d] == 1 ? 0 : idx[off + d]);
  return flat;
}

// C = op(A, B) computed from each output multi-index, independently of the merged walk.
template <typename T>
std::vector<T> Naive(const std::string& op, const std::vector<T>& a,
                     const std::vector<int64_t>& ad, const std::vector<T>& b,
                     const std::vector<int64_t>& bd) {
  const std::vector<int64_t> cd = NaiveDims(ad, bd);
  int64_t n = 1;
  for (int64_t d : cd) n *= d;
  std::vector<T> c(n);
  std::vector<int64_t> idx(cd.size());
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat;
    for (size_t d = cd.size(); d-- > 0;) {
      idx[d] = rest % cd[d];
      rest /= cd[d];
    }
    c[flat] = Apply<T>(op, a[InputIndex(idx, ad)], b[InputIndex(idx, bd)]);
  }
  return c;
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// The shared pairs and one large enough to be split over threads.
std::vector<ShapePair> Cases() {
  std::vector<ShapePair> cases = NumpyBroadcastPairs();
  cases.push_back({{64, 33, 17}, {64, 1, 17}});
  return cases;
}

OperatorDef BinaryDef(const std::string& op) {
  return MakeOperatorDef(op, "", {"A", "B"}, {"C"});
}

TEST(NumpyBroadcastTest, MergesDims) {
  NumpyBroadcast s = MakeNumpyBroadcast("Add", {2, 3, 4, 5}, {4, 5});
  EXPECT_EQ(s.out_dims, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(s.numel, 120);
  EXPECT_EQ(s.dims, (std::vector<int64_t>{6, 20}));
  EXPECT_EQ(s.a_stride, (std::vector<int64_t>{20, 1}));
  EXPECT_EQ(s.b_stride, (std::vector<int64_t>{0, 1}));

  s = MakeNumpyBroadcast("Add", {1, 4, 1}, {3, 1, 5});
  EXPECT_EQ(s.out_dims, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(s.dims, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(s.a_stride, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(s.b_stride, (std::vector<int64_t>{5, 0, 1}));

  // Size-1 output dims disappear; a one-element output is one dim of 1.
  s = MakeNumpyBroadcast("Add", {1, 3, 1}, {1, 1});
  EXPECT_EQ(s.dims, (std::vector<int64_t>{3}));
  s = MakeNumpyBroadcast("Add", {1}, {1, 1});
  EXPECT_EQ(s.out_dims, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(s.dims, (std::vector<int64_t>{1}));

  EXPECT_EQ(RepeatedDims({3, 4, 5}, {4, 1}), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(RepeatedDims({3, 1, 5}, {1, 1, 5}), (std::vector<bool>{true, false, false}));
}

TEST(NumpyBroadcastTest, FloatForwardMatchesNaive) {
  for (const auto& tc : Cases()) {
    const Tensor A = RandomTensor(tc.a, 1), B = RandomTensorAwayFrom(tc.b, 2, {0.f}, 0.25f);
    for (const char* op : kBinaryOps) {
      SCOPED_TRACE(std::string(op) + " A " + DimsString(tc.a) + " B " + DimsString(tc.b));
      Workspace ws;
      RunOp(BinaryDef(op), {{"A", A}, {"B", B}}, &ws);
      const Tensor& C = ws.GetTensor("C");
      EXPECT_EQ(C.dims(), NaiveDims(tc.a, tc.b));
      EXPECT_EQ(C.dtype(), DataType::FLOAT);
      ExpectNear(ToFloatVector(C), Naive(op, Values<float>(A), tc.a, Values<float>(B), tc.b),
                 1e-6f, 1e-6f);
      // A second run reuses the plan; new shapes make a new one.
      RunOp(BinaryDef(op), {{"A", B}, {"B", A}}, &ws);
      ExpectNear(ToFloatVector(ws.GetTensor("C")),
                 Naive(op, Values<float>(B), tc.b, Values<float>(A), tc.a), 1e-6f, 1e-6f,
                 "swapped");
    }
  }
}

TEST(NumpyBroadcastTest, KnownValues) {
  Workspace ws;
  RunOp(BinaryDef("Sub"),
        {{"A", FloatTensor({2, 1}, {10, 20})}, {"B", FloatTensor({3}, {1, 2, 3})}}, &ws);
  EXPECT_EQ(ws.GetTensor("C").dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ToFloatVector(ws.GetTensor("C")), (std::vector<float>{9, 8, 7, 19, 18, 17}));
}

template <typename T>
Tensor Typed(const std::vector<int64_t>& dims, uint32_t seed, bool nonzero) {
  // Whole numbers in [-9, 9], at least 1 in size when `nonzero`.
  Tensor f = nonzero ? RandomTensorAwayFrom(dims, seed, {0.f}, 1.f, -9.f, 9.f)
                     : RandomTensor(dims, seed, -9.f, 9.f);
  Tensor t(dims, DataTypeOf<T>());
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.mutable_data<T>()[i] = static_cast<T>(std::trunc(f.data<float>()[i]));
  }
  return t;
}

template <typename T>
void CheckTyped() {
  const ShapePair pairs[] = {{{3, 4, 5}, {3, 1, 5}}, {{1, 4, 1}, {3, 1, 5}}, {{}, {7}}};
  for (const auto& tc : pairs) {
    const Tensor A = Typed<T>(tc.a, 3, false), B = Typed<T>(tc.b, 4, true);
    for (const char* op : kBinaryOps) {
      SCOPED_TRACE(std::string(op) + " " + DataTypeName(DataTypeOf<T>()) + " A " +
                   DimsString(tc.a) + " B " + DimsString(tc.b));
      Workspace ws;
      RunOp(BinaryDef(op), {{"A", A}, {"B", B}}, &ws);
      const Tensor& C = ws.GetTensor("C");
      ASSERT_EQ(C.dtype(), DataTypeOf<T>());
      ASSERT_EQ(C.dims(), NaiveDims(tc.a, tc.b));
      EXPECT_EQ(Values<T>(C), Naive(op, Values<T>(A), tc.a, Values<T>(B), tc.b));
    }
  }
}

TEST(NumpyBroadcastTest, IntegerAndDoubleTypes) {
  CheckTyped<int32_t>();
  CheckTyped<int64_t>();
  CheckTyped<double>();
  // Integer division by zero in a broadcast B is reported, not trapped.
  Tensor B = Typed<int32_t>({1, 3}, 5, true);
  B.mutable_data<int32_t>()[2] = 0;
  Workspace ws;
  EXPECT_NE(ErrorOf([&] {
              RunOp(BinaryDef("Div"), {{"A", Typed<int32_t>({4, 1}, 6, false)}, {"B", B}}, &ws);
            }).find("division by zero"),
            std::string::npos);
}

TEST(NumpyBroadcastTest, Fp16MatchesFp32) {
  for (const auto& tc : Cases()) {
    std::map<std::string, Tensor> in{{"A", RandomTensor(tc.a, 8, -4.f, 4.f)},
                                     {"B", RandomTensorAwayFrom(tc.b, 9, {0.f}, 0.25f)}};
    for (const char* op : kBinaryOps) {
      SCOPED_TRACE(std::string(op) + " A " + DimsString(tc.a) + " B " + DimsString(tc.b));
      CheckFp16MatchesFp32(BinaryDef(op), in, {"A", "B"});
      CheckFp16MatchesFp32(BinaryDef(op), in, {"B"});  // float A, float16 B: C is float
    }
  }
  // C takes A's type.
  Workspace ws;
  RunOp(BinaryDef("Mul"), {{"A", ToHalf(FloatTensor({2, 1}, {1, 2}))},
                           {"B", FloatTensor({2}, {0.5f, 4})}}, &ws);
  EXPECT_EQ(ws.GetTensor("C").dtype(), DataType::FLOAT16);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("C")), (std::vector<float>{0.5f, 4, 1, 8}));
}

TEST(NumpyBroadcastTest, SchemaInfersBroadcastShape) {
  const OpSchema* s = OpSchemaRegistry::Schema("Div");
  ASSERT_NE(s, nullptr);
  const std::vector<TensorShape> in{{{1, 4, 1}, DataType::FLOAT16}, {{3, 1, 5}, DataType::FLOAT}};
  const auto out = s->InferShapes(BinaryDef("Div"), in);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_DOUBLE_EQ(s->InferCost(BinaryDef("Div"), in).flops, 60.0);
  const std::string err = ErrorOf([&] {
    s->InferShapes(BinaryDef("Div"), {{{3, 4}, DataType::FLOAT}, {{3}, DataType::FLOAT}});
  });
  for (const char* part : {"Div", "[3, 4]", "[3]"}) {
    EXPECT_NE(err.find(part), std::string::npos) << err;
  }
}

TEST(NumpyBroadcastTest, InPlace) {
  const Tensor big = RandomTensor({3, 4, 5}, 10), small = RandomTensor({3, 1, 5}, 11);
  const std::vector<float> want = Naive("Add", Values<float>(big), {3, 4, 5},
                                        Values<float>(small), {3, 1, 5});
  // C may be the input that has the output's shape...
  Workspace ws;
  RunOp(MakeOperatorDef("Add", "", {"A", "B"}, {"A"}), {{"A", big}, {"B", small}}, &ws);
  ExpectNear(ToFloatVector(ws.GetTensor("A")), want, 1e-6f, 1e-6f);
  RunOp(MakeOperatorDef("Add", "", {"A", "B"}, {"B"}), {{"A", small}, {"B", big}}, &ws);
  ExpectNear(ToFloatVector(ws.GetTensor("B")), want, 1e-6f, 1e-6f);
  // ... but not the repeated one, which would be overwritten while it is read.
  const std::string err = ErrorOf([&] {
    RunOp(MakeOperatorDef("Mul", "", {"A", "B"}, {"B"}), {{"A", big}, {"B", small}}, &ws);
  });
  for (const char* part : {"Mul", "'B'", "[3, 1, 5]", "[3, 4, 5]", "in place"}) {
    EXPECT_NE(err.find(part), std::string::npos) << err;
  }
}

TEST(NumpyBroadcastTest, Errors) {
  // Shapes that do not broadcast: the op, both shapes and the clashing dim.
  Workspace ws;
  for (const char* op : kBinaryOps) {
    const std::string err = ErrorOf([&] {
      RunOp(BinaryDef(op), {{"A", RandomTensor({3, 4, 5}, 1)}, {"B", RandomTensor({3, 2, 5}, 2)}},
            &ws);
    });
    for (const std::string& part : {std::string(op), std::string("[3, 4, 5]"),
                                   std::string("[3, 2, 5]"), std::string("do not broadcast")}) {
      EXPECT_NE(err.find(part), std::string::npos) << err;
    }
  }
  EXPECT_NE(ErrorOf([&] {
              RunOp(BinaryDef("Add"), {{"A", RandomTensor({4}, 1)}, {"B", RandomTensor({3}, 2)}},
                    &ws);
            }).find("4 from A and 3 from B"),
            std::string::npos);
  // More than kMaxBroadcastDims dims after merging (alternating repeats).
  const std::string err = ErrorOf([&] {
    MakeNumpyBroadcast("Add", {2, 1, 2, 1, 2, 1, 2, 1, 2}, {1, 2, 1, 2, 1, 2, 1, 2, 1});
  });
  EXPECT_NE(err.find("needs 9 dims"), std::string::npos) << err;
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
