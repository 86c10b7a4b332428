#include "gpu/pinned_buffer.h"

#include <cstring>

#include "gpu/cuda_check.h"

namespace halfcaf {
namespace gpu {

PinnedStagingBuffer::~PinnedStagingBuffer() {
  // No throwing here: errors at teardown are ignored.
  if (pending_) (void)cudaEventSynchronize(done_);
  if (done_) (void)cudaEventDestroy(done_);
  if (host_) (void)cudaFreeHost(host_);
  (void)cudaGetLastError();
}

void PinnedStagingBuffer::WaitForPreviousCopy() {
  if (!pending_) return;
  HALFCAF_CUDA_CHECK(cudaEventSynchronize(done_));
  pending_ = false;
}

void PinnedStagingBuffer::CopyToDevice(const void* src, size_t nbytes, void* dst,
                                       cudaStream_t stream) {
  if (nbytes == 0) return;
  WaitForPreviousCopy();
  if (nbytes > capacity_) {
    if (host_) HALFCAF_CUDA_CHECK(cudaFreeHost(host_));
    host_ = nullptr;
    capacity_ = 0;
    HALFCAF_CUDA_CHECK(cudaHostAlloc(&host_, nbytes, cudaHostAllocPortable));
    capacity_ = nbytes;
  }
  if (!done_) HALFCAF_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  std::memcpy(host_, src, nbytes);
  HALFCAF_CUDA_CHECK(cudaMemcpyAsync(dst, host_, nbytes, cudaMemcpyHostToDevice, stream));
  HALFCAF_CUDA_CHECK(cudaEventRecord(done_, stream));
  pending_ = true;
}

PinnedHostBuffer::~PinnedHostBuffer() {
  if (host_) (void)cudaFreeHost(host_);
  (void)cudaGetLastError();
}

void* PinnedHostBuffer::Reserve(size_t nbytes) {
  if (nbytes > capacity_) {
    if (host_) HALFCAF_CUDA_CHECK(cudaFreeHost(host_));
    host_ = nullptr;
    capacity_ = 0;
    HALFCAF_CUDA_CHECK(cudaHostAlloc(&host_, nbytes, cudaHostAllocPortable));
    capacity_ = nbytes;
  }
  return host_;
}

}  // namespace gpu
}  // namespace halfcaf
