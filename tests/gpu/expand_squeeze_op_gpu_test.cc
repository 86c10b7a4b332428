// ExpandDims / Squeeze on CUDA against the CPU operators (any data type, in place too). Device
// tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(ExpandSqueezeGpuTest, MatchesCpu) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "ExpandDims"));
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "Squeeze"));
  REQUIRE_GPU();
  const Tensor x = RandomTensor({3, 1, 5}, 1);
  for (const Tensor& t :
       {x, ToHalf(x), CastTensor<int32_t>(x, 100.f), CastTensor<int64_t>(x, 100.f)}) {
    SCOPED_TRACE(DataTypeName(t.dtype()));
    for (const char* out : {"Y", "X"}) {
      ExpectCudaIdentical(MakeOperatorDef("ExpandDims", "", {"X"}, {out},
                                          {MakeArgument("dims", std::vector<int>{0, 4})}),
                          {{"X", t}});
      ExpectCudaIdentical(
          MakeOperatorDef("Squeeze", "", {"X"}, {out}, {MakeArgument("dims", std::vector<int>{1})}),
          {{"X", t}});
    }
  }
  ExpectCudaError(
      MakeOperatorDef("Squeeze", "", {"X"}, {"Y"}, {MakeArgument("dims", std::vector<int>{0})}),
      {{"X", x}}, "only size-1 dims can be squeezed");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
