// What the CPU and CUDA CrossEntropy operators share (the rules are in soft_cross_entropy_op.cc):
// the checks on X, the soft labels and the gradient's dY.
#pragma once

#include "core/operator.h"

namespace halfcaf {

// X float / float16 / bfloat16, at least 1-d, seen as (N, D): N = dims[0] and D the rest, or
// for 1-d X one sample (N = 1, D = dims[0]), as in Caffe2; label float of X's shape or (N, D);
// and when dY is given, dY float-typed with N values. Throws naming `op` and the shapes
// otherwise. Returns (N, D) through the pointers. The label values are not looked at.
void CheckCrossEntropy(const OperatorBase& op, const Tensor& X, const Tensor& label,
                       const Tensor* dY, int64_t* N, int64_t* D);

}  // namespace halfcaf
