// Row gather and scatter-add on CUDA (Gather, BatchGatherGradient, SparseToDense). A tensor is
// viewed as (outer, dim, inner) and `index` (n entries, int32 or int64, on the device) picks rows
// of the middle axis; negative entries count from the end when `wrap` is set. The caller has
// checked every index against dim. Work is queued on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

// y (outer, n, inner) = x (outer, dim, inner)[:, index, :], elements of item_size bytes (any
// data type: bits are copied).
void GatherRows(int64_t outer, int64_t dim, int64_t inner, int64_t n, DataType index_type,
                const void* index, bool wrap, size_t item_size, const void* x, void* y,
                cudaStream_t stream);

// out (outer, dim, inner) = 0, then out[o, index[i], :] += src[o, i, :] for i < n; src and out
// of `type`: float (atomic adds into out), float16 (summed in `scratch`, outer * dim * inner
// floats, then rounded once), int32 or int64 (integer atomic adds). The order of the additions
// is not fixed, so float sums may differ from the CPU's in the last bits.
void ScatterAddRows(int64_t outer, int64_t dim, int64_t inner, int64_t n, DataType index_type,
                    const void* index, bool wrap, DataType type, const void* src, void* out,
                    float* scratch, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
