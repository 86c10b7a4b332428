#include "gpu/kernel_util.cuh"
#include "gpu/lrn_kernels.h"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

// The scale of element (o, c, i), as LrnScale on the CPU computes it.
__device__ float ScaleAt(const LrnKernelArgs& a, FloatIn x, int64_t o, int64_t c, int64_t i) {
  const int64_t pre = (a.size - 1) / 2;
  const int64_t lo = max(c - pre, int64_t(0)), hi = min(a.C, c - pre + a.size);
  float s = 0.f;
  for (int64_t c2 = lo; c2 < hi; ++c2) {
    const float v = x[(o * a.C + c2) * a.inner + i];
    s += v * v;
  }
  const float k = a.alpha / static_cast<float>(a.size);
  return a.bias + k * s;
}

__global__ void LrnForwardKernel(LrnKernelArgs a, FloatIn x, FloatOut y, FloatOut scale,
                                 bool write_scale) {
  HALFCAF_KERNEL_LOOP(idx, a.outer * a.C * a.inner) {
    const int64_t i = idx % a.inner, c = (idx / a.inner) % a.C, o = idx / (a.inner * a.C);
    const float s = ScaleAt(a, x, o, c, i);
    if (write_scale) scale.Set(idx, s);
    y.Set(idx, x[idx] * powf(s, -a.beta));
  }
}

__global__ void LrnBackwardKernel(LrnKernelArgs a, FloatIn x, FloatIn y, FloatIn scale,
                                  bool given_scale, FloatIn dy, FloatOut dx) {
  const int64_t pre = (a.size - 1) / 2, post = a.size - 1 - pre;
  HALFCAF_KERNEL_LOOP(idx, a.outer * a.C * a.inner) {
    const int64_t i = idx % a.inner, c = (idx / a.inner) % a.C, o = idx / (a.inner * a.C);
    // Channel c is in the windows of c2 in [c - post, c + pre].
    const int64_t lo = max(c - post, int64_t(0)), hi = min(a.C, c + pre + 1);
    float acc = 0.f;
    for (int64_t c2 = lo; c2 < hi; ++c2) {
      const int64_t j = (o * a.C + c2) * a.inner + i;
      const float s2 = given_scale ? scale[j] : ScaleAt(a, x, o, c2, i);
      acc += dy[j] * y[j] / s2;
    }
    const float s = given_scale ? scale[idx] : ScaleAt(a, x, o, c, i);
    const float k = 2.f * a.alpha * a.beta / static_cast<float>(a.size);
    dx.Set(idx, dy[idx] * powf(s, -a.beta) - k * x[idx] * acc);
  }
}

}  // namespace

void LrnForward(const LrnKernelArgs& a, DataType t, const void* x, void* y, void* scale,
                cudaStream_t stream) {
  const int64_t n = a.outer * a.C * a.inner;
  if (n == 0) return;
  const FloatOut s = scale ? detail::Out(t, scale, "scale") : FloatOut{nullptr, false};
  LrnForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(a, detail::In(t, x, "X"),
                                                       detail::Out(t, y, "Y"), s, scale != nullptr);
  HALFCAF_LAUNCH_CHECK();
}

void LrnBackward(const LrnKernelArgs& a, DataType x_type, const void* x, DataType y_type,
                 const void* y, DataType scale_type, const void* scale, DataType dy_type,
                 const void* dy, DataType dx_type, void* dx, cudaStream_t stream) {
  const int64_t n = a.outer * a.C * a.inner;
  if (n == 0) return;
  const FloatIn s = scale ? detail::In(scale_type, scale, "scale") : FloatIn{nullptr, false};
  LrnBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(
      a, detail::In(x_type, x, "X"), detail::In(y_type, y, "Y"), s, scale != nullptr,
      detail::In(dy_type, dy, "dY"), detail::Out(dx_type, dx, "dX"));
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
