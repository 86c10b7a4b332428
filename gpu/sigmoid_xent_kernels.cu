#include "gpu/sigmoid_xent_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

// One thread per row; the loss of each element in double, as the CPU operator.
__global__ void SigmoidXentForwardKernel(int64_t outer, int64_t inner, FloatIn x, const float* t,
                                         const float* w, float* y, bool log_d_trick) {
  HALFCAF_KERNEL_LOOP(i, outer) {
    double sum = 0;
    for (int64_t k = i * inner; k < (i + 1) * inner; ++k) {
      const double xi = x[k], ti = t[k];
      const double softplus = log1p(exp(-fabs(xi)));  // log(1 + exp(-|x|))
      const double l = log_d_trick ? -(2 * ti - 1) * (fmin(xi, 0.0) - softplus)
                                   : fmax(xi, 0.0) - xi * ti + softplus;
      sum += w ? w[k] * l : l;
    }
    y[i] = static_cast<float>(sum / static_cast<double>(inner));
  }
}

__global__ void SigmoidXentBackwardKernel(int64_t n, int64_t inner, FloatIn x, const float* t,
                                          const float* w, FloatIn dy, FloatOut dx,
                                          bool log_d_trick) {
  const double inv = 1.0 / static_cast<double>(inner);
  HALFCAF_KERNEL_LOOP(k, n) {
    const double sig = 1.0 / (1.0 + exp(-static_cast<double>(x[k])));
    const double d = log_d_trick ? -(2.0 * t[k] - 1.0) * (1.0 - sig) : sig - t[k];
    dx.Set(k, static_cast<float>(dy[k / inner] * inv * (w ? w[k] * d : d)));
  }
}

}  // namespace

void SigmoidXentForward(int64_t outer, int64_t inner, DataType x_type, const void* x,
                        const float* t, const float* w, float* y, bool log_d_trick,
                        cudaStream_t stream) {
  if (outer == 0 || inner == 0) return;
  SigmoidXentForwardKernel<<<Blocks(outer), kThreads, 0, stream>>>(
      outer, inner, detail::In(x_type, x, "logits"), t, w, y, log_d_trick);
  HALFCAF_LAUNCH_CHECK();
}

void SigmoidXentBackward(int64_t outer, int64_t inner, DataType x_type, const void* x,
                         const float* t, const float* w, DataType dy_type, const void* dy,
                         void* dx, bool log_d_trick, cudaStream_t stream) {
  const int64_t n = outer * inner;
  if (n == 0) return;
  SigmoidXentBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, inner, detail::In(x_type, x, "logits"), t, w, detail::In(dy_type, dy, "dY"),
      detail::Out(x_type, dx, "dlogits"), log_d_trick);
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
