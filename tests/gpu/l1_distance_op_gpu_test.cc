// L1Distance and its gradient on CUDA against the CPU operators (float and float16 inputs, rows
// shorter and longer than a block, an element in the dead zone), within float rounding. Skip
// without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(L1DistanceGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  const auto fwd = MakeOperatorDef("L1Distance", "", {"X", "Y"}, {"Z"});
  const auto grad = MakeOperatorDef("L1DistanceGradient", "", {"X", "Y", "dZ"}, {"dX", "dY"});
  for (DataType xt : {DataType::FLOAT, DataType::FLOAT16}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{13, 7}, {3, 1100}, {5, 2, 3}}) {
      SCOPED_TRACE(std::string(DataTypeName(xt)) + " " + DimsString(dims));
      Tensor x = RandomTensor(dims, 1, -2.f, 2.f), y = RandomTensor(dims, 2, -2.f, 2.f);
      x.mutable_data<float>()[0] = y.data<float>()[0];
      if (xt == DataType::FLOAT16) {
        x = ToHalf(x);
        y = ToHalf(y);
      }
      const std::map<std::string, Tensor> in{
          {"X", x}, {"Y", y}, {"dZ", RandomTensor({dims[0]}, 3)}};
      ExpectCudaClose(RunCpuAndCuda(fwd, in), fwd, 1e-5f);
      ExpectCudaClose(RunCpuAndCuda(grad, in), grad, 1e-5f);  // +-dZ exactly, in either type
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
