// Loss and metric kernels on CUDA with the CPU operators' semantics: LabelCrossEntropy
// (cross_entropy_op.cc), AveragedLoss (averaged_loss_op.cc) and Accuracy (accuracy_op.cc).
// Float16 inputs are computed in float; outputs that the CPU op makes float are float. Labels out
// of [0, D) are recorded in `bad` (smallest such row and its label; see gpu::ResetBadLabel in
// softmax_kernels.h).
// All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"

namespace halfcaf {
namespace gpu {

// y[i] = -log(max(x[i, label_i], 1e-20)) (float).
template <typename TX>
void LabelCrossEntropy(int64_t N, int64_t D, const TX* x, const int32_t* labels, float* y,
                       unsigned long long* bad, cudaStream_t stream);
// dx (X's type) zero except dx[i, label_i] = -dy[i] / x[i, label_i] (0 below 1e-20).
template <typename TX, typename TD>
void LabelCrossEntropyGradient(int64_t N, int64_t D, const TX* x, const int32_t* labels,
                               const TD* dy, TX* dx, unsigned long long* bad, cudaStream_t stream);

// y[0] = mean of x[0, n) (0 for n == 0), summed in double. `partial` is device scratch of at
// least AveragedLossScratch() doubles.
int AveragedLossScratch();
template <typename TX>
void AveragedLoss(int64_t n, const TX* x, double* partial, float* y, cudaStream_t stream);
// dx[i] = dy[0] / n.
template <typename TX, typename TD>
void AveragedLossGradient(int64_t n, const TD* dy, TX* dx, cudaStream_t stream);

// y[0] = fraction of rows whose label is among the top_k scores (ties favour the lower index).
// `count` is device scratch for one counter.
template <typename TX>
void Accuracy(int64_t N, int64_t D, const TX* x, const int32_t* labels, int top_k,
              unsigned long long* count, float* y, unsigned long long* bad, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
