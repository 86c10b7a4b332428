// What the CPU and CUDA MakeTwoClass operators share (the rules are in make_two_class_op.cc).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// MakeTwoClass's check: X float / float16 / bfloat16. Returns Y's dims (X's and 2).
std::vector<int64_t> MakeTwoClassDims(const Tensor& X);

// MakeTwoClassGradient's check: dY float / float16 / bfloat16, at least 1-d, last dimension 2;
// throws naming `op` otherwise. Returns dX's dims (dY's without the last).
std::vector<int64_t> MakeTwoClassGradientDims(const OperatorBase& op, const Tensor& dY);

}  // namespace halfcaf
