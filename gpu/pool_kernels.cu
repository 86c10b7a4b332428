#include "gpu/cuda_check.h"
#include "core/nan_math.h"
#include "gpu/kernel_util.cuh"
#include "gpu/pool_kernels.h"

namespace halfcaf {
namespace gpu {

using namespace kutil;  // NOLINT

namespace {

// Element (n, c, d, h, w) of a (N, C, D, H, W) batch in the layout of s (NHWC has D == 1).
__device__ __forceinline__ int64_t Index(const PoolShape& s, int64_t n, int64_t c, int64_t d,
                                         int64_t h, int64_t w, int64_t D, int64_t H, int64_t W) {
  return s.nhwc ? (((n * D + d) * H + h) * W + w) * s.C + c
                : (((n * s.C + c) * D + d) * H + h) * W + w;
}

// (n, c, d, h, w) of flat element i of a (N, C, D, H, W) batch in the layout of s.
__device__ __forceinline__ void Coords(const PoolShape& s, int64_t i, int64_t D, int64_t H,
                                       int64_t W, int64_t* n, int64_t* c, int64_t* d, int64_t* h,
                                       int64_t* w) {
  if (s.nhwc) {
    *c = i % s.C;
    i /= s.C;
    *w = i % W;
    i /= W;
    *h = i % H;
    i /= H;
    *d = i % D;
    *n = i / D;
  } else {
    *w = i % W;
    i /= W;
    *h = i % H;
    i /= H;
    *d = i % D;
    i /= D;
    *c = i % s.C;
    *n = i / s.C;
  }
}

// The in-image part [d0, d1) x [h0, h1) x [w0, w1) of the window of output (od, oh, ow), as on
// CPU.
struct Window {
  int64_t d0, d1, h0, h1, w0, w1;
  __device__ int64_t count() const { return (d1 - d0) * (h1 - h0) * (w1 - w0); }
};

// One dim of a window: [*lo, *hi) clipped to [0, size), empty rather than negative.
__device__ __forceinline__ void Clip(int64_t o, int64_t stride, int64_t pad, int64_t k,
                                     int64_t size, int64_t* lo, int64_t* hi) {
  const int64_t start = o * stride - pad;
  *lo = max(start, int64_t(0));
  *hi = max(min(start + k, size), *lo);
}

__device__ __forceinline__ Window WindowAt(const PoolShape& s, int64_t od, int64_t oh,
                                           int64_t ow) {
  Window win;
  Clip(od, s.sd, s.pd, s.kd, s.D, &win.d0, &win.d1);
  Clip(oh, s.sh, s.ph, s.kh, s.H, &win.h0, &win.h1);
  Clip(ow, s.sw, s.pw, s.kw, s.W, &win.w0, &win.w1);
  return win;
}

template <bool kMax, typename T>
__global__ void PoolForwardKernel(PoolShape s, const T* x, T* y) {
  HALFCAF_KERNEL_LOOP(i, s.out_numel()) {
    int64_t n, c, od, oh, ow;
    Coords(s, i, s.OD, s.OH, s.OW, &n, &c, &od, &oh, &ow);
    const Window win = WindowAt(s, od, oh, ow);
    float acc = kMax ? -INFINITY : 0.f;
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        for (int64_t w = win.w0; w < win.w1; ++w) {
          const float v = Load(x[Index(s, n, c, d, h, w, s.D, s.H, s.W)]);
          if (kMax) {
            acc = MaxNaN(acc, v);  // NaN kept, as on CPU
          } else {
            acc += v;
          }
        }
      }
    }
    const int64_t count = win.count();
    if (count == 0) {
      acc = 0.f;
    } else if (!kMax) {
      acc /= static_cast<float>(count);
    }
    y[i] = Store<T>(acc);
  }
}

template <typename T>
__global__ void MaxPoolArgmaxKernel(PoolShape s, const T* x, int32_t* argmax) {
  HALFCAF_KERNEL_LOOP(i, s.out_numel()) {
    int64_t n, c, od, oh, ow;
    Coords(s, i, s.OD, s.OH, s.OW, &n, &c, &od, &oh, &ow);
    const Window win = WindowAt(s, od, oh, ow);
    if (win.count() == 0) {
      argmax[i] = -1;
      continue;
    }
    int64_t best = (win.d0 * s.H + win.h0) * s.W + win.w0;
    float best_v = Load(x[Index(s, n, c, win.d0, win.h0, win.w0, s.D, s.H, s.W)]);
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        for (int64_t w = win.w0; w < win.w1; ++w) {
          const float v = Load(x[Index(s, n, c, d, h, w, s.D, s.H, s.W)]);
          if (BeatsMax(v, best_v)) {
            best_v = v;
            best = (d * s.H + h) * s.W + w;
          }
        }
      }
    }
    argmax[i] = static_cast<int32_t>(best);
  }
}

// Outputs along one dim whose windows contain input index h: [lo, hi].
__device__ __forceinline__ void CoveringRange(int64_t h, int64_t pad, int64_t k, int64_t stride,
                                              int64_t out, int64_t* lo, int64_t* hi) {
  const int64_t a = h + pad - k + 1;  // first window start (padded coords) that still covers h
  *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  *hi = min((h + pad) / stride, out - 1);
}

template <bool kMax, typename T, typename TD>
__global__ void PoolBackwardKernel(PoolShape s, const int32_t* argmax, const TD* dy, T* dx) {
  HALFCAF_KERNEL_LOOP(i, s.in_numel()) {
    int64_t n, c, d, h, w;
    Coords(s, i, s.D, s.H, s.W, &n, &c, &d, &h, &w);
    int64_t od0, od1, oh0, oh1, ow0, ow1;
    CoveringRange(d, s.pd, s.kd, s.sd, s.OD, &od0, &od1);
    CoveringRange(h, s.ph, s.kh, s.sh, s.OH, &oh0, &oh1);
    CoveringRange(w, s.pw, s.kw, s.sw, s.OW, &ow0, &ow1);
    const int32_t self = static_cast<int32_t>((d * s.H + h) * s.W + w);
    float acc = 0.f;
    for (int64_t od = od0; od <= od1; ++od) {
      for (int64_t oh = oh0; oh <= oh1; ++oh) {
        for (int64_t ow = ow0; ow <= ow1; ++ow) {
          const int64_t o = Index(s, n, c, od, oh, ow, s.OD, s.OH, s.OW);
          if (kMax) {
            if (argmax[o] == self) acc += Load(dy[o]);
          } else {
            const int64_t count = WindowAt(s, od, oh, ow).count();
            if (count > 0) acc += Load(dy[o]) / static_cast<float>(count);
          }
        }
      }
    }
    dx[i] = Store<T>(acc);
  }
}

}  // namespace

template <typename T>
void MaxPoolForward(const PoolShape& s, const T* x, T* y, cudaStream_t stream) {
  const int64_t n = s.out_numel();
  if (n == 0) return;
  PoolForwardKernel<true><<<Blocks(n), kThreads, 0, stream>>>(s, DevPtr(x), DevPtr(y));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void AveragePoolForward(const PoolShape& s, const T* x, T* y, cudaStream_t stream) {
  const int64_t n = s.out_numel();
  if (n == 0) return;
  PoolForwardKernel<false><<<Blocks(n), kThreads, 0, stream>>>(s, DevPtr(x), DevPtr(y));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void MaxPoolArgmax(const PoolShape& s, const T* x, int32_t* argmax, cudaStream_t stream) {
  const int64_t n = s.out_numel();
  if (n == 0) return;
  MaxPoolArgmaxKernel<<<Blocks(n), kThreads, 0, stream>>>(s, DevPtr(x), argmax);
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename TD>
void MaxPoolBackward(const PoolShape& s, const int32_t* argmax, const TD* dy, T* dx,
                     cudaStream_t stream) {
  const int64_t n = s.in_numel();
  if (n == 0) return;
  PoolBackwardKernel<true><<<Blocks(n), kThreads, 0, stream>>>(s, argmax, DevPtr(dy), DevPtr(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename TD>
void AveragePoolBackward(const PoolShape& s, const TD* dy, T* dx, cudaStream_t stream) {
  const int64_t n = s.in_numel();
  if (n == 0) return;
  PoolBackwardKernel<false><<<Blocks(n), kThreads, 0, stream>>>(s, nullptr, DevPtr(dy), DevPtr(dx));
  HALFCAF_CUDA_CHECK(cudaGetLastError());
}

#define HALFCAF_POOL_INSTANTIATE(T)                                                              \
  template void MaxPoolForward<T>(const PoolShape&, const T*, T*, cudaStream_t);                 \
  template void AveragePoolForward<T>(const PoolShape&, const T*, T*, cudaStream_t);             \
  template void MaxPoolArgmax<T>(const PoolShape&, const T*, int32_t*, cudaStream_t);            \
  template void MaxPoolBackward<T, float>(const PoolShape&, const int32_t*, const float*, T*,    \
                                          cudaStream_t);                                         \
  template void MaxPoolBackward<T, Half>(const PoolShape&, const int32_t*, const Half*, T*,      \
                                         cudaStream_t);                                          \
  template void AveragePoolBackward<T, float>(const PoolShape&, const float*, T*, cudaStream_t); \
  template void AveragePoolBackward<T, Half>(const PoolShape&, const Half*, T*, cudaStream_t);
HALFCAF_POOL_INSTANTIATE(float)
HALFCAF_POOL_INSTANTIATE(Half)
#undef HALFCAF_POOL_INSTANTIATE

}  // namespace gpu
}  // namespace halfcaf
