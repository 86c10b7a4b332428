// CrossEntropy (soft labels) and MakeTwoClass, with their gradients, on CUDA against the CPU
// operators (float and float16 inputs, rows shorter and longer than a block, a clamped
// probability), within float rounding. Skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(SoftCrossEntropyGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  const auto fwd = MakeOperatorDef("CrossEntropy", "", {"X", "L"}, {"Y"});
  const auto grad = MakeOperatorDef("CrossEntropyGradient", "", {"X", "L", "dY"}, {"dX"});
  for (DataType xt : {DataType::FLOAT, DataType::FLOAT16}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{13, 7}, {3, 1100}, {9}}) {
      SCOPED_TRACE(std::string(DataTypeName(xt)) + " " + DimsString(dims));
      Tensor x = RandomTensor(dims, 1, 0.01f, 1.f);
      x.mutable_data<float>()[1] = 0.f;  // the clamp
      if (xt == DataType::FLOAT16) x = ToHalf(x);
      const int64_t N = dims.size() > 1 ? dims[0] : 1;
      const std::map<std::string, Tensor> in{
          {"X", x}, {"L", RandomTensor(dims, 2, 0.f, 1.f)}, {"dY", RandomTensor({N}, 3)}};
      ExpectCudaClose(RunCpuAndCuda(fwd, in), fwd, 1e-5f);
      ExpectCudaClose(RunCpuAndCuda(grad, in), grad, xt == DataType::FLOAT ? 1e-5f : 2e-3f);
    }
  }
}

TEST(MakeTwoClassGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  const auto fwd = MakeOperatorDef("MakeTwoClass", "", {"X"}, {"Y"});
  const auto grad = MakeOperatorDef("MakeTwoClassGradient", "", {"dY"}, {"dX"});
  for (DataType xt : {DataType::FLOAT, DataType::FLOAT16}) {
    SCOPED_TRACE(DataTypeName(xt));
    Tensor x = RandomTensor({5, 13}, 4, 0.f, 1.f), dy = RandomTensor({5, 13, 2}, 5);
    if (xt == DataType::FLOAT16) {
      x = ToHalf(x);
      dy = ToHalf(dy);
    }
    ExpectCudaClose(RunCpuAndCuda(fwd, {{"X", x}}), fwd, 1e-5f);
    ExpectCudaClose(RunCpuAndCuda(grad, {{"dY", dy}}), grad, 1e-5f);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
