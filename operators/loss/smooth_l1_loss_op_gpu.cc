// SmoothL1Loss and its gradient on CUDA (gpu/distance_loss_kernels.cu); the schemas and the
// rules are in smooth_l1_loss_op.cc. The gradient reads d_loss on the device (no sync).
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/distance_loss_kernels.h"
#include "operators/loss/smooth_l1_loss_op.h"

namespace halfcaf {

namespace {

// The kernels' view of inputs 0-3 after CheckSmoothL1Inputs.
gpu::SmoothL1Inputs KernelInputs(const Tensor& Y_hat, const Tensor& Y, const Tensor& alpha_in,
                                 const Tensor& alpha_out, const SmoothL1Params& p, int64_t N) {
  return gpu::SmoothL1Inputs{Y_hat.numel(),    Y_hat.dtype(),       Y.dtype(),
                             alpha_in.dtype(), alpha_out.dtype(),   Y_hat.raw_data(),
                             Y.raw_data(),     alpha_in.raw_data(), alpha_out.raw_data(),
                             p.beta,           SmoothL1Norm(p, N)};
}

class SmoothL1LossCUDAOp final : public Operator<CUDAContext> {
 public:
  SmoothL1LossCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), p_(ParseSmoothL1Params(*this)) {}

  void RunOnDevice() override {
    const int64_t N = CheckSmoothL1Inputs(*this, Input(0), Input(1), Input(2), Input(3), nullptr);
    float* loss = Output(0, {})->mutable_data<float>();
    gpu::SmoothL1Loss(KernelInputs(Input(0), Input(1), Input(2), Input(3), p_, N), loss,
                      context_.stream());
  }

 private:
  const SmoothL1Params p_;
};

class SmoothL1LossGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  SmoothL1LossGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), p_(ParseSmoothL1Params(*this)) {}

  void RunOnDevice() override {
    const Tensor& Y_hat = Input(0);
    const Tensor& d_loss = Input(4);
    const int64_t N = CheckSmoothL1Inputs(*this, Y_hat, Input(1), Input(2), Input(3), &d_loss);
    void* dx = Output(0, Y_hat.dims())->raw_mutable_data(Y_hat.dtype());
    gpu::SmoothL1LossGradient(KernelInputs(Y_hat, Input(1), Input(2), Input(3), p_, N),
                              d_loss.dtype(), d_loss.raw_data(), dx, context_.stream());
  }

 private:
  const SmoothL1Params p_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(SmoothL1Loss, SmoothL1LossCUDAOp);
REGISTER_CUDA_OPERATOR(SmoothL1LossGradient, SmoothL1LossGradientCUDAOp);

}  // namespace halfcaf
