// SigmoidCrossEntropyWithLogits, WeightedSigmoidCrossEntropyWithLogits and their gradients on
// CUDA (gpu/sigmoid_xent_kernels.cu); the schemas and the rules are in
// sigmoid_cross_entropy_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/sigmoid_xent_kernels.h"
#include "operators/loss/sigmoid_cross_entropy_op.h"

namespace halfcaf {

namespace {

// kWeighted: the weighted op, whose third input is the weights.
template <bool kWeighted>
class SigmoidXentCUDAOp final : public Operator<CUDAContext> {
 public:
  SigmoidXentCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        log_d_trick_(!kWeighted && GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& T = Input(1);
    const Tensor* W = kWeighted ? &Input(2) : nullptr;
    const SigmoidXentShape s = CheckSigmoidXent(*this, X, T, W);
    float* y = Output(0, s.out_dims)->mutable_data<float>();
    gpu::SigmoidXentForward(s.outer, s.inner, X.dtype(), X.raw_data(), T.data<float>(),
                            W ? W->data<float>() : nullptr, y, log_d_trick_, context_.stream());
  }

 private:
  const bool log_d_trick_;
};

template <bool kWeighted>
class SigmoidXentGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  SigmoidXentGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws),
        log_d_trick_(!kWeighted && GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    const Tensor& T = Input(2);
    const Tensor* W = kWeighted ? &Input(3) : nullptr;
    const SigmoidXentShape s = CheckSigmoidXentGradient(*this, dY, X, T, W);
    void* dx = Output(0, X.dims())->raw_mutable_data(X.dtype());
    gpu::SigmoidXentBackward(s.outer, s.inner, X.dtype(), X.raw_data(), T.data<float>(),
                             W ? W->data<float>() : nullptr, dY.dtype(), dY.raw_data(), dx,
                             log_d_trick_, context_.stream());
  }

 private:
  const bool log_d_trick_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(SigmoidCrossEntropyWithLogits, SigmoidXentCUDAOp<false>);
REGISTER_CUDA_OPERATOR(SigmoidCrossEntropyWithLogitsGradient, SigmoidXentGradientCUDAOp<false>);
REGISTER_CUDA_OPERATOR(WeightedSigmoidCrossEntropyWithLogits, SigmoidXentCUDAOp<true>);
REGISTER_CUDA_OPERATOR(WeightedSigmoidCrossEntropyWithLogitsGradient,
                       SigmoidXentGradientCUDAOp<true>);

}  // namespace halfcaf
