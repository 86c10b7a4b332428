// AveragedLoss and AveragedLossGradient on CUDA (gpu/loss_kernels.cu). Same semantics, dtypes
// and errors as the CPU operators in averaged_loss_op.cc (schemas and gradient maker there): the
// mean is summed in double (per-block partial sums, then one block: deterministic) and output as
// a 0-d float.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/loss_kernels.h"

namespace halfcaf {

namespace {

class AveragedLossCUDAOp final : public Operator<CUDAContext> {
 public:
  AveragedLossCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws) {
    partial_.SetDevice(context_.device());
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    partial_.Resize({gpu::AveragedLossScratch()});
    double* partial = partial_.mutable_data<double>();
    float* y = Output(0, {})->mutable_data<float>();
    if (X.dtype() == DataType::FLOAT) {
      gpu::AveragedLoss(X.numel(), X.data<float>(), partial, y, context_.stream());
    } else {
      gpu::AveragedLoss(X.numel(), X.data<Half>(), partial, y, context_.stream());
    }
  }

 private:
  Tensor partial_;  // per-block partial sums (device scratch, kept)
};

class AveragedLossGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& dY = Input(1);
    EnforceFloatType(X, "X");
    EnforceFloatType(dY, "dY");
    HALFCAF_ENFORCE(dY.numel() == 1, DebugName(), ": dY must hold one value, got dims ",
                    DimsString(dY.dims()));
    const int64_t n = X.numel();
    Tensor* dX = Output(0, X.dims());
    cudaStream_t s = context_.stream();
    const bool dy16 = dY.dtype() == DataType::FLOAT16;
    if (X.dtype() == DataType::FLOAT) {
      float* dx = dX->mutable_data<float>();
      dy16 ? gpu::AveragedLossGradient(n, dY.data<Half>(), dx, s)
           : gpu::AveragedLossGradient(n, dY.data<float>(), dx, s);
    } else {
      Half* dx = dX->mutable_data<Half>();
      dy16 ? gpu::AveragedLossGradient(n, dY.data<Half>(), dx, s)
           : gpu::AveragedLossGradient(n, dY.data<float>(), dx, s);
    }
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(AveragedLoss, AveragedLossCUDAOp);
REGISTER_CUDA_OPERATOR(AveragedLossGradient, AveragedLossGradientCUDAOp);

}  // namespace halfcaf
