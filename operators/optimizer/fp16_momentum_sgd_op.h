// FP16MomentumSGDUpdate and FP32MomentumSGDUpdate: Caffe2's fused momentum SGD steps with weight
// decay (CUDA-only in Caffe2; here on CPU, the reference, and on CUDA). Per element, with lr the
// one-element float learning rate (positive: the step is subtracted), mu = `momentum` and
// wd = `weight_decay`:
//   g1 = g + wd * p
//   plain:    v = lr * g1 + mu * m;  moment_out = grad_out = v;  param_out = p - v
//   nesterov: m_new = mu * m + lr * g1;  grad_out = (1 + mu) * m_new - mu * m;
//             moment_out = m_new;  param_out = p - grad_out
// Inputs (grad, moment, lr, param) -> outputs (grad_out, moment_out, param_out), all of grad's
// shape except lr; in place (0,0), (1,1), (3,2) allowed.
// FP32MomentumSGDUpdate: float tensors, float math.
// FP16MomentumSGDUpdate: float16 grad / moment / param, float lr. `fp32_update` = 1: the formulas
// above in float on the float values of the inputs, each output rounded once to float16.
// `fp32_update` = 0 ("fp16 math"): float16 arithmetic. lr, mu, wd and 1 + mu are rounded to
// float16 (1 + mu as the float16 sum of 1 and float16(mu)), and every product, sum and difference
// in the formulas is rounded to float16 before it is used: wd*p, g1, lr*g1, mu*m, v (or m_new),
// (1+mu)*m_new, grad_out and param_out. Each such result equals the correctly rounded IEEE
// binary16 operation (a float16 product is exact in float, and rounding a float sum of two
// float16 values to float16 gives the correctly rounded float16 sum), so CPU and CUDA agree bit
// for bit. The step uses no fused multiply-add in either mode.
#pragma once

#include "core/operator.h"
#include "operators/optimizer/mixed_precision_sgd_op.h"

namespace halfcaf {

// Arguments of both ops: momentum, weight_decay, nesterov (MomentumUpdateArgs) and, for the FP16
// op only, fp32_update (default 0).
struct FusedMomentumArgs : MomentumUpdateArgs {
  bool fp32_update;
  explicit FusedMomentumArgs(const OperatorBase& op);
};

// The element type of grad / moment / param for `op_type` (FLOAT16 for FP16MomentumSGDUpdate,
// FLOAT for FP32MomentumSGDUpdate).
DataType FusedMomentumDataType(const std::string& op_type);

// Checks grad, moment and param (dtype `dtype`, one shape) and lr (a 1-element float tensor);
// messages name the op type, the input and what it got.
void CheckFusedMomentumInputs(const std::string& op_type, DataType dtype, const Tensor& grad,
                              const Tensor& moment, const Tensor& lr, const Tensor& param);

// The CPU reference kernels (n elements; any output may alias its own input).
void FusedMomentumStepFloat(int64_t n, const float* g, const float* m, const float* p, float lr,
                            const MomentumUpdateArgs& args, float* g_out, float* m_out,
                            float* p_out);
void FusedMomentumStepHalfMath(int64_t n, const Half* g, const Half* m, const Half* p, float lr,
                               const MomentumUpdateArgs& args, Half* g_out, Half* m_out,
                               Half* p_out);

class FusedMomentumSGDUpdateOp final : public Operator<CPUContext> {
 public:
  FusedMomentumSGDUpdateOp(const OperatorDef& def, Workspace* ws);
  void RunOnDevice() override;

 private:
  const FusedMomentumArgs args_;
  const DataType dtype_;
  std::vector<float> g_, m_, p_, go_, mo_, po_;  // fp32_update scratch for float16 tensors
};

}  // namespace halfcaf
