// MakeTwoClass and its gradient on CUDA (gpu/soft_cross_entropy_kernels.cu); the schemas and the
// rules are in make_two_class_op.cc.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/soft_cross_entropy_kernels.h"
#include "operators/loss/make_two_class_op.h"

namespace halfcaf {

namespace {

class MakeTwoClassCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    void* y = Output(0, MakeTwoClassDims(X))->raw_mutable_data(X.dtype());
    gpu::MakeTwoClass(X.numel(), X.dtype(), X.raw_data(), y, context_.stream());
  }
};

class MakeTwoClassGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    Tensor* dX = Output(0, MakeTwoClassGradientDims(*this, dY));
    void* dx = dX->raw_mutable_data(dY.dtype());
    gpu::MakeTwoClassGradient(dX->numel(), dY.dtype(), dY.raw_data(), dx, context_.stream());
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(MakeTwoClass, MakeTwoClassCUDAOp);
REGISTER_CUDA_OPERATOR(MakeTwoClassGradient, MakeTwoClassGradientCUDAOp);

}  // namespace halfcaf
