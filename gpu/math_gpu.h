// Math kernels on CUDA shared by operators, written once. Float16 and bfloat16 values are computed
// in float and rounded once on output, like the CPU operators. All kernels run on `stream`
// (asynchronously).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/bfloat16.h"
#include "core/half.h"

namespace halfcaf {
namespace gpu {

void FloatToHalf(int64_t n, const float* x, Half* y, cudaStream_t stream);
void HalfToFloat(int64_t n, const Half* x, float* y, cudaStream_t stream);

// y[i] = value.
void Set(int64_t n, float value, float* y, cudaStream_t stream);
void Set(int64_t n, float value, Half* y, cudaStream_t stream);
void Set(int64_t n, float value, BFloat16* y, cudaStream_t stream);

// Per-channel bias over y viewed as (outer, channels, inner): y[o, c, i] = b[c] (accumulate =
// false) or y[o, c, i] += b[c] (accumulate = true). NCHW conv: (N, M, H*W); NHWC conv and FC:
// (rows, M, 1).
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const float* b, float* y,
                 bool accumulate, cudaStream_t stream);
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const float* b, Half* y,
                 bool accumulate, cudaStream_t stream);
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const Half* b, float* y,
                 bool accumulate, cudaStream_t stream);
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const Half* b, Half* y,
                 bool accumulate, cudaStream_t stream);
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const float* b, BFloat16* y,
                 bool accumulate, cudaStream_t stream);
void ChannelBias(int64_t outer, int64_t channels, int64_t inner, const BFloat16* b, BFloat16* y,
                 bool accumulate, cudaStream_t stream);

// Relu: y = max(x, 0) (x == y allowed).
void Relu(int64_t n, const float* x, float* y, cudaStream_t stream);
void Relu(int64_t n, const Half* x, Half* y, cudaStream_t stream);
void Relu(int64_t n, const BFloat16* x, BFloat16* y, cudaStream_t stream);
// ReluGradient: dx = y > 0 ? dy : 0 (dy == dx allowed).
void ReluGradient(int64_t n, const float* y, const float* dy, float* dx, cudaStream_t stream);
void ReluGradient(int64_t n, const Half* y, const float* dy, float* dx, cudaStream_t stream);
void ReluGradient(int64_t n, const float* y, const Half* dy, Half* dx, cudaStream_t stream);
void ReluGradient(int64_t n, const Half* y, const Half* dy, Half* dx, cudaStream_t stream);
void ReluGradient(int64_t n, const BFloat16* y, const BFloat16* dy, BFloat16* dx,
                  cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
