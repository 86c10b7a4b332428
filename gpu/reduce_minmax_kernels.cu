#include "gpu/reduce_minmax_kernels.h"

#include <cmath>
#include <type_traits>

#include "core/nan_math.h"
#include "gpu/kernel_util.cuh"

namespace halfcaf {
namespace gpu {

using detail::FloatIn;
using detail::FloatOut;
using kutil::kThreads;

namespace {

constexpr int kMaxGroupDims = 8;

// One run of dims: its size and the stride of its index in X.
struct Axis {
  int64_t size, stride;
};

// StridedGroups in fixed-size arrays, passed to kernels by value, with the tie rule.
struct Groups {
  int nk = 0, nr = 0;
  Axis kept[kMaxGroupDims], reduced[kMaxGroupDims];
  int64_t outputs = 0, count = 0;
  bool last_of_ties = false;
};

int FillAxes(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, Axis* out) {
  HALFCAF_ENFORCE(dims.size() <= kMaxGroupDims, "max / min reductions on CUDA take at most ",
                  kMaxGroupDims, " alternating runs of kept and reduced dims, got ", dims.size(),
                  " runs of one kind");
  for (size_t d = 0; d < dims.size(); ++d) out[d] = Axis{dims[d], strides[d]};
  return static_cast<int>(dims.size());
}

Groups ToGroups(const StridedGroups& s) {
  Groups g;
  g.nk = FillAxes(s.kept_dims, s.kept_strides, g.kept);
  g.nr = FillAxes(s.reduced_dims, s.reduced_strides, g.reduced);
  g.outputs = s.outputs;
  g.count = s.count;
  return g;
}

// Offset of the i-th index (row-major over the axes' sizes).
__device__ __forceinline__ int64_t StridedOffset(int64_t i, int n, const Axis* axes) {
  int64_t offset = 0;
  for (int d = n - 1; d >= 0; --d) {
    const int64_t q = i / axes[d].size;
    offset += (i - q * axes[d].size) * axes[d].stride;
    i = q;
  }
  return offset;
}

__device__ __forceinline__ int64_t ElementOffset(const Groups& g, int64_t o, int64_t r) {
  return StridedOffset(o, g.nk, g.kept) + StridedOffset(r, g.nr, g.reduced);
}

template <bool kMax, typename V>
__device__ __forceinline__ bool Beats(V v, V best) {
  if constexpr (std::is_floating_point<V>::value) {
    return kMax ? BeatsMax(v, best) : BeatsMax(-v, -best);
  } else {
    return kMax ? v > best : v < best;
  }
}

// Folds candidate (v, r) into (best, where): a better value, or an equal one earlier (later, with
// last_of_ties) in the group. where < 0 marks "nothing yet".
template <bool kMax, typename V>
__device__ __forceinline__ void Fold(V* best, int64_t* where, V v, int64_t r, bool last_of_ties) {
  if (r < 0) return;
  if (*where < 0 || Beats<kMax>(v, *best) ||
      (!Beats<kMax>(*best, v) && (last_of_ties ? r > *where : r < *where))) {
    *best = v;
    *where = r;
  }
}

template <typename T>
struct TypedIn {
  const T* p;
  __device__ __forceinline__ T operator[](int64_t i) const { return p[i]; }
};

// Scans positions r0, r0 + step, ... of group o.
template <bool kMax, typename V, typename In>
__device__ void ScanGroup(const Groups& g, In x, int64_t o, int64_t r0, int64_t step, V* best,
                          int64_t* where) {
  for (int64_t r = r0; r < g.count; r += step)
    Fold<kMax>(best, where, x[ElementOffset(g, o, r)], r, g.last_of_ties);
}

template <bool kMax, typename V, typename In, typename Sink>
__global__ void BlockPerGroupKernel(Groups g, In x, Sink sink) {
  __shared__ V vals[kThreads];
  __shared__ int64_t wheres[kThreads];
  for (int64_t o = blockIdx.x; o < g.outputs; o += gridDim.x) {
    V best{};
    int64_t where = -1;
    ScanGroup<kMax>(g, x, o, threadIdx.x, blockDim.x, &best, &where);
    vals[threadIdx.x] = best;
    wheres[threadIdx.x] = where;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        Fold<kMax>(&vals[threadIdx.x], &wheres[threadIdx.x], vals[threadIdx.x + s],
                   wheres[threadIdx.x + s], g.last_of_ties);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) sink(o, vals[0], wheres[0]);
    __syncthreads();  // vals / wheres are reused by this block's next group
  }
}

template <bool kMax, typename V, typename In, typename Sink>
__global__ void ThreadPerGroupKernel(Groups g, In x, Sink sink) {
  HALFCAF_KERNEL_LOOP(o, g.outputs) {
    V best{};
    int64_t where = -1;
    ScanGroup<kMax>(g, x, o, 0, 1, &best, &where);
    sink(o, best, where);
  }
}

template <bool kMax, typename V, typename In, typename Sink>
void LaunchExtremes(const Groups& g, In x, Sink sink, cudaStream_t stream) {
  if (g.outputs == 0) return;
  // Long groups (or few of them): a block per group; many short ones: a thread per group.
  if (g.count >= 64 || g.outputs < 1024) {
    const int64_t blocks = g.outputs < 65535 * 8 ? g.outputs : 65535 * 8;
    BlockPerGroupKernel<kMax, V><<<static_cast<int>(blocks), kThreads, 0, stream>>>(g, x, sink);
  } else {
    ThreadPerGroupKernel<kMax, V><<<kutil::Blocks(g.outputs), kThreads, 0, stream>>>(g, x, sink);
  }
  HALFCAF_LAUNCH_CHECK();
}

struct FloatSink {
  FloatOut values;  // p null: not wanted
  int64_t* index;   // null: not wanted
  float empty;
  __device__ __forceinline__ void operator()(int64_t o, float best, int64_t where) const {
    if (values.p != nullptr) values.Set(o, where < 0 ? empty : best);
    if (index != nullptr) index[o] = where;
  }
};

struct IndexSink {
  int64_t* index;
  template <typename V>
  __device__ __forceinline__ void operator()(int64_t o, V, int64_t where) const {
    index[o] = where;
  }
};

template <bool kMax>
void Extremes(const Groups& g, DataType x_type, const void* x, void* values, int64_t* index,
              cudaStream_t stream) {
  if (x_type == DataType::INT32 || x_type == DataType::INT64) {
    HALFCAF_ENFORCE(values == nullptr && index != nullptr,
                    "integer max / min on CUDA returns indices only (ArgMax / ArgMin)");
    if (x_type == DataType::INT32) {
      LaunchExtremes<kMax, int32_t>(g, TypedIn<int32_t>{static_cast<const int32_t*>(x)},
                                    IndexSink{index}, stream);
    } else {
      LaunchExtremes<kMax, int64_t>(g, TypedIn<int64_t>{static_cast<const int64_t*>(x)},
                                    IndexSink{index}, stream);
    }
    return;
  }
  const FloatIn in = detail::In(x_type, x, "X");
  const FloatSink sink{FloatOut{values, detail::KindOf(x_type)}, index,
                       kMax ? -INFINITY : INFINITY};
  LaunchExtremes<kMax, float>(g, in, sink, stream);
}

__global__ void GradientKernel(Groups g, FloatIn dy, FloatIn x, FloatIn y, FloatOut dx) {
  HALFCAF_KERNEL_LOOP(i, g.outputs * g.count) {
    const int64_t o = i / g.count;
    const int64_t xi = ElementOffset(g, o, i - o * g.count);
    const float yo = y[o];
    dx.Set(xi, GatedGradient(x[xi] == yo, yo, dy[o]));
  }
}

}  // namespace

void GroupExtremes(const StridedGroups& s, bool find_max, DataType x_type, const void* x,
                   void* values, int64_t* index, cudaStream_t stream, bool last_of_ties) {
  Groups g = ToGroups(s);
  g.last_of_ties = last_of_ties;
  if (find_max) {
    Extremes<true>(g, x_type, x, values, index, stream);
  } else {
    Extremes<false>(g, x_type, x, values, index, stream);
  }
}

void GroupExtremesGradient(const StridedGroups& s, DataType dy_type, const void* dy,
                           DataType x_type, const void* x, DataType y_type, const void* y,
                           DataType dx_type, void* dx, cudaStream_t stream) {
  const Groups g = ToGroups(s);
  const int64_t n = g.outputs * g.count;
  if (n == 0) return;
  GradientKernel<<<kutil::Blocks(n), kThreads, 0, stream>>>(
      g, detail::In(dy_type, dy, "dY"), detail::In(x_type, x, "X"), detail::In(y_type, y, "Y"),
      detail::Out(dx_type, dx, "dX"));
  HALFCAF_LAUNCH_CHECK();
}

}  // namespace gpu
}  // namespace halfcaf
