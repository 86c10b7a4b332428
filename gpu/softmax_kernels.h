// Softmax and softmax-cross-entropy kernels on CUDA with the CPU operators' semantics
// (operators/nn/softmax_op.cc, softmax_with_loss_op.cc): rows of an (N, D) matrix, max-subtracted,
// computed in float (float16 inputs are converted, outputs rounded once). One block per row.
// Labels out of [0, D) are recorded in the word `bad` (the smallest such row with its label,
// kutil::RecordBadLabel; clear it to ~0 with ResetBadLabel first) for the operator to report
// (operators/loss/loss_util_gpu.h). All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"

namespace halfcaf {
namespace gpu {

// *bad = ~0ull (no bad label yet).
void ResetBadLabel(unsigned long long* bad, cudaStream_t stream);

// y[i, :] = softmax(x[i, :]); lse (optional, N floats) = log(sum_j exp(x[i, j])). y may alias x.
// TX, TY: float or Half.
template <typename TX, typename TY>
void SoftmaxRows(int64_t N, int64_t D, const TX* x, TY* y, float* lse, cudaStream_t stream);

// dx[i, j] = y[i, j] * (dy[i, j] - sum_k dy[i, k] * y[i, k]); dx has y's type.
template <typename TY, typename TD>
void SoftmaxGradientRows(int64_t N, int64_t D, const TY* y, const TD* dy, TY* dx,
                         cudaStream_t stream);

// Per-row terms of SoftmaxWithLoss: row_loss[i] = w_i * l_i and row_w[i] = w_i (w_i = 1 when
// weights is null), with l_i = lse[i] - x[i, label_i] (int32 labels) or
// l_i = -sum_j label[i, j] * (x[i, j] - lse[i]) (float class distributions).
template <typename TX>
void SoftmaxLossRows(int64_t N, int64_t D, const TX* x, const float* lse, const int32_t* labels,
                     const float* weights, float* row_loss, float* row_w, unsigned long long* bad,
                     cudaStream_t stream);
template <typename TX>
void SoftmaxLossRowsProb(int64_t N, int64_t D, const TX* x, const float* lse,
                         const float* label_prob, const float* weights, float* row_loss,
                         float* row_w, cudaStream_t stream);

// loss[0] = sum(row_w) != 0 ? scale * sum(row_loss) / sum(row_w) : 0 (sums in double).
void WeightedMeanLoss(int64_t N, const float* row_loss, const float* row_w, float scale,
                      float* loss, cudaStream_t stream);

// Gradient coefficients: coef[0] = scale * dloss[0] / sum(w) (w_i = 1 without weights) and
// coef[1] = 1, or both 0 when sum(w) == 0.
void SoftmaxLossGradCoef(int64_t N, const float* weights, const float* dloss, float scale,
                         double* coef, cudaStream_t stream);

// dx[i, j] = c_i * (p[i, j] - [j == label_i]) with c_i = w_i * coef[0]; all zero when
// coef[1] == 0 (the labels are then not checked, as on CPU).
template <typename TX>
void SoftmaxLossGradient(int64_t N, int64_t D, const float* p, const int32_t* labels,
                         const float* weights, const double* coef, TX* dx, unsigned long long* bad,
                         cudaStream_t stream);
// dx[i, j] = c_i * (p[i, j] * sum_k label[i, k] - label[i, j]).
template <typename TX>
void SoftmaxLossGradientProb(int64_t N, int64_t D, const float* p, const float* label_prob,
                             const float* weights, const double* coef, TX* dx, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
