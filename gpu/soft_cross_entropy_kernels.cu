#include "gpu/soft_cross_entropy_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

constexpr float kLogThreshold = 1e-20f;  // as the CPU operator (and LabelCrossEntropy)

// One block per row.
__global__ void SoftCrossEntropyKernel(int64_t N, int64_t D, FloatIn x, const float* label,
                                       float* y) {
  HALFCAF_ROW_LOOP(i, N) {
    double sum = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const int64_t k = i * D + j;
      sum += static_cast<double>(label[k]) * log(static_cast<double>(fmaxf(x[k], kLogThreshold)));
    }
    sum = kutil::BlockAllReduce(sum, kutil::SumOp(), 0.0);
    if (threadIdx.x == 0) y[i] = static_cast<float>(-sum);
  }
}

__global__ void SoftCrossEntropyGradientKernel(int64_t n, int64_t D, FloatIn x, const float* label,
                                               FloatIn dy, FloatOut dx) {
  HALFCAF_KERNEL_LOOP(k, n) {
    const float xk = x[k];
    dx.Set(k, xk >= kLogThreshold ? -dy[k / D] * label[k] / xk : 0.f);
  }
}

__global__ void MakeTwoClassKernel(int64_t n, FloatIn x, FloatOut y) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const float v = x[i];
    y.Set(2 * i, 1.f - v);
    y.Set(2 * i + 1, v);
  }
}

__global__ void MakeTwoClassGradientKernel(int64_t n, FloatIn dy, FloatOut dx) {
  HALFCAF_KERNEL_LOOP(i, n) { dx.Set(i, dy[2 * i + 1] - dy[2 * i]); }
}

}  // namespace

void SoftCrossEntropy(int64_t N, int64_t D, DataType x_type, const void* x, const float* label,
                      float* y, cudaStream_t stream) {
  if (N == 0) return;
  SoftCrossEntropyKernel<<<kutil::RowBlocks(N), kutil::RowThreads(D), 0, stream>>>(
      N, D, detail::In(x_type, x, "X"), label, y);
  HALFCAF_LAUNCH_CHECK();
}

void SoftCrossEntropyGradient(int64_t N, int64_t D, DataType x_type, const void* x,
                              const float* label, DataType dy_type, const void* dy, void* dx,
                              cudaStream_t stream) {
  const int64_t n = N * D;
  if (n == 0) return;
  SoftCrossEntropyGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, D, detail::In(x_type, x, "X"), label, detail::In(dy_type, dy, "dY"),
      detail::Out(x_type, dx, "dX"));
  HALFCAF_LAUNCH_CHECK();
}

void MakeTwoClass(int64_t n, DataType x_type, const void* x, void* y, cudaStream_t stream) {
  if (n == 0) return;
  MakeTwoClassKernel<<<Blocks(n), kThreads, 0, stream>>>(n, detail::In(x_type, x, "X"),
                                                         detail::Out(x_type, y, "Y"));
  HALFCAF_LAUNCH_CHECK();
}

void MakeTwoClassGradient(int64_t n, DataType dy_type, const void* dy, void* dx,
                          cudaStream_t stream) {
  if (n == 0) return;
  MakeTwoClassGradientKernel<<<Blocks(n), kThreads, 0, stream>>>(n, detail::In(dy_type, dy, "dY"),
                                                                 detail::Out(dy_type, dx, "dX"));
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
