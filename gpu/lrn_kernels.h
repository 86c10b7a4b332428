// LRN kernels on CUDA with exactly the CPU operators' arithmetic (operators/nn/lrn_op.cc): each
// element's window of channels is summed in channel order, in float. Tensors are viewed as
// (outer, C, inner) (NCHW: (N, C, spatial); NHWC: (N * spatial, C, 1)) and passed as
// (DataType, pointer), float or float16 each (float16 is computed in float and rounded once).
// Both functions queue their work on `stream`; nothing is launched for empty tensors.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

struct LrnKernelArgs {
  int64_t outer, C, inner;
  int size;
  float alpha, beta, bias;
};

// y = x * scale^-beta; scale (X's shape) is written too unless it is null. x, y and scale have
// dtype `t`.
void LrnForward(const LrnKernelArgs& a, DataType t, const void* x, void* y, void* scale,
                cudaStream_t stream);

// dx from x, y, dy and the forward's scale, or, when `scale` is null, the scale recomputed from x.
void LrnBackward(const LrnKernelArgs& a, DataType x_type, const void* x, DataType y_type,
                 const void* y, DataType scale_type, const void* scale, DataType dy_type,
                 const void* dy, DataType dx_type, void* dx, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
