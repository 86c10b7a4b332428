// Relu / ReluGradient on CUDA against the CPU operators (float, float16 and bfloat16). Skips
// without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16};

OperatorDef CudaDef(OperatorDef def) {
  def.mutable_device_option()->set_device_type(1);
  return def;
}

TEST(ReluGpuTest, Registered) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "Relu"));
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "ReluGradient"));
}

TEST(ReluGpuTest, ForwardMatchesCpu) {
  REQUIRE_GPU();
  // 4097 elements: more than one block, not a multiple of the block size.
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(MakeOperatorDef("Relu", "", {"X"}, {"Y"}),
                          AsDtype({{"X", RandomTensor({17, 241}, 1)}}, dt));
    DeviceChecker().Check(MakeOperatorDef("Relu", "", {"X"}, {"Y"}),
                          AsDtype({{"X", RandomTensor({2, 3, 7, 9}, 2)}}, dt));
  }
}

TEST(ReluGpuTest, InPlace) {
  REQUIRE_GPU();
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(MakeOperatorDef("Relu", "", {"X"}, {"X"}),
                          AsDtype({{"X", RandomTensor({3, 5, 11}, 3)}}, dt));
  }
}

TEST(ReluGpuTest, GradientMatchesCpu) {
  REQUIRE_GPU();
  // Y holds negative values and exact zeros, like a real Relu output.
  Tensor y = RandomTensor({2, 3, 7, 9}, 4);
  for (int64_t i = 0; i < y.numel(); i += 5) y.mutable_data<float>()[i] = 0.f;
  const Tensor dy = RandomTensor({2, 3, 7, 9}, 5);
  const auto def = MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"});
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    DeviceChecker().Check(def, AsDtype({{"Y", y}, {"dY", dy}}, dt));
  }
  // Mixed dtypes: the output follows dY.
  DeviceChecker().Check(def, {{"Y", ToHalf(y)}, {"dY", dy}});
  DeviceChecker().Check(def, {{"Y", y}, {"dY", ToHalf(dy)}});
  // bfloat16 goes with bfloat16 only.
  ExpectCudaError(def, {{"Y", ToBFloat16(y)}, {"dY", dy}},
                  "ReluGradient on CUDA takes bfloat16 Y and dY together");
  // In place (dY -> dX), as Caffe2 allows.
  DeviceChecker().Check(MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dY"}),
                        AsDtype({{"Y", y}, {"dY", dy}}, DataType::FLOAT16));
}

TEST(ReluGpuTest, EmptyTensor) {
  REQUIRE_GPU();
  DeviceChecker().Check(MakeOperatorDef("Relu", "", {"X"}, {"Y"}),
                        {{"X", RandomTensor({0, 4}, 6)}});
}

TEST(ReluGpuTest, BadInputs) {
  REQUIRE_GPU();
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  ws.CreateTensor("I", gpu)->CopyFrom(IntTensor({2}, {1, 2}));
  ws.CreateTensor("Y", gpu)->CopyFrom(RandomTensor({2, 3}, 7));
  ws.CreateTensor("dY", gpu)->CopyFrom(RandomTensor({3, 2}, 8));
  try {
    CreateOperator(CudaDef(MakeOperatorDef("Relu", "", {"I"}, {"O"})), &ws)->Run(0);
    FAIL() << "int32 input accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
  try {
    CreateOperator(CudaDef(MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"})), &ws)->Run(0);
    FAIL() << "shape mismatch accepted";
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("same shape"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
