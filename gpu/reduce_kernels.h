// Reduction CUDA kernels: sums over chosen dims (ReduceSum/Mean, SumReduceLike), their broadcast
// back (the gradients), a dot product, row-wise squared distances and the inf/nan check of mixed
// precision. Sums accumulate in double, like the CPU operators, and are rounded once on output.
// Everything runs on `stream` without a host sync.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

// y = scale * (x summed over the dims with reduced[d] set); y holds the kept dims in order.
// x and y float / float16 (any mix) or both double. Dims that are next to each other and both
// kept or both reduced are merged; at most 8 dims may remain.
void ReduceSum(const std::vector<int64_t>& x_dims, const std::vector<bool>& reduced,
               DataType x_type, const void* x, DataType y_type, void* y, double scale,
               cudaStream_t stream);

// dx[xi] = dy[yi] * scale with yi the output element xi was reduced into (dY broadcast back over
// the reduced dims). dy, dx float / float16.
void BroadcastReduced(const std::vector<int64_t>& x_dims, const std::vector<bool>& reduced,
                      DataType dy_type, const void* dy, DataType dx_type, void* dx, float scale,
                      cudaStream_t stream);

// out[0] = sum_i a[i] * b[i] (a, b, out float / float16; out has one element).
void Dot(int64_t n, DataType a_type, const void* a, DataType b_type, const void* b,
         DataType out_type, void* out, cudaStream_t stream);

// dist[r] = 0.5 * sum_j (x[r, j] - y[r, j])^2 for r < rows; x, y float / float16 (rows, cols).
void RowHalfSquaredDistance(int64_t rows, int64_t cols, DataType x_type, const void* x,
                            DataType y_type, const void* y, float* dist, cudaStream_t stream);

// *flag = 1 when some element of x (float / float16) is inf or nan; *flag is left alone otherwise.
void MarkNonFinite(int64_t n, DataType type, const void* x, float* flag, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
