// Copying a batch of images into a window-shifted batch of another spatial size, on CUDA: how the
// cuDNN ConvTranspose crops its result (asymmetric pads, large adjs) and embeds dY for the
// gradient (operators/nn/conv_transpose_op_cudnn.cc). Elements are copied as raw bytes (2 or 4 each),
// so float and float16 both work.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace halfcaf {
namespace gpu {

constexpr int kShiftCopyMaxDims = 3;

// dst (N, C, dst_size...) = src (N, C, src_size...) shifted by `offset` per spatial dim:
// dst[n, c, p] = src[n, c, p + offset] where that lies inside src, else 0. NCHW-style layout, or
// channels last (N, spatial..., C). 1 to kShiftCopyMaxDims spatial dims.
struct ShiftCopyShape {
  int64_t N = 0, C = 0;
  int nd = 0;
  int64_t src_size[kShiftCopyMaxDims] = {}, dst_size[kShiftCopyMaxDims] = {},
          offset[kShiftCopyMaxDims] = {};
  bool channels_last = false;
};

void ShiftCopy(const ShiftCopyShape& s, size_t item_size, const void* src, void* dst,
               cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
