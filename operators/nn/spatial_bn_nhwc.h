// SpatialBN's loops for NHWC X, Y, dY and dX (rows of C channels) that are all float or all
// bfloat16, read and written in place: no float copies of bfloat16 rows, vectors along the
// channels, compiled for the widest vectors the CPU has (spatial_bn_wide.h). The loops of
// spatial_bn_loops.cc call them for those tensors and keep the rest (float16, mixed types).
//
// Sums: the rows go in fixed chunks of kNhwcRowChunk, a chunk's rows summed per channel in float
// in row order, the chunks' sums then added in double in chunk order; the work splits over chunks
// and groups of channels, so the result does not depend on the thread count.
// bfloat16 results round once, to nearest even (core/bfloat16.h). With the fused ReLU (gate) the
// gradient gates dY by the ReLU's output as the forward stored it (rounded to bfloat16 for
// bfloat16 Y), so the results are those of separate Relu and ReluGradient ops bit for bit.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "operators/nn/spatial_bn_loops.h"

namespace halfcaf {

constexpr int64_t kNhwcRowChunk = 256;

// rows of C channels, every tensor of type dtype.
struct NhwcBNShape {
  int64_t rows, C;
  DataType dtype;
};

// True when these loops take tensors of type t: float or bfloat16.
bool NhwcBNLoopsTake(DataType t);

// Per channel the mean and biased variance of x (two passes: the sum, then the squared deviations
// from the mean rounded to float).
void NhwcMeanVar(const NhwcBNShape& s, const void* x, double* mean, double* var);

// y = x * a[c] + b[c] (ReluNaN'd with relu); y may alias x.
void NhwcAffine(const NhwcBNShape& s, const void* x, const float* a, const float* b, void* y,
                bool relu);

// Per channel the sum of g and of g * (x - mean[c]), g = dy (gated with `gate`).
void NhwcGradSums(const NhwcBNShape& s, const void* x, const void* dy, const float* mean,
                  const BNReluGate* gate, double* sum_dy, double* sum_dy_xc);

// dx = g * a[c] + (x - mean[c]) * b[c] + k[c], g = dy (gated with `gate`); dx may alias dy.
void NhwcBackward(const NhwcBNShape& s, const void* dy, const void* x, const float* mean,
                  const float* a, const float* b, const float* k, const BNReluGate* gate, void* dx);

}  // namespace halfcaf
