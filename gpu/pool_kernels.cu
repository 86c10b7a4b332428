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

// The in-image taps [d0, d1) x [h0, h1) x [w0, w1) of the window of output (od, oh, ow), walked
// in steps of the dilations (s.dd, s.dh, s.dw), as on CPU; n* counts them per dim.
struct Window {
  int64_t d0, d1, h0, h1, w0, w1, nd, nh, nw;
  __device__ int64_t count() const { return nd * nh * nw; }
};

// One dim of a window: of the taps o * stride - pad + i * dilation (0 <= i < k), those inside
// [0, size), as [*lo, *hi) (*hi == *lo when none is). Returns how many there are.
__device__ __forceinline__ int64_t Clip(int64_t o, int64_t stride, int64_t pad, int64_t k,
                                        int64_t dilation, int64_t size, int64_t* lo,
                                        int64_t* hi) {
  const int64_t start = o * stride - pad;
  const int64_t first = start >= 0 ? 0 : (dilation - 1 - start) / dilation;
  const int64_t end = size > start ? min(k, (size - start + dilation - 1) / dilation) : 0;
  const int64_t n = max(end - first, int64_t(0));
  *lo = start + first * dilation;
  *hi = *lo + n * dilation;
  return n;
}

__device__ __forceinline__ Window WindowAt(const PoolShape& s, int64_t od, int64_t oh,
                                           int64_t ow) {
  Window win;
  win.nd = Clip(od, s.sd, s.pd, s.kd, s.dd, s.D, &win.d0, &win.d1);
  win.nh = Clip(oh, s.sh, s.ph, s.kh, s.dh, s.H, &win.h0, &win.h1);
  win.nw = Clip(ow, s.sw, s.pw, s.kw, s.dw, s.W, &win.w0, &win.w1);
  return win;
}

template <bool kMax, typename T>
__global__ void PoolForwardKernel(PoolShape s, const T* x, T* y) {
  HALFCAF_KERNEL_LOOP(i, s.out_numel()) {
    int64_t n, c, od, oh, ow;
    Coords(s, i, s.OD, s.OH, s.OW, &n, &c, &od, &oh, &ow);
    const Window win = WindowAt(s, od, oh, ow);
    float acc = kMax ? -INFINITY : 0.f;
    for (int64_t d = win.d0; d < win.d1; d += s.dd) {
      for (int64_t h = win.h0; h < win.h1; h += s.dh) {
        for (int64_t w = win.w0; w < win.w1; w += s.dw) {
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
    for (int64_t d = win.d0; d < win.d1; d += s.dd) {
      for (int64_t h = win.h0; h < win.h1; h += s.dh) {
        for (int64_t w = win.w0; w < win.w1; w += s.dw) {
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

// The outputs along one dim whose windows have a tap at input index x, in increasing order:
//   for (Covering c(...); c.Next(&o);) ...
// Without dilation they are a range; with it, those of the taps i = k - 1, ..., 0 for which
// x + pad - i * dilation is a multiple of the stride.
class Covering {
 public:
  __device__ Covering(int64_t x, int64_t pad, int64_t k, int64_t stride, int64_t dilation,
                      int64_t out)
      : x_(x + pad), stride_(stride), dilation_(dilation), out_(out) {
    if (dilation == 1) {
      const int64_t a = x_ - k + 1;  // first window start (padded coords) that still covers x
      next_ = a <= 0 ? 0 : (a + stride - 1) / stride;
      last_ = min(x_ / stride, out - 1);
    } else {
      next_ = k - 1;  // the next tap to try
    }
  }

  __device__ bool Next(int64_t* o) {
    if (dilation_ == 1) {
      if (next_ > last_) return false;
      *o = next_++;
      return true;
    }
    for (; next_ >= 0; --next_) {
      const int64_t t = x_ - next_ * dilation_;
      if (t < 0 || t % stride_ != 0) continue;
      if (t / stride_ >= out_) return false;  // later taps give later outputs
      *o = t / stride_;
      --next_;
      return true;
    }
    return false;
  }

 private:
  int64_t x_, stride_, dilation_, out_;
  int64_t next_, last_ = 0;
};

template <bool kMax, typename T, typename TD>
__global__ void PoolBackwardKernel(PoolShape s, const int32_t* argmax, const TD* dy, T* dx) {
  HALFCAF_KERNEL_LOOP(i, s.in_numel()) {
    int64_t n, c, d, h, w;
    Coords(s, i, s.D, s.H, s.W, &n, &c, &d, &h, &w);
    const int32_t self = static_cast<int32_t>((d * s.H + h) * s.W + w);
    float acc = 0.f;
    int64_t od, oh, ow;
    for (Covering cd(d, s.pd, s.kd, s.sd, s.dd, s.OD); cd.Next(&od);) {
      for (Covering ch(h, s.ph, s.kh, s.sh, s.dh, s.OH); ch.Next(&oh);) {
        for (Covering cw(w, s.pw, s.kw, s.sw, s.dw, s.OW); cw.Next(&ow);) {
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
// bfloat16: X, Y, dY and dX all bfloat16.
template void MaxPoolForward<BFloat16>(const PoolShape&, const BFloat16*, BFloat16*, cudaStream_t);
template void AveragePoolForward<BFloat16>(const PoolShape&, const BFloat16*, BFloat16*,
                                           cudaStream_t);
template void MaxPoolArgmax<BFloat16>(const PoolShape&, const BFloat16*, int32_t*, cudaStream_t);
template void MaxPoolBackward<BFloat16, BFloat16>(const PoolShape&, const int32_t*,
                                                  const BFloat16*, BFloat16*, cudaStream_t);
template void AveragePoolBackward<BFloat16, BFloat16>(const PoolShape&, const BFloat16*,
                                                      BFloat16*, cudaStream_t);

}  // namespace gpu
}  // namespace halfcaf
