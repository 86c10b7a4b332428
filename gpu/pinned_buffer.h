// A page-locked (pinned) host staging buffer for host-to-device copies queued on a stream. The
// GPU's copy engine reads pinned memory directly, so the transfer runs asynchronously at full bus
// speed; a copy from ordinary (pageable) memory is staged by the driver and blocks the host.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace halfcaf {
namespace gpu {

class PinnedStagingBuffer {
 public:
  PinnedStagingBuffer() = default;
  ~PinnedStagingBuffer();
  PinnedStagingBuffer(const PinnedStagingBuffer&) = delete;
  PinnedStagingBuffer& operator=(const PinnedStagingBuffer&) = delete;

  // dst (device memory of the current device) = nbytes of host memory src: src is copied into
  // the pinned buffer (after the previous transfer through it has finished reading it), then an
  // asynchronous copy to dst is queued on `stream`. src may be reused as soon as this returns.
  void CopyToDevice(const void* src, size_t nbytes, void* dst, cudaStream_t stream);

 private:
  void WaitForPreviousCopy();

  void* host_ = nullptr;
  size_t capacity_ = 0;
  cudaEvent_t done_ = nullptr;
  bool pending_ = false;
};

// A page-locked host buffer that grows on demand and is reused (device <-> host staging that the
// host also reads and writes, e.g. the distributed operators' network buffers). The caller orders
// its host accesses against queued copies (stream synchronization).
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  ~PinnedHostBuffer();
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  // At least nbytes of pinned memory; the pointer stays the same while nbytes does not grow.
  void* Reserve(size_t nbytes);

 private:
  void* host_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace gpu
}  // namespace halfcaf
