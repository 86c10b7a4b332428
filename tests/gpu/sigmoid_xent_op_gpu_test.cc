// SigmoidCrossEntropyWithLogits, WeightedSigmoidCrossEntropyWithLogits and their gradients on
// CUDA against the CPU operators (float and float16 logits, both loss forms), within float
// rounding. Skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(SigmoidXentGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  for (DataType xt : {DataType::FLOAT, DataType::FLOAT16}) {
    for (int trick : {0, 1}) {
      SCOPED_TRACE(std::string(DataTypeName(xt)) + (trick ? " log_D_trick" : ""));
      Tensor x = RandomTensor({6, 9}, 1, -8.f, 8.f);
      if (xt == DataType::FLOAT16) x = ToHalf(x);
      const std::map<std::string, Tensor> in{
          {"X", x}, {"T", RandomTensor({6, 9}, 2, 0.f, 1.f)}, {"dY", RandomTensor({6}, 3)}};
      const std::vector<Argument> args{MakeArgument("log_D_trick", trick)};
      const auto fwd =
          MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"}, {"Y"}, args);
      ExpectCudaClose(RunCpuAndCuda(fwd, in), fwd, 1e-5f);
      const auto grad = MakeOperatorDef("SigmoidCrossEntropyWithLogitsGradient", "",
                                        {"dY", "X", "T"}, {"dX"}, args);
      ExpectCudaClose(RunCpuAndCuda(grad, in), grad, xt == DataType::FLOAT ? 1e-5f : 2e-3f);
    }
  }
}

TEST(SigmoidXentGpuTest, WeightedMatchesCpu) {
  REQUIRE_GPU();
  for (DataType xt : {DataType::FLOAT, DataType::FLOAT16}) {
    SCOPED_TRACE(DataTypeName(xt));
    Tensor x = RandomTensor({7, 5}, 4, -8.f, 8.f);
    if (xt == DataType::FLOAT16) x = ToHalf(x);
    const std::map<std::string, Tensor> in{{"X", x},
                                           {"T", RandomTensor({7, 5}, 5, 0.f, 1.f)},
                                           {"W", RandomTensor({7, 5}, 6, 0.f, 3.f)},
                                           {"dY", RandomTensor({7}, 7)}};
    const auto fwd =
        MakeOperatorDef("WeightedSigmoidCrossEntropyWithLogits", "", {"X", "T", "W"}, {"Y"});
    ExpectCudaClose(RunCpuAndCuda(fwd, in), fwd, 1e-5f);
    const auto grad = MakeOperatorDef("WeightedSigmoidCrossEntropyWithLogitsGradient", "",
                                      {"dY", "X", "T", "W"}, {"dX"});
    ExpectCudaClose(RunCpuAndCuda(grad, in), grad, xt == DataType::FLOAT ? 1e-5f : 2e-3f);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
