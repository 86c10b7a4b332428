#include "gpu/cuda_check.h"
#include "gpu/dropout_kernels.h"
#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using namespace kutil;  // NOLINT

namespace {

// Uniform in [0, 1) with 24 random bits, from the SplitMix64 output for state seed + (i+1) * phi.
__device__ __forceinline__ float Draw(uint64_t seed, int64_t i) {
  uint64_t z = seed + (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.f / 16777216.f);
}

template <typename T>
__global__ void DropoutKernel(int64_t n, float ratio, float scale, uint64_t seed, const T* x, T* y,
                              bool* mask) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const bool keep = Draw(seed, i) >= ratio;
    mask[i] = keep;
    y[i] = Store<T>(Load(x[i]) * (keep ? scale : 0.f));  // NaN * 0 stays NaN
  }
}

template <typename T>
__global__ void DropoutGradKernel(int64_t n, float scale, const T* dy, const bool* mask, T* dx) {
  HALFCAF_KERNEL_LOOP(i, n) { dx[i] = Store<T>(Load(dy[i]) * (mask[i] ? scale : 0.f)); }
}

}  // namespace

template <typename T>
void Dropout(int64_t n, float ratio, uint64_t seed, const T* x, T* y, bool* mask,
             cudaStream_t stream) {
  if (n == 0) return;
  const float scale = 1.f / (1.f - ratio);
  DropoutKernel<<<Blocks(n), kThreads, 0, stream>>>(n, ratio, scale, seed, DevPtr(x), DevPtr(y),
                                                    mask);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void DropoutGrad(int64_t n, float ratio, const T* dy, const bool* mask, T* dx,
                 cudaStream_t stream) {
  if (n == 0) return;
  const float scale = 1.f / (1.f - ratio);
  DropoutGradKernel<<<Blocks(n), kThreads, 0, stream>>>(n, scale, DevPtr(dy), mask, DevPtr(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template void Dropout<float>(int64_t, float, uint64_t, const float*, float*, bool*, cudaStream_t);
template void Dropout<Half>(int64_t, float, uint64_t, const Half*, Half*, bool*, cudaStream_t);
template void DropoutGrad<float>(int64_t, float, const float*, const bool*, float*, cudaStream_t);
template void DropoutGrad<Half>(int64_t, float, const Half*, const bool*, Half*, cudaStream_t);

}  // namespace gpu
}  // namespace halfcaf
