#include <math_constants.h>

#include <algorithm>

#include "core/nan_math.h"
#include "gpu/cuda_check.h"
#include "gpu/kernel_util.cuh"
#include "gpu/loss_kernels.h"

namespace halfcaf {
namespace gpu {

using namespace kutil;  // NOLINT

namespace {

constexpr float kLogThreshold = 1e-20f;
constexpr int kPartialBlocks = 128;

__device__ __forceinline__ bool BadLabel(int32_t l, int64_t D) { return l < 0 || l >= D; }

template <typename TX>
__global__ void LabelCrossEntropyKernel(int64_t N, int64_t D, const TX* x, const int32_t* labels,
                                        float* y, unsigned long long* bad) {
  HALFCAF_KERNEL_LOOP(i, N) {
    const int32_t l = labels[i];
    if (BadLabel(l, D)) {
      RecordBadLabel(bad, i, l);
      y[i] = 0.f;
      continue;
    }
    y[i] = -logf(MaxNaN(Load(x[i * D + l]), kLogThreshold));  // fmaxf would drop NaN
  }
}

template <typename TX, typename TD>
__global__ void LabelCrossEntropyGradientKernel(int64_t N, int64_t D, const TX* x,
                                                const int32_t* labels, const TD* dy, TX* dx,
                                                unsigned long long* bad) {
  HALFCAF_KERNEL_LOOP(i, N * D) {
    const int64_t row = i / D, j = i % D;
    const int32_t l = labels[row];
    if (j == 0 && BadLabel(l, D)) RecordBadLabel(bad, row, l);
    float g = 0.f;
    if (j == l) {
      const float xl = Load(x[i]);
      g = xl >= kLogThreshold ? -Load(dy[row]) / xl : 0.f;
    }
    dx[i] = Store<TX>(g);
  }
}

template <typename TX>
__global__ void PartialSumKernel(int64_t n, const TX* x, double* partial) {
  double sum = 0;
  HALFCAF_KERNEL_LOOP(i, n) { sum += Load(x[i]); }
  sum = BlockAllReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void MeanKernel(int64_t n, int blocks, const double* partial, float* y) {
  double sum = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) sum += partial[b];
  sum = BlockAllReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) y[0] = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.f;
}

template <typename TX, typename TD>
__global__ void AveragedLossGradientKernel(int64_t n, const TD* dy, TX* dx) {
  const float g = Load(dy[0]) / static_cast<float>(n);
  HALFCAF_KERNEL_LOOP(i, n) { dx[i] = Store<TX>(g); }
}

// Set in the hit count when some score is NaN: the accuracy is then NaN, as on the CPU.
constexpr unsigned long long kNaNSeen = 1ull << 63;

// One block per row: counts the classes ranked above the label.
template <typename TX>
__global__ void AccuracyKernel(int64_t N, int64_t D, const TX* x, const int32_t* labels, int top_k,
                               unsigned long long* count, unsigned long long* bad) {
  HALFCAF_ROW_LOOP(row, N) {
    const int32_t l = labels[row];
    if (BadLabel(l, D)) {  // the same for every thread of the block
      if (threadIdx.x == 0) RecordBadLabel(bad, row, l);
      continue;
    }
    const TX* xr = x + row * D;
    const float target = Load(xr[l]);
    unsigned long long above = 0, nans = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float v = Load(xr[j]);
      if (v > target || (v == target && j < l)) ++above;
      nans += IsNaN(v);
    }
    above = BlockAllReduce(above, SumOp(), 0ull);
    nans = BlockAllReduce(nans, SumOp(), 0ull);
    if (threadIdx.x == 0 && above < static_cast<unsigned long long>(top_k)) atomicAdd(count, 1ull);
    if (threadIdx.x == 0 && nans > 0) atomicOr(count, kNaNSeen);
  }
}

__global__ void AccuracyFinishKernel(int64_t N, const unsigned long long* count, float* y) {
  if (count[0] & kNaNSeen) {
    y[0] = CUDART_NAN_F;
    return;
  }
  y[0] = N > 0 ? static_cast<float>(static_cast<double>(count[0]) / static_cast<double>(N)) : 0.f;
}

}  // namespace

template <typename TX>
void LabelCrossEntropy(int64_t N, int64_t D, const TX* x, const int32_t* labels, float* y,
                       unsigned long long* bad, cudaStream_t stream) {
  if (N == 0) return;
  LabelCrossEntropyKernel<<<Blocks(N), kThreads, 0, stream>>>(N, D, DevPtr(x), labels, y, bad);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TX, typename TD>
void LabelCrossEntropyGradient(int64_t N, int64_t D, const TX* x, const int32_t* labels,
                               const TD* dy, TX* dx, unsigned long long* bad, cudaStream_t stream) {
  const int64_t n = N * D;
  if (n == 0) return;
  LabelCrossEntropyGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(N, D, DevPtr(x), labels,
                                                                      DevPtr(dy), DevPtr(dx), bad);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

int AveragedLossScratch() { return kPartialBlocks; }

template <typename TX>
void AveragedLoss(int64_t n, const TX* x, double* partial, float* y, cudaStream_t stream) {
  const int blocks = n > 0 ? std::min(Blocks(n), kPartialBlocks) : 0;
  if (blocks > 0) {
    PartialSumKernel<<<blocks, kThreads, 0, stream>>>(n, DevPtr(x), partial);
    HALFCAF_CUDA_CHECK(cudaGetLastError());
  }
  MeanKernel<<<1, kThreads, 0, stream>>>(n, blocks, partial, y);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TX, typename TD>
void AveragedLossGradient(int64_t n, const TD* dy, TX* dx, cudaStream_t stream) {
  if (n == 0) return;
  AveragedLossGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(n, DevPtr(dy), DevPtr(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename TX>
void Accuracy(int64_t N, int64_t D, const TX* x, const int32_t* labels, int top_k,
              unsigned long long* count, float* y, unsigned long long* bad, cudaStream_t stream) {
  HALFCAF_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned long long), stream));
  if (N > 0) {
    AccuracyKernel<<<RowBlocks(N), RowThreads(D), 0, stream>>>(N, D, DevPtr(x), labels, top_k,
                                                               count, bad);
    HALFCAF_CUDA_CHECK(cudaGetLastError());
  }
  AccuracyFinishKernel<<<1, 1, 0, stream>>>(N, count, y);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

#define HALFCAF_LOSS_INSTANTIATE(TX)                                                              \
  template void LabelCrossEntropy<TX>(int64_t, int64_t, const TX*, const int32_t*, float*,        \
                                      unsigned long long*, cudaStream_t);                         \
  template void LabelCrossEntropyGradient<TX, float>(int64_t, int64_t, const TX*, const int32_t*, \
                                                     const float*, TX*, unsigned long long*,      \
                                                     cudaStream_t);                               \
  template void LabelCrossEntropyGradient<TX, Half>(int64_t, int64_t, const TX*, const int32_t*,  \
                                                    const Half*, TX*, unsigned long long*,        \
                                                    cudaStream_t);                                \
  template void AveragedLoss<TX>(int64_t, const TX*, double*, float*, cudaStream_t);              \
  template void AveragedLossGradient<TX, float>(int64_t, const float*, TX*, cudaStream_t);        \
  template void AveragedLossGradient<TX, Half>(int64_t, const Half*, TX*, cudaStream_t);          \
  template void Accuracy<TX>(int64_t, int64_t, const TX*, const int32_t*, int,                    \
                             unsigned long long*, float*, unsigned long long*, cudaStream_t);
HALFCAF_LOSS_INSTANTIATE(float)
HALFCAF_LOSS_INSTANTIATE(Half)
#undef HALFCAF_LOSS_INSTANTIATE

}  // namespace gpu
}  // namespace halfcaf
