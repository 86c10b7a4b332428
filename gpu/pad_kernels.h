// PadImage and PadImageGradient on CUDA. The image X is viewed as (outer, height, width,
// channels) — NCHW: outer = N * C, channels = 1; NHWC: outer = N — and the padded Y as (outer,
// pad_t + height + pad_b, pad_l + width + pad_r, channels). Float and float16 (computed in float);
// work is queued on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

struct PadImageDims {
  int64_t outer = 0, height = 0, width = 0, channels = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int mode = 0;  // 0 constant (border = value), 1 reflect (mirror without the edge), 2 edge
};

// y = x padded; `value` fills the border in constant mode.
void PadImageForward(const PadImageDims& d, float value, DataType type, const void* x, void* y,
                     cudaStream_t stream);

// dx[element] = sum of dy over the padded elements that copied it (no atomics: each dX element
// gathers its sources).
void PadImageBackward(const PadImageDims& d, DataType type, const void* dy, void* dx,
                      cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
