// Max / Min: Y = element-wise maximum / minimum of the inputs X1, ..., Xn (n >= 1), which must all
// have one shape and one type (float or float16); Y has their shape and type. NaN in any input
// gives NaN. May run in place on X1.
// MaxGradient / MinGradient: (Y, dY, X1, ..., Xn) -> (dX1, ..., dXn) with dXi = dY where
// Xi == Y and 0 elsewhere (NaN where Y or dY is NaN). As in Caffe2, every input that ties for the
// maximum / minimum receives the whole dY.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Throws unless every tensor in `xs` is float / float16 with xs[0]'s dims and dtype; xs[k] is
// input `first + k` of `op` (for the message).
void EnforceSameShapeAndType(const OperatorBase& op, const std::vector<const Tensor*>& xs,
                             int first);

// The gradient's inputs (0: Y, 1: dY, 2..: X1..Xn): Y and dY float / float16 of one shape, and
// X1..Xn with Y's dims and dtype (they are compared with Y exactly).
void EnforceSelectGradientInputs(const OperatorBase& op, const Tensor& Y, const Tensor& dY,
                                 const std::vector<const Tensor*>& xs);

template <bool kMax>
class MaxMinOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> x_, y_;
};

template <bool kMax>
class MaxMinGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> y_, dy_, x_, dx_;
};

}  // namespace halfcaf
