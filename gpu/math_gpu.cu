#include <cuda_fp16.h>

#include "gpu/cuda_check.h"
#include "gpu/math_gpu.h"

namespace halfcaf {
namespace gpu {

namespace {

constexpr int kThreads = 256;

inline int Blocks(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 8 ? b : 65535 * 8);
}

__global__ void FloatToHalfKernel(int64_t n, const float* x, __half* y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    y[i] = __float2half_rn(x[i]);
  }
}

__global__ void HalfToFloatKernel(int64_t n, const __half* x, float* y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    y[i] = __half2float(x[i]);
  }
}

}  // namespace

void FloatToHalf(int64_t n, const float* x, Half* y, cudaStream_t stream) {
  if (n == 0) return;
  FloatToHalfKernel<<<Blocks(n), kThreads, 0, stream>>>(n, x, reinterpret_cast<__half*>(y));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

void HalfToFloat(int64_t n, const Half* x, float* y, cudaStream_t stream) {
  if (n == 0) return;
  HalfToFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(n, reinterpret_cast<const __half*>(x), y);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpu
}  // namespace halfcaf
