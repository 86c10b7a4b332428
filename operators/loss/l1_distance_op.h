// What the CPU and CUDA L1Distance operators share (the rules are in l1_distance_op.cc): the
// checks on X, Y and the gradient's dZ.
#pragma once

#include "core/operator.h"

namespace halfcaf {

// X and Y float / float16 / bfloat16 of one shape, at least 1-d (SquaredL2Distance's checks),
// and when dZ is given, dZ float-typed with one value per row; throws naming `op` otherwise.
// Returns the rows N = X.dims[0] and the row length D through the pointers.
void CheckL1Distance(const OperatorBase& op, const Tensor& X, const Tensor& Y, const Tensor* dZ,
                     int64_t* N, int64_t* D);

}  // namespace halfcaf
