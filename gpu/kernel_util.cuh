// Helpers shared by the .cu files of gpu/ (included only from .cu files): launch geometry, the
// grid-stride loop, float / float16 element access chosen at run time, and dispatch from a
// DataType to the device element type (Half is bit-compatible with __half).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "core/enforce.h"
#include "core/types.h"
#include "gpu/cuda_check.h"

namespace halfcaf {
namespace gpu {
namespace detail {

constexpr int kThreads = 256;

inline int Blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

#define HALFCAF_KERNEL_LOOP(i, n)                                           \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

#define HALFCAF_LAUNCH_CHECK() HALFCAF_CUDA_CHECK(cudaGetLastError())

// A float or float16 input read as floats; the dtype is a run-time flag (uniform across a launch,
// so the branch costs nothing measurable in these memory-bound kernels).
struct FloatIn {
  const void* p;
  bool half;
  __device__ __forceinline__ float operator[](int64_t i) const {
    return half ? __half2float(static_cast<const __half*>(p)[i]) : static_cast<const float*>(p)[i];
  }
};

// A float or float16 output written from floats (float16: rounded to nearest even, once).
struct FloatOut {
  void* p;
  bool half;
  __device__ __forceinline__ void Set(int64_t i, float v) const {
    if (half) {
      static_cast<__half*>(p)[i] = __float2half_rn(v);
    } else {
      static_cast<float*>(p)[i] = v;
    }
  }
};

inline void EnforceFloatOrHalf(DataType t, const char* what) {
  HALFCAF_ENFORCE(t == DataType::FLOAT || t == DataType::FLOAT16, what,
                  " must be float or float16 on CUDA, got ", DataTypeName(t));
}
inline FloatIn In(DataType t, const void* p, const char* what = "input") {
  EnforceFloatOrHalf(t, what);
  return FloatIn{p, t == DataType::FLOAT16};
}
inline FloatOut Out(DataType t, void* p, const char* what = "output") {
  EnforceFloatOrHalf(t, what);
  return FloatOut{p, t == DataType::FLOAT16};
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

// Calls f(T{}) with T the device type of a numeric DataType (float16 -> __half).
template <typename F>
void DispatchDevice(DataType t, F&& f) {
  DispatchAllTypes(t, [&](auto tag) {
    using T = typename DevType<decltype(tag)>::type;
    f(T{});
  });
}

// Element conversion with the CPU's rules: through float for float16, static_cast otherwise.
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
}  // namespace detail
}  // namespace gpu
}  // namespace halfcaf
