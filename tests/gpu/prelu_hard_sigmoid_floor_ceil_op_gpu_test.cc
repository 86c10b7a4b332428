// PRelu(+PReluGradient), HardSigmoid(+HardSigmoidGradient), Floor and Ceil on CUDA against the CPU
// operators: float, float16, mixed types, NCHW / NHWC, shared / per-channel slopes, in place, and
// the shape errors. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

TEST(PReluHardSigmoidFloorCeilGpuTest, Registered) {
  for (const char* type :
       {"PRelu", "PReluGradient", "HardSigmoid", "HardSigmoidGradient", "Floor", "Ceil"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

Argument Order(const char* order) { return MakeArgument("order", std::string(order)); }

TEST(PReluHardSigmoidFloorCeilGpuTest, PReluMatchesCpu) {
  REQUIRE_GPU();
  // dSlope sums a channel in float on CUDA and in double on the CPU.
  DeviceCheckOptions opts;
  opts.atol = 1e-3f;
  struct Case {
    const char* order;
    std::vector<int64_t> dims;
    int64_t slopes;
  };
  const std::vector<Case> cases = {
      {"NCHW", {2, 3, 7, 9}, 3}, {"NCHW", {2, 3, 7, 9}, 1}, {"NHWC", {2, 7, 9, 5}, 5},
      {"NHWC", {3, 5}, 1},       {"NCHW", {17, 241}, 241},  {"NCHW", {3, 13, 1000}, 13},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.order) + " slopes " + std::to_string(c.slopes));
    const Tensor x = RandomTensor(c.dims, 1, -3.f, 3.f);
    const Tensor s = RandomTensor({c.slopes}, 2, -1.f, 1.f);
    const Tensor dy = RandomTensor(c.dims, 3);
    const std::vector<Argument> args{Order(c.order)};
    for (DataType dt : kDtypes) {
      DeviceChecker().Check(MakeOperatorDef("PRelu", "", {"X", "S"}, {"Y"}, args),
                            AsDtype({{"X", x}, {"S", s}}, dt));
      DeviceChecker().Check(MakeOperatorDef("PRelu", "", {"X", "S"}, {"X"}, args),
                            AsDtype({{"X", x}, {"S", s}}, dt));
      DeviceChecker(opts).Check(
          MakeOperatorDef("PReluGradient", "", {"Y", "dY", "X", "S"}, {"dX", "dS"}, args),
          AsDtype({{"Y", x}, {"dY", dy}, {"X", x}, {"S", s}}, dt));
    }
    // Mixed types.
    DeviceChecker().Check(MakeOperatorDef("PRelu", "", {"X", "S"}, {"Y"}, args),
                          {{"X", ToHalf(x)}, {"S", s}});
    DeviceChecker(opts).Check(
        MakeOperatorDef("PReluGradient", "", {"Y", "dY", "X", "S"}, {"dX", "dS"}, args),
        {{"Y", x}, {"dY", ToHalf(dy)}, {"X", x}, {"S", s}});
  }
}

TEST(PReluHardSigmoidFloorCeilGpuTest, PReluErrors) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({2, 3, 5}, 4);
  ExpectCudaError(MakeOperatorDef("PRelu", "", {"X", "S"}, {"Y"}),
                  {{"X", x}, {"S", RandomTensor({5}, 5)}},
                  "PRelu: Slope must have 1 value or one per channel (3 channels in X [2, 3, 5]");
  ExpectCudaError(MakeOperatorDef("PReluGradient", "", {"Y", "dY", "X", "S"}, {"dX", "dS"}),
                  {{"Y", x}, {"dY", RandomTensor({30}, 6)}, {"X", x}, {"S", RandomTensor({3}, 5)}},
                  "PReluGradient: Y, dY and X must have the same shape");
}

TEST(PReluHardSigmoidFloorCeilGpuTest, UnaryMatchCpu) {
  REQUIRE_GPU();
  const std::vector<std::pair<std::string, std::vector<Argument>>> cases = {
      {"HardSigmoid", {}},
      {"HardSigmoid", {MakeArgument("alpha", 0.7f), MakeArgument("beta", 0.1f)}},
      {"Floor", {}},
      {"Ceil", {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    const Tensor x = RandomTensor({2, 3, 7, 9}, 7, -5.f, 5.f);
    for (DataType dt : kDtypes) {
      for (const char* out : {"Y", "X"}) {
        DeviceChecker().Check(MakeOperatorDef(c.first, "", {"X"}, {out}, c.second),
                              AsDtype({{"X", x}}, dt));
      }
    }
  }
  const Tensor y = RandomTensor({2, 3, 7, 9}, 8, -0.3f, 1.3f);
  const Tensor dy = RandomTensor({2, 3, 7, 9}, 9);
  const OperatorDef grad = MakeOperatorDef("HardSigmoidGradient", "", {"Y", "dY"}, {"dX"},
                                           {MakeArgument("alpha", 0.3f)});
  for (DataType dt : kDtypes) DeviceChecker().Check(grad, AsDtype({{"Y", y}, {"dY", dy}}, dt));
  OperatorDef in_place = grad;
  in_place.set_output(0, "dY");
  DeviceChecker().Check(in_place, {{"Y", ToHalf(y)}, {"dY", dy}});
  ExpectCudaError(grad, {{"Y", RandomTensor({2, 3}, 1)}, {"dY", RandomTensor({6}, 2)}},
                  "Y and dY must have the same shape, got [2, 3] and [6]");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
