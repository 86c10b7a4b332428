// CUDA kernels of the training-loop operators: momentum SGD, the fused mixed-precision update and
// the dynamic loss-scale rule. Scalars that other ops produce on the device (lr, loss_scale,
// found_inf) are read by the kernels themselves: nothing here syncs with the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"
#include "core/types.h"

namespace halfcaf {
namespace gpu {

// MomentumSGD(Update) on floats, lr = lr[0]:
//   plain:    v = lr * g + mu * m;  m_out = g_out = v;  p_out = p - v
//   nesterov: m_new = mu * m + lr * g;  g_out = (1 + mu) * m_new - mu * m;  m_out = m_new;
//             p_out = p - g_out
// p / p_out are null for MomentumSGD. Any output may alias its input.
void MomentumSGD(int64_t n, const float* g, const float* m, const float* lr, const float* p,
                 float* g_out, float* m_out, float* p_out, float momentum, bool nesterov,
                 cudaStream_t stream);

// MixedPrecisionMomentumSGDUpdate, in place on the float moment m and master p, with g float,
// float16 or bfloat16: g' = g / loss_scale[0] + weight_decay * p, then plain or Nesterov momentum
// with lr[0], then copy = p rounded to copy_type (float16 or bfloat16) when copy is not null. loss_scale null means 1. When found_inf is not
// null and found_inf[0] != 0 nothing is written (the step is skipped); the flag is read by the
// kernel, so the skip costs no host sync.
void MixedPrecisionMomentumSGD(int64_t n, DataType g_type, const void* g, float* m, float* p,
                               const float* lr, const float* loss_scale, const float* found_inf,
                               DataType copy_type, void* copy, float momentum, float weight_decay,
                               bool nesterov, cudaStream_t stream);

// FP16MomentumSGDUpdate / FP32MomentumSGDUpdate (operators/optimizer/fp16_momentum_sgd_op.h has the rule
// and the float16-math rounding points), lr = lr[0] read on the device. dtype is FLOAT or FLOAT16
// for g, m, p and the outputs; fp16_math selects float16 arithmetic (FLOAT16 only), otherwise
// the step is computed in float and each output rounded once. No multiply-add is fused, so the
// results equal the CPU operator's bit for bit. Any output may alias its own input.
void FusedMomentumSGD(int64_t n, DataType dtype, const void* g, const void* m, const float* lr,
                      const void* p, void* g_out, void* m_out, void* p_out, float momentum,
                      float weight_decay, bool nesterov, bool fp16_math, cudaStream_t stream);

// One step of the dynamic loss-scale rule (LossScaleRule::Step in operators/optimizer/loss_scale_op.h), run
// by a single device thread on device-resident state: scale[0] (float), found_inf[0] (float),
// good_steps[0] and skipped_steps[0] (int64).
void UpdateLossScale(float* scale, const float* found_inf, int64_t* good_steps,
                     int64_t* skipped_steps, float growth, float backoff, int64_t growth_interval,
                     float min_scale, float max_scale, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
