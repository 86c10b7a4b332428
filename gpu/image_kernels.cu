#include "gpu/image_kernels.h"
#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using namespace kutil;  // NOLINT

namespace {

template <typename T>
__global__ void NormalizeImagesNCHWKernel(int64_t total, int64_t hw, int channels,
                                          const uint8_t* in, ImageAffine affine, T* out) {
  HALFCAF_KERNEL_LOOP(i, total) {
    const int64_t p = i % hw;
    const int64_t nc = i / hw;
    const int c = static_cast<int>(nc % channels);
    const int64_t n = nc / channels;
    const float v = static_cast<float>(in[(n * hw + p) * channels + c]);
    out[i] = Store<T>(__fmul_rn(__fsub_rn(v, affine.mean[c]), affine.inv_std[c]));
  }
}

}  // namespace

template <typename T>
void NormalizeImagesNCHW(int64_t images, int64_t hw, int channels, const uint8_t* in,
                         const ImageAffine& affine, T* out, cudaStream_t stream) {
  const int64_t total = images * hw * channels;
  if (total == 0) return;
  NormalizeImagesNCHWKernel<<<Blocks(total), kThreads, 0, stream>>>(total, hw, channels, in,
                                                                    affine, DevPtr(out));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template void NormalizeImagesNCHW<float>(int64_t, int64_t, int, const uint8_t*,
                                         const ImageAffine&, float*, cudaStream_t);
template void NormalizeImagesNCHW<Half>(int64_t, int64_t, int, const uint8_t*,
                                        const ImageAffine&, Half*, cudaStream_t);

}  // namespace gpu
}  // namespace halfcaf
