// Math kernels on CUDA shared by operators, written once (element-wise casts for now).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"

namespace halfcaf {
namespace gpu {

void FloatToHalf(int64_t n, const float* x, Half* y, cudaStream_t stream);
void HalfToFloat(int64_t n, const Half* x, float* y, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
