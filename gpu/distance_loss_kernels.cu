#include "gpu/distance_loss_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::FloatIn;
using detail::FloatOut;
using kutil::BlockAllReduce;
using kutil::SumOp;

namespace {

// One block per row; |x - y| summed in double, as the CPU operator.
__global__ void L1DistanceKernel(int64_t rows, int64_t cols, FloatIn x, FloatIn y, float* z) {
  HALFCAF_ROW_LOOP(r, rows) {
    double sum = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const int64_t k = r * cols + j;
      sum += fabs(static_cast<double>(x[k]) - static_cast<double>(y[k]));
    }
    sum = BlockAllReduce(sum, SumOp(), 0.0);
    if (threadIdx.x == 0) z[r] = static_cast<float>(sum);
  }
}

__global__ void L1DistanceGradientKernel(int64_t n, int64_t cols, FloatIn x, FloatIn y, FloatIn dz,
                                         FloatOut dx, FloatOut dy) {
  HALFCAF_KERNEL_LOOP(k, n) {
    const float d = x[k] - y[k];  // in float, as Caffe2's dead zone
    const float g = d > 1e-12f ? dz[k / cols] : d < -1e-12f ? -dz[k / cols] : 0.f;
    dx.Set(k, g);
    dy.Set(k, -g);
  }
}

// The four inputs read as floats.
struct SmoothL1View {
  FloatIn y_hat, y, alpha_in, alpha_out;
  double beta;

  __device__ __forceinline__ double Diff(int64_t k) const {
    return static_cast<double>(alpha_in[k]) *
           (static_cast<double>(y_hat[k]) - static_cast<double>(y[k]));
  }
};

SmoothL1View View(const SmoothL1Inputs& in) {
  return SmoothL1View{detail::In(in.y_hat_type, in.y_hat, "Y_hat"),
                      detail::In(in.y_type, in.y, "Y"),
                      detail::In(in.alpha_in_type, in.alpha_in, "alpha_in"),
                      detail::In(in.alpha_out_type, in.alpha_out, "alpha_out"), in.beta};
}

// One block sums everything in double (launched with a single block).
__global__ void SmoothL1LossKernel(int64_t n, SmoothL1View v, double norm, float* loss) {
  double sum = 0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const double d = v.Diff(k), a = fabs(d);
    sum += v.alpha_out[k] * (a < v.beta ? 0.5 * d * d / v.beta : a - 0.5 * v.beta);
  }
  sum = BlockAllReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(sum * norm);
}

__global__ void SmoothL1LossGradientKernel(int64_t n, SmoothL1View v, double norm, FloatIn dl,
                                           FloatOut dx) {
  const double g = static_cast<double>(dl[0]) * norm;
  HALFCAF_KERNEL_LOOP(k, n) {
    const double d = v.Diff(k);
    const double slope = fabs(d) < v.beta ? d / v.beta : (d > 0) - (d < 0);
    dx.Set(k, static_cast<float>(g * v.alpha_in[k] * v.alpha_out[k] * slope));
  }
}

}  // namespace

void L1Distance(int64_t rows, int64_t cols, DataType x_type, const void* x, DataType y_type,
                const void* y, float* z, cudaStream_t stream) {
  if (rows == 0) return;
  L1DistanceKernel<<<kutil::RowBlocks(rows), kutil::RowThreads(cols), 0, stream>>>(
      rows, cols, detail::In(x_type, x, "X"), detail::In(y_type, y, "Y"), z);
  HALFCAF_LAUNCH_CHECK();
}

void L1DistanceGradient(int64_t rows, int64_t cols, DataType x_type, const void* x, DataType y_type,
                        const void* y, DataType dz_type, const void* dz, void* dx, void* dy,
                        cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  L1DistanceGradientKernel<<<detail::Blocks(n), detail::kThreads, 0, stream>>>(
      n, cols, detail::In(x_type, x, "X"), detail::In(y_type, y, "Y"),
      detail::In(dz_type, dz, "dZ"), detail::Out(x_type, dx, "dX"), detail::Out(y_type, dy, "dY"));
  HALFCAF_LAUNCH_CHECK();
}

void SmoothL1Loss(const SmoothL1Inputs& in, float* loss, cudaStream_t stream) {
  // Launched for n = 0 too: the loss is written (0).
  SmoothL1LossKernel<<<1, kutil::RowThreads(in.n), 0, stream>>>(in.n, View(in), in.norm, loss);
  HALFCAF_LAUNCH_CHECK();
}

void SmoothL1LossGradient(const SmoothL1Inputs& in, DataType d_loss_type, const void* d_loss,
                          void* d_y_hat, cudaStream_t stream) {
  if (in.n == 0) return;
  SmoothL1LossGradientKernel<<<detail::Blocks(in.n), detail::kThreads, 0, stream>>>(
      in.n, View(in), in.norm, detail::In(d_loss_type, d_loss, "d_loss"),
      detail::Out(in.y_hat_type, d_y_hat, "d_Y_hat"));
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
