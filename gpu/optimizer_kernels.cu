#include "gpu/optimizer_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::kThreads;

namespace {

__global__ void MomentumSGDKernel(int64_t n, const float* g, const float* m, const float* lr,
                                  const float* p, float* g_out, float* m_out, float* p_out,
                                  float mu, bool nesterov) {
  const float rate = lr[0];
  HALFCAF_KERNEL_LOOP(i, n) {
    const float gi = g[i], mi = m[i];
    float step;
    if (nesterov) {
      const float m_new = mu * mi + rate * gi;
      step = (1.f + mu) * m_new - mu * mi;
      m_out[i] = m_new;
    } else {
      step = rate * gi + mu * mi;
      m_out[i] = step;
    }
    g_out[i] = step;
    if (p_out) p_out[i] = p[i] - step;
  }
}

__global__ void MixedPrecisionMomentumSGDKernel(int64_t n, FloatIn g, float* m, float* p,
                                                const float* lr, const float* loss_scale,
                                                const float* found_inf, __half* copy, float mu,
                                                float weight_decay, bool nesterov) {
  if (found_inf && found_inf[0] != 0.f) return;  // overflowed step: leave everything alone
  const float rate = lr[0];
  const float inv = 1.f / (loss_scale ? loss_scale[0] : 1.f);
  HALFCAF_KERNEL_LOOP(i, n) {
    const float pi = p[i];
    const float gi = g[i] * inv + weight_decay * pi;
    float p_new;
    if (nesterov) {
      const float m_old = m[i];
      const float m_new = mu * m_old + rate * gi;
      m[i] = m_new;
      p_new = pi - ((1.f + mu) * m_new - mu * m_old);
    } else {
      const float v = rate * gi + mu * m[i];
      m[i] = v;
      p_new = pi - v;
    }
    p[i] = p_new;
    if (copy) copy[i] = __float2half_rn(p_new);
  }
}

__global__ void UpdateLossScaleKernel(float* scale, const float* found_inf, int64_t* good,
                                      int64_t* skipped, float growth, float backoff,
                                      int64_t growth_interval, float min_scale, float max_scale) {
  // Same arithmetic and comparisons as LossScaleRule::Step on the CPU.
  const float s = scale[0];
  if (found_inf[0] != 0.f) {
    good[0] = 0;
    skipped[0] += 1;
    const float down = s * backoff;
    scale[0] = min_scale < down ? down : min_scale;  // std::max(min_scale, down)
    return;
  }
  if (++good[0] >= growth_interval) {
    good[0] = 0;
    const float up = s * growth;
    scale[0] = up < max_scale ? up : max_scale;  // std::min(max_scale, up)
  }
}

}  // namespace

void MomentumSGD(int64_t n, const float* g, const float* m, const float* lr, const float* p,
                 float* g_out, float* m_out, float* p_out, float momentum, bool nesterov,
                 cudaStream_t stream) {
  if (n == 0) return;
  MomentumSGDKernel<<<Blocks(n), kThreads, 0, stream>>>(n, g, m, lr, p, g_out, m_out, p_out,
                                                        momentum, nesterov);
  HALFCAF_LAUNCH_CHECK();
}

void MixedPrecisionMomentumSGD(int64_t n, DataType g_type, const void* g, float* m, float* p,
                               const float* lr, const float* loss_scale, const float* found_inf,
                               Half* copy, float momentum, float weight_decay, bool nesterov,
                               cudaStream_t stream) {
  if (n == 0) return;
  MixedPrecisionMomentumSGDKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, detail::In(g_type, g, "grad"), m, p, lr, loss_scale, found_inf,
      reinterpret_cast<__half*>(copy), momentum, weight_decay, nesterov);
  HALFCAF_LAUNCH_CHECK();
}

void UpdateLossScale(float* scale, const float* found_inf, int64_t* good_steps,
                     int64_t* skipped_steps, float growth, float backoff, int64_t growth_interval,
                     float min_scale, float max_scale, cudaStream_t stream) {
  UpdateLossScaleKernel<<<1, 1, 0, stream>>>(scale, found_inf, good_steps, skipped_steps, growth,
                                             backoff, growth_interval, min_scale, max_scale);
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
