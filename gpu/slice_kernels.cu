#include "gpu/slice_kernels.h"

#include "core/enforce.h"
#include "gpu/cuda_check.h"
#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

namespace {

// Element i of the (outer, length, inner) slice lives at this offset in the (outer, dim, inner)
// tensor.
__device__ __forceinline__ int64_t FullOffset(int64_t i, int64_t dim, int64_t inner,
                                              int64_t start, int64_t length) {
  const int64_t block = length * inner;
  const int64_t o = i / block;
  const int64_t r = i - o * block;
  return (o * dim + start) * inner + r;
}

// T is an unsigned integer of the element's size: the copy moves bits, whatever the type.
template <typename T>
__global__ void SliceForwardKernel(int64_t n, int64_t dim, int64_t inner, int64_t start,
                                   int64_t length, const T* x, T* y) {
  HALFCAF_KERNEL_LOOP(i, n) { y[i] = x[FullOffset(i, dim, inner, start, length)]; }
}

template <typename T>
__global__ void SliceBackwardKernel(int64_t n, int64_t dim, int64_t inner, int64_t start,
                                    int64_t length, const T* dy, T* dx) {
  HALFCAF_KERNEL_LOOP(i, n) { dx[FullOffset(i, dim, inner, start, length)] = dy[i]; }
}

// Calls f(T{}) with T the unsigned integer of `item_size` bytes.
template <typename F>
void DispatchItemSize(size_t item_size, F&& f) {
  switch (item_size) {
    case 1: f(uint8_t{}); return;
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
    default: break;
  }
  HALFCAF_THROW("Slice on CUDA copies elements of 1, 2, 4 or 8 bytes, got ", item_size);
}

}  // namespace

void SliceForward(int64_t outer, int64_t dim, int64_t inner, int64_t start, int64_t length,
                  size_t item_size, const void* x, void* y, cudaStream_t stream) {
  const int64_t n = outer * length * inner;
  if (n == 0) return;
  DispatchItemSize(item_size, [&](auto tag) {
    using T = decltype(tag);
    SliceForwardKernel<T><<<kutil::Blocks(n), kutil::kThreads, 0, stream>>>(
        n, dim, inner, start, length, static_cast<const T*>(x), static_cast<T*>(y));
  });
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

void SliceBackward(int64_t outer, int64_t dim, int64_t inner, int64_t start, int64_t length,
                   size_t item_size, const void* dy, void* dx, cudaStream_t stream) {
  const int64_t total = outer * dim * inner;
  if (total == 0) return;
  // All-zero bytes are zero in every numeric type, float16 included.
  HALFCAF_CUDA_CHECK(cudaMemsetAsync(dx, 0, static_cast<size_t>(total) * item_size, stream));
  const int64_t n = outer * length * inner;
  if (n == 0) return;
  DispatchItemSize(item_size, [&](auto tag) {
    using T = decltype(tag);
    SliceBackwardKernel<T><<<kutil::Blocks(n), kutil::kThreads, 0, stream>>>(
        n, dim, inner, start, length, static_cast<const T*>(dy), static_cast<T*>(dx));
  });
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpu
}  // namespace halfcaf
