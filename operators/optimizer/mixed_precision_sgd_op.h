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

// The optional 16-bit copy (float16 or bfloat16) of a master parameter, which the CPU update
// loops write a piece at a time, right after updating the piece (in cache, on every thread).
class LowPrecisionCopy {
 public:
  // `copy` null: there is none, Write does nothing. Else `copy` (sized like the master) is
  // allocated in `type` here, before the loop's threads start.
  LowPrecisionCopy(DataType type, Tensor* copy);
  // copy[off, off + n) from master[off, off + n) (`master`: the whole parameter).
  void Write(const float* master, int64_t off, int64_t n) const;

 private:
  DataType type_;
  void* data_ = nullptr;
};

// The value of a 1-element float tensor (lr, loss_scale, found_inf), with a clear error otherwise.
float UpdateScalar(const Tensor& t, const char* what);

// grad float, float16 or bfloat16, moment and master float, all three of one shape; throws naming them.
void CheckMixedPrecisionUpdateInputs(const Tensor& grad, const Tensor& moment,
                                     const Tensor& master);

}  // namespace halfcaf
