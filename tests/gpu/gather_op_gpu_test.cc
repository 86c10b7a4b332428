// Gather, BatchGatherGradient and SparseToDense on CUDA against the CPU operators. INDICES are
// device tensors, as in Caffe2. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

OperatorDef GatherDef(std::vector<Argument> args = {}) {
  return MakeOperatorDef("Gather", "", {"D", "I"}, {"Y"}, args);
}

TEST(GatherGpuTest, Registered) {
  for (const char* type : {"Gather", "BatchGatherGradient", "SparseToDense"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

TEST(GatherGpuTest, GatherMatchesCpuForEveryTypeAndAxis) {
  REQUIRE_GPU();
  const Tensor d = RandomTensor({5, 3, 7}, 1);
  const std::vector<Tensor> data = {
      d,
      ToHalf(d),
      CastTensor<int32_t>(d, 100.f),
      CastTensor<int64_t>(d, 100.f),
      CastTensor<double>(d),
      CastTensor<uint8_t>(RandomTensor({5, 3, 7}, 2, 0.f, 2.f), 100.f)};
  const Tensor i32 = IntTensor({2, 3}, {0, 2, 2, 1, 0, 2});
  const Tensor i64 = TypedTensor<int64_t>({4}, {-1, 0, -3, 1});
  for (const Tensor& t : data) {
    SCOPED_TRACE(DataTypeName(t.dtype()));
    for (int axis : {0, 1, 2, -1}) {
      ExpectCudaIdentical(GatherDef({MakeArgument("axis", axis)}), {{"D", t}, {"I", i32}});
    }
    ExpectCudaIdentical(GatherDef(), {{"D", t}, {"I", i64}});  // wrapped negatives
    ExpectCudaIdentical(GatherDef({MakeArgument("axis", 2), MakeArgument("wrap_indices", 1)}),
                        {{"D", t}, {"I", i64}});
  }
  // Empty DATA axis (Caffe2's empty-batch rule) and no indices.
  ExpectCudaIdentical(GatherDef(), {{"D", RandomTensor({0, 4}, 3)}, {"I", i32}});
  ExpectCudaIdentical(GatherDef(), {{"D", d}, {"I", IntTensor({0}, {})}});
  ExpectCudaError(GatherDef({MakeArgument("axis", 1)}), {{"D", d}, {"I", IntTensor({2}, {1, 3})}},
                  "index 3 at position 1 of the indices is out of range for a dim of size 3");
  ExpectCudaError(GatherDef(), {{"D", d}, {"I", FloatTensor({1}, {0})}},
                  "indices must be int32 or int64");
}

TEST(GatherGpuTest, DenseGradientOpsMatchCpu) {
  REQUIRE_GPU();
  const Tensor d = RandomTensor({5, 3, 7}, 4);
  const Tensor idx = IntTensor({2, 2}, {6, 0, 6, 2});  // a repeated index adds up
  const OperatorDef bgg = MakeOperatorDef("BatchGatherGradient", "", {"D", "I", "G"}, {"dD"},
                                          {MakeArgument("axis", 2)});
  const Tensor g = RandomTensor({5, 3, 2, 2}, 5);
  DeviceCheckOptions opts;
  opts.atol = 1e-5f;  // atomic adds: the order of two terms may differ
  for (DataType dt : {DataType::FLOAT, DataType::FLOAT16}) {
    auto in = AsDtype({{"G", g}}, dt);
    in["D"].CopyFrom(d);
    in["I"].CopyFrom(idx);
    DeviceChecker(opts).Check(bgg, in);
  }
  DeviceChecker(opts).Check(MakeOperatorDef("BatchGatherGradient", "", {"D", "I", "G"}, {"dD"}),
                            {{"D", d},
                             {"I", TypedTensor<int64_t>({4}, {2, 0, 2, 1})},
                             {"G", RandomTensor({5, 4, 7}, 6)}});
  // SparseToDense: first dim from the indices, from output_first_dim, from data_to_infer_dim.
  const Tensor s_idx = IntTensor({5}, {3, 0, 3, 7, 3});
  const Tensor vals = RandomTensor({5, 4}, 7);
  const OperatorDef s2d = MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"});
  for (DataType dt : {DataType::FLOAT, DataType::FLOAT16}) {
    auto in = AsDtype({{"V", vals}}, dt);
    in["I"].CopyFrom(s_idx);
    DeviceChecker(opts).Check(s2d, in);
  }
  DeviceChecker(opts).Check(MakeOperatorDef("SparseToDense", "", {"I", "V"}, {"Y"},
                                            {MakeArgument("output_first_dim", 11)}),
                            {{"I", s_idx}, {"V", vals}});
  DeviceChecker(opts).Check(MakeOperatorDef("SparseToDense", "", {"I", "V", "L"}, {"Y"}),
                            {{"I", s_idx}, {"V", vals}, {"L", RandomTensor({9}, 8)}});
  // Integer values add exactly.
  ExpectCudaIdentical(s2d, {{"I", s_idx}, {"V", CastTensor<int32_t>(vals, 1000.f)}});
  ExpectCudaIdentical(s2d, {{"I", s_idx}, {"V", CastTensor<int64_t>(vals, 1e6f)}});
  ExpectCudaError(s2d, {{"I", IntTensor({2}, {0, -1})}, {"V", RandomTensor({2}, 9)}},
                  "index -1 at position 1");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
