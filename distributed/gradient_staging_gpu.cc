#include "distributed/gradient_staging.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"

namespace halfcaf {
namespace gradient_staging {

namespace {

struct Ready {
  int device = 0;
  cudaEvent_t event = nullptr;
  ~Ready() {
    if (event) (void)cudaEventDestroy(event);
  }
};

// A stream of the calling (communication) thread per device, apart from the compute stream.
cudaStream_t StagingStream(int device) {
  thread_local std::vector<cudaStream_t> streams;
  if (static_cast<size_t>(device) >= streams.size()) streams.resize(device + 1, nullptr);
  if (!streams[device]) {
    HALFCAF_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking));
  }
  return streams[device];
}

}  // namespace

std::shared_ptr<void> MarkReady(int device) {
  CudaDeviceGuard guard(device);
  auto ready = std::make_shared<Ready>();
  ready->device = device;
  HALFCAF_CUDA_CHECK(cudaEventCreateWithFlags(&ready->event, cudaEventDisableTiming));
  HALFCAF_CUDA_CHECK(cudaEventRecord(ready->event, CudaStream(device)));
  return ready;
}

std::shared_ptr<void> AllocatePinned(size_t nbytes) {
  void* p = nullptr;
  HALFCAF_CUDA_CHECK(cudaMallocHost(&p, std::max<size_t>(nbytes, 1)));
  return std::shared_ptr<void>(p, [](void* q) { (void)cudaFreeHost(q); });
}

void ToHost(const std::shared_ptr<void>& ready, const std::vector<Tensor*>& tensors, void* host) {
  const Ready& r = *static_cast<const Ready*>(ready.get());
  CudaDeviceGuard guard(r.device);
  const cudaStream_t stream = StagingStream(r.device);
  HALFCAF_CUDA_CHECK(cudaStreamWaitEvent(stream, r.event, 0));
  uint8_t* at = static_cast<uint8_t*>(host);
  for (const Tensor* t : tensors) {
    HALFCAF_CUDA_CHECK(
        cudaMemcpyAsync(at, t->raw_data(), t->nbytes(), cudaMemcpyDeviceToHost, stream));
    at += t->nbytes();
  }
  HALFCAF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void ToDevice(const void* host, const std::vector<Tensor*>& tensors) {
  const int device = tensors.at(0)->device().id;
  CudaDeviceGuard guard(device);
  const cudaStream_t stream = StagingStream(device);
  const uint8_t* at = static_cast<const uint8_t*>(host);
  for (Tensor* t : tensors) {
    HALFCAF_CUDA_CHECK(cudaMemcpyAsync(t->raw_mutable_data(), at, t->nbytes(),
                                       cudaMemcpyHostToDevice, stream));
    at += t->nbytes();
  }
  // The compute stream's later work (the update) is queued only after Wait, which follows this.
  HALFCAF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace gradient_staging
}  // namespace halfcaf
