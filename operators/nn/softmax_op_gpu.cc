// Softmax and SoftmaxGradient on CUDA (own kernels, gpu/softmax_kernels.cu: one block per row,
// max-subtracted, float math). Same semantics, dtypes and errors as the CPU operators in
// softmax_op.cc, which hold the schemas and the gradient maker: X float or float16, Y of X's
// dtype; dX of Y's dtype, dY of either.
#include "core/float_io.h"
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/softmax_kernels.h"
#include "operators/nn/softmax_op.h"

namespace halfcaf {

namespace {

class SoftmaxCUDAOp final : public Operator<CUDAContext> {
 public:
  SoftmaxCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), axis_(GetSingleArgument<int>("axis", 1)) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    EnforceFloatType(X, "X");
    int64_t N, D;
    SoftmaxMatrixShape(X.dims(), axis_, DebugName(), &N, &D);
    Tensor* Y = Output(0, X.dims());
    if (X.dtype() == DataType::FLOAT) {
      gpu::SoftmaxRows(N, D, X.data<float>(), Y->mutable_data<float>(), nullptr, context_.stream());
    } else {
      gpu::SoftmaxRows(N, D, X.data<Half>(), Y->mutable_data<Half>(), nullptr, context_.stream());
    }
  }

 private:
  int axis_;
};

class SoftmaxGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  SoftmaxGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), axis_(GetSingleArgument<int>("axis", 1)) {}

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    EnforceFloatType(Y, "Y");
    EnforceFloatType(dY, "dY");
    HALFCAF_ENFORCE(Y.dims() == dY.dims(), DebugName(), ": Y and dY must have the same shape, got ",
                    DimsString(Y.dims()), " and ", DimsString(dY.dims()));
    int64_t N, D;
    SoftmaxMatrixShape(Y.dims(), axis_, DebugName(), &N, &D);
    Tensor* dX = Output(0, Y.dims());
    cudaStream_t s = context_.stream();
    const bool dy16 = dY.dtype() == DataType::FLOAT16;
    if (Y.dtype() == DataType::FLOAT) {
      float* dx = dX->mutable_data<float>();
      dy16 ? gpu::SoftmaxGradientRows(N, D, Y.data<float>(), dY.data<Half>(), dx, s)
           : gpu::SoftmaxGradientRows(N, D, Y.data<float>(), dY.data<float>(), dx, s);
    } else {
      Half* dx = dX->mutable_data<Half>();
      dy16 ? gpu::SoftmaxGradientRows(N, D, Y.data<Half>(), dY.data<Half>(), dx, s)
           : gpu::SoftmaxGradientRows(N, D, Y.data<Half>(), dY.data<float>(), dx, s);
    }
  }

 private:
  int axis_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Softmax, SoftmaxCUDAOp);
REGISTER_CUDA_OPERATOR(SoftmaxGradient, SoftmaxGradientCUDAOp);

}  // namespace halfcaf
