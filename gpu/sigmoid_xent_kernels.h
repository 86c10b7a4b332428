// CUDA kernels of SigmoidCrossEntropyWithLogits, WeightedSigmoidCrossEntropyWithLogits and their
// gradients (operators/loss/sigmoid_cross_entropy_op.cc has the rules): logits float, float16 or
// bfloat16, targets, weights and the loss float, outer rows of `inner` elements. Weights w null:
// the unweighted op (every weight 1).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

// y[i] = mean over row i of w * the loss (log_d_trick: -(2t - 1) log sigmoid(x)).
void SigmoidXentForward(int64_t outer, int64_t inner, DataType x_type, const void* x,
                        const float* t, const float* w, float* y, bool log_d_trick,
                        cudaStream_t stream);

// dx = dy[row] / inner * w * (sigmoid(x) - t), or -dy[row] / inner * (2t - 1) (1 - sigmoid(x));
// dx has x_type.
void SigmoidXentBackward(int64_t outer, int64_t inner, DataType x_type, const void* x,
                         const float* t, const float* w, DataType dy_type, const void* dy,
                         void* dx, bool log_d_trick, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
