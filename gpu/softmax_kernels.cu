#include "gpu/cuda_check.h"
#include "gpu/kernel_util.cuh"
#include "gpu/softmax_kernels.h"

namespace halfcaf {
namespace gpu {

using namespace kutil;  // NOLINT

namespace {

constexpr int kReduceThreads = 512;

template <typename TX, typename TY>
__global__ void SoftmaxRowsKernel(int64_t N, int64_t D, const TX* x, TY* y, float* lse) {
  HALFCAF_ROW_LOOP(row, N) {
    const TX* xr = x + row * D;
    TY* yr = y + row * D;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) mx = fmaxf(mx, Load(xr[j]));
    mx = BlockAllReduce(mx, MaxOp(), -INFINITY);
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) sum += expf(Load(xr[j]) - mx);
    sum = BlockAllReduce(sum, SumOp(), 0.f);
    // Every thread has read its elements of x before the reduction's barrier, and rewrites only
    // those: y may alias x.
    const float inv = 1.f / sum;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      yr[j] = Store<TY>(expf(Load(xr[j]) - mx) * inv);
    }
    if (lse != nullptr && threadIdx.x == 0) lse[row] = mx + logf(sum);
  }
}

template <typename TY, typename TD>
__global__ void SoftmaxGradientRowsKernel(int64_t N, int64_t D, const TY* y, const TD* dy, TY* dx) {
  HALFCAF_ROW_LOOP(row, N) {
    const int64_t base = row * D;
    float dot = 0.f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      dot += Load(y[base + j]) * Load(dy[base + j]);
    }
    dot = BlockAllReduce(dot, SumOp(), 0.f);
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      dx[base + j] = Store<TY>(Load(y[base + j]) * (Load(dy[base + j]) - dot));
    }
  }
}

template <typename TX>
__global__ void SoftmaxLossRowsKernel(int64_t N, int64_t D, const TX* x, const float* lse,
                                      const int32_t* labels, const float* weights, float* row_loss,
                                      float* row_w, unsigned long long* bad) {
  HALFCAF_KERNEL_LOOP(i, N) {
    const int32_t l = labels[i];
    const float w = weights ? weights[i] : 1.f;
    float li = 0.f;
    if (l < 0 || l >= D) {
      RecordBadLabel(bad, i, l);
    } else {
      li = lse[i] - Load(x[i * D + l]);
    }
    row_loss[i] = w * li;
    row_w[i] = w;
  }
}

template <typename TX>
__global__ void SoftmaxLossRowsProbKernel(int64_t N, int64_t D, const TX* x, const float* lse,
                                          const float* label_prob, const float* weights,
                                          float* row_loss, float* row_w) {
  HALFCAF_ROW_LOOP(row, N) {
    const int64_t base = row * D;
    const float m = lse[row];
    double li = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      li -= static_cast<double>(label_prob[base + j]) * (Load(x[base + j]) - m);
    }
    li = BlockAllReduce(li, SumOp(), 0.0);
    if (threadIdx.x == 0) {
      const float w = weights ? weights[row] : 1.f;
      row_loss[row] = static_cast<float>(w * li);
      row_w[row] = w;
    }
  }
}

__global__ void WeightedMeanLossKernel(int64_t N, const float* row_loss, const float* row_w,
                                       float scale, float* loss) {
  double total = 0, wsum = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    total += row_loss[i];
    wsum += row_w[i];
  }
  total = BlockAllReduce(total, SumOp(), 0.0);
  wsum = BlockAllReduce(wsum, SumOp(), 0.0);
  if (threadIdx.x == 0) loss[0] = wsum != 0 ? static_cast<float>(total * scale / wsum) : 0.f;
}

__global__ void SoftmaxLossGradCoefKernel(int64_t N, const float* weights, const float* dloss,
                                          float scale, double* coef) {
  double wsum = 0;
  if (weights) {
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) wsum += weights[i];
  }
  wsum = BlockAllReduce(wsum, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    if (!weights) wsum = static_cast<double>(N);
    const bool nonzero = wsum != 0;
    coef[0] = nonzero ? static_cast<double>(scale) * dloss[0] / wsum : 0.0;
    coef[1] = nonzero ? 1.0 : 0.0;
  }
}

template <typename TX>
__global__ void SoftmaxLossGradientKernel(int64_t N, int64_t D, const float* p,
                                          const int32_t* labels, const float* weights,
                                          const double* coef, TX* dx, unsigned long long* bad) {
  const double k = coef[0];
  const bool nonzero = coef[1] != 0;
  HALFCAF_KERNEL_LOOP(i, N * D) {
    if (!nonzero) {
      dx[i] = Store<TX>(0.f);
      continue;
    }
    const int64_t row = i / D, j = i % D;
    const int32_t l = labels[row];
    if (j == 0 && (l < 0 || l >= D)) RecordBadLabel(bad, row, l);
    const float c = static_cast<float>((weights ? weights[row] : 1.0) * k);
    const float g = c * p[i];
    dx[i] = Store<TX>(j == l ? g - c : g);
  }
}

template <typename TX>
__global__ void SoftmaxLossGradientProbKernel(int64_t N, int64_t D, const float* p,
                                              const float* label_prob, const float* weights,
                                              const double* coef, TX* dx) {
  const double k = coef[0];
  const bool nonzero = coef[1] != 0;
  HALFCAF_ROW_LOOP(row, N) {
    const int64_t base = row * D;
    if (!nonzero) {
      for (int64_t j = threadIdx.x; j < D; j += blockDim.x) dx[base + j] = Store<TX>(0.f);
      continue;
    }
    double lsum = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) lsum += label_prob[base + j];
    const float fl = static_cast<float>(BlockAllReduce(lsum, SumOp(), 0.0));
    const float c = static_cast<float>((weights ? weights[row] : 1.0) * k);
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      dx[base + j] = Store<TX>(c * (p[base + j] * fl - label_prob[base + j]));
    }
  }
}

}  // namespace

void ResetBadLabel(unsigned long long* bad, cudaStream_t stream) {
  HALFCAF_CUDA_CHECK(cudaMemsetAsync(bad, 0xff, sizeof(unsigned long long), stream));
}

template <typename TX, typename TY>
void SoftmaxRows(int64_t N, int64_t D, const TX* x, TY* y, float* lse, cudaStream_t stream) {
  if (N == 0) return;
  SoftmaxRowsKernel<<<RowBlocks(N), RowThreads(D), 0, stream>>>(N, D, DevPtr(x), DevPtr(y), lse);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TY, typename TD>
void SoftmaxGradientRows(int64_t N, int64_t D, const TY* y, const TD* dy, TY* dx,
                         cudaStream_t stream) {
  if (N == 0 || D == 0) return;
  SoftmaxGradientRowsKernel<<<RowBlocks(N), RowThreads(D), 0, stream>>>(N, D, DevPtr(y), DevPtr(dy),
                                                                        DevPtr(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TX>
void SoftmaxLossRows(int64_t N, int64_t D, const TX* x, const float* lse, const int32_t* labels,
                     const float* weights, float* row_loss, float* row_w, unsigned long long* bad,
                     cudaStream_t stream) {
  if (N == 0) return;
  SoftmaxLossRowsKernel<<<Blocks(N), kThreads, 0, stream>>>(N, D, DevPtr(x), lse, labels, weights,
                                                            row_loss, row_w, bad);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TX>
void SoftmaxLossRowsProb(int64_t N, int64_t D, const TX* x, const float* lse,
                         const float* label_prob, const float* weights, float* row_loss,
                         float* row_w, cudaStream_t stream) {
  if (N == 0) return;
  SoftmaxLossRowsProbKernel<<<RowBlocks(N), RowThreads(D), 0, stream>>>(
      N, D, DevPtr(x), lse, label_prob, weights, row_loss, row_w);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

void WeightedMeanLoss(int64_t N, const float* row_loss, const float* row_w, float scale,
                      float* loss, cudaStream_t stream) {
  WeightedMeanLossKernel<<<1, kReduceThreads, 0, stream>>>(N, row_loss, row_w, scale, loss);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

void SoftmaxLossGradCoef(int64_t N, const float* weights, const float* dloss, float scale,
                         double* coef, cudaStream_t stream) {
  SoftmaxLossGradCoefKernel<<<1, kReduceThreads, 0, stream>>>(N, weights, dloss, scale, coef);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TX>
void SoftmaxLossGradient(int64_t N, int64_t D, const float* p, const int32_t* labels,
                         const float* weights, const double* coef, TX* dx, unsigned long long* bad,
                         cudaStream_t stream) {
  const int64_t n = N * D;
  if (n == 0) return;
  SoftmaxLossGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(N, D, p, labels, weights, coef,
                                                                DevPtr(dx), bad);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TX>
void SoftmaxLossGradientProb(int64_t N, int64_t D, const float* p, const float* label_prob,
                             const float* weights, const double* coef, TX* dx,
                             cudaStream_t stream) {
  if (N == 0 || D == 0) return;
  SoftmaxLossGradientProbKernel<<<RowBlocks(N), RowThreads(D), 0, stream>>>(
      N, D, p, label_prob, weights, coef, DevPtr(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template void SoftmaxRows<float, float>(int64_t, int64_t, const float*, float*, float*,
                                        cudaStream_t);
template void SoftmaxRows<Half, Half>(int64_t, int64_t, const Half*, Half*, float*, cudaStream_t);
template void SoftmaxRows<Half, float>(int64_t, int64_t, const Half*, float*, float*, cudaStream_t);
template void SoftmaxGradientRows<float, float>(int64_t, int64_t, const float*, const float*,
                                                float*, cudaStream_t);
template void SoftmaxGradientRows<float, Half>(int64_t, int64_t, const float*, const Half*, float*,
                                               cudaStream_t);
template void SoftmaxGradientRows<Half, float>(int64_t, int64_t, const Half*, const float*, Half*,
                                               cudaStream_t);
template void SoftmaxGradientRows<Half, Half>(int64_t, int64_t, const Half*, const Half*, Half*,
                                              cudaStream_t);

#define HALFCAF_SOFTMAX_LOSS_INSTANTIATE(TX)                                                     \
  template void SoftmaxLossRows<TX>(int64_t, int64_t, const TX*, const float*, const int32_t*,   \
                                    const float*, float*, float*, unsigned long long*,           \
                                    cudaStream_t);                                               \
  template void SoftmaxLossRowsProb<TX>(int64_t, int64_t, const TX*, const float*, const float*, \
                                        const float*, float*, float*, cudaStream_t);             \
  template void SoftmaxLossGradient<TX>(int64_t, int64_t, const float*, const int32_t*,          \
                                        const float*, const double*, TX*, unsigned long long*,   \
                                        cudaStream_t);                                           \
  template void SoftmaxLossGradientProb<TX>(int64_t, int64_t, const float*, const float*,        \
                                            const float*, const double*, TX*, cudaStream_t);
HALFCAF_SOFTMAX_LOSS_INSTANTIATE(float)
HALFCAF_SOFTMAX_LOSS_INSTANTIATE(Half)
#undef HALFCAF_SOFTMAX_LOSS_INSTANTIATE

}  // namespace gpu
}  // namespace halfcaf
