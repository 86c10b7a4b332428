// SumReduceLike: C = A summed down to B's shape, the reverse of the legacy broadcast used by
// Add/Sub/Mul/Div (B is lined up with A as in elementwise_broadcast.h and A is summed over the
// dims outside B's span; a B with one element gives the total sum). Used by their gradients.
//   Inputs:  A (any shape), B (shape template, only its dims are read).
//   Output:  C, B's shape, A's type.
//   Args:    axis (int, -1 = trailing), axis_str (string), order (string, "NCHW").
// Types: float, float16 (summed in float), double. Sums are accumulated in double.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

class SumReduceLikeOp final : public Operator<CPUContext> {
 public:
  SumReduceLikeOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int axis_;
  std::vector<float> a_, c_;
  std::vector<double> acc_;
};

}  // namespace halfcaf
