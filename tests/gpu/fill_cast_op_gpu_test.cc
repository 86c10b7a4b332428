// Fill operators and Cast on CUDA against the CPU operators. The random fills draw from the same
// host generator as the CPU ones, so with one random_seed both devices give identical tensors.
// Device tests skip without a GPU.
#include <cstring>

#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

TEST(FillGpuTest, Registered) {
  for (const char* type :
       {"ConstantFill", "UniformFill", "UniformIntFill", "GaussianFill", "XavierFill", "MSRAFill",
        "GivenTensorFill", "GivenTensorIntFill", "GivenTensorInt64Fill", "GivenTensorDoubleFill",
        "GivenTensorBoolFill", "Cast", "FloatToBFloat16", "BFloat16ToFloat"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

OperatorDef Seeded(OperatorDef def, uint32_t seed) {
  def.mutable_device_option()->set_random_seed(seed);
  return def;
}

TEST(FillGpuTest, ConstantFillAllTypes) {
  REQUIRE_GPU();
  const Argument shape = MakeArgument("shape", std::vector<int64_t>{3, 700});
  const std::vector<std::pair<std::string, Argument>> cases = {
      {"float", MakeArgument("value", 2.5f)},   {"float16", MakeArgument("value", 0.1f)},
      {"double", MakeArgument("value", -1.25f)}, {"int32", MakeArgument("value", -7)},
      {"int64", MakeArgument("value", int64_t{1} << 40)}, {"int8", MakeArgument("value", -3)},
      {"int16", MakeArgument("value", 300)},    {"uint8", MakeArgument("value", 200)},
      {"uint16", MakeArgument("value", 60000)}, {"bool", MakeArgument("value", 1)},
      {"bfloat16", MakeArgument("value", 0.1f)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    ExpectCudaIdentical(MakeOperatorDef("ConstantFill", "", {}, {"Y"},
                                        {shape, c.second, MakeArgument("dtype", c.first)}),
                        {});
  }
  // Default dtype from the value's field, shape from an input, extra_shape, input_as_shape.
  ExpectCudaIdentical(MakeOperatorDef("ConstantFill", "", {}, {"Y"},
                                      {shape, MakeArgument("value", int64_t{9})}),
                      {});
  ExpectCudaIdentical(MakeOperatorDef("ConstantFill", "", {"X"}, {"Y"},
                                      {MakeArgument("extra_shape", std::vector<int64_t>{2})}),
                      {{"X", RandomTensor({4, 5}, 1)}});
  ExpectCudaIdentical(MakeOperatorDef("ConstantFill", "", {"S"}, {"Y"},
                                      {MakeArgument("input_as_shape", 1),
                                       MakeArgument("value", 3.f)}),
                      {{"S", TypedTensor<int64_t>({2}, {6, 7})}}, {"S"});
  ExpectCudaIdentical(MakeOperatorDef("ConstantFill", "", {"X"}, {"X"}),
                      {{"X", RandomTensor({4, 5}, 1)}});
}

TEST(FillGpuTest, RandomFillsMatchCpuForOneSeed) {
  REQUIRE_GPU();
  const Argument shape = MakeArgument("shape", std::vector<int64_t>{16, 3, 5, 5});
  const std::vector<std::pair<std::string, std::vector<Argument>>> cases = {
      {"UniformFill", {MakeArgument("min", -2.f), MakeArgument("max", 3.f)}},
      {"UniformIntFill", {MakeArgument("min", -5), MakeArgument("max", 40)}},
      {"GaussianFill", {MakeArgument("mean", 1.f), MakeArgument("std", 0.5f)}},
      {"XavierFill", {}},
      {"MSRAFill", {}},
  };
  for (const auto& c : cases) {
    for (const char* dtype : {"float", "float16"}) {
      if (c.first == "UniformIntFill" && std::string(dtype) == "float16") continue;
      SCOPED_TRACE(c.first + " " + dtype);
      std::vector<Argument> args = c.second;
      args.push_back(shape);
      if (c.first != "UniformIntFill") args.push_back(MakeArgument("dtype", dtype));
      ExpectCudaIdentical(Seeded(MakeOperatorDef(c.first, "", {}, {"Y"}, args), 1234), {});
    }
  }
}

TEST(FillGpuTest, GivenTensorFills) {
  REQUIRE_GPU();
  const Argument shape = MakeArgument("shape", std::vector<int64_t>{2, 3});
  const Argument floats = MakeArgument("values", std::vector<float>{1.5f, -2.f, 0.1f, 4, 5, 6});
  const Argument ints = MakeArgument("values", std::vector<int64_t>{1, 0, -3, 4, 1 << 20, 6});
  ExpectCudaIdentical(MakeOperatorDef("GivenTensorFill", "", {}, {"Y"}, {shape, floats}), {});
  ExpectCudaIdentical(MakeOperatorDef("GivenTensorFill", "", {}, {"Y"},
                                      {shape, floats, MakeArgument("dtype", "float16")}),
                      {});
  ExpectCudaIdentical(MakeOperatorDef("GivenTensorDoubleFill", "", {}, {"Y"}, {shape, floats}),
                      {});
  ExpectCudaIdentical(MakeOperatorDef("GivenTensorIntFill", "", {}, {"Y"}, {shape, ints}), {});
  ExpectCudaIdentical(MakeOperatorDef("GivenTensorInt64Fill", "", {}, {"Y"}, {shape, ints}), {});
  ExpectCudaIdentical(MakeOperatorDef("GivenTensorBoolFill", "", {}, {"Y"}, {shape, ints}), {});
  ExpectCudaError(MakeOperatorDef("GivenTensorFill", "", {}, {"Y"},
                                  {MakeArgument("shape", std::vector<int64_t>{4}), floats}),
                  {}, "4 elements but 6 values");
}

TEST(CastGpuTest, AllTypePairsMatchCpu) {
  REQUIRE_GPU();
  // Values every type can hold: 0..100 (with fractions for the float types).
  Tensor base = RandomTensor({7, 37}, 5, 0.f, 100.f);
  base.mutable_data<float>()[0] = 0.f;
  const char* types[] = {"float", "float16", "double", "int32", "int64", "int16",
                         "int8",  "uint8",   "uint16", "bool",  "bfloat16"};
  for (const char* from : types) {
    Workspace ws;
    RunOp(MakeOperatorDef("Cast", "", {"B"}, {"X"}, {MakeArgument("to", std::string(from))}),
          {{"B", base}}, &ws);
    const Tensor& x = ws.GetTensor("X");
    for (const char* to : types) {
      SCOPED_TRACE(std::string(from) + " -> " + to);
      ExpectCudaIdentical(
          MakeOperatorDef("Cast", "", {"X"}, {"Y"}, {MakeArgument("to", std::string(to))}),
          {{"X", x}});
    }
    // In place, where the element size changes.
    ExpectCudaIdentical(
        MakeOperatorDef("Cast", "", {"X"}, {"X"}, {MakeArgument("to", std::string("double"))}),
        {{"X", x}});
  }
  // `to` as an enum value; Cast rounds to nearest even into float16 on both devices.
  ExpectCudaIdentical(MakeOperatorDef("Cast", "", {"X"}, {"Y"}, {MakeArgument("to", 12)}),
                      {{"X", RandomTensor({1000}, 6, -70000.f, 70000.f)}});
}

// float -> bfloat16 rounds to nearest even on both devices (ties, subnormals, overflow to inf);
// bfloat16 -> float is exact. NaNs are left out: CUDA gives them its canonical payload.
TEST(CastGpuTest, BFloat16ConversionsMatchCpu) {
  REQUIRE_GPU();
  std::vector<uint16_t> patterns;
  std::vector<float> floats;
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;  // NaN
    patterns.push_back(static_cast<uint16_t>(h));
    // The value itself, the tie above it and just above the tie (inf: itself only).
    const bool inf = (h & 0x7f80) == 0x7f80;
    for (uint32_t low : {0u, 0x8000u, 0x8001u}) {
      const uint32_t u = (h << 16) | (inf ? 0u : low);
      float f;
      std::memcpy(&f, &u, 4);
      floats.push_back(f);
    }
  }
  Tensor xs({static_cast<int64_t>(floats.size())}, DataType::FLOAT);
  std::copy(floats.begin(), floats.end(), xs.mutable_data<float>());
  Tensor bs({static_cast<int64_t>(patterns.size())}, DataType::BFLOAT16);
  for (size_t i = 0; i < patterns.size(); ++i) bs.mutable_data<BFloat16>()[i].x = patterns[i];
  ExpectCudaIdentical(MakeOperatorDef("FloatToBFloat16", "", {"X"}, {"Y"}), {{"X", xs}});
  ExpectCudaIdentical(MakeOperatorDef("Cast", "", {"X"}, {"Y"}, {MakeArgument("to", 16)}),
                      {{"X", xs}});
  ExpectCudaIdentical(MakeOperatorDef("BFloat16ToFloat", "", {"B"}, {"Y"}), {{"B", bs}});
  ExpectCudaIdentical(MakeOperatorDef("Cast", "", {"B"}, {"Y"}, {MakeArgument("to", 12)}),
                      {{"B", bs}});
  ExpectCudaError(MakeOperatorDef("BFloat16ToFloat", "", {"X"}, {"Y"}), {{"X", xs}},
                  "BFloat16ToFloat expects bfloat16 input");
  // Operators that do not take bfloat16 on CUDA yet say so.
  ExpectCudaError(MakeOperatorDef("Dropout", "", {"B"}, {"Y"}, {MakeArgument("is_test", 1)}),
                  {{"B", bs}},
                  "must be float or float16 on CUDA (this CUDA operator does not take bfloat16 "
                  "yet");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
