// Device-side helpers for the operator kernels in gpu/*_kernels.cu (include from .cu files only):
// the CUDA type of a halfcaf element type, float loads/stores (float16 is computed in float and
// rounded once on store), launch sizes, a grid-stride loop and block-wide reductions.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"

namespace halfcaf {
namespace gpu {
namespace kutil {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (capped; the loop covers the rest).
inline int Blocks(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

// Blocks for one block per row (rows beyond the cap are looped over).
inline int RowBlocks(int64_t rows) {
  return static_cast<int>(rows < (1 << 20) ? (rows > 0 ? rows : 1) : (1 << 20));
}

// Threads for one block per row of `d` elements: a multiple of 32 in [32, 512].
inline int RowThreads(int64_t d) {
  int t = 32;
  while (t < 512 && t < d) t *= 2;
  return t;
}

// Half is bit-compatible with __half; kernels see the CUDA type.
template <typename T>
struct Dev {
  using type = T;
};
template <>
struct Dev<Half> {
  using type = __half;
};
template <typename T>
using DevT = typename Dev<T>::type;

template <typename T>
inline DevT<T>* DevPtr(T* p) {
  return reinterpret_cast<DevT<T>*>(p);
}
template <typename T>
inline const DevT<T>* DevPtr(const T* p) {
  return reinterpret_cast<const DevT<T>*>(p);
}

__device__ __forceinline__ float Load(float v) { return v; }
__device__ __forceinline__ float Load(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ T Store(float v);
template <>
__device__ __forceinline__ float Store<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half Store<__half>(float v) {
  return __float2half_rn(v);
}

#define HALFCAF_KERNEL_LOOP(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

#define HALFCAF_ROW_LOOP(row, rows) for (int64_t row = blockIdx.x; row < (rows); row += gridDim.x)

struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024) and returns the result to
// every thread. Every thread of the block must call it; it may be called repeatedly.
template <typename T, typename Op>
__device__ T BlockAllReduce(T v, Op op, T identity) {
  __shared__ T buf[32];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // an earlier call's readers are done with buf
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nwarps = (blockDim.x + 31) >> 5;
    v = lane < nwarps ? buf[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) buf[0] = v;
  }
  __syncthreads();
  return buf[0];
}

}  // namespace kutil
}  // namespace gpu
}  // namespace halfcaf
