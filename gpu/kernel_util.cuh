// Device-side helpers for the kernels in gpu/*.cu (include from .cu files only).
//   kutil:  the CUDA type of a halfcaf element type, float loads/stores (float16 and bfloat16 are
//           computed in float and rounded once on store), launch sizes, block-wide reductions.
//   detail: float / float16 / bfloat16 access chosen at run time, dispatch from a DataType to the device
//           element type (bfloat16 included), element conversion with the CPU's rules.
// Both use the grid-stride loop HALFCAF_KERNEL_LOOP.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "core/bfloat16.h"
#include "core/enforce.h"
#include "core/half.h"
#include "core/types.h"
#include "gpu/cuda_check.h"

namespace halfcaf {
namespace gpu {
namespace kutil {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (capped; the loop covers the rest).
inline int Blocks(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

// Blocks for one block per row (rows beyond the cap are looped over).
inline int RowBlocks(int64_t rows) {
  return static_cast<int>(rows < (1 << 20) ? (rows > 0 ? rows : 1) : (1 << 20));
}

// Threads for one block per row of `d` elements: a multiple of 32 in [32, 512].
inline int RowThreads(int64_t d) {
  int t = 32;
  while (t < 512 && t < d) t *= 2;
  return t;
}

// Half is bit-compatible with __half, BFloat16 with __nv_bfloat16; kernels see the CUDA type.
template <typename T>
struct Dev {
  using type = T;
};
template <>
struct Dev<Half> {
  using type = __half;
};
template <>
struct Dev<BFloat16> {
  using type = __nv_bfloat16;
};
template <typename T>
using DevT = typename Dev<T>::type;

template <typename T>
inline DevT<T>* DevPtr(T* p) {
  return reinterpret_cast<DevT<T>*>(p);
}
template <typename T>
inline const DevT<T>* DevPtr(const T* p) {
  return reinterpret_cast<const DevT<T>*>(p);
}

__device__ __forceinline__ float Load(float v) { return v; }
__device__ __forceinline__ float Load(__half v) { return __half2float(v); }
__device__ __forceinline__ float Load(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T Store(float v);
template <>
__device__ __forceinline__ float Store<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half Store<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 Store<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

#define HALFCAF_KERNEL_LOOP(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

#define HALFCAF_ROW_LOOP(row, rows) for (int64_t row = blockIdx.x; row < (rows); row += gridDim.x)

// Records that sample `row` has the out-of-range label `label` in the word `bad` (~0 when
// clear; see ResetBadLabel in softmax_kernels.h): the sample in the high 32 bits, the label's bits
// in the low 32, so atomicMin keeps the smallest bad sample with its own label.
__device__ __forceinline__ void RecordBadLabel(unsigned long long* bad, int64_t row,
                                               int32_t label) {
  atomicMin(bad, (static_cast<unsigned long long>(row) << 32) |
                     static_cast<unsigned long long>(static_cast<uint32_t>(label)));
}

struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024) and returns the result to
// every thread. Every thread of the block must call it; it may be called repeatedly.
template <typename T, typename Op>
__device__ T BlockAllReduce(T v, Op op, T identity) {
  __shared__ T buf[32];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // an earlier call's readers are done with buf
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int nwarps = (blockDim.x + 31) >> 5;
    v = lane < nwarps ? buf[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) buf[0] = v;
  }
  __syncthreads();
  return buf[0];
}

}  // namespace kutil
}  // namespace gpu
}  // namespace halfcaf

namespace halfcaf {
namespace gpu {
namespace detail {

constexpr int kThreads = 256;

inline int Blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

#define HALFCAF_LAUNCH_CHECK() HALFCAF_CUDA_CHECK(cudaGetLastError())

// What a FloatIn / FloatOut points at: float, float16 or bfloat16 (a run-time value, uniform
// across a launch, so the branch costs nothing measurable in these memory-bound kernels).
enum FloatKind : int { kFloatData = 0, kHalfData = 1, kBFloat16Data = 2 };

inline int KindOf(DataType t) {
  return t == DataType::FLOAT16 ? kHalfData : t == DataType::BFLOAT16 ? kBFloat16Data : kFloatData;
}

// A float, float16 or bfloat16 input read as floats.
struct FloatIn {
  const void* p;
  int kind;
  __device__ __forceinline__ float operator[](int64_t i) const {
    if (kind == kHalfData) return __half2float(static_cast<const __half*>(p)[i]);
    if (kind == kBFloat16Data) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    return static_cast<const float*>(p)[i];
  }
};

// A float, float16 or bfloat16 output written from floats (16-bit: rounded to nearest even, once).
struct FloatOut {
  void* p;
  int kind;
  __device__ __forceinline__ void Set(int64_t i, float v) const {
    if (kind == kHalfData) {
      static_cast<__half*>(p)[i] = __float2half_rn(v);
    } else if (kind == kBFloat16Data) {
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
    } else {
      static_cast<float*>(p)[i] = v;
    }
  }
};

inline void EnforceFloatOrHalf(DataType t, const char* what) {
  HALFCAF_ENFORCE(t == DataType::FLOAT || t == DataType::FLOAT16 || t == DataType::BFLOAT16, what,
                  " must be float, float16 or bfloat16 on CUDA, got ", DataTypeName(t));
}
inline FloatIn In(DataType t, const void* p, const char* what = "input") {
  EnforceFloatOrHalf(t, what);
  return FloatIn{p, KindOf(t)};
}
inline FloatOut Out(DataType t, void* p, const char* what = "output") {
  EnforceFloatOrHalf(t, what);
  return FloatOut{p, KindOf(t)};
}

// Device element type of a host element type.
template <typename T>
struct DevType {
  using type = T;
};
template <>
struct DevType<Half> {
  using type = __half;
};
template <>
struct DevType<BFloat16> {
  using type = __nv_bfloat16;
};

// Calls f(T{}) with T the device type of a numeric DataType (float16 -> __half, bfloat16 ->
// __nv_bfloat16).
template <typename F>
void DispatchDevice(DataType t, F&& f) {
  DispatchAllTypes(t, [&](auto tag) {
    using T = typename DevType<decltype(tag)>::type;
    f(T{});
  });
}

// Element conversion with the CPU's rules: through float for float16 and bfloat16 (rounded to
// nearest even; a NaN stays NaN, though CUDA gives it its canonical payload), static_cast
// otherwise.
template <typename D, typename S>
struct Converter {
  __device__ __forceinline__ static D Apply(S v) { return static_cast<D>(v); }
};
template <typename D>
struct Converter<D, __half> {
  __device__ __forceinline__ static D Apply(__half v) { return static_cast<D>(__half2float(v)); }
};
template <typename S>
struct Converter<__half, S> {
  __device__ __forceinline__ static __half Apply(S v) {
    return __float2half_rn(static_cast<float>(v));
  }
};
template <>
struct Converter<__half, __half> {
  __device__ __forceinline__ static __half Apply(__half v) { return v; }
};
template <typename D>
struct Converter<D, __nv_bfloat16> {
  __device__ __forceinline__ static D Apply(__nv_bfloat16 v) {
    return static_cast<D>(__bfloat162float(v));
  }
};
template <typename S>
struct Converter<__nv_bfloat16, S> {
  __device__ __forceinline__ static __nv_bfloat16 Apply(S v) {
    return __float2bfloat16_rn(static_cast<float>(v));
  }
};
template <>
struct Converter<__nv_bfloat16, __nv_bfloat16> {
  __device__ __forceinline__ static __nv_bfloat16 Apply(__nv_bfloat16 v) { return v; }
};
template <>
struct Converter<__half, __nv_bfloat16> {
  __device__ __forceinline__ static __half Apply(__nv_bfloat16 v) {
    return __float2half_rn(__bfloat162float(v));
  }
};
template <>
struct Converter<__nv_bfloat16, __half> {
  __device__ __forceinline__ static __nv_bfloat16 Apply(__half v) {
    return __float2bfloat16_rn(__half2float(v));
  }
};
}  // namespace detail
}  // namespace gpu
}  // namespace halfcaf
