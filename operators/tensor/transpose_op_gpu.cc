// Transpose, NCHW2NHWC and NHWC2NCHW on CUDA: one permutation kernel over raw elements (any data
// type), gpu/elementwise_kernels.cu. Shapes, arguments and errors as in transpose_op.cc, which
// holds the schemas and gradient makers.
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/elementwise_kernels.h"
#include "operators/tensor/transpose_op.h"

namespace halfcaf {

namespace {

void RunTranspose(const Tensor& X, const std::vector<int>& axes, Tensor* Y, cudaStream_t stream) {
  Y->Resize(TransposeDims(X.dims(), axes));
  void* y = Y->raw_mutable_data(X.dtype());
  gpu::Transpose(X.dims(), axes, DataTypeSize(X.dtype()), X.raw_data(), y, stream);
}

class TransposeCUDAOp final : public Operator<CUDAContext> {
 public:
  TransposeCUDAOp(const OperatorDef& def, Workspace* ws)
      : Operator(def, ws), axes_(GetRepeatedArgument<int>("axes")) {
    CheckPermutation(axes_);
  }

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    RunTranspose(X, axes_.empty() ? ReverseAxes(X.ndim()) : axes_, Output(0), context_.stream());
  }

 private:
  std::vector<int> axes_;
};

template <bool kToChannelsLast>
class OrderSwitchCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    RunTranspose(X, OrderSwitchAxes(X.ndim(), kToChannelsLast), Output(0), context_.stream());
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(Transpose, TransposeCUDAOp);
REGISTER_CUDA_OPERATOR(NCHW2NHWC, OrderSwitchCUDAOp<true>);
REGISTER_CUDA_OPERATOR(NHWC2NCHW, OrderSwitchCUDAOp<false>);

}  // namespace halfcaf
