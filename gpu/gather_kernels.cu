#include "gpu/gather_kernels.h"

#include "gpu/kernel_util.cuh"
#include "gpu/math_gpu.h"

namespace halfcaf {
namespace gpu {

namespace {

// Element e of the (outer, n, inner) side and its source / destination in (outer, dim, inner).
template <typename I>
__device__ __forceinline__ int64_t RowOffset(int64_t e, int64_t dim, int64_t inner, int64_t n,
                                             const I* index, bool wrap) {
  const int64_t k = e % inner;
  const int64_t t = e / inner;
  const int64_t o = t / n;
  int64_t j = index[t - o * n];
  if (wrap && j < 0) j += dim;
  return (o * dim + j) * inner + k;
}

// W is an unsigned word; a row of `inner` words is copied per index.
template <typename W, typename I>
__global__ void GatherKernel(int64_t total, int64_t dim, int64_t inner, int64_t n, const I* index,
                             bool wrap, const W* x, W* y) {
  HALFCAF_KERNEL_LOOP(e, total) { y[e] = x[RowOffset(e, dim, inner, n, index, wrap)]; }
}

__device__ __forceinline__ void AtomicAccumulate(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void AtomicAccumulate(int32_t* p, int32_t v) { atomicAdd(p, v); }
__device__ __forceinline__ void AtomicAccumulate(int64_t* p, int64_t v) {
  // Two's complement: an unsigned add wraps exactly like the signed one.
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

__device__ __forceinline__ float Widen(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ T Widen(T v) {
  return v;
}

// S: source element type; A: accumulator type (float for float and float16).
template <typename S, typename A, typename I>
__global__ void ScatterAddKernel(int64_t total, int64_t dim, int64_t inner, int64_t n,
                                 const I* index, bool wrap, const S* src, A* out) {
  HALFCAF_KERNEL_LOOP(e, total) {
    AtomicAccumulate(out + RowOffset(e, dim, inner, n, index, wrap), static_cast<A>(Widen(src[e])));
  }
}

template <typename F>
void WithIndexType(DataType index_type, const void* index, F&& f) {
  HALFCAF_ENFORCE(index_type == DataType::INT32 || index_type == DataType::INT64,
                  "indices must be int32 or int64 on CUDA, got ", DataTypeName(index_type));
  if (index_type == DataType::INT32) {
    f(static_cast<const int32_t*>(index));
  } else {
    f(static_cast<const int64_t*>(index));
  }
}

template <typename W>
void LaunchGather(int64_t outer, int64_t dim, int64_t words, int64_t n, DataType index_type,
                  const void* index, bool wrap, const void* x, void* y, cudaStream_t stream) {
  const int64_t total = outer * n * words;
  WithIndexType(index_type, index, [&](auto idx) {
    GatherKernel<<<kutil::Blocks(total), kutil::kThreads, 0, stream>>>(
        total, dim, words, n, idx, wrap, static_cast<const W*>(x), static_cast<W*>(y));
  });
  HALFCAF_LAUNCH_CHECK();
}

template <typename S, typename A>
void LaunchScatter(int64_t outer, int64_t dim, int64_t inner, int64_t n, DataType index_type,
                   const void* index, bool wrap, const void* src, A* out, cudaStream_t stream) {
  const int64_t total = outer * n * inner;
  if (total == 0) return;
  WithIndexType(index_type, index, [&](auto idx) {
    ScatterAddKernel<<<kutil::Blocks(total), kutil::kThreads, 0, stream>>>(
        total, dim, inner, n, idx, wrap, static_cast<const S*>(src), out);
  });
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace

void GatherRows(int64_t outer, int64_t dim, int64_t inner, int64_t n, DataType index_type,
                const void* index, bool wrap, size_t item_size, const void* x, void* y,
                cudaStream_t stream) {
  const int64_t row = inner * static_cast<int64_t>(item_size);  // bytes per gathered row
  if (outer * n * row == 0) return;
  // Rows start at multiples of their size in aligned buffers, so the widest word dividing the
  // row size is aligned too.
  if (row % 8 == 0) {
    LaunchGather<uint64_t>(outer, dim, row / 8, n, index_type, index, wrap, x, y, stream);
  } else if (row % 4 == 0) {
    LaunchGather<uint32_t>(outer, dim, row / 4, n, index_type, index, wrap, x, y, stream);
  } else if (row % 2 == 0) {
    LaunchGather<uint16_t>(outer, dim, row / 2, n, index_type, index, wrap, x, y, stream);
  } else {
    LaunchGather<uint8_t>(outer, dim, row, n, index_type, index, wrap, x, y, stream);
  }
}

void ScatterAddRows(int64_t outer, int64_t dim, int64_t inner, int64_t n, DataType index_type,
                    const void* index, bool wrap, DataType type, const void* src, void* out,
                    float* scratch, cudaStream_t stream) {
  const int64_t size = outer * dim * inner;
  if (size == 0) return;
  // Zeroes the accumulator (all-zero bits are 0 in every type here), then adds into it.
  auto accumulate = [&](auto src_tag, auto* acc) {
    using S = decltype(src_tag);
    HALFCAF_CUDA_CHECK(cudaMemsetAsync(acc, 0, size * sizeof(*acc), stream));
    LaunchScatter<S>(outer, dim, inner, n, index_type, index, wrap, src, acc, stream);
  };
  switch (type) {
    case DataType::FLOAT:
      accumulate(float{}, static_cast<float*>(out));
      return;
    case DataType::FLOAT16:
      accumulate(__half{}, scratch);
      FloatToHalf(size, scratch, static_cast<Half*>(out), stream);
      return;
    case DataType::INT32:
      accumulate(int32_t{}, static_cast<int32_t*>(out));
      return;
    case DataType::INT64:
      accumulate(int64_t{}, static_cast<int64_t*>(out));
      return;
    default:
      break;
  }
  HALFCAF_THROW("scatter-add on CUDA takes float, float16, int32 or int64, got ",
                DataTypeName(type));
}

}  // namespace gpu
}  // namespace halfcaf
