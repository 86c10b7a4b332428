// What the CPU and CUDA SmoothL1Loss operators share (the rules are in smooth_l1_loss_op.cc):
// the arguments and the checks on the inputs.
#pragma once

#include "core/operator.h"

namespace halfcaf {

struct SmoothL1Params {
  float beta;   // where the loss turns from L2 to L1; > 0
  float scale;  // multiplies the loss; >= 0
};

// beta (default 1) and scale (default 1) of `op`; throws naming op unless beta > 0, scale >= 0.
SmoothL1Params ParseSmoothL1Params(const OperatorBase& op);

// What the loss sum is multiplied by: scale / N, and 0 for N = 0 (no samples: loss 0).
double SmoothL1Norm(const SmoothL1Params& p, int64_t N);

// Y_hat, Y, alpha_in, alpha_out float, float16 or bfloat16, Y_hat at least 1-d, all four with
// Y_hat's number of elements and Y with Y_hat's first dimension (Caffe2's rules); and for the
// gradient (d_loss given) d_loss float-typed with one value. Throws naming `op` and every shape
// otherwise. Returns N = Y_hat.dims[0], the loss's divisor.
int64_t CheckSmoothL1Inputs(const OperatorBase& op, const Tensor& Y_hat, const Tensor& Y,
                            const Tensor& alpha_in, const Tensor& alpha_out, const Tensor* d_loss);

}  // namespace halfcaf
