// What the CPU and CUDA adaptive optimizer operators share (Adagrad, Adadelta, RmsProp, Wngrad,
// Lars and the fused MixedPrecision*Update forms): their arguments and input checks.
#pragma once

#include <vector>

#include "core/adaptive_update_rules.h"
#include "core/operator.h"

namespace halfcaf {

// epsilon (`default_epsilon`) and decay (1) of Adagrad; throws unless epsilon >= 0, decay in [0, 1].
AdagradRule ReadAdagradRule(const OperatorBase& op, float default_epsilon);
// epsilon and decay (`default_decay`: Caffe2's Adadelta 0.95, PyTorch's rho 0.9) of Adadelta.
AdadeltaRule ReadAdadeltaRule(const OperatorBase& op, float default_decay, float default_epsilon);
// decay (PyTorch's alpha, 0.99), momentum (0) and epsilon (1e-8) of the fused RMSprop.
RmsPropRule ReadRmsPropRule(const OperatorBase& op);
// Caffe2's RmsProp arguments in the same struct: decay (0.9), momentum (0), epsilon (1e-5).
RmsPropRule CaffeRmsPropArgs(const OperatorBase& op);

// Caffe2's optimizer operators take float tensors: the inputs at `same_shape` must be float and
// of input 0's shape; throws naming `op_type` and the tensors.
void CheckCaffeUpdateInputs(const OperatorBase& op, const char* op_type,
                            const std::vector<int>& same_shape,
                            const std::vector<const Tensor*>& in);

// Lars' arguments: offset (0.5) and lr_min (0.02), checked (>= 0).
// Lars' X (float) and dX (float, float16 or bfloat16) of one shape; throws naming them.
void CheckLarsInputs(const Tensor& X, const Tensor& dX);

struct LarsArgs {
  float offset, lr_min;
  explicit LarsArgs(const OperatorBase& op);
};

}  // namespace halfcaf
