// What the CPU and CUDA SigmoidCrossEntropyWithLogits and WeightedSigmoidCrossEntropyWithLogits
// operators share (the rules are in sigmoid_cross_entropy_op.cc): the checks on logits, targets
// and weights, and the row layout.
#pragma once

#include <vector>

#include "core/operator.h"

namespace halfcaf {

struct SigmoidXentShape {
  int64_t outer, inner;            // rows, and elements averaged per row (the last dimension)
  std::vector<int64_t> out_dims;   // the logits' dims without the last
};

// Logits float / float16 / bfloat16 and at least 1-d, targets float of the same shape; with
// weights (the weighted op) weights float of that shape too, without them unjoined_lr_loss not
// asked for. Throws naming `op` otherwise.
SigmoidXentShape CheckSigmoidXent(const OperatorBase& op, const Tensor& X, const Tensor& T,
                                  const Tensor* W = nullptr);
// The gradient ops' checks: those above, and dY float-typed with one value per row.
SigmoidXentShape CheckSigmoidXentGradient(const OperatorBase& op, const Tensor& dY,
                                          const Tensor& X, const Tensor& T,
                                          const Tensor* W = nullptr);

}  // namespace halfcaf
