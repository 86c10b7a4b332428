#include "gpu/optimizer_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
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
                                                const float* found_inf, FloatOut copy, float mu,
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
    if (copy.p) copy.Set(i, p_new);
  }
}

// Float step of the fused momentum update with explicitly rounded operations (no contraction
// into FMA), matching FusedMomentumStepFloat on the CPU.
__device__ __forceinline__ void FusedStepFloat(float g, float m, float p, float lr, float mu,
                                               float wd, bool nesterov, float* g_out,
                                               float* m_out, float* p_out) {
  const float g1 = __fadd_rn(g, __fmul_rn(wd, p));
  float step;
  if (nesterov) {
    const float m_new = __fadd_rn(__fmul_rn(mu, m), __fmul_rn(lr, g1));
    step = __fsub_rn(__fmul_rn(__fadd_rn(1.f, mu), m_new), __fmul_rn(mu, m));
    *m_out = m_new;
  } else {
    step = __fadd_rn(__fmul_rn(lr, g1), __fmul_rn(mu, m));
    *m_out = step;
  }
  *g_out = step;
  *p_out = __fsub_rn(p, step);
}

// Round to float16 and back: one float16 operation when applied to a float result of float16
// operands (see FusedMomentumStepHalfMath on the CPU).
__device__ __forceinline__ float R16(float x) { return __half2float(__float2half_rn(x)); }

__global__ void FusedMomentumFloatKernel(int64_t n, const float* g, const float* m,
                                         const float* lr, const float* p, float* g_out,
                                         float* m_out, float* p_out, float mu, float wd,
                                         bool nesterov) {
  const float rate = lr[0];
  HALFCAF_KERNEL_LOOP(i, n) {
    float go, mo, po;
    FusedStepFloat(g[i], m[i], p[i], rate, mu, wd, nesterov, &go, &mo, &po);
    g_out[i] = go;
    m_out[i] = mo;
    p_out[i] = po;
  }
}

__global__ void FusedMomentumHalfKernel(int64_t n, const __half* g, const __half* m,
                                        const float* lr, const __half* p, __half* g_out,
                                        __half* m_out, __half* p_out, float mu, float wd,
                                        bool nesterov, bool fp16_math) {
  const float rate = lr[0];
  if (!fp16_math) {
    HALFCAF_KERNEL_LOOP(i, n) {
      float go, mo, po;
      FusedStepFloat(__half2float(g[i]), __half2float(m[i]), __half2float(p[i]), rate, mu, wd,
                     nesterov, &go, &mo, &po);
      g_out[i] = __float2half_rn(go);
      m_out[i] = __float2half_rn(mo);
      p_out[i] = __float2half_rn(po);
    }
    return;
  }
  const float lr_h = R16(rate), mu_h = R16(mu), wd_h = R16(wd);
  const float one_mu = R16(__fadd_rn(1.f, mu_h));
  HALFCAF_KERNEL_LOOP(i, n) {
    const float pi = __half2float(p[i]), mi = __half2float(m[i]);
    const float gi = R16(__fadd_rn(__half2float(g[i]), R16(__fmul_rn(wd_h, pi))));
    float step, m_new;
    if (nesterov) {
      m_new = R16(__fadd_rn(R16(__fmul_rn(mu_h, mi)), R16(__fmul_rn(lr_h, gi))));
      step = R16(__fsub_rn(R16(__fmul_rn(one_mu, m_new)), R16(__fmul_rn(mu_h, mi))));
    } else {
      step = m_new = R16(__fadd_rn(R16(__fmul_rn(lr_h, gi)), R16(__fmul_rn(mu_h, mi))));
    }
    m_out[i] = __float2half_rn(m_new);
    g_out[i] = __float2half_rn(step);
    p_out[i] = __float2half_rn(__fsub_rn(pi, step));
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
                               DataType copy_type, void* copy, float momentum, float weight_decay,
                               bool nesterov, cudaStream_t stream) {
  if (n == 0) return;
  HALFCAF_ENFORCE(copy == nullptr || copy_type == DataType::FLOAT16 ||
                      copy_type == DataType::BFLOAT16,
                  "MixedPrecisionMomentumSGD: the copy must be float16 or bfloat16, got ",
                  DataTypeName(copy_type));
  const FloatOut out = copy ? detail::Out(copy_type, copy, "copy") : FloatOut{nullptr, 0};
  MixedPrecisionMomentumSGDKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, detail::In(g_type, g, "grad"), m, p, lr, loss_scale, found_inf, out, momentum,
      weight_decay, nesterov);
  HALFCAF_LAUNCH_CHECK();
}

void FusedMomentumSGD(int64_t n, DataType dtype, const void* g, const void* m, const float* lr,
                      const void* p, void* g_out, void* m_out, void* p_out, float momentum,
                      float weight_decay, bool nesterov, bool fp16_math, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == DataType::FLOAT) {
    FusedMomentumFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(
        n, static_cast<const float*>(g), static_cast<const float*>(m), lr,
        static_cast<const float*>(p), static_cast<float*>(g_out), static_cast<float*>(m_out),
        static_cast<float*>(p_out), momentum, weight_decay, nesterov);
  } else {
    HALFCAF_ENFORCE(dtype == DataType::FLOAT16, "FusedMomentumSGD: float or float16 expected, got ",
                    DataTypeName(dtype));
    FusedMomentumHalfKernel<<<Blocks(n), kThreads, 0, stream>>>(
        n, static_cast<const __half*>(g), static_cast<const __half*>(m), lr,
        static_cast<const __half*>(p), static_cast<__half*>(g_out), static_cast<__half*>(m_out),
        static_cast<__half*>(p_out), momentum, weight_decay, nesterov, fp16_math);
  }
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
