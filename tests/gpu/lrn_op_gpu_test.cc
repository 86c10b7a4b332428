// LRN / LRNGradient on CUDA against the CPU operators: float and float16, NCHW and NHWC, odd and
// even window sizes, both gradient forms and mixed input dtypes. Skips without a GPU.
#include <gtest/gtest.h>

#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

std::vector<Argument> Args(int size, bool nhwc) {
  return {MakeArgument("size", size), MakeArgument("alpha", 0.3f), MakeArgument("beta", 0.75f),
          MakeArgument("bias", 1.5f), MakeArgument("order", std::string(nhwc ? "NHWC" : "NCHW"))};
}

TEST(LrnGpuTest, Registered) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "LRN"));
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "LRNGradient"));
}

TEST(LrnGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  for (bool nhwc : {false, true}) {
    // 3 * 7 * 13 * 11 elements: several blocks, not a multiple of the block size.
    const std::vector<int64_t> dims =
        nhwc ? std::vector<int64_t>{3, 13, 11, 7} : std::vector<int64_t>{3, 7, 13, 11};
    const Tensor x = RandomTensor(dims, 1, -2.f, 2.f);
    for (int size : {1, 4, 5}) {
      Workspace ws;
      RunOp(MakeOperatorDef("LRN", "", {"X"}, {"Y", "scale"}, Args(size, nhwc)), {{"X", x}}, &ws);
      Tensor y, scale;
      y.CopyFrom(ws.GetTensor("Y"));
      scale.CopyFrom(ws.GetTensor("scale"));
      const std::map<std::string, Tensor> in{
          {"X", x}, {"Y", y}, {"scale", scale}, {"dY", RandomTensor(dims, 2)}};
      for (DataType dt : kDtypes) {
        SCOPED_TRACE(MakeString(nhwc ? "NHWC" : "NCHW", " size ", size, " ", DataTypeName(dt)));
        const auto data = AsDtype(in, dt);
        DeviceChecker().Check(MakeOperatorDef("LRN", "", {"X"}, {"Y", "scale"}, Args(size, nhwc)),
                              data);
        DeviceChecker().Check(MakeOperatorDef("LRN", "", {"X"}, {"Y"}, Args(size, nhwc)), data);
        DeviceChecker().Check(
            MakeOperatorDef("LRNGradient", "", {"X", "Y", "dY"}, {"dX"}, Args(size, nhwc)), data);
        DeviceChecker().Check(
            MakeOperatorDef("LRNGradient", "", {"X", "Y", "scale", "dY"}, {"dX"}, Args(size, nhwc)),
            data);
      }
      // Mixed dtypes: float16 X with float dY; dX follows X.
      DeviceChecker().Check(
          MakeOperatorDef("LRNGradient", "", {"X", "Y", "dY"}, {"dX"}, Args(size, nhwc)),
          {{"X", ToHalf(x)}, {"Y", ToHalf(y)}, {"dY", in.at("dY")}});
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
