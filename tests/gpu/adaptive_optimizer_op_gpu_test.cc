// Caffe2's Adagrad, Adadelta, RmsProp, Wngrad and Lars, and the fused MixedPrecisionAdagrad /
// Adadelta / RmsPropUpdate, on CUDA against the CPU operators (the same rules,
// core/adaptive_update_rules.h; the device rounds sqrt and divisions its own way): float, float16
// and bfloat16 gradients and copies, a skipped step leaving everything as it was. Skip without
// a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

std::map<std::string, Tensor> FusedInputs(DataType grad_type, float found_inf) {
  std::map<std::string, Tensor> in{{"g", RandomTensor({7, 33}, 1, -64.f, 64.f)},
                                   {"s0", RandomTensor({7, 33}, 2, 0.f, 0.5f)},
                                   {"s1", RandomTensor({7, 33}, 3, 0.f, 0.5f)},
                                   {"lr", FloatTensor({1}, {0.01f})},
                                   {"p", RandomTensor({7, 33}, 4)},
                                   {"scale", FloatTensor({1}, {128.f})},
                                   {"found_inf", FloatTensor({}, {found_inf})}};
  if (grad_type != DataType::FLOAT) in["g"] = ToFloat16Type(in["g"], grad_type);
  return in;
}

struct Fused {
  const char* type;
  int states;
  std::vector<Argument> args;
};

std::vector<Fused> FusedOps() {
  return {{"MixedPrecisionAdagradUpdate", 1, {}},
          {"MixedPrecisionAdadeltaUpdate", 2, {}},
          {"MixedPrecisionRmsPropUpdate", 2, {}},
          {"MixedPrecisionRmsPropUpdate", 2, {MakeArgument("momentum", 0.9f)}}};
}

OperatorDef FusedDef(const Fused& f, bool copy, DataType copy_type) {
  std::vector<std::string> in{"g", "s0"}, out{"s0"};
  if (f.states > 1) {
    in.push_back("s1");
    out.push_back("s1");
  }
  for (const char* s : {"lr", "p", "scale", "found_inf"}) in.push_back(s);
  out.push_back("p");
  if (copy) out.push_back("copy");
  std::vector<Argument> args = f.args;
  args.push_back(MakeArgument("weight_decay", 0.01f));
  args.push_back(MakeArgument("copy_dtype", std::string(DataTypeName(copy_type))));
  return MakeOperatorDef(f.type, "", in, out, args);
}

TEST(AdaptiveOptimizerGpuTest, FusedUpdatesMatchCpu) {
  REQUIRE_GPU();
  for (const Fused& f : FusedOps()) {
    for (DataType gt : {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16}) {
      SCOPED_TRACE(std::string(f.type) + " " + DataTypeName(gt));
      const DataType copy_type = gt == DataType::BFLOAT16 ? DataType::BFLOAT16 : DataType::FLOAT16;
      const OperatorDef def = FusedDef(f, true, copy_type);
      ExpectCudaClose(RunCpuAndCuda(def, FusedInputs(gt, 0.f)), def, 1e-5f);
    }
  }
}

TEST(AdaptiveOptimizerGpuTest, FusedUpdatesSkipOnDevice) {
  REQUIRE_GPU();
  for (const Fused& f : FusedOps()) {
    SCOPED_TRACE(f.type);
    const auto in = FusedInputs(DataType::FLOAT16, 1.f);
    const CpuCudaOutputs r = RunCpuAndCuda(FusedDef(f, false, DataType::FLOAT16), in);
    ExpectIdentical(r.cuda[0], in.at("s0"), "s0");
    ExpectIdentical(r.cuda.back(), in.at("p"), "p");
  }
}

TEST(AdaptiveOptimizerGpuTest, CaffeOperatorsMatchCpu) {
  REQUIRE_GPU();
  std::map<std::string, Tensor> in{{"p", RandomTensor({5, 17}, 1)},
                                   {"h", RandomTensor({5, 17}, 2, 0.f, 1.f)},
                                   {"u", RandomTensor({5, 17}, 3, 0.f, 1.f)},
                                   {"g", RandomTensor({5, 17}, 4)},
                                   {"lr", FloatTensor({1}, {-0.05f})},
                                   {"b", FloatTensor({1}, {2.f})}};
  const std::vector<OperatorDef> defs{
      MakeOperatorDef("Adagrad", "", {"p", "h", "g", "lr"}, {"p", "h", "elr", "upd"},
                      {MakeArgument("weight_decay", 0.01f), MakeArgument("decay", 0.9f)}),
      MakeOperatorDef("Adadelta", "", {"p", "h", "u", "g", "lr"}, {"p", "h", "u"}),
      MakeOperatorDef("RmsProp", "", {"g", "h", "u", "lr"}, {"g2", "h", "u"},
                      {MakeArgument("momentum", 0.5f)}),
      MakeOperatorDef("Wngrad", "", {"p", "b", "g", "lr"}, {"p", "b", "elr", "upd"})};
  for (const OperatorDef& def : defs) {
    SCOPED_TRACE(def.type());
    ExpectCudaClose(RunCpuAndCuda(def, in), def, 1e-5f);
  }
}

TEST(AdaptiveOptimizerGpuTest, LarsMatchesCpu) {
  REQUIRE_GPU();
  for (DataType gt : {DataType::FLOAT, DataType::FLOAT16, DataType::BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(gt));
    std::map<std::string, Tensor> in{{"x", RandomTensor({64, 9}, 1)},
                                     {"dx", RandomTensor({64, 9}, 2, -8.f, 8.f)},
                                     {"wd", FloatTensor({1}, {1e-4f})},
                                     {"trust", FloatTensor({1}, {0.02f})},
                                     {"lr_max", FloatTensor({1}, {10.f})},
                                     {"scale", FloatTensor({1}, {8.f})}};
    if (gt != DataType::FLOAT) in["dx"] = ToFloat16Type(in["dx"], gt);
    const OperatorDef def =
        MakeOperatorDef("Lars", "", {"x", "dx", "wd", "trust", "lr_max", "scale"}, {"rate"},
                        {MakeArgument("offset", 0.f)});
    ExpectCudaClose(RunCpuAndCuda(def, in), def, 1e-5f);
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
