// The GPU transform of ImageInput (use_gpu_transform): uint8 NHWC crops, copied from the host,
// become NCHW float / float16 values (pixel - mean[c]) * inv_std[c], computed in float exactly as
// the CPU op computes them (float16 rounded once, to nearest even).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace halfcaf {
namespace gpu {

// Per-channel mean and 1 / std (channels <= 3), passed to the kernel by value.
struct ImageAffine {
  float mean[3];
  float inv_std[3];
};

// out[(n * C + c) * hw + p] = (in[(n * hw + p) * C + c] - mean[c]) * inv_std[c], for `images`
// images of hw pixels and C (1 or 3) channels. T is float or Half.
template <typename T>
void NormalizeImagesNCHW(int64_t images, int64_t hw, int channels, const uint8_t* in,
                         const ImageAffine& affine, T* out, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
