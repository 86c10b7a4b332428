#include <gtest/gtest.h>

#include <cstring>

#include "tests/util/gradient_checker.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

// Naive N-d slice: visits every element of `dims` and keeps those inside [lo[d], hi[d]) for every
// dim d (bounds already resolved). Works on raw elements of `item` bytes.
std::vector<char> NaiveSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>& lo,
                             const std::vector<int64_t>& hi, const char* data, size_t item) {
  std::vector<char> out;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i;
    bool inside = true;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
      inside &= idx[d] >= lo[d] && idx[d] < hi[d];
    }
    if (inside) out.insert(out.end(), data + i * item, data + (i + 1) * item);
  }
  return out;
}

std::vector<char> Bytes(const Tensor& t) {
  const char* p = static_cast<const char*>(t.raw_data());
  return std::vector<char>(p, p + t.nbytes());
}

Tensor Int64Tensor(std::vector<int64_t> dims, std::vector<int64_t> values) {
  Tensor t(std::move(dims), DataType::INT64);
  std::copy(values.begin(), values.end(), t.mutable_data<int64_t>());
  return t;
}

// A tensor of `dtype` with distinct, exactly representable values 0, 1, 2, ... (mod 256 for
// uint8), so a byte comparison catches any misplaced element.
Tensor Iota(std::vector<int64_t> dims, DataType dtype) {
  Tensor t(std::move(dims), dtype);
  t.raw_mutable_data(dtype);
  DispatchAllTypes(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(static_cast<float>(i));
  });
  return t;
}

OperatorDef SliceDef(std::vector<int64_t> starts, std::vector<int64_t> ends) {
  return MakeOperatorDef("Slice", "", {"X"}, {"Y"},
                         {MakeArgument("starts", starts), MakeArgument("ends", ends)});
}

TEST(SliceOpTest, CutsOneDimAndTakesTheRestWhole) {
  Tensor X = RandomTensor({3, 5, 4}, 1);
  Workspace ws;
  // Only dim 1 is listed beyond dim 0 (taken whole); dim 2 is beyond the lists.
  RunOp(SliceDef({0, 1}, {3, 4}), {{"X", X}}, &ws);
  const Tensor& Y = ws.GetTensor("Y");
  EXPECT_EQ(Y.dims(), (std::vector<int64_t>{3, 3, 4}));
  EXPECT_EQ(Bytes(Y),
            NaiveSlice(X.dims(), {0, 1, 0}, {3, 4, 4}, static_cast<const char*>(X.raw_data()), 4));
}

TEST(SliceOpTest, NegativeIndicesCountFromPastTheEnd) {
  // On a dim of 5: -1 -> 5 (the end), -3 -> 3, -6 -> 0.
  Tensor X = RandomTensor({2, 5}, 2);
  const char* x = static_cast<const char*>(X.raw_data());
  Workspace ws;
  RunOp(SliceDef({0, -3}, {-1, -1}), {{"X", X}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Bytes(ws.GetTensor("Y")), NaiveSlice(X.dims(), {0, 3}, {2, 5}, x, 4));
  RunOp(SliceDef({0, -6}, {2, -2}), {{"X", X}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Bytes(ws.GetTensor("Y")), NaiveSlice(X.dims(), {0, 0}, {2, 4}, x, 4));
  RunOp(SliceDef({-2}, {-1}), {{"X", X}}, &ws);  // dim 0 of 2: [1, 2)
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(Bytes(ws.GetTensor("Y")), NaiveSlice(X.dims(), {1, 0}, {2, 5}, x, 4));
}

TEST(SliceOpTest, IndicesAboveTheDimAreClamped) {
  Tensor X = RandomTensor({4, 3}, 3);
  Workspace ws;
  RunOp(SliceDef({2}, {100}), {{"X", X}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Bytes(ws.GetTensor("Y")),
            NaiveSlice(X.dims(), {2, 0}, {4, 3}, static_cast<const char*>(X.raw_data()), 4));
  // start == end gives an empty dim.
  RunOp(SliceDef({0, 1}, {4, 1}), {{"X", X}}, &ws);
  EXPECT_EQ(ws.GetTensor("Y").dims(), (std::vector<int64_t>{4, 0}));
}

TEST(SliceOpTest, BoundsAsInt32OrInt64Inputs) {
  Tensor X = RandomTensor({3, 6, 2}, 4);
  const auto want = RunAndGet(SliceDef({0, 2}, {-1, 5}), {{"X", X}});
  auto def = MakeOperatorDef("Slice", "", {"X", "s", "e"}, {"Y"});
  EXPECT_EQ(
      RunAndGet(def, {{"X", X}, {"s", IntTensor({2}, {0, 2})}, {"e", IntTensor({2}, {-1, 5})}}),
      want);
  EXPECT_EQ(
      RunAndGet(def, {{"X", X}, {"s", Int64Tensor({2}, {0, 2})}, {"e", Int64Tensor({2}, {-1, 5})}}),
      want);
  EXPECT_EQ(want.size(), 3u * 3 * 2);
}

TEST(SliceOpTest, AnyDataType) {
  for (DataType dt : {DataType::FLOAT, DataType::FLOAT16, DataType::INT32, DataType::INT64,
                      DataType::UINT8, DataType::DOUBLE, DataType::BOOL}) {
    SCOPED_TRACE(DataTypeName(dt));
    Tensor X = Iota({4, 7, 3}, dt);
    Workspace ws;
    RunOp(SliceDef({0, 0, 1}, {4, 7, 3}), {{"X", X}}, &ws);  // cut the last dim
    const Tensor& Y = ws.GetTensor("Y");
    EXPECT_EQ(Y.dtype(), dt);
    EXPECT_EQ(Y.dims(), (std::vector<int64_t>{4, 7, 2}));
    EXPECT_EQ(Bytes(Y), NaiveSlice(X.dims(), {0, 0, 1}, {4, 7, 3},
                                   static_cast<const char*>(X.raw_data()), DataTypeSize(dt)));
    // The gradient keeps dY's type: zeros outside the slice.
    Tensor dY = Iota({4, 7, 2}, dt);
    RunOp(MakeOperatorDef("SliceGradient", "", {"X", "dY"}, {"dX"},
                          {MakeArgument("starts", std::vector<int64_t>{0, 0, 1}),
                           MakeArgument("ends", std::vector<int64_t>{4, 7, 3})}),
          {{"X", X}, {"dY", dY}}, &ws);
    const Tensor& dX = ws.GetTensor("dX");
    EXPECT_EQ(dX.dtype(), dt);
    EXPECT_EQ(dX.dims(), X.dims());
    const size_t item = DataTypeSize(dt);
    const char* dx = static_cast<const char*>(dX.raw_data());
    const char* dy = static_cast<const char*>(dY.raw_data());
    const std::vector<char> zero(item, 0);
    for (int64_t r = 0; r < 4 * 7; ++r) {
      EXPECT_EQ(std::memcmp(dx + (r * 3) * item, zero.data(), item), 0) << r;
      EXPECT_EQ(std::memcmp(dx + (r * 3 + 1) * item, dy + (r * 2) * item, 2 * item), 0) << r;
    }
  }
}

TEST(SliceOpTest, WholeTensorAndScalar) {
  Tensor X = RandomTensor({2, 3}, 5);
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Slice", "", {"X"}, {"Y"}), {{"X", X}}), ToFloatVector(X));
  Tensor s({}, DataType::FLOAT);
  s.mutable_data<float>()[0] = 2.5f;
  EXPECT_EQ(RunAndGet(MakeOperatorDef("Slice", "", {"X"}, {"Y"}), {{"X", s}}),
            std::vector<float>{2.5f});
}

TEST(SliceOpTest, Gradients) {
  GradientChecker checker;
  // Bounds as arguments, odd shape, cut in the middle dim with a negative end.
  checker.Check(SliceDef({0, 2}, {2, -3}), {{"X", RandomTensor({2, 9, 7}, 6)}}, 0, 0);
  // Bounds as inputs, cut in the last dim.
  checker.Check(MakeOperatorDef("Slice", "", {"X", "s", "e"}, {"Y"}),
                {{"X", RandomTensor({3, 7}, 7)},
                 {"s", IntTensor({2}, {0, 1})},
                 {"e", IntTensor({2}, {3, 6})}},
                0, 0);
}

TEST(SliceOpTest, GradientMakerForms) {
  const GradientWrapper dy{"Y_grad", "", ""};
  auto args_form = GetGradientForOp(SliceDef({1}, {2}), {dy});
  ASSERT_EQ(args_form.ops.size(), 1u);
  const OperatorDef& g1 = args_form.ops[0];
  EXPECT_EQ(g1.type(), "SliceGradient");
  EXPECT_EQ(std::vector<std::string>(g1.input().begin(), g1.input().end()),
            (std::vector<std::string>{"X", "Y_grad"}));
  EXPECT_EQ(g1.output(0), "X_grad");
  EXPECT_EQ(g1.arg_size(), 2);  // starts, ends copied
  auto input_form = GetGradientForOp(MakeOperatorDef("Slice", "", {"X", "s", "e"}, {"Y"}), {dy});
  ASSERT_EQ(input_form.ops.size(), 1u);
  const OperatorDef& g3 = input_form.ops[0];
  EXPECT_EQ(std::vector<std::string>(g3.input().begin(), g3.input().end()),
            (std::vector<std::string>{"X", "s", "e", "Y_grad"}));
  ASSERT_EQ(input_form.g_input.size(), 3u);
  EXPECT_TRUE(input_form.g_input[1].IsEmpty());
  EXPECT_TRUE(input_form.g_input[2].IsEmpty());
  // The gradient op runs with index inputs too.
  Workspace ws;
  RunOp(g3,
        {{"X", RandomTensor({2, 4}, 1)},
         {"s", IntTensor({2}, {1, 0})},
         {"e", IntTensor({2}, {2, 4})},
         {"Y_grad", FloatTensor({1, 4}, {1, 2, 3, 4})}},
        &ws);
  EXPECT_EQ(ToFloatVector(ws.GetTensor("X_grad")), (std::vector<float>{0, 0, 0, 0, 1, 2, 3, 4}));
}

TEST(SliceOpTest, Fp16MatchesFp32) {
  CheckFp16MatchesFp32(SliceDef({1, 0}, {3, 5}), {{"X", RandomTensor({4, 5, 3}, 8)}}, {"X"});
  CheckFp16MatchesFp32(MakeOperatorDef("SliceGradient", "", {"X", "dY"}, {"dX"},
                                       {MakeArgument("starts", std::vector<int64_t>{1}),
                                        MakeArgument("ends", std::vector<int64_t>{3})}),
                       {{"X", RandomTensor({4, 5, 3}, 9)}, {"dY", RandomTensor({2, 5, 3}, 10)}},
                       {"X", "dY"});
}

TEST(SliceOpTest, Errors) {
  std::map<std::string, Tensor> in{{"X", RandomTensor({4, 6}, 11)}};
  ExpectError(SliceDef({0, 4}, {4, 2}), in, "start 4 is after end 2 for dim 1");
  ExpectError(SliceDef({0, -8}, {4, 6}), in, "start index -8 for dim 1 (size 6)");
  ExpectError(SliceDef({0, -8}, {4, 6}), in, "at least -7");
  ExpectError(SliceDef({-9}, {4}), in, "start index -9 for dim 0 (size 4)");
  ExpectError(SliceDef({0}, {-6}), in, "end index -6 for dim 0 (size 4)");
  ExpectError(SliceDef({1, 1}, {3, 5}), in, "cut both dim 0 and dim 1");
  ExpectError(SliceDef({0, 0}, {4}), in, "has 2 entries but ends [4] has 1");
  ExpectError(SliceDef({0, 0, 0}, {4, 6, 1}), in, "data has only 2 dims [4, 6]");
  ExpectError(
      MakeOperatorDef("Slice", "", {"X", "s", "e"}, {"Y"},
                      {MakeArgument("starts", std::vector<int64_t>{0})}),
      {{"X", RandomTensor({4, 6}, 11)}, {"s", IntTensor({1}, {0})}, {"e", IntTensor({1}, {2})}},
      "both as arguments and as inputs");
  ExpectError(
      MakeOperatorDef("Slice", "", {"X", "s", "e"}, {"Y"}),
      {{"X", RandomTensor({4, 6}, 11)}, {"s", RandomTensor({1}, 1)}, {"e", IntTensor({1}, {2})}},
      "the starts input 's' must be a 1-D int32 or int64 tensor");
  ExpectError(MakeOperatorDef("SliceGradient", "", {"X", "dY"}, {"dX"},
                              {MakeArgument("starts", std::vector<int64_t>{1}),
                               MakeArgument("ends", std::vector<int64_t>{3})}),
              {{"X", RandomTensor({4, 6}, 11)}, {"dY", RandomTensor({3, 6}, 12)}},
              "dY has dims [3, 6] but the slice of data [4, 6] has dims [2, 6]");
}

TEST(SliceOpTest, SchemaInfersShapeAndCost) {
  const OpSchema* s = OpSchemaRegistry::Schema("Slice");
  ASSERT_NE(s, nullptr);
  std::vector<TensorShape> in{{{4, 10, 3}, DataType::FLOAT16}};
  auto out = s->InferShapes(SliceDef({0, -4}, {4, -1}), in);
  EXPECT_EQ(out[0].dims, (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(out[0].dtype, DataType::FLOAT16);
  EXPECT_DOUBLE_EQ(s->InferCost(SliceDef({0, -4}, {4, -1}), in).bytes_written, 4 * 3 * 3 * 2);
  // With index inputs the values decide the shape.
  auto from_inputs = s->InferShapes(MakeOperatorDef("Slice", "", {"X", "s", "e"}, {"Y"}),
                                    {in[0], {{2}, DataType::INT32}, {{2}, DataType::INT32}});
  EXPECT_TRUE(from_inputs[0].unknown);
  EXPECT_THROW(s->InferShapes(SliceDef({2}, {1}), in), EnforceNotMet);
  const OpSchema* g = OpSchemaRegistry::Schema("SliceGradient");
  ASSERT_NE(g, nullptr);
  auto gout = g->InferShapes(MakeOperatorDef("SliceGradient", "", {"X", "dY"}, {"dX"}),
                             {{{4, 10, 3}, DataType::FLOAT}, {{4, 3, 3}, DataType::FLOAT16}});
  EXPECT_EQ(gout[0].dims, (std::vector<int64_t>{4, 10, 3}));
  EXPECT_EQ(gout[0].dtype, DataType::FLOAT16);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
