// AveragedLoss: Y (0-d float) = mean of all elements of X (any shape; 0 for an empty X).
// AveragedLossGradient: (X, dY) -> dX (X's shape and dtype), every element dY / X.numel().
// X float or float16 (summed in double, output in float).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

class AveragedLossOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> x_;
};

class AveragedLossGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> dy_, dx_;
};

}  // namespace halfcaf
