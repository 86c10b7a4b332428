// MatMul (one cuBLAS GEMM) on CUDA against the CPU operator, in float and float16, with the axis
// views, the third (dims) input and the gradient ops. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "core/gradient.h"
#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

OperatorDef MatMulDef(int trans_a, int trans_b, int axis_a, int axis_b) {
  return MakeOperatorDef("MatMul", "", {"A", "B"}, {"Y"},
                         {MakeArgument("trans_a", trans_a), MakeArgument("trans_b", trans_b),
                          MakeArgument("axis_a", axis_a), MakeArgument("axis_b", axis_b)});
}

TEST(MatMulGpuTest, Registered) {
  EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, "MatMul"));
}

TEST(MatMulGpuTest, MatchesCpu) {
  REQUIRE_GPU();
  DeviceCheckOptions opts;
  opts.atol16 = 2e-2f;  // K = 33 products of values in [-1, 1], rounded once to float16
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
      // op(A2) is 5 x 33 and op(B2) 33 x 3: 2-D, and split at axis 2 / 1 of 3-D inputs.
      const std::map<std::string, Tensor> plain{
          {"A", RandomTensor(ta ? std::vector<int64_t>{33, 5} : std::vector<int64_t>{5, 33}, 1)},
          {"B", RandomTensor(tb ? std::vector<int64_t>{3, 33} : std::vector<int64_t>{33, 3}, 2)}};
      const std::map<std::string, Tensor> split{
          {"A",
           RandomTensor(ta ? std::vector<int64_t>{3, 11, 5} : std::vector<int64_t>{5, 3, 11}, 3)},
          {"B",
           RandomTensor(tb ? std::vector<int64_t>{3, 3, 11} : std::vector<int64_t>{33, 1, 3}, 4)}};
      const int axis_a = ta ? 2 : 1, axis_b = tb ? 1 : 2;
      for (DataType dt : kDtypes) {
        DeviceChecker(opts).Check(MatMulDef(ta, tb, 1, 1), AsDtype(plain, dt));
        DeviceChecker(opts).Check(MatMulDef(ta, tb, axis_a, axis_b), AsDtype(split, dt));
      }
      // The gradient ops (three inputs: the third gives the dims) on both devices.
      const OperatorDef fwd = MatMulDef(ta, tb, axis_a, axis_b);
      const GradientOpsMeta meta = GetGradientForOp(fwd, {GradientWrapper{"Y_grad", "", ""}});
      std::map<std::string, Tensor> in = split;
      in["Y_grad"] = RandomTensor({5, 3}, 5);
      for (const auto& op : meta.ops) {
        for (DataType dt : kDtypes) DeviceChecker(opts).Check(op, AsDtype(in, dt));
      }
    }
  }
  // Empty sums (K = 0) give zeros.
  ExpectCudaIdentical(MatMulDef(0, 0, 1, 1),
                      {{"A", RandomTensor({3, 0}, 10)}, {"B", RandomTensor({0, 4}, 11)}});
  ExpectCudaError(MatMulDef(0, 0, 1, 1),
                  {{"A", RandomTensor({3, 4}, 1)}, {"B", RandomTensor({5, 4}, 2)}},
                  "the inner dims differ: A is 3 x 4 but B is 5 x 4");
  ExpectCudaError(
      MatMulDef(0, 0, 1, 1),
      {{"A", ToBFloat16(RandomTensor({3, 4}, 1))}, {"B", ToBFloat16(RandomTensor({4, 2}, 2))}},
      "must be float or float16 on CUDA");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
