// Accuracy: predictions (N, D) float/float16 scores and int32 labels ((N) or (N, 1)) -> 0-d float
// fraction of samples whose label is among the top_k classes. The classes ranked above the label
// are those with a strictly larger score or an equal score and a lower index; the sample is
// correct when fewer than top_k classes rank above it. Arg top_k (int, default 1, >= 1).
// No gradient (SHOULD_NOT_DO_GRADIENT).
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

class AccuracyOp final : public Operator<CPUContext> {
 public:
  AccuracyOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  int top_k_;
  std::vector<float> x_;
};

}  // namespace halfcaf
