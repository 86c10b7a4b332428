// What the CPU and CUDA MixedPrecisionMomentumSGDUpdate operators share (the op is described in
// mixed_precision_sgd_op.cc): its arguments and the checks on grad, moment and master.
#pragma once

#include "core/operator.h"

namespace halfcaf {

struct MomentumUpdateArgs {
  float momentum, weight_decay;
  bool nesterov;
  DataType copy_dtype;  // of the optional copy output: float16 or bfloat16

  // momentum (default 0), weight_decay (default 0), nesterov (default false), copy_dtype
  // (default float16; a name or the TensorProto enum value).
  explicit MomentumUpdateArgs(const OperatorBase& op);
};

// The 16-bit copy (float16 or bfloat16 `type`) of n master values, into `copy` (already sized).
void WriteLowPrecisionCopy(const float* master, int64_t n, DataType type, Tensor* copy);

// The value of a 1-element float tensor (lr, loss_scale, found_inf), with a clear error otherwise.
float UpdateScalar(const Tensor& t, const char* what);

// grad float, float16 or bfloat16, moment and master float, all three of one shape; throws naming them.
void CheckMixedPrecisionUpdateInputs(const Tensor& grad, const Tensor& moment,
                                     const Tensor& master);

}  // namespace halfcaf
