#include "gpu/pad_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::FloatIn;
using detail::FloatOut;

namespace {

constexpr int kConstant = 0, kReflect = 1, kEdge = 2;

// The element of a dim of `size` that position i (relative to the unpadded start) copies, or -1
// for the constant border.
__device__ __forceinline__ int64_t CopiedFrom(int mode, int64_t i, int64_t size) {
  if (i >= 0 && i < size) return i;
  if (mode == kConstant) return -1;
  if (mode == kEdge) return i < 0 ? 0 : size - 1;
  return i < 0 ? -i : 2 * (size - 1) - i;  // reflect
}

// The padded positions (up to three ranges) whose value is element h of a dim of `size` with
// `head` / `tail` pads.
struct SourceRanges {
  int64_t lo[3], hi[3];
  int n = 0;
  __device__ void Add(int64_t a, int64_t b) {
    if (a >= b) return;
    lo[n] = a;
    hi[n] = b;
    ++n;
  }
};

__device__ SourceRanges SourcesOf(int mode, int64_t h, int64_t size, int64_t head, int64_t tail) {
  SourceRanges r;
  r.Add(head + h, head + h + 1);
  const int64_t from_end = size - 1 - h;
  if (mode == kEdge) {
    if (h == 0) r.Add(0, head);
    if (from_end == 0) r.Add(head + size, head + size + tail);
  } else if (mode == kReflect) {
    if (h >= 1 && h <= head) r.Add(head - h, head - h + 1);
    if (from_end >= 1 && from_end <= tail)
      r.Add(head + size - 1 + from_end, head + size + from_end);
  }
  return r;
}

__global__ void PadForwardKernel(PadImageDims d, int64_t out_h, int64_t out_w, float value,
                                 FloatIn x, FloatOut y) {
  HALFCAF_KERNEL_LOOP(e, d.outer * out_h * out_w * d.channels) {
    const int64_t c = e % d.channels;
    int64_t t = e / d.channels;
    const int64_t pw = t % out_w;
    t /= out_w;
    const int64_t ph = t % out_h;
    const int64_t o = t / out_h;
    const int64_t h = CopiedFrom(d.mode, ph - d.pad_t, d.height);
    const int64_t w = CopiedFrom(d.mode, pw - d.pad_l, d.width);
    y.Set(e, h < 0 || w < 0 ? value : x[((o * d.height + h) * d.width + w) * d.channels + c]);
  }
}

__global__ void PadBackwardKernel(PadImageDims d, int64_t out_h, int64_t out_w, FloatIn dy,
                                  FloatOut dx) {
  HALFCAF_KERNEL_LOOP(e, d.outer * d.height * d.width * d.channels) {
    const int64_t c = e % d.channels;
    int64_t t = e / d.channels;
    const int64_t w = t % d.width;
    t /= d.width;
    const int64_t h = t % d.height;
    const int64_t o = t / d.height;
    const SourceRanges rh = SourcesOf(d.mode, h, d.height, d.pad_t, d.pad_b);
    const SourceRanges rw = SourcesOf(d.mode, w, d.width, d.pad_l, d.pad_r);
    float acc = 0.f;
    for (int i = 0; i < rh.n; ++i) {
      for (int64_t ph = rh.lo[i]; ph < rh.hi[i]; ++ph) {
        for (int j = 0; j < rw.n; ++j) {
          for (int64_t pw = rw.lo[j]; pw < rw.hi[j]; ++pw) {
            acc += dy[((o * out_h + ph) * out_w + pw) * d.channels + c];
          }
        }
      }
    }
    dx.Set(e, acc);
  }
}

}  // namespace

void PadImageForward(const PadImageDims& d, float value, DataType type, const void* x, void* y,
                     cudaStream_t stream) {
  const int64_t out_h = d.height + d.pad_t + d.pad_b, out_w = d.width + d.pad_l + d.pad_r;
  const int64_t n = d.outer * out_h * out_w * d.channels;
  if (n == 0) return;
  PadForwardKernel<<<kutil::Blocks(n), kutil::kThreads, 0, stream>>>(
      d, out_h, out_w, value, detail::In(type, x, "X"), detail::Out(type, y, "Y"));
  HALFCAF_LAUNCH_CHECK();
}

void PadImageBackward(const PadImageDims& d, DataType type, const void* dy, void* dx,
                      cudaStream_t stream) {
  const int64_t out_h = d.height + d.pad_t + d.pad_b, out_w = d.width + d.pad_l + d.pad_r;
  const int64_t n = d.outer * d.height * d.width * d.channels;
  if (n == 0) return;
  PadBackwardKernel<<<kutil::Blocks(n), kutil::kThreads, 0, stream>>>(
      d, out_h, out_w, detail::In(type, dy, "dY"), detail::Out(type, dx, "dX"));
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
