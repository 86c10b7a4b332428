#include "core/nan_math.h"
#include "gpu/kernel_util.cuh"
#include "gpu/prelu_kernels.h"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

__global__ void PReluForwardKernel(int64_t n, int64_t C, int64_t inner, FloatIn x, FloatIn slope,
                                   FloatOut y) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const float v = x[i];
    y.Set(i, v > 0.f ? v : slope[(i / inner) % C] * v);
  }
}

__global__ void PReluDxKernel(int64_t n, int64_t C, int64_t inner, FloatIn x, FloatIn dy,
                              FloatIn slope, FloatOut dx) {
  HALFCAF_KERNEL_LOOP(i, n) {
    const float v = x[i];
    dx.Set(i, v > 0.f ? dy[i] : IsNaN(v) ? v : slope[(i / inner) % C] * dy[i]);
  }
}

// One block per channel c: the sum over its outer * inner elements.
__global__ void PReluDslopeKernel(int64_t outer, int64_t C, int64_t inner, FloatIn x, FloatIn dy,
                                  FloatOut dslope) {
  const int64_t per_channel = outer * inner;
  HALFCAF_ROW_LOOP(c, C) {
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
      const int64_t i = ((j / inner) * C + c) * inner + j % inner;
      const float v = x[i];
      if (!(v > 0.f)) sum += dy[i] * v;
    }
    sum = kutil::BlockAllReduce(sum, kutil::SumOp(), 0.f);
    if (threadIdx.x == 0) dslope.Set(c, sum);
  }
}

}  // namespace

void PReluForward(const PReluShape& s, DataType x_type, const void* x, DataType slope_type,
                  const void* slope, DataType y_type, void* y, cudaStream_t stream) {
  const int64_t n = s.outer * s.C * s.inner;
  if (n == 0) return;
  PReluForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, s.C, s.inner, detail::In(x_type, x, "X"), detail::In(slope_type, slope, "Slope"),
      detail::Out(y_type, y, "Y"));
  HALFCAF_LAUNCH_CHECK();
}

void PReluBackward(const PReluShape& s, DataType x_type, const void* x, DataType dy_type,
                   const void* dy, DataType slope_type, const void* slope, DataType dx_type,
                   void* dx, DataType dslope_type, void* dslope, cudaStream_t stream) {
  const int64_t n = s.outer * s.C * s.inner;
  const FloatIn xin = detail::In(x_type, x, "X");
  const FloatIn dyin = detail::In(dy_type, dy, "dY");
  if (n > 0) {
    PReluDxKernel<<<Blocks(n), kThreads, 0, stream>>>(n, s.C, s.inner, xin, dyin,
                                                      detail::In(slope_type, slope, "Slope"),
                                                      detail::Out(dx_type, dx, "dX"));
    HALFCAF_LAUNCH_CHECK();
  }
  if (s.C == 0) return;
  // Channels with no elements still get dslope = 0 from the (empty) block sum.
  const int blocks = static_cast<int>(s.C < 65535 ? s.C : 65535);
  PReluDslopeKernel<<<blocks, kThreads, 0, stream>>>(s.outer, s.C, s.inner, xin, dyin,
                                                     detail::Out(dslope_type, dslope, "dSlope"));
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
