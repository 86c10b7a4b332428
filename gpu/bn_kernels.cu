#include "gpu/bn_kernels.h"
#include "gpu/cuda_check.h"
#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using namespace kutil;  // NOLINT

namespace {

__global__ void BNUpdateRunningStatsKernel(int64_t C, int64_t M, float momentum, bool unbiased,
                                           const float* batch_mean, const float* batch_var,
                                           float* running_mean, float* running_var) {
  const double keep = momentum, take = 1.0 - static_cast<double>(momentum);
  const double biased =
      M <= 1 ? 0.0 : unbiased ? 1.0 : static_cast<double>(M - 1) / static_cast<double>(M);
  HALFCAF_KERNEL_LOOP(c, C) {
    running_mean[c] = static_cast<float>(running_mean[c] * keep + batch_mean[c] * take);
    const double var = M > 1 ? batch_var[c] * biased : 0.0;
    running_var[c] = static_cast<float>(running_var[c] * keep + var * take);
  }
}

__device__ __forceinline__ int64_t ChannelElement(int64_t k, int64_t c, int64_t C, int64_t S,
                                                  bool nhwc) {
  return nhwc ? k * C + c : ((k / S) * C + c) * S + k % S;
}

// One block per channel: dscale and dbias.
template <typename T, typename TD>
__global__ void BNTestParamGradKernel(int64_t N, int64_t C, int64_t S, bool nhwc, const T* x,
                                      const TD* dy, const float* mean, const float* var,
                                      float epsilon, float* dscale, float* dbias) {
  const int64_t M = N * S;
  HALFCAF_ROW_LOOP(c, C) {
    const float inv_std = 1.f / sqrtf(var[c] + epsilon);
    const float mu = mean[c];
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t k = threadIdx.x; k < M; k += blockDim.x) {
      const int64_t i = ChannelElement(k, c, C, S, nhwc);
      const float d = Load(dy[i]);
      sum_dy += d;
      sum_dy_xhat += static_cast<double>(d) * ((Load(x[i]) - mu) * inv_std);
    }
    sum_dy = BlockAllReduce(sum_dy, SumOp(), 0.0);
    sum_dy_xhat = BlockAllReduce(sum_dy_xhat, SumOp(), 0.0);
    if (threadIdx.x == 0) {
      dscale[c] = static_cast<float>(sum_dy_xhat);
      dbias[c] = static_cast<float>(sum_dy);
    }
  }
}

template <typename T, typename TD>
__global__ void BNTestDataGradKernel(int64_t n, int64_t C, int64_t S, bool nhwc, const TD* dy,
                                     const float* scale, const float* var, float epsilon, T* dx) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const int64_t c = nhwc ? i % C : (i / S) % C;
    const float inv_std = 1.f / sqrtf(var[c] + epsilon);
    dx[i] = Store<T>(Load(dy[i]) * scale[c] * inv_std);
  }
}

}  // namespace

void BNUpdateRunningStats(int64_t C, int64_t M, float momentum, bool unbiased,
                          const float* batch_mean, const float* batch_var_unbiased,
                          float* running_mean, float* running_var, cudaStream_t stream) {
  if (C == 0) return;
  BNUpdateRunningStatsKernel<<<Blocks(C), kThreads, 0, stream>>>(
      C, M, momentum, unbiased, batch_mean, batch_var_unbiased, running_mean, running_var);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename TD>
void BNTestModeGradient(int64_t N, int64_t C, int64_t S, bool nhwc, const T* x, const TD* dy,
                        const float* scale, const float* mean, const float* var, float epsilon,
                        T* dx, float* dscale, float* dbias, cudaStream_t stream) {
  if (C == 0) return;
  BNTestParamGradKernel<<<RowBlocks(C), RowThreads(N * S), 0, stream>>>(
      N, C, S, nhwc, DevPtr(x), DevPtr(dy), mean, var, epsilon, dscale, dbias);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
  const int64_t n = N * C * S;
  if (n == 0) return;
  BNTestDataGradKernel<<<Blocks(n), kThreads, 0, stream>>>(n, C, S, nhwc, DevPtr(dy), scale, var,
                                                           epsilon, DevPtr(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

#define HALFCAF_BN_INSTANTIATE(T, TD)                                                           \
  template void BNTestModeGradient<T, TD>(int64_t, int64_t, int64_t, bool, const T*, const TD*, \
                                          const float*, const float*, const float*, float, T*,  \
                                          float*, float*, cudaStream_t);
HALFCAF_BN_INSTANTIATE(float, float)
HALFCAF_BN_INSTANTIATE(float, Half)
HALFCAF_BN_INSTANTIATE(Half, float)
HALFCAF_BN_INSTANTIATE(Half, Half)
#undef HALFCAF_BN_INSTANTIATE

}  // namespace gpu
}  // namespace halfcaf
