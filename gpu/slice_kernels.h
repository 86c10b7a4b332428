// Slice kernels on CUDA: a tensor viewed as (outer, dim, inner), of which the index range
// [start, start + length) of the middle axis is kept. Elements are copied as raw bytes (1, 2, 4
// or 8 bytes each), so every data type works. Both functions queue their work on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace halfcaf {
namespace gpu {

// y (outer, length, inner) = x (outer, dim, inner)[:, start:start + length, :].
void SliceForward(int64_t outer, int64_t dim, int64_t inner, int64_t start, int64_t length,
                  size_t item_size, const void* x, void* y, cudaStream_t stream);

// dx (outer, dim, inner) = 0, then dx[:, start:start + length, :] = dy (outer, length, inner).
void SliceBackward(int64_t outer, int64_t dim, int64_t inner, int64_t start, int64_t length,
                   size_t item_size, const void* dy, void* dx, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
