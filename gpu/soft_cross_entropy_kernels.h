// CUDA kernels of the soft-label CrossEntropy (operators/loss/soft_cross_entropy_op.cc) and of
// MakeTwoClass (make_two_class_op.cc), which turns positive-class probabilities into the
// two-class ones such losses take, with their gradients; those files have the rules. X float,
// float16 or bfloat16 (computed in float), labels float. All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

// y[i] = -sum_j label[i, j] log(max(x[i, j], 1e-20)) for i < N, x and label (N, D); summed in
// double. The labels are not checked (the CPU operator checks that they lie in [0, 1]).
void SoftCrossEntropy(int64_t N, int64_t D, DataType x_type, const void* x, const float* label,
                      float* y, cudaStream_t stream);

// dx[i, j] = -dy[i] label[i, j] / x[i, j], 0 where x < 1e-20; dx has x_type.
void SoftCrossEntropyGradient(int64_t N, int64_t D, DataType x_type, const void* x,
                              const float* label, DataType dy_type, const void* dy, void* dx,
                              cudaStream_t stream);

// y[2i] = 1 - x[i], y[2i + 1] = x[i] for i < n; y has x_type.
void MakeTwoClass(int64_t n, DataType x_type, const void* x, void* y, cudaStream_t stream);

// dx[i] = dy[2i + 1] - dy[2i] for i < n; dx has dy_type.
void MakeTwoClassGradient(int64_t n, DataType dy_type, const void* dy, void* dx,
                          cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
