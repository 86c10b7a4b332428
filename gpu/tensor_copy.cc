#include "gpu/tensor_copy.h"

#include "gpu/cuda_check.h"

namespace halfcaf {
namespace gpu {

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
    // Another GPU: src was written on that device's own stream, which `stream` is not ordered
    // with (and a later op there may overwrite src while an async copy still reads it). The
    // synchronous peer copy is serialised with the pending and later work of both devices.
    HALFCAF_CUDA_CHECK(cudaMemcpyPeer(d, dst->device().id, src.raw_data(), src.device().id,
                                      src.nbytes()));
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
