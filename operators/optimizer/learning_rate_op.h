// LearningRate: lr = base_lr * f(iter), a 0-d float tensor, where `iter` is the int64 counter
// that Iter maintains and f is the multiplier of the policy named by `policy`. The policies, their
// arguments and formulas are in learning_rate_policy.h.
#pragma once

#include <cstdint>

#include "core/operator.h"
#include "operators/optimizer/learning_rate_policy.h"

namespace halfcaf {

// base_lr of a LearningRate op (required; throws naming it when absent).
float RequiredBaseLr(const OperatorBase& op);
// base_lr * policy(iter) for the int64 one-element CPU tensor `iter` (checked: int64, >= 0).
float ComputeLearningRate(const Tensor& iter, float base_lr, const LearningRatePolicy& policy);

class LearningRateOp final : public Operator<CPUContext> {
 public:
  LearningRateOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float base_lr_;
  LearningRatePolicy policy_;
};

}  // namespace halfcaf
