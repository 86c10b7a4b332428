// CrossEntropy and its gradient on CUDA (gpu/soft_cross_entropy_kernels.cu); the schemas and the
// rules are in soft_cross_entropy_op.cc. Unlike the CPU operator, the forward op does not check
// that the labels lie in [0, 1] (that would need a device-to-host wait per run).
#include "core/operator.h"
#include "gpu/cuda_context.h"
#include "gpu/soft_cross_entropy_kernels.h"
#include "operators/loss/soft_cross_entropy_op.h"

namespace halfcaf {

namespace {

class CrossEntropyCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    int64_t N, D;
    CheckCrossEntropy(*this, X, L, nullptr, &N, &D);
    float* y = Output(0, {N})->mutable_data<float>();
    gpu::SoftCrossEntropy(N, D, X.dtype(), X.raw_data(), L.data<float>(), y, context_.stream());
  }
};

class CrossEntropyGradientCUDAOp final : public Operator<CUDAContext> {
 public:
  using Operator::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& L = Input(1);
    const Tensor& dY = Input(2);
    int64_t N, D;
    CheckCrossEntropy(*this, X, L, &dY, &N, &D);
    void* dx = Output(0, X.dims())->raw_mutable_data(X.dtype());
    gpu::SoftCrossEntropyGradient(N, D, X.dtype(), X.raw_data(), L.data<float>(), dY.dtype(),
                                  dY.raw_data(), dx, context_.stream());
  }
};

}  // namespace

REGISTER_CUDA_OPERATOR(CrossEntropy, CrossEntropyCUDAOp);
REGISTER_CUDA_OPERATOR(CrossEntropyGradient, CrossEntropyGradientCUDAOp);

}  // namespace halfcaf
