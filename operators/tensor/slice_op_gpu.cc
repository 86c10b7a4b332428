// Slice and SliceGradient on CUDA, any data type (gpu/slice_kernels.h). Same bounds, rules and
// errors as the CPU operators in slice_op.cc, which also hold the schemas and the gradient maker;
// starts / ends given as inputs are CPU tensors here too.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/slice_kernels.h"
#include "operators/tensor/slice_op.h"

namespace halfcaf {

namespace {

class SliceCUDAOp final : public Operator<CUDAContext> {
 public:
  SliceCUDAOp(const OperatorDef& def, Workspace* ws) : Operator(def, ws), bounds_(*this, 1) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const SlicePlan p = bounds_.Plan(*this, X.dims());
    Tensor* Y = Output(0, p.out_dims);
    gpu::SliceForward(p.outer, p.dim, p.inner, p.start, p.length(), DataTypeSize(X.dtype()),
                      X.raw_data(), Y->raw_mutable_data(X.dtype()), context_.stream());
  }

 private:
  SliceBounds bounds_;
};

class SliceGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  SliceGradientCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), bounds_(*this, 2) {}

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& dY = Input(InputSize() - 1);
    const SlicePlan p = bounds_.PlanGradient(*this, X, dY);
    Tensor* dX = Output(0, X.dims());
    gpu::SliceBackward(p.outer, p.dim, p.inner, p.start, p.length(), DataTypeSize(dY.dtype()),
                       dY.raw_data(), dX->raw_mutable_data(dY.dtype()), context_.stream());
  }

 private:
  SliceBounds bounds_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Slice, SliceCUDAOp);
REGISTER_CUDA_OPERATOR(SliceGradient, SliceGradientCUDAOp);

}  // namespace halfcaf
