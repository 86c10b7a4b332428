// Dropout: in training (is_test = 0) each element of X is kept with probability 1 - ratio and
// scaled so the expectation is unchanged: Y = X * mask / (1 - ratio); mask (bool, shape of X,
// true = kept) is output 1. In test mode Y is a copy of X and the mask output is optional (all
// true when given). Randomness comes from the op context's generator (DeviceOption.random_seed).
// DropoutGrad: training (dY, mask) -> dX = dY * mask / (1 - ratio); test (dY) -> dX = dY.
// Args: ratio (float, 0.5, in [0, 1)), is_test (int, 0). Float and float16 data.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// The `ratio` argument (default 0.5), checked to be in [0, 1).
float ReadDropoutRatio(const OperatorBase& op);

class DropoutOp final : public Operator<CPUContext> {
 public:
  DropoutOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float ratio_;
  bool is_test_;
  std::vector<float> x_, y_;
};

class DropoutGradOp final : public Operator<CPUContext> {
 public:
  DropoutGradOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float ratio_;
  bool is_test_;
  std::vector<float> dy_, dx_;
};

}  // namespace halfcaf
