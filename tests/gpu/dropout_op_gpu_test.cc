// Dropout / DropoutGrad on CUDA. The CUDA op draws its own random numbers, so training-mode
// Dropout is checked on its semantics (bool mask, Y = X * mask / (1 - ratio), kept fraction,
// repeatability from random_seed) rather than against the CPU op; DropoutGrad (deterministic
// given the mask) and test mode are compared with the CPU operators. Float and float16.
// Device tests skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};
const Device kGpu{DeviceType::CUDA, 0};

OperatorDef CudaDef(OperatorDef def, int seed = -1) {
  def.mutable_device_option()->set_device_type(1);
  if (seed >= 0) def.mutable_device_option()->set_random_seed(static_cast<uint32_t>(seed));
  return def;
}

Tensor HostCopy(const Tensor& t) {
  Tensor h;
  h.CopyFrom(t);
  return h;
}

Tensor RandomMask(const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor m(dims, DataType::BOOL);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < m.numel(); ++i) m.mutable_data<bool>()[i] = rng() % 3 != 0;
  return m;
}

// Checks Y = X * mask / (1 - ratio) elementwise and returns the kept fraction.
double CheckDropoutOutput(const Tensor& x, const Tensor& y, const Tensor& mask, float ratio) {
  EXPECT_EQ(mask.dtype(), DataType::BOOL);
  EXPECT_EQ(mask.dims(), x.dims());
  EXPECT_EQ(y.dims(), x.dims());
  EXPECT_EQ(y.dtype(), x.dtype());
  const std::vector<float> xv = ToFloatVector(x), yv = ToFloatVector(y);
  const bool* m = mask.data<bool>();
  const float scale = 1.f / (1.f - ratio);
  const bool half = x.dtype() == DataType::FLOAT16;
  int64_t kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const float want = m[i] ? xv[i] * scale : 0.f;
    if (m[i]) ++kept;
    if (std::fabs(yv[i] - want) > (half ? 1e-3f + 1e-3f * std::fabs(want) : 1e-6f)) {
      ADD_FAILURE() << "element " << i << ": y " << yv[i] << " want " << want;
      break;
    }
  }
  return xv.empty() ? 1.0 : static_cast<double>(kept) / static_cast<double>(xv.size());
}

TEST(DropoutGpuTest, Registered) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "Dropout"));
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "DropoutGrad"));
}

// Y = X * mask / (1 - ratio), about 1 - ratio of the elements kept, and the gradient on the
// device uses the same mask: dX = dY * mask / (1 - ratio).
TEST(DropoutGpuTest, TrainingMaskSemantics) {
  REQUIRE_GPU();
  const std::vector<int64_t> dims{1000, 37};  // 37000 draws: the fraction is within 0.02
  for (float ratio : {0.3f, 0.75f}) {
    for (DataType dt : kDtypes) {
      SCOPED_TRACE(MakeString("ratio ", ratio, " ", DataTypeName(dt)));
      Workspace ws;
      const Tensor x = AsDtype({{"X", RandomTensor(dims, 1)}}, dt).at("X");
      const Tensor dy = AsDtype({{"dY", RandomTensor(dims, 2)}}, dt).at("dY");
      ws.CreateTensor("X", kGpu)->CopyFrom(x);
      ws.CreateTensor("dY", kGpu)->CopyFrom(dy);
      const Argument r = MakeArgument("ratio", ratio);
      CreateOperator(CudaDef(MakeOperatorDef("Dropout", "", {"X"}, {"Y", "mask"}, {r}), 5), &ws)
          ->Run(0);
      CreateOperator(CudaDef(MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dX"}, {r})), &ws)
          ->Run(0);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const Tensor mask = HostCopy(ws.GetTensor("mask"));
      const double kept = CheckDropoutOutput(x, HostCopy(ws.GetTensor("Y")), mask, ratio);
      EXPECT_NEAR(kept, 1.0 - ratio, 0.02);
      CheckDropoutOutput(dy, HostCopy(ws.GetTensor("dX")), mask, ratio);
    }
  }
}

// The same random_seed gives the same mask; successive runs of one op give new masks.
TEST(DropoutGpuTest, SeededAndFreshPerRun) {
  REQUIRE_GPU();
  const std::vector<int64_t> dims{64, 65};
  Workspace ws;
  ws.CreateTensor("X", kGpu)->CopyFrom(RandomTensor(dims, 3));
  auto def = CudaDef(MakeOperatorDef("Dropout", "", {"X"}, {"Y", "mask"}), 11);
  auto run_once = [&](OperatorBase* op) {
    op->Run(0);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Tensor m = HostCopy(ws.GetTensor("mask"));
    return std::vector<bool>(m.data<bool>(), m.data<bool>() + m.numel());
  };
  auto op1 = CreateOperator(def, &ws);
  const std::vector<bool> a1 = run_once(op1.get()), a2 = run_once(op1.get());
  auto op2 = CreateOperator(def, &ws);
  const std::vector<bool> b1 = run_once(op2.get());
  EXPECT_EQ(a1, b1);
  EXPECT_NE(a1, a2);
}

TEST(DropoutGpuTest, RatioZeroKeepsEverything) {
  REQUIRE_GPU();
  Workspace ws;
  const Tensor x = RandomTensor({3, 5, 7}, 4);
  ws.CreateTensor("X", kGpu)->CopyFrom(x);
  CreateOperator(
      CudaDef(MakeOperatorDef("Dropout", "", {"X"}, {"Y", "mask"}, {MakeArgument("ratio", 0.f)})),
      &ws)
      ->Run(0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(CheckDropoutOutput(x, HostCopy(ws.GetTensor("Y")), HostCopy(ws.GetTensor("mask")), 0.f),
            1.0);
}

TEST(DropoutGpuTest, InPlaceTraining) {
  REQUIRE_GPU();
  Workspace ws;
  const Tensor x = RandomTensor({17, 33}, 5);
  ws.CreateTensor("X", kGpu)->CopyFrom(x);
  CreateOperator(CudaDef(MakeOperatorDef("Dropout", "", {"X"}, {"X", "mask"})), &ws)->Run(0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CheckDropoutOutput(x, HostCopy(ws.GetTensor("X")), HostCopy(ws.GetTensor("mask")), 0.5f);
}

// DropoutGrad is deterministic given the mask: compared with the CPU op.
TEST(DropoutGpuTest, GradientMatchesCpu) {
  REQUIRE_GPU();
  const std::vector<int64_t> dims{7, 9, 11};
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    auto in = AsDtype({{"dY", RandomTensor(dims, 6)}}, dt);
    in["mask"] = RandomMask(dims, 7);
    const Argument r = MakeArgument("ratio", 0.4f);
    DeviceChecker().Check(MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dX"}, {r}), in);
    DeviceChecker().Check(MakeOperatorDef("DropoutGrad", "", {"dY", "mask"}, {"dY"}, {r}), in);
    const Argument t = MakeArgument("is_test", 1);
    DeviceChecker().Check(MakeOperatorDef("DropoutGrad", "", {"dY"}, {"dX"}, {r, t}), in);
  }
}

// Test mode: Y = X, and the optional mask is all true.
TEST(DropoutGpuTest, TestModeMatchesCpu) {
  REQUIRE_GPU();
  for (DataType dt : kDtypes) {
    SCOPED_TRACE(DataTypeName(dt));
    const auto in = AsDtype({{"X", RandomTensor({5, 13}, 8)}}, dt);
    const Argument t = MakeArgument("is_test", 1);
    DeviceChecker().Check(MakeOperatorDef("Dropout", "", {"X"}, {"Y"}, {t}), in);
    DeviceChecker().Check(MakeOperatorDef("Dropout", "", {"X"}, {"X"}, {t}), in);
    DeviceCheckOptions opts;
    opts.outputs = {0};  // the bool mask is checked below
    DeviceChecker(opts).Check(MakeOperatorDef("Dropout", "", {"X"}, {"Y", "mask"}, {t}), in);
    Workspace ws;
    ws.CreateTensor("X", kGpu)->CopyFrom(in.at("X"));
    CreateOperator(CudaDef(MakeOperatorDef("Dropout", "", {"X"}, {"Y", "mask"}, {t})), &ws)->Run(0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Tensor mask = HostCopy(ws.GetTensor("mask"));
    ASSERT_EQ(mask.dtype(), DataType::BOOL);
    for (int64_t i = 0; i < mask.numel(); ++i) ASSERT_TRUE(mask.data<bool>()[i]) << i;
  }
}

TEST(DropoutGpuTest, Errors) {
  REQUIRE_GPU();
  Workspace ws;
  ws.CreateTensor("dY", kGpu)->CopyFrom(RandomTensor({2, 3}, 9));
  ws.CreateTensor("m", kGpu)->CopyFrom(IntTensor({2, 3}, {1, 0, 1, 0, 1, 1}));
  auto expect_error = [&](const OperatorDef& def, const std::string& needle) {
    try {
      CreateOperator(CudaDef(def), &ws)->Run(0);
      FAIL() << "accepted: " << def.ShortDebugString();
    } catch (const EnforceNotMet& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(MakeOperatorDef("Dropout", "", {"dY"}, {"Y", "mask"}, {MakeArgument("ratio", 1.f)}),
               "ratio");
  expect_error(MakeOperatorDef("Dropout", "", {"dY"}, {"Y"}), "2 outputs");
  expect_error(MakeOperatorDef("DropoutGrad", "", {"dY", "m"}, {"dX"}), "mask must be bool");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
