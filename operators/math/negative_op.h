// Negative: Y = -X, element-wise (used by the gradient of Sub; its own gradient is Negative(dY)).
//   Input X (any shape); output Y (X's shape and type); may run in place.
// Types: float, float16 (sign flip, exact), double, int32, int64.
#pragma once

#include "core/operator.h"

namespace halfcaf {

class NegativeOp final : public Operator<CPUContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override;

 private:
  template <typename T>
  void Negate(const Tensor& X);
};

}  // namespace halfcaf
