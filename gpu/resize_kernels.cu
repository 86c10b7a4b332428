#include "gpu/kernel_util.cuh"
#include "gpu/resize_kernels.h"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

__device__ __forceinline__ int64_t Index(const ResizeKernelShape& s, int64_t n, int64_t c,
                                         int64_t h, int64_t w, int64_t H, int64_t W) {
  return s.nhwc ? ((n * H + h) * W + w) * s.C + c : ((n * s.C + c) * H + h) * W + w;
}

// (n, c, h, w) of flat element i of an (H, W) batch in s's layout.
__device__ __forceinline__ void Coords(const ResizeKernelShape& s, int64_t i, int64_t H, int64_t W,
                                       int64_t* n, int64_t* c, int64_t* h, int64_t* w) {
  if (s.nhwc) {
    *c = i % s.C;
    i /= s.C;
    *w = i % W;
    i /= W;
    *h = i % H;
    *n = i / H;
  } else {
    *w = i % W;
    i /= W;
    *h = i % H;
    i /= H;
    *c = i % s.C;
    *n = i / s.C;
  }
}

__global__ void ResizeForwardKernel(ResizeKernelShape s, bool nearest, ResizeTapsView ty,
                                    ResizeTapsView tx, FloatIn x, FloatOut y) {
  HALFCAF_KERNEL_LOOP(i, s.N * s.C * s.OH * s.OW) {
    int64_t n, c, oh, ow;
    Coords(s, i, s.OH, s.OW, &n, &c, &oh, &ow);
    const int64_t y0 = ty.i0[oh], x0 = tx.i0[ow];
    if (nearest) {
      y.Set(i, x[Index(s, n, c, y0, x0, s.H, s.W)]);
      continue;
    }
    const int64_t y1 = ty.i1[oh], x1 = tx.i1[ow];
    const float v = ty.l0[oh] * (tx.l0[ow] * x[Index(s, n, c, y0, x0, s.H, s.W)] +
                                 tx.l1[ow] * x[Index(s, n, c, y0, x1, s.H, s.W)]) +
                    ty.l1[oh] * (tx.l0[ow] * x[Index(s, n, c, y1, x0, s.H, s.W)] +
                                 tx.l1[ow] * x[Index(s, n, c, y1, x1, s.H, s.W)]);
    y.Set(i, v);
  }
}

__global__ void ResizeBackwardKernel(ResizeKernelShape s, ResizeGatherView gy, ResizeGatherView gx,
                                     FloatIn dy, FloatOut dx) {
  HALFCAF_KERNEL_LOOP(i, s.N * s.C * s.H * s.W) {
    int64_t n, c, h, w;
    Coords(s, i, s.H, s.W, &n, &c, &h, &w);
    float acc = 0.f;
    for (int64_t ky = gy.offsets[h]; ky < gy.offsets[h + 1]; ++ky) {
      float row = 0.f;
      for (int64_t kx = gx.offsets[w]; kx < gx.offsets[w + 1]; ++kx) {
        row += gx.weight[kx] * dy[Index(s, n, c, gy.out[ky], gx.out[kx], s.OH, s.OW)];
      }
      acc += gy.weight[ky] * row;
    }
    dx.Set(i, acc);
  }
}

}  // namespace

void ResizeForward(const ResizeKernelShape& s, bool nearest, ResizeTapsView ty, ResizeTapsView tx,
                   DataType t, const void* x, void* y, cudaStream_t stream) {
  const int64_t n = s.N * s.C * s.OH * s.OW;
  if (n == 0) return;
  ResizeForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(s, nearest, ty, tx, detail::In(t, x, "X"),
                                                          detail::Out(t, y, "Y"));
  HALFCAF_LAUNCH_CHECK();
}

void ResizeBackward(const ResizeKernelShape& s, ResizeGatherView gy, ResizeGatherView gx,
                    DataType dy_type, const void* dy, DataType dx_type, void* dx,
                    cudaStream_t stream) {
  const int64_t n = s.N * s.C * s.H * s.W;
  if (n == 0) return;
  ResizeBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(s, gy, gx, detail::In(dy_type, dy, "dY"),
                                                           detail::Out(dx_type, dx, "dX"));
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
