// What the CPU and CUDA Adam operators share (the rules are in adam_op.cc): their arguments and
// the iteration counter input.
#pragma once

#include "core/operator.h"

namespace halfcaf {

struct AdamArgs {
  float beta1, beta2, epsilon;
  bool decoupled;  // MixedPrecisionAdamUpdate: AdamW

  // beta1 (0.9), beta2 (0.999), epsilon (`default_epsilon`: Caffe2's Adam 1e-5, the fused update
  // PyTorch's 1e-8), decoupled (0); throws unless 0 <= beta < 1 and epsilon >= 0.
  AdamArgs(const OperatorBase& op, float default_epsilon);
};

// The int64 counter of a 1-element tensor (the Iter blob), with a clear error otherwise.
int64_t AdamIteration(const Tensor& t);

}  // namespace halfcaf
