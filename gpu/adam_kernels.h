// CUDA kernels of the Adam operators (operators/optimizer/adam_op.cc has the rules). lr,
// loss_scale and found_inf are read on the device; the step count t is a host value (the Iter
// counter lives on the CPU), so the bias corrections are computed on the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

// Caffe2's Adam, float, in place (p, m1, m2 may alias their outputs): c is
// sqrt(1 - beta2^t) / (1 - beta1^t); step = lr[0] c m1 / (sqrt(m2) + eps); p += step; eg (when
// not null) = step.
void CaffeAdam(int64_t n, const float* g, float* p, float* m1, float* m2, float* eg,
               const float* lr, float c, float beta1, float beta2, float eps, cudaStream_t stream);

// MixedPrecisionAdamUpdate in place on float m1, m2 and master p, with g float, float16 or
// bfloat16: step_scale = 1 / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t) (host values), shrink =
// decoupled ? 1 - lr wd : 1 and l2 = decoupled ? 0 : wd (lr read on the device); copy (when not
// null) = the new p rounded to copy_type. found_inf[0] != 0 skips the step.
void MixedPrecisionAdam(int64_t n, DataType g_type, const void* g, float* m1, float* m2, float* p,
                        const float* lr, const float* loss_scale, const float* found_inf,
                        DataType copy_type, void* copy, float step_scale, float bc2_sqrt,
                        float beta1, float beta2, float eps, float weight_decay, bool decoupled,
                        cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
