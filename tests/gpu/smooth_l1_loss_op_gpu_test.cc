// SmoothL1Loss and its gradient on CUDA against the CPU operators (float and float16 inputs,
// several beta, more elements than one block's threads, an empty batch), within float rounding.
// Skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(SmoothL1LossGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  for (DataType t : {DataType::FLOAT, DataType::FLOAT16}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{13, 4}, {64, 81}, {0, 4}}) {
      for (float beta : {1.f, 0.2f}) {
        SCOPED_TRACE(std::string(DataTypeName(t)) + " " + DimsString(dims) + " beta " +
                     std::to_string(beta));
        std::map<std::string, Tensor> in{{"Y_hat", RandomTensor(dims, 1, -2.f, 2.f)},
                                         {"Y", RandomTensor(dims, 2, -2.f, 2.f)},
                                         {"A_in", RandomTensor(dims, 3, 0.f, 2.f)},
                                         {"A_out", RandomTensor(dims, 4, 0.f, 2.f)}};
        if (t == DataType::FLOAT16) {
          for (auto& kv : in) kv.second = ToHalf(kv.second);
        }
        in["dL"] = FloatTensor({1}, {1.5f});
        const std::vector<Argument> args{MakeArgument("beta", beta), MakeArgument("scale", 0.5f)};
        const auto fwd =
            MakeOperatorDef("SmoothL1Loss", "", {"Y_hat", "Y", "A_in", "A_out"}, {"L"}, args);
        ExpectCudaClose(RunCpuAndCuda(fwd, in), fwd, 1e-5f);
        const auto grad = MakeOperatorDef("SmoothL1LossGradient", "",
                                          {"Y_hat", "Y", "A_in", "A_out", "dL"}, {"dY_hat"}, args);
        ExpectCudaClose(RunCpuAndCuda(grad, in), grad, t == DataType::FLOAT ? 1e-5f : 2e-3f);
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
