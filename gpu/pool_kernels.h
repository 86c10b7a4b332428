// 1-D to 3-D max / average pooling kernels on CUDA with exactly the CPU operators' semantics
// (operators/nn/pool_op.cc): a window's taps are `dilation` apart and clipped to the image; average
// pooling divides by the number of in-image taps; a window wholly in the padding (Caffe's legacy
// pooling) gives 0; the max-pool gradient goes to the first tap (in scan order) holding the
// window's maximum.
// Float16 and bfloat16 are computed in float and rounded once. All kernels run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/bfloat16.h"
#include "core/half.h"

namespace halfcaf {
namespace gpu {

// Up to three spatial dims (D, H, W); fewer are expressed with leading unit dims (D = OD = kd =
// sd = dd = 1, pd = 0 for 2-D; also H = ... = 1 for 1-D). NHWC is 2-D only (D = 1).
struct PoolShape {
  int64_t N, C;
  int64_t D = 1, H, W;     // input
  int64_t OD = 1, OH, OW;  // output
  int64_t kd = 1, kh, kw;  // window
  int64_t sd = 1, sh, sw;  // strides
  int64_t pd = 0, ph, pw;  // head pads (the tails only shape OD, OH, OW)
  int64_t dd = 1, dh = 1, dw = 1;  // dilations
  bool nhwc;               // false: NCHW
  // constexpr: usable in kernels too (--expt-relaxed-constexpr).
  constexpr int64_t in_numel() const { return N * C * D * H * W; }
  constexpr int64_t out_numel() const { return N * C * OD * OH * OW; }
};

// y = pool(x); T float or Half.
template <typename T>
void MaxPoolForward(const PoolShape& s, const T* x, T* y, cudaStream_t stream);
template <typename T>
void AveragePoolForward(const PoolShape& s, const T* x, T* y, cudaStream_t stream);

// argmax[o] = (d * H + h) * W + w of the first maximum of window o (-1 for an empty window).
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
