#include "gpu/conv_transpose_kernels.h"
#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::kThreads;

namespace {

template <typename T>
__global__ void ShiftCopyKernel(ShiftCopyShape s, int64_t total, const T* src, T* dst) {
  HALFCAF_KERNEL_LOOP(i, total) {
    int64_t rest = i, c = 0;
    if (s.channels_last) {
      c = rest % s.C;
      rest /= s.C;
    }
    // Spatial dims, last fastest; the source offset is built up in the same pass.
    int64_t src_spatial = 0, stride = 1;
    bool inside = true;
    for (int d = s.nd - 1; d >= 0; --d) {
      const int64_t p = rest % s.dst_size[d] + s.offset[d];
      rest /= s.dst_size[d];
      inside = inside && p >= 0 && p < s.src_size[d];
      src_spatial += p * stride;
      stride *= s.src_size[d];
    }
    if (!s.channels_last) {
      c = rest % s.C;
      rest /= s.C;
    }
    const int64_t n = rest;
    const int64_t j = s.channels_last ? (n * stride + src_spatial) * s.C + c
                                      : (n * s.C + c) * stride + src_spatial;
    dst[i] = inside ? src[j] : T(0);
  }
}

}  // namespace

void ShiftCopy(const ShiftCopyShape& s, size_t item_size, const void* src, void* dst,
               cudaStream_t stream) {
  HALFCAF_ENFORCE(s.nd >= 1 && s.nd <= kShiftCopyMaxDims, "ShiftCopy takes 1 to ",
                  kShiftCopyMaxDims, " spatial dims, got ", s.nd);
  int64_t total = s.N * s.C;
  for (int d = 0; d < s.nd; ++d) total *= s.dst_size[d];
  if (total == 0) return;
  if (item_size == 2) {
    ShiftCopyKernel<<<Blocks(total), kThreads, 0, stream>>>(
        s, total, static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst));
  } else {
    HALFCAF_ENFORCE(item_size == 4, "ShiftCopy copies 2- or 4-byte elements, got ", item_size);
    ShiftCopyKernel<<<Blocks(total), kThreads, 0, stream>>>(
        s, total, static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst));
  }
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
