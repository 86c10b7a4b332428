#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/nan_math.h"
#include "gpu/cuda_check.h"
#include "gpu/kernel_util.cuh"
#include "gpu/math_gpu.h"

namespace halfcaf {
namespace gpu {

using namespace kutil;  // NOLINT

namespace {

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

#define HALFCAF_GRID_LOOP(i, n)                                             \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

template <typename T>
__global__ void SetKernel(int64_t n, float value, T* y) {
  const T v = Store<T>(value);
  HALFCAF_GRID_LOOP(i, n) { y[i] = v; }
}

template <typename TB, typename TY>
__global__ void ChannelBiasKernel(int64_t n, int64_t channels, int64_t inner, const TB* b, TY* y,
                                  bool accumulate) {
  HALFCAF_GRID_LOOP(i, n) {
    const float bv = Load(b[(i / inner) % channels]);
    y[i] = Store<TY>(accumulate ? Load(y[i]) + bv : bv);
  }
}

template <typename T>
__global__ void ReluKernel(int64_t n, const T* x, T* y) {
  HALFCAF_GRID_LOOP(i, n) {
    const float v = Load(x[i]);
    y[i] = Store<T>(ReluNaN(v));
  }
}

template <typename TY, typename TD>
__global__ void ReluGradientKernel(int64_t n, const TY* y, const TD* dy, TD* dx) {
  HALFCAF_GRID_LOOP(i, n) {
    const float yv = Load(y[i]);
    dx[i] = Store<TD>(GatedGradient(yv > 0.f, yv, Load(dy[i])));
  }
}

#undef HALFCAF_GRID_LOOP

template <typename T>
void SetImpl(int64_t n, float value, T* y, cudaStream_t stream) {
  if (n == 0) return;
  SetKernel<<<Blocks(n), kThreads, 0, stream>>>(n, value, reinterpret_cast<DevT<T>*>(y));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TB, typename TY>
void ChannelBiasImpl(int64_t outer, int64_t channels, int64_t inner, const TB* b, TY* y,
                     bool accumulate, cudaStream_t stream) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return;
  ChannelBiasKernel<<<Blocks(n), kThreads, 0, stream>>>(n, channels, inner,
                                                        reinterpret_cast<const DevT<TB>*>(b),
                                                        reinterpret_cast<DevT<TY>*>(y), accumulate);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void ReluImpl(int64_t n, const T* x, T* y, cudaStream_t stream) {
  if (n == 0) return;
  ReluKernel<<<Blocks(n), kThreads, 0, stream>>>(n, reinterpret_cast<const DevT<T>*>(x),
                                                 reinterpret_cast<DevT<T>*>(y));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TY, typename TD>
void ReluGradientImpl(int64_t n, const TY* y, const TD* dy, TD* dx, cudaStream_t stream) {
  if (n == 0) return;
  ReluGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(n, reinterpret_cast<const DevT<TY>*>(y),
                                                         reinterpret_cast<const DevT<TD>*>(dy),
                                                         reinterpret_cast<DevT<TD>*>(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
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

void Set(int64_t n, float value, float* y, cudaStream_t stream) { SetImpl(n, value, y, stream); }
void Set(int64_t n, float value, Half* y, cudaStream_t stream) { SetImpl(n, value, y, stream); }
void Set(int64_t n, float value, BFloat16* y, cudaStream_t stream) {
  SetImpl(n, value, y, stream);
}

void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const float* b, float* y,
                 bool accumulate, cudaStream_t stream) {
  ChannelBiasImpl(outer, channels, inner, b, y, accumulate, stream);
}
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const float* b, Half* y,
                 bool accumulate, cudaStream_t stream) {
  ChannelBiasImpl(outer, channels, inner, b, y, accumulate, stream);
}
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const Half* b, float* y,
                 bool accumulate, cudaStream_t stream) {
  ChannelBiasImpl(outer, channels, inner, b, y, accumulate, stream);
}
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const Half* b, Half* y,
                 bool accumulate, cudaStream_t stream) {
  ChannelBiasImpl(outer, channels, inner, b, y, accumulate, stream);
}
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const float* b, BFloat16* y,
                 bool accumulate, cudaStream_t stream) {
  ChannelBiasImpl(outer, channels, inner, b, y, accumulate, stream);
}
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const BFloat16* b, BFloat16* y,
                 bool accumulate, cudaStream_t stream) {
  ChannelBiasImpl(outer, channels, inner, b, y, accumulate, stream);
}

void Relu(int64_t n, const float* x, float* y, cudaStream_t stream) { ReluImpl(n, x, y, stream); }
void Relu(int64_t n, const Half* x, Half* y, cudaStream_t stream) { ReluImpl(n, x, y, stream); }
void Relu(int64_t n, const BFloat16* x, BFloat16* y, cudaStream_t stream) {
  ReluImpl(n, x, y, stream);
}

void ReluGradient(int64_t n, const float* y, const float* dy, float* dx, cudaStream_t stream) {
  ReluGradientImpl(n, y, dy, dx, stream);
}
void ReluGradient(int64_t n, const Half* y, const float* dy, float* dx, cudaStream_t stream) {
  ReluGradientImpl(n, y, dy, dx, stream);
}
void ReluGradient(int64_t n, const float* y, const Half* dy, Half* dx, cudaStream_t stream) {
  ReluGradientImpl(n, y, dy, dx, stream);
}
void ReluGradient(int64_t n, const Half* y, const Half* dy, Half* dx, cudaStream_t stream) {
  ReluGradientImpl(n, y, dy, dx, stream);
}
void ReluGradient(int64_t n, const BFloat16* y, const BFloat16* dy, BFloat16* dx,
                  cudaStream_t stream) {
  ReluGradientImpl(n, y, dy, dx, stream);
}

}  // namespace gpu
}  // namespace halfcaf
