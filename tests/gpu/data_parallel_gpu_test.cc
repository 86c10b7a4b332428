// Data parallelism on CUDA (models/data_parallel.h): the gradient all-reduce with Copy + Sum on
// GPU replicas, and training with several replicas on one GPU (and, where the machine has two
// or more, one replica per GPU, exchanging gradients by peer copies) following a single-GPU run
// on the whole batch. Skips without a GPU.
#include <gtest/gtest.h>

#include "models/data_parallel.h"
#include "tests/gpu/gpu_op_test_util.h"
#include "tests/util/tiny_training.h"

namespace halfcaf {
namespace testing {
namespace {

const Device kGpu0{DeviceType::CUDA, 0};

// Two GPUs when there are, else two replicas on GPU 0.
std::vector<Device> TwoReplicaDevices() {
  if (NumCudaDevices() >= 2) return {kGpu0, Device{DeviceType::CUDA, 1}};
  return {kGpu0, kGpu0};
}

TEST(DataParallelGpuTest, AllReduceSumsFp16GradientsOnTheDevices) {
  REQUIRE_GPU();
  for (int n : {2, 3}) {
    std::vector<Device> devices;
    for (int i = 0; i < n; ++i) devices.push_back(Device{DeviceType::CUDA, i % NumCudaDevices()});
    auto replicas = MakeReplicas(devices);
    Workspace ws;
    std::vector<float> want(1000, 0.f);
    for (int i = 0; i < n; ++i) {
      Tensor t = ToHalf(RandomTensor({10, 100}, 7 + i));
      const std::vector<float> v = ToFloatVector(t);
      for (size_t k = 0; k < v.size(); ++k) want[k] += v[k];
      ws.CreateTensor(replicas[i].Blob("g"), replicas[i].device)->CopyFrom(t);
    }
    NetDef net;
    AddAllReduce({"g"}, replicas, &net);
    ws.RunNetOnce(net);
    for (int i = 0; i < n; ++i) {
      const Tensor& got = ws.GetTensor(replicas[i].Blob("g"));
      EXPECT_EQ(got.device(), replicas[i].device);
      Tensor host;
      host.CopyFrom(got);
      EXPECT_EQ(host.dtype(), DataType::FLOAT16);
      ExpectNear(ToFloatVector(host), want, 3e-3f * n, 3e-3f * n);
    }
  }
}

TEST(DataParallelGpuTest, ReplicasTrainLikeOneGpuOnTheWholeBatch) {
  REQUIRE_GPU();
  for (bool fp16 : {false, true}) {
    const auto one = TrainTiny(TinyTrainingOptions(fp16, 16, kGpu0), 20);
    const auto two = TrainTiny(TinyTrainingOptions(fp16, 16, kGpu0, TwoReplicaDevices()), 20);
    ASSERT_EQ(two.losses.size(), one.losses.size());
    // FP32: cuDNN may pick different algorithms for batch 8 and 16; FP16 gradients of half
    // batches are summed in FP16.
    const float tol = fp16 ? 1e-2f : 1e-4f;
    ExpectNear(two.losses, one.losses, tol, tol);
    ExpectNear(two.fc_w, one.fc_w, tol, tol);
    EXPECT_NEAR(two.test_loss, one.test_loss, tol * (1 + one.test_loss));
  }
}

// The GPU run agrees with the CPU run of the same replicas.
TEST(DataParallelGpuTest, GpuReplicasFollowCpuReplicas) {
  REQUIRE_GPU();
  const auto cpu = TrainTiny(TinyTrainingOptions(false, 12, Device(), {Device(), Device()}), 15);
  const auto gpu = TrainTiny(TinyTrainingOptions(false, 12, kGpu0, TwoReplicaDevices()), 15);
  ExpectNear(gpu.losses, cpu.losses, 1e-4f, 1e-4f);
  ExpectNear(gpu.fc_w, cpu.fc_w, 1e-4f, 1e-4f);
}

}  // namespace
}  // namespace testing
}  // namespace halfcaf
