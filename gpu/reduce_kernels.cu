#include "gpu/reduce_kernels.h"

#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::Blocks;
using detail::FloatIn;
using detail::FloatOut;
using detail::kThreads;

namespace {

constexpr int kMaxReduceDims = 8;

// X seen as kept dims (giving the output index) and reduced dims (summed), each with its stride
// in X, innermost last.
struct ReducePlan {
  int nk = 0, nr = 0;
  int64_t k_dims[kMaxReduceDims], k_stride[kMaxReduceDims];
  int64_t r_dims[kMaxReduceDims], r_stride[kMaxReduceDims];
  int64_t outputs = 1, count = 1;

  __device__ __forceinline__ int64_t KeptOffset(int64_t o) const {
    int64_t off = 0;
    for (int d = nk - 1; d >= 0; --d) {
      off += (o % k_dims[d]) * k_stride[d];
      o /= k_dims[d];
    }
    return off;
  }
  __device__ __forceinline__ int64_t ReducedOffset(int64_t r) const {
    int64_t off = 0;
    for (int d = nr - 1; d >= 0; --d) {
      off += (r % r_dims[d]) * r_stride[d];
      r /= r_dims[d];
    }
    return off;
  }
};

ReducePlan MakePlan(const std::vector<int64_t>& x_dims, const std::vector<bool>& reduced) {
  HALFCAF_ENFORCE(x_dims.size() == reduced.size(), "reduce: ", x_dims.size(), " dims but ",
                  reduced.size(), " flags");
  // Merge neighbouring dims of the same kind; size-1 dims go away.
  std::vector<int64_t> dims;
  std::vector<bool> red;
  for (size_t i = 0; i < x_dims.size(); ++i) {
    if (x_dims[i] == 1) continue;
    if (!dims.empty() && red.back() == reduced[i]) {
      dims.back() *= x_dims[i];
    } else {
      dims.push_back(x_dims[i]);
      red.push_back(reduced[i]);
    }
  }
  HALFCAF_ENFORCE(dims.size() <= static_cast<size_t>(kMaxReduceDims),
                  "reductions on CUDA support at most ", kMaxReduceDims,
                  " alternating kept/reduced dims, got X dims ", DimsString(x_dims));
  ReducePlan p;
  int64_t stride = 1;
  std::vector<int64_t> strides(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (red[i]) {
      p.r_dims[p.nr] = dims[i];
      p.r_stride[p.nr++] = strides[i];
      p.count *= dims[i];
    } else {
      p.k_dims[p.nk] = dims[i];
      p.k_stride[p.nk++] = strides[i];
      p.outputs *= dims[i];
    }
  }
  // Empty X: a zero-size dim makes either no outputs or empty sums.
  for (int64_t d : x_dims) {
    if (d == 0) {
      int64_t outs = 1, cnt = 1;
      for (size_t i = 0; i < x_dims.size(); ++i) (reduced[i] ? cnt : outs) *= x_dims[i];
      p.outputs = outs;
      p.count = cnt;
      p.nk = p.nr = 0;
      break;
    }
  }
  return p;
}

// Block-wide sum of one double per thread; the result is valid in thread 0.
__device__ double BlockSum(double v) {
  __shared__ double warp_sums[kThreads / 32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = 0;
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.0;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  }
  __syncthreads();  // warp_sums is reused by the next output of this block
  return v;
}

// out(o, sum over r < count of term(o, r)) for o < outputs: one block per output (long sums) or
// one thread per output (short sums). Term and Out are device functors.
template <class Term, class Sink>
__global__ void BlockPerOutputKernel(int64_t outputs, int64_t count, Term term, Sink sink) {
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    double acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) acc += term(o, r);
    acc = BlockSum(acc);
    if (threadIdx.x == 0) sink(o, acc);
  }
}

template <class Term, class Sink>
__global__ void ThreadPerOutputKernel(int64_t outputs, int64_t count, Term term, Sink sink) {
  HALFCAF_KERNEL_LOOP(o, outputs) {
    double acc = 0;
    for (int64_t r = 0; r < count; ++r) acc += term(o, r);
    sink(o, acc);
  }
}

template <class Term, class Sink>
void LaunchReduce(int64_t outputs, int64_t count, Term term, Sink sink, cudaStream_t stream) {
  if (outputs == 0) return;
  if (count >= 128 || outputs < 1024) {
    const int64_t blocks = outputs < 65535 * 8 ? outputs : 65535 * 8;
    BlockPerOutputKernel<<<static_cast<int>(blocks), kThreads, 0, stream>>>(outputs, count, term,
                                                                           sink);
  } else {
    ThreadPerOutputKernel<<<Blocks(outputs), kThreads, 0, stream>>>(outputs, count, term, sink);
  }
  HALFCAF_LAUNCH_CHECK();
}

struct PlanTerm {
  ReducePlan plan;
  FloatIn x;
  __device__ __forceinline__ double operator()(int64_t o, int64_t r) const {
    return static_cast<double>(x[plan.KeptOffset(o) + plan.ReducedOffset(r)]);
  }
};

struct PlanTermDouble {
  ReducePlan plan;
  const double* x;
  __device__ __forceinline__ double operator()(int64_t o, int64_t r) const {
    return x[plan.KeptOffset(o) + plan.ReducedOffset(r)];
  }
};

struct ScaledFloatSink {
  FloatOut y;
  double scale;
  __device__ __forceinline__ void operator()(int64_t o, double acc) const {
    y.Set(o, static_cast<float>(acc * scale));
  }
};

struct ScaledDoubleSink {
  double* y;
  double scale;
  __device__ __forceinline__ void operator()(int64_t o, double acc) const { y[o] = acc * scale; }
};

struct ProductTerm {
  FloatIn a, b;
  __device__ __forceinline__ double operator()(int64_t, int64_t r) const {
    return static_cast<double>(a[r]) * static_cast<double>(b[r]);
  }
};

struct SquaredDiffTerm {
  FloatIn x, y;
  int64_t cols;
  __device__ __forceinline__ double operator()(int64_t o, int64_t r) const {
    const int64_t k = o * cols + r;
    const double d = static_cast<double>(x[k]) - static_cast<double>(y[k]);
    return d * d;
  }
};

struct HalfFloatSink {
  float* y;
  __device__ __forceinline__ void operator()(int64_t o, double acc) const {
    y[o] = static_cast<float>(0.5 * acc);
  }
};

__global__ void BroadcastReducedKernel(int64_t n, ReducePlan plan, FloatIn dy, FloatOut dx,
                                       float scale) {
  // X is walked in order; the output index is rebuilt from X's index over the kept dims.
  HALFCAF_KERNEL_LOOP(i, n) {
    int64_t o = 0, mul = 1;
    for (int d = plan.nk - 1; d >= 0; --d) {
      o += ((i / plan.k_stride[d]) % plan.k_dims[d]) * mul;
      mul *= plan.k_dims[d];
    }
    dx.Set(i, dy[o] * scale);
  }
}

__global__ void MarkNonFiniteFloatKernel(int64_t n, const float* x, float* flag) {
  bool bad = false;
  HALFCAF_KERNEL_LOOP(i, n) { bad |= !isfinite(x[i]); }
  if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = 1.f;
}

// 16-bit data: inf or nan where every bit of the exponent field (`exponent`) is set.
__global__ void MarkNonFiniteSixteenKernel(int64_t n, const uint16_t* x, uint16_t exponent,
                                           float* flag) {
  bool bad = false;
  HALFCAF_KERNEL_LOOP(i, n) { bad |= (x[i] & exponent) == exponent; }
  if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = 1.f;
}

}  // namespace

void ReduceSum(const std::vector<int64_t>& x_dims, const std::vector<bool>& reduced,
               DataType x_type, const void* x, DataType y_type, void* y, double scale,
               cudaStream_t stream) {
  const ReducePlan p = MakePlan(x_dims, reduced);
  if (x_type == DataType::DOUBLE) {
    HALFCAF_ENFORCE(y_type == DataType::DOUBLE, "reduce: double X needs a double Y, got ",
                    DataTypeName(y_type));
    LaunchReduce(p.outputs, p.count, PlanTermDouble{p, static_cast<const double*>(x)},
                 ScaledDoubleSink{static_cast<double*>(y), scale}, stream);
    return;
  }
  LaunchReduce(p.outputs, p.count, PlanTerm{p, detail::In(x_type, x, "X")},
               ScaledFloatSink{detail::Out(y_type, y, "Y"), scale}, stream);
}

void BroadcastReduced(const std::vector<int64_t>& x_dims, const std::vector<bool>& reduced,
                      DataType dy_type, const void* dy, DataType dx_type, void* dx, float scale,
                      cudaStream_t stream) {
  int64_t n = 1;
  for (int64_t d : x_dims) n *= d;
  if (n == 0) return;
  ReducePlan p = MakePlan(x_dims, reduced);
  // The kernel walks X, so it needs each kept dim's stride in X (set by MakePlan).
  BroadcastReducedKernel<<<Blocks(n), kThreads, 0, stream>>>(
      n, p, detail::In(dy_type, dy, "dY"), detail::Out(dx_type, dx, "dX"), scale);
  HALFCAF_LAUNCH_CHECK();
}

void Dot(int64_t n, DataType a_type, const void* a, DataType b_type, const void* b,
         DataType out_type, void* out, cudaStream_t stream) {
  LaunchReduce(1, n, ProductTerm{detail::In(a_type, a, "a"), detail::In(b_type, b, "b")},
               ScaledFloatSink{detail::Out(out_type, out, "out"), 1.0}, stream);
}

void RowHalfSquaredDistance(int64_t rows, int64_t cols, DataType x_type, const void* x,
                            DataType y_type, const void* y, float* dist, cudaStream_t stream) {
  LaunchReduce(rows, cols,
               SquaredDiffTerm{detail::In(x_type, x, "X"), detail::In(y_type, y, "Y"), cols},
               HalfFloatSink{dist}, stream);
}

void MarkNonFinite(int64_t n, DataType type, const void* x, float* flag, cudaStream_t stream) {
  if (n == 0) return;
  if (type == DataType::FLOAT16 || type == DataType::BFLOAT16) {
    const uint16_t exponent = type == DataType::FLOAT16 ? 0x7c00u : 0x7f80u;
    MarkNonFiniteSixteenKernel<<<Blocks(n), kThreads, 0, stream>>>(
        n, static_cast<const uint16_t*>(x), exponent, flag);
  } else {
    HALFCAF_ENFORCE(type == DataType::FLOAT, "every input must be float, float16 or bfloat16 on ",
                    "CUDA, got ", DataTypeName(type));
    MarkNonFiniteFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(
        n, static_cast<const float*>(x), flag);
  }
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
