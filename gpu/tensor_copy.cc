#include "gpu/tensor_copy.h"

#include <mutex>
#include <set>
#include <utility>

#include "gpu/cuda_check.h"
#include "gpu/cuda_context.h"

namespace halfcaf {
namespace gpu {

namespace {

// Direct peer access from `device` to `peer` where the hardware allows it (otherwise
// cudaMemcpyPeerAsync stages through the host, which is slower but correct). Once per pair.
void EnablePeerAccessOnce(int device, int peer) {
  static std::mutex mu;
  static std::set<std::pair<int, int>> done;
  std::lock_guard<std::mutex> lk(mu);
  if (!done.insert({device, peer}).second) return;
  int can = 0;
  HALFCAF_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
  if (!can) return;
  CudaDeviceGuard guard(device);
  const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    return;
  }
  HALFCAF_CUDA_CHECK(err);
}

// Makes `waiter` wait for the work queued so far on `producer` (a stream of `producer_device`).
void StreamWaitsFor(cudaStream_t waiter, cudaStream_t producer, int producer_device) {
  cudaEvent_t event;
  {
    CudaDeviceGuard guard(producer_device);
    HALFCAF_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    HALFCAF_CUDA_CHECK(cudaEventRecord(event, producer));
  }
  HALFCAF_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
  HALFCAF_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait is satisfied
}

}  // namespace

void CopyTensorAsync(const Tensor& src, Tensor* dst, cudaStream_t stream) {
  if (dst == &src) return;
  HALFCAF_ENFORCE(src.device().type == DeviceType::CUDA && dst->device().type == DeviceType::CUDA,
                  "CopyTensorAsync copies between CUDA tensors, got ", src.DebugString(), " -> ",
                  dst->DebugString());
  dst->Resize(src.dims());
  void* d = dst->raw_mutable_data(src.dtype());
  if (src.nbytes() == 0) return;
  if (src.device().id == dst->device().id) {
    HALFCAF_CUDA_CHECK(
        cudaMemcpyAsync(d, src.raw_data(), src.nbytes(), cudaMemcpyDeviceToDevice, stream));
  } else {
    // `stream` belongs to one of the two devices (Copy runs on the destination's, its gradient
    // CopyOnDeviceLike on the source's). Streams of different devices are not ordered with each
    // other: the copy waits for the work queued so far on the other device's stream (which
    // produced src, or last used dst's memory), and later work there (which reads dst, or may
    // overwrite src) waits for the copy. Events are recorded on streams of their own device.
    const int from = src.device().id, to = dst->device().id;
    int on = -1;
    HALFCAF_CUDA_CHECK(cudaStreamGetDevice(stream, &on));
    HALFCAF_ENFORCE(on == from || on == to, "a copy from CUDA:", from, " to CUDA:", to,
                    " was queued on a stream of CUDA:", on);
    const int other = on == to ? from : to;
    EnablePeerAccessOnce(on, other);  // the device of `stream` drives the copy
    cudaStream_t other_stream = CudaStream(other);
    StreamWaitsFor(stream, other_stream, other);
    HALFCAF_CUDA_CHECK(cudaMemcpyPeerAsync(d, to, src.raw_data(), from, src.nbytes(), stream));
    StreamWaitsFor(other_stream, stream, on);
  }
}

void CopyRowsAsync(size_t rows, size_t src_row, const void* src, size_t src_pitch, void* dst,
                   size_t dst_pitch, cudaStream_t stream) {
  if (rows == 0 || src_row == 0) return;
  if (rows == 1 || (src_pitch == src_row && dst_pitch == src_row)) {  // contiguous
    HALFCAF_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, rows * src_row, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  HALFCAF_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, src_row, rows,
                                       cudaMemcpyDeviceToDevice, stream));
}

}  // namespace gpu
}  // namespace halfcaf
