// Adam and MixedPrecisionAdamUpdate on CUDA against the CPU operators (the iteration counter
// stays a host tensor): within float rounding (the device computes sqrt and divisions with its
// own rounding and the host folds the bias corrections differently), a skipped step leaving
// everything as it was, float16 and bfloat16 gradients and copies. Skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::map<std::string, Tensor> AdamInputs(DataType grad_type, float found_inf, int64_t iter) {
  std::map<std::string, Tensor> in{{"g", RandomTensor({7, 33}, 1, -64.f, 64.f)},
                                   {"m1", RandomTensor({7, 33}, 2, -0.1f, 0.1f)},
                                   {"m2", RandomTensor({7, 33}, 3, 0.f, 0.5f)},
                                   {"lr", FloatTensor({1}, {0.01f})},
                                   {"p", RandomTensor({7, 33}, 4)},
                                   {"iter", TypedTensor<int64_t>({1}, {iter})},
                                   {"scale", FloatTensor({1}, {128.f})},
                                   {"found_inf", FloatTensor({}, {found_inf})}};
  if (grad_type != DataType::FLOAT) in["g"] = ToFloat16Type(in["g"], grad_type);
  return in;
}

TEST(AdamGpuTest, MixedPrecisionAdamUpdateMatchesCpu) {
  REQUIRE_GPU();
  for (DataType gt : {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16}) {
    for (int decoupled : {0, 1}) {
      SCOPED_TRACE(std::string(DataTypeName(gt)) + (decoupled ? " AdamW" : " Adam"));
      const OperatorDef def = MakeOperatorDef(
          "MixedPrecisionAdamUpdate", "", {"g", "m1", "m2", "lr", "p", "iter", "scale", "found_inf"},
          {"m1", "m2", "p", "copy"},
          {MakeArgument("weight_decay", 0.01f), MakeArgument("decoupled", decoupled),
           MakeArgument("copy_dtype",
                        std::string(gt == DataType::BFLOAT16 ? "bfloat16" : "float16"))});
      ExpectCudaClose(RunCpuAndCuda(def, AdamInputs(gt, 0.f, 5), {"iter"}), def, 1e-5f);
    }
  }
}

TEST(AdamGpuTest, MixedPrecisionAdamUpdateSkipsOnDevice) {
  REQUIRE_GPU();
  const OperatorDef def = MakeOperatorDef(
      "MixedPrecisionAdamUpdate", "", {"g", "m1", "m2", "lr", "p", "iter", "scale", "found_inf"},
      {"m1", "m2", "p"});
  const auto in = AdamInputs(DataType::FLOAT16, 1.f, 2);
  const CpuCudaOutputs r = RunCpuAndCuda(def, in, {"iter"});
  ExpectIdentical(r.cuda[0], in.at("m1"), "m1");
  ExpectIdentical(r.cuda[1], in.at("m2"), "m2");
  ExpectIdentical(r.cuda[2], in.at("p"), "p");
}

TEST(AdamGpuTest, CaffeAdamMatchesCpu) {
  REQUIRE_GPU();
  auto in = AdamInputs(DataType::FLOAT, 0.f, 3);
  in["lr"] = FloatTensor({1}, {-0.01f});
  const OperatorDef def = MakeOperatorDef("Adam", "", {"p", "m1", "m2", "g", "lr", "iter"},
                                          {"p", "m1", "m2", "eg"});
  ExpectCudaClose(RunCpuAndCuda(def, in, {"iter"}), def, 1e-5f);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
