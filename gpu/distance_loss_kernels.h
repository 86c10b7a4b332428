// CUDA kernels of the distance losses between predictions and targets: L1Distance
// (operators/loss/l1_distance_op.cc) and SmoothL1Loss (smooth_l1_loss_op.cc), with their
// gradients; those files have the rules. Inputs float, float16 or bfloat16 (computed in float,
// sums in double), losses float. All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

// z[r] = sum_j |x[r, j] - y[r, j]| for r < rows, x and y (rows, cols).
void L1Distance(int64_t rows, int64_t cols, DataType x_type, const void* x, DataType y_type,
                const void* y, float* z, cudaStream_t stream);

// dx = dz[r] * sign(x - y), 0 where |x - y| <= 1e-12; dy = -dx. dx has x_type, dy y_type.
void L1DistanceGradient(int64_t rows, int64_t cols, DataType x_type, const void* x, DataType y_type,
                        const void* y, DataType dz_type, const void* dz, void* dx, void* dy,
                        cudaStream_t stream);

// SmoothL1Loss's four inputs (n elements each) and its constants; norm = scale / N.
struct SmoothL1Inputs {
  int64_t n;
  DataType y_hat_type, y_type, alpha_in_type, alpha_out_type;
  const void *y_hat, *y, *alpha_in, *alpha_out;
  float beta;
  double norm;
};

// loss[0] = norm * sum_k alpha_out f(alpha_in (y_hat - y)) (one block: deterministic).
void SmoothL1Loss(const SmoothL1Inputs& in, float* loss, cudaStream_t stream);

// d_y_hat = d_loss[0] * norm * alpha_in * alpha_out * f'(alpha_in (y_hat - y)); d_y_hat has
// y_hat_type.
void SmoothL1LossGradient(const SmoothL1Inputs& in, DataType d_loss_type, const void* d_loss,
                          void* d_y_hat, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
