// SpatialBN / SpatialBNGradient on cuDNN against the CPU operators: training and test mode,
// float, float16 and bfloat16 X (FP32 parameters and statistics), NCHW and NHWC, 3-D to 5-D, in
// place, empty running statistics, one value per channel, mixed X / dY dtypes; argument errors.
// The running variance uses the biased batch variance on both devices, so every output is
// compared at the default tolerances. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16};
// The test-mode gradient on CUDA takes float and float16 (bfloat16 is refused).
const DataType kTestGradientDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

struct BNCase {
  const char* name;
  std::vector<int64_t> dims;
  const char* order;
  int64_t C;
};

std::vector<BNCase> Cases() {
  return {
      {"4-D NCHW", {2, 3, 7, 9}, "NCHW", 3},
      {"4-D NHWC", {2, 7, 9, 3}, "NHWC", 3},
      {"3-D NCHW", {2, 5, 11}, "NCHW", 5},
      {"3-D NHWC", {2, 11, 5}, "NHWC", 5},
      {"5-D NCHW", {2, 3, 3, 4, 5}, "NCHW", 3},
      {"5-D NHWC", {2, 3, 4, 5, 6}, "NHWC", 6},
      {"one value per channel", {1, 4, 1, 1}, "NCHW", 4},
  };
}

// X in the given dtype; parameters and statistics stay float.
std::map<std::string, Tensor> Inputs(const BNCase& c, DataType dt, uint32_t seed) {
  std::map<std::string, Tensor> in;
  const Tensor x = RandomTensor(c.dims, seed, -2.f, 3.f);
  in["X"] = dt == DataType::FLOAT ? x : ToFloat16Type(x, dt);
  in["scale"] = RandomTensor({c.C}, seed + 1, 0.5f, 1.5f);
  in["bias"] = RandomTensor({c.C}, seed + 2);
  in["rm"] = RandomTensor({c.C}, seed + 3);
  in["rv"] = RandomTensor({c.C}, seed + 4, 0.5f, 2.f);
  return in;
}

OperatorDef BNDef(const BNCase& c, bool is_test, std::vector<std::string> in,
                  std::vector<std::string> out, float momentum = 0.9f) {
  return MakeOperatorDef(
      "SpatialBN", "", in, out,
      {MakeArgument("order", std::string(c.order)), MakeArgument("is_test", is_test ? 1 : 0),
       MakeArgument("epsilon", 1e-4f), MakeArgument("momentum", momentum)});
}

OperatorDef TrainDef(const BNCase& c, float momentum = 0.9f) {
  return BNDef(c, false, {"X", "scale", "bias", "rm", "rv"}, {"Y", "rm", "rv", "sm", "sv"},
               momentum);
}

OperatorDef GradDef(const BNCase& c, bool is_test, const std::string& dy = "dY") {
  return MakeOperatorDef(
      "SpatialBNGradient", "", {"X", "scale", dy, is_test ? "rm" : "sm", is_test ? "rv" : "sv"},
      {"dX", "dscale", "dbias"},
      {MakeArgument("order", std::string(c.order)), MakeArgument("is_test", is_test ? 1 : 0),
       MakeArgument("epsilon", 1e-4f)});
}

// Gradient inputs: the forward inputs plus dY and the CPU forward's saved statistics.
std::map<std::string, Tensor> GradInputs(const BNCase& c, DataType dt, uint32_t seed) {
  std::map<std::string, Tensor> in = Inputs(c, dt, seed);
  Workspace ws;
  RunOp(TrainDef(c), in, &ws);
  in["sm"].CopyFrom(ws.GetTensor("sm"));
  in["sv"].CopyFrom(ws.GetTensor("sv"));
  const Tensor dy = RandomTensor(c.dims, seed + 5);
  in["dY"] = dt == DataType::FLOAT ? dy : ToFloat16Type(dy, dt);
  return in;
}

DeviceCheckOptions GradOptions() {
  DeviceCheckOptions opts;
  opts.atol = 3e-4f;  // sums over up to ~250 products, in another order
  opts.rtol = 3e-4f;
  return opts;
}

TEST(SpatialBNGpuTest, Registered) {
  for (const char* type : {"SpatialBN", "SpatialBNGradient"}) {
    EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, "CUDNN"), nullptr) << type;
    EXPECT_NE(OperatorRegistry::Find(DeviceType::CUDA, type, ""), nullptr) << type;
  }
}

TEST(SpatialBNGpuTest, TrainingForwardMatchesCpu) {
  REQUIRE_GPU();
  for (const BNCase& c : Cases()) {
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(c.name, " ", DataTypeName(dt)));
      DeviceChecker().Check(TrainDef(c), Inputs(c, dt, 1));
      DeviceChecker().Check(TrainDef(c, 0.f), Inputs(c, dt, 2));
      DeviceChecker().Check(TrainDef(c, 1.f), Inputs(c, dt, 3));
    }
  }
}

// Empty running statistics start at zero, on both devices.
TEST(SpatialBNGpuTest, EmptyRunningStats) {
  REQUIRE_GPU();
  const BNCase c = Cases()[0];
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    auto in = Inputs(c, dt, 4);
    in["rm"] = Tensor(std::vector<int64_t>{0}, DataType::FLOAT);
    in["rv"] = Tensor(std::vector<int64_t>{0}, DataType::FLOAT);
    DeviceChecker().Check(TrainDef(c), in);
  }
}

TEST(SpatialBNGpuTest, InPlace) {
  REQUIRE_GPU();
  for (const BNCase& c : {Cases()[0], Cases()[1]}) {
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(c.name, " ", DataTypeName(dt)));
      DeviceChecker().Check(
          BNDef(c, false, {"X", "scale", "bias", "rm", "rv"}, {"X", "rm", "rv", "sm", "sv"}),
          Inputs(c, dt, 5));
      DeviceChecker().Check(BNDef(c, true, {"X", "scale", "bias", "rm", "rv"}, {"X"}),
                            Inputs(c, dt, 6));
    }
  }
}

TEST(SpatialBNGpuTest, TestModeForwardMatchesCpu) {
  REQUIRE_GPU();
  for (const BNCase& c : Cases()) {
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(c.name, " ", DataTypeName(dt)));
      DeviceChecker().Check(BNDef(c, true, {"X", "scale", "bias", "rm", "rv"}, {"Y"}),
                            Inputs(c, dt, 7));
    }
  }
}

TEST(SpatialBNGpuTest, TrainingGradientMatchesCpu) {
  REQUIRE_GPU();
  for (const BNCase& c : Cases()) {
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString(c.name, " ", DataTypeName(dt)));
      DeviceChecker(GradOptions()).Check(GradDef(c, false), GradInputs(c, dt, 8));
    }
  }
}

TEST(SpatialBNGpuTest, TestModeGradientMatchesCpu) {
  REQUIRE_GPU();
  for (const BNCase& c : Cases()) {
    for (DataType dt : kTestGradientDtypes) {
      SCOPED_TRACE(MakeString(c.name, " ", DataTypeName(dt)));
      DeviceChecker(GradOptions()).Check(GradDef(c, true), GradInputs(c, dt, 9));
    }
  }
  ExpectCudaError(GradDef(Cases()[0], true), GradInputs(Cases()[0], DataType::BFLOAT16, 9),
                  "in test mode (is_test=1) takes float or float16, not bfloat16");
  // bfloat16 X goes with bfloat16 dY only.
  auto mixed = GradInputs(Cases()[0], DataType::BFLOAT16, 12);
  mixed["dY"] = RandomTensor(Cases()[0].dims, 13);
  ExpectCudaError(GradDef(Cases()[0], false), mixed, "takes bfloat16 X and dY together");
}

// X float16 with dY float and the reverse (cuDNN gets dY converted to X's dtype).
TEST(SpatialBNGpuTest, GradientMixedDtypes) {
  REQUIRE_GPU();
  DeviceCheckOptions opts = GradOptions();
  opts.atol = 2e-3f;  // dY rounded to float16 for cuDNN when X is float16
  opts.rtol = 2e-3f;
  for (const BNCase& c : {Cases()[0], Cases()[1]}) {
    for (bool is_test : {false, true}) {
      SCOPED_TRACE(MakeString(c.name, is_test ? " test" : " training"));
      auto in = GradInputs(c, DataType::FLOAT16, 10);
      in["dY32"] = RandomTensor(c.dims, 11);
      DeviceChecker(opts).Check(GradDef(c, is_test, "dY32"), in);
      auto in32 = GradInputs(c, DataType::FLOAT, 12);
      in32["dY16"] = ToHalf(RandomTensor(c.dims, 13));
      DeviceChecker(opts).Check(GradDef(c, is_test, "dY16"), in32);
    }
  }
}

TEST(SpatialBNGpuTest, Errors) {
  REQUIRE_GPU();
  const BNCase c = Cases()[0];
  Workspace ws;
  const Device gpu{DeviceType::CUDA, 0};
  for (const auto& kv : Inputs(c, DataType::FLOAT, 14)) {
    ws.CreateTensor(kv.first, gpu)->CopyFrom(kv.second);
  }
  ws.CreateTensor("scale16", gpu)->CopyFrom(ToHalf(RandomTensor({c.C}, 15)));
  ws.CreateTensor("bias4", gpu)->CopyFrom(RandomTensor({4}, 16));
  auto expect_error = [&](OperatorDef def, const std::string& needle) {
    def.mutable_device_option()->set_device_type(1);
    try {
      CreateOperator(def, &ws)->Run(0);
      FAIL() << "accepted: " << def.ShortDebugString();
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(BNDef(c, false, {"X", "scale16", "bias", "rm", "rv"}, {"Y", "rm", "rv", "sm", "sv"}),
               "must be float");
  expect_error(BNDef(c, false, {"X", "scale", "bias4", "rm", "rv"}, {"Y", "rm", "rv", "sm", "sv"}),
               "must have dims [3]");
  expect_error(BNDef(c, false, {"X", "scale", "bias", "rm", "rv"}, {"Y"}), "5 outputs");
  expect_error(MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"}, {"Y"},
                               {MakeArgument("is_test", 1), MakeArgument("epsilon", 0.f)}),
               "epsilon");
  expect_error(TrainDef(c, 1.5f), "momentum");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
