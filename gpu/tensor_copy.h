// Tensor copies that stay on the GPU and are queued on an operator's stream (Tensor::CopyFrom
// goes through a synchronous cudaMemcpy instead).
#pragma once

#include <cuda_runtime.h>

#include "core/tensor.h"

namespace halfcaf {
namespace gpu {

// dst = src (dims, dtype, values). src is on a CUDA device; dst keeps its device (a CUDA device:
// the same one, or another: a peer copy queued on `stream`, which must belong to the source or
// the destination device, after the work queued so far on the other device's stream, which in
// turn waits for the copy before its later work). Nothing happens when dst is src.
void CopyTensorAsync(const Tensor& src, Tensor* dst, cudaStream_t stream);

// Copies `rows` rows of `src_row` bytes from src (rows `src_pitch` bytes apart) to dst (rows
// `dst_pitch` bytes apart), device to device, on `stream`. Zero-sized copies do nothing.
void CopyRowsAsync(size_t rows, size_t src_row, const void* src, size_t src_pitch, void* dst,
                   size_t dst_pitch, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
