// LabelCrossEntropy: X holds probabilities (N, D) (or (D), one sample); labels int32, one per
// sample ((N) or (N, 1)). Y (N, float) = -log(max(X[i, label_i], 1e-20)).
// LabelCrossEntropyGradient: (X, labels, dY) -> dX (X's shape and dtype), zero except
// dX[i, label_i] = -dY[i] / X[i, label_i] (0 where the 1e-20 clamp is active).
// X float or float16 (computed in float).
#pragma once

#include <string>
#include <vector>

#include "core/operator.h"

namespace halfcaf {

// The checks LabelCrossEntropy(Gradient) make on every device: X float or float16 of dims (N, D)
// or (D, one sample), labels (N) int32, and for the gradient (dY given) dY float or float16 with N values.
// Returns (N, D) through the pointers.
void CheckLabelCrossEntropyInputs(const Tensor& X, const Tensor& labels, const Tensor* dY,
                                  const std::string& op, int64_t* N, int64_t* D);

class LabelCrossEntropyOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> x_;
};

class LabelCrossEntropyGradientOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  std::vector<float> x_, dy_, dx_;
};

}  // namespace halfcaf
