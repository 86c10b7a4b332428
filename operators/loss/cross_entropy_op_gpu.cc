// LabelCrossEntropy and LabelCrossEntropyGradient on CUDA (gpu/loss_kernels.cu). Same semantics,
// dtypes and errors as the CPU operators in cross_entropy_op.cc (schemas and gradient maker
// there); a label out of range is found on the device and reported by CheckDeferredErrors with
// the CPU op's message (DeviceLabelCheck: no stream synchronisation in the run).
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/loss_kernels.h"
#include "operators/loss/cross_entropy_op.h"
#include "operators/loss/label_util.h"
#include "operators/loss/loss_util_gpu.h"

namespace halfcaf {

namespace {

class LabelCrossEntropyCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    int64_t N, D;
    CheckLabelCrossEntropyInputs(X, L, nullptr, DebugName(), &N, &D);
    float* y = Output(0, {N})->mutable_data<float>();
    const int32_t* l = L.data<int32_t>();
    unsigned long long* bad = check_.Flag(&context_, N, D);
    if (X.dtype() == DataType::FLOAT) {
      gpu::LabelCrossEntropy(N, D, X.data<float>(), l, y, bad, context_.stream());
    } else {
      gpu::LabelCrossEntropy(N, D, X.data<Half>(), l, y, bad, context_.stream());
    }
  }

  void CheckDeferredErrors() override { check_.Report(&context_, DebugName()); }

 private:
  DeviceLabelCheck check_;
};

class LabelCrossEntropyGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    const Tensor& dY = Input(2);
    int64_t N, D;
    CheckLabelCrossEntropyInputs(X, L, &dY, DebugName(), &N, &D);
    Tensor* dX = Output(0, X.dims());
    const int32_t* l = L.data<int32_t>();
    unsigned long long* bad = check_.Flag(&context_, N, D);
    cudaStream_t s = context_.stream();
    const bool dy16 = dY.dtype() == DataType::FLOAT16;
    if (X.dtype() == DataType::FLOAT) {
      const float* x = X.data<float>();
      float* dx = dX->mutable_data<float>();
      dy16 ? gpu::LabelCrossEntropyGradient(N, D, x, l, dY.data<Half>(), dx, bad, s)
           : gpu::LabelCrossEntropyGradient(N, D, x, l, dY.data<float>(), dx, bad, s);
    } else {
      const Half* x = X.data<Half>();
      Half* dx = dX->mutable_data<Half>();
      dy16 ? gpu::LabelCrossEntropyGradient(N, D, x, l, dY.data<Half>(), dx, bad, s)
           : gpu::LabelCrossEntropyGradient(N, D, x, l, dY.data<float>(), dx, bad, s);
    }
  }

  void CheckDeferredErrors() override { check_.Report(&context_, DebugName()); }

 private:
  DeviceLabelCheck check_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(LabelCrossEntropy, LabelCrossEntropyCUDAOp);
REGISTER_CUDA_OPERATOR(LabelCrossEntropyGradient, LabelCrossEntropyGradientCUDAOp);

}  // namespace halfcaf
