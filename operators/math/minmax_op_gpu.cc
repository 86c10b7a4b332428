// Max, Min, MaxGradient and MinGradient on CUDA, with the kernels of gpu/elementwise_kernels.cu.
// Same semantics, dtypes, in-place pair and errors as the CPU operators (minmax_op.cc holds the
// schemas and gradient makers). Max / Min of float16 inputs are exact in float16, so the inputs
// are folded straight into Y.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "gpu/tensor_copy.h"
#include "operators/math/minmax_op.h"

namespace halfcaf {

namespace {

template <bool kMax>
class MaxMinCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    std::vector<const Tensor*> xs;
    for (int i = 0; i < InputSize(); ++i) xs.push_back(&Input(i));
    EnforceSameShapeAndType(*this, xs, 0);
    const Tensor& X0 = Input(0);
    const DataType dtype = X0.dtype();
    cudaStream_t stream = context_.stream();
    Tensor* Y = Output(0);
    gpu::CopyTensorAsync(X0, Y, stream);  // no-op in place
    for (int i = 1; i < InputSize(); ++i) {
      gpu::SelectInto(kMax, Y->numel(), dtype, Input(i).raw_data(), dtype,
                      Y->raw_mutable_data(dtype), stream);
    }
  }
};

template <bool kMax>
class MaxMinGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    std::vector<const Tensor*> xs;
    for (int i = 2; i < InputSize(); ++i) xs.push_back(&Input(i));
    EnforceSelectGradientInputs(*this, Y, dY, xs);
    const DataType dtype = dY.dtype();
    for (size_t k = 0; k < xs.size(); ++k) {
      Tensor* dX = Output(static_cast<int>(k), Y.dims());
      gpu::SelectGradient(Y.numel(), Y.dtype(), Y.raw_data(), dtype, dY.raw_data(),
                          xs[k]->dtype(), xs[k]->raw_data(), dtype, dX->raw_mutable_data(dtype),
                          context_.stream());
    }
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Max, MaxMinCUDAOp<true>);
REGISTER_CUDA_OPERATOR(Min, MaxMinCUDAOp<false>);
REGISTER_CUDA_OPERATOR(MaxGradient, MaxMinGradientCUDAOp<true>);
REGISTER_CUDA_OPERATOR(MinGradient, MaxMinGradientCUDAOp<false>);

}  // namespace halfcaf
