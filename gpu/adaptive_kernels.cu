#include "gpu/adaptive_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

template <class Rule>
__global__ void FusedKernel(int64_t n, Rule rule, FloatIn g, float* s0, float* s1, float* p,
                            const float* lr, const float* loss_scale, const float* found_inf,
                            FloatOut copy, float wd) {
  if (found_inf && found_inf[0] != 0.f) return;  // overflowed step: leave everything alone
  const float rate = lr[0];
  const float inv = 1.f / (loss_scale ? loss_scale[0] : 1.f);
  HALFCAF_KERNEL_LOOP(i, n) {
    float unused = 0.f;
    const float gi = g[i] * inv + wd * p[i];
    const float p_new = p[i] - rate * rule(gi, s0[i], s1 ? s1[i] : unused);
    p[i] = p_new;
    if (copy.p) copy.Set(i, p_new);
  }
}

template <class Rule>
void LaunchFused(int64_t n, Rule rule, FloatIn g, float* s0, float* s1, float* p, const float* lr,
                 const float* loss_scale, const float* found_inf, FloatOut copy, float wd,
                 cudaStream_t stream) {
  FusedKernel<<<Blocks(n), kThreads, 0, stream>>>(n, rule, g, s0, s1, p, lr, loss_scale,
                                                  found_inf, copy, wd);
  HALFCAF_LAUNCH_CHECK();
}

__global__ void AdagradKernel(int64_t n, const float* g, float* p, float* h, float* elr,
                              float* upd, const float* lr, AdagradRule rule, float wd) {
  const float rate = lr[0];
  HALFCAF_KERNEL_LOOP(i, n) {
    float unused = 0.f;
    const float gi = g[i] + wd * p[i];
    const float step = rate * rule(gi, h[i], unused);
    if (elr) elr[i] = rate / (sqrtf(h[i]) + rule.epsilon);
    if (upd) upd[i] = step;
    p[i] += step;
  }
}

__global__ void AdadeltaKernel(int64_t n, const float* g, float* p, float* h, float* u,
                               const float* lr, AdadeltaRule rule) {
  const float rate = lr[0];
  HALFCAF_KERNEL_LOOP(i, n) { p[i] += rate * rule(g[i], h[i], u[i]); }
}

__global__ void RmsPropKernel(int64_t n, const float* g, float* g_out, float* ms, float* mom,
                              const float* lr, float decay, float momentum, float eps) {
  const float rate = lr[0];
  HALFCAF_KERNEL_LOOP(i, n) {
    g_out[i] = CaffeRmsProp(g[i], rate, decay, momentum, eps, ms[i], mom[i]);
  }
}

__global__ void WngradParamKernel(int64_t n, const float* g, float* p, const float* seq_b,
                                  float* upd, const float* lr, float eps) {
  const float rate = lr[0] / (seq_b[0] + eps);
  HALFCAF_KERNEL_LOOP(i, n) {
    const float step = rate * g[i];
    if (upd) upd[i] = step;
    p[i] += step;
  }
}

// One thread, after the parameter kernel (same stream): the accumulator and the effective rate.
__global__ void WngradAccumulatorKernel(float* seq_b, const float* sum_sq, float* elr,
                                        const float* lr, float eps) {
  const float b = seq_b[0];
  if (elr) elr[0] = lr[0] / (b + eps);
  seq_b[0] = b + sum_sq[0] / (b + eps);
}

__global__ void LarsKernel(const float* sq, const float* wd, const float* trust,
                           const float* lr_max, const float* loss_scale, float offset,
                           float lr_min, float* out) {
  const double x_norm = sqrt(static_cast<double>(sq[0]));
  double dx_norm = sqrt(static_cast<double>(sq[1]));
  if (loss_scale) dx_norm /= loss_scale[0];
  out[0] = LarsRate(x_norm, dx_norm, wd[0], trust[0], lr_max[0], offset, lr_min);
}

}  // namespace

void MixedPrecisionAdaptive(const AdaptiveRule& rule, int64_t n, DataType g_type, const void* g,
                            float* s0, float* s1, float* p, const float* lr,
                            const float* loss_scale, const float* found_inf, DataType copy_type,
                            void* copy, float weight_decay, cudaStream_t stream) {
  if (n == 0) return;
  HALFCAF_ENFORCE(copy == nullptr || copy_type == DataType::FLOAT16 ||
                      copy_type == DataType::BFLOAT16,
                  "MixedPrecisionAdaptive: the copy must be float16 or bfloat16, got ",
                  DataTypeName(copy_type));
  const FloatOut out = copy ? detail::Out(copy_type, copy, "copy") : FloatOut{nullptr, 0};
  const FloatIn gi = detail::In(g_type, g, "grad");
  switch (rule.kind) {
    case AdaptiveRule::kAdagrad:
      LaunchFused(n, AdagradRule{rule.decay, rule.epsilon}, gi, s0, nullptr, p, lr, loss_scale,
                  found_inf, out, weight_decay, stream);
      break;
    case AdaptiveRule::kAdadelta:
      LaunchFused(n, AdadeltaRule{rule.decay, rule.epsilon}, gi, s0, s1, p, lr, loss_scale,
                  found_inf, out, weight_decay, stream);
      break;
    case AdaptiveRule::kRmsProp:
      LaunchFused(n, RmsPropRule{rule.decay, rule.momentum, rule.epsilon}, gi, s0, s1, p, lr,
                  loss_scale, found_inf, out, weight_decay, stream);
      break;
  }
}

void AdagradStep(int64_t n, const float* g, float* p, float* h, float* elr, float* upd,
                 const float* lr, AdagradRule rule, float weight_decay, cudaStream_t stream) {
  if (n == 0) return;
  AdagradKernel<<<Blocks(n), kThreads, 0, stream>>>(n, g, p, h, elr, upd, lr, rule,
                                                    weight_decay);
  HALFCAF_LAUNCH_CHECK();
}

void AdadeltaStep(int64_t n, const float* g, float* p, float* h, float* u, const float* lr,
                  AdadeltaRule rule, cudaStream_t stream) {
  if (n == 0) return;
  AdadeltaKernel<<<Blocks(n), kThreads, 0, stream>>>(n, g, p, h, u, lr, rule);
  HALFCAF_LAUNCH_CHECK();
}

void RmsPropStep(int64_t n, const float* g, float* g_out, float* ms, float* mom, const float* lr,
                 float decay, float momentum, float epsilon, cudaStream_t stream) {
  if (n == 0) return;
  RmsPropKernel<<<Blocks(n), kThreads, 0, stream>>>(n, g, g_out, ms, mom, lr, decay, momentum,
                                                    epsilon);
  HALFCAF_LAUNCH_CHECK();
}

void WngradStep(int64_t n, const float* g, float* p, float* seq_b, const float* sum_sq,
                float* elr, float* upd, const float* lr, float epsilon, cudaStream_t stream) {
  if (n > 0) {
    WngradParamKernel<<<Blocks(n), kThreads, 0, stream>>>(n, g, p, seq_b, upd, lr, epsilon);
    HALFCAF_LAUNCH_CHECK();
  }
  WngradAccumulatorKernel<<<1, 1, 0, stream>>>(seq_b, sum_sq, elr, lr, epsilon);
  HALFCAF_LAUNCH_CHECK();
}

void LarsRescale(const float* sq, const float* wd, const float* trust, const float* lr_max,
                 const float* loss_scale, float offset, float lr_min, float* out,
                 cudaStream_t stream) {
  LarsKernel<<<1, 1, 0, stream>>>(sq, wd, trust, lr_max, loss_scale, offset, lr_min, out);
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
