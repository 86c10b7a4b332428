// WeightedSum: Y = sum_i w_i * X_i.
//   Inputs:  X0, w0, X1, w1, ... (an even count); every X_i has X0's shape (float or float16),
//            every w_i is a one-element float (or float16) tensor.
//   Output:  Y, X0's shape and type (float16 is summed in float and rounded once); may be X0.
//   Args:    grad_on_w (bool, 0): read by the gradient maker; also produce gradients of the w_i.
//
// WeightedSumGradient: (dY, X0, w0, X1, w1, ...) -> (dX0, dX1, ... [, dw0, dw1, ...]) with
// dX_i = w_i * dY and dw_i = sum(dY * X_i); the dw outputs are there when grad_on_w is set.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

class WeightedSumOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<std::vector<float>> x_;
  std::vector<float> w_, y_, acc_;
};

class WeightedSumGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> dy_, x_, w_, dx_, dw_;
};

}  // namespace halfcaf
