// 2-D max / average pooling kernels on CUDA with exactly the CPU operators' semantics
// (operators/pool_op.cc): each window is clipped to the image; average pooling divides by the
// number of in-image elements; a window wholly in the padding (Caffe's legacy pooling) gives 0;
// the max-pool gradient goes to the first element (in scan order) holding the window's maximum.
// Float16 is computed in float and rounded once. All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/half.h"

namespace halfcaf {
namespace gpu {

struct PoolShape {
  int64_t N, C, H, W;  // input
  int64_t OH, OW;      // output
  int64_t kh, kw;      // window
  int64_t sh, sw;      // strides
  int64_t ph, pw;      // head pads (the tails only shape OH, OW)
  bool nhwc;           // false: NCHW
  // constexpr: usable in kernels too (--expt-relaxed-constexpr).
  constexpr int64_t in_numel() const { return N * C * H * W; }
  constexpr int64_t out_numel() const { return N * C * OH * OW; }
};

// y = pool(x); T float or Half.
template <typename T>
void MaxPoolForward(const PoolShape& s, const T* x, T* y, cudaStream_t stream);
template <typename T>
void AveragePoolForward(const PoolShape& s, const T* x, T* y, cudaStream_t stream);

// argmax[o] = h * W + w of the first maximum of window o (-1 for an empty window).
template <typename T>
void MaxPoolArgmax(const PoolShape& s, const T* x, int32_t* argmax, cudaStream_t stream);

// dx (T, X's dtype) from dy (TD, any float type), deterministic (each dx element sums its windows
// in float). Max pooling takes the argmax from MaxPoolArgmax.
template <typename T, typename TD>
void MaxPoolBackward(const PoolShape& s, const int32_t* argmax, const TD* dy, T* dx,
                     cudaStream_t stream);
template <typename T, typename TD>
void AveragePoolBackward(const PoolShape& s, const TD* dy, T* dx, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
