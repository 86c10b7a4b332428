// SigmoidCrossEntropyWithLogits and its gradient on CUDA against the CPU operators (float and
// float16 logits, both loss forms), within float rounding. Skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

void ExpectClose(const CpuCudaOutputs& r, float tol) {
  for (size_t o = 0; o < r.cpu.size(); ++o) {
    ASSERT_EQ(r.cuda[o].dtype(), r.cpu[o].dtype());
    const std::vector<float> got = ToFloatVector(r.cuda[o]), want = ToFloatVector(r.cpu[o]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "output " << o << " " << i;
    }
  }
}

TEST(SigmoidXentGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  for (DataType xt : {DataType::FLOAT, DataType::FLOAT16}) {
    for (int trick : {0, 1}) {
      SCOPED_TRACE(std::string(DataTypeName(xt)) + (trick ? " log_D_trick" : ""));
      Tensor x = RandomTensor({6, 9}, 1, -8.f, 8.f);
      if (xt == DataType::FLOAT16) x = ToHalf(x);
      const std::map<std::string, Tensor> in{{"X", x},
                                             {"T", RandomTensor({6, 9}, 2, 0.f, 1.f)},
                                             {"dY", RandomTensor({6}, 3)}};
      const std::vector<Argument> args{MakeArgument("log_D_trick", trick)};
      ExpectClose(RunCpuAndCuda(MakeOperatorDef("SigmoidCrossEntropyWithLogits", "", {"X", "T"},
                                                {"Y"}, args),
                                in),
                  1e-6f);
      ExpectClose(RunCpuAndCuda(MakeOperatorDef("SigmoidCrossEntropyWithLogitsGradient", "",
                                                {"dY", "X", "T"}, {"dX"}, args),
                                in),
                  xt == DataType::FLOAT ? 1e-6f : 1e-3f);
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
