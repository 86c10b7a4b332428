// Element-wise operators on CUDA against the CPU operators: Add/Sub/Mul/Div (legacy and NumPy
// broadcast, float, float16, mixed, double and integer types), DivGradient, SumReduceLike,
// Negative,
// Sigmoid/Tanh/Clip with their gradients, Sqr, Scale, Sum, WeightedSum(+Gradient) and
// SquaredL2Distance(+Gradient). Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/broadcast_cases.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

TEST(ElementwiseGpuTest, Registered) {
  for (const char* type :
       {"Add", "Sub", "Mul", "Div", "DivGradient", "SumReduceLike", "Negative", "Sigmoid",
        "SigmoidGradient", "Tanh", "TanhGradient", "Clip", "ClipGradient", "Sqr", "Scale", "Sum",
        "WeightedSum", "WeightedSumGradient", "SquaredL2Distance", "SquaredL2DistanceGradient"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

// (A dims, B dims, broadcast args) cases of the legacy broadcast, then of the NumPy broadcast.
struct BroadcastCase {
  std::vector<int64_t> a, b;
  std::vector<Argument> args;
};

std::vector<BroadcastCase> BroadcastCases() {
  const Argument bc = MakeArgument("broadcast", 1);
  std::vector<BroadcastCase> cases{
      {{2, 3, 7, 9}, {2, 3, 7, 9}, {}},                                    // same shape
      {{17, 241}, {17, 241}, {}},                                          // several blocks
      {{2, 3, 7, 9}, {7, 9}, {bc}},                                        // trailing
      {{2, 3, 7, 9}, {3}, {bc, MakeArgument("axis", 1)}},                  // channel
      {{2, 3, 7, 9}, {3, 7}, {bc, MakeArgument("axis", 1)}},               // middle span
      {{2, 3, 7, 9}, {1, 3, 1, 1}, {bc, MakeArgument("axis", 0)}},         // size-1 ends
      {{2, 3, 7, 9}, {3}, {bc, MakeArgument("axis_str", "C")}},            // axis_str
      {{2, 3, 7, 9}, {9}, {bc, MakeArgument("axis_str", "C"), MakeArgument("order", "NHWC")}},
      {{2, 3, 7, 9}, {1}, {bc}},                                           // scalar
  };
  for (const auto& p : NumpyBroadcastPairs()) cases.push_back({p.a, p.b, {}});
  return cases;
}

TEST(ElementwiseGpuTest, BinaryOpsMatchCpu) {
  REQUIRE_GPU();
  for (const char* type : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& c : BroadcastCases()) {
      SCOPED_TRACE(std::string(type) + " A " + DimsString(c.a) + " B " + DimsString(c.b));
      const auto def = MakeOperatorDef(type, "", {"A", "B"}, {"C"}, c.args);
      // B away from 0 so that Div is well conditioned.
      std::map<std::string, Tensor> in{{"A", RandomTensor(c.a, 1)},
                                       {"B", RandomTensorAwayFrom(c.b, 2, {0.f}, 0.25f)}};
      for (DataType dt : kDtypes) DeviceChecker().Check(def, AsDtype(in, dt));
      // Mixed: float16 A with float B and the reverse (C follows A).
      DeviceChecker().Check(def, {{"A", ToHalf(in["A"])}, {"B", in["B"]}});
      DeviceChecker().Check(def, {{"A", in["A"]}, {"B", ToHalf(in["B"])}});
    }
  }
}

TEST(ElementwiseGpuTest, BinaryOpsInPlace) {
  REQUIRE_GPU();
  const Tensor a = RandomTensor({3, 5, 11}, 3);
  const Tensor b = RandomTensorAwayFrom({3, 5, 11}, 4, {0.f}, 0.25f);
  for (DataType dt : kDtypes) {
    DeviceChecker().Check(MakeOperatorDef("Mul", "", {"A", "B"}, {"A"}),
                          AsDtype({{"A", a}, {"B", b}}, dt));
    DeviceChecker().Check(MakeOperatorDef("Add", "", {"A", "B"}, {"B"}),
                          AsDtype({{"A", a}, {"B", b}}, dt));
    DeviceChecker().Check(MakeOperatorDef("Sub", "", {"A", "B"}, {"A"},
                                          {MakeArgument("broadcast", 1)}),
                          AsDtype({{"A", a}, {"B", RandomTensor({11}, 5)}}, dt));
    // NumPy broadcast: C in place on the input of C's shape.
    DeviceChecker().Check(MakeOperatorDef("Mul", "", {"A", "B"}, {"B"}),
                          AsDtype({{"A", RandomTensor({3, 1, 11}, 6)}, {"B", b}}, dt));
  }
}

TEST(ElementwiseGpuTest, BinaryOpsIntegerAndDouble) {
  REQUIRE_GPU();
  const Tensor a = RandomTensor({4, 6, 5}, 6, -50.f, 50.f);
  const Tensor b = RandomTensorAwayFrom({6, 5}, 7, {0.f}, 1.5f, -9.f, 9.f);
  const Argument bc = MakeArgument("broadcast", 1);
  for (const char* type : {"Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(type);
    const auto def = MakeOperatorDef(type, "", {"A", "B"}, {"C"}, {bc});
    ExpectCudaIdentical(def, {{"A", CastTensor<int32_t>(a)}, {"B", CastTensor<int32_t>(b)}});
    ExpectCudaIdentical(def, {{"A", CastTensor<int64_t>(a)}, {"B", CastTensor<int64_t>(b)}});
    // NumPy broadcast (no broadcast argument): [4, 6, 5] with [4, 1, 5].
    const auto numpy = MakeOperatorDef(type, "", {"A", "B"}, {"C"});
    const Tensor b3 = RandomTensorAwayFrom({4, 1, 5}, 8, {0.f}, 1.5f, -9.f, 9.f);
    ExpectCudaIdentical(numpy, {{"A", CastTensor<int32_t>(a)}, {"B", CastTensor<int32_t>(b3)}});
    ExpectCudaIdentical(numpy, {{"A", CastTensor<int64_t>(a)}, {"B", CastTensor<int64_t>(b3)}});
    const CpuCudaOutputs r =
        RunCpuAndCuda(def, {{"A", CastTensor<double>(a)}, {"B", CastTensor<double>(b, 0.37f)}});
    ASSERT_EQ(r.cuda[0].dtype(), DataType::DOUBLE);
    for (int64_t i = 0; i < r.cpu[0].numel(); ++i) {
      EXPECT_NEAR(r.cuda[0].data<double>()[i], r.cpu[0].data<double>()[i], 1e-12) << i;
    }
  }
}

TEST(ElementwiseGpuTest, BinaryOpErrors) {
  REQUIRE_GPU();
  ExpectCudaError(MakeOperatorDef("Div", "", {"A", "B"}, {"C"}),
                  {{"A", IntTensor({3}, {1, 2, 3})}, {"B", IntTensor({3}, {1, 0, 2})}},
                  "has a zero at element 1");
  ExpectCudaError(MakeOperatorDef("Add", "", {"A", "B"}, {"C"}),
                  {{"A", RandomTensor({2, 3}, 1)}, {"B", RandomTensor({2}, 2)}},
                  "do not broadcast");
  ExpectCudaError(MakeOperatorDef("Add", "", {"A", "B"}, {"A"}),
                  {{"A", RandomTensor({2, 1}, 1)}, {"B", RandomTensor({3}, 2)}},
                  "in place needs an input of the output's shape");
  ExpectCudaError(MakeOperatorDef("Div", "", {"A", "B"}, {"C"}),
                  {{"A", IntTensor({2, 1}, {1, 2})}, {"B", IntTensor({3}, {1, 2, 0})}},
                  "has a zero at element 2");
  ExpectCudaError(MakeOperatorDef("Add", "", {"A", "B"}, {"C"}),
                  {{"A", IntTensor({2}, {1, 2})}, {"B", RandomTensor({2}, 2)}},
                  "must have the same type");
  ExpectCudaError(MakeOperatorDef("Mul", "", {"A", "B"}, {"C"}, {MakeArgument("broadcast", 1)}),
                  {{"A", RandomTensor({2, 3}, 1)}, {"B", RandomTensor({4}, 2)}},
                  "cannot broadcast");
}

TEST(ElementwiseGpuTest, DivGradientMatchesCpu) {
  REQUIRE_GPU();
  const Tensor b = RandomTensorAwayFrom({2, 3, 7, 9}, 8, {0.f}, 0.25f);
  const Tensor c = RandomTensor({2, 3, 7, 9}, 9);
  const Tensor dc = RandomTensor({2, 3, 7, 9}, 10);
  const auto def = MakeOperatorDef("DivGradient", "", {"B", "C", "dC"}, {"dA", "dB"});
  for (DataType dt : kDtypes) {
    DeviceChecker().Check(def, AsDtype({{"B", b}, {"C", c}, {"dC", dc}}, dt));
  }
  // dA follows dC's dtype, dB follows B's.
  DeviceChecker().Check(def, {{"B", ToHalf(b)}, {"C", c}, {"dC", dc}});
  DeviceChecker().Check(def, {{"B", b}, {"C", ToHalf(c)}, {"dC", ToHalf(dc)}});
}

TEST(ElementwiseGpuTest, SumReduceLikeMatchesCpu) {
  REQUIRE_GPU();
  const struct {
    std::vector<int64_t> a, b;
    std::vector<Argument> args;
  } cases[] = {
      {{2, 3, 7, 9}, {7, 9}, {}},
      {{2, 3, 7, 9}, {3}, {MakeArgument("axis", 1)}},
      {{2, 3, 7, 9}, {3, 7}, {MakeArgument("axis", 1)}},
      {{2, 3, 7, 9}, {1}, {}},
      {{64, 300}, {300}, {}},   // long sums over rows
      {{4, 2000}, {4, 1}, {MakeArgument("axis", 0)}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("A " + DimsString(c.a) + " B " + DimsString(c.b));
    const auto def = MakeOperatorDef("SumReduceLike", "", {"A", "B"}, {"C"}, c.args);
    const std::map<std::string, Tensor> in{{"A", RandomTensor(c.a, 11)},
                                           {"B", RandomTensor(c.b, 12)}};
    DeviceChecker().Check(def, in);
    DeviceCheckOptions opts16;
    opts16.atol16 = 3e-2f;  // sums of many terms rounded once to float16
    DeviceChecker(opts16).Check(def, AsDtype(in, DataType::FLOAT16));
  }
}

TEST(ElementwiseGpuTest, NegativeAllTypes) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({5, 13, 3}, 13, -20.f, 20.f);
  const auto def = MakeOperatorDef("Negative", "", {"X"}, {"Y"});
  ExpectCudaIdentical(def, {{"X", x}});
  ExpectCudaIdentical(def, {{"X", ToHalf(x)}});
  ExpectCudaIdentical(def, {{"X", CastTensor<double>(x)}});
  ExpectCudaIdentical(def, {{"X", CastTensor<int32_t>(x)}});
  ExpectCudaIdentical(def, {{"X", CastTensor<int64_t>(x)}});
  ExpectCudaIdentical(MakeOperatorDef("Negative", "", {"X"}, {"X"}), {{"X", ToHalf(x)}});
}

TEST(ElementwiseGpuTest, ActivationsMatchCpu) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({2, 3, 7, 9}, 14, -4.f, 4.f);
  const std::vector<std::pair<std::string, std::vector<Argument>>> ops = {
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"Sqr", {}},
      {"Scale", {MakeArgument("scale", -2.5f)}},
      {"Clip", {MakeArgument("min", -0.5f), MakeArgument("max", 1.25f)}},
      {"Clip", {MakeArgument("max", 0.f)}},
      {"Clip", {}},
  };
  for (const auto& op : ops) {
    SCOPED_TRACE(op.first);
    for (DataType dt : kDtypes) {
      DeviceChecker().Check(MakeOperatorDef(op.first, "", {"X"}, {"Y"}, op.second),
                            AsDtype({{"X", x}}, dt));
      DeviceChecker().Check(MakeOperatorDef(op.first, "", {"X"}, {"X"}, op.second),
                            AsDtype({{"X", x}}, dt));
    }
  }
}

TEST(ElementwiseGpuTest, ActivationGradientsMatchCpu) {
  REQUIRE_GPU();
  const Tensor dy = RandomTensor({2, 3, 7, 9}, 15);
  const std::vector<std::pair<std::string, Tensor>> cases = {
      {"SigmoidGradient", RandomTensor({2, 3, 7, 9}, 16, 0.f, 1.f)},
      {"TanhGradient", RandomTensor({2, 3, 7, 9}, 17)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    const auto def = MakeOperatorDef(c.first, "", {"Y", "dY"}, {"dX"});
    for (DataType dt : kDtypes) {
      DeviceChecker().Check(def, AsDtype({{"Y", c.second}, {"dY", dy}}, dt));
    }
    DeviceChecker().Check(def, {{"Y", ToHalf(c.second)}, {"dY", dy}});
    DeviceChecker().Check(MakeOperatorDef(c.first, "", {"Y", "dY"}, {"dY"}),
                          {{"Y", c.second}, {"dY", ToHalf(dy)}});
  }
  // ClipGradient: Y exactly at the bounds passes no gradient.
  Tensor y = RandomTensor({2, 3, 7, 9}, 18);
  for (int64_t i = 0; i < y.numel(); i += 4) y.mutable_data<float>()[i] = (i % 8) ? 0.5f : -0.5f;
  const auto clip = MakeOperatorDef("ClipGradient", "", {"Y", "dY"}, {"dX"},
                                    {MakeArgument("min", -0.5f), MakeArgument("max", 0.5f)});
  for (DataType dt : kDtypes) DeviceChecker().Check(clip, AsDtype({{"Y", y}, {"dY", dy}}, dt));
}

TEST(ElementwiseGpuTest, ActivationErrors) {
  REQUIRE_GPU();
  ExpectCudaError(MakeOperatorDef("Sigmoid", "", {"X"}, {"Y"}), {{"X", IntTensor({2}, {1, 2})}},
                  "int32");
  ExpectCudaError(MakeOperatorDef("TanhGradient", "", {"Y", "dY"}, {"dX"}),
                  {{"Y", RandomTensor({2, 3}, 1)}, {"dY", RandomTensor({3, 2}, 2)}}, "same shape");
  ExpectCudaError(MakeOperatorDef("Clip", "", {"X"}, {"Y"},
                                  {MakeArgument("min", 1.f), MakeArgument("max", 0.f)}),
                  {{"X", RandomTensor({2}, 1)}}, "min <= max");
}

TEST(ElementwiseGpuTest, SumMatchesCpu) {
  REQUIRE_GPU();
  std::map<std::string, Tensor> in;
  for (int i = 0; i < 4; ++i) in["X" + std::to_string(i)] = RandomTensor({3, 5, 17}, 20 + i);
  for (DataType dt : kDtypes) {
    DeviceChecker().Check(MakeOperatorDef("Sum", "", {"X0", "X1", "X2", "X3"}, {"Y"}),
                          AsDtype(in, dt));
    DeviceChecker().Check(MakeOperatorDef("Sum", "", {"X0", "X1", "X2"}, {"X0"}),
                          AsDtype(in, dt));
    DeviceChecker().Check(MakeOperatorDef("Sum", "", {"X1"}, {"Y"}), AsDtype(in, dt));
  }
  const Tensor a = RandomTensor({4, 9}, 30, -100.f, 100.f);
  const Tensor b = RandomTensor({4, 9}, 31, -100.f, 100.f);
  const auto def = MakeOperatorDef("Sum", "", {"A", "B", "A"}, {"Y"});
  ExpectCudaIdentical(def, {{"A", CastTensor<int32_t>(a)}, {"B", CastTensor<int32_t>(b)}});
  ExpectCudaIdentical(def, {{"A", CastTensor<int64_t>(a)}, {"B", CastTensor<int64_t>(b)}});
  ExpectCudaIdentical(def, {{"A", CastTensor<double>(a)}, {"B", CastTensor<double>(b)}});
  ExpectCudaError(def, {{"A", a}, {"B", ToHalf(b)}}, "all inputs must match");
}

TEST(ElementwiseGpuTest, WeightedSumMatchesCpu) {
  REQUIRE_GPU();
  const std::map<std::string, Tensor> in{{"X0", RandomTensor({3, 5, 17}, 40)},
                                         {"w0", FloatTensor({1}, {0.75f})},
                                         {"X1", RandomTensor({3, 5, 17}, 41)},
                                         {"w1", FloatTensor({}, {-1.5f})},
                                         {"X2", RandomTensor({3, 5, 17}, 42)},
                                         {"w2", FloatTensor({1}, {2.f})}};
  const std::vector<std::string> names{"X0", "w0", "X1", "w1", "X2", "w2"};
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(MakeOperatorDef("WeightedSum", "", names, {"Y"}), AsDtype(in, dt));
    // In place on X0 (the optimizers' use); X0 also as a later term.
    DeviceChecker().Check(MakeOperatorDef("WeightedSum", "", names, {"X0"}), AsDtype(in, dt));
    DeviceChecker().Check(MakeOperatorDef("WeightedSum", "", {"X0", "w0", "X0", "w1"}, {"Y"}),
                          AsDtype(in, dt));
  }
  // float16 data with float weights.
  std::map<std::string, Tensor> mixed = AsDtype(in, DataType::FLOAT16);
  mixed["w0"] = in.at("w0");
  DeviceChecker().Check(MakeOperatorDef("WeightedSum", "", names, {"Y"}), mixed);
  ExpectCudaError(MakeOperatorDef("WeightedSum", "", {"X0", "w0"}, {"Y"}),
                  {{"X0", in.at("X0")}, {"w0", FloatTensor({2}, {1.f, 2.f})}},
                  "exactly one element");
}

TEST(ElementwiseGpuTest, WeightedSumGradientMatchesCpu) {
  REQUIRE_GPU();
  const std::map<std::string, Tensor> in{{"dY", RandomTensor({4, 7, 9}, 50)},
                                         {"X0", RandomTensor({4, 7, 9}, 51)},
                                         {"w0", FloatTensor({1}, {0.5f})},
                                         {"X1", RandomTensor({4, 7, 9}, 52)},
                                         {"w1", FloatTensor({1}, {-3.f})}};
  const std::vector<std::string> inputs{"dY", "X0", "w0", "X1", "w1"};
  DeviceCheckOptions opts;
  opts.atol16 = 3e-2f;  // dw is a sum of 252 products rounded once to float16
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(MakeOperatorDef("WeightedSumGradient", "", inputs, {"dX0", "dX1"}),
                          AsDtype(in, dt));
    DeviceChecker(opts).Check(
        MakeOperatorDef("WeightedSumGradient", "", inputs, {"dX0", "dX1", "dw0", "dw1"}),
        AsDtype(in, dt));
  }
}

TEST(ElementwiseGpuTest, SquaredL2DistanceMatchesCpu) {
  REQUIRE_GPU();
  for (auto dims : {std::vector<int64_t>{5, 3, 7}, std::vector<int64_t>{3, 1000},
                    std::vector<int64_t>{2000, 3}, std::vector<int64_t>{6}}) {
    SCOPED_TRACE(DimsString(dims));
    const std::map<std::string, Tensor> in{{"X", RandomTensor(dims, 60)},
                                           {"Y", RandomTensor(dims, 61)},
                                           {"dD", RandomTensor({dims[0]}, 62)}};
    for (DataType dt : kDtypes) {
      auto typed = AsDtype(in, dt);
      typed["dD"] = in.at("dD");
      DeviceChecker().Check(MakeOperatorDef("SquaredL2Distance", "", {"X", "Y"}, {"D"}), typed);
      DeviceChecker().Check(
          MakeOperatorDef("SquaredL2DistanceGradient", "", {"X", "Y", "dD"}, {"dX", "dY"}), typed);
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
