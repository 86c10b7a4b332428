// Dropout kernels on CUDA. The random draw of element i is a counter-based hash of (seed, i)
// (SplitMix64's output for state seed + (i + 1) * golden ratio), so no generator state lives on
// the device and any launch configuration gives the same mask for the same seed. Element i is
// kept when its uniform draw u in [0, 1) (24 bits) is >= ratio, i.e. with probability
// 1 - ratio. Float16 is computed in float and rounded once. All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"

namespace halfcaf {
namespace gpu {

// mask[i] = draw(seed, i) >= ratio; y[i] = mask[i] ? x[i] / (1 - ratio) : 0 (y may alias x).
template <typename T>
void Dropout(int64_t n, float ratio, uint64_t seed, const T* x, T* y, bool* mask,
             cudaStream_t stream);

// dx[i] = mask[i] ? dy[i] / (1 - ratio) : 0 (dx may alias dy).
template <typename T>
void DropoutGrad(int64_t n, float ratio, const T* dy, const bool* mask, T* dx, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
