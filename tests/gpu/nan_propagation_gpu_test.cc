// NaN propagation on CUDA: with one input element set to NaN, every operator that selects
// (Relu, Clip, MaxPool, ... and their gradients), normalises (Softmax, SpatialBN) or scores
// (Accuracy, LabelCrossEntropy) gives NaN exactly where the CPU operator does (tested against
// IEEE semantics in tests/operators). Float and float16. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/device_checker.h"

namespace halfcaf {
namespace testing {
namespace {

struct NaNCase {
  OperatorDef def;
  std::map<std::string, Tensor> inputs;  // float; converted to the dtype under test
  std::string input;
  int64_t index;
};

std::vector<NaNCase> Cases() {
  const std::vector<Argument> pool{MakeArgument("kernel", 2), MakeArgument("stride", 2)};
  const std::vector<Argument> clip{MakeArgument("min", -0.5f), MakeArgument("max", 0.5f)};
  const Tensor x = RandomTensor({2, 3, 4, 4}, 1), y = RandomTensor({2, 3, 4, 4}, 2);
  const Tensor dy = RandomTensor({2, 3, 4, 4}, 3), pooled_dy = RandomTensor({2, 3, 2, 2}, 4);
  Tensor relu_y = x;
  for (int64_t i = 0; i < relu_y.numel(); ++i) {
    relu_y.mutable_data<float>()[i] = std::max(relu_y.data<float>()[i], 0.f);
  }
  const auto bn = [](bool is_test) {
    std::vector<Argument> a{MakeArgument("is_test", is_test ? 1 : 0)};
    return is_test ? MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"}, {"Y"}, a)
                   : MakeOperatorDef("SpatialBN", "", {"X", "scale", "bias", "rm", "rv"},
                                     {"Y", "rm", "rv", "sm", "sv"}, a);
  };
  const std::map<std::string, Tensor> bn_in{{"X", x},
                                            {"scale", RandomTensor({3}, 5, 0.5f, 1.5f)},
                                            {"bias", RandomTensor({3}, 6)},
                                            {"rm", RandomTensor({3}, 7)},
                                            {"rv", RandomTensor({3}, 8, 0.5f, 1.5f)}};
  const Tensor scores = RandomTensor({4, 5}, 9, 0.05f, 1.f);
  const Tensor labels = IntTensor({4}, {0, 3, 4, 1});
  return {
      {MakeOperatorDef("Relu", "", {"X"}, {"Y"}), {{"X", x}}, "X", 5},
      {MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"}), {{"Y", relu_y}, {"dY", dy}}, "Y", 7},
      {MakeOperatorDef("ReluGradient", "", {"Y", "dY"}, {"dX"}), {{"Y", relu_y}, {"dY", dy}}, "dY", 9},
      {MakeOperatorDef("Clip", "", {"X"}, {"Y"}, clip), {{"X", x}}, "X", 3},
      {MakeOperatorDef("ClipGradient", "", {"Y", "dY"}, {"dX"}, clip), {{"Y", y}, {"dY", dy}}, "Y", 4},
      {MakeOperatorDef("ClipGradient", "", {"Y", "dY"}, {"dX"}, clip), {{"Y", y}, {"dY", dy}}, "dY", 6},
      {MakeOperatorDef("MaxPool", "", {"X"}, {"Y"}, pool), {{"X", x}}, "X", 21},
      {MakeOperatorDef("AveragePool", "", {"X"}, {"Y"}, pool), {{"X", x}}, "X", 21},
      {MakeOperatorDef("MaxPoolGradient", "", {"X", "Y", "dY"}, {"dX"}, pool),
       {{"X", x}, {"Y", RandomTensor({2, 3, 2, 2}, 10)}, {"dY", pooled_dy}}, "dY", 2},
      {MakeOperatorDef("Softmax", "", {"X"}, {"Y"}), {{"X", scores}}, "X", 7},
      {bn(false), bn_in, "X", 20},
      {bn(true), bn_in, "X", 20},
      {MakeOperatorDef("LabelCrossEntropy", "", {"X", "L"}, {"Y"}), {{"X", scores}, {"L", labels}}, "X", 8},
      {MakeOperatorDef("Accuracy", "", {"X", "L"}, {"acc"}), {{"X", scores}, {"L", labels}}, "X", 8},
  };
}

TEST(NaNPropagationGpuTest, SameNaNsAsCpu) {
  REQUIRE_GPU();
  for (DataType dt : {DataType::FLOAT, DataType::FLOAT16}) {
    for (NaNCase c : Cases()) {
      SCOPED_TRACE(c.def.type() + " " + DataTypeName(dt) + ": NaN in " + c.input);
      Tensor poisoned;  // a deep copy: the cases share their tensors' storage
      poisoned.CopyFrom(c.inputs.at(c.input));
      poisoned.mutable_data<float>()[c.index] = std::numeric_limits<float>::quiet_NaN();
      c.inputs[c.input] = poisoned;
      std::map<std::string, Tensor> in;
      for (const auto& kv : c.inputs) {
        in[kv.first] = kv.second.dtype() == DataType::FLOAT && kv.first != "scale" &&
                               kv.first != "bias" && kv.first != "rm" && kv.first != "rv" &&
                               dt == DataType::FLOAT16
                           ? ToHalf(kv.second)
                           : kv.second;
      }
      const CpuCudaOutputs out = RunCpuAndCuda(c.def, in);
      const std::vector<float> cpu = ToFloatVector(out.cpu[0]), gpu = ToFloatVector(out.cuda[0]);
      ASSERT_EQ(cpu.size(), gpu.size());
      int nans = 0;
      for (size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_EQ(std::isnan(gpu[i]), std::isnan(cpu[i])) << "element " << i;
        nans += std::isnan(cpu[i]);
      }
      EXPECT_GT(nans, 0);
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
