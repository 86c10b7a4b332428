// Max / min over groups of strided elements on CUDA (ReduceMax / ReduceMin, ArgMax / ArgMin) and
// the gradient of ReduceMax / ReduceMin. X is seen as `outputs` groups of `count` elements:
// element r of group o sits at (o over kept_dims, row-major, times kept_strides) + (r over
// reduced_dims times reduced_strides); at most 8 dims of each kind. Comparisons follow the CPU
// operators: the first of tied elements wins (the last one when asked: ArgMax / ArgMin's
// select_last_index) and NaN beats every number. Work is queued on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace halfcaf {
namespace gpu {

struct StridedGroups {
  std::vector<int64_t> kept_dims, kept_strides;
  std::vector<int64_t> reduced_dims, reduced_strides;
  int64_t outputs = 1, count = 1;
};

// Per group o: values[o] = its largest (find_max) or smallest element and index[o] = the position
// r of that element's first occurrence (its last one with last_of_ties; NaNs tie with each other);
// either output may be null. x is float or float16 (values then have x's type; an empty group
// gives -inf / +inf and index -1), int32 or int64 (index only).
void GroupExtremes(const StridedGroups& g, bool find_max, DataType x_type, const void* x,
                   void* values, int64_t* index, cudaStream_t stream, bool last_of_ties = false);

// dx at element (o, r) = dy[o] where x there equals y[o], else 0, keeping a NaN y[o] or dy[o]
// (core/nan_math.h GatedGradient). Each of dy, x, y, dx is float or float16.
void GroupExtremesGradient(const StridedGroups& g, DataType dy_type, const void* dy,
                           DataType x_type, const void* x, DataType y_type, const void* y,
                           DataType dx_type, void* dx, cudaStream_t stream);

}  // namespace gpu
}  // namespace halfcaf
