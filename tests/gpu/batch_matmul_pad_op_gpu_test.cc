// BatchMatMul (cuBLAS strided batched GEMM) and PadImage / PadImageGradient on CUDA against the
// CPU operators, in float and float16. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const DataType kDtypes[] = {DataType::FLOAT, DataType::FLOAT16};

OperatorDef MatMulDef(int trans_a, int trans_b, int broadcast = 0) {
  return MakeOperatorDef("BatchMatMul", "", {"A", "B"}, {"Y"},
                         {MakeArgument("trans_a", trans_a), MakeArgument("trans_b", trans_b),
                          MakeArgument("broadcast", broadcast)});
}

TEST(BatchMatMulPadGpuTest, Registered) {
  for (const char* type : {"BatchMatMul", "PadImage", "PadImageGradient"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

TEST(BatchMatMulPadGpuTest, BatchMatMulMatchesCpu) {
  REQUIRE_GPU();
  DeviceCheckOptions opts;
  opts.atol16 = 2e-2f;  // K = 33 products of values in [-1, 1], rounded once to float16
  const int64_t M = 5, N = 3, K = 33;
  for (int ta : {0, 1}) {
    for (int tb : {0, 1}) {
      SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
      const std::vector<int64_t> a_mat =
          ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
      const std::vector<int64_t> b_mat =
          tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
      std::vector<int64_t> a_dims{2, 3}, b_dims{2, 3};
      a_dims.insert(a_dims.end(), a_mat.begin(), a_mat.end());
      b_dims.insert(b_dims.end(), b_mat.begin(), b_mat.end());
      const std::map<std::string, Tensor> in{{"A", RandomTensor(a_dims, 1)},
                                             {"B", RandomTensor(b_dims, 2)}};
      for (DataType dt : kDtypes) DeviceChecker(opts).Check(MatMulDef(ta, tb), AsDtype(in, dt));
      // A plain matrix product, and broadcast batch dims (several strided runs, and a shared B).
      const std::map<std::string, Tensor> plain{{"A", RandomTensor(a_mat, 3)},
                                                {"B", RandomTensor(b_mat, 4)}};
      for (DataType dt : kDtypes) DeviceChecker(opts).Check(MatMulDef(ta, tb), AsDtype(plain, dt));
      std::vector<int64_t> a_bc{3, 1};
      a_bc.insert(a_bc.end(), a_mat.begin(), a_mat.end());
      std::vector<int64_t> b_bc{4};
      b_bc.insert(b_bc.end(), b_mat.begin(), b_mat.end());
      const std::map<std::string, Tensor> bc{{"A", RandomTensor(a_bc, 5)},
                                             {"B", RandomTensor(b_bc, 6)}};
      for (DataType dt : kDtypes) {
        DeviceChecker(opts).Check(MatMulDef(ta, tb, 1), AsDtype(bc, dt));
        DeviceChecker(opts).Check(MatMulDef(ta, tb, 1), AsDtype(plain, dt));
      }
    }
  }
  // Vectors, and empty sums (K = 0) give zeros.
  DeviceChecker(opts).Check(MatMulDef(0, 0, 1),
                            {{"A", RandomTensor({33}, 7)}, {"B", RandomTensor({4, 33, 3}, 8)}});
  DeviceChecker(opts).Check(MatMulDef(0, 0, 1),
                            {{"A", RandomTensor({33}, 7)}, {"B", RandomTensor({33}, 9)}});
  ExpectCudaIdentical(MatMulDef(0, 0),
                      {{"A", RandomTensor({2, 3, 0}, 10)}, {"B", RandomTensor({2, 0, 4}, 11)}});
  ExpectCudaError(MatMulDef(0, 0),
                  {{"A", RandomTensor({2, 3, 4}, 1)}, {"B", RandomTensor({2, 5, 4}, 2)}},
                  "the inner dims differ");
}

TEST(BatchMatMulPadGpuTest, PadImageMatchesCpu) {
  REQUIRE_GPU();
  const Tensor nchw = RandomTensor({2, 3, 5, 7}, 20);
  const Tensor nhwc = RandomTensor({2, 5, 7, 3}, 21);
  const std::vector<std::vector<int64_t>> pads_cases = {{1, 2, 3, 4}, {0, 0, 0, 0}, {4, 6, 0, 1}};
  for (const char* mode : {"constant", "reflect", "edge"}) {
    for (const auto& pads : pads_cases) {
      for (const char* order : {"NCHW", "NHWC"}) {
        SCOPED_TRACE(std::string(mode) + " pads " + DimsString(pads) + " " + order);
        const std::vector<Argument> args{MakeArgument("mode", mode), MakeArgument("pads", pads),
                                         MakeArgument("order", order),
                                         MakeArgument("value", 0.75f)};
        const Tensor& x = std::string(order) == "NCHW" ? nchw : nhwc;
        const OperatorDef fwd = MakeOperatorDef("PadImage", "", {"X"}, {"Y"}, args);
        for (const Tensor& t : {x, ToHalf(x)}) ExpectCudaIdentical(fwd, {{"X", t}});
        Workspace ws;
        RunOp(fwd, {{"X", x}}, &ws);
        const Tensor dy = RandomTensor(ws.GetTensor("Y").dims(), 22);
        const OperatorDef grad = MakeOperatorDef("PadImageGradient", "", {"dY"}, {"dX"}, args);
        for (DataType dt : kDtypes) DeviceChecker().Check(grad, AsDtype({{"dY", dy}}, dt));
      }
    }
  }
  // Edge pads wider than the image sum many copies into one element.
  DeviceChecker().Check(MakeOperatorDef("PadImageGradient", "", {"dY"}, {"dX"},
                                        {MakeArgument("mode", "edge"),
                                         MakeArgument("pads", std::vector<int64_t>{9, 8, 7, 6})}),
                        {{"dY", RandomTensor({1, 2, 19, 16}, 23)}});
  ExpectCudaError(MakeOperatorDef("PadImage", "", {"X"}, {"Y"},
                                  {MakeArgument("mode", "reflect"), MakeArgument("pad", 5)}),
                  {{"X", nchw}}, "reflect pads must be smaller than the dim they mirror");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
