// SigmoidCrossEntropyWithLogits and its gradient on CUDA (gpu/sigmoid_xent_kernels.cu); the
// schemas and the rules are in sigmoid_cross_entropy_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/sigmoid_xent_kernels.h"
#include "operators/loss/sigmoid_cross_entropy_op.h"

namespace halfcaf {

namespace {

class SigmoidCrossEntropyWithLogitsCUDAOp final : public Operator<CUDAContext> {
 public:
  SigmoidCrossEntropyWithLogitsCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), log_d_trick_(GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& T = Input(1);
    const SigmoidXentShape s = CheckSigmoidXent(*this, X, T);
    float* y = Output(0, s.out_dims)->mutable_data<float>();
    gpu::SigmoidXentForward(s.outer, s.inner, X.dtype(), X.raw_data(), T.data<float>(), y,
                            log_d_trick_, context_.stream());
  }

 private:
  const bool log_d_trick_;
};

class SigmoidCrossEntropyWithLogitsGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  SigmoidCrossEntropyWithLogitsGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), log_d_trick_(GetSingleArgument<bool>("log_D_trick", false)) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    const Tensor& T = Input(2);
    const SigmoidXentShape s = CheckSigmoidXentGradient(*this, dY, X, T);
    void* dx = Output(0, X.dims())->raw_mutable_data(X.dtype());
    gpu::SigmoidXentBackward(s.outer, s.inner, X.dtype(), X.raw_data(), T.data<float>(),
                             dY.dtype(), dY.raw_data(), dx, log_d_trick_, context_.stream());
  }

 private:
  const bool log_d_trick_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(SigmoidCrossEntropyWithLogits, SigmoidCrossEntropyWithLogitsCUDAOp);
REGISTER_CUDA_OPERATOR(SigmoidCrossEntropyWithLogitsGradient,
                       SigmoidCrossEntropyWithLogitsGradientCUDAOp);

}  // namespace halfcaf
