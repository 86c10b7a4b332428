// PRelu kernels on CUDA with the CPU operators' semantics (operators/nn/prelu_op.cc). X is viewed as
// (outer, C, inner) and element i uses slope (i / inner) % C (a shared slope is C = inner = 1).
// Tensors are passed as (DataType, pointer), float or float16 each (computed in float, rounded
// once on store). Both functions queue their work on `stream`; empty tensors launch nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

struct PReluShape {
  int64_t outer, C, inner;
};

// y = x > 0 ? x : slope * x (NaN kept). y may alias x.
void PReluForward(const PReluShape& s, DataType x_type, const void* x, DataType slope_type,
                  const void* slope, DataType y_type, void* y, cudaStream_t stream);

// dx = x > 0 ? dy : slope * dy (NaN where x is NaN); dslope[c] = sum over channel c of dy * x
// where !(x > 0), one block per channel summing in float (deterministic).
void PReluBackward(const PReluShape& s, DataType x_type, const void* x, DataType dy_type,
                   const void* dy, DataType slope_type, const void* slope, DataType dx_type,
                   void* dx, DataType dslope_type, void* dslope, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
