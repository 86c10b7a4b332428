// Pow: Y = X ^ exponent, element-wise, in one of Caffe2's two forms:
//   - one input X and the argument `exponent` (float): every element raised to that power;
//   - two inputs X and E ("exponent") of the same shape: Y[i] = X[i] ^ E[i].
// Y has X's shape and type. Float and float16 in any mix (computed in float). In place on X, or
// on E in the two-input form. Caffe2's broadcasting of E (`broadcast`, `axis`) is not supported:
// X and E must have the same shape.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

// Checks the inputs / `exponent` argument combination (one of the two forms above) and returns
// the argument's value in the one-input form (0 in the other).
float ParsePowExponent(const OperatorBase& op);

// Throws unless the two-input form's X and E have the same dims.
void EnforcePowShapes(const Tensor& X, const Tensor& E);

class PowOp final : public Operator<CPUContext> {
 public:
  PowOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float exponent_;
  std::vector<float> x_, e_, y_;
};

}  // namespace halfcaf
