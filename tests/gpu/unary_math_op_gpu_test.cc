// Exp, Log, Sqrt, Abs, Reciprocal, Pow, LeakyRelu, Elu, Max and Min (with their gradient
// operators) on CUDA against the CPU operators: float, float16, mixed types and in place, plus the
// argument and shape errors. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

TEST(UnaryMathGpuTest, Registered) {
  for (const char* type :
       {"Exp", "Log", "Sqrt", "Abs", "AbsGradient", "Reciprocal", "ReciprocalGradient", "Pow",
        "LeakyRelu", "LeakyReluGradient", "Elu", "EluGradient", "Max", "Min", "MaxGradient",
        "MinGradient"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

struct UnaryCase {
  std::string type;
  std::vector<Argument> args;
  float lo, hi;  // input range
};

TEST(UnaryMathGpuTest, ForwardMatchesCpu) {
  REQUIRE_GPU();
  const std::vector<UnaryCase> cases = {
      {"Exp", {}, -5.f, 5.f},
      {"Log", {}, 0.01f, 20.f},
      {"Sqrt", {}, 0.f, 20.f},
      {"Abs", {}, -5.f, 5.f},
      {"Reciprocal", {}, 0.1f, 5.f},
      {"Pow", {MakeArgument("exponent", 2.5f)}, 0.f, 4.f},
      {"Pow", {MakeArgument("exponent", 3.f)}, -3.f, 3.f},
      {"Pow", {MakeArgument("exponent", -1.f)}, 0.2f, 4.f},
      {"LeakyRelu", {}, -4.f, 4.f},
      {"LeakyRelu", {MakeArgument("alpha", 0.3f)}, -4.f, 4.f},
      {"Elu", {}, -4.f, 4.f},
      {"Elu", {MakeArgument("alpha", 1.7f)}, -4.f, 4.f},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.type);
    const Tensor x = RandomTensor({2, 3, 7, 9}, 1, c.lo, c.hi);
    for (DataType dt : kDtypes) {
      DeviceChecker().Check(MakeOperatorDef(c.type, "", {"X"}, {"Y"}, c.args),
                            AsDtype({{"X", x}}, dt));
      if (c.type != "Abs") {
        DeviceChecker().Check(MakeOperatorDef(c.type, "", {"X"}, {"X"}, c.args),
                              AsDtype({{"X", x}}, dt));
      }
    }
  }
  // Reciprocal of negative numbers too, and a shape of several blocks.
  DeviceChecker().Check(MakeOperatorDef("Reciprocal", "", {"X"}, {"Y"}),
                        {{"X", RandomTensorAwayFrom({17, 241}, 2, {0.f}, 0.1f, -5.f, 5.f)}});
}

TEST(UnaryMathGpuTest, GradientsMatchCpu) {
  REQUIRE_GPU();
  const Tensor dy = RandomTensor({2, 3, 7, 9}, 3);
  const std::vector<std::pair<OperatorDef, Tensor>> cases = {
      {MakeOperatorDef("AbsGradient", "", {"T", "dY"}, {"dX"}),
       RandomTensorAwayFrom({2, 3, 7, 9}, 4, {0.f}, 0.01f, -2.f, 2.f)},
      {MakeOperatorDef("ReciprocalGradient", "", {"T", "dY"}, {"dX"}),
       RandomTensor({2, 3, 7, 9}, 5, -3.f, 3.f)},
      {MakeOperatorDef("LeakyReluGradient", "", {"T", "dY"}, {"dX"}),
       RandomTensor({2, 3, 7, 9}, 6, -1.f, 3.f)},
      {MakeOperatorDef("LeakyReluGradient", "", {"T", "dY"}, {"dX"},
                       {MakeArgument("alpha", 0.2f)}),
       RandomTensor({2, 3, 7, 9}, 7, -1.f, 3.f)},
      {MakeOperatorDef("EluGradient", "", {"T", "dY"}, {"dX"}, {MakeArgument("alpha", 1.5f)}),
       RandomTensor({2, 3, 7, 9}, 8, -1.4f, 3.f)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first.type());
    for (DataType dt : kDtypes) {
      DeviceChecker().Check(c.first, AsDtype({{"T", c.second}, {"dY", dy}}, dt));
    }
    // Mixed types, and in place on dY.
    DeviceChecker().Check(c.first, {{"T", ToHalf(c.second)}, {"dY", dy}});
    OperatorDef in_place = c.first;
    in_place.set_output(0, "dY");
    DeviceChecker().Check(in_place, {{"T", c.second}, {"dY", ToHalf(dy)}});
  }
  // AbsGradient at X = 0 passes nothing.
  DeviceChecker().Check(MakeOperatorDef("AbsGradient", "", {"X", "dY"}, {"dX"}),
                        {{"X", FloatTensor({3}, {0.f, -0.f, 1.f})},
                         {"dY", FloatTensor({3}, {2.f, 3.f, 4.f})}});
}

TEST(UnaryMathGpuTest, PowTwoInputsMatchesCpu) {
  REQUIRE_GPU();
  const std::map<std::string, Tensor> in{{"X", RandomTensor({3, 5, 17}, 9, 0.1f, 3.f)},
                                         {"E", RandomTensor({3, 5, 17}, 10, -2.f, 2.f)}};
  for (DataType dt : kDtypes) {
    for (const char* out : {"Y", "X", "E"}) {
      DeviceChecker().Check(MakeOperatorDef("Pow", "", {"X", "E"}, {out}), AsDtype(in, dt));
    }
  }
  // Mixed: Y follows X; in place on an E of the other type.
  DeviceChecker().Check(MakeOperatorDef("Pow", "", {"X", "E"}, {"Y"}),
                        {{"X", ToHalf(in.at("X"))}, {"E", in.at("E")}});
  DeviceChecker().Check(MakeOperatorDef("Pow", "", {"X", "E"}, {"E"}),
                        {{"X", in.at("X")}, {"E", ToHalf(in.at("E"))}});
  DeviceChecker().Check(MakeOperatorDef("Pow", "", {"X", "E"}, {"E"}),
                        {{"X", ToHalf(in.at("X"))}, {"E", in.at("E")}});
}

TEST(UnaryMathGpuTest, MaxMinMatchCpu) {
  REQUIRE_GPU();
  std::map<std::string, Tensor> in;
  for (int i = 0; i < 3; ++i) in["X" + std::to_string(i)] = RandomTensor({3, 5, 17}, 11 + i);
  const Tensor dy = RandomTensor({3, 5, 17}, 14);
  for (const char* type : {"Max", "Min"}) {
    SCOPED_TRACE(type);
    for (DataType dt : kDtypes) {
      DeviceChecker().Check(MakeOperatorDef(type, "", {"X0", "X1", "X2"}, {"Y"}),
                            AsDtype(in, dt));
      DeviceChecker().Check(MakeOperatorDef(type, "", {"X0", "X1", "X2"}, {"X0"}),
                            AsDtype(in, dt));
      DeviceChecker().Check(MakeOperatorDef(type, "", {"X1"}, {"Y"}), AsDtype(in, dt));
      // The gradient, from the CPU forward result (with a tie: X2 = X0).
      std::map<std::string, Tensor> g = AsDtype(in, dt);
      g["X2"].CopyFrom(g.at("X0"));
      Workspace ws;
      RunOp(MakeOperatorDef(type, "", {"X0", "X1", "X2"}, {"Y"}), g, &ws);
      g["Y"].CopyFrom(ws.GetTensor("Y"));
      g["dY"] = dt == DataType::FLOAT16 ? ToHalf(dy) : dy;
      DeviceChecker().Check(MakeOperatorDef(std::string(type) + "Gradient", "",
                                            {"Y", "dY", "X0", "X1", "X2"}, {"d0", "d1", "d2"}),
                            g);
    }
  }
}

TEST(UnaryMathGpuTest, Errors) {
  REQUIRE_GPU();
  ExpectCudaError(MakeOperatorDef("Exp", "", {"X"}, {"Y"}), {{"X", IntTensor({2}, {1, 2})}},
                  "float or float16");
  ExpectCudaError(MakeOperatorDef("AbsGradient", "", {"X", "dY"}, {"dX"}),
                  {{"X", RandomTensor({2, 3}, 1)}, {"dY", RandomTensor({3, 2}, 2)}},
                  "X and dY must have the same shape");
  ExpectCudaError(MakeOperatorDef("Pow", "", {"X"}, {"Y"}), {{"X", RandomTensor({2}, 1)}},
                  "needs the `exponent` argument");
  ExpectCudaError(MakeOperatorDef("Pow", "", {"X", "E"}, {"Y"}),
                  {{"X", RandomTensor({2, 3}, 1)}, {"E", RandomTensor({3}, 2)}},
                  "broadcasting is not supported");
  ExpectCudaError(MakeOperatorDef("LeakyReluGradient", "", {"Y", "dY"}, {"dX"},
                                  {MakeArgument("alpha", -1.f)}),
                  {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({2}, 2)}}, "alpha >= 0");
  ExpectCudaError(MakeOperatorDef("EluGradient", "", {"Y", "dY"}, {"dX"},
                                  {MakeArgument("alpha", -1.f)}),
                  {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({2}, 2)}}, "alpha > 0");
  ExpectCudaError(MakeOperatorDef("Max", "", {"X0", "X1"}, {"Y"}),
                  {{"X0", RandomTensor({2}, 1)}, {"X1", ToHalf(RandomTensor({2}, 2))}},
                  "all inputs must have one shape and type");
  ExpectCudaError(MakeOperatorDef("MinGradient", "", {"Y", "dY", "X0"}, {"dX0"}),
                  {{"Y", RandomTensor({2}, 1)}, {"dY", RandomTensor({2}, 2)},
                   {"X0", RandomTensor({3}, 3)}},
                  "(forward input X1) is");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
