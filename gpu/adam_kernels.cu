#include "gpu/adam_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

__global__ void CaffeAdamKernel(int64_t n, const float* g, float* p, float* m1, float* m2,
                                float* eg, const float* lr, float c, float b1, float b2,
                                float eps) {
  const float rate = lr[0];
  HALFCAF_KERNEL_LOOP(i, n) {
    const float gi = g[i];
    const float a = m1[i] * b1 + gi * (1.f - b1);
    const float v = m2[i] * b2 + gi * gi * (1.f - b2);
    m1[i] = a;
    m2[i] = v;
    const float step = rate * c * a / (sqrtf(v) + eps);
    if (eg) eg[i] = step;
    p[i] += step;
  }
}

__global__ void MixedPrecisionAdamKernel(int64_t n, FloatIn g, float* m1, float* m2, float* p,
                                         const float* lr, const float* loss_scale,
                                         const float* found_inf, FloatOut copy, float step_scale,
                                         float bc2_sqrt, float b1, float b2, float eps, float wd,
                                         bool decoupled) {
  if (found_inf && found_inf[0] != 0.f) return;  // overflowed step: leave everything alone
  const float rate = lr[0];
  const float inv = 1.f / (loss_scale ? loss_scale[0] : 1.f);
  const float shrink = decoupled ? 1.f - rate * wd : 1.f;
  const float l2 = decoupled ? 0.f : wd;
  const float step_size = rate * step_scale;
  HALFCAF_KERNEL_LOOP(i, n) {
    const float pi = p[i] * shrink;
    const float gi = g[i] * inv + l2 * pi;
    const float a = m1[i] * b1 + gi * (1.f - b1);
    const float v = m2[i] * b2 + gi * gi * (1.f - b2);
    m1[i] = a;
    m2[i] = v;
    const float p_new = pi - step_size * (a / (sqrtf(v) / bc2_sqrt + eps));
    p[i] = p_new;
    if (copy.p) copy.Set(i, p_new);
  }
}

}  // namespace

void CaffeAdam(int64_t n, const float* g, float* p, float* m1, float* m2, float* eg,
               const float* lr, float c, float beta1, float beta2, float eps,
               cudaStream_t stream) {
  if (n == 0) return;
  CaffeAdamKernel<<<Blocks(n), kThreads, 0, stream>>>(n, g, p, m1, m2, eg, lr, c, beta1, beta2,
                                                      eps);
  HALFCAF_LAUNCH_CHECK();
}

void MixedPrecisionAdam(int64_t n, DataType g_type, const void* g, float* m1, float* m2, float* p,
                        const float* lr, const float* loss_scale, const float* found_inf,
                        DataType copy_type, void* copy, float step_scale, float bc2_sqrt,
                        float beta1, float beta2, float eps, float weight_decay, bool decoupled,
                        cudaStream_t stream) {
  if (n == 0) return;
  HALFCAF_ENFORCE(copy == nullptr || copy_type == DataType::FLOAT16 ||
                      copy_type == DataType::BFLOAT16,
                  "MixedPrecisionAdam: the copy must be float16 or bfloat16, got ",
                  DataTypeName(copy_type));
  const FloatOut out = copy ? detail::Out(copy_type, copy, "copy") : FloatOut{nullptr, 0};
  MixedPrecisionAdamKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, detail::In(g_type, g, "grad"), m1, m2, p, lr, loss_scale, found_inf, out, step_scale,
      bc2_sqrt, beta1, beta2, eps, weight_decay, decoupled);
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
