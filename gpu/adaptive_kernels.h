// CUDA kernels of the adaptive optimizers (Adagrad, Adadelta, RmsProp, Wngrad, Lars and the fused
// MixedPrecision*Update forms). The per-element rules are core/adaptive_update_rules.h's, shared
// with the CPU operators; the operators are in operators/optimizer/. Rates, loss scales, overflow
// flags and accumulators are read on the device: nothing here syncs with the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/adaptive_update_rules.h"
#include "core/types.h"

namespace halfcaf {
namespace gpu {

// Which rule a fused update applies, with its arguments.
struct AdaptiveRule {
  enum Kind { kAdagrad, kAdadelta, kRmsProp } kind;
  float decay, momentum, epsilon;
};

// The fused update in place on the float states s0, s1 (s1 unused by Adagrad) and master p, with
// g float, float16 or bfloat16: g' = g / loss_scale[0] + weight_decay p; p -= lr[0] rule(g');
// copy (when not null) = the new p rounded to copy_type. found_inf[0] != 0 skips the step.
void MixedPrecisionAdaptive(const AdaptiveRule& rule, int64_t n, DataType g_type, const void* g,
                            float* s0, float* s1, float* p, const float* lr,
                            const float* loss_scale, const float* found_inf, DataType copy_type,
                            void* copy, float weight_decay, cudaStream_t stream);

// Caffe2's Adagrad in place: g' = g + wd p; p += lr[0] AdagradRule(g', h); elr / upd (when not
// null) = the effective rate / the step.
void AdagradStep(int64_t n, const float* g, float* p, float* h, float* elr, float* upd,
                 const float* lr, AdagradRule rule, float weight_decay, cudaStream_t stream);

// Caffe2's Adadelta in place: p += lr[0] AdadeltaRule(g, h, u).
void AdadeltaStep(int64_t n, const float* g, float* p, float* h, float* u, const float* lr,
                  AdadeltaRule rule, cudaStream_t stream);

// Caffe2's RmsProp: g_out = CaffeRmsProp(g, lr[0], ...) with ms, mom in place (g_out may be g).
void RmsPropStep(int64_t n, const float* g, float* g_out, float* ms, float* mom, const float* lr,
                 float decay, float momentum, float epsilon, cudaStream_t stream);

// Caffe2's Wngrad, in place on p and the 1-element seq_b, given sum_sq[0] = |g|^2 (Dot):
// p += lr[0] g / (b + eps); seq_b = b + sum_sq / (b + eps); elr[0] and upd (when not null).
void WngradStep(int64_t n, const float* g, float* p, float* seq_b, const float* sum_sq,
                float* elr, float* upd, const float* lr, float epsilon, cudaStream_t stream);

// Lars' rescaled rate into out[0] from sq[0] = |X|^2, sq[1] = |dX|^2 and the 1-element wd,
// trust, lr_max and (when not null) loss_scale, which divides |dX|.
void LarsRescale(const float* sq, const float* wd, const float* trust, const float* lr_max,
                 const float* loss_scale, float offset, float lr_min, float* out,
                 cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
