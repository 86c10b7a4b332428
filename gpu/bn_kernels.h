// Spatial batch-normalisation kernels on CUDA that complement cuDNN's (operators/
// spatial_bn_op_cudnn.cc): the running-statistics update with the biased batch variance, and the
// test-mode gradient (mean and variance constant). X is viewed as (N, C, S) in NCHW or (N * S, C)
// in NHWC; statistics and parameters are float. All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"

namespace halfcaf {
namespace gpu {

// running = running * momentum + batch * (1 - momentum), per channel, where the batch variance
// is the biased one: batch_var_unbiased * (M - 1) / M (0 when M == 1), M values per channel, or
// with `unbiased` the unbiased one as given.
void BNUpdateRunningStats(int64_t C, int64_t M, float momentum, bool unbiased,
                          const float* batch_mean, const float* batch_var_unbiased,
                          float* running_mean, float* running_var, cudaStream_t stream);

// Test-mode gradient with inv_std = 1 / sqrt(var + epsilon):
//   dscale[c] = sum dy * (x - mean[c]) * inv_std[c], dbias[c] = sum dy,
//   dx = dy * scale[c] * inv_std[c] (X's dtype T; dY any float type TD).
template <typename T, typename TD>
void BNTestModeGradient(int64_t N, int64_t C, int64_t S, bool nhwc, const T* x, const TD* dy,
                        const float* scale, const float* mean, const float* var, float epsilon,
                        T* dx, float* dscale, float* dbias, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
