// Momentum SGD updates, per element with lr the one-element learning-rate tensor (positive: the
// update is subtracted) and mu = `momentum`:
//   plain:    v = lr * g + mu * m;  m' = v;  g' = v;  p' = p - v
//   nesterov: m' = mu * m + lr * g;  g' = (1 + mu) * m' - mu * m;  p' = p - g'
// MomentumSGD:       (grad, moment, lr) -> (grad_out, moment_out); no parameter is touched.
// MomentumSGDUpdate: (grad, moment, lr, param) -> (grad_out, moment_out, param_out).
// Float tensors only. Usually run in place: grad -> grad_out, moment -> moment_out,
// param -> param_out.
#pragma once

#include "core/operator.h"

namespace halfcaf {

// Checks the inputs of MomentumSGD (param null) or MomentumSGDUpdate: float tensors, lr with one
// element, grad / moment / param of one shape.
void CheckMomentumSGDInputs(const Tensor& grad, const Tensor& moment, const Tensor& lr,
                            const Tensor* param);

class MomentumSGDOp final : public Operator<CPUContext> {
 public:
  MomentumSGDOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  float momentum_;
  bool nesterov_;
  bool has_param_;
};

}  // namespace halfcaf
