// Slice / SliceGradient, Free, ZeroGradient and CopyFromCPUInput on CUDA against the CPU
// operators. Device tests skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "core/gradient.h"
#include "tests/gpu/gpu_op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

const Device kGpu{DeviceType::CUDA, 0};

TEST(SliceBlobGpuTest, Registered) {
  for (const char* type : {"Slice", "SliceGradient", "Free", "ZeroGradient", "CopyFromCPUInput"}) {
    EXPECT_TRUE(OperatorRegistry::HasType(DeviceType::CUDA, type)) << type;
  }
}

// The same values in every element size the kernels move (1, 2, 4, 8 bytes); uint8 from |x|.
std::vector<Tensor> AllTypes(const Tensor& x) {
  Tensor magnitude;
  magnitude.CopyFrom(x);
  float* m = magnitude.mutable_data<float>();
  for (int64_t i = 0; i < magnitude.numel(); ++i) m[i] = std::fabs(m[i]);
  return {x,
          ToHalf(x),
          CastTensor<int32_t>(x, 100.f),
          CastTensor<int64_t>(x, 100.f),
          CastTensor<uint8_t>(magnitude, 200.f),
          CastTensor<double>(x)};
}

Tensor Int64Tensor(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  return TypedTensor<int64_t>(std::move(dims), values);
}

TEST(SliceBlobGpuTest, SliceMatchesCpu) {
  REQUIRE_GPU();
  const struct {
    std::vector<int64_t> dims, starts, ends;
  } cases[] = {
      {{3, 7, 5}, {0, 2}, {3, 6}},          // middle dim
      {{3, 7, 5}, {1}, {-1}},               // first dim, negative end
      {{3, 7, 5}, {0, 0, -4}, {-1, 7, 5}},  // last dim
      {{3, 7, 5}, {0, 3}, {3, 3}},          // empty slice
      {{4, 9}, {}, {}},                     // whole tensor
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(DimsString(c.starts) + " " + DimsString(c.ends));
    const Tensor x = RandomTensor(c.dims, 5);
    const auto fwd =
        MakeOperatorDef("Slice", "", {"X"}, {"Y"},
                        {MakeArgument("starts", c.starts), MakeArgument("ends", c.ends)});
    // The slice's shape, from the CPU op, for the gradient's dY.
    Workspace ws;
    RunOp(fwd, {{"X", x}}, &ws);
    const Tensor dy = RandomTensor(ws.GetTensor("Y").dims(), 6);
    for (size_t t = 0; t < AllTypes(x).size(); ++t) {
      SCOPED_TRACE(DataTypeName(AllTypes(x)[t].dtype()));
      ExpectCudaIdentical(fwd, {{"X", AllTypes(x)[t]}});
      // Bounds as host inputs; the gradient in both forms.
      const std::map<std::string, Tensor> idx{
          {"s", TypedTensor<int32_t>({static_cast<int64_t>(c.starts.size())},
                                     std::vector<int32_t>(c.starts.begin(), c.starts.end()))},
          {"e", Int64Tensor({static_cast<int64_t>(c.ends.size())}, c.ends)}};
      std::map<std::string, Tensor> in = idx;
      in["X"] = AllTypes(x)[t];
      ExpectCudaIdentical(MakeOperatorDef("Slice", "", {"X", "s", "e"}, {"Y"}), in, {"s", "e"});
      in["dY"] = AllTypes(dy)[t];
      // Twice: the zero fill must clear what the first run left.
      ExpectCudaIdentical(MakeOperatorDef("SliceGradient", "", {"X", "s", "e", "dY"}, {"dX"}), in,
                          {"s", "e"}, 2);
      ExpectCudaIdentical(
          MakeOperatorDef("SliceGradient", "", {"X", "dY"}, {"dX"},
                          {MakeArgument("starts", c.starts), MakeArgument("ends", c.ends)}),
          {{"X", in["X"]}, {"dY", in["dY"]}});
    }
  }
}

TEST(SliceBlobGpuTest, SliceErrors) {
  REQUIRE_GPU();
  const std::map<std::string, Tensor> in{{"X", RandomTensor({4, 6}, 1)}};
  auto slice = [](std::vector<int64_t> s, std::vector<int64_t> e) {
    return MakeOperatorDef("Slice", "", {"X"}, {"Y"},
                           {MakeArgument("starts", s), MakeArgument("ends", e)});
  };
  ExpectCudaError(slice({0, 4}, {4, 2}), in, "start 4 is after end 2 for dim 1");
  ExpectCudaError(slice({0, -8}, {4, 6}), in, "out of range");
  ExpectCudaError(slice({1, 1}, {3, 5}), in, "cut both dim 0 and dim 1");
  ExpectCudaError(MakeOperatorDef("SliceGradient", "", {"X", "dY"}, {"dX"},
                                  {MakeArgument("starts", std::vector<int64_t>{1}),
                                   MakeArgument("ends", std::vector<int64_t>{3})}),
                  {{"X", RandomTensor({4, 6}, 1)}, {"dY", RandomTensor({3, 6}, 2)}},
                  "dY has dims [3, 6]");
}

TEST(SliceBlobGpuTest, FreeAndZeroGradient) {
  REQUIRE_GPU();
  Workspace ws;
  ws.CreateTensor("a", kGpu)->CopyFrom(RandomTensor({64, 33}, 1));
  ws.CreateTensor("b", kGpu)->CopyFrom(ToHalf(RandomTensor({7}, 2)));
  // A kernel still queued on the op's stream reads `a` when Free runs.
  CreateOperator(OnCuda(MakeOperatorDef("Relu", "", {"a"}, {"r"})), &ws)->Run(0);
  CreateOperator(OnCuda(MakeOperatorDef("ZeroGradient", "", {"a"}, {})), &ws)->Run(0);
  CreateOperator(OnCuda(MakeOperatorDef("Free", "", {"a", "b"}, {"a", "b"})), &ws)->Run(0);
  EXPECT_TRUE(ws.GetBlob("a")->empty());
  EXPECT_TRUE(ws.GetBlob("b")->empty());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Tensor r;
  r.CopyFrom(ws.GetTensor("r"));
  EXPECT_EQ(r.dims(), (std::vector<int64_t>{64, 33}));
  // ZeroGradient's gradient (ConstantFill) on the GPU.
  const auto meta = GetGradientForOp(MakeOperatorDef("ZeroGradient", "", {"X"}, {}), {});
  ASSERT_EQ(meta.ops.size(), 1u);
  ExpectCudaIdentical(meta.ops[0], {{"X", RandomTensor({3, 5}, 3)}});
}

TEST(SliceBlobGpuTest, CopyFromCPUInput) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor({5, 9}, 4);
  for (const Tensor& t : AllTypes(x)) {
    SCOPED_TRACE(DataTypeName(t.dtype()));
    const CpuCudaOutputs r =
        RunCpuAndCuda(MakeOperatorDef("CopyFromCPUInput", "", {"X"}, {"Y"}), {{"X", t}}, {"X"}, 2);
    ExpectIdentical(r.cuda[0], t, "Y");
    EXPECT_EQ(r.cuda_devices[0], kGpu) << "the output lives on the op's GPU";
  }
  // A GPU input is refused: the op copies from the host.
  ExpectCudaError(MakeOperatorDef("CopyFromCPUInput", "", {"X"}, {"Y"}), {{"X", x}}, "is on CUDA");
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
