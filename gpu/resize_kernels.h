// ResizeNearest / ResizeBilinear kernels on CUDA. The coordinates come precomputed per spatial dim
// as device tables (operators/nn/resize_op.h: ResizeTaps for the forward, ResizeGather for the
// gradient), so the CUDA and CPU operators read the same inputs with the same weights and sum in
// the same order. X / Y are (N, C, H, W) or NHWC (N, H, W, C), each float or float16 (computed in
// float, rounded once). Both functions queue their work on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

struct ResizeKernelShape {
  int64_t N, C, H, W, OH, OW;
  bool nhwc;
};

// One spatial dim's forward table, indexed by output position.
struct ResizeTapsView {
  const int64_t *i0, *i1;
  const float *l0, *l1;
};

// One spatial dim's gradient table: input i gathers outputs out[k] with weights weight[k],
// k in [offsets[i], offsets[i + 1]).
struct ResizeGatherView {
  const int64_t *offsets, *out;
  const float* weight;
};

// Y = X sampled at the taps: X[i0y, i0x] (nearest) or the bilinear blend of the four taps.
void ResizeForward(const ResizeKernelShape& s, bool nearest, ResizeTapsView ty, ResizeTapsView tx,
                   DataType t, const void* x, void* y, cudaStream_t stream);

// dX[h, w] = sum over the gathered (oh, wy) of h and (ow, wx) of w of wy * wx * dY[oh, ow].
void ResizeBackward(const ResizeKernelShape& s, ResizeGatherView gy, ResizeGatherView gx,
                    DataType dy_type, const void* dy, DataType dx_type, void* dx,
                    cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
