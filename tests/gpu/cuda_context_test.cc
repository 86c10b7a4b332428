// GPU tests: labelled `gpu` in CTest; each skips when no CUDA device is present.
#include <gtest/gtest.h>

#include <thread>

#include "core/allocator.h"
#include "gpu/cuda_context.h"
#include "tests/util/op_test_util.h"

namespace halfcaf {
namespace testing {
namespace {

#define REQUIRE_GPU() \
  if (NumCudaDevices() == 0) GTEST_SKIP() << "no CUDA device (" << CudaDeviceError() << ")"

TEST(CudaContextTest, DeviceQuery) {
  REQUIRE_GPU();
  CudaDeviceInfo info = GetCudaDeviceInfo(0);
  EXPECT_GT(info.total_memory, 0u);
  EXPECT_GE(info.major, 7) << "halfcaf's CUDA build targets compute capability 7.5+";
  EXPECT_THROW(GetCudaDeviceInfo(NumCudaDevices()), EnforceNotMet);
}

TEST(CudaContextTest, AllocateCopyRoundTrip) {
  REQUIRE_GPU();
  Tensor host = RandomTensor({1000}, 3);
  Tensor dev(Device{DeviceType::CUDA, 0});
  dev.CopyFrom(host);
  Tensor back;
  back.CopyFrom(dev);
  EXPECT_EQ(ToFloatVector(back), ToFloatVector(host));
  EXPECT_GT(CudaPeakMemory(0), 0u);
}

// Host-only: a thread that ran no op files its blocks under the legacy default stream.
TEST(CudaAllocatorTest, ThreadWithoutOpsUsesTheLegacyStream) {
  cudaStream_t seen = reinterpret_cast<cudaStream_t>(1);
  std::thread([&] { seen = CurrentCudaStream(0); }).join();
  EXPECT_EQ(seen, nullptr);
}

DeviceOption CudaOption(int device) {
  DeviceOption opt;
  opt.set_device_type(static_cast<int>(DeviceType::CUDA));
  opt.set_device_id(device);
  return opt;
}

// A block freed on one stream must not be handed to another stream (whose work is not ordered
// after the kernels still queued on the first), only to its own stream again.
TEST(CudaAllocatorTest, FreedBlockIsReusedOnlyOnItsStream) {
  REQUIRE_GPU();
  CUDAContext ctx(CudaOption(0));
  const Device gpu{DeviceType::CUDA, 0};
  Allocator* a = GetAllocator(DeviceType::CUDA);
  const size_t kBytes = (3u << 20) + 17;  // a 4 MiB bucket
  ctx.SwitchToDevice(1);
  EXPECT_EQ(CurrentCudaStream(0), CudaStream(0, 1));
  void* freed = nullptr;
  {
    std::shared_ptr<void> b = a->Allocate(kBytes, gpu);
    freed = b.get();
  }  // freed on stream 1
  ctx.SwitchToDevice(0);
  EXPECT_EQ(CurrentCudaStream(0), CudaStream(0, 0));
  std::shared_ptr<void> other = a->Allocate(kBytes, gpu);
  EXPECT_NE(other.get(), freed) << "a block freed on stream 1 was handed to stream 0";
  std::shared_ptr<void> legacy;
  std::thread([&] { legacy = a->Allocate(kBytes, gpu); }).join();
  EXPECT_NE(legacy.get(), freed) << "a block freed on stream 1 was handed to the legacy stream";
  ctx.SwitchToDevice(1);
  std::shared_ptr<void> again = a->Allocate(kBytes, gpu);
  EXPECT_EQ(again.get(), freed) << "stream 1 did not get its cached block back";
  ctx.SwitchToDevice(0);
}

// EmptyCache gives the cached blocks back to the driver and leaves the caller's device current.
TEST(CudaAllocatorTest, EmptyCacheFreesBlocksAndKeepsTheCurrentDevice) {
  REQUIRE_GPU();
  const int last = NumCudaDevices() - 1;
  const Device gpu{DeviceType::CUDA, last};
  const size_t kBytes = size_t{256} << 20;
  ASSERT_EQ(cudaSetDevice(last), cudaSuccess);
  size_t free_before = 0, total = 0;
  CudaEmptyCache();
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  { std::shared_ptr<void> b = GetAllocator(DeviceType::CUDA)->Allocate(kBytes, gpu); }  // cached
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);  // another device current (with two or more GPUs)
  CudaEmptyCache();
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
  ASSERT_EQ(cudaSetDevice(last), cudaSuccess);
  size_t free_after = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_GE(free_after + (size_t{16} << 20), free_before) << "the cached block was not freed";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaContextTest, HalfConversionMatchesCpu) {
  REQUIRE_GPU();
  Workspace ws;
  Tensor x = RandomTensor({4097}, 5, -70000.f, 70000.f);
  SetInput(&ws, "x", x);
  NetDef net;
  DeviceOption gpu;
  gpu.set_device_type(1);
  *net.add_op() = MakeOperatorDef("CopyCPUToGPU", "", {"x"}, {"x_gpu"});
  *net.add_op() = MakeOperatorDef("FloatToHalf", "", {"x_gpu"}, {"h_gpu"});
  *net.add_op() = MakeOperatorDef("CopyGPUToCPU", "", {"h_gpu"}, {"h"});
  for (auto& op : *net.mutable_op()) *op.mutable_device_option() = gpu;
  *net.add_op() = MakeOperatorDef("FloatToHalf", "", {"x"}, {"h_cpu"});
  ws.RunNetOnce(net);
  const Tensor& h = ws.GetTensor("h");
  const Tensor& hc = ws.GetTensor("h_cpu");
  ASSERT_EQ(h.numel(), hc.numel());
  for (int64_t i = 0; i < h.numel(); ++i) EXPECT_EQ(h.data<Half>()[i].x, hc.data<Half>()[i].x) << i;
}

// CopyCPUToGPU goes through a pinned staging buffer, asynchronously: one op instance run on
// inputs that grow, shrink, change type and are empty, with the host input overwritten right
// after each run, must still deliver each run's values.
TEST(CudaContextTest, CopyCPUToGPUThroughPinnedStagingBuffer) {
  REQUIRE_GPU();
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({3}, 1));
  auto to_gpu = MakeOperatorDef("CopyCPUToGPU", "", {"x"}, {"x_gpu"});
  to_gpu.mutable_device_option()->set_device_type(1);
  auto op = CreateOperator(to_gpu, &ws);
  const std::vector<int64_t> sizes = {3, 100000, 7, 0, 2000000, 5};
  for (size_t k = 0; k < sizes.size(); ++k) {
    Tensor x = RandomTensor({sizes[k]}, 10 + k);
    if (k == 2) x = ToHalf(x);
    SetInput(&ws, "x", x);
    op->Run();
    // Overwrite the host input at once: the transfer must not read it any more.
    SetInput(&ws, "x", RandomTensor({sizes[k]}, 99));
    Tensor back;
    back.CopyFrom(ws.GetTensor("x_gpu"));  // waits for the queued copy
    EXPECT_EQ(ws.GetTensor("x_gpu").device().type, DeviceType::CUDA);
    EXPECT_EQ(back.dtype(), x.dtype());
    ASSERT_EQ(back.dims(), x.dims());
    EXPECT_EQ(ToFloatVector(back), ToFloatVector(x)) << "run " << k;
  }
}

// The count's error is kept for callers that must report it (gpu_preflight), not skip.
TEST(CudaContextTest, DeviceErrorSaysWhyThereIsNoDevice) {
  if (NumCudaDevices() == 0) {
    EXPECT_FALSE(CudaDeviceError().empty());
    int n = -1;
    const cudaError_t e = cudaGetDeviceCount(&n);
    (void)cudaGetLastError();
    if (e != cudaSuccess) {
      EXPECT_NE(CudaDeviceError().find(cudaGetErrorName(e)), std::string::npos)
          << CudaDeviceError();
    }
  } else {
    EXPECT_EQ(CudaDeviceError(), "");
  }
}

TEST(CudaContextTest, NoDeviceIsAClearError) {
  if (NumCudaDevices() > 0) GTEST_SKIP() << "a device exists";
  Workspace ws;
  SetInput(&ws, "x", RandomTensor({4}, 1));
  auto def = MakeOperatorDef("CopyCPUToGPU", "", {"x"}, {"y"});
  def.mutable_device_option()->set_device_type(1);
  try {
    CreateOperator(def, &ws);
    FAIL();
  } catch (const EnforceNotMet& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
